//! Per-system-call latencies and blocking (OSprof, DeBox), built from tracepoint records fed in
//! time order: `raw_syscalls` entries and exits paired per thread, page faults counted into
//! the call they interrupt, and with blocking `sched_switch` (where a call blocked),
//! `PERF_RECORD_SWITCH` (when it left and got back the CPU) and `sched_waking` (who woke it:
//! a perf event's records, or the BPF programs' wake-ups of [`crate::bpf::Wakers`], read
//! ahead and matched at the thread's switch back in).
//!
//! Nothing is hidden: calls entered and never left, exits without an entry, and calls during
//! which the kernel dropped records are counted and written, beside OSprof's checksums (the
//! records received against counting-mode twins).
//!
//! Longer than 800 lines only by its unit tests (the last 260 lines, records built as the
//! kernel writes them); the code is about 730 lines.

use std::collections::{BTreeMap, HashMap, VecDeque};

use gmon_format::latency::{Blocking, BucketCount, LatencyFile, Operation, SleepSite, Waker};
use latency::Resolution;

use crate::config::TracepointRequest;
use crate::recording::{Recording, TracepointInfo};
use crate::tracefs::Tracefs;

/// Latency and blocking collection (`pkgmon --latency`, `--blocking`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatencyOptions {
    /// Buckets per power of two (1 to 64). Default is 1.
    pub resolution: u32,
    /// Keep buckets per time slice of this many ns (OSprof's profile sampling). Default is
    /// None.
    pub slice_ns: Option<u64>,
    /// Record where and how long calls blocked, and who woke them (DeBox). Default is false.
    pub blocking: bool,
    /// User frames kept of each call site (the system-call wrapper's pc, its caller, …).
    /// Default is 3.
    pub site_frames: usize,
    /// Bytes of user stack copied at each system-call entry to unwind its call site (the
    /// wrapper in libc has no frame pointer: its caller is found from `.eh_frame` on this
    /// copy). 0 keeps only the frame-pointer chain. Default is 1024.
    pub stack_bytes: u32,
    /// Kernel frames kept of each sleep site and waker. Default is 8.
    pub kernel_frames: usize,
    /// On the in-kernel path, count each followed task's entries and exits a second time
    /// with counting-mode perf events, as OSprof's independent checksums. They put the
    /// tracepoints' perf path back on every call (~230 ns a call on the 2-core test machine,
    /// as much as the programs' own work), so by default the programs' own counts are
    /// checked against what they accounted for instead. The ring path always has them.
    /// Default is false.
    pub counting_events: bool,
    /// With `blocking`, the wakers come from BPF programs ([`crate::bpf::Wakers`], handed to
    /// the aggregator with [`crate::Aggregator::kernel_wakers`]), which see the wake-ups
    /// fired in the idle task with their frames: `sched_waking` is then not recorded
    /// through perf. Default is false.
    pub kernel_wakers: bool,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            resolution: 1,
            slice_ns: None,
            blocking: false,
            site_frames: 3,
            stack_bytes: 1024,
            kernel_frames: 8,
            counting_events: false,
            kernel_wakers: false,
        }
    }
}

/// What each tracepoint of a run is to the latency collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Enter,
    Exit,
    Switch,
    Waking,
    Other,
}

impl Kind {
    fn of(name: &str) -> Kind {
        match name {
            "raw_syscalls:sys_enter" => Kind::Enter,
            "raw_syscalls:sys_exit" => Kind::Exit,
            "sched:sched_switch" => Kind::Switch,
            "sched:sched_waking" => Kind::Waking,
            _ => Kind::Other,
        }
    }
}

/// The value `sched_switch` reports as `prev_state` for a preempted task (`TASK_REPORT_MAX`,
/// printed `R+`), read from the print format: the mask tested before `? "+"`.
pub(crate) fn preempt_marker(print_fmt: &str) -> Option<u64> {
    let end = print_fmt.find("? \"+\"")?;
    let head = &print_fmt[..end];
    let start = head.rfind("REC->prev_state &")? + "REC->prev_state &".len();
    crate::tracepoint::const_expr(&head[start..])
}

impl LatencyOptions {
    /// The tracepoints to record for these options, with their kernel-side filters; reads
    /// `sched_switch`'s format (mounting tracefs if needed) to filter voluntary switches.
    ///
    /// Returns an error saying what to do if tracefs or an event cannot be read.
    pub fn tracepoints(&self) -> crate::Result<Vec<TracepointRequest>> {
        let mut enter = TracepointRequest::new("raw_syscalls", "sys_enter");
        enter.user_chain = true;
        enter.user_stack_bytes = self.stack_bytes.next_multiple_of(8);
        enter.count = true;
        let mut exit = TracepointRequest::new("raw_syscalls", "sys_exit");
        exit.count = true;
        let mut out = vec![enter, exit];
        if self.blocking {
            let fmt = Tracefs::find_or_mount()?.event("sched", "sched_switch")?;
            let mut switch = TracepointRequest::new("sched", "sched_switch");
            switch.kernel_chain = true;
            // Voluntary switches only: not running (0), not preempted. Without the marker,
            // preempted switches pass and are told apart by their SWITCH record.
            switch.filter = Some(match preempt_marker(&fmt.print_fmt) {
                Some(m) => format!("prev_state != 0 && prev_state != {m}"),
                None => "prev_state != 0".into(),
            });
            switch.count = true;
            out.push(switch);
            if self.kernel_wakers {
                return Ok(out);
            }
            let mut waking = TracepointRequest::new("sched", "sched_waking");
            waking.kernel_chain = true;
            waking.all_tasks = true;
            // The twin counts the wake-ups the kernel fires but does not sample: it takes no
            // tracepoint sample in the idle task, so an interrupt that wakes a sleeper on an
            // idle CPU is counted only (see `idle_wakeups`).
            waking.count = true;
            out.push(waking);
        }
        Ok(out)
    }
}

/// A waker: its pid and kernel frames.
type WakerKey = (u32, Vec<u64>);

/// Where a call slept and who woke it: site frames, waker if seen.
type SleepKey = (Vec<u64>, Option<WakerKey>);

/// One call of one operation: what it gathered while it ran.
#[derive(Debug, Default)]
struct OpenCall {
    nr: u64,
    enter: u64,
    key: (usize, usize),
    site: Vec<u64>,
    faults: u64,
    blocked: u64,
    runnable: u64,
    /// Its sleeps merged by site and waker, (count, blocked ns): a call that sleeps a
    /// million times at one site holds one entry, not a million.
    sleeps: HashMap<SleepKey, (u64, u64)>,
    /// Records were lost while it ran: its numbers may be wrong, so it is dropped.
    tainted: bool,
}

#[derive(Debug)]
struct OffCpu {
    since: u64,
    /// Blocked, with the sleep site (kernel frames), else runnable.
    sleep: Option<Vec<u64>>,
    waker: Option<WakerKey>,
}

#[derive(Debug, Default)]
struct ThreadState {
    call: Option<OpenCall>,
    off: Option<OffCpu>,
    /// The chain of the last voluntary `sched_switch`, until its SWITCH-out record.
    pending_sleep: Option<Vec<u64>>,
    /// The last wake-up while it ran in its call since its last switch in: the waker of the
    /// sleep it then switches out for, when an interrupt on another CPU woke the sleeper
    /// while it was still leaving its own (off its run queue, before its switch-out).
    early_waker: Option<WakerKey>,
}

/// Sums of one operation (system call, call site) of one process image.
#[derive(Debug, Default)]
struct OpAcc {
    calls: u64,
    total: u64,
    min: u64,
    max: u64,
    faults: u64,
    buckets: BTreeMap<(u64, u32), (u64, u64)>,
    blocked: u64,
    runnable: u64,
    sleeps: u64,
    sites: HashMap<Vec<u64>, (u64, u64)>,
    wakers: HashMap<WakerKey, (u64, u64)>,
    /// Sleeps whose wake-up was not sampled, (count, blocked ns).
    unseen: (u64, u64),
}

/// Per process image: its operations and its unpaired calls.
#[derive(Debug, Default)]
pub(crate) struct ImageLatency {
    ops: HashMap<(u64, Vec<u64>), OpAcc>,
    unpaired_enters: u64,
    unpaired_exits: u64,
    dropped: u64,
}

/// The latency collection's state while records come.
#[derive(Debug)]
pub(crate) struct SyscallTracer {
    opts: LatencyOptions,
    resolution: Resolution,
    kinds: Vec<Kind>,
    threads: HashMap<u32, ThreadState>,
    pub(crate) images: HashMap<(usize, usize), ImageLatency>,
    /// When the run began: slice 0 starts here.
    pub(crate) start: u64,
    /// Sleeps of counted calls whose wake-up was not sampled, over the whole run.
    unseen: u64,
    /// Set when the calls were counted in the kernel ([`crate::bpf::SyscallLatency`]).
    kernel: Option<KernelRun>,
    /// The wakers seen in the kernel ([`LatencyOptions::kernel_wakers`]), until the end.
    wakers: Option<crate::bpf::Wakers>,
    /// Their wake-ups not yet matched, per woken thread, in time order: the ring is read
    /// ahead of the perf records, so a wake-up waits here for its thread's switch back in.
    wakeups: HashMap<u32, VecDeque<(u64, WakerKey)>>,
    /// Wake-ups the kernel had no room for in the wakers' ring.
    wakers_lost: u64,
}

/// What a run counted in the kernel adds to each file: its checksums, the calls that did not
/// fit its maps (run-wide, like lost records), and where slice 0 began.
#[derive(Debug)]
pub(crate) struct KernelRun {
    pub checks: Vec<gmon_format::latency::EventCheck>,
    pub dropped: u64,
    pub start: u64,
}

/// A record for the tracer, with what the aggregator knows of it.
pub(crate) enum Input<'a> {
    /// A system call entered: number, its process image, the unwound user frames.
    Enter {
        nr: u64,
        key: (usize, usize),
        frames: &'a [u64],
    },
    /// A system call returned; `key` is the image to blame if it was never entered.
    Exit { nr: u64, key: (usize, usize) },
    /// The thread switched out voluntarily, in the kernel at `chain`.
    Blocked { chain: &'a [u64] },
    /// The thread left the CPU.
    Out { preempted: bool },
    /// The thread got the CPU back.
    In,
    /// Thread `tid` (this record's thread is the waker, `pid` its process) was woken.
    Waking { waker_pid: u32, chain: &'a [u64] },
    /// A page fault.
    Fault,
}

impl SyscallTracer {
    pub(crate) fn new(opts: LatencyOptions) -> SyscallTracer {
        let resolution = Resolution::new(opts.resolution).unwrap_or(Resolution::ONE);
        SyscallTracer {
            opts,
            resolution,
            kinds: Vec::new(),
            threads: HashMap::new(),
            images: HashMap::new(),
            start: 0,
            unseen: 0,
            kernel: None,
            wakers: None,
            wakeups: HashMap::new(),
            wakers_lost: 0,
        }
    }

    /// The operation of image `key` that kernel counts of `nr` from `site` go to: the site
    /// kept to the frames asked for.
    fn counted_op(&mut self, key: (usize, usize), nr: u64, mut site: Vec<u64>) -> &mut OpAcc {
        site.truncate(self.opts.site_frames.max(1));
        self.images
            .entry(key)
            .or_default()
            .ops
            .entry((nr, site))
            .or_default()
    }

    /// Calls counted in the kernel: `n` calls of `nr` from `site` in image `key`, in
    /// (`slice`, `bucket`), with their sums; the site keeps the frames asked for.
    pub(crate) fn add_counted(
        &mut self,
        key: (usize, usize),
        (nr, site, slice, bucket): (u64, Vec<u64>, u64, u32),
        c: &crate::bpf::Counted,
    ) {
        let op = self.counted_op(key, nr, site);
        op.min = if op.calls == 0 {
            c.min
        } else {
            op.min.min(c.min)
        };
        op.calls += c.count;
        op.total = op.total.saturating_add(c.total);
        op.max = op.max.max(c.max);
        op.faults += c.faults;
        let b = op.buckets.entry((slice, bucket)).or_default();
        b.0 += c.count;
        b.1 = b.1.saturating_add(c.total);
    }

    /// `n` times, `ns` in all, calls of operation `op` of image `key` were off the CPU
    /// (`off`), as counted in the kernel: blocked at a sleep site and woken by `waker` (None
    /// if its wake-up was not seen), or runnable.
    pub(crate) fn add_kernel_sleeps(
        &mut self,
        key: (usize, usize),
        (nr, site): (u64, Vec<u64>),
        off: crate::bpf::OffCpu,
        waker: Option<crate::bpf::KernelWaker>,
        n: u64,
        ns: u64,
    ) {
        let op = self.counted_op(key, nr, site);
        let site = match off {
            crate::bpf::OffCpu::Runnable => {
                op.runnable = op.runnable.saturating_add(ns);
                return;
            }
            crate::bpf::OffCpu::Blocked(site) => site,
        };
        op.blocked = op.blocked.saturating_add(ns);
        op.sleeps += n;
        let s = op.sites.entry(site).or_default();
        s.0 += n;
        s.1 = s.1.saturating_add(ns);
        match waker {
            Some(w) => {
                let e = op.wakers.entry(w).or_default();
                e.0 += n;
                e.1 = e.1.saturating_add(ns);
            }
            None => {
                op.unseen.0 += n;
                op.unseen.1 = op.unseen.1.saturating_add(ns);
                self.unseen += n;
            }
        }
    }

    /// Calls of image `key` the kernel saw enter and never leave, or leave without entering.
    pub(crate) fn add_unpaired(&mut self, key: (usize, usize), enters: u64, exits: u64) {
        let img = self.images.entry(key).or_default();
        img.unpaired_enters += enters;
        img.unpaired_exits += exits;
    }

    /// The run was counted in the kernel: its files carry `run`'s checksums and drops.
    pub(crate) fn set_kernel_run(&mut self, run: KernelRun) {
        self.kernel = Some(run);
    }

    /// The wakers come from `w` from now on.
    pub(crate) fn set_wakers(&mut self, w: crate::bpf::Wakers) {
        self.wakers = Some(w);
    }

    /// Takes the wake-ups the kernel recorded since the last call. Called before each batch of
    /// records is fed: a wake-up is in the ring as soon as it happens, so every wake-up
    /// before the batch's last record is then here.
    pub(crate) fn read_wakers(&mut self) {
        let Some(w) = &mut self.wakers else { return };
        let kframes = self.opts.kernel_frames.max(1);
        w.read(|x| queue_wakeup(&mut self.wakeups, kframes, x));
    }

    /// What tracepoint `event` of `rec` is to us.
    pub(crate) fn kind(&mut self, rec: &Recording, event: u32) -> Kind {
        while self.kinds.len() < rec.tracepoints.len() {
            let k = Kind::of(&rec.tracepoints[self.kinds.len()].format.name);
            self.kinds.push(k);
        }
        self.kinds
            .get(event as usize)
            .copied()
            .unwrap_or(Kind::Other)
    }

    /// Records were lost: every call running now may have lost its entry, exit, faults or
    /// sleeps, so none of them is counted.
    pub(crate) fn lost(&mut self) {
        for t in self.threads.values_mut() {
            if let Some(c) = &mut t.call {
                c.tainted = true;
            }
        }
    }

    /// A thread ended: a call it was in never returns.
    pub(crate) fn thread_exit(&mut self, tid: u32) {
        self.wakeups.remove(&tid);
        if let Some(w) = &self.wakers {
            w.forget(tid);
        }
        if let Some(t) = self.threads.remove(&tid)
            && let Some(c) = t.call
        {
            self.images.entry(c.key).or_default().unpaired_enters += 1;
        }
    }

    pub(crate) fn feed(&mut self, time: u64, tid: u32, input: Input<'_>) {
        let kframes = self.opts.kernel_frames.max(1);
        match input {
            Input::Enter { nr, key, frames } => {
                let t = self.threads.entry(tid).or_default();
                t.early_waker = None;
                if let Some(old) = t.call.take() {
                    self.images.entry(old.key).or_default().unpaired_enters += 1;
                }
                t.call = Some(OpenCall {
                    nr,
                    enter: time,
                    key,
                    site: frames[..frames.len().min(self.opts.site_frames)].to_vec(),
                    ..OpenCall::default()
                });
            }
            Input::Exit { nr, key } => {
                let call = self.threads.get_mut(&tid).and_then(|t| t.call.take());
                match call {
                    Some(c) if c.nr == nr => self.close(c, time),
                    other => {
                        if let Some(c) = other {
                            self.images.entry(c.key).or_default().unpaired_enters += 1;
                        }
                        self.images.entry(key).or_default().unpaired_exits += 1;
                    }
                }
            }
            Input::Fault => {
                if let Some(c) = self.threads.get_mut(&tid).and_then(|t| t.call.as_mut()) {
                    c.faults += 1;
                }
            }
            Input::Blocked { chain } => {
                let t = self.threads.entry(tid).or_default();
                t.pending_sleep = Some(chain[..chain.len().min(kframes)].to_vec());
            }
            Input::Out { preempted } => {
                let t = self.threads.entry(tid).or_default();
                let sleep = t.pending_sleep.take().filter(|_| !preempted);
                let waker = t.early_waker.take().filter(|_| sleep.is_some());
                t.off = Some(OffCpu {
                    since: time,
                    sleep,
                    waker,
                });
            }
            Input::Waking { waker_pid, chain } => {
                let Some(t) = self.threads.get_mut(&tid) else {
                    return;
                };
                let waker = (waker_pid, chain[..chain.len().min(kframes)].to_vec());
                match &mut t.off {
                    Some(off) if off.sleep.is_some() && off.waker.is_none() => {
                        off.waker = Some(waker);
                    }
                    None if t.call.is_some() => t.early_waker = Some(waker),
                    _ => {}
                }
            }
            Input::In => {
                // The kernel's wake-ups of this thread up to now (earlier ones went at its
                // last switch in): the last one woke it. It may precede the switch-out: an
                // interrupt on another CPU can wake a sleeper still on its own CPU.
                let mut woken = None;
                if let Some(q) = self.wakeups.get_mut(&tid) {
                    while q.front().is_some_and(|(at, _)| *at <= time) {
                        woken = q.pop_front();
                    }
                }
                let Some(t) = self.threads.get_mut(&tid) else {
                    return;
                };
                t.early_waker = None;
                let Some(mut off) = t.off.take() else { return };
                if let Some((_, w)) = woken
                    && off.sleep.is_some()
                    && off.waker.is_none()
                {
                    off.waker = Some(w);
                }
                let Some(c) = t.call.as_mut() else { return };
                let d = time.saturating_sub(off.since.max(c.enter));
                match off.sleep {
                    Some(site) => {
                        c.blocked += d;
                        let e = c.sleeps.entry((site, off.waker)).or_default();
                        e.0 += 1;
                        e.1 += d;
                    }
                    None => c.runnable += d,
                }
            }
        }
    }

    fn close(&mut self, c: OpenCall, time: u64) {
        let img = self.images.entry(c.key).or_default();
        if c.tainted {
            img.dropped += 1;
            return;
        }
        let ns = time.saturating_sub(c.enter);
        let slice = self
            .opts
            .slice_ns
            .map_or(0, |len| time.saturating_sub(self.start) / len.max(1));
        let op = img.ops.entry((c.nr, c.site)).or_default();
        if op.calls == 0 {
            op.min = ns;
        }
        op.calls += 1;
        op.total = op.total.saturating_add(ns);
        op.min = op.min.min(ns);
        op.max = op.max.max(ns);
        op.faults += c.faults;
        let b = op
            .buckets
            .entry((slice, self.resolution.bucket(ns)))
            .or_default();
        b.0 += 1;
        b.1 = b.1.saturating_add(ns);
        op.blocked += c.blocked;
        op.runnable += c.runnable;
        for ((site, waker), (n, d)) in c.sleeps {
            op.sleeps += n;
            let s = op.sites.entry(site).or_default();
            s.0 += n;
            s.1 += d;
            match waker {
                Some(w) => {
                    let e = op.wakers.entry(w).or_default();
                    e.0 += n;
                    e.1 += d;
                }
                None => {
                    op.unseen.0 += n;
                    op.unseen.1 += d;
                    self.unseen += n;
                }
            }
        }
    }

    /// Ends the collection: calls still open never returned.
    pub(crate) fn finish(&mut self) {
        if let Some(w) = self.wakers.take() {
            self.wakers_lost = w.lost();
        }
        self.wakeups.clear();
        for (_, t) in self.threads.drain() {
            if let Some(c) = t.call {
                self.images.entry(c.key).or_default().unpaired_enters += 1;
            }
        }
    }

    /// Whether the sleeps whose wake-up was not sampled were all woken in the idle task, by an
    /// interrupt. The kernel counts a `sched_waking` there but takes no sample
    /// ([`EventCheck::unsampled_in_idle`]: a CPU-wide sampled tracepoint gets the hits of busy
    /// CPUs only, its counting twin all), and the idle task wakes nobody outside interrupts.
    /// So when those cover every unseen wake-up, an unseen waker is an idle CPU's interrupt;
    /// when they do not (records lost, a kernel that samples there), none is named.
    fn idle_wakeups(&self, rec: &Recording) -> bool {
        let unsampled: u64 = rec
            .tracepoints
            .iter()
            .map(|t| t.check().unsampled_in_idle())
            .sum();
        self.unseen > 0 && self.unseen <= unsampled && rec.lost_samples() == 0
    }

    /// The latency file of the process images `keys` (one file set), or None if they made
    /// no system call.
    pub(crate) fn file(&self, rec: &Recording, keys: &[(usize, usize)]) -> Option<LatencyFile> {
        let mut ops: BTreeMap<(u64, Vec<u64>), Operation> = BTreeMap::new();
        let mut f = LatencyFile::new(self.resolution.get(), std::env::consts::ARCH);
        f.slices = self.opts.slice_ns.map(|l| (l, rec.start_time));
        f.checks = rec.tracepoints.iter().map(TracepointInfo::check).collect();
        f.lost = rec.lost_samples() + self.wakers_lost;
        if let Some(k) = &self.kernel {
            f.slices = self.opts.slice_ns.map(|l| (l, k.start));
            f.checks = k.checks.clone();
            f.dropped = k.dropped;
        }
        let idle = self.idle_wakeups(rec);
        let mut any = false;
        for key in keys {
            let Some(img) = self.images.get(key) else {
                continue;
            };
            any = true;
            f.unpaired_enters += img.unpaired_enters;
            f.unpaired_exits += img.unpaired_exits;
            f.dropped += img.dropped;
            for ((nr, site), acc) in &img.ops {
                let op = ops.entry((*nr, site.clone())).or_insert_with(|| Operation {
                    syscall: *nr,
                    site: site.clone(),
                    min_ns: u64::MAX,
                    blocking: self.opts.blocking.then(Blocking::default),
                    ..Operation::default()
                });
                merge(op, acc, idle);
            }
        }
        if !any {
            return None;
        }
        f.operations = ops.into_values().collect();
        Some(f)
    }
}

/// Queues wake-up `w` for its thread's next switch back in, with `kframes` of its frames.
fn queue_wakeup(
    queues: &mut HashMap<u32, VecDeque<(u64, WakerKey)>>,
    kframes: usize,
    w: crate::bpf::Wakeup,
) {
    let mut frames = w.frames;
    frames.truncate(kframes);
    queues
        .entry(w.tid)
        .or_default()
        .push_back((w.time, (w.waker_pid, frames)));
}

/// The waker of a sleep whose wake-up fired in the idle task: pid 0, no frames (the kernel
/// counted it but took no sample; `Waker::unsampled_in_idle` reads it back).
const IDLE_WAKER: (u32, Vec<u64>) = (0, Vec::new());

/// Adds one image's sums of an operation to the file's, keeping lists sorted; with `idle`, its
/// sleeps of unseen waker are put on [`IDLE_WAKER`].
fn merge(op: &mut Operation, acc: &OpAcc, idle: bool) {
    op.calls += acc.calls;
    op.total_ns = op.total_ns.saturating_add(acc.total);
    op.min_ns = op.min_ns.min(acc.min);
    op.max_ns = op.max_ns.max(acc.max);
    op.faults += acc.faults;
    let mut buckets: BTreeMap<(u64, u32), (u64, u64)> = op
        .buckets
        .iter()
        .map(|b| ((b.slice, b.bucket), (b.count, b.total_ns)))
        .collect();
    for (k, (n, t)) in &acc.buckets {
        let e = buckets.entry(*k).or_default();
        e.0 += n;
        e.1 = e.1.saturating_add(*t);
    }
    op.buckets = buckets
        .into_iter()
        .map(|((slice, bucket), (count, total_ns))| BucketCount {
            slice,
            bucket,
            count,
            total_ns,
        })
        .collect();
    if let Some(b) = &mut op.blocking {
        b.blocked_ns += acc.blocked;
        b.runnable_ns += acc.runnable;
        b.sleeps += acc.sleeps;
        let mut sites: BTreeMap<Vec<u64>, (u64, u64)> = b
            .sites
            .drain(..)
            .map(|s| (s.frames, (s.count, s.blocked_ns)))
            .collect();
        for (k, (n, t)) in &acc.sites {
            let e = sites.entry(k.clone()).or_default();
            e.0 += n;
            e.1 += t;
        }
        b.sites = sites
            .into_iter()
            .map(|(frames, (count, blocked_ns))| SleepSite {
                frames,
                count,
                blocked_ns,
            })
            .collect();
        b.sites.sort_by_key(|s| std::cmp::Reverse(s.blocked_ns));
        let mut wakers: BTreeMap<WakerKey, (u64, u64)> = b
            .wakers
            .drain(..)
            .map(|w| ((w.pid, w.frames), (w.count, w.blocked_ns)))
            .collect();
        for (k, (n, t)) in &acc.wakers {
            let e = wakers.entry(k.clone()).or_default();
            e.0 += n;
            e.1 += t;
        }
        if idle && acc.unseen.0 > 0 {
            let e = wakers.entry(IDLE_WAKER).or_default();
            e.0 += acc.unseen.0;
            e.1 += acc.unseen.1;
        }
        b.wakers = wakers
            .into_iter()
            .map(|((pid, frames), (count, blocked_ns))| Waker {
                pid,
                frames,
                count,
                blocked_ns,
            })
            .collect();
        b.wakers.sort_by_key(|w| std::cmp::Reverse(w.blocked_ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preemption_marker_comes_from_the_print_format() {
        let fmt =
            crate::tracepoint::EventFormat::parse("sched", crate::tracepoint::tests::SCHED_SWITCH)
                .expect("parses");
        assert_eq!(preempt_marker(&fmt.print_fmt), Some(0x100));
        assert_eq!(preempt_marker("\"%d\", REC->prev_state"), None);
    }

    #[test]
    fn calls_pair_per_thread_and_unpaired_ones_are_counted() {
        let rec = Recording::default();
        let mut t = SyscallTracer::new(LatencyOptions {
            blocking: true,
            ..LatencyOptions::default()
        });
        let key = (0, 1);
        let enter = |nr| Input::Enter {
            nr,
            key,
            frames: &[0x10, 0x20, 0x30, 0x40],
        };
        // An exit with no entry: the call began before the run.
        t.feed(5, 7, Input::Exit { nr: 59, key });
        t.feed(10, 7, enter(0));
        t.feed(11, 8, enter(35));
        t.feed(12, 7, Input::Fault);
        t.feed(13, 8, Input::Blocked { chain: &[0xa, 0xb] });
        t.feed(14, 8, Input::Out { preempted: false });
        t.feed(15, 7, Input::Exit { nr: 0, key });
        t.feed(
            1_000,
            8,
            Input::Waking {
                waker_pid: 0,
                chain: &[0xc],
            },
        );
        t.feed(1_014, 8, Input::In);
        t.feed(1_020, 8, Input::Exit { nr: 35, key });
        // Entered and never left.
        t.feed(2_000, 7, enter(231));
        t.finish();
        let f = t.file(&rec, &[key]).expect("calls");
        assert_eq!((f.unpaired_enters, f.unpaired_exits, f.dropped), (1, 1, 0));
        assert_eq!(f.operations.len(), 2);
        let read = &f.operations[0];
        assert_eq!(
            (read.syscall, read.calls, read.total_ns, read.faults),
            (0, 1, 5, 1)
        );
        assert_eq!(read.site, vec![0x10, 0x20, 0x30]);
        let sleep = &f.operations[1];
        assert_eq!(sleep.total_ns, 1_009);
        let b = sleep.blocking.as_ref().expect("blocking");
        assert_eq!((b.blocked_ns, b.sleeps), (1_000, 1));
        assert_eq!(b.sites[0].frames, vec![0xa, 0xb]);
        assert_eq!(
            (b.wakers[0].pid, b.wakers[0].frames.clone()),
            (0, vec![0xc])
        );
        assert_eq!(sleep.buckets[0].bucket, 9);
    }

    /// A run whose `sched_waking` was received `received` times and counted `counted`.
    fn run_with_wakings(received: u64, counted: u64) -> Recording {
        let mut format =
            crate::tracepoint::EventFormat::parse("sched", crate::tracepoint::tests::SCHED_SWITCH)
                .expect("parses");
        format.name = "sched:sched_waking".into();
        Recording {
            tracepoints: vec![TracepointInfo {
                format,
                filter: None,
                kernel_chain: true,
                user_chain: false,
                user_stack_bytes: 0,
                counted: Some(counted),
                received,
                sample_type: 0,
            }],
            ..Recording::default()
        }
    }

    /// One call that sleeps twice: woken once by a sampled waker, once by nobody seen.
    fn two_sleeps() -> SyscallTracer {
        let mut t = SyscallTracer::new(LatencyOptions {
            blocking: true,
            ..LatencyOptions::default()
        });
        let key = (0, 0);
        t.feed(
            0,
            7,
            Input::Enter {
                nr: 17,
                key,
                frames: &[],
            },
        );
        for (at, waker) in [(10, Some(40)), (100, None)] {
            t.feed(at, 7, Input::Blocked { chain: &[0xa] });
            t.feed(at, 7, Input::Out { preempted: false });
            if let Some(pid) = waker {
                let chain = [0xb];
                // `tid` is the thread woken; the waker is the record's pid.
                t.feed(
                    at + 5,
                    7,
                    Input::Waking {
                        waker_pid: pid,
                        chain: &chain,
                    },
                );
            }
            t.feed(at + 20, 7, Input::In);
        }
        t.feed(200, 7, Input::Exit { nr: 17, key });
        t
    }

    #[test]
    fn an_unseen_waker_is_an_idle_interrupt_only_when_the_kernel_counted_it_unsampled() {
        let key = (0, 0);
        let wakers = |rec: &Recording| {
            let f = two_sleeps().file(rec, &[key]).expect("an image");
            let b = f.operations[0].blocking.clone().expect("blocking");
            assert_eq!(b.sleeps, 2);
            b.wakers
                .iter()
                .map(|w| (w.pid, w.frames.clone(), w.count, w.blocked_ns))
                .collect::<Vec<_>>()
        };
        let sampled = (40, vec![0xb], 1, 20);
        // One wake-up counted but not received: the unseen waker is an idle CPU's interrupt.
        assert_eq!(
            wakers(&run_with_wakings(1, 2)),
            vec![(0, vec![], 1, 20), sampled.clone()]
        );
        // Every wake-up received: the unseen one is not explained, so it stays unnamed.
        assert_eq!(wakers(&run_with_wakings(2, 2)), vec![sampled]);
    }

    #[test]
    fn a_wakeup_before_the_switch_out_names_the_waker_of_that_sleep_only() {
        let mut t = SyscallTracer::new(LatencyOptions {
            blocking: true,
            ..LatencyOptions::default()
        });
        let key = (0, 0);
        let enter = || Input::Enter {
            nr: 17,
            key,
            frames: &[],
        };
        let waking = |pid| Input::Waking {
            waker_pid: pid,
            chain: &[0xb],
        };
        // A call woken by 41 while it ran (it never slept for that one).
        t.feed(0, 7, enter());
        t.feed(5, 7, waking(41));
        t.feed(8, 7, Input::Exit { nr: 17, key });
        // The next, woken by 40 before its voluntary switch-out, then a sleep whose waker is
        // not seen: neither 41 nor 40 is named for it.
        t.feed(9, 7, enter());
        t.feed(10, 7, Input::Blocked { chain: &[0xa] });
        t.feed(11, 7, waking(40));
        t.feed(12, 7, Input::Out { preempted: false });
        t.feed(50, 7, Input::In);
        t.feed(70, 7, Input::Blocked { chain: &[0xa] });
        t.feed(70, 7, Input::Out { preempted: false });
        t.feed(100, 7, Input::In);
        t.feed(200, 7, Input::Exit { nr: 17, key });
        let f = t.file(&run_with_wakings(2, 2), &[key]).expect("an image");
        let b = f.operations[0].blocking.clone().expect("blocking");
        assert_eq!(b.sleeps, 2);
        let wakers: Vec<_> = (b.wakers.iter()).map(|w| (w.pid, w.count)).collect();
        assert_eq!(wakers, vec![(40, 1)]);
    }

    #[test]
    fn a_kernel_wakeup_names_the_waker_of_the_sleep_it_ended() {
        let rec = Recording::default();
        let mut t = SyscallTracer::new(LatencyOptions {
            blocking: true,
            kernel_wakers: true,
            kernel_frames: 2,
            ..LatencyOptions::default()
        });
        let key = (0, 0);
        // Read from the ring ahead of the records: a wake-up while the thread ran (stale at
        // its next sleep), one in the idle task ending the first sleep, one ending the second,
        // and one that came before the third sleep's switch-out (an interrupt on another CPU
        // while the sleeper was still on its own).
        for (time, waker_pid, frames) in [
            (5, 9, vec![0x1]),
            (50, 0, vec![0xc, 0xd, 0xe]),
            (150, 40, vec![0xf]),
            (205, 41, vec![0xb]),
        ] {
            let w = crate::bpf::Wakeup {
                time,
                tid: 7,
                waker_pid,
                frames,
            };
            queue_wakeup(&mut t.wakeups, 2, w);
        }
        let enter = Input::Enter {
            nr: 17,
            key,
            frames: &[],
        };
        t.feed(0, 7, enter);
        for (out, back) in [(10, 60), (100, 160), (210, 240)] {
            t.feed(out, 7, Input::Blocked { chain: &[0xa] });
            t.feed(out, 7, Input::Out { preempted: false });
            t.feed(back, 7, Input::In);
        }
        t.feed(300, 7, Input::Exit { nr: 17, key });
        assert!(t.wakeups[&7].is_empty());
        let f = t.file(&rec, &[key]).expect("an image");
        let b = f.operations[0].blocking.clone().expect("blocking");
        let wakers: Vec<_> = (b.wakers.iter())
            .map(|w| (w.pid, w.frames.clone(), w.count, w.blocked_ns))
            .collect();
        assert_eq!(
            wakers,
            vec![
                (40, vec![0xf], 1, 60),
                (0, vec![0xc, 0xd], 1, 50),
                (41, vec![0xb], 1, 30)
            ]
        );
    }

    #[test]
    fn calls_running_when_records_were_lost_are_dropped_not_counted() {
        let rec = Recording::default();
        let mut t = SyscallTracer::new(LatencyOptions::default());
        let key = (0, 0);
        t.feed(
            1,
            7,
            Input::Enter {
                nr: 0,
                key,
                frames: &[],
            },
        );
        t.lost();
        t.feed(9, 7, Input::Exit { nr: 0, key });
        let f = t.file(&rec, &[key]).expect("an image");
        assert_eq!((f.dropped, f.operations.len()), (1, 0));
    }
}
