//! Crossing a signal frame: a handler's caller is the code the signal interrupted.
//!
//! The kernel starts a handler on the interrupted thread's stack with the address of the C
//! library's restorer (glibc's `__restore_rt`, which calls `rt_sigreturn`) as its return
//! address, just below the saved machine state (`struct ucontext`). The restorer's unwind entry
//! describes that state with DWARF expressions, which framehop does not evaluate: the unwind
//! stopped there, and the handler's time lost its callers. Libraries mark such entries with
//! `S` in their CIE's augmentation (a signal frame); [`trampolines`] finds them in
//! `.eh_frame`, and [`registers`] reads the interrupted registers from the ucontext at the
//! restorer's frame, so unwinding goes on from the interrupted instruction.

use std::collections::HashMap;
use std::ops::Range;

use gimli::{BaseAddresses, CieOrFde, EhFrame, EhFrameOffset, NativeEndian, UnwindSection as _};

/// Where the general registers lie in the ucontext the kernel pushes on x86_64 (the ABI's
/// `struct ucontext`: flags, link, `stack_t`, then `struct sigcontext`, whose registers run
/// r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip).
const UC_MCONTEXT: u64 = 40;
const UC_RBP: u64 = UC_MCONTEXT + 10 * 8;
const UC_RSP: u64 = UC_MCONTEXT + 15 * 8;
const UC_RIP: u64 = UC_MCONTEXT + 16 * 8;
/// How many bytes above the restorer's stack pointer [`registers`] reads.
pub(crate) const UC_READ: u64 = UC_RIP + 8;

/// The interrupted thread's registers, read from the ucontext at `uc` (the stack pointer of
/// the restorer's frame: the handler's return address popped): (ip, sp, bp).
///
/// Returns None if a word cannot be read.
pub(crate) fn registers(
    uc: u64,
    mut read: impl FnMut(u64) -> Result<u64, ()>,
) -> Option<(u64, u64, u64)> {
    let ip = read(uc.checked_add(UC_RIP)?).ok()?;
    let sp = read(uc.checked_add(UC_RSP)?).ok()?;
    let bp = read(uc.checked_add(UC_RBP)?).ok()?;
    Some((ip, sp, bp))
}

/// The most signal-frame entries kept of one file (glibc has one).
const MAX_TRAMPOLINES: usize = 16;

/// The address ranges (as stated in the file) of the unwind entries of `eh_frame` (the
/// section's bytes, at address `svma`) whose CIE marks a signal frame, read with gimli.
///
/// A malformed record ends the scan; what was found before it is kept.
pub(crate) fn trampolines(eh_frame: &[u8], svma: u64) -> Vec<Range<u64>> {
    let section = EhFrame::new(eh_frame, NativeEndian);
    let bases = BaseAddresses::default().set_eh_frame(svma);
    // Whether each CIE seen marks signal frames: only their FDEs are parsed further.
    let mut signal: HashMap<EhFrameOffset, bool> = HashMap::new();
    let mut found = Vec::new();
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let cie = partial.cie_offset();
        let marks = *signal.entry(cie).or_insert_with(|| {
            section
                .cie_from_offset(&bases, cie)
                .is_ok_and(|c| c.is_signal_trampoline())
        });
        if !marks {
            continue;
        }
        let Ok(fde) = partial.parse(|s, b, o| s.cie_from_offset(b, o)) else {
            break;
        };
        found.push(fde.initial_address()..fde.end_address());
        if found.len() == MAX_TRAMPOLINES {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CIE (augmentation `zRS`, pc-relative sdata4 FDE pointers) and its FDE covering
    /// 0x10 bytes from 0x1000, in a section at 0x2000; then a plain CIE and FDE.
    fn section() -> Vec<u8> {
        let mut b = Vec::new();
        let cie = |b: &mut Vec<u8>, aug: &[u8]| {
            let mut body = vec![0, 0, 0, 0, 1];
            body.extend_from_slice(aug);
            body.extend_from_slice(&[1, 0x78, 16, 1, 0x1b]);
            while body.len() % 4 != 0 {
                body.push(0);
            }
            b.extend((body.len() as u32).to_le_bytes());
            b.extend(body);
        };
        let fde = |b: &mut Vec<u8>, cie_at: usize, start: u64| {
            let at = b.len();
            let pc_field = at + 8;
            let rel = (start as i64 - (0x2000 + pc_field as i64)) as i32;
            let mut body = Vec::new();
            body.extend(((at + 4 - cie_at) as u32).to_le_bytes());
            body.extend(rel.to_le_bytes());
            body.extend(0x10u32.to_le_bytes());
            body.extend([0, 0, 0, 0]);
            b.extend((body.len() as u32).to_le_bytes());
            b.extend(body);
        };
        cie(&mut b, b"zRS\0");
        fde(&mut b, 0, 0x1000);
        let plain = b.len();
        cie(&mut b, b"zR\0");
        fde(&mut b, plain, 0x3000);
        b.extend([0, 0, 0, 0]);
        b
    }

    #[test]
    fn only_the_entries_of_signal_frame_cies_are_found() {
        let found = trampolines(&section(), 0x2000);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0], 0x1000..0x1010);
    }

    #[test]
    fn truncated_sections_keep_what_came_before() {
        let s = section();
        for cut in 0..s.len() {
            let got = trampolines(&s[..cut], 0x2000);
            assert!(
                got.is_empty() || (got.len() == 1 && got[0] == (0x1000..0x1010)),
                "{cut}: {got:?}"
            );
        }
    }

    #[test]
    fn the_interrupted_registers_are_read_from_the_ucontext() {
        let uc = 0x7000u64;
        let read = |a: u64| -> Result<u64, ()> {
            match a - uc {
                UC_RIP => Ok(0x401234),
                UC_RSP => Ok(0x7ff0),
                UC_RBP => Ok(0x8000),
                _ => Err(()),
            }
        };
        assert_eq!(registers(uc, read), Some((0x401234, 0x7ff0, 0x8000)));
        assert_eq!(registers(uc, |_| Err(())), None);
    }

    /// The C library this machine runs has its restorer marked (glibc's `__restore_rt`):
    /// the scan finds exactly one entry in it.
    #[test]
    fn the_system_c_library_has_one_signal_frame() {
        let path = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6").expect("libc");
        let elf = crate::elf::read_object(path.to_str().expect("utf-8")).expect("libc parses");
        assert_eq!(elf.signal_frames.len(), 1, "{:?}", elf.signal_frames);
    }
}
