//! The public sampling API: launch or attach, drain the rings, return a [`Recording`].
//!
//! Longer than 800 lines because it is one state machine: opening the events, the drain loop
//! and the stop and exit handling all work on the [`Sampler`]'s private state (rings, pid set,
//! child, counters). What does not need that state lives beside it: the checks before
//! opening (`preflight`), the child's launch (`spawn`), the clocks (`clock`) and the decoding
//! of records (`recording`).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::aggregate::Aggregator;
use crate::bpf::LiveCopy;
use crate::clock::{monotonic_ns, realtime_ns};
use crate::config::{Config, MAX_USER_STACK_BYTES, StackCopier};
use crate::error::{Error, Result};
use crate::preflight::{MAX_KERNEL_CHAIN, MaxStackRaise, fit_max_stack, open_error, ring_pages};
use crate::procfs;
use crate::recording::StackStart;
use crate::recording::TracepointInfo;
use crate::recording::{ChildExit, CounterKind, FrameEnds, Recording, SideBand, SideRecord};
use crate::ring::{Ring, page_size};
use crate::spawn::StoppedChild;
use crate::sys;
use crate::taskstats;
use crate::tracefs::{Tracefs, open_tracepoint};

/// Where a streaming run hands its records: an [`Aggregator`], or a continuous run's windows
/// ([`crate::Continuous`]).
pub(crate) trait RecordSink {
    /// Takes the records of `rec` stamped at most `upto`, in time order, and removes them.
    fn release(&mut self, rec: &mut Recording, upto: u64);
    /// Whether the events should be off for now (a paused continuous run).
    fn paused(&self) -> bool {
        false
    }
}

impl RecordSink for Aggregator {
    fn release(&mut self, rec: &mut Recording, upto: u64) {
        self.read_kernel_records();
        rec.release(upto, |r, e| self.feed(r, e));
    }
}

/// How a run is going, passed to the callback of [`Sampler::run_with`] after each drain.
#[derive(Debug)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// Time since [`Sampler::run_with`] started.
    pub elapsed: Duration,
    /// Samples so far.
    pub samples: u64,
    /// Samples lost so far (from LOST records).
    pub lost: u64,
    /// Processes seen so far.
    pub processes: usize,
    /// Processes that appeared since the last call: pid and command name (empty if not known
    /// yet).
    pub new_processes: &'a [(u32, String)],
}

/// A set of per-CPU cpu-clock events with their rings, following a command or processes.
#[derive(Debug)]
pub struct Sampler {
    config: Config,
    events: Vec<OwnedFd>,
    /// The CPU of each of `events`.
    event_cpus: Vec<i32>,
    /// Page-fault, context-switch and migration events, tracepoints and the switch event,
    /// writing into the cpu-clock rings.
    counters: Vec<OwnedFd>,
    /// Counting-mode twins of tracepoints: (index in `recording.tracepoints`, event).
    twins: Vec<(usize, OwnedFd)>,
    /// Pids seen in the records, read from /proc while they live ([`Sampler::poll_proc`]).
    watched: BTreeSet<u32>,
    /// Watched pids not read from /proc yet.
    unread: BTreeSet<u32>,
    /// Every pid reported through [`Progress::new_processes`].
    ever_seen: BTreeSet<u32>,
    /// System-wide mode: the processes asked for and their descendants, the only ones watched
    /// and reported.
    follow: Option<BTreeSet<u32>>,
    /// How far `watched` has looked into the recording.
    seen_samples: usize,
    seen_side_band: usize,
    last_proc_poll: Option<Instant>,
    /// When every watched pid was last read.
    last_full_proc_poll: Option<Instant>,
    rings: Vec<Ring>,
    /// The task-wake events and their one ring per CPU ([`sys::task_wake_attr`]); empty when
    /// they could not be opened, without taskstats, without [`Config::quiet_rounds`], or in a
    /// system-wide run (every task of the machine would wake it).
    wakers: Vec<OwnedFd>,
    wake_rings: Vec<Ring>,
    child: Option<u32>,
    /// Taskstats exit records, when the kernel allows them (root).
    taskstats: Option<taskstats::Listener>,
    recording: Recording,
    /// The BPF program that copies the user stacks, if it does (else the kernel does).
    live_copy: Option<LiveCopy>,
    /// Dropped last: the kernel lets the limit go back only once the events are closed.
    max_stack_raise: Option<MaxStackRaise>,
}

/// How often a run that receives the kernel's exit records (taskstats, which carry the
/// counters of every process that ends) reads /proc for the processes it follows: then a
/// reading only keeps their names and arguments current (a new process or program is read at
/// once, the survivors again at the end), and /proc's text files cost a profiled process's
/// run ~1.6 ms of CPU a second at ten readings a second; at one a second they were still half
/// of pkgmon's own time while the workload slept (0.38 ms a second: 0.38 us on each sample at
/// 1 kHz).
const PROC_REFRESH_WITH_TASKSTATS: Duration = Duration::from_secs(10);

/// The longest wait between two rounds of draining when the kernel wakes the run at each new
/// task or program (the task-wake rings) and reports the counters of each task that ends
/// (taskstats), so that a round is needed only when a ring fills or a task appears: at 1 kHz,
/// rounds every 100 ms were most of pkgmon's own time while recording (1,463 ns a sample
/// against 531 with this, its threads' runtime over six seconds of work.c).
const QUIET_ROUND: Duration = Duration::from_secs(1);

/// How long after a task record wakes the run its round begins: an exec's comm record is
/// written before the new program's arguments and stack are set up, and /proc shows them
/// only then.
const TASK_SETTLE: Duration = Duration::from_millis(10);

/// The shortest time between two rounds that task records ask for, so that a storm of new
/// tasks costs at most 50 rounds a second: a shell running forty 20 ms programs had 40 of
/// them read from /proc while they ran with rounds 20 ms apart, 8 with 100 ms (pkgmon's own
/// CPU the same within the runs' spread, its start and end dominating).
const TASK_GAP: Duration = Duration::from_millis(20);

impl Sampler {
    /// Opens the events with the stack copier `config` asks for; `Auto` falls back to the
    /// kernel's copies, with a note to root (to whom BPF is permitted), if the BPF copier
    /// cannot be loaded or attached.
    fn open_events(pids: &[i32], config: &Config, on_exec: bool) -> Result<Sampler> {
        let stack_user = config.user_stack_bytes.min(MAX_USER_STACK_BYTES);
        if stack_user == 0 || config.stack_copier == StackCopier::Kernel {
            return Sampler::open_events_with(pids, config, on_exec, None);
        }
        let tried = LiveCopy::load(stack_user)
            .and_then(|live| Sampler::open_events_with(pids, config, on_exec, Some(live)));
        match tried {
            Err(e) if config.stack_copier == StackCopier::Auto => {
                let mut s = Sampler::open_events_with(pids, config, on_exec, None)?;
                // Safety: geteuid has no preconditions.
                if unsafe { libc::geteuid() } == 0 {
                    s.recording.notes.push(format!(
                        "the kernel copied the user stacks, each to the end of its mapping, \
                         since the BPF program that copies only their frames could not run: {e}"
                    ));
                }
                Ok(s)
            }
            tried => tried,
        }
    }

    fn open_events_with(
        pids: &[i32],
        config: &Config,
        on_exec: bool,
        mut live_copy: Option<LiveCopy>,
    ) -> Result<Sampler> {
        let mut notes = Vec::new();
        let asked = config.max_stack.max(1);
        if asked > MAX_KERNEL_CHAIN {
            notes.push(format!(
                "the kernel walks callchains {MAX_KERNEL_CHAIN} frames deep at most (deeper \
                 chains cost the workload its time and do not fit a sample record); deeper \
                 stacks, up to {asked} frames, are completed from the stack copy and the \
                 thread's earlier samples"
            ));
        }
        let (max_stack, mut max_stack_raise) =
            fit_max_stack(asked.min(MAX_KERNEL_CHAIN), &mut notes);
        let stack_user = config
            .user_stack_bytes
            .min(MAX_USER_STACK_BYTES)
            .next_multiple_of(8);
        let pages = ring_pages(&Config {
            max_stack,
            user_stack_bytes: stack_user,
            ..config.clone()
        });
        let mut spec = sys::EventSpec {
            freq: config.frequency,
            stack_user: if live_copy.is_some() { 0 } else { stack_user },
            max_stack,
            user_only: config.user_only,
            user_chain: !live_copy.as_ref().is_some_and(LiveCopy::copies_full_size),
            enable_on_exec: on_exec,
            inherit: !config.system_wide,
            wakeup_watermark: (pages * page_size() / 4) as u32,
            mmap_build_ids: !config.system_wide,
        };
        let mut events = Vec::new();
        let mut event_cpus = Vec::new();
        let mut counters = Vec::new();
        let mut counter_ids = Vec::new();
        let mut rings = Vec::new();
        let mut copy_ids = Vec::new();
        let mut tracepoints = Vec::new();
        if !config.tracepoints.is_empty() {
            let tracefs = Tracefs::find_or_mount()?;
            if tracefs.mounted_here() {
                notes.push(format!(
                    "tracefs was not mounted: mounted it at {} (left mounted)",
                    tracefs.root().display()
                ));
            }
            for t in &config.tracepoints {
                let format = tracefs.event(&t.system, &t.name)?;
                tracepoints.push(TracepointInfo {
                    format,
                    filter: t.filter.clone(),
                    kernel_chain: t.kernel_chain,
                    user_chain: t.user_chain,
                    user_stack_bytes: t.user_stack_bytes,
                    counted: t.count.then_some(0),
                    received: 0,
                    sample_type: sys::tracepoint_sample_type(
                        sys::ChainParts {
                            kernel: t.kernel_chain,
                            user: t.user_chain,
                        },
                        t.user_stack_bytes,
                    ),
                });
            }
        }
        let mut trace_ids = Vec::new();
        let mut twins = Vec::new();
        for cpu in procfs::online_cpus() {
            let mut owner: Option<usize> = None;
            for &pid in pids {
                let mut attr = sys::cpu_clock_attr(&spec);
                let fd = match sys::open(&mut attr, pid, cpu) {
                    // Another session put kernel.perf_event_max_stack back between the fit
                    // above and this first callchain event (once one is open, the kernel
                    // refuses to change it): fit again, once.
                    Err(e) if events.is_empty() && e.raw_os_error() == Some(libc::EOVERFLOW) => {
                        let (fitted, raise) = fit_max_stack(spec.max_stack, &mut notes);
                        spec.max_stack = fitted;
                        max_stack_raise = raise.or(max_stack_raise);
                        let mut attr = sys::cpu_clock_attr(&spec);
                        sys::open(&mut attr, pid, cpu)
                    }
                    opened => opened,
                }
                .map_err(|e| open_error(e, pid, cpu, config))?;
                match owner {
                    None => {
                        let ring = Ring::map(&fd, pages).map_err(|e| {
                            if e.raw_os_error() == Some(libc::EPERM) {
                                Error::MlockLimit {
                                    kib: ((pages + 1) * page_size() / 1024) as u64,
                                    limit_kib: procfs::sysctl_i64(
                                        "/proc/sys/kernel/perf_event_mlock_kb",
                                    )
                                    .unwrap_or(0)
                                    .max(0) as u64,
                                    source: Some(e),
                                }
                            } else {
                                Error::io(format!("cannot map the ring buffer of cpu {cpu}"), e)
                            }
                        })?;
                        rings.push(ring);
                        owner = Some(events.len());
                        if let Some(live) = &mut live_copy {
                            copy_ids.push(live.open_output(cpu, &fd)?);
                        }
                    }
                    Some(i) => sys::set_output(&fd, &events[i]).map_err(|e| {
                        Error::io(format!("cannot share the ring buffer of cpu {cpu}"), e)
                    })?,
                }
                if let Some(live) = &live_copy {
                    live.attach(&fd)?;
                }
                let ring_owner = owner.unwrap_or(events.len());
                events.push(fd);
                event_cpus.push(cpu);
                // Every page fault, for the latency collection only (see `CounterKind`):
                // the syscall tracer counts each into the call it interrupted.
                if !config.tracepoints.is_empty() {
                    let mut attr = sys::counter_attr(sys::PERF_COUNT_SW_PAGE_FAULTS, &spec);
                    let fd = sys::open(&mut attr, pid, cpu)
                        .map_err(|e| open_error(e, pid, cpu, config))?;
                    sys::set_output(&fd, &events[ring_owner]).map_err(|e| {
                        Error::io(format!("cannot share the ring buffer of cpu {cpu}"), e)
                    })?;
                    let id = sys::event_id(&fd)
                        .map_err(|e| Error::io("cannot read a perf event's id", e))?;
                    counter_ids.push((id, CounterKind::PageFault));
                    counters.push(fd);
                }
                let ring = &events[ring_owner];
                if config.context_switches {
                    let mut attr = sys::switch_attr(&spec);
                    let fd = sys::open(&mut attr, pid, cpu)
                        .map_err(|e| open_error(e, pid, cpu, config))?;
                    sys::set_output(&fd, ring).map_err(|e| {
                        Error::io(format!("cannot share the ring buffer of cpu {cpu}"), e)
                    })?;
                    counters.push(fd);
                }
                for (i, (t, info)) in config.tracepoints.iter().zip(&tracepoints).enumerate() {
                    // A CPU-wide tracepoint is opened once per CPU, with the first pid.
                    if t.all_tasks && pid != pids[0] {
                        continue;
                    }
                    let (tpid, tspec) = if t.all_tasks {
                        let mut s = spec.clone();
                        (s.inherit, s.enable_on_exec) = (false, false);
                        (-1, s)
                    } else {
                        (pid, spec.clone())
                    };
                    let opened = open_tracepoint(t, info, tpid, cpu, ring, &tspec, config)?;
                    trace_ids.push((opened.id, i as u32));
                    if t.all_tasks && on_exec {
                        // enable_on_exec means nothing to a CPU-wide event: it starts now, and
                        // the launcher's records before the exec are told apart by pid.
                        sys::set_enabled(&opened.sampled, true)
                            .map_err(|e| Error::io("cannot enable the events", e))?;
                    }
                    counters.push(opened.sampled);
                    if let Some(twin) = opened.twin {
                        if t.all_tasks && on_exec {
                            sys::set_enabled(&twin, true)
                                .map_err(|e| Error::io("cannot enable the events", e))?;
                        }
                        twins.push((i, twin));
                    }
                }
            }
        }
        let (taskstats, taskstats_refused) =
            match taskstats::Listener::register(&procfs::online_cpus()) {
                Ok(l) => (Some(l), None),
                Err(e) => (None, Some(e.to_string())),
            };
        // Without the exit records the run reads /proc every poll interval anyway.
        let quiet = config.quiet_rounds && !config.system_wide && taskstats.is_some();
        let (wakers, wake_rings) = if quiet {
            open_task_wake(pids, &spec).unwrap_or_default()
        } else {
            Default::default()
        };
        let recording = Recording {
            taskstats_refused,
            notes,
            frequency: config.frequency,
            user_stack_bytes: live_copy
                .as_ref()
                .map_or(spec.stack_user, |l| l.max_bytes()),
            max_stack: spec.max_stack,
            mmap_build_ids: spec.mmap_build_ids,
            start_time: monotonic_ns(),
            start_realtime: realtime_ns(),
            counter_ids,
            tracepoints,
            trace_ids,
            frame_ends: FrameEnds {
                active: live_copy.is_some(),
                ..FrameEnds::default()
            },
            user_chains_from_copies: !spec.user_chain,
            copy_ids,
            ..Recording::default()
        };
        Ok(Sampler {
            config: config.clone(),
            events,
            event_cpus,
            counters,
            twins,
            watched: BTreeSet::new(),
            ever_seen: BTreeSet::new(),
            follow: None,
            seen_samples: 0,
            seen_side_band: 0,
            last_proc_poll: None,
            last_full_proc_poll: None,
            unread: BTreeSet::new(),
            rings,
            wakers,
            wake_rings,
            child: None,
            taskstats,
            recording,
            live_copy,
            max_stack_raise,
        })
    }

    /// Starts `argv` stopped, opens the events on it and lets it `exec`, which enables them.
    ///
    /// The child resets SIGINT to its default so Ctrl-C reaches it even if the caller ignores
    /// it. Returns an error if the command cannot be run (errno from `execvp`) or the events
    /// cannot be opened (see [`preflight`](crate::preflight()) for the messages).
    pub fn launch(argv: &[OsString], config: &Config) -> Result<Sampler> {
        Sampler::launch_with(argv, config, |_| Ok(()))
    }

    /// Like [`Sampler::launch`], calling `before_exec` with the command's pid once its events
    /// are open and before it runs: to follow it by other means too (the in-kernel latency
    /// collection's map of followed processes). An error from it kills the command.
    pub fn launch_with(
        argv: &[OsString],
        config: &Config,
        before_exec: impl FnOnce(u32) -> Result<()>,
    ) -> Result<Sampler> {
        let child = StoppedChild::fork(argv, !config.keep_running)?;
        let pid = child.pid();
        let opened = if config.system_wide {
            Sampler::open_events(&[-1], config, false).and_then(|mut s| {
                s.enable()?;
                s.follow = Some(BTreeSet::from([pid as u32]));
                Ok(s)
            })
        } else {
            Sampler::open_events(&[pid], config, true)
        };
        let mut sampler = match opened {
            Ok(s) => s,
            Err(e) => {
                child.kill();
                return Err(e);
            }
        };
        sampler.child = Some(pid as u32);
        // On error the sampler's drop kills and reaps the held command.
        before_exec(pid as u32)?;
        if let Err(e) = child.release() {
            sampler.child = None;
            return Err(e);
        }
        Ok(sampler)
    }

    /// Attaches to running processes: every current thread of each pid, and (through
    /// `inherit`) everything they start from now on.
    ///
    /// Existing executable mappings and thread names are synthesized from /proc with time 0.
    /// Threads created while attaching may be missed. Returns an error if a pid does not exist
    /// or the events cannot be opened.
    pub fn attach(pids: &[i32], config: &Config) -> Result<Sampler> {
        let mut tids = Vec::new();
        for &pid in pids {
            tids.extend(procfs::threads(pid).map_err(|_| Error::NoSuchProcess { pid })?);
        }
        if config.system_wide {
            tids = vec![-1];
        } else if tids.is_empty() {
            return Err(Error::EmptyCommand);
        }
        let mut s = Sampler::open_events(&tids, config, false)?;
        if config.system_wide {
            s.follow = Some(pids.iter().map(|&p| p as u32).collect());
        }
        s.enable()?;
        // Read /proc only after enabling, so a mapping made meanwhile shows up in at least one
        // of the two; records from the rings override these snapshots (time 0) in replay.
        s.synthesize(pids);
        Ok(s)
    }

    /// Samples every CPU and follows every process ([`Config::system_wide`] is implied): what
    /// a continuous run profiles. The names and executable mappings of the processes running
    /// now are synthesized from /proc (time 0), as [`Sampler::attach`] does for its pids, so
    /// their user stacks unwind from the first sample.
    ///
    /// Returns an error if the events cannot be opened.
    pub fn system(config: &Config) -> Result<Sampler> {
        let config = Config {
            system_wide: true,
            ..config.clone()
        };
        let s = Sampler::open_events(&[-1], &config, false)?;
        s.enable()?;
        let pids: Vec<i32> = std::fs::read_dir("/proc")
            .map_err(|e| Error::io("cannot list /proc", e))?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        let mut s = s;
        s.synthesize(&pids);
        Ok(s)
    }

    /// Adds the names and executable mappings /proc shows of `pids`, at time 0.
    fn synthesize(&mut self, pids: &[i32]) {
        let mut synth = Vec::new();
        for &pid in pids {
            for tid in procfs::threads(pid).unwrap_or_default() {
                let comm =
                    procfs::text(&format!("/proc/{pid}/task/{tid}/comm"), 4096).unwrap_or_default();
                synth.push(SideBand::Comm {
                    pid: pid as u32,
                    tid: tid as u32,
                    comm: comm.trim_end().to_owned(),
                    exec: false,
                });
            }
            let maps =
                procfs::text(&format!("/proc/{pid}/maps"), procfs::LARGE).unwrap_or_default();
            synth.extend(parse_maps(pid as u32, &maps));
        }
        self.recording
            .side_band
            .extend(synth.into_iter().map(|kind| SideRecord {
                time: 0,
                cpu: 0,
                kind,
            }));
    }

    fn enable(&self) -> Result<()> {
        for fd in self.all_events() {
            sys::set_enabled(fd, true).map_err(|e| Error::io("cannot enable the events", e))?;
        }
        Ok(())
    }

    /// Every event of the run but the twins: samplers, counters, tracepoints.
    fn all_events(&self) -> impl Iterator<Item = &OwnedFd> {
        self.events
            .iter()
            .chain(&self.counters)
            .chain(self.twins.iter().map(|(_, fd)| fd))
            .chain(&self.wakers)
    }

    /// The longest wait between rounds: [`QUIET_ROUND`] when the kernel wakes the run at each
    /// new task (the wake rings are open only where it may sleep, [`Config::quiet_rounds`]);
    /// else the poll interval.
    fn quiet_round(&self) -> Duration {
        if self.wake_rings.is_empty() {
            self.config.poll_interval
        } else {
            self.config.poll_interval.max(QUIET_ROUND)
        }
    }

    /// Things the user should know about how this run samples (a callchain limit that could
    /// not be raised, say), as sentences; the recording keeps them too.
    pub fn notes(&self) -> &[String] {
        &self.recording.notes
    }

    /// The pid of the launched command, if any.
    pub fn child_pid(&self) -> Option<u32> {
        self.child
    }

    fn drain(&mut self) {
        let rec = &mut self.recording;
        for ring in &mut self.rings {
            ring.drain(|r| rec.push_raw(r));
        }
        if let Some(live) = &self.live_copy {
            for (tid, end) in rec.frame_ends.changes.drain(..) {
                live.set_end(tid, end);
            }
        }
        self.drain_taskstats();
    }

    fn drain_taskstats(&mut self) {
        if let Some(l) = &mut self.taskstats {
            l.drain(monotonic_ns, &mut self.recording.task_exits);
            self.recording.taskstats_overflows = l.overflows;
        }
    }

    /// Reads /proc for the processes the records have named, keeping the latest reading of
    /// each: processes other than the launched command are reaped by their own parents, so
    /// without the kernel's exit records (taskstats, root) a reading is the last chance to see
    /// their counters. A new process is read at the round that sees it when the task-wake
    /// rings bring such rounds, else at most one poll interval after; all of them again every
    /// poll interval, or every [`PROC_REFRESH_WITH_TASKSTATS`] when the exit records give the
    /// counters of those that end, and at the end of the run (`all`).
    fn poll_proc(&mut self, all: bool) {
        // Rounds woken by new tasks are spaced by TASK_GAP already.
        let first = if self.wake_rings.is_empty() {
            (self.config.proc_poll_interval).unwrap_or(self.config.poll_interval)
        } else {
            Duration::ZERO
        };
        let every = self
            .config
            .proc_poll_interval
            .unwrap_or(if self.taskstats.is_some() {
                PROC_REFRESH_WITH_TASKSTATS.max(self.config.poll_interval)
            } else {
                self.config.poll_interval
            });
        let all = all
            || self
                .last_full_proc_poll
                .is_none_or(|t| t.elapsed() >= every);
        let new =
            !self.unread.is_empty() && self.last_proc_poll.is_none_or(|t| t.elapsed() >= first);
        if !all && !new {
            return;
        }
        self.last_proc_poll = Some(Instant::now());
        if all {
            self.last_full_proc_poll = self.last_proc_poll;
        }
        let unread = std::mem::take(&mut self.unread);
        let rec = &mut self.recording;
        let now = monotonic_ns();
        let ever_seen = &mut self.ever_seen;
        let forget = self.config.proc_poll_interval.is_some();
        let mut again = BTreeSet::new();
        self.watched.retain(|&pid| {
            if !all && !unread.contains(&pid) {
                return true;
            }
            let Some(reading) = procfs::reading(pid, now) else {
                rec.stack_starts.remove(&pid);
                // A continuous run forgets a pid once it is gone, so that what it keeps does
                // not grow with the processes of its whole life; a reuse is reported again.
                if forget {
                    ever_seen.remove(&pid);
                }
                return false;
            };
            // /proc shows a new program's arguments only once its exec has set them up (a
            // round woken by the exec can come first): such a pid is read again next round,
            // as is a zombie's until its entry goes.
            if reading.argv.is_empty() && unread.contains(&pid) {
                again.insert(pid);
            }
            if reading.start_stack != 0 {
                let start = StackStart {
                    start: reading.start_stack,
                    since: now,
                };
                rec.stack_starts.insert(pid, start);
            }
            // A zombie's /proc entry is still readable; a pid seen exiting stays watched until
            // its entry goes, which costs one failed read.
            match rec
                .proc_readings
                .iter_mut()
                .find(|r| r.pid == pid && r.start_ticks == reading.start_ticks)
            {
                // A process that exited and awaits its parent has no arguments any more (the
                // end-of-run reading of a launched command that exec'd left its program's
                // header without them): its final counters are kept with the arguments and
                // time of the reading before, when it ran.
                Some(old) if reading.argv.is_empty() && !old.argv.is_empty() => {
                    old.counters = reading.counters;
                }
                Some(old) => *old = reading,
                None => rec.proc_readings.push(reading),
            }
            true
        });
        self.unread.extend(again);
    }

    fn report(&mut self, started: Instant, progress: &mut impl FnMut(&Progress<'_>)) {
        let new = self.note_new_pids();
        progress(&Progress {
            elapsed: started.elapsed(),
            samples: self.recording.sample_count,
            lost: self.recording.lost,
            processes: self.ever_seen.len(),
            new_processes: &new,
        });
    }

    /// Adds the pids named by records drained since the last call to the watched set, and
    /// returns the ones never seen before, with their command name when a record gave it.
    fn note_new_pids(&mut self) -> Vec<(u32, String)> {
        let rec = &self.recording;
        let mut new = Vec::new();
        let mut execs = Vec::new();
        let (watched, seen, unread) = (&mut self.watched, &mut self.ever_seen, &mut self.unread);
        let mut add = |pid: u32, follow: &Option<BTreeSet<u32>>| {
            if follow.as_ref().is_some_and(|f| !f.contains(&pid)) {
                return;
            }
            if seen.insert(pid) {
                watched.insert(pid);
                unread.insert(pid);
                new.push(pid);
            }
        };
        for r in &rec.side_band[self.seen_side_band..] {
            match r.kind {
                SideBand::Fork { pid, ppid, .. } => {
                    if let Some(f) = self.follow.as_mut()
                        && f.contains(&ppid)
                    {
                        f.insert(pid);
                    }
                    add(pid, &self.follow);
                }
                SideBand::Comm { pid, exec, .. } => {
                    add(pid, &self.follow);
                    if exec {
                        execs.push(pid);
                    }
                }
                _ => {}
            }
        }
        // Samples come in runs of one process: a pid is looked up once a run, not once a sample.
        let mut last = None;
        for s in &rec.samples[self.seen_samples..] {
            if last != Some(s.pid) {
                add(s.pid, &self.follow);
                last = Some(s.pid);
            }
        }
        // A new program: its arguments are read again.
        for pid in execs {
            if self.watched.contains(&pid) {
                self.unread.insert(pid);
            }
        }
        let named: Vec<(u32, String)> = new
            .into_iter()
            .map(|pid| {
                let comm = rec.side_band[..]
                    .iter()
                    .rev()
                    .find_map(|r| match &r.kind {
                        SideBand::Comm {
                            pid: p, tid, comm, ..
                        } if *p == pid && *tid == pid => Some(comm.clone()),
                        _ => None,
                    })
                    .or_else(|| {
                        procfs::text(&format!("/proc/{pid}/comm"), 4096)
                            .map(|c| c.trim_end().to_owned())
                    })
                    .unwrap_or_default();
                (pid, comm)
            })
            .collect();
        self.seen_samples = rec.samples.len();
        self.seen_side_band = rec.side_band.len();
        named
    }

    /// Reaps the launched child if it exited (or waits for it if `block`), reading its /proc
    /// counters first while it is a zombie.
    fn collect_child(&mut self, block: bool) {
        let Some(pid) = self.child else { return };
        // Safety: zeroed siginfo_t is a valid out-buffer for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOWAIT | if block { 0 } else { libc::WNOHANG };
        // Safety: `info` is a valid out-pointer; `pid` is our child.
        let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, flags) };
        // Safety: after a successful waitid the pid field is initialized (0 if none exited).
        if r < 0 || unsafe { info.si_pid() } == 0 {
            return;
        }
        let counters = procfs::counters(pid);
        let mut status = 0;
        // Safety: zeroed rusage is a valid out-buffer.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // Safety: valid out-pointers; reaping our own child.
        unsafe { libc::wait4(pid as i32, &mut status, 0, &mut ru) };
        self.child = None;
        self.recording.child = Some(ChildExit {
            pid,
            code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            counters,
            max_rss_kib: ru.ru_maxrss as u64,
        });
    }

    /// Ends a launched command that is still running: SIGTERM, so that it can clean up as it
    /// would on Ctrl-C, then SIGKILL if it has not exited within a second.
    fn end_child(&mut self) {
        let Some(pid) = self.child else { return };
        // Safety: `pid` is our unreaped child, so it cannot have been reused.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        for _ in 0..100 {
            self.collect_child(false);
            if self.child.is_none() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Safety: as above; still unreaped.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }

    /// Drains the rings until every ring reports POLLHUP (the whole process tree is gone),
    /// `stop` becomes true, or the configured duration passes. `stop` is looked at after each
    /// round ([`Config::poll_interval`]): at most a second late, at once when a signal to the
    /// thread that runs this (its handler sets the flag) interrupts the wait.
    ///
    /// When stopped early, the events are disabled, the rings drained once more, and a launched
    /// command that is still running is sent SIGTERM (SIGKILL if it has not exited a second
    /// later) and reaped. Returns an error only if `poll` fails.
    pub fn run(self, stop: &AtomicBool) -> Result<Recording> {
        self.run_with(stop, |_| {})
    }

    /// Like [`Sampler::run`], calling `progress` after each round of draining the rings (see
    /// [`Config::poll_interval`] for when they come) with counts so far and the processes that
    /// appeared.
    pub fn run_with(
        self,
        stop: &AtomicBool,
        progress: impl FnMut(&Progress<'_>),
    ) -> Result<Recording> {
        self.run_into(stop, progress, None)
    }

    /// Like [`Sampler::run_with`], but hands every record to `agg` as soon as no earlier one
    /// can still arrive (the rings of different CPUs are drained in turn, so a record is passed
    /// on once a whole later round of draining has begun), and keeps none: memory stays
    /// proportional to what `agg` holds (distinct stacks and processes), not to the samples.
    /// The recording returned has everything but the samples, side-band records and counted
    /// events, which went to `agg`.
    pub fn run_aggregating(
        self,
        stop: &AtomicBool,
        progress: impl FnMut(&Progress<'_>),
        agg: &mut Aggregator,
    ) -> Result<Recording> {
        self.run_into(stop, progress, Some(agg))
    }

    /// Like [`Sampler::run_aggregating`], handing the records to a continuous run, which
    /// writes a measurement per time window as the run goes (and pauses the events while
    /// asked to). Call [`crate::Continuous::finish`] afterwards to write the last window.
    pub fn run_continuous(
        self,
        stop: &AtomicBool,
        progress: impl FnMut(&Progress<'_>),
        windows: &mut crate::Continuous,
    ) -> Result<Recording> {
        self.run_into(stop, progress, Some(windows))
    }

    /// Passes on the records stamped before `upto` (all with `u64::MAX`).
    fn release(&mut self, upto: u64, agg: &mut Option<&mut dyn RecordSink>) {
        if let Some(agg) = agg {
            agg.release(&mut self.recording, upto);
            self.seen_samples = self.recording.samples.len();
            self.seen_side_band = self.recording.side_band.len();
        }
    }

    fn run_into(
        mut self,
        stop: &AtomicBool,
        mut progress: impl FnMut(&Progress<'_>),
        mut agg: Option<&mut dyn RecordSink>,
    ) -> Result<Recording> {
        let mut paused = false;
        /// How long before a round of draining began a record must be stamped to be passed on
        /// in that round: the kernel writes a record within microseconds of stamping it, so by
        /// then it is in its ring and this round has read it. Releasing up to the round's own
        /// start keeps only the last few milliseconds for the next round (releasing up to the
        /// previous round's start kept a whole round and copied it again: a fifth of the
        /// collector's own time at 10 kHz).
        const SETTLE_NS: u64 = 5_000_000;
        let started = Instant::now();
        let quiet = self.quiet_round();
        // The cpu-clock events first, then the task-wake events.
        let sampling = self.events.len();
        let mut pfds: Vec<libc::pollfd> = self
            .events
            .iter()
            .chain(&self.wakers)
            .map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut last_round = Instant::now();
        // When a round a task record asked for begins; till then only the cpu-clock rings
        // are watched (so that a burst of new tasks costs one round, not one each).
        let mut due: Option<Instant> = None;
        loop {
            let mut wait = due.map_or(quiet, |d| d.saturating_duration_since(Instant::now()));
            if let Some(d) = self.config.duration {
                wait = wait.min(d.saturating_sub(started.elapsed()));
            }
            let timeout = wait.as_micros().div_ceil(1000).min(10_000) as i32;
            let watched = if due.is_some() { sampling } else { pfds.len() };
            for p in &mut pfds {
                p.revents = 0;
            }
            // Safety: `pfds` is a valid array of pollfd of at least `watched` entries.
            let r = unsafe { libc::poll(pfds.as_mut_ptr(), watched as libc::nfds_t, timeout) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(Error::io("cannot poll the perf events", e));
                }
            }
            let ring_ready = pfds[..sampling].iter().any(|p| p.revents != 0);
            let task_woke = pfds[sampling..].iter().any(|p| p.revents != 0);
            if task_woke && !ring_ready {
                let settled = Instant::now() + TASK_SETTLE;
                due = Some(settled.max(last_round + TASK_GAP));
                continue;
            }
            due = None;
            last_round = Instant::now();
            for ring in &mut self.wake_rings {
                ring.drain(|_| {});
            }
            let round = monotonic_ns();
            self.drain();
            self.collect_child(false);
            self.report(started, &mut progress);
            self.release(round.saturating_sub(SETTLE_NS), &mut agg);
            self.poll_proc(false);
            let pause = agg.as_ref().is_some_and(|a| a.paused());
            if pause != paused {
                paused = pause;
                for fd in self.all_events() {
                    let _ = sys::set_enabled(fd, !pause);
                }
            }
            let all_hup = r > 0
                && pfds[..sampling]
                    .iter()
                    .all(|p| p.revents & libc::POLLHUP != 0);
            // CPU-wide events never hang up: a system-wide run of a command ends with it.
            let command_done = self.config.system_wide && self.recording.child.is_some();
            if all_hup || command_done {
                if command_done {
                    for fd in self.all_events() {
                        let _ = sys::set_enabled(fd, false);
                    }
                }
                break;
            }
            let expired = self.config.duration.is_some_and(|d| started.elapsed() >= d);
            if stop.load(Ordering::Relaxed) || expired {
                self.recording.stopped = true;
                for fd in self.all_events() {
                    let _ = sys::set_enabled(fd, false);
                }
                self.end_child();
                break;
            }
        }
        self.drain();
        self.report(started, &mut progress);
        self.release(u64::MAX, &mut agg);
        // The processes still there, read once more: their last polled reading may be up to
        // a refresh interval old.
        self.poll_proc(true);
        self.recording.lost_reported_by_events_per_cpu = self
            .events
            .iter()
            .zip(&self.event_cpus)
            .filter_map(|(fd, &cpu)| Some((cpu as u32, sys::read_lost(fd).ok()?)))
            .chain(self.live_copy.iter().flat_map(LiveCopy::lost_per_cpu))
            .collect();
        self.recording.lost_reported_by_events = self
            .recording
            .lost_reported_by_events_per_cpu
            .iter()
            .map(|&(_, n)| n)
            .sum();
        self.collect_child(true);
        for (i, fd) in &self.twins {
            if let (Some(t), Ok(n)) = (self.recording.tracepoints.get_mut(*i), sys::read_count(fd))
            {
                *t.counted.get_or_insert(0) += n;
            }
        }
        // The kernel queues a task's exit record before the task becomes a zombie, so the
        // launched command's is here now that it is reaped.
        self.drain_taskstats();
        self.recording.end_time = monotonic_ns();
        self.rings.clear();
        self.events.clear();
        self.wake_rings.clear();
        self.wakers.clear();
        self.counters.clear();
        self.twins.clear();
        if let Some(note) = self
            .max_stack_raise
            .as_mut()
            .and_then(MaxStackRaise::restore)
        {
            self.recording.notes.push(note);
        }
        Ok(std::mem::take(&mut self.recording))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if let Some(pid) = self.child.take() {
            // Safety: `pid` is our unreaped child; kill and reap it so it does not linger.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
                libc::waitpid(pid as i32, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// Opens the task-wake events of `pids` ([`sys::task_wake_attr`]) on every CPU, with one
/// one-page ring per CPU; None if one cannot be opened or mapped (a dummy event refused, the
/// mlock limit reached), or if they would take more than a quarter of the descriptors the
/// process may open (a run attached to many threads on many CPUs needs its descriptors for
/// its samplers and its files; these only make rounds come sooner): the run then wakes every
/// poll interval instead.
fn open_task_wake(pids: &[i32], spec: &sys::EventSpec) -> Option<(Vec<OwnedFd>, Vec<Ring>)> {
    let cpus = procfs::online_cpus();
    let needed = (pids.len() * cpus.len()) as u64;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // Safety: `limit` is a valid out-pointer for getrlimit.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if got != 0 || needed.saturating_mul(4) > limit.rlim_cur {
        return None;
    }
    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut rings = Vec::new();
    for cpu in cpus {
        let owner = fds.len();
        for &pid in pids {
            let fd = sys::open(&mut sys::task_wake_attr(spec), pid, cpu).ok()?;
            match fds.get(owner) {
                None => rings.push(Ring::map(&fd, 1).ok()?),
                Some(ring) => sys::set_output(&fd, ring).ok()?,
            }
            fds.push(fd);
        }
    }
    Some((fds, rings))
}

/// Executable mappings of `/proc/PID/maps` as MMAP side-band records.
pub(crate) fn parse_maps(pid: u32, maps: &str) -> Vec<SideBand> {
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms), Some(off)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if perms.as_bytes().get(2) != Some(&b'x') {
            continue;
        }
        let (_dev, _ino) = (f.next(), f.next());
        let filename = f.collect::<Vec<_>>().join(" ");
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b), Ok(off)) = (
            u64::from_str_radix(a, 16),
            u64::from_str_radix(b, 16),
            u64::from_str_radix(off, 16),
        ) else {
            continue;
        };
        let Some(len) = b.checked_sub(a) else {
            continue;
        };
        out.push(SideBand::Mmap {
            pid,
            tid: pid,
            addr: a,
            len,
            pgoff: off,
            build_id: None,
            prot: (libc::PROT_READ | libc::PROT_EXEC) as u32,
            flags: libc::MAP_PRIVATE as u32,
            filename,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_maps_executable_lines_become_mappings() {
        let maps = "00400000-00401000 r-xp 00001000 08:01 12 /bin/a b\n\
                    00600000-00601000 rw-p 00000000 08:01 12 /bin/a b\n\
                    7fff0000-7fff2000 r-xp 00000000 00:00 0 [vdso]\n";
        let m = parse_maps(3, maps);
        assert_eq!(m.len(), 2);
        assert!(
            matches!(&m[0], SideBand::Mmap { addr: 0x400000, len: 0x1000, pgoff: 0x1000, filename, .. } if filename == "/bin/a b")
        );
    }
}
