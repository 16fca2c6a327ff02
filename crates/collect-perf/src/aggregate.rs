//! Streaming aggregation: records fed in time order become, per process image, the histograms,
//! arcs, boundary counts and interned stacks its files will hold. A sample's user stack is
//! unwound as it arrives and its stack copy is then free to go, so memory grows with the
//! distinct stacks and processes seen, never with the number of samples.
//!
//! The aggregation knows nothing of rings or of the live machine: it is fed [`Recording`]
//! records (one at a time, or a whole recording by [`aggregate`]), and given the kernel's
//! symbols at the end, which classify how each interned stack entered the kernel. Only the ELF
//! files behind the mappings are read, to unwind.
//!
//! Over 800 lines only with its unit tests (the aggregation itself is under 790), which feed it
//! records one at a time through its private state.

use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_attribution::{Decision, Target};
use gmon_format::AsyncMoves;
use gmon_format::async_moves::{KindTotals, Move};

use crate::kernel_symbols::KernelSymbols;

use crate::asynchronous::{AsyncCollector, AsyncOptions, BlockPrograms, HeldSample, KernelBlock};
use crate::recording::{
    CounterEvent, CounterKind, Event, Recording, Sample, SideBand, SideRecord, TraceSample,
};
use crate::replay::{Process, Replay, Replayer};
use crate::syscalls::{Input, Kind, LatencyOptions, SyscallTracer};
mod displaced;
mod stack_table;

pub(crate) use displaced::Displacements;
pub(crate) use stack_table::{Hit, StackKey, StackTable};

use crate::unwind::{Images, ProcessUnwinder, StackEnd, UnwindStats, Unwinding};

/// Options of an [`Aggregator`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AggregateOptions {
    /// System-wide mode: the pids asked for. Their processes, and the processes they start, are
    /// profiled; of every other process only the kernel part of its samples is kept (as the
    /// system-wide kernel profiles). None (the default) profiles every process.
    pub system_wide: Option<BTreeSet<u32>>,
    /// Most frames kept of each user stack. Default is 1024.
    pub max_frames: usize,
    /// The pid of the launched command, if any: the kernel's work on its exec counts for the
    /// command's image, not for the launcher's. Default is None.
    pub launched: Option<u32>,
    /// Build per-system-call latencies (and blocking) from the run's tracepoint records, which
    /// the sampler must have been asked for ([`LatencyOptions::tracepoints`]). Default is None.
    pub latency: Option<LatencyOptions>,
    /// perf's build-id cache (`~/.debug`), where an object no longer at its path, or replaced,
    /// is looked for by build-id to unwind its stacks: for recordings made elsewhere or
    /// earlier (perf.data import). Default is None (pkgmon reads the files that are running).
    pub build_id_cache: Option<std::path::PathBuf>,
    /// Charge asynchronous kernel work (the `NET_RX` softirq) to the process it served, from
    /// the run's tracepoint records, which the sampler must have been asked for
    /// ([`AsyncOptions::tracepoints`]). Default is None.
    pub asynchronous: Option<AsyncOptions>,
    /// System-wide mode: profile every process, not only those asked for; the idle task's
    /// samples (pid 0) still go to the system-wide kernel profile. Default is false.
    pub every_process: bool,
}

impl Default for AggregateOptions {
    fn default() -> Self {
        AggregateOptions {
            system_wide: None,
            max_frames: 1024,
            launched: None,
            latency: None,
            build_id_cache: None,
            asynchronous: None,
            every_process: false,
        }
    }
}

/// Histogram bins and arcs of one gmon file. Hash maps while counting (a stack touches a
/// dozen entries; keys are addresses, so the fast non-keyed hash, not SipHash: a tenth of the
/// collector's own time went to hashing); sorted when written, so the output does not depend
/// on hash order.
#[derive(Debug, Default)]
pub(crate) struct Side {
    /// Address of a 2-byte bin → samples.
    pub hist: FxHashMap<u64, u64>,
    /// (from_pc, self_pc) → samples whose stack holds the edge.
    pub arcs: FxHashMap<(u64, u64), u64>,
}

impl Side {
    /// Counts each caller→callee edge of `frames` (innermost first) once for each of `n`
    /// samples.
    pub(crate) fn add_stack(&mut self, frames: &[u64], n: u64, edges: &mut Vec<(u64, u64)>) {
        edges.clear();
        edges.extend(frames.windows(2).map(|w| (w[1], w[0])));
        // A recursion repeats one arc level after level: dropped before the sort, which took
        // 5% of pkgmon's own time on a 200-level recursion (perf record on it, 4 kHz).
        edges.dedup();
        edges.sort_unstable();
        edges.dedup();
        for e in edges.iter() {
            *self.arcs.entry(*e).or_default() += n;
        }
    }

    /// Counts `n` samples of a moved stack of asynchronous work (kernel frames only,
    /// innermost first): its hit, its arcs, and the boundary arc from 0 (no user caller) to
    /// its outermost frame.
    pub(crate) fn add_moved(&mut self, kernel: &[u64], n: u64, edges: &mut Vec<(u64, u64)>) {
        let (Some(&pc), Some(&entry)) = (kernel.first(), kernel.last()) else {
            return;
        };
        *self.hist.entry(pc & !1).or_default() += n;
        self.add_stack(kernel, n, edges);
        *self.arcs.entry((0, entry)).or_default() += n;
    }
}

/// What one image of one process (its life before the first exec, or after an exec) gathered.
/// Its histograms and arcs are derived from its stacks when its files are written
/// ([`StackTable::count`]): counting them per sample cost a tenth of pkgmon's own time.
#[derive(Debug, Default)]
pub(crate) struct ImageAcc {
    pub stacks: StackTable,
    pub samples: u64,
    /// Samples whose user stack may lack outer frames, by reason.
    pub truncated: BTreeMap<StackEnd, u64>,
}

/// Aggregates records fed in time order. See the module docs.
pub struct Aggregator {
    opts: AggregateOptions,
    replay: Replayer,
    unwinding: Unwinding,
    /// By process index.
    unwinders: Vec<ProcessUnwinder>,
    /// By process index: whether it gets file sets (None: not decided yet).
    profiled: Vec<Option<bool>>,
    /// By (process index, image).
    images: FxHashMap<(usize, usize), ImageAcc>,
    system: Side,
    other: Side,
    stats: UnwindStats,
    frames: Vec<u64>,
    edges: Vec<(u64, u64)>,
    syscalls: Option<SyscallTracer>,
    asynchronous: Option<AsyncCollector>,
    /// The held samples the attribution decided, placed.
    placed: Placed,
    /// Mappings whose addresses are written displaced.
    displaced: Displacements,
}

impl std::fmt::Debug for Aggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregator")
            .field("processes", &self.replay.processes().len())
            .field("images", &self.images.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Which image of `p` ran at `time`: the number of its execs at or before then. For the
/// launched command, whose events may start before its exec (system-wide mode), the kernel's
/// work on that exec counts for the command's image, not for the launcher's.
pub(crate) fn image_at(p: &Process, time: u64, launched: bool) -> usize {
    let k = p.execs.partition_point(|&e| e <= time);
    if launched { k.max(1) } else { k }
}

impl Aggregator {
    /// An aggregator. It needs no kernel symbols while records come: how each sample entered
    /// the kernel is classified at the end ([`Aggregator::finish`]), from its interned stack.
    pub fn new(opts: AggregateOptions) -> Aggregator {
        let cache = opts.build_id_cache.clone();
        Aggregator::with_images(opts, Images::with_build_id_cache(cache))
    }

    /// An aggregator that starts with the ELF files `images` already read (a continuous
    /// run's next window).
    pub(crate) fn with_images(opts: AggregateOptions, images: Images) -> Aggregator {
        let max_frames = opts.max_frames.max(1);
        let syscalls = opts.latency.clone().map(SyscallTracer::new);
        Aggregator {
            syscalls,
            asynchronous: opts.asynchronous.as_ref().map(AsyncCollector::new),
            placed: Placed::default(),
            opts,
            replay: Replayer::default(),
            unwinding: Unwinding::new(images, max_frames),
            unwinders: Vec::new(),
            profiled: Vec::new(),
            images: FxHashMap::default(),
            system: Side::default(),
            other: Side::default(),
            stats: UnwindStats::default(),
            frames: Vec::new(),
            edges: Vec::new(),
            displaced: Displacements::default(),
        }
    }

    /// Feeds a record of `rec` (any record later than those fed before).
    pub(crate) fn feed(&mut self, rec: &Recording, e: Event) {
        match e {
            Event::Side(i) => self.side_band(&rec.side_band[i]),
            Event::Counter(i) => self.counter(&rec.counter_events[i]),
            Event::Sample(i) => self.sample(rec, &rec.samples[i]),
            Event::Trace(i) => self.trace(rec, &rec.traces[i]),
        }
    }

    /// Feeds a side-band record.
    pub fn side_band(&mut self, r: &SideRecord) {
        // Which process had how many mappings, to tell whether an mmap added one (one that
        // repeats a mapping in place, or past the limit, adds none).
        let mapped = |replay: &Replayer| match r.kind {
            SideBand::Mmap { pid, .. } => replay
                .latest(pid)
                .map(|pi| (pi, replay.processes()[pi].mappings.len())),
            _ => None,
        };
        let before = mapped(&self.replay);
        self.replay.side_band(r.time, &r.kind);
        if let Some((pi, n)) = mapped(&self.replay)
            && before.is_none_or(|b| b < (pi, n))
        {
            self.displaced.mapped(pi, &self.replay.processes()[pi]);
        }
        // A process that exited is not unwound again: what unwinding kept for it goes; of a
        // thread that exited, its last stack (a server starting threads for ever would
        // otherwise keep one per thread it ever ran).
        if let SideBand::Exit { pid, tid, .. } = r.kind
            && let Some(pi) = self.replay.latest(pid)
        {
            if pid == tid {
                if let Some(u) = self.unwinders.get_mut(pi) {
                    *u = ProcessUnwinder::default();
                }
                self.unwinding.forget(&self.replay.processes()[pi]);
            } else if let Some(u) = self.unwinders.get_mut(pi) {
                u.thread_exited(tid);
            }
        }
        let Some(t) = &mut self.syscalls else { return };
        match r.kind {
            SideBand::Lost { .. } => t.lost(),
            SideBand::Exit { tid, .. } => t.thread_exit(tid),
            SideBand::Switch {
                tid,
                out,
                preempted,
                ..
            } => {
                let input = if out {
                    Input::Out { preempted }
                } else {
                    Input::In
                };
                t.feed(r.time, tid, input);
            }
            _ => {}
        }
    }

    /// Feeds a page fault (recorded only for the latency collection, which counts each into
    /// the system call it interrupted).
    pub fn counter(&mut self, e: &CounterEvent) {
        if e.kind == CounterKind::PageFault
            && let Some(t) = &mut self.syscalls
        {
            t.feed(e.time, e.tid, Input::Fault);
        }
    }

    fn is_launched(&self, p: &Process) -> bool {
        p.key.generation == 0 && self.opts.launched == Some(p.key.pid)
    }

    fn image_of(&self, pi: usize, time: u64) -> usize {
        let p = &self.replay.processes()[pi];
        image_at(p, time, self.is_launched(p))
    }

    /// Whether process `pi` gets file sets: every process, or in system-wide mode those asked
    /// for and those they started.
    fn is_profiled(&mut self, pi: usize) -> bool {
        if self.profiled.len() <= pi {
            self.profiled.resize(pi + 1, None);
        }
        if let Some(known) = self.profiled[pi] {
            return known;
        }
        let p = &self.replay.processes()[pi];
        let yes = match &self.opts.system_wide {
            None => true,
            Some(pids) => {
                p.key.pid != 0
                    && (self.opts.every_process
                        || pids.contains(&p.key.pid)
                        || p.parent.is_some_and(|k| {
                            self.replay
                                .processes()
                                .iter()
                                .position(|q| q.key == k)
                                .is_some_and(|j| self.profiled.get(j) == Some(&Some(true)))
                        }))
            }
        };
        self.profiled[pi] = Some(yes);
        yes
    }

    /// Feeds a sample of `rec` (its frames and stack copy live in `rec`'s arenas).
    pub fn sample(&mut self, rec: &Recording, s: &Sample) {
        let pi = self.replay.sample(s.pid, s.tid, s.time);
        let kernel = rec.kernel_chain(s);
        // Asynchronous work is held back until its beneficiary is known.
        if let Some(a) = &mut self.asynchronous
            && a.sample(s, pi, kernel)
        {
            self.place_async();
            return;
        }
        if !self.is_profiled(pi) {
            // System-wide mode only: the kernel part goes to -k.kernel (pid 0 and kernel
            // threads, which have no user context) or -k.other.
            if s.user_mode || kernel.is_empty() {
                return;
            }
            let side = if s.is_system_side() {
                &mut self.system
            } else {
                &mut self.other
            };
            *side.hist.entry(kernel[0] & !1).or_default() += 1;
            side.add_stack(kernel, 1, &mut self.edges);
            return;
        }
        if self.unwinders.len() <= pi {
            self.unwinders.resize_with(pi + 1, ProcessUnwinder::default);
        }
        let p = &self.replay.processes()[pi];
        let end = self.unwinders[pi].unwind(
            &mut self.unwinding,
            p,
            rec,
            s,
            &mut self.stats,
            &mut self.frames,
        );
        let image = image_at(p, s.time, self.is_launched(p));
        self.displaced.apply(pi, p, s.time, &mut self.frames);
        let user = &self.frames;
        let acc = self.images.entry((pi, image)).or_default();
        let truncated = end.is_some_and(StackEnd::is_truncated);
        acc.samples += 1;
        if let Some(end) = end.filter(|e| e.is_truncated()) {
            *acc.truncated.entry(end).or_default() += 1;
        }
        let hit = if s.user_mode {
            // The ip, displaced as the stack's innermost frame is.
            let mut ip = [s.ip];
            self.displaced.apply(pi, p, s.time, &mut ip);
            Hit::User(ip[0] & !1)
        } else {
            Hit::Kernel
        };
        acc.stacks.add(kernel, user, truncated, hit, s.period);
    }

    /// Feeds a tracepoint record of `rec` to the latency collection, if there is one: a
    /// system-call entry gets its process image and its unwound user call site.
    pub fn trace(&mut self, rec: &Recording, t: &TraceSample) {
        if let Some(a) = &mut self.asynchronous
            && a.trace(rec, t)
        {
            self.place_async();
            return;
        }
        let Some(mut tracer) = self.syscalls.take() else {
            return;
        };
        let s = &t.sample;
        tracer.start = rec.start_time;
        let info = &rec.tracepoints[t.event as usize];
        let raw = info.format.decode(rec.raw(t));
        match tracer.kind(rec, t.event) {
            Kind::Enter | Kind::Exit => {
                let pi = self.replay.owner(s.pid, s.time);
                if let (true, Some(nr)) = (self.is_profiled(pi), raw.u64("id")) {
                    let key = (pi, self.image_of(pi, s.time));
                    if tracer.kind(rec, t.event) == Kind::Enter {
                        if self.unwinders.len() <= pi {
                            self.unwinders.resize_with(pi + 1, ProcessUnwinder::default);
                        }
                        let p = &self.replay.processes()[pi];
                        // Not counted in the samples' unwinding statistics.
                        let mut stats = UnwindStats::default();
                        self.unwinders[pi].unwind(
                            &mut self.unwinding,
                            p,
                            rec,
                            s,
                            &mut stats,
                            &mut self.frames,
                        );
                        self.displaced.apply(pi, p, s.time, &mut self.frames);
                        let input = Input::Enter {
                            nr,
                            key,
                            frames: &self.frames,
                        };
                        tracer.feed(s.time, s.tid, input);
                    } else {
                        tracer.feed(s.time, s.tid, Input::Exit { nr, key });
                    }
                }
            }
            Kind::Switch => {
                if let Some(tid) = raw.u64("prev_pid") {
                    let chain = rec.kernel_chain(s);
                    tracer.feed(s.time, tid as u32, Input::Blocked { chain });
                }
            }
            Kind::Waking => {
                if let Some(tid) = raw.u64("pid") {
                    let input = Input::Waking {
                        waker_pid: s.pid,
                        chain: rec.kernel_chain(s),
                    };
                    tracer.feed(s.time, tid as u32, input);
                }
            }
            Kind::Other => {}
        }
        self.syscalls = Some(tracer);
    }

    /// Takes the wakers of blocked calls from BPF programs ([`crate::bpf::Wakers`], with
    /// [`crate::LatencyOptions::kernel_wakers`]); they are read before each batch of records.
    /// Without a latency collection, they are dropped.
    pub fn kernel_wakers(&mut self, wakers: crate::bpf::Wakers) {
        if let Some(t) = &mut self.syscalls {
            t.set_wakers(wakers);
        }
    }

    /// Takes the block programs of the asynchronous attribution
    /// ([`AsyncOptions::kernel_block`]); their events are read before each batch of records.
    /// Without an asynchronous attribution, they are dropped.
    pub fn kernel_block(&mut self, programs: BlockPrograms) {
        if let Some(a) = &mut self.asynchronous {
            a.kernel_block(programs);
        }
    }

    /// Reads what BPF programs recorded since the last batch (before the next is fed): the
    /// wake-ups, the block windows and completions.
    pub(crate) fn read_kernel_records(&mut self) {
        if let Some(t) = &mut self.syscalls {
            t.read_wakers();
        }
        if let Some(a) = &mut self.asynchronous {
            a.read_kernel();
        }
    }

    /// Adds the system calls counted in the kernel ([`crate::bpf::SyscallLatency::finish`])
    /// to the latency collection, each to its process image: the programs count a process's
    /// execs as the replay does, so generation g is image g.
    pub fn kernel_latency(&mut self, counts: crate::bpf::LatencyCounts) {
        let Some(mut tracer) = self.syscalls.take() else {
            return;
        };
        for ((pid, generation), img) in counts.images {
            // The last process of that pid: the programs do not tell a reused pid's
            // processes apart (their maps forget a pid when its task exits).
            let Some(pi) = self
                .replay
                .processes()
                .iter()
                .rposition(|p| p.key.pid == pid)
            else {
                continue;
            };
            if !self.is_profiled(pi) {
                continue;
            }
            let key = (pi, generation as usize);
            // The sites the programs copied, unwound as the ring path unwinds its entries.
            let mut exact: HashMap<Vec<u64>, Vec<u64>> = HashMap::new();
            if !img.copies.is_empty() && self.unwinders.len() <= pi {
                self.unwinders.resize_with(pi + 1, ProcessUnwinder::default);
            }
            for (words, copy) in &img.copies {
                let p = &self.replay.processes()[pi];
                let mut frames = Vec::new();
                self.unwinders[pi].unwind_copy(
                    &mut self.unwinding,
                    p,
                    copy.time,
                    copy.regs,
                    &copy.stack,
                    &mut frames,
                );
                self.displaced.apply(pi, p, copy.time, &mut frames);
                // A copy that unwinds no further than the words read stays with them.
                if frames.len() >= 2 {
                    exact.insert(words.clone(), frames);
                }
            }
            let exact_site = |site: Vec<u64>| exact.get(&site).cloned().unwrap_or(site);
            tracer.add_unpaired(key, img.unpaired_enters, img.unpaired_exits);
            for ((nr, site, slice, bucket), c) in img.buckets {
                tracer.add_counted(key, (nr, exact_site(site), slice, bucket), &c);
            }
            for ((nr, site, off, waker), (n, ns)) in img.sleeps {
                tracer.add_kernel_sleeps(key, (nr, exact_site(site)), off, waker, n, ns);
            }
        }
        tracer.set_kernel_run(crate::syscalls::KernelRun {
            checks: counts.checks,
            dropped: counts.dropped,
            start: counts.start,
        });
        self.syscalls = Some(tracer);
    }

    /// Ends the aggregation; `ksyms` are the kernel's symbols of the run, which classify how
    /// each sample entered the kernel and are saved with the measurement.
    pub fn finish(mut self, ksyms: KernelSymbols) -> Aggregate {
        let (asynchronous, moved, kernel_block) = match self.attribute() {
            Some((a, m, k)) => (Some(a), Some(m), k),
            None => (None, None, None),
        };
        let replay = self.replay.finish();
        if let Some(t) = &mut self.syscalls {
            t.finish();
        }
        let n = replay.processes.len();
        self.profiled.resize(n, None);
        Aggregate {
            // A process never sampled is profiled as a sampled one would have been: its
            // counters still say what it cost.
            profiled: self
                .profiled
                .iter()
                .zip(&replay.processes)
                .map(|(p, q)| {
                    p.unwrap_or(
                        self.opts.system_wide.is_none()
                            || (self.opts.every_process && q.key.pid != 0),
                    )
                })
                .collect(),
            replay,
            images: self.images,
            system: self.system,
            other: self.other,
            system_wide: self.opts.system_wide.is_some(),
            launched: self.opts.launched,
            ksyms,
            displaced: self.displaced,
            files: self.unwinding.into_images(),
            stats: self.stats,
            syscalls: self.syscalls,
            asynchronous,
            moved: moved.unwrap_or_default(),
            kernel_block,
        }
    }

    /// Where the counts of a sample of process `pi` at `time` go: its image's files when it
    /// is profiled, else `-k.kernel` when `system` (the idle task, a kernel thread: see
    /// [`Sample::is_system_side`]), else `-k.other`.
    fn place(&mut self, pi: usize, time: u64, system: bool) -> Place {
        if self.is_profiled(pi) {
            Place::Image(pi, self.image_of(pi, time))
        } else if system {
            Place::System
        } else {
            Place::Other
        }
    }

    /// Places the held samples the attribution decided since the last call (as the run goes:
    /// a sample is kept only until its beneficiary is known).
    fn place_async(&mut self) {
        let Some(mut a) = self.asynchronous.take() else {
            return;
        };
        self.place_decided(a.take_decided());
        self.asynchronous = Some(a);
    }

    /// Places each decided held sample ([`Aggregator::place_held`]).
    fn place_decided(&mut self, decided: impl IntoIterator<Item = (Decision, HeldSample)>) {
        let mut placed = std::mem::take(&mut self.placed);
        for (d, h) in decided {
            self.place_held(&mut placed, d, &h);
        }
        self.placed = placed;
    }

    /// A held sample's cut kernel stack goes to its beneficiary's image (a process not
    /// profiled: `-k.other`; the residue: `-k.kernel`), and the move is counted for
    /// `async.moves`, with the moved stack's places (`Aggregate::moved`).
    fn place_held(&mut self, placed: &mut Placed, d: Decision, h: &HeldSample) {
        let (beneficiary, to) = match d.to {
            Target::Process { pid, time } => {
                let pi = self.replay.owner(pid, time);
                (Some(pid), self.place(pi, time, false))
            }
            Target::Unattributed(_) => (None, Place::System),
        };
        match to {
            Place::Image(pi, image) => {
                let acc = self.images.entry((pi, image)).or_default();
                acc.samples += 1;
                acc.stacks.add(&h.kernel, &[], false, Hit::Moved, h.period);
            }
            Place::System => self.system.add_moved(&h.kernel, 1, &mut self.edges),
            Place::Other => self.other.add_moved(&h.kernel, 1, &mut self.edges),
        }
        let (pi, time, system) = h.taken;
        let from = self.place(pi, time, system);
        for c in [
            (placed.moves)
                .entry((d.kind.as_str(), h.victim, beneficiary))
                .or_default(),
            (placed.stacks)
                .entry((d.kind.as_str(), from, to, h.kernel.clone()))
                .or_default(),
        ] {
            c.0 += 1;
            c.1 += h.period;
        }
    }

    /// Ends the attribution: the held samples still undecided are placed, and the totals and
    /// moves counted for `async.moves`.
    fn attribute(&mut self) -> Option<(AsyncMoves, MovedStacks, Option<KernelBlock>)> {
        let mut a = self.asynchronous.take()?;
        let (rest, totals, kernel) = a.finish();
        self.place_decided(rest);
        let Placed { moves, stacks } = std::mem::take(&mut self.placed);
        let mut out = AsyncMoves::default();
        for t in &totals {
            let mut k = KindTotals::new(t.kind.as_str());
            k.held = t.held;
            k.attributed = t.attributed;
            k.windows = t.windows;
            k.objects = t.objects;
            k.unconsumed = t.unconsumed;
            k.evicted = t.evicted;
            if let (Some(run), async_attribution::Kind::Block) = (kernel, t.kind) {
                k.counted = Some(run.windows);
            }
            k.residue = t
                .residue
                .iter()
                .map(|(r, &n)| (r.as_str().to_string(), n))
                .collect();
            out.kinds.push(k);
        }
        out.moves = moves
            .into_iter()
            .map(
                |((kind, victim, beneficiary), (samples, nanoseconds))| Move {
                    kind: kind.to_string(),
                    victim,
                    beneficiary,
                    samples,
                    nanoseconds,
                },
            )
            .collect();
        Some((out, stacks, kernel))
    }
}

/// What an [`Aggregator`] gathered, ready to be written
/// ([`write_measurement`](crate::write_measurement)).
#[derive(Debug)]
pub struct Aggregate {
    pub(crate) replay: Replay,
    /// By process index.
    pub(crate) profiled: Vec<bool>,
    /// By (process index, image).
    pub(crate) images: FxHashMap<(usize, usize), ImageAcc>,
    pub(crate) system: Side,
    pub(crate) other: Side,
    pub(crate) system_wide: bool,
    pub(crate) launched: Option<u32>,
    pub(crate) ksyms: KernelSymbols,
    /// Mappings whose addresses are written displaced.
    pub(crate) displaced: Displacements,
    /// The ELF files read to unwind, for the mappings' load biases and build-ids.
    pub(crate) files: Images,
    stats: UnwindStats,
    /// Per-system-call latencies, when asked for.
    pub(crate) syscalls: Option<SyscallTracer>,
    /// The asynchronous-event attribution's moves and totals, when asked for (the counts of
    /// windows the kernel counted are added by the writer, from the recording).
    pub(crate) asynchronous: Option<AsyncMoves>,
    /// The moved stacks with the places they were taken in and moved to (the writer names the
    /// places' files in `async.moves`).
    pub(crate) moved: MovedStacks,
    /// What the block programs saw, when they ran.
    pub(crate) kernel_block: Option<KernelBlock>,
}

/// Where a sample's counts go: a process image's files (process index, image), or a
/// system-wide kernel profile (`-k.kernel`, `-k.other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Place {
    Image(usize, usize),
    System,
    Other,
}

/// Moved stacks: (kind, taken in, moved to, kernel frames innermost first) → (samples,
/// nanoseconds).
pub(crate) type MovedStacks = BTreeMap<(&'static str, Place, Place, Vec<u64>), (u64, u64)>;

/// A cell of the victim → beneficiary matrix: (kind, victim, beneficiary).
type Cell = (&'static str, Option<u32>, Option<u32>);

/// The held samples placed so far, counted for `async.moves`.
#[derive(Debug, Default)]
struct Placed {
    /// By cell: (samples, nanoseconds).
    moves: BTreeMap<Cell, (u64, u64)>,
    /// The moved stacks with their places.
    stacks: MovedStacks,
}

impl Aggregate {
    /// The processes, rebuilt from the side-band records.
    pub fn replay(&self) -> &Replay {
        &self.replay
    }

    /// How the user stacks were unwound.
    pub fn unwind_stats(&self) -> UnwindStats {
        self.stats
    }

    /// The asynchronous-event attribution's moves and totals, when it was asked for.
    pub fn async_moves(&self) -> Option<&AsyncMoves> {
        self.asynchronous.as_ref()
    }
}

/// Aggregates a whole recording (its records in time order): what a streaming run does as the
/// records arrive. `opts.launched` defaults to the recording's launched command.
pub fn aggregate(rec: &Recording, opts: &AggregateOptions, ksyms: KernelSymbols) -> Aggregate {
    let mut opts = opts.clone();
    if opts.launched.is_none() {
        opts.launched = rec.child.as_ref().map(|c| c.pid);
    }
    let mut a = Aggregator::new(opts);
    for (_, e) in rec.in_order() {
        a.feed(rec, e);
    }
    a.finish(ksyms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gmon_format::BoundaryKind;

    #[test]
    fn stack_table_gives_back_each_distinct_stack() {
        let ksyms = KernelSymbols::parse("ffff800000000000 T entry_SYSCALL_64\n".into());
        let mut t = StackTable::default();
        let k = [0xffff_8000_0000_2000, 0xffff_8000_0000_1000];
        t.add(&k, &[0x30, 0x20, 0x10], false, Hit::Kernel, 5);
        t.add(&k, &[0x30, 0x20, 0x10], false, Hit::Kernel, 7);
        // The same frames, truncated: another stack.
        t.add(&[], &[0x30, 0x20], true, Hit::User(0x30), 1);
        // Recursion: the same address at several depths.
        t.add(
            &[],
            &[0x40, 0x50, 0x50, 0x50, 0x10],
            false,
            Hit::User(0x40),
            2,
        );
        // Kernel frames only (a kernel thread): no boundary.
        t.add(&k, &[], false, Hit::Kernel, 3);
        let mut out = BTreeMap::new();
        t.collect(&ksyms, &mut out);
        let got: Vec<_> = out.into_iter().collect();
        assert_eq!(
            got,
            vec![
                ((vec![], vec![0x30, 0x20], None, true), (1, 1)),
                (
                    (vec![], vec![0x40, 0x50, 0x50, 0x50, 0x10], None, false),
                    (1, 2)
                ),
                ((k.to_vec(), vec![], None, false), (1, 3)),
                (
                    (
                        k.to_vec(),
                        vec![0x30, 0x20, 0x10],
                        Some(BoundaryKind::Syscall),
                        false
                    ),
                    (2, 12)
                ),
            ]
        );
    }

    #[test]
    fn kernel_symbols_skip_hidden_and_padding_entries() {
        let text = "0000000000000000 T hidden\n\
                    ffffffff81001000 T __pfx_entry_SYSCALL_64\n\
                    ffffffff81001010 T entry_SYSCALL_64\n\
                    ffffffff81002000 t asm_sysvec_apic_timer_interrupt\n\
                    ffffffff81003000 d some_data\n";
        let k = KernelSymbols::parse(text.into());
        assert_eq!(k.name(0xffff_ffff_8100_1020), Some("entry_SYSCALL_64"));
        assert_eq!(
            k.name(0xffff_ffff_8100_3004),
            Some("asm_sysvec_apic_timer_interrupt")
        );
        assert_eq!(
            k.boundary(&[0xffff_ffff_8100_2010]),
            BoundaryKind::Interrupt
        );
        assert_eq!(k.text(), text);
        assert!(KernelSymbols::parse("0000000000000000 T x\n".into()).is_empty());
    }
}
