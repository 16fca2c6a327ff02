//! The owned result of a run: samples and side-band records in a compact layout.
//!
//! Longer than 800 lines only by its unit tests (the last fifth), which build records byte by
//! byte as the kernel writes them; the code itself is under 700 lines.

use std::ops::Range;

use rustc_hash::FxHashMap;

/// A tracepoint the run opened: its format (kept with the measurement, so its records can be
/// decoded again) and how it was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracepointInfo {
    /// Its format, read from the running kernel's tracefs.
    pub format: crate::tracepoint::EventFormat,
    /// The kernel-side filter set on it, if any.
    pub filter: Option<String>,
    /// Whether its records carry the kernel part of the callchain.
    pub kernel_chain: bool,
    /// Whether its records carry the user part, with user registers and a stack copy.
    pub user_chain: bool,
    /// Bytes of user stack copied with each record.
    pub user_stack_bytes: u32,
    /// Hits counted by its counting-mode twin over the run, if it had one: what the records
    /// received plus those lost should add up to.
    pub counted: Option<u64>,
    /// Records received.
    pub received: u64,
    pub(crate) sample_type: u64,
}

impl TracepointInfo {
    /// Its checksum as the latency file keeps it: records received against hits counted.
    pub fn check(&self) -> gmon_format::latency::EventCheck {
        gmon_format::latency::EventCheck {
            event: self.format.name.clone(),
            received: self.received,
            counted: self.counted,
        }
    }
}

/// One tracepoint record: which tracepoint, the task and time, its callchain and stack copy
/// (in [`TraceSample::sample`], read with the [`Recording`]'s accessors as for a cpu-clock
/// sample), and its raw data ([`Recording::raw`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSample {
    /// Index in [`Recording::tracepoints`].
    pub event: u32,
    /// Time, task, CPU, callchain, registers and stack copy; `period` 1, `ip` 0.
    pub sample: Sample,
    raw: Range<u32>,
}

/// User registers captured with a sample (x86_64: ip, sp, bp, bx), for unwinding the first
/// user frames from `.eh_frame` on the stack copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UserRegs {
    /// Instruction pointer.
    pub ip: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer.
    pub bp: u64,
    /// rbx, when captured: the frame of ld.so's lazy-binding trampolines is kept in it, and
    /// their unwind entries say so.
    pub bx: Option<u64>,
}

/// One cpu-clock sample. Variable-length parts live in the [`Recording`]'s arenas; use
/// [`Recording::kernel_chain`], [`Recording::user_chain`] and [`Recording::user_stack`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// CLOCK_MONOTONIC time in ns.
    pub time: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The CPU it ran on.
    pub cpu: u32,
    /// CPU time this sample stands for, in ns (cpu-clock's fixed period).
    pub period: u64,
    /// The sampled instruction pointer.
    pub ip: u64,
    /// Whether the sampled instruction was in user mode.
    pub user_mode: bool,
    /// User registers, if the task had a user context.
    pub regs: Option<UserRegs>,
    /// Where the user stack copy ended, which says whether the stack goes on beyond it.
    pub copy_end: CopyEnd,
    /// Whether the kernel's callchain reached its depth limit (`sample_max_stack`), so its
    /// outer user frames may be missing.
    pub chain_limited: bool,
    kernel: Range<u32>,
    user: Range<u32>,
    stack: Range<u32>,
}

/// Where a sample's user stack copy ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyEnd {
    /// Short of its size: at the stack's end, or at a page it could not read (not yet
    /// touched, or no stack), which only the thread's other copies tell apart. Also a sample
    /// without a copy.
    #[default]
    Short,
    /// At its size: the stack may go on beyond it.
    AtSize,
    /// At a page it could not read below where the thread's frames end (the BPF copier knew
    /// that end): a page not yet touched, the stack going on beyond.
    BelowFrames,
}

impl CopyEnd {
    /// The end of a copy that was or was not cut at its size, nothing being known of where
    /// the thread's frames end.
    pub fn sized(cut_at_size: bool) -> CopyEnd {
        match cut_at_size {
            true => CopyEnd::AtSize,
            false => CopyEnd::Short,
        }
    }
}

impl Sample {
    /// Whether an unprofiled sample's kernel part belongs to `-k.kernel` (the idle task and
    /// kernel threads, which have no user context) rather than `-k.other`.
    pub(crate) fn is_system_side(&self) -> bool {
        self.pid == 0 || self.regs.is_none()
    }
}

/// A side-band record: what the replay needs to know processes, names, maps and lifetimes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SideBand {
    /// An executable mapping (PERF_RECORD_MMAP2).
    Mmap {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Start address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// File offset of `addr`.
        pgoff: u64,
        /// ELF build-id, when the kernel supplied one.
        build_id: Option<Vec<u8>>,
        /// `PROT_*` bits.
        prot: u32,
        /// `MAP_*` bits.
        flags: u32,
        /// Path or pseudo-name (`[vdso]`, `//anon`).
        filename: String,
    },
    /// A name change; `exec` when caused by exec (PERF_RECORD_COMM).
    Comm {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// The new name (at most 15 bytes).
        comm: String,
        /// Set by `exec`, as opposed to `prctl(PR_SET_NAME)`.
        exec: bool,
    },
    /// A new thread (`pid == ppid`) or process (PERF_RECORD_FORK).
    Fork {
        /// New process id.
        pid: u32,
        /// Parent process id.
        ppid: u32,
        /// New thread id.
        tid: u32,
        /// Parent thread id.
        ptid: u32,
    },
    /// A thread exited; `tid == pid` is the process (PERF_RECORD_EXIT).
    Exit {
        /// Process id.
        pid: u32,
        /// Parent process id.
        ppid: u32,
        /// Thread id.
        tid: u32,
        /// Parent thread id.
        ptid: u32,
    },
    /// Samples dropped because the ring was full (PERF_RECORD_LOST).
    Lost {
        /// How many.
        count: u64,
    },
    /// The kernel throttled (or unthrottled) the event.
    Throttle {
        /// `true` for UNTHROTTLE.
        unthrottle: bool,
    },
    /// A followed thread left the CPU (`out`) or came back to it (PERF_RECORD_SWITCH, asked
    /// for by [`Config::context_switches`](crate::Config)).
    Switch {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Switched out (else in).
        out: bool,
        /// Switched out while still runnable (preempted), not blocked.
        preempted: bool,
    },
}

/// A side-band record with its time and CPU (from `sample_id_all`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideRecord {
    /// CLOCK_MONOTONIC time in ns (0 for records synthesized from /proc at attach).
    pub time: u64,
    /// The CPU whose buffer delivered it.
    pub cpu: u32,
    /// What happened.
    pub kind: SideBand,
}

/// Kernel counters of one process, from /proc, kept raw so later stages can parse more.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcCounters {
    /// User CPU time in clock ticks (`stat` field 14).
    pub utime_ticks: u64,
    /// System CPU time in clock ticks (`stat` field 15).
    pub stime_ticks: u64,
    /// Minor faults (`stat` field 10).
    pub minflt: u64,
    /// Major faults (`stat` field 12).
    pub majflt: u64,
    /// Voluntary context switches (`status`).
    pub voluntary_ctxt_switches: Option<u64>,
    /// Involuntary context switches (`status`).
    pub nonvoluntary_ctxt_switches: Option<u64>,
    /// Bytes read through syscalls (`io` rchar).
    pub rchar: Option<u64>,
    /// Bytes written through syscalls (`io` wchar).
    pub wchar: Option<u64>,
    /// Bytes fetched from storage (`io` read_bytes).
    pub read_bytes: Option<u64>,
    /// Bytes sent to storage (`io` write_bytes).
    pub write_bytes: Option<u64>,
    /// `/proc/PID/stat` text.
    pub stat: String,
    /// `/proc/PID/status` text.
    pub status: String,
    /// `/proc/PID/io` text (empty if unreadable).
    pub io: String,
    /// `/proc/PID/schedstat` text (empty if unreadable).
    pub schedstat: String,
}

/// Which perf software counter an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CounterKind {
    /// `PERF_COUNT_SW_PAGE_FAULTS`, recorded at every occurrence only for the latency
    /// collection: a record per fault slows fault-heavy code by a third (0.6 us a fault), so
    /// ordinary runs count faults per process from taskstats or `/proc` instead.
    PageFault,
}

/// One occurrence of a counted software event, attributed to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterEvent {
    /// CLOCK_MONOTONIC time in ns.
    pub time: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Which counter.
    pub kind: CounterKind,
}

/// The latest /proc reading of a process that was alive while the run polled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcReading {
    /// Process id.
    pub pid: u32,
    /// CLOCK_MONOTONIC ns of the reading.
    pub time: u64,
    /// Start time in clock ticks since boot (`stat` field 22), which tells reused pids apart.
    pub start_ticks: u64,
    /// Where the kernel put the main thread's stack pointer at exec, the address of `argc`
    /// (`stat` field 28; 0 when /proc hides it): every frame of that thread lies below it.
    pub start_stack: u64,
    /// Command name from `stat`.
    pub comm: String,
    /// `/proc/PID/cmdline`, split at NULs.
    pub argv: Vec<Vec<u8>>,
    /// The counters.
    pub counters: ProcCounters,
}

/// A taskstats exit record of one task (thread), sent by the kernel as it exits. CPU times
/// are the kernel's tick-sampled `utime` and `stime` (a task that ran 2 ms may show 0 or one
/// tick), the rest exact counts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskExit {
    /// CLOCK_MONOTONIC ns when the collector received it (shortly after the exit).
    pub time: u64,
    /// Thread id.
    pub tid: u32,
    /// Process id (thread group), when the kernel's struct has it (version 12 on).
    pub tgid: Option<u32>,
    /// Parent process id.
    pub ppid: u32,
    /// Command name.
    pub comm: String,
    /// User CPU time in ns (the kernel counts µs), as the kernel sampled it at clock ticks
    /// (`ac_utime`): a task that ran 2 ms may have 0 or a whole tick.
    pub user_cpu_ns: u64,
    /// System CPU time in ns, tick-sampled like `user_cpu_ns` (`ac_stime`).
    pub system_cpu_ns: u64,
    /// The exact time the task ran on a CPU, in ns (the scheduler's `sum_exec_runtime`, which
    /// taskstats reports as `cpu_run_virtual_total` when the kernel has delay accounting).
    pub runtime_ns: Option<u64>,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Bytes read through system calls (`read_char`).
    pub read_bytes: u64,
    /// Bytes written through system calls (`write_char`).
    pub written_bytes: u64,
    /// Voluntary context switches.
    pub voluntary_switches: u64,
    /// Involuntary context switches.
    pub involuntary_switches: u64,
}

/// How the launched command ended, with its counters read before it was reaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildExit {
    /// The child's pid.
    pub pid: u32,
    /// Exit code, if it exited normally.
    pub code: Option<i32>,
    /// Terminating signal, if it was killed.
    pub signal: Option<i32>,
    /// Counters read while it was a zombie (None if /proc could not be read).
    pub counters: Option<ProcCounters>,
    /// Peak RSS in KiB from `wait4`.
    pub max_rss_kib: u64,
}

/// Everything one run collected, owned and ready for [`replay`](crate::replay).
///
/// Samples and side-band records are in buffer order (per CPU), not time order; `replay`
/// sorts them. To build gmon files later: replay, then for each process and each sample pick
/// the kernel chain (kernel gmon: pc = chain\[0\], arcs between consecutive frames) and the user
/// chain (user gmon, resolving addresses through [`Process::mapping_at`](crate::Process) to
/// (build-id, file offset)), with `period` as the histogram weight.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// The samples.
    pub samples: Vec<Sample>,
    /// MMAP2, COMM, FORK, EXIT, LOST and THROTTLE records.
    pub side_band: Vec<SideRecord>,
    /// Total samples reported lost by LOST records.
    pub lost: u64,
    /// The same per CPU (the CPU whose ring was full).
    pub lost_per_cpu: std::collections::BTreeMap<u32, u64>,
    /// Samples received (all of them, including those a streaming run passed on and removed).
    pub sample_count: u64,
    /// Lost samples as counted by the events themselves (`PERF_FORMAT_LOST`, read at the end).
    /// This also covers drops the kernel never got to report in a LOST record.
    pub lost_reported_by_events: u64,
    /// The same per CPU: (cpu, lost) for each cpu-clock event, in the order opened, then for
    /// each CPU's output event of the BPF stack copier (whose lost copies lost their samples).
    pub lost_reported_by_events_per_cpu: Vec<(u32, u64)>,
    /// Number of THROTTLE records.
    pub throttled: u64,
    /// Requested frequency in Hz.
    pub frequency: u64,
    /// Bytes of user stack requested with each sample (0: no copies).
    pub user_stack_bytes: u32,
    /// The callchain depth limit asked of the kernel (`sample_max_stack`).
    pub max_stack: u16,
    /// Whether the events asked for build-ids in their MMAP2 records (they do when they
    /// follow tasks, not when CPU-wide). A record of events that did not ask has a device and
    /// inode, whatever its build-id flag says: another session's event can set that flag on
    /// the header the kernel shares between sessions.
    pub mmap_build_ids: bool,
    /// CLOCK_MONOTONIC ns when the events were set up.
    pub start_time: u64,
    /// CLOCK_REALTIME ns at the same moment as `start_time`, to convert times to wall-clock.
    pub start_realtime: u64,
    /// CLOCK_MONOTONIC ns when draining ended.
    pub end_time: u64,
    /// Whether the run ended through the stop flag or the duration rather than by the process
    /// tree going away.
    pub stopped: bool,
    /// The launched command's exit, if it was launched and ended.
    pub child: Option<ChildExit>,
    /// Records the parser did not understand (counted, not kept).
    pub unparsed_records: u64,
    /// Page faults, context switches and CPU migrations, one per occurrence.
    pub counter_events: Vec<CounterEvent>,
    /// The latest /proc reading of each process seen alive during the run, by (pid, start).
    pub proc_readings: Vec<ProcReading>,
    /// Taskstats exit records of every task that exited during the run (root only).
    pub task_exits: Vec<TaskExit>,
    /// Why taskstats exit records were not received (None when they were): counters then
    /// come from /proc polling and miss processes that lived less than one poll interval.
    pub taskstats_refused: Option<String>,
    /// Times the taskstats socket overflowed, losing exit records.
    pub taskstats_overflows: u64,
    /// Things the user should know about how the run sampled, as sentences (a callchain limit
    /// that could not be raised, say).
    pub notes: Vec<String>,
    /// The tracepoints opened, in the order asked for.
    pub tracepoints: Vec<TracepointInfo>,
    /// Tracepoint records not yet passed on.
    pub traces: Vec<TraceSample>,
    /// The sample identifiers of the counting events, and what they count.
    pub(crate) counter_ids: Vec<(u64, CounterKind)>,
    /// The sample identifiers of the tracepoint events, and their index in `tracepoints`.
    pub(crate) trace_ids: Vec<(u64, u32)>,
    /// Where each followed process's main thread began its stack, from /proc: what of that
    /// thread's stack copies can hold frames.
    pub(crate) stack_starts: FxHashMap<u32, StackStart>,
    /// The thread descriptors found in other threads' stack copies, by thread id.
    pub(crate) thread_descriptors: ThreadDescriptors,
    /// The sample identifiers of the events the stack-copying BPF program writes through
    /// (one per CPU); empty when the kernel copies the stacks.
    pub(crate) copy_ids: Vec<u64>,
    /// Whether the cpu-clock samples come without the user part of their callchain (the
    /// BPF copier's runs at full copy size), which is then walked over their stack copies: no
    /// frame-pointer chain goes past a copy.
    pub user_chains_from_copies: bool,
    /// Each CPU's copy from that program, waiting for its sample.
    pub(crate) pending_copies: FxHashMap<u32, PendingCopy>,
    /// The time of the latest record decoded that carries one: a lost-records notice written
    /// by that program's event carries none (see `sys::bpf_output_attr`).
    pub(crate) last_time: u64,
    /// Where threads' frames end, for that program.
    pub(crate) frame_ends: FrameEnds,
    pub(crate) raw: Vec<u8>,
    pub(crate) frames: Vec<u64>,
    pub(crate) stacks: Vec<u8>,
    /// Empty arenas with the capacity of an earlier round, for [`Recording::release`].
    pub(crate) spare: Arenas,
}

/// A recording's records and the arenas of their frames, stack copies and raw data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Arenas {
    samples: Vec<Sample>,
    traces: Vec<TraceSample>,
    frames: Vec<u64>,
    stacks: Vec<u8>,
    raw: Vec<u8>,
    /// The order of a round's records ([`Recording::order`]).
    order: Vec<(u64, u8, usize)>,
}

/// A record of a [`Recording`], by its index in its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// `side_band[i]`.
    Side(usize),
    /// `counter_events[i]`.
    Counter(usize),
    /// `samples[i]`.
    Sample(usize),
    /// `traces[i]`.
    Trace(usize),
}

impl Event {
    fn of(kind: u8, i: usize) -> Event {
        match kind {
            0 => Event::Side(i),
            1 => Event::Counter(i),
            2 => Event::Sample(i),
            _ => Event::Trace(i),
        }
    }
}

impl Recording {
    /// The records of time at most `upto`, in time order (the rings of different CPUs deliver
    /// them out of order); at equal times side-band records come first, so a sample finds the
    /// mappings made at its moment. Into `order`, whose capacity is kept from round to round
    /// (collected anew through a filter, it grew by reallocation: 3% of pkgmon's own time at
    /// 10 kHz).
    fn order(&self, upto: u64, order: &mut Vec<(u64, u8, usize)>) {
        order.clear();
        order.reserve(
            self.side_band.len()
                + self.counter_events.len()
                + self.samples.len()
                + self.traces.len(),
        );
        let records = self
            .side_band
            .iter()
            .enumerate()
            .map(|(i, r)| (r.time, 0, i))
            .chain(
                self.counter_events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (e.time, 1, i)),
            )
            .chain(self.samples.iter().enumerate().map(|(i, s)| (s.time, 2, i)))
            .chain(
                self.traces
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (t.sample.time, 3, i)),
            )
            .filter(|&(t, _, _)| t <= upto);
        order.extend(records);
        // Each CPU's records come in time order, one run per ring drained: the stable sort
        // merges such runs (the keys are distinct, so the order is the unstable sort's).
        order.sort();
    }

    /// Every record with its time, in time order.
    pub(crate) fn in_order(&self) -> impl Iterator<Item = (u64, Event)> + use<> {
        let mut order = Vec::new();
        self.order(u64::MAX, &mut order);
        order
            .into_iter()
            .map(|(t, kind, i)| (t, Event::of(kind, i)))
    }

    /// Hands `f` every record of time at most `upto`, in time order, then removes them (and
    /// their frames and stack copies), keeping the later ones: how a streaming run passes
    /// records on once no earlier one can still arrive.
    pub(crate) fn release(&mut self, upto: u64, mut f: impl FnMut(&Recording, Event)) {
        let mut order = std::mem::take(&mut self.spare.order);
        self.order(upto, &mut order);
        if order.is_empty() {
            self.spare.order = order;
            return;
        }
        for (j, &(_, kind, i)) in order.iter().enumerate() {
            match order
                .get(j + PREFETCH_AHEAD)
                .map(|&(_, k, i)| Event::of(k, i))
            {
                Some(Event::Sample(n)) => prefetch(self.user_stack(&self.samples[n])),
                Some(Event::Trace(n)) => prefetch(self.user_stack(&self.traces[n].sample)),
                _ => {}
            }
            f(self, Event::of(kind, i));
        }
        self.side_band.retain(|r| r.time > upto);
        self.counter_events.retain(|e| e.time > upto);
        // The records kept move to the spare arenas, which become the current ones; the old
        // ones, emptied, are the next round's spares. Arenas keep their capacity from round to
        // round instead of growing again from empty (reallocation copied each sample's stack
        // copy several times more: a third of the collector's memmove at 10 kHz).
        let spare = std::mem::take(&mut self.spare);
        let mut samples = std::mem::replace(&mut self.samples, spare.samples);
        let mut traces = std::mem::replace(&mut self.traces, spare.traces);
        let mut frames = std::mem::replace(&mut self.frames, spare.frames);
        let mut stacks = std::mem::replace(&mut self.stacks, spare.stacks);
        let mut raw = std::mem::replace(&mut self.raw, spare.raw);
        for s in samples.drain(..).filter(|s| s.time > upto) {
            let s = self.keep(s, &frames, &stacks);
            self.samples.push(s);
        }
        for t in traces.drain(..).filter(|t| t.sample.time > upto) {
            let r0 = self.raw.len() as u32;
            self.raw
                .extend_from_slice(&raw[t.raw.start as usize..t.raw.end as usize]);
            let sample = self.keep(t.sample, &frames, &stacks);
            self.traces.push(TraceSample {
                event: t.event,
                sample,
                raw: r0..self.raw.len() as u32,
            });
        }
        frames.clear();
        stacks.clear();
        raw.clear();
        order.clear();
        self.spare = Arenas {
            samples,
            traces,
            frames,
            stacks,
            raw,
            order,
        };
    }

    /// Copies the frames and stack copy of `s` from the old arenas into the current ones.
    fn keep(&mut self, s: Sample, frames: &[u64], stacks: &[u8]) -> Sample {
        let k0 = self.frames.len() as u32;
        self.frames
            .extend_from_slice(&frames[s.kernel.start as usize..s.kernel.end as usize]);
        let u0 = self.frames.len() as u32;
        self.frames
            .extend_from_slice(&frames[s.user.start as usize..s.user.end as usize]);
        let s0 = self.stacks.len() as u32;
        self.stacks
            .extend_from_slice(&stacks[s.stack.start as usize..s.stack.end as usize]);
        Sample {
            kernel: k0..u0,
            user: u0..self.frames.len() as u32,
            stack: s0..self.stacks.len() as u32,
            ..s
        }
    }

    /// The raw data of tracepoint record `t`; decode it with its tracepoint's format
    /// (`self.tracepoints[t.event].format.decode(..)`).
    pub fn raw(&self, t: &TraceSample) -> &[u8] {
        &self.raw[t.raw.start as usize..t.raw.end as usize]
    }

    /// The best count of lost samples: per CPU, the larger of its LOST records' sum and its
    /// events' own `PERF_FORMAT_LOST` counters (LOST records miss drops the kernel never
    /// reported, e.g. when no sample fits the ring at all), summed; at least the events' total.
    pub fn lost_samples(&self) -> u64 {
        let per_cpu: u64 = self.lost_samples_by_cpu().values().sum();
        per_cpu.max(self.lost).max(self.lost_reported_by_events)
    }

    /// Lost samples per CPU, for the CPUs that lost any: each ring buffer is one CPU's, and a
    /// LOST record says which CPU's ring was full (its `sample_id` cpu) but not whose samples
    /// were dropped, since every profiled task that ran on that CPU writes into that ring.
    /// Losses can therefore be attributed to CPUs, never to processes.
    pub fn lost_samples_by_cpu(&self) -> std::collections::BTreeMap<u32, u64> {
        let records = &self.lost_per_cpu;
        let mut events = std::collections::BTreeMap::new();
        for &(cpu, n) in &self.lost_reported_by_events_per_cpu {
            *events.entry(cpu).or_insert(0u64) += n;
        }
        let mut out = records.clone();
        for (cpu, n) in events {
            let e = out.entry(cpu).or_insert(0);
            *e = (*e).max(n);
        }
        out.retain(|_, n| *n > 0);
        out
    }

    /// Kernel callchain of `s`, innermost first (the sample IP when in the kernel).
    pub fn kernel_chain(&self, s: &Sample) -> &[u64] {
        &self.frames[s.kernel.start as usize..s.kernel.end as usize]
    }

    /// User callchain of `s` from frame pointers, innermost first (user IP at entry).
    pub fn user_chain(&self, s: &Sample) -> &[u64] {
        &self.frames[s.user.start as usize..s.user.end as usize]
    }

    /// The valid part of the user stack copy of `s`, starting at `regs.sp`.
    pub fn user_stack(&self, s: &Sample) -> &[u8] {
        &self.stacks[s.stack.start as usize..s.stack.end as usize]
    }

    /// Adds a sample from its parts (used by the parser and by tests building recordings).
    #[allow(clippy::too_many_arguments)]
    pub fn push_sample(
        &mut self,
        time: u64,
        pid: u32,
        tid: u32,
        cpu: u32,
        period: u64,
        ip: u64,
        user_mode: bool,
        regs: Option<UserRegs>,
        kernel: &[u64],
        user: &[u64],
        stack: &[u8],
    ) {
        let k0 = self.frames.len() as u32;
        self.frames.extend_from_slice(kernel);
        let u0 = self.frames.len() as u32;
        self.frames.extend_from_slice(user);
        let u1 = self.frames.len() as u32;
        let s0 = self.stacks.len() as u32;
        self.stacks.extend_from_slice(stack);
        let s1 = self.stacks.len() as u32;
        self.sample_count += 1;
        self.samples.push(Sample {
            time,
            pid,
            tid,
            cpu,
            period,
            ip,
            user_mode,
            regs,
            copy_end: CopyEnd::Short,
            chain_limited: false,
            kernel: k0..u0,
            user: u0..u1,
            stack: s0..s1,
        });
    }

    /// Parses one raw perf record (as laid out by this crate's attr) into the recording.
    #[cfg(target_os = "linux")]
    pub(crate) fn push_raw(&mut self, rec: &[u8]) {
        if decode::parse::record(self, rec).is_none() {
            self.unparsed_records += 1;
        }
    }

    /// Parses one raw perf record as the sampler's rings deliver it (header first), as this
    /// crate's events lay them out; returns false (and counts it in `unparsed_records`) if it
    /// is not one. For tests and fuzzing of recorded data.
    #[cfg(target_os = "linux")]
    pub fn push_record(&mut self, rec: &[u8]) -> bool {
        let before = self.unparsed_records;
        self.push_raw(rec);
        self.unparsed_records == before
    }

    /// Declares a tracepoint whose records carry the sample identifier `id`, with the parts
    /// its events were opened with, as the sampler does when it opens one; returns its index
    /// in [`Recording::tracepoints`]. For tests and fuzzing of recorded data.
    pub fn add_tracepoint(
        &mut self,
        format: crate::tracepoint::EventFormat,
        id: u64,
        kernel_chain: bool,
        user_chain: bool,
        user_stack_bytes: u32,
    ) -> u32 {
        let index = self.tracepoints.len() as u32;
        self.tracepoints.push(TracepointInfo {
            format,
            filter: None,
            kernel_chain,
            user_chain,
            user_stack_bytes,
            counted: None,
            received: 0,
            sample_type: crate::tracepoint::sample_type(kernel_chain, user_chain, user_stack_bytes),
        });
        self.trace_ids.push((id, index));
        index
    }
}

/// How many records ahead of the one handed on a sample's stack copy is fetched into the
/// cache: the copies were written a round earlier, and the unwinder's reads of return
/// addresses, each waiting for the one before, missed the cache (four fifths of framehop's
/// time at 10 kHz; with the prefetch pkgmon took 73 ms of CPU over 8 s of it, 92 before).
const PREFETCH_AHEAD: usize = 2;

/// Asks the CPU to bring the first 16 KiB of `bytes` into its cache.
fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64).take(256) {
        // Safety: a prefetch only hints the cache, and the address lies in a live slice.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(target_os = "linux")]
mod decode;
mod live_stack;

pub(crate) use live_stack::{CHAIN_RECORD, COPY_HEADER, CopierEnd, SAMPLE_TRAILER, WHOLE_SAMPLE};
pub(crate) use live_stack::{FrameEnds, PendingCopy, StackStart, ThreadDescriptors, word_at};

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::sys::*;

    /// Tiny builder for hand-made perf records.
    #[derive(Default)]
    struct B(Vec<u8>);

    impl B {
        fn u64(mut self, v: u64) -> Self {
            self.0.extend_from_slice(&v.to_ne_bytes());
            self
        }
        fn u32(mut self, v: u32) -> Self {
            self.0.extend_from_slice(&v.to_ne_bytes());
            self
        }
        fn bytes(mut self, v: &[u8]) -> Self {
            self.0.extend_from_slice(v);
            self
        }
        /// Appends the sample_id_all trailer and returns the record with its header.
        fn finish(self, ty: u32, misc: u16, trailer: bool) -> Vec<u8> {
            let mut body = self;
            if trailer {
                body = body.u32(7).u32(8).u64(12345).u32(1).u32(0).u64(99);
            }
            let len = (body.0.len() + 8) as u16;
            let mut out = Vec::new();
            out.extend_from_slice(&ty.to_ne_bytes());
            out.extend_from_slice(&misc.to_ne_bytes());
            out.extend_from_slice(&len.to_ne_bytes());
            out.extend_from_slice(&body.0);
            out
        }
    }

    #[test]
    fn sample_fields_and_chains_are_split_at_the_context_markers() {
        let rec = B::default()
            .u64(99) // identifier
            .u64(0xffff_8000_0000_1000) // ip
            .u32(7)
            .u32(8) // pid, tid
            .u64(555) // time
            .u32(1)
            .u32(0) // cpu
            .u64(1_000_000) // period
            .u64(5)
            .u64(CONTEXT_KERNEL)
            .u64(0xffff_8000_0000_1000)
            .u64(0xffff_8000_0000_2000)
            .u64(CONTEXT_USER)
            .u64(0x401000)
            .u64(2) // abi
            .u64(0x5555)
            .u64(0x7ffe_0010)
            .u64(0x7ffe_0000)
            .u64(0x401000) // bx, bp, sp, ip
            .u64(16)
            .bytes(&[1; 16])
            .u64(8) // stack: size, data, dyn_size
            .finish(RECORD_SAMPLE, 1, false);
        let mut r = Recording::default();
        r.push_raw(&rec);
        assert_eq!(r.unparsed_records, 0);
        let s = &r.samples[0];
        assert_eq!(
            (s.pid, s.tid, s.time, s.cpu, s.period),
            (7, 8, 555, 1, 1_000_000)
        );
        assert!(!s.user_mode);
        assert_eq!(
            r.kernel_chain(s),
            &[0xffff_8000_0000_1000, 0xffff_8000_0000_2000]
        );
        assert_eq!(r.user_chain(s), &[0x401000]);
        assert_eq!(
            s.regs,
            Some(UserRegs {
                ip: 0x401000,
                sp: 0x7ffe_0000,
                bp: 0x7ffe_0010,
                bx: Some(0x5555),
            })
        );
        assert_eq!(r.user_stack(s), &[1; 8]);
    }

    /// A record of the BPF copier (identifier 3) on CPU 1: `code` (a copy's end, or
    /// [`CHAIN_RECORD`]), the stack pointer and the bytes.
    fn copier_record(code: u32, sp: u64, body: &[u8]) -> Vec<u8> {
        B::default()
            .u64(3)
            .u32(1)
            .u32(0)
            .u32(16 + body.len() as u32)
            .u64(sp)
            .u32(body.len() as u32)
            .u32(code)
            .bytes(body)
            .bytes(&[0; 4])
            .finish(RECORD_SAMPLE, 2, false)
    }

    /// A sample the program writes whole (a user-mode sample's copy with the sample's fields
    /// after it, and no kernel sample) decodes to the sample its copy and the kernel's record
    /// would have given; a whole record cut short of its fields is refused, not guessed.
    #[test]
    fn a_whole_sample_is_the_sample_its_copy_and_the_kernels_record_give() {
        let sp = 0x7ffe_0000u64;
        let mut stack = vec![0u8; 0x60];
        // Two frames by frame pointers, the second's rbp pointing out of the copy.
        for (at, v) in [
            (0x10, sp + 0x40),
            (0x18, 0x402000),
            (0x40, sp + 0x1000),
            (0x48, 0x403000),
        ] {
            stack[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        }
        let (ip, bx, bp) = (0x401000u64, 0x5555u64, sp + 0x10);
        let kernels = B::default()
            .u64(99)
            .u64(ip)
            .u32(7)
            .u32(8)
            .u64(555)
            .u32(1)
            .u32(0)
            .u64(250_000)
            .u64(0)
            .u64(2)
            .u64(bx)
            .u64(bp)
            .u64(sp)
            .u64(ip)
            .finish(RECORD_SAMPLE, 2, false);
        let trailer = B::default()
            .u64(ip)
            .u64(7 << 32 | 8)
            .u64(555)
            .u64(250_000)
            .u64(bx)
            .u64(bp)
            .0;
        let whole = |trailer: &[u8]| {
            B::default()
                .u64(3)
                .u32(1)
                .u32(0)
                .u32((16 + stack.len() + trailer.len()) as u32)
                .u64(sp)
                .u32(stack.len() as u32)
                .u32(CopierEnd::AtFrames as u32 | WHOLE_SAMPLE)
                .bytes(&stack)
                .bytes(trailer)
                .bytes(&[0; 4])
                .finish(RECORD_SAMPLE, 2, false)
        };
        let decode = |records: &[&[u8]]| {
            let mut r = Recording {
                copy_ids: vec![3],
                user_chains_from_copies: true,
                max_stack: 127,
                ..Recording::default()
            };
            for rec in records {
                r.push_raw(rec);
            }
            r
        };
        let pair = decode(&[
            &copier_record(CopierEnd::AtFrames as u32, sp, &stack),
            &kernels,
        ]);
        let one = decode(&[&whole(&trailer)]);
        assert_eq!((pair.unparsed_records, one.unparsed_records), (0, 0));
        assert_eq!((pair.sample_count, one.sample_count), (1, 1));
        let (a, b) = (&pair.samples[0], &one.samples[0]);
        assert_eq!(a, b);
        assert_eq!(one.user_chain(b), &[ip, 0x402000, 0x403000]);
        assert_eq!(pair.user_chain(a), one.user_chain(b));
        assert_eq!(one.user_stack(b), &stack[..]);
        assert_eq!(one.last_time, 555);
        let cut = decode(&[&whole(&trailer[..40])]);
        assert_eq!((cut.unparsed_records, cut.samples.len()), (1, 0));
    }

    /// With the BPF copier the kernel is not asked for the user part of the chain: it is
    /// walked over the copy by frame pointers, as the kernel walks it, while the frames lie in
    /// the copy and the chain, context markers counted, is within `sample_max_stack`.
    #[test]
    fn a_copied_samples_user_chain_is_walked_over_its_copy() {
        let sp = 0x7ffe_0000u64;
        let mut stack = vec![0u8; 0x60];
        // rbp at sp + 0x10: the frame holding sp + 0x40 and its return address 0x402000;
        // there the next frame, pointing out of the copy, with return address 0x403000.
        let mut put = |at: u64, v: u64| {
            let at = (at - sp) as usize;
            stack[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        };
        put(sp + 0x10, sp + 0x40);
        put(sp + 0x18, 0x402000);
        put(sp + 0x40, sp + 0x1000);
        put(sp + 0x48, 0x403000);
        let copy = copier_record(CopierEnd::AtFrames as u32, sp, &stack);
        // In the kernel (`kernel`: its chain) or in user mode (no chain at all).
        let sample = |kernel: &[u64], bp: u64| {
            let mut b = B::default()
                .u64(99)
                .u64(kernel.first().copied().unwrap_or(0x401000))
                .u32(7)
                .u32(8)
                .u64(555)
                .u32(1)
                .u32(0)
                .u64(1_000_000);
            if kernel.is_empty() {
                b = b.u64(0);
            } else {
                b = b.u64(kernel.len() as u64 + 1).u64(CONTEXT_KERNEL);
                for &k in kernel {
                    b = b.u64(k);
                }
            }
            b.u64(2)
                .u64(0)
                .u64(bp)
                .u64(sp)
                .u64(0x401000) // bx, bp, sp, ip
                .finish(RECORD_SAMPLE, if kernel.is_empty() { 2 } else { 1 }, false)
        };
        let chains = |max_stack: u16, kernel: &[u64], bp: u64| {
            let mut r = Recording {
                copy_ids: vec![3],
                user_chains_from_copies: true,
                max_stack,
                ..Recording::default()
            };
            r.push_raw(&copy);
            r.push_raw(&sample(kernel, bp));
            assert_eq!(r.unparsed_records, 0);
            let s = &r.samples[0];
            assert_eq!(r.user_stack(s), &stack[..]);
            let chain = (r.kernel_chain(s).to_vec(), r.user_chain(s).to_vec());
            (chain, s.chain_limited)
        };
        let k = [0xffff_8000_0000_1000, 0xffff_8000_0000_2000];
        assert_eq!(
            chains(127, &[], sp + 0x10),
            ((vec![], vec![0x401000, 0x402000, 0x403000]), false)
        );
        assert_eq!(
            chains(127, &k, sp + 0x10),
            ((k.to_vec(), vec![0x401000, 0x402000, 0x403000]), false)
        );
        // Three kernel entries (marker too), the user marker: room for two.
        assert_eq!(
            chains(6, &k, sp + 0x10),
            ((k.to_vec(), vec![0x401000, 0x402000]), true)
        );
        assert_eq!(chains(3, &k, sp + 0x10), ((k.to_vec(), vec![]), true));
        // An rbp outside the copy (code using it for data): the ip alone.
        assert_eq!(chains(127, &[], 0x1234), ((vec![], vec![0x401000]), false));
        // A frame pointing to itself goes round to the limit, as the kernel's walk would.
        let mut own = copy.clone();
        let at = own.len() - 4 - stack.len() + 0x40;
        own[at..at + 8].copy_from_slice(&(sp + 0x40).to_ne_bytes());
        let mut r = Recording {
            copy_ids: vec![3],
            user_chains_from_copies: true,
            max_stack: 10,
            ..Recording::default()
        };
        r.push_raw(&own);
        r.push_raw(&sample(&[], sp + 0x40));
        let s = &r.samples[0];
        assert_eq!(
            r.user_chain(s),
            [vec![0x401000], vec![0x403000; 8]].concat()
        );
        assert!(s.chain_limited);
    }

    /// A user-mode sample of a run whose copies the BPF program takes, at stack pointer `sp`
    /// (rbp `sp + 0x10`, ip 0x401000): no chain, the kernel being asked for none.
    fn user_mode_sample(sp: u64) -> Vec<u8> {
        B::default()
            .u64(99)
            .u64(0x401000)
            .u32(7)
            .u32(8)
            .u64(555)
            .u32(1)
            .u32(0)
            .u64(1_000_000)
            .u64(0)
            .u64(2)
            .u64(0)
            .u64(sp + 0x10)
            .u64(sp)
            .u64(0x401000) // bx, bp, sp, ip
            .finish(RECORD_SAMPLE, 2, false)
    }

    /// A copy the program stopped at a page it could not read below where the thread's frames
    /// end keeps every byte it holds and says the stack goes on (a page not yet touched); one
    /// stopped at an unreadable page with no end known says nothing of what lies beyond.
    #[test]
    fn a_copy_stopped_below_the_frames_end_says_the_stack_goes_on() {
        let sp = 0x7ffe_0000u64;
        let stack = [7u8; 0x30];
        let sample = user_mode_sample(sp);
        let decoded = |ended: CopierEnd| {
            let mut r = Recording {
                copy_ids: vec![3],
                user_chains_from_copies: true,
                max_stack: 127,
                ..Recording::default()
            };
            r.push_raw(&copier_record(ended as u32, sp, &stack));
            r.push_raw(&sample);
            assert_eq!(r.unparsed_records, 0);
            let s = &r.samples[0];
            (r.user_stack(s).len(), s.copy_end)
        };
        assert_eq!(
            decoded(CopierEnd::BelowFrames),
            (0x30, CopyEnd::BelowFrames)
        );
        assert_eq!(decoded(CopierEnd::Unreadable), (0x30, CopyEnd::Short));
        assert_eq!(decoded(CopierEnd::AtSize), (0x30, CopyEnd::AtSize));
    }

    /// A copy cut at its size is followed by the chain the program walked past it: that is the
    /// sample's user chain (within `sample_max_stack`), not the walk over the copy; a chain of
    /// another stack pointer, or with no copy waiting, is not taken.
    #[test]
    fn a_chain_walked_past_a_copy_cut_at_its_size_is_the_samples() {
        let sp = 0x7ffe_0000u64;
        let copy = copier_record(CopierEnd::AtSize as u32, sp, &[0; 0x40]);
        let walked: Vec<u8> = [0x401000u64, 0x402000, 0x403000, 0x404000]
            .iter()
            .flat_map(|a| a.to_ne_bytes())
            .collect();
        let sample = user_mode_sample(sp);
        let chain = |records: &[&[u8]], max_stack: u16| {
            let mut r = Recording {
                copy_ids: vec![3],
                user_chains_from_copies: true,
                max_stack,
                ..Recording::default()
            };
            for rec in records {
                r.push_raw(rec);
            }
            assert_eq!(r.unparsed_records, 0);
            let s = &r.samples[0];
            (
                r.user_chain(s).to_vec(),
                s.chain_limited,
                s.copy_end == CopyEnd::AtSize,
            )
        };
        let past = copier_record(CHAIN_RECORD, sp, &walked);
        let all = vec![0x401000, 0x402000, 0x403000, 0x404000];
        assert_eq!(chain(&[&copy, &past, &sample], 127), (all, false, true));
        // The user marker and three entries fill a limit of four.
        assert_eq!(
            chain(&[&copy, &past, &sample], 4),
            (vec![0x401000, 0x402000, 0x403000], true, true)
        );
        // Another stack's chain, or one before any copy: the walk over the copy (the ip only,
        // rbp pointing at zeros).
        let other = copier_record(CHAIN_RECORD, sp + 8, &walked);
        let ip_and_zero = vec![0x401000, 0];
        assert_eq!(chain(&[&copy, &other, &sample], 127).0, ip_and_zero);
        assert_eq!(chain(&[&past, &copy, &sample], 127).0, ip_and_zero);
    }

    /// The copier's output event writes its lost-records notices with its own short trailer
    /// (CPU and identifier): counted on that CPU at the time of the record before; a notice
    /// of that shape from another event is not taken.
    #[test]
    fn the_copiers_lost_records_notice_is_counted_on_its_cpu() {
        let notice = |id: u64| {
            B::default()
                .u64(id)
                .u64(5)
                .u32(1)
                .u32(0)
                .u64(id)
                .finish(RECORD_LOST, 0, false)
        };
        let mut r = Recording {
            copy_ids: vec![3],
            ..Recording::default()
        };
        let comm = B::default()
            .u32(7)
            .u32(7)
            .bytes(b"work\0\0\0\0")
            .finish(RECORD_COMM, 0, true);
        assert!(r.push_record(&comm));
        assert!(r.push_record(&notice(3)));
        assert_eq!((r.lost, r.lost_per_cpu.get(&1)), (5, Some(&5)));
        let lost = r.side_band.last().expect("the notice");
        assert_eq!((lost.time, lost.cpu), (12345, 1));
        assert_eq!(lost.kind, SideBand::Lost { count: 5 });
        assert!(!r.push_record(&notice(4)));
        assert_eq!(r.lost, 5);
    }

    /// A cpu-clock sample of pid 7 (thread `tid`) at time 555 whose stack copy, taken at sp
    /// 0x7ffe_0000, is `stack`, of which the kernel copied `dyn_size` bytes.
    fn sample_with_stack(tid: u32, stack: &[u8], dyn_size: u64) -> Vec<u8> {
        B::default()
            .u64(99)
            .u64(0x401000)
            .u32(7)
            .u32(tid)
            .u64(555)
            .u32(1)
            .u32(0)
            .u64(1_000_000)
            .u64(2)
            .u64(CONTEXT_USER)
            .u64(0x401000)
            .u64(2)
            .u64(0)
            .u64(0)
            .u64(0x7ffe_0000)
            .u64(0x401000) // bx, bp, sp, ip
            .u64(stack.len() as u64)
            .bytes(stack)
            .u64(dyn_size)
            .finish(RECORD_SAMPLE, 2, false)
    }

    /// A main thread's copy is kept up to its `argc` and `argv`, where exec started the stack;
    /// what lies above (environment, auxiliary vector, strings) is dropped, unless the reading that said
    /// where the stack starts is newer than the sample, the thread is not the main one, or
    /// the words there are not an `argc` and its `argv`.
    #[test]
    fn a_main_threads_copy_ends_at_the_stack_exec_made() {
        let (sp, start) = (0x7ffe_0000u64, 0x7ffe_0040u64);
        let mut stack = vec![0xaau8; 0x40]; // frames
        for w in [2, start + 0x80, start + 0x90, 0, start + 0xa0, 0] {
            stack.extend_from_slice(&u64::to_ne_bytes(w)); // argc, argv, NULL, envp, NULL
        }
        stack.resize(0x200, b'x'); // the strings
        let kept = |tid, since, stack: &[u8]| {
            let mut r = Recording::default();
            r.stack_starts.insert(7, StackStart { start, since });
            r.push_raw(&sample_with_stack(tid, stack, stack.len() as u64 - 8));
            assert_eq!(r.unparsed_records, 0);
            let s = &r.samples[0];
            (r.user_stack(s).len(), s.copy_end == CopyEnd::AtSize)
        };
        assert_eq!(start - sp, 0x40);
        assert_eq!(kept(7, 555, &stack), (0x60, false));
        // Another thread, a reading after the sample: all of the copy.
        assert_eq!(kept(8, 555, &stack), (0x1f8, false));
        assert_eq!(kept(7, 556, &stack), (0x1f8, false));
        // A copy cut by its size keeps saying so when nothing is dropped.
        let mut r = Recording::default();
        r.push_raw(&sample_with_stack(7, &stack, 0x200));
        assert_eq!(r.samples[0].copy_end, CopyEnd::AtSize);
        // No argv's NULL where argc says, a first argument below the start, a copy short of
        // the start: another image's stack, kept whole.
        let mut other = stack.clone();
        other[0x40] = 3;
        assert_eq!(kept(7, 0, &other), (0x1f8, false));
        let mut other = stack.clone();
        other[0x48..0x50].copy_from_slice(&u64::to_ne_bytes(start - 0x10));
        assert_eq!(kept(7, 0, &other), (0x1f8, false));
        assert_eq!(kept(7, 0, &stack[..0x44]), (0x3c, false));
        // An exec forgets the start until /proc is read again.
        let mut r = Recording::default();
        r.stack_starts.insert(7, StackStart { start, since: 0 });
        let comm = B::default().u32(7).u32(7).bytes(b"x\0\0\0\0\0\0\0");
        r.push_raw(&comm.finish(RECORD_COMM, MISC_COMM_EXEC, true));
        r.push_raw(&sample_with_stack(7, &stack, 0x1f8));
        assert_eq!(r.user_stack(&r.samples[0]).len(), 0x1f8);
    }

    /// Events that did not ask for build-ids get a device and inode in their MMAP2 records,
    /// even under the build-id flag that another session's event set on the shared header.
    #[test]
    fn a_build_id_flag_our_events_did_not_ask_for_is_ignored() {
        // maj 0, min 0x3c831, ino 0x5, ino_generation 0xfe: what the kernel wrote.
        let body = B::default().u32(0).u32(0x3c831).u64(5).u64(0xfe).0;
        let mmap = B::default()
            .u32(7)
            .u32(7)
            .u64(0x400000)
            .u64(0x1000)
            .u64(0)
            .bytes(&body)
            .u32(5)
            .u32(2)
            .bytes(b"/bin/x\0\0")
            .finish(RECORD_MMAP2, MISC_MMAP_BUILD_ID, true);
        for asked in [false, true] {
            let mut r = Recording {
                mmap_build_ids: asked,
                ..Recording::default()
            };
            r.push_raw(&mmap);
            let SideBand::Mmap { build_id, .. } = &r.side_band[0].kind else {
                panic!("not a mapping: {:?}", r.side_band[0].kind);
            };
            // Had the events asked, the kernel would have written a build-id there.
            let expected = asked.then(Vec::new);
            assert_eq!(build_id, &expected, "asked: {asked}");
        }
    }

    #[test]
    fn side_band_records_take_time_and_cpu_from_the_trailer() {
        let mut build_id = [0u8; 24];
        build_id[0] = 20;
        build_id[4..24].copy_from_slice(&[0xab; 20]);
        let mmap = B::default()
            .u32(7)
            .u32(7)
            .u64(0x400000)
            .u64(0x1000)
            .u64(0)
            .bytes(&build_id)
            .u32(5)
            .u32(2)
            .bytes(b"/bin/x\0\0")
            .finish(RECORD_MMAP2, MISC_MMAP_BUILD_ID, true);
        let comm = B::default().u32(7).u32(7).bytes(b"x\0\0\0\0\0\0\0").finish(
            RECORD_COMM,
            MISC_COMM_EXEC,
            true,
        );
        let lost = B::default().u64(99).u64(42).finish(RECORD_LOST, 0, true);
        let mut r = Recording {
            mmap_build_ids: true,
            ..Recording::default()
        };
        for rec in [&mmap, &comm, &lost] {
            r.push_raw(rec);
        }
        assert_eq!(r.unparsed_records, 0);
        assert_eq!(r.lost, 42);
        assert!(r.side_band.iter().all(|s| s.time == 12345 && s.cpu == 1));
        assert_eq!(
            r.side_band[0].kind,
            SideBand::Mmap {
                pid: 7,
                tid: 7,
                addr: 0x400000,
                len: 0x1000,
                pgoff: 0,
                build_id: Some(vec![0xab; 20]),
                prot: 5,
                flags: 2,
                filename: "/bin/x".into()
            }
        );
        assert_eq!(
            r.side_band[1].kind,
            SideBand::Comm {
                pid: 7,
                tid: 7,
                comm: "x".into(),
                exec: true
            }
        );
    }
}
