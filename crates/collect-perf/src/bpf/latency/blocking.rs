//! `--blocking` counted in the kernel: where each system call slept, for how long, and who
//! woke it (DeBox), summed per (operation, sleep site, waker) by two programs, so no record
//! crosses to user space and none can be lost (the ring path's entry records, each with a
//! stack copy, outran the reader on system-call storms).
//!
//! A thread of a followed process gets an entry in THREADS (keyed by thread id) with its
//! task-storage value ([`super::programs::enter_program`]): a context switch and a wake-up
//! name the task they concern by its pid, where only the running task's value can be
//! reached. Both programs are perf tracepoint programs (not raw ones): `bpf_get_stackid`
//! then walks the same registers a perf sample of the tracepoint would, so the sleep sites
//! and wakers have the ring path's frames.
//!
//! - `sched_switch` (run by the task leaving the CPU): if it is in a call, its entry notes
//!   the time, the call's operation (copied from its value), and the kernel stack (an id in
//!   the STACKS map) if the switch is voluntary (blocked), else that it was preempted
//!   (runnable). For the task coming in, if its entry notes a switch-out, the time off the
//!   CPU is added to SLEEPS under (operation, sleep stack, waker): the last wake-up since the
//!   thread last ran in this call, or none.
//! - `sched_waking` (every task's wake-ups): a followed thread's entry notes the time, the
//!   waker's process (0 in the idle task: an interrupt) and its kernel stack.
//!
//! The time is added at the switch-in, to the operation of the call it happened in: a call
//! that never returns (its thread exited, or the run ended) has its sleeps in its operation,
//! where the ring path drops them with the call; those of an operation no call of which
//! returned are left out, with a note ([`super::SyscallLatency`]'s end).
//!
//! Checksums: switch-outs in a call (OUTS) each end at a switch-in (INS), are still off at
//! the end (the entries read then), or find at the thread's next switch-out that their
//! switch back in was not seen (INS_UNSEEN: ~1 in 5,000 switch-outs of a pipe ping-pong,
//! `perf bench sched pipe`, across the two CPUs here, none with both processes on one CPU,
//! and no recursion miss counted: why the program does not see that switch-in is not known;
//! such a time off the CPU is not counted, and said); sleeps SLEEPS had no room for, stacks STACKS had no room
//! for, and threads THREADS had no room for are counted, never silently missing.

use crate::bpf::insn::{Alu, Asm, Code, Cond, Helper, MapSlot, Reg, Size};
use crate::tracepoint::EventFormat;
use crate::{Error, Result};

use super::layout::{
    ARG_0, CTX, HK, K_GEN as H_GEN, K_IP as H_IP, K_RET as H_RET, K_TGID as H_TGID, K_UP as H_UP,
    KEY32, PT_REGS_BP, PT_REGS_IP, PT_REGS_SP, PT_REGS_TO_SP, REGS, S_GEN, S_IP, S_NR, S_RET, S_T0,
    S_TGID, S_UP, TASK, count, field,
};

/// The call sites' registers and stacks, one per histogram entry made ([`site_copy`]); with
/// or without blocking.
pub(in crate::bpf) const SITE_RING: MapSlot = MapSlot(6);
/// Each followed thread's entry: its switch-out, its last wake-up (keyed by thread id).
pub(in crate::bpf) const THREADS: MapSlot = MapSlot(7);
/// (operation, sleep stack, waker) → (count, ns): per CPU.
pub(in crate::bpf) const SLEEPS: MapSlot = MapSlot(8);
/// Kernel stacks of sleeps and wakers (`bpf_get_stackid`).
pub(in crate::bpf) const STACKS: MapSlot = MapSlot(9);

// Counters (beside programs.rs's).
pub(in crate::bpf) const OUTS: i32 = 5;
pub(in crate::bpf) const INS: i32 = 6;
pub(in crate::bpf) const SLEEPS_FULL: i32 = 7;
pub(in crate::bpf) const THREADS_FULL: i32 = 8;
pub(in crate::bpf) const STACKS_FULL: i32 = 9;
pub(in crate::bpf) const COPIES: i32 = 10;
pub(in crate::bpf) const COPIES_LOST: i32 = 11;
/// Switch-outs in a call that found the previous one not ended: the thread's switch back in
/// was not seen.
pub(in crate::bpf) const INS_UNSEEN: i32 = 12;
pub(in crate::bpf) const N_COUNTS: u32 = 13;

/// A stack id for a preempted switch (runnable, no sleep site); ids are below the map's size.
pub(in crate::bpf) const RUNNABLE: i32 = 0x7fff_fffe;
/// A stack id for a stack STACKS had no room for.
pub(in crate::bpf) const NO_STACK: i32 = 0x7fff_ffff;
/// The waker pid of a sleep whose wake-up was not seen (pids are at most 2^22).
pub(in crate::bpf) const NO_WAKER: i32 = 0x7fff_ffff;

// A thread's entry: the operation of the call it switched out in (tgid, gen, nr, stack id
// of the sleep or RUNNABLE, ip, ret, up), the switch-out time (0: on a CPU, or off outside a
// call), the time after which a wake-up is this sleep's (the call's start or the thread's
// last switch-in), its last switch-in, and its last wake-up (time, waker pid, waker stack).
pub(in crate::bpf) const T_TGID: i16 = 0;
pub(in crate::bpf) const T_GEN: i16 = 4;
pub(in crate::bpf) const T_NR: i16 = 8;
pub(in crate::bpf) const T_STACK: i16 = 12;
pub(in crate::bpf) const T_IP: i16 = 16;
pub(in crate::bpf) const T_RET: i16 = 24;
pub(in crate::bpf) const T_UP: i16 = 32;
pub(in crate::bpf) const T_OFF: i16 = 40;
pub(in crate::bpf) const T_SINCE: i16 = 48;
pub(in crate::bpf) const T_IN: i16 = 56;
pub(in crate::bpf) const T_W_TIME: i16 = 64;
pub(in crate::bpf) const T_W_PID: i16 = 72;
pub(in crate::bpf) const T_W_STACK: i16 = 76;
pub(in crate::bpf) const THREAD_VALUE: u32 = 80;

// A sleep's key: tgid, gen, nr, sleep stack, waker pid, waker stack, ip, ret, up; its value:
// count, ns.
pub(in crate::bpf) const K_TGID: i16 = 0;
pub(in crate::bpf) const K_GEN: i16 = 4;
pub(in crate::bpf) const K_NR: i16 = 8;
pub(in crate::bpf) const K_STACK: i16 = 12;
pub(in crate::bpf) const K_W_PID: i16 = 16;
pub(in crate::bpf) const K_W_STACK: i16 = 20;
pub(in crate::bpf) const K_IP: i16 = 24;
pub(in crate::bpf) const K_RET: i16 = 32;
pub(in crate::bpf) const K_UP: i16 = 40;
pub(in crate::bpf) const SLEEP_KEY: u32 = 48;
pub(in crate::bpf) const SLEEP_VALUE: u32 = 16;

// A call site's record: its histogram key's image and three words (tgid, gen, ip, ret, up),
// the time, the user registers (ip, sp, bp), the bytes of stack copied, then the copy.
pub(in crate::bpf) const C_TGID: usize = 0;
pub(in crate::bpf) const C_GEN: usize = 4;
pub(in crate::bpf) const C_WORDS: usize = 8;
pub(in crate::bpf) const C_TIME: usize = 32;
pub(in crate::bpf) const C_REGS: usize = 40;
pub(in crate::bpf) const C_LEN: usize = 64;
pub(in crate::bpf) const C_STACK: usize = 72;
/// Bytes of user stack copied, as the ring path's default (`LatencyOptions::stack_bytes`);
/// 256 when the stack's top is nearer than that.
pub(in crate::bpf) const STACK_COPY: i32 = 1024;
const SHORT_COPY: i32 = 256;

/// `BPF_NOEXIST`.
const NOEXIST: i32 = 1;
/// The error of an update with NOEXIST of a key that exists.
const EEXIST: i32 = 17;

// The programs' stack frames (offsets from R10), below programs.rs's KEY32.
const SK: i16 = -56;
const SV: i16 = -72;
const NS: i16 = -80;
/// Where the enter program builds a new thread's zeroed entry: below everything
/// programs.rs's enter program keeps on its stack.
pub(in crate::bpf) const TV: i16 = -432;

/// Where the programs read `sched_switch`'s and `sched_waking`'s fields, from tracefs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::bpf) struct SwitchOffsets {
    pub prev_pid: i16,
    pub prev_state: i16,
    pub next_pid: i16,
    /// `prev_state` of a preempted task (`TASK_REPORT_MAX`), if the print format says.
    pub preempted: Option<i32>,
    /// `sched_waking.pid`.
    pub woken_pid: i16,
}

impl SwitchOffsets {
    pub(in crate::bpf) fn read(switch: &EventFormat, waking: &EventFormat) -> Result<Self> {
        let preempted = crate::syscalls::preempt_marker(&switch.print_fmt)
            .map(|m| {
                i32::try_from(m).map_err(|_| Error::Tracing {
                    what: format!("sched_switch's preemption marker {m:#x} is not a 31-bit value"),
                    source: None,
                })
            })
            .transpose()?;
        Ok(SwitchOffsets {
            prev_pid: field(switch, "prev_pid", 4)?,
            prev_state: field(switch, "prev_state", 8)?,
            next_pid: field(switch, "next_pid", 4)?,
            preempted,
            woken_pid: field(waking, "pid", 4)?,
        })
    }
}

/// Part of the enter program, where a thread's value is made: its zeroed THREADS entry
/// (a full map is counted: that thread's sleeps are then not seen). `R7` holds pid_tgid;
/// R0 to R5 are clobbered.
pub(super) fn new_thread(a: &mut Asm) {
    let done = a.label();
    for off in (0..THREAD_VALUE as i16).step_by(8) {
        a.store_imm(Size::DW, Reg::R10, TV + off, 0);
    }
    a.store(Size::W, Reg::R10, KEY32, Reg::R7)
        .update_elem(THREADS, KEY32, TV, 0)
        .jmp_imm(Cond::Eq, Reg::R0, 0, done);
    count(a, THREADS_FULL);
    a.bind(done);
}

/// Part of the exit program (with or without blocking), where a call makes a new histogram
/// entry (its key at HK, the program's context at CTX): the call's user registers and 1 KiB
/// of its user stack go to SITE_RING, for user space to unwind the call site from
/// `.eh_frame` as the ring path does (the three words the programs read are the entry's key:
/// exact for a leaf wrapper called from code with frame pointers, not behind a wrapper that
/// keeps a frame). Once per entry, so a system-call storm sends a few records, not one a
/// call. A full ring is counted. Clobbers R0 to R5, R7.
pub(super) fn site_copy(a: &mut Asm) {
    let (skip, sent, copied) = (a.label(), a.label(), a.label());
    a.load(Size::DW, Reg::R1, Reg::R10, CTX)
        .load(Size::DW, Reg::R3, Reg::R1, ARG_0)
        .jmp_imm(Cond::Eq, Reg::R3, 0, skip);
    a.frame_ptr(Reg::R1, REGS);
    a.mov_imm(Reg::R2, PT_REGS_TO_SP)
        .call(Helper::ProbeReadKernel)
        .jmp_imm(Cond::Ne, Reg::R0, 0, skip)
        .ld_map(Reg::R1, SITE_RING)
        .mov_imm(Reg::R2, C_STACK as i32 + STACK_COPY)
        .mov_imm(Reg::R3, 0)
        .call(Helper::RingbufReserve)
        .jmp_imm(Cond::Ne, Reg::R0, 0, sent);
    count(a, COPIES_LOST);
    a.ja(skip).bind(sent).mov(Reg::R7, Reg::R0);
    a.copy_fields(
        Reg::R1,
        Reg::R10,
        Reg::R7,
        &[
            (HK + H_TGID, C_TGID as i16, Size::W),
            (HK + H_GEN, C_GEN as i16, Size::W),
            (HK + H_IP, C_WORDS as i16, Size::DW),
            (HK + H_RET, C_WORDS as i16 + 8, Size::DW),
            (HK + H_UP, C_WORDS as i16 + 16, Size::DW),
            (REGS + PT_REGS_IP, C_REGS as i16, Size::DW),
            (REGS + PT_REGS_SP, C_REGS as i16 + 8, Size::DW),
            (REGS + PT_REGS_BP, C_REGS as i16 + 16, Size::DW),
        ],
    );
    a.call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R7, C_TIME as i16, Reg::R0)
        .mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::Add, Reg::R1, C_STACK as i32)
        .mov_imm(Reg::R2, STACK_COPY)
        .load(Size::DW, Reg::R3, Reg::R10, REGS + PT_REGS_SP)
        .call(Helper::ProbeReadUser)
        .mov_imm(Reg::R1, STACK_COPY)
        .jmp_imm(Cond::Eq, Reg::R0, 0, copied)
        // The stack's top is nearer: a shorter copy, or none.
        .mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::Add, Reg::R1, C_STACK as i32)
        .mov_imm(Reg::R2, SHORT_COPY)
        .load(Size::DW, Reg::R3, Reg::R10, REGS + PT_REGS_SP)
        .call(Helper::ProbeReadUser)
        .mov_imm(Reg::R1, SHORT_COPY)
        .jmp_imm(Cond::Eq, Reg::R0, 0, copied)
        .mov_imm(Reg::R1, 0)
        .bind(copied)
        .store(Size::W, Reg::R7, C_LEN as i16, Reg::R1)
        .mov(Reg::R1, Reg::R7)
        .mov_imm(Reg::R2, 0)
        .call(Helper::RingbufSubmit);
    count(a, COPIES);
    a.bind(skip);
}

/// Part of the exit-task program: the thread's entry goes (its key is at KEY32).
pub(super) fn forget_thread(a: &mut Asm) {
    a.ld_map(Reg::R1, THREADS);
    a.frame_ptr(Reg::R2, KEY32);
    a.call(Helper::MapDeleteElem);
}

/// `R0 = the stack id of the tracepoint's kernel stack` (the context in R6), or NO_STACK
/// when STACKS has no room for it (counted).
fn stack_id(a: &mut Asm) {
    let kept = a.label();
    a.mov(Reg::R1, Reg::R6)
        .ld_map(Reg::R2, STACKS)
        .mov_imm(Reg::R3, 0)
        .call(Helper::GetStackid)
        .jmp_imm(Cond::SGe, Reg::R0, 0, kept);
    count(a, STACKS_FULL);
    a.mov_imm(Reg::R0, NO_STACK).bind(kept);
}

/// `sched:sched_switch`, run by the task leaving the CPU: its switch-out if it is in a call,
/// then the incoming task's switch-in if it was off in one. Returns 1 (no one's perf events
/// lose the hit).
pub(super) fn switch_program(off: &SwitchOffsets) -> Code {
    let mut a = Asm::new();
    let (incoming, runnable, out, fresh) = (a.label(), a.label(), a.label(), a.label());
    let (later, no_waker, add, full, found, done) = (
        a.label(),
        a.label(),
        a.label(),
        a.label(),
        a.label(),
        a.label(),
    );
    a.mov(Reg::R6, Reg::R1);
    // The outgoing task: in a call of a followed thread?
    a.current_task_value(TASK, 0);
    a.jmp_imm(Cond::Eq, Reg::R0, 0, incoming)
        .mov(Reg::R7, Reg::R0)
        .load(Size::DW, Reg::R1, Reg::R7, S_T0)
        .jmp_imm(Cond::Eq, Reg::R1, 0, incoming)
        .load(Size::W, Reg::R1, Reg::R6, off.prev_pid)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .ld_map(Reg::R1, THREADS);
    a.frame_ptr(Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, incoming)
        .mov(Reg::R8, Reg::R0);
    count(&mut a, OUTS);
    // The previous switch-out not ended: the program did not see the switch back in.
    a.load(Size::DW, Reg::R1, Reg::R8, T_OFF)
        .jmp_imm(Cond::Eq, Reg::R1, 0, fresh);
    count(&mut a, INS_UNSEEN);
    a.bind(fresh)
        .call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R8, T_OFF, Reg::R0)
        // A wake-up is this sleep's if it came after the call began and after the thread
        // last got the CPU (an earlier one ended an earlier sleep, or came while it ran).
        .load(Size::DW, Reg::R1, Reg::R7, S_T0)
        .load(Size::DW, Reg::R2, Reg::R8, T_IN)
        .jmp_reg(Cond::Le, Reg::R2, Reg::R1, later)
        .mov(Reg::R1, Reg::R2)
        .bind(later)
        .store(Size::DW, Reg::R8, T_SINCE, Reg::R1);
    a.copy_fields(
        Reg::R1,
        Reg::R7,
        Reg::R8,
        &[
            (S_TGID, T_TGID, Size::W),
            (S_GEN, T_GEN, Size::W),
            (S_NR, T_NR, Size::W),
            (S_IP, T_IP, Size::DW),
            (S_RET, T_RET, Size::DW),
            (S_UP, T_UP, Size::DW),
        ],
    );
    // Voluntary (blocked: a sleep site) unless still running or preempted.
    a.load(Size::DW, Reg::R1, Reg::R6, off.prev_state)
        .jmp_imm(Cond::Eq, Reg::R1, 0, runnable);
    if let Some(m) = off.preempted {
        a.jmp_imm(Cond::Eq, Reg::R1, m, runnable);
    }
    stack_id(&mut a);
    a.store(Size::W, Reg::R8, T_STACK, Reg::R0)
        .ja(incoming)
        .bind(runnable)
        .store_imm(Size::W, Reg::R8, T_STACK, RUNNABLE)
        // The incoming task: off in a call since a switch-out noted in its entry?
        .bind(incoming)
        .load(Size::W, Reg::R1, Reg::R6, off.next_pid)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .ld_map(Reg::R1, THREADS);
    a.frame_ptr(Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .mov(Reg::R8, Reg::R0)
        .call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R8, T_IN, Reg::R0)
        .load(Size::DW, Reg::R1, Reg::R8, T_OFF)
        .jmp_imm(Cond::Eq, Reg::R1, 0, out)
        .store_imm(Size::DW, Reg::R8, T_OFF, 0)
        .alu_reg(Alu::Sub, Reg::R0, Reg::R1)
        .store(Size::DW, Reg::R10, NS, Reg::R0);
    a.copy_fields(
        Reg::R1,
        Reg::R8,
        Reg::R10,
        &[
            (T_TGID, SK + K_TGID, Size::W),
            (T_GEN, SK + K_GEN, Size::W),
            (T_NR, SK + K_NR, Size::W),
            (T_STACK, SK + K_STACK, Size::W),
            (T_IP, SK + K_IP, Size::DW),
            (T_RET, SK + K_RET, Size::DW),
            (T_UP, SK + K_UP, Size::DW),
        ],
    );
    // The waker: the last wake-up since the switch-out's `since`, for a sleep only.
    a.load(Size::W, Reg::R1, Reg::R8, T_STACK)
        .jmp_imm(Cond::Eq, Reg::R1, RUNNABLE, no_waker)
        .load(Size::DW, Reg::R1, Reg::R8, T_W_TIME)
        .load(Size::DW, Reg::R2, Reg::R8, T_SINCE)
        .jmp_reg(Cond::Lt, Reg::R1, Reg::R2, no_waker)
        .load(Size::W, Reg::R1, Reg::R8, T_W_PID)
        .store(Size::W, Reg::R10, SK + K_W_PID, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R8, T_W_STACK)
        .store(Size::W, Reg::R10, SK + K_W_STACK, Reg::R1)
        .ja(add)
        .bind(no_waker)
        .store_imm(Size::W, Reg::R10, SK + K_W_PID, NO_WAKER)
        .store_imm(Size::W, Reg::R10, SK + K_W_STACK, NO_STACK)
        .bind(add);
    count(&mut a, INS);
    // SLEEPS[key] += (1, ns); a key another CPU made meanwhile is added to.
    a.ld_map(Reg::R1, SLEEPS);
    a.frame_ptr(Reg::R2, SK);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Ne, Reg::R0, 0, found)
        .store_imm(Size::DW, Reg::R10, SV, 1)
        .load(Size::DW, Reg::R1, Reg::R10, NS)
        .store(Size::DW, Reg::R10, SV + 8, Reg::R1)
        .update_elem(SLEEPS, SK, SV, NOEXIST)
        .jmp_imm(Cond::Eq, Reg::R0, 0, done)
        .jmp_imm(Cond::Ne, Reg::R0, -EEXIST, full)
        .ld_map(Reg::R1, SLEEPS);
    a.frame_ptr(Reg::R2, SK);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, full)
        .bind(found)
        .load(Size::DW, Reg::R1, Reg::R0, 0)
        .alu_imm(Alu::Add, Reg::R1, 1)
        .store(Size::DW, Reg::R0, 0, Reg::R1)
        .load(Size::DW, Reg::R1, Reg::R0, 8)
        .load(Size::DW, Reg::R2, Reg::R10, NS)
        .alu_reg(Alu::Add, Reg::R1, Reg::R2)
        .store(Size::DW, Reg::R0, 8, Reg::R1)
        .ja(done)
        .bind(full);
    count(&mut a, SLEEPS_FULL);
    a.bind(done).bind(out).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

/// `sched:sched_waking` (every task's wake-ups): a followed thread's entry notes its last
/// wake-up, with the waker's process (0 in the idle task) and kernel stack. Returns 1.
pub(super) fn waking_program(off: &SwitchOffsets) -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.mov(Reg::R6, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R6, off.woken_pid)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .ld_map(Reg::R1, THREADS);
    a.frame_ptr(Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .mov(Reg::R7, Reg::R0);
    stack_id(&mut a);
    a.store(Size::W, Reg::R7, T_W_STACK, Reg::R0)
        .call(Helper::GetCurrentPidTgid)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .store(Size::W, Reg::R7, T_W_PID, Reg::R0)
        // The time last: the switch-in takes the waker by it.
        .call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R7, T_W_TIME, Reg::R0)
        .bind(out)
        .mov_imm(Reg::R0, 1)
        .exit();
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::super::layout::Offsets;
    use super::super::programs::{enter_program, exit_task_program};
    use super::*;

    fn offsets() -> SwitchOffsets {
        let switch =
            EventFormat::parse("sched", crate::tracepoint::tests::SCHED_SWITCH).expect("parses");
        // sched_waking's `pid` is where sched_switch's `prev_pid` is on Linux 6.18 (after
        // the 16-byte comm): the test reads it from the same text.
        let mut waking = switch.clone();
        waking.name = "sched:sched_waking".into();
        for f in &mut waking.fields {
            if f.name == "prev_pid" {
                f.name = "pid".into();
            }
        }
        SwitchOffsets::read(&switch, &waking).expect("fields")
    }

    #[test]
    fn the_switch_fields_and_the_preemption_marker_come_from_tracefs() {
        assert_eq!(
            offsets(),
            SwitchOffsets {
                prev_pid: 24,
                prev_state: 32,
                next_pid: 56,
                preempted: Some(0x100),
                woken_pid: 24,
            }
        );
    }

    #[test]
    fn the_programs_are_the_same_bytes_on_every_build() {
        let off = offsets();
        let task = Offsets {
            child_pid: 20,
            exit_pid: 24,
        };
        let got = [
            enter_program(true).digest(),
            exit_task_program(&task, true).digest(),
            switch_program(&off).digest(),
            waking_program(&off).digest(),
        ];
        let want = [
            "210 insns 2e74534f7eda6474",
            "110 insns b36645121ffe7856",
            "182 insns 70b30ca13eb5a42b",
            "35 insns 055e0352dea30bcd",
        ];
        assert_eq!(got, want.map(String::from), "{got:#?}");
    }

    #[test]
    fn a_site_record_gives_its_key_registers_and_stack() {
        let mut r = vec![0u8; C_STACK + 16];
        r[C_TGID..C_TGID + 4].copy_from_slice(&7u32.to_ne_bytes());
        r[C_GEN..C_GEN + 4].copy_from_slice(&1u32.to_ne_bytes());
        for (i, w) in [0x10u64, 0x20, 0x30].iter().enumerate() {
            r[C_WORDS + 8 * i..C_WORDS + 8 * i + 8].copy_from_slice(&w.to_ne_bytes());
        }
        r[C_TIME..C_TIME + 8].copy_from_slice(&99u64.to_ne_bytes());
        for (i, w) in [0x10u64, 0x7000, 0x7040].iter().enumerate() {
            r[C_REGS + 8 * i..C_REGS + 8 * i + 8].copy_from_slice(&w.to_ne_bytes());
        }
        // The header says 1024 bytes; the record holds 16: what is there is read.
        r[C_LEN..C_LEN + 4].copy_from_slice(&1024u32.to_ne_bytes());
        r[C_STACK] = 0xab;
        let ((tgid, generation, words), copy) = super::super::parse_copy(&r).expect("a record");
        assert_eq!((tgid, generation, words), (7, 1, [0x10, 0x20, 0x30]));
        assert_eq!(
            (copy.time, copy.regs.sp, copy.regs.bp),
            (99, 0x7000, 0x7040)
        );
        assert_eq!((copy.stack.len(), copy.stack[0]), (16, 0xab));
        assert!(super::super::parse_copy(&r[..C_STACK - 1]).is_none());
    }
}
