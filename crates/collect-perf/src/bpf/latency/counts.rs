//! What the in-kernel latency collection counted, as the collector hands it on, and the
//! decoding of the maps' and ring's records it is read from.

use std::collections::HashMap;

use gmon_format::latency::EventCheck;

use crate::bpf::map::{u32_at, u64_at};
use crate::recording::UserRegs;

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

/// Where a call was while off the CPU: blocked at a sleep site (kernel frames, innermost
/// first; empty when the kernel's stack map had no room), or runnable (preempted).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum OffCpu {
    Blocked(Vec<u64>),
    Runnable,
}

/// A waker counted in the kernel: its process (0: an interrupt in the idle task) and kernel
/// frames.
pub(crate) type KernelWaker = (u32, Vec<u64>);

/// Times off the CPU of one kind: (system call, user frames, where, waker if seen).
pub(crate) type SleepKey = (u64, Vec<u64>, OffCpu, Option<KernelWaker>);

/// A call site's copy as the programs keyed it: (tgid, gen, the three words read).
pub(super) type CopyKey = (u32, u32, [u64; 3]);

/// A call site's user registers and stack, copied in the kernel at its first call, to unwind
/// it in user space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SiteCopy {
    /// When, ns on CLOCK_MONOTONIC (which mappings were live).
    pub time: u64,
    pub regs: UserRegs,
    /// The stack from `regs.sp` up.
    pub stack: Vec<u8>,
}

/// A call site's record ([`super::blocking::site_copy`]): its key and copy, or None if it is
/// shorter than its header says.
pub(super) fn parse_copy(r: &[u8]) -> Option<(CopyKey, SiteCopy)> {
    use super::blocking::{C_GEN, C_LEN, C_REGS, C_STACK, C_TGID, C_TIME, C_WORDS};
    if r.len() < C_STACK {
        return None;
    }
    let len = (u32_at(r, C_LEN) as usize).min(r.len() - C_STACK);
    let words = [
        u64_at(r, C_WORDS),
        u64_at(r, C_WORDS + 8),
        u64_at(r, C_WORDS + 16),
    ];
    let copy = SiteCopy {
        time: u64_at(r, C_TIME),
        regs: UserRegs {
            ip: u64_at(r, C_REGS),
            sp: u64_at(r, C_REGS + 8),
            bp: u64_at(r, C_REGS + 16),
            bx: None,
        },
        stack: r[C_STACK..C_STACK + len].to_vec(),
    };
    Some(((u32_at(r, C_TGID), u32_at(r, C_GEN), words), copy))
}

/// What the in-kernel collection counted of one process image.
#[derive(Debug, Default)]
pub(crate) struct ImageCounts {
    /// With blocking: the call sites' copies, by the site the programs read (three words).
    pub copies: HashMap<Vec<u64>, SiteCopy>,
    /// (system call, user frames, slice, bucket) → sums.
    pub buckets: HashMap<(u64, Vec<u64>, u64, u32), Counted>,
    /// With blocking: (system call, user frames, off-CPU, waker if seen) → (times, ns).
    pub sleeps: HashMap<SleepKey, (u64, u64)>,
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
    /// Warnings for the user (map-full counts, stacks that did not fit, checksum
    /// mismatches).
    pub notes: Vec<String>,
    /// What the user may want to know but is not wrong (programs the kernel skipped for
    /// any task, which may or may not have been a profiled one's).
    pub remarks: Vec<String>,
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

/// A histogram key's fields: (tgid, generation, system call, slice, bucket, [pc, word at the
/// stack pointer, frame pointer's return address]).
pub(super) fn hist_key(b: &[u8]) -> (u32, u32, u32, u32, u32, [u64; 3]) {
    (
        u32_at(b, 0),
        u32_at(b, 4),
        u32_at(b, 8),
        u32_at(b, 12),
        u32_at(b, 16),
        [u64_at(b, 24), u64_at(b, 32), u64_at(b, 40)],
    )
}
