//! Frames kept by a register other than rsp and rbp: ld.so's lazy-binding trampolines
//! (`_dl_runtime_resolve_xsavec` and its kin) realign the stack and keep their frame in rbx
//! (`CFA = rbx + 32`). framehop follows only rsp and rbp; given such an entry it falls back to
//! rbp, and the trampoline's caller (the function that called through the PLT) was skipped or
//! the stack ended there: every sample of a function's first call through the PLT, in the
//! resolver, lost its callers (29 of the 39 cut stacks of 40 `gcc -c` runs).
//!
//! [`ranges`] finds such entries in `.eh_frame` when a file is read; [`row`] reads an entry's
//! rules for one address with gimli, for the unwinder to apply with the register's value,
//! which it takes from where an inner frame saved it. The unwinder also asks [`row`] where the
//! return address of a frame framehop could not unwind lies (an entry whose offsets outgrow
//! framehop's 16 bits), to tell a stack cut by the copy from one cut by its unwind information.

use std::ops::Range;

use gimli::{
    BaseAddresses, CallFrameInstruction, CfaRule, CieOrFde, EhFrame, EhFrameHdr, NativeEndian,
    Register, RegisterRule, UnwindContext, UnwindSection as _, X86_64,
};

use crate::elf::ElfInfo;

/// The most such entries kept of one file (ld.so has four).
const MAX_FRAMES: usize = 64;

/// The address ranges (as stated in the file) of the unwind entries of `eh_frame` (the
/// section's bytes, at address `svma`) that define the frame by a register other than rsp
/// and rbp.
///
/// A malformed record ends the scan; what was found before it is kept.
pub(crate) fn ranges(eh_frame: &[u8], svma: u64) -> Vec<Range<u64>> {
    let section = EhFrame::new(eh_frame, NativeEndian);
    let bases = BaseAddresses::default().set_eh_frame(svma);
    let mut found = Vec::new();
    let mut entries = section.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(|s, b, o| s.cie_from_offset(b, o)) else {
            break;
        };
        let mut instructions = fde.instructions(&section, &bases);
        while let Ok(Some(i)) = instructions.next() {
            let register = match i {
                CallFrameInstruction::DefCfa { register, .. }
                | CallFrameInstruction::DefCfaSf { register, .. }
                | CallFrameInstruction::DefCfaRegister { register } => register,
                _ => continue,
            };
            if register != X86_64::RSP && register != X86_64::RBP {
                found.push(fde.initial_address()..fde.end_address());
                break;
            }
        }
        if found.len() == MAX_FRAMES {
            break;
        }
    }
    found
}

/// What an unwind entry says of one address: the CFA as a register plus an offset, and where
/// rbx, rbp and the return address are saved (offsets from the CFA), when they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    pub cfa: (Register, i64),
    pub rbx: Option<i64>,
    pub rbp: Option<i64>,
    pub ra: Option<i64>,
}

/// The rules of `elf`'s unwind entry for the address `svma` (as stated in the file), read
/// with gimli; None without an entry there, or with a CFA that is not a register plus an
/// offset.
pub(crate) fn row(elf: &ElfInfo, svma: u64) -> Option<Row> {
    let eh = elf.eh_frame.as_ref()?;
    let section = EhFrame::new(eh.data(), NativeEndian);
    let mut bases = BaseAddresses::default().set_eh_frame(eh.svma.start);
    if let Some(text) = &elf.text {
        bases = bases.set_text(text.start);
    }
    let mut ctx = Box::new(UnwindContext::new());
    let r = match &elf.eh_frame_hdr {
        Some(hdr) => {
            let bases = bases.set_eh_frame_hdr(hdr.svma.start);
            let parsed = EhFrameHdr::new(hdr.data(), NativeEndian)
                .parse(&bases, 8)
                .ok()?;
            parsed
                .table()?
                .unwind_info_for_address(&section, &bases, &mut ctx, svma, EhFrame::cie_from_offset)
                .ok()?
                .clone()
        }
        None => section
            .unwind_info_for_address(&bases, &mut ctx, svma, EhFrame::cie_from_offset)
            .ok()?
            .clone(),
    };
    let cfa = match r.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => (*register, *offset),
        CfaRule::Expression(_) => return None,
    };
    let saved = |register| match r.register(register) {
        Some(RegisterRule::Offset(n)) => Some(n),
        _ => None,
    };
    Some(Row {
        cfa,
        rbx: saved(X86_64::RBX),
        rbp: saved(X86_64::RBP),
        ra: saved(X86_64::RA),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's dynamic linker has its lazy-binding trampolines found, each with its
    /// frame in rbx once the stack is realigned, its return address just below the CFA.
    #[test]
    fn the_dynamic_linkers_trampolines_are_found_and_read() {
        let path = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").expect("ld.so");
        let elf = crate::elf::read_object(path.to_str().expect("utf-8")).expect("ld.so parses");
        let eh = elf.eh_frame.as_ref().expect(".eh_frame");
        let found = ranges(eh.data(), eh.svma.start);
        assert!(found.len() < 10, "{found:?}");
        // Past the prologue (push rbx; mov rsp, rbx), in the body: the resolvers
        // (_dl_runtime_resolve_fxsave, _xsave, _xsavec) and their profiling twins.
        let in_rbx: Vec<Row> = found
            .iter()
            .filter_map(|r| row(&elf, r.start + 0x20))
            .filter(|body| body.cfa.0 == X86_64::RBX)
            .collect();
        assert!(in_rbx.len() >= 3, "{found:x?}: {in_rbx:?}");
        assert!(in_rbx.iter().all(|b| b.ra == Some(-8)), "{in_rbx:?}");
        // An ordinary function of the same file is not among them.
        let libc = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6").expect("libc");
        let libc = crate::elf::read_object(libc.to_str().expect("utf-8")).expect("libc parses");
        let eh = libc.eh_frame.as_ref().expect(".eh_frame");
        assert!(ranges(eh.data(), eh.svma.start).len() < MAX_FRAMES);
    }
}
