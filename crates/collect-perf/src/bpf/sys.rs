//! The bpf(2) system call: the raw `union bpf_attr` layouts the collector uses, nothing more.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

pub(crate) const MAP_CREATE: u32 = 0;
pub(crate) const MAP_LOOKUP_ELEM: u32 = 1;
pub(crate) const MAP_UPDATE_ELEM: u32 = 2;
pub(crate) const MAP_DELETE_ELEM: u32 = 3;
pub(crate) const MAP_GET_NEXT_KEY: u32 = 4;
pub(crate) const PROG_LOAD: u32 = 5;
pub(crate) const RAW_TRACEPOINT_OPEN: u32 = 17;
pub(crate) const BTF_LOAD: u32 = 18;
pub(crate) const MAP_LOOKUP_AND_DELETE_ELEM: u32 = 21;

pub(crate) const PROG_TYPE_TRACEPOINT: u32 = 5;
pub(crate) const PROG_TYPE_PERF_EVENT: u32 = 7;
pub(crate) const PROG_TYPE_RAW_TRACEPOINT: u32 = 17;
pub(crate) const PROG_TYPE_TRACING: u32 = 26;
/// `BPF_TRACE_FENTRY`, `BPF_TRACE_FEXIT`: a tracing program's expected attach types.
pub(crate) const TRACE_FENTRY: u32 = 24;
pub(crate) const TRACE_FEXIT: u32 = 25;
/// `BPF_TRACE_RAW_TP`: a tracing program on a tracepoint, its arguments typed by BTF.
pub(crate) const TRACE_RAW_TP: u32 = 23;
/// `BPF_F_NO_PREALLOC`: hash entries allocated on update, not all at creation.
pub(crate) const F_NO_PREALLOC: u32 = 1;
/// `BPF_F_RDONLY_PROG`-free default: `BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST` for updates.
pub(crate) const ANY: u64 = 0;

/// `sizeof(union bpf_attr)` on 6.x kernels; a kernel with a shorter union checks that the
/// bytes it does not know are zero, which they are.
const ATTR_SIZE: usize = 144;

/// A zeroed `union bpf_attr`, written field by field at the offsets of the uapi header.
#[derive(Clone)]
#[repr(C, align(8))]
pub(crate) struct Attr([u8; ATTR_SIZE]);

impl Attr {
    pub(crate) fn new() -> Attr {
        Attr([0; ATTR_SIZE])
    }

    pub(crate) fn u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }

    pub(crate) fn u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }

    pub(crate) fn bytes(&mut self, off: usize, v: &[u8]) -> &mut Attr {
        self.0[off..off + v.len()].copy_from_slice(v);
        self
    }
}

/// Calls bpf(`cmd`, `attr`); returns the kernel's non-negative result.
///
/// # Safety
/// Every pointer `attr` holds must be valid for what `cmd` does with it (reads of the
/// sizes given, writes into buffers of the sizes given) for the duration of the call.
pub(crate) unsafe fn bpf(cmd: u32, attr: &mut Attr) -> io::Result<i64> {
    // Safety: `attr` is ATTR_SIZE bytes; the pointers it holds are the caller's promise.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_long,
            attr.0.as_mut_ptr(),
            ATTR_SIZE as libc::c_long,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

/// Calls a bpf command that returns a new file descriptor.
///
/// # Safety
/// As [`bpf`].
pub(crate) unsafe fn bpf_fd(cmd: u32, attr: &mut Attr) -> io::Result<OwnedFd> {
    // Safety: the caller's promise, passed on.
    let fd = unsafe { bpf(cmd, attr) }?;
    // Safety: the kernel just returned this descriptor (created O_CLOEXEC by bpf(2)) and
    // nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The number of possible CPUs (`/sys/devices/system/cpu/possible`, e.g. `0-3`): the
/// per-CPU maps hold one value per possible CPU.
pub(crate) fn possible_cpus() -> io::Result<usize> {
    let text = crate::procfs::text("/sys/devices/system/cpu/possible", crate::procfs::SMALL)
        .unwrap_or_default();
    parse_cpu_list(text.trim())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("cpu list {text:?}")))
}

/// The count of a cpu list (`0-3,8`): one past the highest cpu, as the kernel sizes per-CPU
/// values by `num_possible_cpus()` (the possible set is contiguous from 0).
fn parse_cpu_list(s: &str) -> Option<usize> {
    let mut max = None;
    for part in s.split(',') {
        let last = part.rsplit('-').next()?;
        let n: usize = last.trim().parse().ok()?;
        max = Some(max.map_or(n, |m: usize| m.max(n)));
    }
    max.map(|m| m + 1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_lists_count_possible_cpus() {
        assert_eq!(super::parse_cpu_list("0-3"), Some(4));
        assert_eq!(super::parse_cpu_list("0"), Some(1));
        assert_eq!(super::parse_cpu_list("0-1,4-7"), Some(8));
        assert_eq!(super::parse_cpu_list(""), None);
    }
}
