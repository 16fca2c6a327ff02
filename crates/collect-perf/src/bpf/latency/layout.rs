//! What the latency programs share with each other and with the collector that reads their
//! maps: the maps' slots and layouts, the programs' stack frame, the tracepoint fields they
//! read, and the two small emitters (a frame pointer, a counter) every program uses. Kept
//! apart from the builders so that `programs.rs` and `blocking.rs` each depend on it and not
//! on each other's constants.

use crate::bpf::insn::{Asm, MapSlot, Reg, Size};
use crate::tracepoint::EventFormat;
use crate::{Error, Result};

pub(super) const PIDS: MapSlot = MapSlot(0);
/// The threads' values (task storage): each thread's open call and its image.
pub(super) const TASK: MapSlot = MapSlot(1);
pub(super) const HIST: MapSlot = MapSlot(2);
pub(super) const COUNTS: MapSlot = MapSlot(3);
pub(super) const BOUNDS: MapSlot = MapSlot(4);
/// The calls left open by exited threads: (tid, t0) → (tgid, gen), read at drains.
pub(super) const GONE: MapSlot = MapSlot(5);

/// Entries of the counters map (the sleep programs' follow: `blocking.rs`).
pub(super) const ENTERS: i32 = 0;
pub(super) const EXITS: i32 = 1;
pub(super) const START_FULL: i32 = 2;
pub(super) const HIST_FULL: i32 = 3;
pub(super) const PIDS_FULL: i32 = 4;

/// Histogram keys with these system-call numbers count unpaired calls of an image.
pub(super) const UNPAIRED_ENTER: u32 = 0xffff_fff0;
pub(super) const UNPAIRED_EXIT: u32 = 0xffff_fff1;

/// `BPF_NOEXIST`.
pub(super) const NOEXIST: i32 = 1;
/// The first bytes of x86_64's `struct pt_regs` (`arch/x86/include/uapi/asm/ptrace.h`, the
/// layout ptrace shows user space, fixed by the ABI), through `sp`, and the offsets in it of
/// the user registers the call site comes from.
pub(super) const PT_REGS_TO_SP: i32 = 20 * 8;
pub(super) const PT_REGS_BP: i16 = 4 * 8;
pub(super) const PT_REGS_IP: i16 = 16 * 8;
pub(super) const PT_REGS_SP: i16 = 19 * 8;
/// How far above the stack pointer a frame pointer may be and still be followed: the
/// default stack limit (8 MiB); a larger distance is not a frame of this stack.
pub(super) const FRAME_SPAN: i32 = 8 << 20;

// The programs' stack frame (offsets from R10).
pub(super) const KEY32: i16 = -4;
/// The key and value of a call left open by an exiting thread: (tid, pad, t0), (tgid, gen).
pub(super) const GK: i16 = -32;
pub(super) const GV: i16 = -40;
/// A copy of the user registers.
pub(super) const REGS: i16 = -224;
pub(super) const CKEY: i16 = -228;
/// The histogram key: tgid, gen, nr, slice, bucket, pad, ip, ret, up.
pub(super) const HK: i16 = -280;
pub(super) const NS: i16 = -288;
pub(super) const FAULTS: i16 = -296;
pub(super) const BKEY: i16 = -300;
/// The histogram value: count, total, min, max, faults.
pub(super) const HV: i16 = -344;
/// The exit program's context (its arguments), kept for [`super::blocking::site_copy`].
pub(super) const CTX: i16 = -16;

// The thread's value's fields: its open call (t0 = 0 when none), the process and the image
// the call began in, and the image the thread runs now (set by the exec program).
pub(super) const S_T0: i16 = 0;
pub(super) const S_IP: i16 = 8;
pub(super) const S_RET: i16 = 16;
pub(super) const S_UP: i16 = 24;
pub(super) const S_FAULTS: i16 = 32;
pub(super) const S_NR: i16 = 40;
pub(super) const S_TGID: i16 = 44;
pub(super) const S_GEN: i16 = 48;
pub(super) const S_IMG: i16 = 52;
pub(super) const TASK_VALUE: u32 = 56;
pub(super) const GONE_KEY: u32 = 16;
pub(super) const GONE_VALUE: u32 = 8;

// The histogram key's fields.
pub(super) const K_TGID: i16 = 0;
pub(super) const K_GEN: i16 = 4;
pub(super) const K_NR: i16 = 8;
pub(super) const K_SLICE: i16 = 12;
pub(super) const K_BUCKET: i16 = 16;
pub(super) const K_IP: i16 = 24;
pub(super) const K_RET: i16 = 32;
pub(super) const K_UP: i16 = 40;
pub(super) const HIST_KEY: u32 = 48;
pub(super) const HIST_VALUE: u32 = 40;

/// The raw tracepoints' arguments in their context (`u64 args[]`): `sys_enter(regs, id)`,
/// `sys_exit(regs, ret)`.
pub(super) const ARG_0: i16 = 0;
pub(super) const ARG_1: i16 = 8;

/// Where the programs read the (perf) tracepoints' fields: from tracefs at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Offsets {
    /// `sched_process_fork.child_pid`.
    pub child_pid: i16,
    /// `sched_process_exit.pid`.
    pub exit_pid: i16,
}

/// What the histogram program computes beside the latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    /// OSprof's r.
    pub resolution: u32,
    /// (start of slice 0, slice length), both ns on CLOCK_MONOTONIC.
    pub slices: Option<(u64, u64)>,
}

pub(in crate::bpf) fn field(f: &EventFormat, name: &str, size: usize) -> Result<i16> {
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
    pub(super) fn read(fork: &EventFormat, gone: &EventFormat) -> Result<Offsets> {
        Ok(Offsets {
            child_pid: field(fork, "child_pid", 4)?,
            exit_pid: field(gone, "pid", 4)?,
        })
    }
}

/// Counters[idx] += 1 (a per-CPU array: no atomics).
pub(super) fn count(a: &mut Asm, idx: i32) {
    let skip = a.label();
    a.store_imm(Size::W, Reg::R10, CKEY, idx)
        .count_at(COUNTS, CKEY, skip)
        .bind(skip);
}
