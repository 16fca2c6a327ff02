//! System-call latencies aggregated in the kernel (`pkgmon --latency`'s and `--blocking`'s BPF
//! path): OSprof's log2 histograms per (process image, system call, user call site) counted by
//! BPF programs, so no record crosses to user space per call and none can be lost; with
//! blocking, DeBox's sleeps too (`blocking.rs`: where each call slept, how long, who woke it,
//! and its runnable time, summed per operation by a `sched_switch` and a `sched_waking`
//! program).
//!
//! Six short programs (`programs.rs`) share six maps:
//! - `sched_process_exec` arms a followed process (the events of the ring path turn on at the
//!   launched command's exec too) and counts its execs (`gen`: which image runs), in the
//!   process's entry and in the exec'ing thread's value; `sched_process_fork` follows the
//!   children of followed processes (inherit semantics); `sched_process_exit` puts a call its
//!   task never returned from in a map read at drains, and forgets the task.
//! - `sys_enter` (a raw tracepoint) keeps, per thread of an armed process, the entry time, the
//!   system call, its user call site and the image, in the thread's task-storage value,
//!   written in place at each call. The value is found from the current task with one helper
//!   call; a thread without one looks its process up (the pid filter) and gets one if the
//!   process is followed and armed, so the process is looked up once per thread, not twice
//!   per call (benches/examples/latency_floor.rs measures both: `pair` and `task`).
//! - the software page-fault event of the followed tasks (the event the ring path counts,
//!   so both paths count the same faults) counts the faults taken during a call.
//! - `sys_exit` (a raw tracepoint) computes the latency, its bucket at resolution r (the paper's
//!   formula, the same bounds as [`latency::Resolution`]), its time slice, and adds it to a
//!   per-CPU hash map read at drains ([`SyscallLatency::drain`]) and at the end.
//!
//! The two system-call programs are raw tracepoint programs: the kernel calls them straight
//! from the tracepoint with its arguments (the user registers, the call's number), where a
//! tracepoint program hangs on a perf event and is handed a perf record assembled at every
//! call of every task on the machine. Each starts with the pid filter, before any other map
//! work, as every task's calls run them.
//!
//! The call site is keyed by three words read from the user registers at entry (the
//! tracepoint's `regs`): the pc (in the system-call wrapper), the word at the stack pointer
//! (the return address into the wrapper's caller when the wrapper is a leaf without a frame),
//! and the return address of the frame `rbp` points to (the caller's caller, when the caller
//! keeps frame pointers; read only when `rbp` points into the stack above `sp`, as a faulting
//! read costs more than the rest of the program). Three reads, cheaper than
//! `bpf_get_stackid`'s walk. The words only key the histogram: the call that makes an entry
//! also sends its user registers and 1 KiB of its stack to a ring buffer
//! (`blocking::site_copy`), and the aggregator unwinds that copy from `.eh_frame` as the ring
//! path unwinds every call, so the site is the ring path's — also behind a wrapper that
//! pushes before its `syscall` instruction (glibc's `fcntl64`, where the word at the stack
//! pointer is data) and in code without frame pointers — at one record per entry, not per
//! call. Two call sites whose three words are equal (a framed wrapper whose word at `sp` is
//! the same data, called from two callers without frame pointers) share an entry, named by
//! the first; a copy the ring had no room for leaves its entry with the three words, said in
//! a note.
//!
//! The histogram's values are cumulative and read in place at each drain: an entry taken out
//! of the map while a program adds to it would lose that call (a million getpids lost one
//! or two per run that way, caught by the checksum); only past time slices are taken out.
//!
//! Task storage cannot be listed from user space: at the end, the calls still open are read
//! from the values of the followed processes' live threads (a pidfd of each thread is the
//! key) and put under the key the exit program would give them, so a thread exiting
//! meanwhile is counted once ([`SyscallLatency::finish`]). A kernel without task storage
//! (before 5.11) is refused with a message naming `--latency-path ring`.
//!
//! Every tracepoint program returns 1: a tracepoint's programs decide whether its perf events
//! see the hit, and the collection must not hide hits from anyone's events (its own counting
//! events, another tool's recording). A raw tracepoint program's return value is ignored.
//!
//! Nothing is hidden: the programs count the enters and exits they see, and each must be in
//! a bucket, unpaired or in a map-full count (OSprof's checksums, checked at the end); with
//! [`LatencyOptions::counting_events`] they are also checked against counting-mode perf
//! events on the same tasks (not by default: those cost as much as the programs). Calls
//! whose entry was not seen, calls never left, and what did not fit a map (open calls,
//! histogram entries, followed processes) are counted and reported. A reused pid's processes
//! are not told apart (the last one gets the calls).
//!
//! Files: `layout.rs` (the maps, frame and fields the programs share), `programs.rs` and
//! `blocking.rs` (the programs), `counts.rs` (what is handed on, and the records' decoding),
//! `sleeps.rs` (the blocking maps read back); this file loads, attaches and drains.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use gmon_format::latency::EventCheck;
use latency::Resolution;

use super::map::{Map, MapKind, u32_at, u64_at};
use super::prog::{Attachment, Program};
use super::ringbuf::RingBuf;
use crate::syscalls::LatencyOptions;
use crate::tracefs::Tracefs;
use crate::tracepoint::EventFormat;
use crate::{Error, Result};

mod blocking;
mod counts;
mod layout;
mod programs;
mod sleeps;

use counts::{CopyKey, SiteCopy, hist_key, parse_copy};
pub use counts::{Counted, CountedBucket, LatencyCounts};
pub(crate) use counts::{KernelWaker, OffCpu};

pub(super) use layout::field;

use layout::{
    COUNTS, ENTERS, EXITS, GONE, GONE_KEY, GONE_VALUE, HIST, HIST_FULL, HIST_KEY, HIST_VALUE,
    Offsets, PIDS, PIDS_FULL, S_GEN, S_T0, S_TGID, START_FULL, Shape, TASK, TASK_VALUE,
    UNPAIRED_ENTER, UNPAIRED_EXIT,
};
use programs::{
    enter_program, exec_program, exit_program, exit_task_program, fault_program, fork_program,
};

/// The in-kernel system-call latency collection: programs attached, maps read at drains.
#[derive(Debug)]
pub struct SyscallLatency {
    maps: Vec<Map>,
    _programs: Vec<Program>,
    /// The process programs' (exec, fork, exit): the exit's stays until the end's open calls
    /// are read ([`SyscallLatency::finish`]).
    attachments: Vec<Attachment>,
    /// The system-call programs'.
    sys_attachments: Vec<Attachment>,
    fault: Program,
    /// The page-fault events running `fault` on the followed tasks.
    fault_events: Vec<OwnedFd>,
    /// Counting-mode `sys_enter`, `sys_exit` events on the followed tasks.
    counting: Vec<(OwnedFd, OwnedFd)>,
    enter_format: EventFormat,
    exit_format: EventFormat,
    /// Whether `counting` is opened: [`LatencyOptions::counting_events`].
    counting_events: bool,
    start: u64,
    /// The histogram's entries as last read, histogram key bytes → sums: the map's values
    /// are cumulative, read in place (an entry taken out of the map while a program adds to
    /// it would lose that call).
    live: HashMap<Vec<u8>, Counted>,
    /// Entries of past time slices, taken out of the map (no call adds to them any more).
    closed: HashMap<Vec<u8>, Counted>,
    /// (start of slice 0, slice length), ns, if calls are counted per slice.
    slices: Option<(u64, u64)>,
    /// With blocking: the sleep programs (their misses are reported), and the sleeps
    /// drained so far: key bytes → (times, ns).
    sleep_programs: Vec<Program>,
    sleeps: HashMap<Vec<u8>, (u64, u64)>,
    /// Kernel frames kept of each sleep site and waker.
    kernel_frames: usize,
    /// The call sites' registers and stacks ([`blocking::site_copy`]), and those read so
    /// far, by (tgid, gen, the histogram key's three words).
    site_ring: RingBuf,
    /// With blocking, the sleep programs' maps (THREADS, SLEEPS, STACKS).
    sleep_maps: Vec<Map>,
    copies: HashMap<CopyKey, SiteCopy>,
    /// Calls left open by exited threads drained so far (GONE): (tgid, gen) → calls.
    gone: HashMap<(u32, u32), u64>,
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
        let off = Offsets::read(&fork, &gone)?;
        let switch = if opts.blocking {
            let switch = tracefs.event("sched", "sched_switch")?;
            let waking = tracefs.event("sched", "sched_waking")?;
            let off = blocking::SwitchOffsets::read(&switch, &waking)?;
            Some((switch, waking, off))
        } else {
            None
        };
        let kernel_frames = opts.kernel_frames.clamp(1, 64);
        let resolution = Resolution::new(opts.resolution).unwrap_or(Resolution::ONE);
        let r = resolution.get();
        let shape = Shape {
            resolution: r,
            slices: opts.slice_ns.map(|l| (start_ns, l)),
        };
        // Each thread's open call is in a task-storage value, found from the task with one
        // helper call where a hash keyed by tid costs a lookup (and the pid filter another):
        // benches/examples/latency_floor.rs's `pair` and `task` steps.
        let task =
            Map::create_task_storage("pkg_task", TASK_VALUE).map_err(|e| Error::Tracing {
                what: format!(
                    "in-kernel counting keeps each thread's open call in BPF task storage (Linux \
                 5.11 or later), which this kernel refused ({e}); use --latency-path ring"
                ),
                source: None,
            })?;
        let maps = vec![
            Map::create(MapKind::Hash, "pkg_pids", 4, 8, 16384)?,
            task,
            Map::create_sparse(MapKind::PercpuHash, "pkg_hist", HIST_KEY, HIST_VALUE, 65536)?,
            Map::create(MapKind::PercpuArray, "pkg_counts", 4, 8, blocking::N_COUNTS)?,
            Map::create(MapKind::Array, "pkg_bounds", 4, 8, 64 * r)?,
            Map::create_sparse(MapKind::Hash, "pkg_gone", GONE_KEY, GONE_VALUE, 65536)?,
        ];
        let mut sleep_maps = Vec::new();
        if switch.is_some() {
            let (key, value) = (blocking::SLEEP_KEY, blocking::SLEEP_VALUE);
            let frames = 8 * kernel_frames as u32;
            sleep_maps.extend([
                Map::create(
                    MapKind::Hash,
                    "pkg_threads",
                    4,
                    blocking::THREAD_VALUE,
                    32768,
                )?,
                Map::create_sparse(MapKind::PercpuHash, "pkg_sleeps", key, value, 65536)?,
                Map::create(
                    MapKind::StackTrace,
                    "pkg_stacks",
                    4,
                    frames,
                    stack_map_buckets(frames),
                )?,
            ]);
        }
        for b in 0..64 * r {
            maps[layout::BOUNDS.0]
                .update(&b.to_ne_bytes(), &resolution.lower_bound(b).to_ne_bytes())
                .map_err(|e| Error::io("cannot fill the BPF bucket bounds", e))?;
        }
        // 1 MiB: ~900 call sites' copies between two reads.
        let site_ring = RingBuf::create("pkg_sites", 1 << 20)?;
        let refs: Vec<&Map> = (maps.iter())
            .chain([site_ring.map()])
            .chain(&sleep_maps)
            .collect();
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
                Program::load_tracepoint(
                    "pkg_gone",
                    &exit_task_program(&off, opts.blocking),
                    &refs,
                )?,
                gone,
            ),
        ];
        let mut sleep_programs = Vec::new();
        let mut sleep_attachments = Vec::new();
        if let Some((switch, waking, off)) = &switch {
            let p = Program::load_tracepoint("pkg_switch", &blocking::switch_program(off), &refs)?;
            sleep_attachments.push(p.attach(switch)?);
            sleep_programs.push(p);
            let p = Program::load_tracepoint("pkg_waking", &blocking::waking_program(off), &refs)?;
            sleep_attachments.push(p.attach(waking)?);
            sleep_programs.push(p);
        }
        // The system-call programs run on raw tracepoints: called straight from the
        // tracepoint with its arguments, without the perf record a tracepoint program is
        // given (assembled at every call of every task on the machine) — measured in
        // benches/compare-latency.sh.
        let sys_programs = vec![
            (
                Program::load_raw_tracepoint("pkg_sys_exit", &exit_program(&shape), &refs)?,
                "sys_exit",
            ),
            (
                Program::load_raw_tracepoint(
                    "pkg_sys_enter",
                    &enter_program(opts.blocking),
                    &refs,
                )?,
                "sys_enter",
            ),
        ];
        let fault = Program::load_perf_event("pkg_fault", &fault_program(), &refs)?;
        let mut attachments = Vec::new();
        for (p, f) in &programs {
            attachments.push(p.attach(f)?);
        }
        // The exit's program first: a call entered before the enter program was attached is
        // then counted as an exit without entry.
        let mut sys_attachments = sleep_attachments;
        for (p, name) in &sys_programs {
            sys_attachments.push(p.attach_raw(name)?);
        }
        let programs = programs
            .into_iter()
            .map(|(p, _)| p)
            .chain(sys_programs.into_iter().map(|(p, _)| p))
            .collect();
        Ok(SyscallLatency {
            maps,
            _programs: programs,
            fault,
            fault_events: Vec::new(),
            attachments,
            sys_attachments,
            counting: Vec::new(),
            enter_format: enter,
            exit_format: exit,
            counting_events: opts.counting_events,
            start: start_ns,
            live: HashMap::new(),
            closed: HashMap::new(),
            slices: shape.slices,
            gone: HashMap::new(),
            sleep_programs,
            sleeps: HashMap::new(),
            kernel_frames,
            site_ring,
            sleep_maps,
            copies: HashMap::new(),
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
        let spec = crate::sys::EventSpec::task_counter(now);
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
            if self.counting_events {
                let pair = (open(&self.enter_format)?, open(&self.exit_format)?);
                self.counting.push(pair);
            }
            let faults = self.fault.run_on_task_event(
                crate::sys::PERF_COUNT_SW_PAGE_FAULTS,
                "page faults",
                tid,
                now,
            )?;
            self.fault_events.push(faults);
        }
        Ok(())
    }

    /// Reads what the kernel has for user space while the programs run: the call sites'
    /// copies (from the ring's mapping), the calls left open by exited threads, and the
    /// histogram's entries of time slices two or more behind the current one (no call ends
    /// there any more), taken out so a sliced run's map holds the recent slices only. The
    /// other entries stay in the maps, read at the end ([`SyscallLatency::finish`]): their
    /// values are cumulative, a program adding to them in place (one taken out meanwhile
    /// would lose that call: a million-call getpid loop lost one or two per run that way).
    /// Reading them only at the end also keeps the reader's map reads out of the run: a map
    /// read from user space holds the CPU's `bpf_prog_active` (the kernel runs no tracepoint
    /// program on that CPU meanwhile, and the reader may be preempted there).
    ///
    /// Returns an error if the map cannot be read.
    pub fn drain(&mut self) -> Result<()> {
        self.read_maps(false)
    }

    /// [`SyscallLatency::drain`]'s reads; with `all`, every entry of the histogram and of
    /// the sleeps (the programs detached).
    fn read_maps(&mut self, all: bool) -> Result<()> {
        let copies = &mut self.copies;
        self.site_ring.read(|r| {
            if let Some((key, copy)) = parse_copy(r) {
                copies.entry(key).or_insert(copy);
            }
        });
        let past = self.slices.map(|(start, len)| {
            let now = crate::clock::monotonic_ns();
            (now.saturating_sub(start) / len.max(1)).saturating_sub(1)
        });
        let hist = &self.maps[HIST.0];
        let stride = hist.value_stride();
        let keys = if all || past.is_some() {
            hist.keys()
                .map_err(|e| Error::io("cannot read the BPF latency map", e))?
        } else {
            Vec::new()
        };
        for k in keys {
            let closed = past.is_some_and(|p| u64::from(hist_key(&k).3) < p);
            if !closed && !all {
                continue;
            }
            let v = if closed {
                hist.take(&k)
            } else {
                hist.lookup(&k)
            };
            let Some(v) = v.map_err(|e| Error::io("cannot read the BPF latency map", e))? else {
                continue;
            };
            let mut sum = Counted {
                min: u64::MAX,
                ..Counted::default()
            };
            for cpu in v.chunks(stride) {
                add(
                    &mut sum,
                    &Counted {
                        count: u64_at(cpu, 0),
                        total: u64_at(cpu, 8),
                        min: u64_at(cpu, 16),
                        max: u64_at(cpu, 24),
                        faults: u64_at(cpu, 32),
                    },
                );
            }
            if closed {
                self.live.remove(&k);
                let e = self.closed.entry(k).or_insert(Counted {
                    min: u64::MAX,
                    ..Counted::default()
                });
                add(e, &sum);
            } else {
                self.live.insert(k, sum);
            }
        }
        if let Some(sleeps) = (self
            .sleep_maps
            .get(blocking::SLEEPS.0 - blocking::THREADS.0))
        .filter(|_| all)
        {
            let stride = sleeps.value_stride();
            let keys = sleeps
                .keys()
                .map_err(|e| Error::io("cannot read the BPF map of sleeps", e))?;
            for k in keys {
                let Some(v) = sleeps
                    .lookup(&k)
                    .map_err(|e| Error::io("cannot read the BPF map of sleeps", e))?
                else {
                    continue;
                };
                let mut sum = (0, 0u64);
                for cpu in v.chunks(stride) {
                    sum.0 += u64_at(cpu, 0);
                    sum.1 = sum.1.saturating_add(u64_at(cpu, 8));
                }
                self.sleeps.insert(k, sum);
            }
        }
        let gone = &self.maps[GONE.0];
        for k in gone
            .keys()
            .map_err(|e| Error::io("cannot read the BPF map of open calls", e))?
        {
            if let Some(v) = gone
                .take(&k)
                .map_err(|e| Error::io("cannot read the BPF map of open calls", e))?
            {
                *self.gone.entry((u32_at(&v, 0), u32_at(&v, 4))).or_default() += 1;
            }
        }
        Ok(())
    }

    /// Puts the open calls of the followed processes' threads still alive in GONE, under the
    /// key the exit program gives a call when its thread exits (tid, t0), so a thread that
    /// exits meanwhile has its call counted once. The system-call programs must be detached
    /// (the values no longer change) and the exit program attached (a thread that exits
    /// before it is read is seen by it). A thread is found from its process's pid in PIDS:
    /// the threads of a process whose first thread has exited are not (their open calls show
    /// in the checksums' note). Returns the calls that did not fit in GONE, by image.
    fn open_calls(&self) -> Vec<(u32, u32)> {
        let (pids, task, gone) = (&self.maps[PIDS.0], &self.maps[TASK.0], &self.maps[GONE.0]);
        let mut tids: Vec<i32> = pids
            .keys()
            .unwrap_or_default()
            .iter()
            .flat_map(|k| crate::procfs::threads(u32_at(k, 0) as i32).unwrap_or_default())
            .collect();
        tids.sort_unstable();
        tids.dedup();
        let mut left = Vec::new();
        for tid in tids {
            let Some(fd) = thread_pidfd(tid) else {
                continue;
            };
            let Ok(Some(v)) = task.lookup(&fd.as_raw_fd().to_ne_bytes()) else {
                continue;
            };
            let t0 = u64_at(&v, S_T0 as usize);
            if t0 == 0 {
                continue;
            }
            let mut key = [0u8; GONE_KEY as usize];
            key[..4].copy_from_slice(&tid.to_ne_bytes());
            key[8..].copy_from_slice(&t0.to_ne_bytes());
            let img = (u32_at(&v, S_TGID as usize), u32_at(&v, S_GEN as usize));
            let mut value = [0u8; GONE_VALUE as usize];
            value[..4].copy_from_slice(&img.0.to_ne_bytes());
            value[4..].copy_from_slice(&img.1.to_ne_bytes());
            if gone.update(&key, &value).is_err() {
                left.push(img);
            }
        }
        left
    }

    /// Ends the collection: detaches the programs, drains the maps, reads the counters, and
    /// resolves each call site's stack.
    ///
    /// Returns an error if a map cannot be read.
    pub fn finish(mut self) -> Result<LatencyCounts> {
        // The counting events are read just before the programs stop, so that calls a running
        // process goes on making are in neither count; both programs are detached at once,
        // each from its own thread, as a detach waits for the programs that run to end (tens
        // of ms: the system-call tracepoints may fault), and in between one would count calls
        // the other does not.
        let (mut enters, mut exits) = (0, 0);
        for (e, x) in &self.counting {
            enters += crate::sys::read_count(e).unwrap_or(0);
            exits += crate::sys::read_count(x).unwrap_or(0);
        }
        let sys = std::mem::take(&mut self.sys_attachments);
        std::thread::scope(|s| {
            for a in sys {
                s.spawn(move || drop(a));
            }
        });
        self.counting.clear();
        self.fault_events.clear();
        let left = self.open_calls();
        self.attachments.clear();
        self.read_maps(true)?;
        let mut out = LatencyCounts {
            start: self.start,
            ..LatencyCounts::default()
        };
        let counts = &self.maps[COUNTS.0];
        let mut totals = [0u64; blocking::N_COUNTS as usize];
        for (i, t) in totals.iter_mut().enumerate() {
            if let Ok(Some(v)) = counts.lookup(&(i as u32).to_ne_bytes()) {
                *t = v.chunks(counts.value_stride()).map(|c| u64_at(c, 0)).sum();
            }
        }
        let twin = |n| self.counting_events.then_some(n);
        out.checks = vec![
            EventCheck {
                event: self.enter_format.name.clone(),
                received: totals[ENTERS as usize],
                counted: twin(enters),
            },
            EventCheck {
                event: self.exit_format.name.clone(),
                received: totals[EXITS as usize],
                counted: twin(exits),
            },
        ];
        for (k, c) in self.closed.iter().chain(&self.live) {
            let (tgid, generation, nr, slice, bucket, frames) = hist_key(k);
            let img = out.images.entry((tgid, generation)).or_default();
            match nr {
                UNPAIRED_ENTER => img.unpaired_enters += c.count,
                UNPAIRED_EXIT => img.unpaired_exits += c.count,
                _ => {
                    let site = site(frames);
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
        let gone = self.gone.iter().map(|(img, n)| (*img, *n));
        for (img, n) in gone.chain(left.into_iter().map(|img| (img, 1))) {
            out.images.entry(img).or_default().unpaired_enters += n;
        }
        out.dropped = totals[HIST_FULL as usize];
        for ((tgid, generation, words), copy) in std::mem::take(&mut self.copies) {
            let img = out.images.entry((tgid, generation)).or_default();
            img.copies.insert(site(words), copy);
        }
        let lost_copies = totals[blocking::COPIES_LOST as usize];
        if lost_copies > 0 {
            out.notes.push(format!(
                "{lost_copies} call sites were not copied for unwinding (the ring was full): \
                 their frames are the three words read in the kernel"
            ));
        }
        if let (Some(stacks), Some(threads)) = (
            self.sleep_map(blocking::STACKS),
            self.sleep_map(blocking::THREADS),
        ) {
            self.sleeps_to(stacks, threads, &mut out, &totals);
        }
        // The programs' own checksum: every entry and exit they counted is in a bucket,
        // unpaired, or in a count of what did not fit.
        let paired: u64 = out.buckets().map(|(_, _, c)| c.count).sum();
        let (open, closed) = out.images.values().fold((0, 0), |(e, x), i| {
            (e + i.unpaired_enters, x + i.unpaired_exits)
        });
        let (in_enters, in_exits) = (totals[ENTERS as usize], totals[EXITS as usize]);
        let (enters_kept, exits_kept) =
            (paired + open + totals[START_FULL as usize], paired + closed);
        if out.dropped == 0 && (enters_kept != in_enters || exits_kept != in_exits) {
            out.notes.push(format!(
                "checksum mismatch in the kernel's counts: {in_enters} entries and {in_exits} \
                 exits counted, {enters_kept} and {exits_kept} accounted for"
            ));
        }
        for (i, what) in [
            (
                HIST_FULL,
                "calls were left out: the in-kernel histogram map was full",
            ),
            (
                START_FULL,
                "calls had no start time: the kernel could not give their thread a task-storage value (counted as exits without entry)",
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

/// Adds `c` (one CPU's sums, or an earlier read's) to `e`; a CPU with no call adds nothing.
fn add(e: &mut Counted, c: &Counted) {
    if c.count == 0 {
        return;
    }
    e.count += c.count;
    e.total = e.total.saturating_add(c.total);
    e.min = e.min.min(c.min);
    e.max = e.max.max(c.max);
    e.faults += c.faults;
}

/// A pidfd of thread `tid` (`PIDFD_THREAD`, Linux 6.9; before it, only a process's first
/// thread has one), the key of its task-storage value; None if it has exited.
fn thread_pidfd(tid: i32) -> Option<OwnedFd> {
    let open = |flags: libc::c_int| {
        // Safety: pidfd_open takes a pid and flags; it returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, flags) };
        // Safety: a descriptor pidfd_open just returned is ours alone.
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
    };
    open(libc::O_EXCL).or_else(|| open(0))
}

/// The call site of a call: its pc, the word at the stack pointer (the return address into
/// the caller when the wrapper has no frame), the return address of the frame `rbp` points
/// to; words that are 0 (unreadable) end it. The aggregator keeps as many frames as asked
/// for ([`LatencyOptions::site_frames`]).
fn site(frames: [u64; 3]) -> Vec<u64> {
    frames.into_iter().take_while(|&a| a != 0).collect()
}

/// The kernel memory the stack map of `--blocking` may take (the kernel allocates every
/// bucket when the map is made).
const STACK_MAP_BYTES: u32 = 16 << 20;

/// How many buckets the stack map of stacks of `frame_bytes` gets: as many as
/// [`STACK_MAP_BYTES`] holds, a power of two from 16,384 to 262,144. `bpf_get_stackid` puts
/// a stack in the bucket its hash names and fails when another stack is there, so K distinct
/// stacks lose about K²/2N of theirs to collisions in N buckets: under load the timer
/// interrupts that wake sleepers come with ~300 distinct interrupted stacks, which lost ~3
/// wakers' frames a run in the 16,384 buckets the map had (0.3 expected in the 131,072 that
/// pkgmon's 8 kernel frames get now).
fn stack_map_buckets(frame_bytes: u32) -> u32 {
    let per_bucket = frame_bytes.max(8) + 16;
    let fit = STACK_MAP_BYTES / per_bucket;
    // The largest power of two that fits.
    let pow2 = 1u32 << (31 - fit.max(1).leading_zeros());
    pow2.clamp(16_384, 262_144)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_map_gets_the_most_buckets_its_memory_holds() {
        // pkgmon's default 8 kernel frames: 64 bytes a stack, 80 a bucket.
        assert_eq!(stack_map_buckets(64), 131_072);
        assert_eq!(stack_map_buckets(8), 262_144);
        // The most frames (64): 528 bytes a bucket.
        assert_eq!(stack_map_buckets(512), 16_384);
        assert!(u64::from(stack_map_buckets(64)) * 80 <= u64::from(STACK_MAP_BYTES));
    }

    #[test]
    fn a_site_is_the_pc_the_callers_return_and_the_frame_pointers() {
        assert_eq!(site([0x10, 0x20, 0x30]), vec![0x10, 0x20, 0x30]);
        assert_eq!(site([0x10, 0, 0x30]), vec![0x10]);
        assert_eq!(site([0, 0, 0]), Vec::<u64>::new());
    }
}
