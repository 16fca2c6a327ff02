//! BPF maps: created, read and written from user space through bpf(2); the descriptor is
//! owned, so the map goes when the last program using it and this handle are gone.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use super::sys::{self, Attr};
use crate::{Error, Result};

/// The kinds of map the collector uses (`enum bpf_map_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    /// `BPF_MAP_TYPE_HASH`: one value per key, shared by all CPUs.
    Hash,
    /// `BPF_MAP_TYPE_ARRAY`: `u32` keys 0..max_entries, all present.
    Array,
    /// `BPF_MAP_TYPE_PERF_EVENT_ARRAY`: `u32` CPU numbers to perf event descriptors, the
    /// events `bpf_perf_event_output` writes into.
    PerfEventArray,
    /// `BPF_MAP_TYPE_PERCPU_HASH`: a value per key per possible CPU (no atomics needed).
    PercpuHash,
    /// `BPF_MAP_TYPE_PERCPU_ARRAY`.
    PercpuArray,
    /// `BPF_MAP_TYPE_STACK_TRACE`: `u32` stack ids to arrays of `u64` addresses, filled by
    /// `bpf_get_stackid`.
    StackTrace,
    /// `BPF_MAP_TYPE_RINGBUF`: a ring buffer of records read by mmap ([`super::RingBuf`]).
    RingBuf,
    /// `BPF_MAP_TYPE_LRU_HASH`: a hash that evicts its least recently used entry when full.
    LruHash,
    /// `BPF_MAP_TYPE_TASK_STORAGE`: a value kept in each task that has one, found from the
    /// task (`bpf_task_storage_get`), not by a key lookup, and freed with the task
    /// ([`Map::create_task_storage`]).
    TaskStorage,
}

impl MapKind {
    fn code(self) -> u32 {
        match self {
            MapKind::Hash => 1,
            MapKind::Array => 2,
            MapKind::PerfEventArray => 4,
            MapKind::PercpuHash => 5,
            MapKind::PercpuArray => 6,
            MapKind::StackTrace => 7,
            MapKind::RingBuf => 27,
            MapKind::LruHash => 9,
            MapKind::TaskStorage => 29,
        }
    }

    fn per_cpu(self) -> bool {
        matches!(self, MapKind::PercpuHash | MapKind::PercpuArray)
    }
}

/// A BPF map.
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    kind: MapKind,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    /// Values per lookup: the possible CPUs for per-CPU maps, else 1.
    cpus: usize,
}

/// What the kernel's refusal of a map means, for the error message.
fn map_error(what: String, e: io::Error) -> Error {
    let advice = match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => ": run as root or with CAP_BPF and CAP_PERFMON",
        Some(libc::ENOMEM) => ": not enough locked memory (raise `ulimit -l`)",
        _ => "",
    };
    Error::Tracing {
        what: format!("{what}{advice}"),
        source: Some(e),
    }
}

impl Map {
    /// Creates a map named `name` (at most 15 bytes kept) with the given sizes; a hash map's
    /// entries are all allocated now, so a program's update never allocates.
    ///
    /// Returns an error saying what to do if the kernel refuses it (privilege, memory).
    pub fn create(
        kind: MapKind,
        name: &str,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> Result<Map> {
        Map::create_attr(
            Attr::new(),
            kind,
            name,
            key_size,
            value_size,
            max_entries,
            0,
        )
    }

    /// Like [`Map::create`], but a hash map's entries are allocated as they come
    /// (`BPF_F_NO_PREALLOC`): a large bound costs nothing until used, each new key costs an
    /// allocation. For maps whose keys are few and long-lived (histogram buckets).
    pub fn create_sparse(
        kind: MapKind,
        name: &str,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> Result<Map> {
        let flags = if matches!(kind, MapKind::Hash | MapKind::PercpuHash) {
            sys::F_NO_PREALLOC
        } else {
            0
        };
        Map::create_attr(
            Attr::new(),
            kind,
            name,
            key_size,
            value_size,
            max_entries,
            flags,
        )
    }

    /// Creates a task-storage map of `value_size`-byte values ([`MapKind::TaskStorage`]):
    /// a program reaches the current thread's value from `bpf_get_current_task_btf` with
    /// one helper call, where a hash costs a key lookup. The kernel asks for the key's and
    /// value's types, so a minimal BTF is loaded with it. User space reads and writes a
    /// task's value with a pidfd of the task as the key.
    ///
    /// Returns an error saying what the kernel refused.
    pub fn create_task_storage(name: &str, value_size: u32) -> Result<Map> {
        let btf = super::btf::load(&super::btf::key_value(value_size))?;
        let mut attr = Attr::new();
        attr.u32(48, btf.as_raw_fd() as u32)
            .u32(52, super::btf::KEY_TYPE)
            .u32(56, super::btf::VALUE_TYPE);
        let kind = MapKind::TaskStorage;
        Map::create_attr(attr, kind, name, 4, value_size, 0, sys::F_NO_PREALLOC)
    }

    /// Creates a map from `attr` (zero, or with its BTF fields set) and the rest.
    fn create_attr(
        mut attr: Attr,
        kind: MapKind,
        name: &str,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        flags: u32,
    ) -> Result<Map> {
        attr.u32(0, kind.code())
            .u32(4, key_size)
            .u32(8, value_size)
            .u32(12, max_entries)
            .u32(16, flags);
        let name_bytes = name.as_bytes();
        attr.bytes(28, &name_bytes[..name_bytes.len().min(15)]);
        // Safety: MAP_CREATE reads only the attr's scalar fields; it holds no pointers.
        let fd = unsafe { sys::bpf_fd(sys::MAP_CREATE, &mut attr) }
            .map_err(|e| map_error(format!("cannot create the BPF map {name}"), e))?;
        let cpus = if kind.per_cpu() {
            sys::possible_cpus().map_err(|e| Error::io("cannot count the possible cpus", e))?
        } else {
            1
        };
        Ok(Map {
            fd,
            kind,
            key_size,
            value_size,
            max_entries,
            cpus,
        })
    }

    /// The map's kind.
    pub fn kind(&self) -> MapKind {
        self.kind
    }

    /// Its maximum number of entries (for a ring buffer, its size in bytes).
    pub fn max_entries(&self) -> u32 {
        self.max_entries
    }

    /// The bytes of one lookup's value: per-CPU maps give one value (rounded up to 8 bytes)
    /// per possible CPU.
    pub fn value_bytes(&self) -> usize {
        self.value_stride() * self.cpus
    }

    /// The size of one CPU's value within a lookup (`value_size` rounded up to 8 for per-CPU
    /// maps).
    pub fn value_stride(&self) -> usize {
        if self.kind.per_cpu() {
            (self.value_size as usize).next_multiple_of(8)
        } else {
            self.value_size as usize
        }
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    fn check_key(&self, key: &[u8]) -> io::Result<()> {
        if key.len() != self.key_size as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {}-byte key for a map of {}-byte keys",
                    key.len(),
                    self.key_size
                ),
            ));
        }
        Ok(())
    }

    fn elem(&self, cmd: u32, key: &[u8], value: *mut u8, flags: u64) -> io::Result<()> {
        self.check_key(key)?;
        let mut attr = Attr::new();
        attr.u32(0, self.fd.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, value as u64)
            .u64(24, flags);
        // Safety: `key` holds key_size bytes (checked); `value`, when the command uses it,
        // points to `value_bytes()` bytes (the callers' buffers), which is what the kernel
        // reads or writes for this map.
        unsafe { sys::bpf(cmd, &mut attr) }.map(|_| ())
    }

    /// The value of `key` (for per-CPU maps, [`Map::value_bytes`] holding every CPU's), or
    /// None if absent.
    pub fn lookup(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        let mut v = vec![0u8; self.value_bytes()];
        match self.elem(sys::MAP_LOOKUP_ELEM, key, v.as_mut_ptr(), 0) {
            Ok(()) => Ok(Some(v)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes `key` and returns its value, in one step (an update between a lookup and a
    /// delete would be lost), or None if absent.
    pub fn take(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        let mut v = vec![0u8; self.value_bytes()];
        match self.elem(sys::MAP_LOOKUP_AND_DELETE_ELEM, key, v.as_mut_ptr(), 0) {
            Ok(()) => Ok(Some(v)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sets `key` to `value` (for per-CPU maps, every CPU's value in turn).
    pub fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        if value.len() != self.value_bytes() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {}-byte value for {} bytes",
                    value.len(),
                    self.value_bytes()
                ),
            ));
        }
        self.elem(
            sys::MAP_UPDATE_ELEM,
            key,
            value.as_ptr().cast_mut(),
            sys::ANY,
        )
    }

    /// Removes `key`; absent is not an error.
    pub fn delete(&self, key: &[u8]) -> io::Result<()> {
        match self.elem(sys::MAP_DELETE_ELEM, key, std::ptr::null_mut(), 0) {
            Err(e) if e.raw_os_error() != Some(libc::ENOENT) => Err(e),
            _ => Ok(()),
        }
    }

    /// Every key present now (a snapshot: keys added meanwhile may be missed).
    pub fn keys(&self) -> io::Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let mut next = vec![0u8; self.key_size as usize];
        let mut cur: Option<Vec<u8>> = None;
        loop {
            let mut attr = Attr::new();
            attr.u32(0, self.fd.as_raw_fd() as u32)
                .u64(8, cur.as_ref().map_or(0, |k| k.as_ptr() as u64))
                .u64(16, next.as_mut_ptr() as u64);
            // Safety: the key pointer is null (first key) or key_size bytes; `next` is
            // key_size bytes for the kernel to write.
            match unsafe { sys::bpf(sys::MAP_GET_NEXT_KEY, &mut attr) } {
                Ok(_) => {
                    out.push(next.clone());
                    cur = Some(next.clone());
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(out),
                Err(e) => return Err(e),
            }
            if out.len() > self.max_entries as usize {
                // A key deleted while walking restarts the walk in the kernel: stop rather
                // than loop.
                return Ok(out);
            }
        }
    }
}

/// Reads the little-endian `u64` at `off` of `b` (0 past its end).
pub(crate) fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// Reads the `u32` at `off` of `b` (0 past its end).
pub(crate) fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}
