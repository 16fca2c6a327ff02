//! The live machine's part of a measurement: what the writer records of the kernel that ran
//! (release, build-id, boot id, the `USER_HZ` clock of `/proc`'s CPU times), the kernel's symbols
//! and this process's own vDSO image. Everything the writer reads of the running machine is
//! read here, once, into a [`MachineSnapshot`]; the writer itself is portable, so a recording
//! from elsewhere (a perf.data file, a stream) or a test gives it a snapshot of its own.

use crate::kernel_symbols::KernelSymbols;

/// What a measurement records of the machine it was taken on.
///
/// [`MachineSnapshot::live`] reads the running machine; a recording made elsewhere fills in
/// what it knows (fields left `None` are written as unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MachineSnapshot {
    /// The kernel release (`/proc/sys/kernel/osrelease`). Default is None.
    pub release: Option<String>,
    /// The kernel's GNU build-id (from `/sys/kernel/notes`). Default is None.
    pub kernel_build_id: Option<Vec<u8>>,
    /// The boot id (`/proc/sys/kernel/random/boot_id`), which names the kernel-symbol snapshot
    /// (`kallsyms.` and its first 8 hex digits). Default is None (`kallsyms.unknown`).
    pub boot_id: Option<String>,
    /// Clock ticks a second of `/proc`'s CPU times (`sysconf(_SC_CLK_TCK)`). Default is 100.
    pub clock_ticks: u64,
    /// The vDSO image the kernel maps into every 64-bit process, saved when a profiled process
    /// mapped one with its build-id. Default is None.
    pub vdso: Option<Vec<u8>>,
}

impl Default for MachineSnapshot {
    fn default() -> Self {
        MachineSnapshot {
            release: None,
            kernel_build_id: None,
            boot_id: None,
            clock_ticks: 100,
            vdso: None,
        }
    }
}

impl MachineSnapshot {
    /// Reads the running machine: what cannot be read is left `None`.
    pub fn live() -> Self {
        // Safety: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        MachineSnapshot {
            release: kernel_release(),
            kernel_build_id: kernel_build_id(),
            boot_id: crate::procfs::text("/proc/sys/kernel/random/boot_id", 4096),
            clock_ticks: ticks,
            vdso: own_vdso(),
        }
    }

    /// The kernel-symbol snapshot's file name: `kallsyms.` and the first 8 hex digits of the
    /// boot id.
    pub(crate) fn symbols_file(&self) -> String {
        let id = self.boot_id.as_deref().unwrap_or_default();
        let digits: String = id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
        format!(
            "kallsyms.{}",
            if digits.len() == 8 {
                digits
            } else {
                "unknown".into()
            }
        )
    }

    /// Nanoseconds a clock tick of `/proc`'s CPU times.
    pub(crate) fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.clock_ticks.max(1)
    }
}

impl KernelSymbols {
    /// This machine's `/proc/kallsyms`, or none if it cannot be read.
    pub fn live() -> KernelSymbols {
        let text = crate::procfs::text("/proc/kallsyms", crate::procfs::LARGE).unwrap_or_default();
        KernelSymbols::parse(text)
    }
}

/// The GNU build-id note in `/sys/kernel/notes` (a sequence of ELF notes).
fn kernel_build_id() -> Option<Vec<u8>> {
    let notes = crate::procfs::bytes("/sys/kernel/notes", 1 << 20)?;
    let mut pos = 0;
    let u32_at = |p: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(notes.get(p..p + 4)?.try_into().ok()?))
    };
    while pos + 12 <= notes.len() {
        let namesz = u32_at(pos)? as usize;
        let descsz = u32_at(pos + 4)? as usize;
        let ty = u32_at(pos + 8)?;
        let name_at = pos + 12;
        let desc_at = name_at + namesz.next_multiple_of(4);
        let next = desc_at + descsz.next_multiple_of(4);
        if ty == 3 && notes.get(name_at..name_at + namesz) == Some(b"GNU\0") {
            return notes.get(desc_at..desc_at + descsz).map(<[u8]>::to_vec);
        }
        pos = next;
    }
    None
}

/// The vDSO image of this process: the kernel maps the same image into every process, so the
/// collector's own copy can unwind the vDSO frames of the profiled ones.
pub(crate) fn own_vdso() -> Option<Vec<u8>> {
    let maps = crate::procfs::text("/proc/self/maps", crate::procfs::LARGE)?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (a, b) = line.split_whitespace().next()?.split_once('-')?;
    let (a, b) = (
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(b, 16).ok()?,
    );
    // Safety: /proc/self/maps says [a, b) is mapped readable in this process for its whole
    // life (the vDSO is never unmapped), and we only copy from it.
    let bytes = unsafe { std::slice::from_raw_parts(a as *const u8, (b - a) as usize) };
    Some(bytes.to_vec())
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`), read here for the snapshot
/// and for the preflight's messages alike.
pub(crate) fn kernel_release() -> Option<String> {
    crate::procfs::text("/proc/sys/kernel/osrelease", 4096).map(|s| s.trim().to_owned())
}
