//! System-call latencies aggregated in the kernel (`pkgmon --latency`'s BPF path): OSprof's
//! log2 histograms per (process image, system call, user call site) counted by BPF programs,
//! so a call costs a few hundred nanoseconds and no record crosses to user space.
//!
//! Five short programs share six maps:
//! - `sched_process_exec` arms a followed process (the events of the ring path turn on at the
//!   launched command's exec too) and counts its execs (`gen`: which image runs);
//!   `sched_process_fork` follows the children of followed processes (inherit semantics);
//!   `sched_process_exit` forgets a task's pid.
//! - `raw_syscalls:sys_enter` keeps, per thread of an armed process, the entry time, the system
//!   call, its user call site and the image.
//! - the software page-fault event of the followed tasks (the event the ring path counts,
//!   so both paths count the same faults) counts the faults taken during a call.
//! - `raw_syscalls:sys_exit` computes the latency, its bucket at resolution r (the paper's
//!   formula, the same bounds as [`latency::Resolution`]), its time slice, and adds it to a
//!   per-CPU hash map read at drains ([`SyscallLatency::drain`]) and at the end.
//!
//! The call site is `bpf_get_stackid(BPF_F_USER_STACK)`: the kernel's frame-pointer walk from
//! the user registers, plus the word at the user stack pointer, which is the return address
//! into the caller when the system-call wrapper is a leaf without a frame (libc's are): the
//! frame-pointer walk alone skips that caller, as the wrapper never sets up `rbp`. What this
//! loses against the ring path's unwinder (`.eh_frame` over a stack copy): callers in code
//! built without frame pointers (the walk stops or goes wrong there), and the caller of a
//! wrapper that pushes before its `syscall` instruction (the word at the stack pointer is then
//! not a return address).
//!
//! Every program returns 1: a tracepoint's programs decide whether its perf events see the
//! hit, and the collection must not hide hits from anyone's events (its own counting events,
//! another tool's recording).
//!
//! Nothing is hidden: enters and exits are counted beside counting-mode perf events on the
//! same tasks (OSprof's checksums); calls whose entry was not seen, calls never left, and
//! what did not fit a map (start times, histogram entries, stacks) are counted and reported.

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use gmon_format::latency::EventCheck;
use latency::Resolution;

use super::insn::{Alu, Asm, Code, Cond, Helper, MapSlot, Reg, Size};
use super::map::{Map, MapKind, u32_at, u64_at};
use super::prog::{Attachment, Program};
use crate::syscalls::LatencyOptions;
use crate::tracefs::Tracefs;
use crate::tracepoint::EventFormat;
use crate::{Error, Result};

const PIDS: MapSlot = MapSlot(0);
const START: MapSlot = MapSlot(1);
const HIST: MapSlot = MapSlot(2);
const STACKS: MapSlot = MapSlot(3);
const COUNTS: MapSlot = MapSlot(4);
const BOUNDS: MapSlot = MapSlot(5);

/// Entries of the counters map.
const ENTERS: i32 = 0;
const EXITS: i32 = 1;
const START_FULL: i32 = 2;
const HIST_FULL: i32 = 3;
const STACK_LOST: i32 = 4;
const PIDS_FULL: i32 = 5;
const N_COUNTS: u32 = 6;

/// Histogram keys with these system-call numbers count unpaired calls of an image.
const UNPAIRED_ENTER: u32 = 0xffff_fff0;
const UNPAIRED_EXIT: u32 = 0xffff_fff1;

/// `BPF_F_USER_STACK`.
const F_USER_STACK: i32 = 1 << 8;
/// `BPF_NOEXIST`.
const NOEXIST: i32 = 1;
/// `offsetof(struct pt_regs, sp)` on x86_64 (`arch/x86/include/uapi/asm/ptrace.h`: the
/// layout user space sees through ptrace, fixed by the ABI).
const PT_REGS_SP: i32 = 19 * 8;

/// Frames kept per stack id: the wrapper's pc and two frame-pointer frames above its caller.
const STACK_DEPTH: u32 = 3;

// The programs' stack frame (offsets from R10).
const KEY32: i16 = -4;
const TID: i16 = -8;
/// The start value: t0, ret, faults, nr, stackid, tgid, gen, pad.
const SV: i16 = -56;
const SCRATCH: i16 = -64;
const CKEY: i16 = -68;
/// The histogram key: tgid, gen, nr, stackid, ret, slice, bucket.
const HK: i16 = -104;
const NS: i16 = -112;
const FAULTS: i16 = -120;
const BKEY: i16 = -124;
/// The histogram value: count, total, min, max, faults.
const HV: i16 = -168;

// The start value's fields.
const S_T0: i16 = 0;
const S_RET: i16 = 8;
const S_FAULTS: i16 = 16;
const S_NR: i16 = 24;
const S_STACK: i16 = 28;
const S_TGID: i16 = 32;
const S_GEN: i16 = 36;
const START_VALUE: u32 = 48;

// The histogram key's fields.
const K_TGID: i16 = 0;
const K_GEN: i16 = 4;
const K_NR: i16 = 8;
const K_STACK: i16 = 12;
const K_RET: i16 = 16;
const K_SLICE: i16 = 24;
const K_BUCKET: i16 = 28;
const HIST_KEY: u32 = 32;
const HIST_VALUE: u32 = 40;

/// Where the programs read the tracepoints' fields: from tracefs at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offsets {
    /// `sys_enter.id`.
    pub enter_id: i16,
    /// `sys_exit.id`.
    pub exit_id: i16,
    /// `sched_process_fork.child_pid`.
    pub child_pid: i16,
    /// `sched_process_exit.pid`.
    pub exit_pid: i16,
}

/// What the histogram program computes beside the latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// OSprof's r.
    pub resolution: u32,
    /// (start of slice 0, slice length), both ns on CLOCK_MONOTONIC.
    pub slices: Option<(u64, u64)>,
}

fn field(f: &EventFormat, name: &str, size: usize) -> Result<i16> {
    f.field(name)
        .filter(|t| t.size == size && !t.data_loc)
        .and_then(|t| i16::try_from(t.offset).ok())
        .ok_or_else(|| Error::Tracing {
            what: format!(
                "tracepoint {} has no {size}-byte field {name}: this kernel's format differs \
                 from what the BPF programs read; use `--latency-path ring`",
                f.name
            ),
            source: None,
        })
}

impl Offsets {
    fn read(
        enter: &EventFormat,
        exit: &EventFormat,
        fork: &EventFormat,
        gone: &EventFormat,
    ) -> Result<Offsets> {
        Ok(Offsets {
            enter_id: field(enter, "id", 8)?,
            exit_id: field(exit, "id", 8)?,
            child_pid: field(fork, "child_pid", 4)?,
            exit_pid: field(gone, "pid", 4)?,
        })
    }
}

/// `R2 = R10 + off` (a pointer into the frame, for a helper's argument).
fn frame_ptr(a: &mut Asm, reg: Reg, off: i16) {
    a.mov(reg, Reg::R10).alu_imm(Alu::Add, reg, i32::from(off));
}

/// Counters[idx] += 1 (a per-CPU array: no atomics).
fn count(a: &mut Asm, idx: i32) {
    let skip = a.label();
    a.store_imm(Size::W, Reg::R10, CKEY, idx)
        .ld_map(Reg::R1, COUNTS);
    frame_ptr(a, Reg::R2, CKEY);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, skip)
        .load(Size::DW, Reg::R1, Reg::R0, 0)
        .alu_imm(Alu::Add, Reg::R1, 1)
        .store(Size::DW, Reg::R0, 0, Reg::R1)
        .bind(skip);
}

/// Looks the current process up in PIDS: jumps to `out` unless it is followed and armed;
/// leaves `R7` = pid_tgid, `R8` = its image generation.
fn followed(a: &mut Asm, out: super::insn::Label) {
    a.call(Helper::GetCurrentPidTgid)
        .mov(Reg::R7, Reg::R0)
        .mov(Reg::R1, Reg::R0)
        .alu_imm(Alu::Rsh, Reg::R1, 32)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .ld_map(Reg::R1, PIDS);
    frame_ptr(a, Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .load(Size::W, Reg::R1, Reg::R0, 0)
        .jmp_imm(Cond::Eq, Reg::R1, 0, out)
        .load(Size::W, Reg::R8, Reg::R0, 4);
}

/// Adds one call of NS ns and FAULTS faults to the histogram entry at HK (created if new;
/// a full map is counted).
fn hist_add(a: &mut Asm) {
    let new = a.label();
    let done = a.label();
    let (set_min, no_min, no_max) = (a.label(), a.label(), a.label());
    a.ld_map(Reg::R1, HIST);
    frame_ptr(a, Reg::R2, HK);
    // A key another CPU created has this CPU's value zeroed: its first call sets the min.
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, new)
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
        .ld_map(Reg::R1, HIST);
    frame_ptr(a, Reg::R2, HK);
    frame_ptr(a, Reg::R3, HV);
    a.mov_imm(Reg::R4, NOEXIST)
        .call(Helper::MapUpdateElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, done);
    count(a, HIST_FULL);
    a.bind(done);
}

/// Counts an unpaired call (`marker`) against the image whose tgid and gen are at HK.
fn unpaired(a: &mut Asm, marker: u32) {
    a.store_imm(Size::W, Reg::R10, HK + K_NR, marker as i32)
        .store_imm(Size::W, Reg::R10, HK + K_STACK, -1)
        .store_imm(Size::DW, Reg::R10, HK + K_RET, 0)
        .store_imm(Size::W, Reg::R10, HK + K_SLICE, 0)
        .store_imm(Size::W, Reg::R10, HK + K_BUCKET, 0)
        .store_imm(Size::DW, Reg::R10, NS, 0)
        .store_imm(Size::DW, Reg::R10, FAULTS, 0);
    hist_add(a);
}

/// `raw_syscalls:sys_enter`: the start of a call of a followed, armed process.
pub(crate) fn enter_program(off: &Offsets) -> Code {
    let mut a = Asm::new();
    let out = a.label();
    let (stack_ok, no_ret, insert) = (a.label(), a.label(), a.label());
    a.mov(Reg::R6, Reg::R1);
    followed(&mut a, out);
    count(&mut a, ENTERS);
    a.call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R10, SV + S_T0, Reg::R0)
        .load(Size::DW, Reg::R1, Reg::R6, off.enter_id)
        .store(Size::W, Reg::R10, SV + S_NR, Reg::R1)
        .mov(Reg::R1, Reg::R6)
        .ld_map(Reg::R2, STACKS)
        .mov_imm(Reg::R3, F_USER_STACK)
        .call(Helper::GetStackid)
        .store(Size::W, Reg::R10, SV + S_STACK, Reg::R0)
        .jmp_imm(Cond::SGe, Reg::R0, 0, stack_ok);
    count(&mut a, STACK_LOST);
    // The word at the user stack pointer: the return address into the wrapper's caller.
    a.bind(stack_ok)
        .store_imm(Size::DW, Reg::R10, SV + S_RET, 0)
        .call(Helper::GetCurrentTaskBtf)
        .mov(Reg::R1, Reg::R0)
        .call(Helper::TaskPtRegs)
        .jmp_imm(Cond::Eq, Reg::R0, 0, no_ret)
        .mov(Reg::R3, Reg::R0)
        .alu_imm(Alu::Add, Reg::R3, PT_REGS_SP);
    frame_ptr(&mut a, Reg::R1, SCRATCH);
    a.mov_imm(Reg::R2, 8)
        .call(Helper::ProbeReadKernel)
        .jmp_imm(Cond::Ne, Reg::R0, 0, no_ret)
        .load(Size::DW, Reg::R3, Reg::R10, SCRATCH);
    frame_ptr(&mut a, Reg::R1, SV + S_RET);
    a.mov_imm(Reg::R2, 8)
        .call(Helper::ProbeReadUser)
        .bind(no_ret)
        .store_imm(Size::DW, Reg::R10, SV + S_FAULTS, 0)
        .mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::Rsh, Reg::R1, 32)
        .store(Size::W, Reg::R10, SV + S_TGID, Reg::R1)
        .store(Size::W, Reg::R10, SV + S_GEN, Reg::R8)
        .store_imm(Size::DW, Reg::R10, SV + 40, 0)
        .store(Size::W, Reg::R10, TID, Reg::R7)
        .ld_map(Reg::R1, START);
    frame_ptr(&mut a, Reg::R2, TID);
    // A call still open on this thread never returned (a restarted or abandoned call).
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, insert)
        .load(Size::W, Reg::R1, Reg::R0, S_TGID)
        .store(Size::W, Reg::R10, HK + K_TGID, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R0, S_GEN)
        .store(Size::W, Reg::R10, HK + K_GEN, Reg::R1);
    unpaired(&mut a, UNPAIRED_ENTER);
    a.bind(insert).ld_map(Reg::R1, START);
    frame_ptr(&mut a, Reg::R2, TID);
    frame_ptr(&mut a, Reg::R3, SV);
    a.mov_imm(Reg::R4, 0)
        .call(Helper::MapUpdateElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out);
    count(&mut a, START_FULL);
    a.bind(out).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

/// `R9 = bucket of the latency at NS`, by [`Resolution::bucket`]'s rule: the octave from
/// the highest bit, then, for r > 1, a binary search of the octave's r lower bounds (the
/// BOUNDS array, filled from [`Resolution::lower_bound`]) in a fixed number of steps.
fn bucket(a: &mut Asm, r: u32) {
    a.load(Size::DW, Reg::R1, Reg::R10, NS).mov_imm(Reg::R9, 0);
    for s in [32, 16, 8, 4, 2, 1] {
        let skip = a.label();
        a.mov(Reg::R3, Reg::R1)
            .alu_imm(Alu::Rsh, Reg::R3, s)
            .jmp_imm(Cond::Eq, Reg::R3, 0, skip)
            .mov(Reg::R1, Reg::R3)
            .alu_imm(Alu::Add, Reg::R9, s)
            .bind(skip);
    }
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
        frame_ptr(a, Reg::R2, BKEY);
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

/// `raw_syscalls:sys_exit`: the latency of the call into the histogram.
pub(crate) fn exit_program(off: &Offsets, shape: &Shape) -> Code {
    let mut a = Asm::new();
    let (out, no_start, mismatch, sliced) = (a.label(), a.label(), a.label(), a.label());
    a.mov(Reg::R6, Reg::R1);
    followed(&mut a, out);
    count(&mut a, EXITS);
    a.call(Helper::KtimeGetNs)
        .mov(Reg::R9, Reg::R0)
        .store(Size::W, Reg::R10, TID, Reg::R7)
        .ld_map(Reg::R1, START);
    frame_ptr(&mut a, Reg::R2, TID);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, no_start)
        .load(Size::W, Reg::R1, Reg::R0, S_TGID)
        .store(Size::W, Reg::R10, HK + K_TGID, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R0, S_GEN)
        .store(Size::W, Reg::R10, HK + K_GEN, Reg::R1)
        .load(Size::W, Reg::R1, Reg::R0, S_NR)
        .store(Size::W, Reg::R10, HK + K_NR, Reg::R1)
        .load(Size::DW, Reg::R2, Reg::R6, off.exit_id)
        .jmp_reg(Cond::Ne, Reg::R1, Reg::R2, mismatch)
        .load(Size::W, Reg::R1, Reg::R0, S_STACK)
        .store(Size::W, Reg::R10, HK + K_STACK, Reg::R1)
        .load(Size::DW, Reg::R1, Reg::R0, S_RET)
        .store(Size::DW, Reg::R10, HK + K_RET, Reg::R1)
        .load(Size::DW, Reg::R1, Reg::R0, S_FAULTS)
        .store(Size::DW, Reg::R10, FAULTS, Reg::R1)
        .load(Size::DW, Reg::R1, Reg::R0, S_T0)
        .mov(Reg::R2, Reg::R9)
        .alu_reg(Alu::Sub, Reg::R2, Reg::R1)
        .store(Size::DW, Reg::R10, NS, Reg::R2)
        .ld_map(Reg::R1, START);
    frame_ptr(&mut a, Reg::R2, TID);
    a.call(Helper::MapDeleteElem)
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
    a.store(Size::W, Reg::R10, HK + K_BUCKET, Reg::R9);
    hist_add(&mut a);
    a.ja(out);
    // Entered as another call: that one never returned, and this exit has no entry.
    a.bind(mismatch);
    unpaired(&mut a, UNPAIRED_ENTER);
    a.ld_map(Reg::R1, START);
    frame_ptr(&mut a, Reg::R2, TID);
    a.call(Helper::MapDeleteElem);
    a.bind(no_start)
        .mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::Rsh, Reg::R1, 32)
        .store(Size::W, Reg::R10, HK + K_TGID, Reg::R1)
        .store(Size::W, Reg::R10, HK + K_GEN, Reg::R8);
    unpaired(&mut a, UNPAIRED_EXIT);
    a.bind(out).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

/// A page fault (the software event the ring path counts, with period 1, on the followed
/// tasks): one more fault for the call the thread is in. Returns 0: the event writes no
/// sample (it has no ring).
pub(crate) fn fault_program() -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.call(Helper::GetCurrentPidTgid)
        .store(Size::W, Reg::R10, TID, Reg::R0)
        .ld_map(Reg::R1, START);
    frame_ptr(&mut a, Reg::R2, TID);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .load(Size::DW, Reg::R1, Reg::R0, S_FAULTS)
        .alu_imm(Alu::Add, Reg::R1, 1)
        .store(Size::DW, Reg::R0, S_FAULTS, Reg::R1)
        .bind(out)
        .mov_imm(Reg::R0, 0)
        .exit();
    a.finish()
}

/// `sched:sched_process_exec`: a followed process runs its next image, and is armed.
pub(crate) fn exec_program() -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.call(Helper::GetCurrentPidTgid)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .store(Size::W, Reg::R10, KEY32, Reg::R0)
        .ld_map(Reg::R1, PIDS);
    frame_ptr(&mut a, Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .store_imm(Size::W, Reg::R0, 0, 1)
        .load(Size::W, Reg::R1, Reg::R0, 4)
        .alu_imm(Alu::Add, Reg::R1, 1)
        .store(Size::W, Reg::R0, 4, Reg::R1)
        .bind(out)
        .mov_imm(Reg::R0, 1)
        .exit();
    a.finish()
}

/// `sched:sched_process_fork`: the child of a followed process is followed, armed as its
/// parent, at its first image.
pub(crate) fn fork_program(off: &Offsets) -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.mov(Reg::R6, Reg::R1)
        .call(Helper::GetCurrentPidTgid)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .store(Size::W, Reg::R10, KEY32, Reg::R0)
        .ld_map(Reg::R1, PIDS);
    frame_ptr(&mut a, Reg::R2, KEY32);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .load(Size::W, Reg::R1, Reg::R0, 0)
        .store(Size::W, Reg::R10, SCRATCH, Reg::R1)
        .store_imm(Size::W, Reg::R10, SCRATCH + 4, 0)
        .load(Size::W, Reg::R1, Reg::R6, off.child_pid)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .ld_map(Reg::R1, PIDS);
    frame_ptr(&mut a, Reg::R2, KEY32);
    frame_ptr(&mut a, Reg::R3, SCRATCH);
    a.mov_imm(Reg::R4, 0)
        .call(Helper::MapUpdateElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out);
    count(&mut a, PIDS_FULL);
    a.bind(out).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

/// `sched:sched_process_exit`: a task is gone; its pid may be reused by anyone.
pub(crate) fn exit_task_program(off: &Offsets) -> Code {
    let mut a = Asm::new();
    a.load(Size::W, Reg::R1, Reg::R1, off.exit_pid)
        .store(Size::W, Reg::R10, KEY32, Reg::R1)
        .ld_map(Reg::R1, PIDS);
    frame_ptr(&mut a, Reg::R2, KEY32);
    a.call(Helper::MapDeleteElem).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

/// One histogram entry, as read from the kernel (summed over CPUs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    /// Calls.
    pub count: u64,
    /// Their summed latency, ns.
    pub total: u64,
    /// The shortest, ns.
    pub min: u64,
    /// The longest, ns.
    pub max: u64,
    /// Page faults taken during them.
    pub faults: u64,
}

/// What the in-kernel collection counted of one process image.
#[derive(Debug, Default)]
pub(crate) struct ImageCounts {
    /// (system call, user frames, slice, bucket) → sums.
    pub buckets: HashMap<(u64, Vec<u64>, u64, u32), Counted>,
    pub unpaired_enters: u64,
    pub unpaired_exits: u64,
}

/// What the in-kernel collection counted, for the aggregator.
#[derive(Debug, Default)]
pub struct LatencyCounts {
    /// (pid, image generation) → its counts.
    pub(crate) images: HashMap<(u32, u32), ImageCounts>,
    /// OSprof's checksums: enters and exits counted by the programs beside the counting-mode
    /// events on the same tasks.
    pub checks: Vec<EventCheck>,
    /// Calls left out: their histogram entry did not fit (`hist` map full).
    pub dropped: u64,
    /// Notes for the user (map-full counts, stacks that did not fit).
    pub notes: Vec<String>,
    /// Where slice 0 began (ns, CLOCK_MONOTONIC).
    pub(crate) start: u64,
}

/// One counted histogram bucket: (pid, image generation), (system call, call site, slice,
/// bucket) and its sums.
pub type CountedBucket<'a> = ((u32, u32), &'a (u64, Vec<u64>, u64, u32), &'a Counted);

impl LatencyCounts {
    /// Every bucket counted, in no particular order.
    pub fn buckets(&self) -> impl Iterator<Item = CountedBucket<'_>> {
        self.images
            .iter()
            .flat_map(|(img, c)| c.buckets.iter().map(move |(k, v)| (*img, k, v)))
    }
}

/// The in-kernel system-call latency collection: programs attached, maps read at drains.
#[derive(Debug)]
pub struct SyscallLatency {
    maps: Vec<Map>,
    _programs: Vec<Program>,
    attachments: Vec<Attachment>,
    fault: Program,
    /// The page-fault events running `fault` on the followed tasks.
    fault_events: Vec<OwnedFd>,
    /// Counting-mode `sys_enter`, `sys_exit` events on the followed tasks.
    counting: Vec<(OwnedFd, OwnedFd)>,
    enter_format: EventFormat,
    exit_format: EventFormat,
    site_frames: usize,
    start: u64,
    /// Sums drained so far: histogram key bytes → sums.
    drained: HashMap<Vec<u8>, Counted>,
}

fn hist_key(b: &[u8]) -> (u32, u32, u32, i32, u64, u32, u32) {
    (
        u32_at(b, 0),
        u32_at(b, 4),
        u32_at(b, 8),
        u32_at(b, 12) as i32,
        u64_at(b, 16),
        u32_at(b, 24),
        u32_at(b, 28),
    )
}

impl SyscallLatency {
    /// Creates the maps, loads the programs for `opts` and attaches them; nothing is counted
    /// until a process is followed ([`SyscallLatency::follow`]). Time slices start now.
    ///
    /// Returns an error if BPF is not permitted or a program is refused (with the verifier's
    /// words), or a tracepoint is missing.
    pub fn load(opts: &LatencyOptions) -> Result<SyscallLatency> {
        // Slice 0 starts now (ktime_get_ns is CLOCK_MONOTONIC).
        let start_ns = crate::clock::monotonic_ns();
        let tracefs = Tracefs::find_or_mount()?;
        let enter = tracefs.event("raw_syscalls", "sys_enter")?;
        let exit = tracefs.event("raw_syscalls", "sys_exit")?;
        let fork = tracefs.event("sched", "sched_process_fork")?;
        let exec = tracefs.event("sched", "sched_process_exec")?;
        let gone = tracefs.event("sched", "sched_process_exit")?;
        let off = Offsets::read(&enter, &exit, &fork, &gone)?;
        let resolution = Resolution::new(opts.resolution).unwrap_or(Resolution::ONE);
        let r = resolution.get();
        let shape = Shape {
            resolution: r,
            slices: opts.slice_ns.map(|l| (start_ns, l)),
        };
        let maps = vec![
            Map::create(MapKind::Hash, "pkg_pids", 4, 8, 16384)?,
            Map::create(MapKind::Hash, "pkg_start", 4, START_VALUE, 65536)?,
            Map::create(MapKind::PercpuHash, "pkg_hist", HIST_KEY, HIST_VALUE, 65536)?,
            Map::create(MapKind::StackTrace, "pkg_stacks", 4, 8 * STACK_DEPTH, 16384)?,
            Map::create(MapKind::PercpuArray, "pkg_counts", 4, 8, N_COUNTS)?,
            Map::create(MapKind::Array, "pkg_bounds", 4, 8, 64 * r)?,
        ];
        for b in 0..64 * r {
            maps[5]
                .update(&b.to_ne_bytes(), &resolution.lower_bound(b).to_ne_bytes())
                .map_err(|e| Error::io("cannot fill the BPF bucket bounds", e))?;
        }
        let refs: Vec<&Map> = maps.iter().collect();
        let programs = vec![
            (
                Program::load_tracepoint("pkg_exec", &exec_program(), &refs)?,
                exec,
            ),
            (
                Program::load_tracepoint("pkg_fork", &fork_program(&off), &refs)?,
                fork,
            ),
            (
                Program::load_tracepoint("pkg_gone", &exit_task_program(&off), &refs)?,
                gone,
            ),
            (
                Program::load_tracepoint("pkg_sys_exit", &exit_program(&off, &shape), &refs)?,
                exit.clone(),
            ),
            (
                Program::load_tracepoint("pkg_sys_enter", &enter_program(&off), &refs)?,
                enter.clone(),
            ),
        ];
        let fault = Program::load_perf_event("pkg_fault", &fault_program(), &refs)?;
        let mut attachments = Vec::new();
        for (p, f) in &programs {
            attachments.push(p.attach(f)?);
        }
        Ok(SyscallLatency {
            maps,
            _programs: programs.into_iter().map(|(p, _)| p).collect(),
            fault,
            fault_events: Vec::new(),
            attachments,
            counting: Vec::new(),
            enter_format: enter,
            exit_format: exit,
            site_frames: opts.site_frames,
            start: start_ns,
            drained: HashMap::new(),
        })
    }

    /// Follows process `pid` and the processes it starts: from now if `now` (a running
    /// process), else from its next exec (a launched command, held before its exec). Opens
    /// the counting-mode events for the checksums on it (inherited by the threads and
    /// children it starts, from its exec if not `now`) and, if `now`, on each of its threads.
    ///
    /// Returns an error if the map is full or the counting events cannot be opened.
    pub fn follow(&mut self, pid: u32, now: bool) -> Result<()> {
        let threads = if now {
            crate::procfs::threads(pid as i32)
                .map_err(|_| Error::NoSuchProcess { pid: pid as i32 })?
        } else {
            Vec::new()
        };
        let mut v = [0u8; 8];
        v[0] = u8::from(now);
        self.maps[PIDS.0]
            .update(&pid.to_ne_bytes(), &v)
            .map_err(|e| Error::io(format!("cannot follow pid {pid} in the BPF map"), e))?;
        let spec = crate::sys::EventSpec {
            freq: 0,
            stack_user: 0,
            max_stack: 0,
            user_only: false,
            enable_on_exec: !now,
            inherit: true,
            wakeup_watermark: 0,
        };
        let chain = crate::sys::ChainParts {
            kernel: false,
            user: false,
        };
        let tids: Vec<i32> = if threads.is_empty() {
            vec![pid as i32]
        } else {
            threads.to_vec()
        };
        for tid in tids {
            let open = |f: &EventFormat| {
                let mut attr = crate::sys::tracepoint_attr(f.id, chain, 0, true, &spec);
                let fd = crate::sys::open(&mut attr, tid, -1).map_err(|e| Error::Tracing {
                    what: format!("cannot count {} of pid {tid}", f.name),
                    source: Some(e),
                })?;
                if now {
                    crate::sys::set_enabled(&fd, true)
                        .map_err(|e| Error::io("cannot enable a counting event", e))?;
                }
                Ok::<_, Error>(fd)
            };
            let pair = (open(&self.enter_format)?, open(&self.exit_format)?);
            self.counting.push(pair);
            let mut attr = crate::sys::counter_attr(crate::sys::PERF_COUNT_SW_PAGE_FAULTS, &spec);
            let faults = crate::sys::open(&mut attr, tid, -1).map_err(|e| Error::Tracing {
                what: format!("cannot count the page faults of pid {tid}"),
                source: Some(e),
            })?;
            self.fault.attach_to_event(&faults)?;
            if now {
                crate::sys::set_enabled(&faults, true)
                    .map_err(|e| Error::io("cannot enable a page-fault event", e))?;
            }
            self.fault_events.push(faults);
        }
        Ok(())
    }

    /// Moves the histogram's entries to user space, so the map holds only what came since.
    ///
    /// Returns an error if the map cannot be read.
    pub fn drain(&mut self) -> Result<()> {
        let hist = &self.maps[HIST.0];
        let stride = hist.value_stride();
        let keys = hist
            .keys()
            .map_err(|e| Error::io("cannot read the BPF latency map", e))?;
        for k in keys {
            let Some(v) = hist
                .take(&k)
                .map_err(|e| Error::io("cannot read the BPF latency map", e))?
            else {
                continue;
            };
            let e = self.drained.entry(k).or_insert(Counted {
                min: u64::MAX,
                ..Counted::default()
            });
            for cpu in v.chunks(stride) {
                let c = Counted {
                    count: u64_at(cpu, 0),
                    total: u64_at(cpu, 8),
                    min: u64_at(cpu, 16),
                    max: u64_at(cpu, 24),
                    faults: u64_at(cpu, 32),
                };
                if c.count == 0 {
                    continue;
                }
                e.count += c.count;
                e.total = e.total.saturating_add(c.total);
                e.min = e.min.min(c.min);
                e.max = e.max.max(c.max);
                e.faults += c.faults;
            }
        }
        Ok(())
    }

    /// Ends the collection: detaches the programs, drains the maps, reads the counters, and
    /// resolves each call site's stack.
    ///
    /// Returns an error if a map cannot be read.
    pub fn finish(mut self) -> Result<LatencyCounts> {
        self.attachments.clear();
        self.fault_events.clear();
        self.drain()?;
        let mut out = LatencyCounts {
            start: self.start,
            ..LatencyCounts::default()
        };
        let counts = &self.maps[COUNTS.0];
        let mut totals = [0u64; N_COUNTS as usize];
        for (i, t) in totals.iter_mut().enumerate() {
            if let Ok(Some(v)) = counts.lookup(&(i as u32).to_ne_bytes()) {
                *t = v.chunks(counts.value_stride()).map(|c| u64_at(c, 0)).sum();
            }
        }
        let (mut enters, mut exits) = (0, 0);
        for (e, x) in &self.counting {
            enters += crate::sys::read_count(e).unwrap_or(0);
            exits += crate::sys::read_count(x).unwrap_or(0);
        }
        out.checks = vec![
            EventCheck {
                event: self.enter_format.name.clone(),
                received: totals[ENTERS as usize],
                counted: Some(enters),
            },
            EventCheck {
                event: self.exit_format.name.clone(),
                received: totals[EXITS as usize],
                counted: Some(exits),
            },
        ];
        let stacks = &self.maps[STACKS.0];
        let mut frames_of: HashMap<i32, Vec<u64>> = HashMap::new();
        for (k, c) in &self.drained {
            let (tgid, generation, nr, stackid, ret, slice, bucket) = hist_key(k);
            let img = out.images.entry((tgid, generation)).or_default();
            match nr {
                UNPAIRED_ENTER => img.unpaired_enters += c.count,
                UNPAIRED_EXIT => img.unpaired_exits += c.count,
                _ => {
                    let fp = frames_of.entry(stackid).or_insert_with(|| {
                        if stackid < 0 {
                            return Vec::new();
                        }
                        stacks
                            .lookup(&stackid.to_ne_bytes())
                            .ok()
                            .flatten()
                            .map(|v| {
                                v.chunks(8)
                                    .map(|w| u64_at(w, 0))
                                    .take_while(|&a| a != 0)
                                    .collect()
                            })
                            .unwrap_or_default()
                    });
                    let site = site(fp, ret, self.site_frames);
                    let e = img
                        .buckets
                        .entry((u64::from(nr), site, u64::from(slice), bucket))
                        .or_insert(Counted {
                            min: u64::MAX,
                            ..Counted::default()
                        });
                    e.count += c.count;
                    e.total = e.total.saturating_add(c.total);
                    e.min = e.min.min(c.min);
                    e.max = e.max.max(c.max);
                    e.faults += c.faults;
                }
            }
        }
        // Calls entered and never left (the thread exited, or the run ended first).
        let start = &self.maps[START.0];
        for k in start.keys().unwrap_or_default() {
            if let Ok(Some(v)) = start.lookup(&k) {
                let img = (u32_at(&v, S_TGID as usize), u32_at(&v, S_GEN as usize));
                out.images.entry(img).or_default().unpaired_enters += 1;
            }
        }
        out.dropped = totals[HIST_FULL as usize];
        for (i, what) in [
            (
                HIST_FULL,
                "calls were left out: the in-kernel histogram map was full",
            ),
            (
                START_FULL,
                "calls had no start time: the in-kernel map of open calls was full (counted as exits without entry)",
            ),
            (
                STACK_LOST,
                "call sites were not recorded: a user stack could not be read, or the in-kernel stack map was full",
            ),
            (
                PIDS_FULL,
                "processes were not followed: the in-kernel map of followed processes was full",
            ),
        ] {
            let n = totals[i as usize];
            if n > 0 {
                out.notes.push(format!("{n} {what}"));
            }
        }
        Ok(out)
    }
}

/// The call site of a stack id's frames and the word at the user stack pointer: the
/// wrapper's pc, its caller (the word, when it is a return address: not the pc itself and
/// not 0), then the frame-pointer walk above the caller.
fn site(fp: &[u64], ret: u64, keep: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(keep);
    out.extend(fp.first());
    if ret != 0 && fp.get(1) != Some(&ret) {
        out.push(ret);
    }
    out.extend(fp.iter().skip(1));
    out.truncate(keep.max(1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFF: Offsets = Offsets {
        enter_id: 8,
        exit_id: 8,
        child_pid: 20,
        exit_pid: 24,
    };

    fn digest(c: &Code) -> String {
        // FNV-1a over the bytes: the test pins every byte without a page of hex.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in c.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        format!("{} insns {h:016x}", c.insns.len())
    }

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
            digest(&enter_program(&OFF)),
            digest(&exit_program(&OFF, &shape)),
            digest(&exit_program(&OFF, &sliced)),
            digest(&fault_program()),
            digest(&exec_program()),
            digest(&fork_program(&OFF)),
            digest(&exit_task_program(&OFF)),
        ];
        let want = [
            "160 insns 2605100bcef98df7",
            "273 insns edc43e27872ca76a",
            "313 insns 86118994096318ac",
            "13 insns f5c054bc7d07563a",
            "15 insns 161bd0814b7c02d0",
            "36 insns 3198218e2f3b6fd1",
            "9 insns 1861ead76c64afc2",
        ];
        assert_eq!(got, want.map(String::from), "{got:#?}");
    }

    #[test]
    fn field_offsets_are_written_into_the_instructions() {
        let moved = Offsets {
            enter_id: 16,
            ..OFF
        };
        let a = enter_program(&OFF);
        let b = enter_program(&moved);
        let diff: Vec<usize> = (0..a.insns.len())
            .filter(|&i| a.insns[i] != b.insns[i])
            .collect();
        assert_eq!(diff.len(), 1);
        assert_eq!(b.insns[diff[0]].off, 16);
    }

    #[test]
    fn a_site_puts_the_return_address_between_the_pc_and_the_frame_walk() {
        assert_eq!(site(&[0x10, 0x30, 0x40], 0x20, 3), vec![0x10, 0x20, 0x30]);
        // A wrapper with a frame: the walk already has its caller.
        assert_eq!(site(&[0x10, 0x20, 0x40], 0x20, 3), vec![0x10, 0x20, 0x40]);
        assert_eq!(site(&[0x10], 0, 3), vec![0x10]);
        assert_eq!(site(&[], 0, 3), Vec::<u64>::new());
    }
}
