//! The least BTF (BPF Type Format) a map needs when the kernel asks for its key's and value's
//! types: task storage refuses a map without them. The types are an `int` key and a value of
//! bytes; the kernel checks only their sizes against the map's. And the one lookup a tracing
//! program needs in the kernel's own BTF: the id of the function it attaches to.

use std::ffi::CStr;
use std::os::fd::OwnedFd;

use super::sys::{self, Attr};
use crate::{Error, Result};

/// The key's type id in [`key_value`]'s blob.
pub(super) const KEY_TYPE: u32 = 1;
/// The value's type id.
pub(super) const VALUE_TYPE: u32 = 3;

const MAGIC: u16 = 0xeb9f;
const HEADER: u32 = 24;
const KIND_INT: u32 = 1;
const KIND_ARRAY: u32 = 3;
const INT_SIGNED: u32 = 1 << 24;
/// The names, NUL-separated; offset 0 is the empty name.
const STRINGS: &[u8] = b"\0int\0u8\0";
const NAME_INT: u32 = 1;
const NAME_U8: u32 = 5;

/// A blob declaring `[1] int` (4 bytes, signed), `[2] u8` and `[3] u8[value_size]`.
pub(super) fn key_value(value_size: u32) -> Vec<u8> {
    let mut types: Vec<u32> = Vec::new();
    // struct btf_type { name_off, info (kind << 24 | vlen), size or type }, then the kind's
    // data: an int's encoding (flags << 24 | bit offset << 16 | bits), an array's
    // { element type, index type, count }.
    types.extend([NAME_INT, KIND_INT << 24, 4, INT_SIGNED | 32]);
    types.extend([NAME_U8, KIND_INT << 24, 1, 8]);
    types.extend([0, KIND_ARRAY << 24, 0, 2, KEY_TYPE, value_size]);
    let type_len = (types.len() * 4) as u32;
    let mut b = Vec::new();
    b.extend(MAGIC.to_ne_bytes());
    b.extend([1u8, 0]);
    for v in [HEADER, 0, type_len, type_len, STRINGS.len() as u32] {
        b.extend(v.to_ne_bytes());
    }
    for v in types {
        b.extend(v.to_ne_bytes());
    }
    b.extend(STRINGS);
    b
}

/// Loads `blob` into the kernel (`BPF_BTF_LOAD`); its descriptor is what a map's creation
/// names.
///
/// Returns an error with the kernel's words if it refuses the blob.
pub(super) fn load(blob: &[u8]) -> Result<OwnedFd> {
    let mut log = vec![0u8; 4096];
    let mut attr = Attr::new();
    attr.u64(0, blob.as_ptr() as u64)
        .u64(8, log.as_mut_ptr() as u64)
        .u32(16, blob.len() as u32)
        .u32(20, log.len() as u32)
        .u32(24, 1);
    // Safety: the attr points to `blob` (btf_size bytes, read) and `log` (btf_log_size
    // bytes, written), both alive for the call.
    unsafe { sys::bpf_fd(sys::BTF_LOAD, &mut attr) }.map_err(|e| {
        let words = CStr::from_bytes_until_nul(&log)
            .map(|c| c.to_string_lossy().trim().to_string())
            .unwrap_or_default();
        Error::Tracing {
            what: format!("the kernel refused the BTF of a BPF map: {words}"),
            source: Some(e),
        }
    })
}

/// `BTF_KIND_FUNC`.
const KIND_FUNC: u32 = 12;

/// `BTF_KIND_TYPEDEF`.
const KIND_TYPEDEF: u32 = 8;

/// The id of the type of kind `want` named `name` in the BTF blob `b` (the kernel's:
/// `/sys/kernel/btf/vmlinux`), or None. Types are
/// numbered from 1 in the order they come; each kind's extra data after its 12-byte header
/// is skipped by its size.
fn type_id(b: &[u8], want: u32, name: &str) -> Option<u32> {
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    if b.get(..2)? != MAGIC.to_ne_bytes() {
        return None;
    }
    let hdr = u32_at(4)? as usize;
    let (type_off, type_len) = (u32_at(8)? as usize, u32_at(12)? as usize);
    let (str_off, str_len) = (u32_at(16)? as usize, u32_at(20)? as usize);
    let strings = b.get(hdr + str_off..hdr + str_off + str_len)?;
    let name_at = |off: usize| -> Option<&[u8]> {
        let s = strings.get(off..)?;
        Some(&s[..s.iter().position(|&c| c == 0)?])
    };
    let (mut at, end) = (hdr + type_off, hdr + type_off + type_len);
    let mut id = 1u32;
    while at + 12 <= end {
        let (name_off, info) = (u32_at(at)? as usize, u32_at(at + 4)?);
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        if kind == want && name_at(name_off)? == name.as_bytes() {
            return Some(id);
        }
        at += 12
            + match kind {
                KIND_INT | 14 | 17 => 4,
                KIND_ARRAY => 12,
                4 | 5 | 15 | 19 => 12 * vlen,
                6 | 13 => 8 * vlen,
                _ => 0,
            };
        id += 1;
    }
    None
}

/// The id of kernel function `name` in `/sys/kernel/btf/vmlinux`.
///
/// Returns an error if the kernel has no BTF or no such function.
pub(super) fn vmlinux_func(name: &str) -> Result<u32> {
    vmlinux_type(KIND_FUNC, name)
}

/// The id of the typedef the kernel declares for tracepoint `name` (`btf_trace_<name>`), which
/// a BTF-typed tracepoint program names as its target.
///
/// Returns an error if the kernel has no BTF or no such tracepoint.
pub(super) fn vmlinux_tracepoint(name: &str) -> Result<u32> {
    vmlinux_type(KIND_TYPEDEF, &format!("btf_trace_{name}"))
}

fn vmlinux_type(kind: u32, name: &str) -> Result<u32> {
    let path = "/sys/kernel/btf/vmlinux";
    // Through the bounded reader, as every /sys file: a few MiB of types.
    let b = safe_fs::read(path, &safe_fs::ReadOptions::procfs(crate::procfs::LARGE))
        .map_err(|e| Error::Tracing {
            what: format!("cannot read the kernel's types: {e}"),
            source: None,
        })?
        .into_vec();
    type_id(&b, kind, name).ok_or_else(|| Error::Tracing {
        what: format!("{path} has no {name}"),
        source: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blob_is_a_header_three_types_and_their_names() {
        let b = key_value(16);
        let u = |at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().unwrap());
        assert_eq!(u16::from_ne_bytes([b[0], b[1]]), MAGIC);
        assert_eq!(
            (b[2], u(4), u(8), u(12), u(16), u(20)),
            (1, 24, 0, 56, 56, 8)
        );
        assert_eq!(b.len(), 24 + 56 + 8);
        // The array: element u8, index int, 16 of them.
        assert_eq!(
            (u(24 + 32 + 4), u(24 + 32 + 12), u(24 + 32 + 20)),
            (3 << 24, 2, 16)
        );
        assert_eq!(&b[80..], b"\0int\0u8\0");
    }

    #[test]
    fn a_function_is_found_by_name_past_types_of_every_size() {
        // [1] int, [2] u8, [3] u8[16], then [4] a FUNC named "u8" (its type: 0).
        let mut b = key_value(16);
        let type_len = 56 + 12;
        b.truncate(24 + 56);
        b.extend(
            [NAME_U8, KIND_FUNC << 24, 0]
                .iter()
                .flat_map(|v| v.to_ne_bytes()),
        );
        b.extend(STRINGS);
        b[12..16].copy_from_slice(&(type_len as u32).to_ne_bytes());
        b[16..20].copy_from_slice(&(type_len as u32).to_ne_bytes());
        assert_eq!(type_id(&b, KIND_FUNC, "u8"), Some(4));
        // An int is not a function, nor is the FUNC a typedef.
        assert_eq!(type_id(&b, KIND_FUNC, "int"), None);
        assert_eq!(type_id(&b, KIND_TYPEDEF, "u8"), None);
        assert_eq!(type_id(&b[..20], KIND_FUNC, "u8"), None);
    }
}
