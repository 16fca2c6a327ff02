//! The in-kernel latency collection's programs, assembled with [`crate::bpf::Asm`]: one
//! builder per tracepoint, over the maps and frame of `layout.rs`. Each program's bytes are
//! pinned by the tests below.

use crate::bpf::insn::{Alu, Asm, Code, Cond, Helper, Label, Reg, Size};

use super::layout::{
    ARG_0, ARG_1, BKEY, BOUNDS, CTX, ENTERS, EXITS, FAULTS, FRAME_SPAN, GK, GONE, GV, HIST,
    HIST_FULL, HK, HV, K_BUCKET, K_GEN, K_IP, K_NR, K_RET, K_SLICE, K_TGID, K_UP, KEY32, NOEXIST,
    NS, Offsets, PIDS, PIDS_FULL, PT_REGS_BP, PT_REGS_IP, PT_REGS_SP, PT_REGS_TO_SP, REGS,
    S_FAULTS, S_GEN, S_IMG, S_IP, S_NR, S_RET, S_T0, S_TGID, S_UP, START_FULL, Shape, TASK,
    UNPAIRED_ENTER, UNPAIRED_EXIT, count,
};

/// The error of an update with NOEXIST of a key that exists.
const EEXIST: i32 = 17;

/// Looks the current process up in PIDS: jumps to `out` unless it is followed and armed;
/// leaves `R7` = pid_tgid, `R8` = its image generation.
fn followed(a: &mut Asm, out: Label) {
    a.call(Helper::GetCurrentPidTgid)
        .mov(Reg::R7, Reg::R0)
        .mov(Reg::R1, Reg::R0)
        .alu_imm(Alu::Rsh, Reg::R1, 32)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .ld_map(Reg::R1, PIDS);
    a.frame_ptr(Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .load(Size::W, Reg::R1, Reg::R0, 0)
        .jmp_imm(Cond::Eq, Reg::R1, 0, out)
        .load(Size::W, Reg::R8, Reg::R0, 4);
}

/// Adds one call of NS ns and FAULTS faults to the histogram entry at HK (created if new;
/// a full map is counted). With `copy`, the call that creates an entry sends its call
/// site's registers and stack ([`super::blocking::site_copy`]).
fn hist_add(a: &mut Asm, copy: bool) {
    let (new, found, done, full) = (a.label(), a.label(), a.label(), a.label());
    let created = if copy { a.label() } else { done };
    let (set_min, no_min, no_max) = (a.label(), a.label(), a.label());
    a.ld_map(Reg::R1, HIST);
    a.frame_ptr(Reg::R2, HK);
    // A key another CPU created has this CPU's value zeroed: its first call sets the min.
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, new)
        .bind(found)
        .load(Size::DW, Reg::R1, Reg::R0, 0)
        .mov(Reg::R3, Reg::R1)
        .alu_imm(Alu::Add, Reg::R1, 1)
        .store(Size::DW, Reg::R0, 0, Reg::R1)
        .load(Size::DW, Reg::R2, Reg::R10, NS)
        .load(Size::DW, Reg::R1, Reg::R0, 8)
        .alu_reg(Alu::Add, Reg::R1, Reg::R2)
        .store(Size::DW, Reg::R0, 8, Reg::R1)
        .jmp_imm(Cond::Eq, Reg::R3, 0, set_min)
        .load(Size::DW, Reg::R1, Reg::R0, 16)
        .jmp_reg(Cond::Le, Reg::R1, Reg::R2, no_min)
        .bind(set_min)
        .store(Size::DW, Reg::R0, 16, Reg::R2)
        .bind(no_min)
        .load(Size::DW, Reg::R1, Reg::R0, 24)
        .jmp_reg(Cond::Ge, Reg::R1, Reg::R2, no_max)
        .store(Size::DW, Reg::R0, 24, Reg::R2)
        .bind(no_max)
        .load(Size::DW, Reg::R2, Reg::R10, FAULTS)
        .load(Size::DW, Reg::R1, Reg::R0, 32)
        .alu_reg(Alu::Add, Reg::R1, Reg::R2)
        .store(Size::DW, Reg::R0, 32, Reg::R1)
        .ja(done)
        .bind(new)
        .store_imm(Size::DW, Reg::R10, HV, 1)
        .load(Size::DW, Reg::R2, Reg::R10, NS)
        .store(Size::DW, Reg::R10, HV + 8, Reg::R2)
        .store(Size::DW, Reg::R10, HV + 16, Reg::R2)
        .store(Size::DW, Reg::R10, HV + 24, Reg::R2)
        .load(Size::DW, Reg::R2, Reg::R10, FAULTS)
        .store(Size::DW, Reg::R10, HV + 32, Reg::R2)
        // Another CPU may have made the key since the lookup (the update then fails with
        // EEXIST): the call is added to it.
        .update_elem(HIST, HK, HV, NOEXIST)
        .jmp_imm(Cond::Eq, Reg::R0, 0, created)
        .jmp_imm(Cond::Ne, Reg::R0, -EEXIST, full)
        .ld_map(Reg::R1, HIST);
    a.frame_ptr(Reg::R2, HK);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Ne, Reg::R0, 0, found)
        .bind(full);
    count(a, HIST_FULL);
    if copy {
        a.ja(done).bind(created);
        super::blocking::site_copy(a);
    }
    a.bind(done);
}

/// Counts an unpaired call (`marker`) against the image whose tgid and gen are at HK.
fn unpaired(a: &mut Asm, marker: u32) {
    a.store_imm(Size::W, Reg::R10, HK + K_NR, marker as i32)
        .store_imm(Size::W, Reg::R10, HK + K_SLICE, 0)
        .store_imm(Size::DW, Reg::R10, HK + K_BUCKET, 0)
        .store_imm(Size::DW, Reg::R10, HK + K_IP, 0)
        .store_imm(Size::DW, Reg::R10, HK + K_RET, 0)
        .store_imm(Size::DW, Reg::R10, HK + K_UP, 0)
        .store_imm(Size::DW, Reg::R10, NS, 0)
        .store_imm(Size::DW, Reg::R10, FAULTS, 0);
    hist_add(a, false);
}

/// `sys_enter` (a raw tracepoint: R1 points to its arguments, the user registers and the
/// system-call number): the start of a call of a followed, armed process, written into the
/// thread's value. A thread without a value looks its process up in PIDS and, if it is
/// followed and armed, gets one: the process is looked up once per thread, not per call.
/// With `blocking`, the thread also gets its entry for the sleep programs
/// ([`super::blocking::new_thread`]).
pub(super) fn enter_program(blocking: bool) -> Code {
    let mut a = Asm::new();
    let (out, have, made, fill, no_regs) = (a.label(), a.label(), a.label(), a.label(), a.label());
    a.mov(Reg::R6, Reg::R1);
    a.current_task_value(TASK, 0);
    a.jmp_imm(Cond::Ne, Reg::R0, 0, have);
    followed(&mut a, out);
    a.current_task_value(TASK, Asm::STORAGE_CREATE);
    a.jmp_imm(Cond::Ne, Reg::R0, 0, made);
    count(&mut a, ENTERS);
    count(&mut a, START_FULL);
    a.ja(out)
        .bind(made)
        .mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::Rsh, Reg::R1, 32)
        .store(Size::W, Reg::R0, S_TGID, Reg::R1)
        .store(Size::W, Reg::R0, S_IMG, Reg::R8);
    if blocking {
        a.mov(Reg::R9, Reg::R0);
        super::blocking::new_thread(&mut a);
        a.mov(Reg::R0, Reg::R9);
    }
    a.bind(have).mov(Reg::R9, Reg::R0);
    count(&mut a, ENTERS);
    // A call still open never returned (a restarted or abandoned call): counted against its
    // image first.
    a.load(Size::DW, Reg::R1, Reg::R9, S_T0)
        .jmp_imm(Cond::Eq, Reg::R1, 0, fill)
        .load(Size::W, Reg::R1, Reg::R9, S_TGID)
        .store(Size::W, Reg::R10, HK + K_TGID, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R9, S_GEN)
        .store(Size::W, Reg::R10, HK + K_GEN, Reg::R1);
    unpaired(&mut a, UNPAIRED_ENTER);
    a.bind(fill)
        .call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R9, S_T0, Reg::R0)
        .load(Size::DW, Reg::R1, Reg::R6, ARG_1)
        .store(Size::W, Reg::R9, S_NR, Reg::R1)
        .store_imm(Size::DW, Reg::R9, S_IP, 0)
        .store_imm(Size::DW, Reg::R9, S_RET, 0)
        .store_imm(Size::DW, Reg::R9, S_UP, 0)
        // The user registers (the tracepoint's first argument): pc, stack and frame pointers.
        .load(Size::DW, Reg::R3, Reg::R6, ARG_0)
        .jmp_imm(Cond::Eq, Reg::R3, 0, no_regs);
    a.frame_ptr(Reg::R1, REGS);
    a.mov_imm(Reg::R2, PT_REGS_TO_SP)
        .call(Helper::ProbeReadKernel)
        .jmp_imm(Cond::Ne, Reg::R0, 0, no_regs)
        .load(Size::DW, Reg::R1, Reg::R10, REGS + PT_REGS_IP)
        .store(Size::DW, Reg::R9, S_IP, Reg::R1)
        // The word at the stack pointer: the return address into a frameless wrapper's
        // caller.
        .load(Size::DW, Reg::R3, Reg::R10, REGS + PT_REGS_SP)
        .mov(Reg::R1, Reg::R9)
        .alu_imm(Alu::Add, Reg::R1, i32::from(S_RET))
        .mov_imm(Reg::R2, 8)
        .call(Helper::ProbeReadUser)
        // The return address of the frame `rbp` points to: the caller's caller, when the
        // caller keeps a frame pointer. Code without frame pointers leaves any value in
        // `rbp`, and a read that faults costs ~500 ns here (the fault handler runs): only an
        // aligned address in the stack, at most FRAME_SPAN above `sp`, is read.
        .load(Size::DW, Reg::R3, Reg::R10, REGS + PT_REGS_BP)
        .load(Size::DW, Reg::R2, Reg::R10, REGS + PT_REGS_SP)
        .jmp_reg(Cond::Lt, Reg::R3, Reg::R2, no_regs)
        .mov(Reg::R1, Reg::R3)
        .alu_reg(Alu::Sub, Reg::R1, Reg::R2)
        .jmp_imm(Cond::Gt, Reg::R1, FRAME_SPAN, no_regs)
        .jmp_imm(Cond::Set, Reg::R3, 7, no_regs)
        .alu_imm(Alu::Add, Reg::R3, 8)
        .mov(Reg::R1, Reg::R9)
        .alu_imm(Alu::Add, Reg::R1, i32::from(S_UP))
        .mov_imm(Reg::R2, 8)
        .call(Helper::ProbeReadUser)
        .bind(no_regs)
        // Faults taken by the reads above are not the call's.
        .store_imm(Size::DW, Reg::R9, S_FAULTS, 0)
        .load(Size::W, Reg::R1, Reg::R9, S_IMG)
        .store(Size::W, Reg::R9, S_GEN, Reg::R1)
        .bind(out)
        .mov_imm(Reg::R0, 0)
        .exit();
    a.finish()
}

/// `R9 = bucket of the latency at NS`, by [`latency::Resolution::bucket`]'s rule: the octave from
/// the highest bit, then, for r > 1, a binary search of the octave's r lower bounds (the
/// BOUNDS array, filled from [`latency::Resolution::lower_bound`]) in a fixed number of steps.
fn bucket(a: &mut Asm, r: u32) {
    a.load(Size::DW, Reg::R1, Reg::R10, NS)
        .log2(Reg::R1, Reg::R3, Reg::R9);
    if r <= 1 {
        return;
    }
    a.alu_imm(Alu::Mul, Reg::R9, r as i32).mov_imm(Reg::R8, 0);
    let mut n = r;
    while n > 1 {
        let half = n / 2;
        let no = a.label();
        a.mov(Reg::R1, Reg::R9)
            .alu_reg(Alu::Add, Reg::R1, Reg::R8)
            .alu_imm(Alu::Add, Reg::R1, half as i32)
            .store(Size::W, Reg::R10, BKEY, Reg::R1)
            .ld_map(Reg::R1, BOUNDS);
        a.frame_ptr(Reg::R2, BKEY);
        a.call(Helper::MapLookupElem)
            .jmp_imm(Cond::Eq, Reg::R0, 0, no)
            .load(Size::DW, Reg::R1, Reg::R0, 0)
            .load(Size::DW, Reg::R2, Reg::R10, NS)
            .jmp_reg(Cond::Gt, Reg::R1, Reg::R2, no)
            .alu_imm(Alu::Add, Reg::R8, half as i32)
            .bind(no);
        n -= half;
    }
    a.alu_reg(Alu::Add, Reg::R9, Reg::R8);
}

/// `sys_exit` (a raw tracepoint): the latency of the call into the histogram. A thread's calls
/// are sequential and both programs see every hit, so an open call in the thread's value is
/// this call's; an exit without one (a call entered before the programs were attached, or
/// one seccomp skipped, which passes `sys_exit` only) is counted as unpaired, against the
/// thread's image, or the process's for a thread of a followed process without a value.
pub(super) fn exit_program(shape: &Shape) -> Code {
    let mut a = Asm::new();
    let (out, slow, closed, sliced, no_start) =
        (a.label(), a.label(), a.label(), a.label(), a.label());
    // Kept for the copy of a new entry's call site.
    a.store(Size::DW, Reg::R10, CTX, Reg::R1);
    a.current_task_value(TASK, 0);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, slow).mov(Reg::R6, Reg::R0);
    count(&mut a, EXITS);
    a.call(Helper::KtimeGetNs)
        .mov(Reg::R9, Reg::R0)
        .load(Size::DW, Reg::R1, Reg::R6, S_T0)
        .jmp_imm(Cond::Eq, Reg::R1, 0, closed)
        .mov(Reg::R2, Reg::R9)
        .alu_reg(Alu::Sub, Reg::R2, Reg::R1)
        .store(Size::DW, Reg::R10, NS, Reg::R2)
        // The call is closed (t0 = 0) in place: the thread's next call reuses the value.
        .store_imm(Size::DW, Reg::R6, S_T0, 0)
        .load(Size::W, Reg::R1, Reg::R6, S_TGID)
        .store(Size::W, Reg::R10, HK + K_TGID, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R6, S_GEN)
        .store(Size::W, Reg::R10, HK + K_GEN, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R6, S_NR)
        .store(Size::W, Reg::R10, HK + K_NR, Reg::R1)
        .load(Size::DW, Reg::R1, Reg::R6, S_IP)
        .store(Size::DW, Reg::R10, HK + K_IP, Reg::R1)
        .load(Size::DW, Reg::R1, Reg::R6, S_RET)
        .store(Size::DW, Reg::R10, HK + K_RET, Reg::R1)
        .load(Size::DW, Reg::R1, Reg::R6, S_UP)
        .store(Size::DW, Reg::R10, HK + K_UP, Reg::R1)
        .load(Size::DW, Reg::R1, Reg::R6, S_FAULTS)
        .store(Size::DW, Reg::R10, FAULTS, Reg::R1)
        .store_imm(Size::W, Reg::R10, HK + K_SLICE, 0);
    if let Some((start, len)) = shape.slices {
        a.ld_imm64(Reg::R1, start)
            .jmp_reg(Cond::Lt, Reg::R9, Reg::R1, sliced)
            .mov(Reg::R2, Reg::R9)
            .alu_reg(Alu::Sub, Reg::R2, Reg::R1)
            .ld_imm64(Reg::R1, len.max(1))
            .alu_reg(Alu::Div, Reg::R2, Reg::R1)
            .store(Size::W, Reg::R10, HK + K_SLICE, Reg::R2);
    }
    a.bind(sliced);
    bucket(&mut a, shape.resolution);
    a.store_imm(Size::DW, Reg::R10, HK + K_BUCKET, 0).store(
        Size::W,
        Reg::R10,
        HK + K_BUCKET,
        Reg::R9,
    );
    hist_add(&mut a, true);
    a.ja(out)
        .bind(closed)
        .load(Size::W, Reg::R1, Reg::R6, S_TGID)
        .store(Size::W, Reg::R10, HK + K_TGID, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R6, S_IMG)
        .store(Size::W, Reg::R10, HK + K_GEN, Reg::R1)
        .ja(no_start)
        .bind(slow);
    followed(&mut a, out);
    count(&mut a, EXITS);
    a.mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::Rsh, Reg::R1, 32)
        .store(Size::W, Reg::R10, HK + K_TGID, Reg::R1)
        .store(Size::W, Reg::R10, HK + K_GEN, Reg::R8)
        .bind(no_start);
    unpaired(&mut a, UNPAIRED_EXIT);
    a.bind(out).mov_imm(Reg::R0, 0).exit();
    a.finish()
}

/// A page fault (the software event the ring path counts, with period 1, on the followed
/// tasks): one more fault for the call the thread is in. Returns 0: the event writes no
/// sample (it has no ring).
pub(super) fn fault_program() -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.current_task_value(TASK, 0);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .load(Size::DW, Reg::R1, Reg::R0, S_FAULTS)
        .alu_imm(Alu::Add, Reg::R1, 1)
        .store(Size::DW, Reg::R0, S_FAULTS, Reg::R1)
        .bind(out)
        .mov_imm(Reg::R0, 0)
        .exit();
    a.finish()
}

/// `sched:sched_process_exec`: a followed process runs its next image, and is armed. The
/// thread that ran the exec (the process's only one now) has its image set in its value, if
/// it has one: the calls it begins from now are the new image's.
pub(super) fn exec_program() -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.call(Helper::GetCurrentPidTgid)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .store(Size::W, Reg::R10, KEY32, Reg::R0)
        .ld_map(Reg::R1, PIDS);
    a.frame_ptr(Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .store_imm(Size::W, Reg::R0, 0, 1)
        .load(Size::W, Reg::R6, Reg::R0, 4)
        .alu_imm(Alu::Add, Reg::R6, 1)
        .store(Size::W, Reg::R0, 4, Reg::R6);
    a.current_task_value(TASK, 0);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .store(Size::W, Reg::R0, S_IMG, Reg::R6)
        .bind(out)
        .mov_imm(Reg::R0, 1)
        .exit();
    a.finish()
}

/// `sched:sched_process_fork`: the child of a followed process is followed, armed as its
/// parent, at its first image.
pub(super) fn fork_program(off: &Offsets) -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.mov(Reg::R6, Reg::R1)
        .call(Helper::GetCurrentPidTgid)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .store(Size::W, Reg::R10, KEY32, Reg::R0)
        .ld_map(Reg::R1, PIDS);
    a.frame_ptr(Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .load(Size::W, Reg::R1, Reg::R0, 0)
        .store(Size::W, Reg::R10, REGS, Reg::R1)
        .store_imm(Size::W, Reg::R10, REGS + 4, 0)
        .load(Size::W, Reg::R1, Reg::R6, off.child_pid)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .update_elem(PIDS, KEY32, REGS, 0)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out);
    count(&mut a, PIDS_FULL);
    a.bind(out).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

/// `sched:sched_process_exit` (run by the exiting task): a task is gone. A call it was in
/// never returns: it is closed in the thread's value, then put in GONE under (tid, t0) for
/// user space, which puts the open calls of the threads still alive at the end there too
/// ([`super::SyscallLatency::finish`]): a call both saw is one key, counted once. If GONE is
/// full the call is counted here. The task's pid (which anyone may reuse) is forgotten, and
/// with `blocking` its entry for the sleep programs.
pub(super) fn exit_task_program(off: &Offsets, blocking: bool) -> Code {
    let mut a = Asm::new();
    let forget = a.label();
    a.load(Size::W, Reg::R1, Reg::R1, off.exit_pid)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .store(Size::W, Reg::R10, GK, Reg::R1)
        .store_imm(Size::W, Reg::R10, GK + 4, 0);
    a.current_task_value(TASK, 0);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, forget)
        .load(Size::DW, Reg::R1, Reg::R0, S_T0)
        .jmp_imm(Cond::Eq, Reg::R1, 0, forget)
        // Closed first: user space, at the end, finds it closed or finds the same key.
        .store_imm(Size::DW, Reg::R0, S_T0, 0)
        .store(Size::DW, Reg::R10, GK + 8, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R0, S_TGID)
        .store(Size::W, Reg::R10, GV, Reg::R1)
        .store(Size::W, Reg::R10, HK + K_TGID, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R0, S_GEN)
        .store(Size::W, Reg::R10, GV + 4, Reg::R1)
        .store(Size::W, Reg::R10, HK + K_GEN, Reg::R1)
        .update_elem(GONE, GK, GV, 0)
        .jmp_imm(Cond::Eq, Reg::R0, 0, forget);
    unpaired(&mut a, UNPAIRED_ENTER);
    a.bind(forget);
    if blocking {
        super::blocking::forget_thread(&mut a);
    }
    a.ld_map(Reg::R1, PIDS);
    a.frame_ptr(Reg::R2, KEY32);
    a.call(Helper::MapDeleteElem).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFF: Offsets = Offsets {
        child_pid: 20,
        exit_pid: 24,
    };

    #[test]
    fn the_programs_are_the_same_bytes_on_every_build() {
        let shape = Shape {
            resolution: 1,
            slices: None,
        };
        let sliced = Shape {
            resolution: 4,
            slices: Some((1_000, 1_000_000_000)),
        };
        let got = [
            enter_program(false).digest(),
            exit_program(&shape).digest(),
            exit_program(&sliced).digest(),
            fault_program().digest(),
            exec_program().digest(),
            fork_program(&OFF).digest(),
            exit_task_program(&OFF, false).digest(),
        ];
        let want = [
            "178 insns 389eda26f7cbd90f",
            "313 insns 07a79b6a5893307b",
            "353 insns 5fe254bbb7618d72",
            "13 insns e17f8241e419baf0",
            "24 insns c2760f54bc8c01a3",
            "36 insns b5013a1976f38f8c",
            "105 insns a5243e2274852148",
        ];
        assert_eq!(got, want.map(String::from), "{got:#?}");
    }

    #[test]
    fn field_offsets_are_written_into_the_instructions() {
        let moved = Offsets {
            child_pid: 16,
            ..OFF
        };
        let a = fork_program(&OFF);
        let b = fork_program(&moved);
        let diff: Vec<usize> = (0..a.insns.len())
            .filter(|&i| a.insns[i] != b.insns[i])
            .collect();
        assert_eq!(diff.len(), 1);
        assert_eq!(b.insns[diff[0]].off, 16);
    }
}
