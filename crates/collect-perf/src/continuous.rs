//! Continuous profiling (SLEEPY): a system-wide run cut into time windows, each written as a
//! complete measurement directory as soon as it ends, with an index of the windows and of
//! the application instances their file sets belong to (`gmon_format::continuous`).
//!
//! Memory is bounded whatever the run's length: a window's records go to an [`Aggregator`]
//! of its own, which is handed to a writer thread when the window ends (at most four
//! windows wait there) and dropped once written; the next one starts from the live processes'
//! names and mappings, and the ELF files they map. What outlives a window is one entry per
//! live process (its application instance), one counter per application name (SLEEPY's
//! `max_appid_table`) and one line per window kept ([`ContinuousOptions::keep_age`],
//! [`ContinuousOptions::keep_bytes`]): a window's instances are written into its directory
//! (index version 2) and not kept, so the index rewritten at each window holds about 120
//! bytes per window kept, whatever the processes.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gmon_format::continuous::{
    ContinuousIndex, INDEX_NAME, IndexInstance, IndexWindow, UNKNOWN_APP, partial_dir_name,
    window_dir_name,
};
use safe_fs::Dir;

use crate::aggregate::{AggregateOptions, Aggregator};
use crate::clock::{monotonic_ns, realtime_ns};
use crate::error::{Error, Result};
use crate::kernel_symbols::KernelSymbols;
use crate::measurement::{WriteOptions, write_measurement_to};
use crate::output::Output;
use crate::recording::{Recording, SideRecord};
use crate::replay::Replay;
use crate::sampler::RecordSink;
use crate::snapshot::MachineSnapshot;
use crate::unwind::Images;

mod carry;
mod cgroup;
mod window_dir;

use carry::carried_side_band;
use cgroup::{cgroup_of, cgroup2_mount};
use window_dir::{dir_mode, remove_window, window_bytes, write_instances};

/// Options of a [`Continuous`] run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ContinuousOptions {
    /// Length of a window. Default is 60 s.
    pub window: Duration,
    /// Windows older than this (by their end) are removed. Default is 24 hours.
    pub keep_age: Option<Duration>,
    /// The oldest windows are removed while the windows kept take more bytes than this.
    /// Default is None (no limit by size).
    pub keep_bytes: Option<u64>,
    /// Mode of the files written; window directories get the matching directory mode.
    /// Default is `0o600`.
    pub mode: u32,
    /// While this is set, the events are off and no window is written. Default is None.
    pub pause: Option<&'static AtomicBool>,
    /// Most frames kept of each user stack ([`AggregateOptions::max_frames`]), as many as the
    /// callchains asked of the kernel. Default is 1024.
    pub max_frames: usize,
}

impl Default for ContinuousOptions {
    fn default() -> Self {
        ContinuousOptions {
            window: Duration::from_secs(60),
            keep_age: Some(Duration::from_secs(24 * 3600)),
            keep_bytes: None,
            mode: 0o600,
            pause: None,
            max_frames: AggregateOptions::default().max_frames,
        }
    }
}

/// A window handed to the writer thread: what it aggregated, its processes, and its part of
/// the recording (counters, exits, lost samples).
struct Job {
    aggregate: Option<crate::Aggregate>,
    replay: Replay,
    rec: Recording,
}

/// A live process's application instance, carried from window to window.
#[derive(Debug, Clone)]
struct Carried {
    app: Vec<u8>,
    number: u32,
    start_ticks: Option<u64>,
    begin_ns: Option<u64>,
}

/// The writer thread's side: the directory, its index, and the instances.
struct Store {
    opts: ContinuousOptions,
    dir: Dir,
    index: ContinuousIndex,
    /// Window sizes in bytes, by seq, for the size limit.
    sizes: BTreeMap<u64, u64>,
    machine: MachineSnapshot,
    next_seq: u64,
    /// Live pid → its application instance.
    carry: HashMap<u32, Carried>,
    /// Application name → the next instance number (SLEEPY's `max_appid_table`).
    numbers: HashMap<Vec<u8>, u32>,
    written: u64,
    errors: Vec<String>,
    /// Where the cgroup v2 file system is mounted, if it is.
    cgroup2: Option<std::path::PathBuf>,
}

/// How a continuous run ended: the windows written and the errors met.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ContinuousSummary {
    /// Windows this run wrote.
    pub written: u64,
    /// Windows that could not be written, one sentence each (the run went on).
    pub errors: Vec<String>,
}

/// Windows handed to the writer thread and not written yet, at most: beyond, the sampling
/// waits (and the kernel counts what it drops).
const QUEUED: usize = 4;

/// A continuous run's windows: hand it to [`Sampler::run_continuous`](crate::Sampler), then
/// call [`Continuous::finish`]. The sampling thread only closes a window (its aggregator
/// ends, the next one starts from the live processes); a thread of its own writes it, so the
/// rings are drained meanwhile.
pub struct Continuous {
    opts: ContinuousOptions,
    ksyms: (String, KernelSymbols),
    agg: Aggregator,
    start: u64,
    end: u64,
    lost_before: u64,
    lost_cpu_before: BTreeMap<u32, u64>,
    overflows_before: u64,
    jobs: Option<std::sync::mpsc::SyncSender<Job>>,
    writer: Option<std::thread::JoinHandle<Store>>,
    path: std::path::PathBuf,
}

impl std::fmt::Debug for Continuous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Continuous")
            .field("dir", &self.path)
            .field("window", &(self.start..self.end))
            .finish_non_exhaustive()
    }
}

/// A window's aggregator, with the ELF files the windows before it read.
fn aggregator(images: Images, max_frames: usize) -> Aggregator {
    let opts = AggregateOptions {
        system_wide: Some(Default::default()),
        every_process: true,
        max_frames,
        ..AggregateOptions::default()
    };
    Aggregator::with_images(opts, images)
}

/// The collector's resident memory in KiB.
fn rss_kib() -> u64 {
    crate::procfs::text("/proc/self/status", 1 << 16)
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// CLOCK_REALTIME ns of the boot (start times in ticks since boot count from it).
fn boot_realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    let boot = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    realtime_ns().saturating_sub(boot)
}

impl Continuous {
    /// Starts a continuous run in the directory `dir` (opened once, not through a link):
    /// removes a window a killed run left half-written, and continues the index (window
    /// numbers and instance numbers) of an earlier run there.
    ///
    /// Returns an error if the directory cannot be read or its index is damaged.
    pub fn begin(dir: Dir, opts: ContinuousOptions) -> Result<Continuous> {
        let out = |e: safe_fs::Error| Error::Output(gmon_format::Error::from(e));
        dir.remove_stale_temps().map_err(out)?;
        for name in dir.entries().map_err(out)? {
            let name = name.to_string_lossy().into_owned();
            if name.starts_with(".w") && name.ends_with(".partial") {
                remove_window(&dir, &name).map_err(out)?;
            }
        }
        let machine = MachineSnapshot::live();
        let mut index = match dir.read(
            INDEX_NAME,
            &safe_fs::ReadOptions::untrusted(gmon_format::continuous::INDEX_MAX_BYTES),
        ) {
            Ok(c) => ContinuousIndex::parse(&c)
                .map_err(|e| Error::Output(e.with_path(dir.path().join(INDEX_NAME))))?,
            Err(e) if e.is_not_found() => ContinuousIndex::default(),
            Err(e) => return Err(out(e)),
        };
        // Instance numbers go on from the windows kept. A version 1 index held the instances:
        // they move to their windows' files, and the next index written is version 2.
        let mut numbers: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut sizes = BTreeMap::new();
        for w in &mut index.windows {
            let inline = index.version == 1;
            if !inline {
                w.read_instances(dir.path()).map_err(Error::Output)?;
            }
            for i in &w.instances {
                let n = numbers.entry(i.app.clone()).or_default();
                *n = (*n).max(i.number + 1);
            }
            if inline && dir.open_subdir(&w.dir).is_ok() {
                write_instances(&dir, &w.dir, w, opts.mode)?;
            }
            w.instances = Vec::new();
            sizes.insert(w.seq, window_bytes(&dir, &w.dir));
        }
        let next_seq = index.windows.last().map_or(1, |w| w.seq + 1);
        let start = monotonic_ns();
        let window = opts.window.as_nanos().clamp(1_000_000, u64::MAX as u128) as u64;
        let path = dir.path().to_path_buf();
        let mut store = Store {
            opts: opts.clone(),
            dir,
            index,
            sizes,
            machine,
            next_seq,
            carry: HashMap::new(),
            numbers,
            written: 0,
            errors: Vec::new(),
            cgroup2: cgroup2_mount(),
        };
        let (jobs, queue) = std::sync::mpsc::sync_channel::<Job>(QUEUED);
        let writer = std::thread::Builder::new()
            .name("pkgmon-windows".into())
            .spawn(move || {
                for job in queue {
                    if let Err(e) = store.window(job) {
                        store.errors.push(with_causes(&e));
                    }
                }
                store
            })
            .map_err(|e| Error::io("cannot start the window writer", e))?;
        Ok(Continuous {
            ksyms: (String::new(), KernelSymbols::default()),
            agg: aggregator(Images::default(), opts.max_frames),
            start,
            end: start + window,
            lost_before: 0,
            lost_cpu_before: BTreeMap::new(),
            overflows_before: 0,
            jobs: Some(jobs),
            writer: Some(writer),
            path,
            opts,
        })
    }

    fn window_ns(&self) -> u64 {
        self.opts
            .window
            .as_nanos()
            .clamp(1_000_000, u64::MAX as u128) as u64
    }

    /// The kernel's symbols, read again only when the loaded modules changed.
    fn kernel_symbols(&mut self) -> KernelSymbols {
        let modules =
            crate::procfs::text("/proc/modules", crate::procfs::LARGE).unwrap_or_default();
        if modules != self.ksyms.0 || self.ksyms.1.is_empty() {
            self.ksyms = (modules, KernelSymbols::live());
        }
        self.ksyms.1.clone()
    }

    /// Writes the last window (up to the end of the recording `rec` returned by the run) and
    /// the index.
    ///
    /// Returns what the run wrote, or an error if the writer thread failed.
    pub fn finish(mut self, rec: &mut Recording) -> Result<ContinuousSummary> {
        let end = rec.end_time.max(self.start);
        self.close_window(rec, end);
        drop(self.jobs.take());
        let store = self
            .writer
            .take()
            .and_then(|w| w.join().ok())
            .ok_or_else(|| {
                Error::io(
                    "the window writer failed",
                    std::io::Error::other("panicked"),
                )
            })?;
        Ok(ContinuousSummary {
            written: store.written,
            errors: store.errors,
        })
    }

    /// Ends the current window at `end`, hands it to the writer, and starts the next one.
    fn rotate(&mut self, rec: &mut Recording, end: u64) {
        self.close_window(rec, end);
        self.start = end;
        self.end = end + self.window_ns();
    }

    /// Ends the current window at `end` and hands it to the writer thread.
    fn close_window(&mut self, rec: &mut Recording, end: u64) {
        let max_frames = self.opts.max_frames;
        let agg = std::mem::replace(&mut self.agg, aggregator(Images::default(), max_frames));
        let aggregate = agg.finish(self.kernel_symbols());
        let replay = aggregate.replay().clone();
        // The ELF files of the processes still running are kept, not read again.
        let mut images = aggregate.files.clone();
        images.retain_mapped(&replay);
        self.agg = aggregator(images, max_frames);
        // The next window starts from the live processes' names and mappings.
        for kind in carried_side_band(&replay) {
            self.agg.side_band(&SideRecord {
                time: end,
                cpu: 0,
                kind,
            });
        }
        let offset = rec.start_realtime.wrapping_sub(rec.start_time);
        let mut wrec = Recording {
            frequency: rec.frequency,
            user_stack_bytes: rec.user_stack_bytes,
            max_stack: rec.max_stack,
            start_time: self.start,
            start_realtime: self.start.wrapping_add(offset),
            end_time: end,
            lost: rec.lost - self.lost_before,
            taskstats_refused: rec.taskstats_refused.clone(),
            taskstats_overflows: rec.taskstats_overflows - self.overflows_before,
            notes: rec.notes.clone(),
            ..Recording::default()
        };
        for (&cpu, &n) in &rec.lost_per_cpu {
            let d = n - self.lost_cpu_before.get(&cpu).copied().unwrap_or(0);
            if d > 0 {
                wrec.lost_per_cpu.insert(cpu, d);
            }
        }
        self.lost_before = rec.lost;
        self.lost_cpu_before = rec.lost_per_cpu.clone();
        self.overflows_before = rec.taskstats_overflows;
        let (mine, later): (Vec<_>, Vec<_>) = std::mem::take(&mut rec.task_exits)
            .into_iter()
            .partition(|t| t.time < end);
        rec.task_exits = later;
        wrec.task_exits = mine;
        wrec.proc_readings = std::mem::take(&mut rec.proc_readings);

        let active = replay.processes.iter().any(|p| {
            p.key.pid != 0
                && (p.start.is_some()
                    || p.exit.is_some()
                    || p.threads.iter().any(|t| t.samples > 0))
        });
        // A window in which nothing ran (a paused run: the events are off) is not written.
        let job = Job {
            aggregate: active.then_some(aggregate),
            replay,
            rec: wrec,
        };
        if let Some(jobs) = &self.jobs {
            // The writer only stops when this side hangs up.
            let _ = jobs.send(job);
        }
    }
}

impl Store {
    /// Writes one window: its measurement (as `.partial`, renamed when complete), its
    /// instances, the index, and the retention.
    fn window(&mut self, job: Job) -> Result<()> {
        let Job {
            aggregate,
            replay,
            rec: wrec,
        } = job;
        let Some(aggregate) = aggregate else {
            self.carry_on(&replay, &[]);
            return Ok(());
        };
        let offset = wrec.start_realtime.wrapping_sub(wrec.start_time);
        let seq = self.next_seq;
        self.next_seq += 1;
        let partial = partial_dir_name(seq);
        let out = |e: safe_fs::Error| Error::Output(gmon_format::Error::from(e));
        let sub = self
            .dir
            .create_subdir(&partial, dir_mode(self.opts.mode))
            .map_err(out)?;
        let wopts = WriteOptions {
            machine: Some(self.machine.clone()),
            only_active: true,
            ..WriteOptions::default()
        };
        let written = Output::begin(sub, self.opts.mode)
            .and_then(|output| write_measurement_to(&wrec, &aggregate, &wopts, output));
        drop(aggregate);
        let summary = match written {
            Ok(s) => s,
            Err(e) => {
                let _ = remove_window(&self.dir, &partial);
                self.carry_on(&replay, &[]);
                return Err(e);
            }
        };
        let start = wrec.start_time;
        let end = wrec.end_time;

        // Application instances: a file set continues its process's instance when the process
        // was running before the window and kept its program; otherwise it is a new instance
        // of its command name.
        let tick = self.machine.tick_ns();
        let boot = boot_realtime_ns();
        let mut instances = Vec::new();
        let mut last_of: HashMap<(u32, u32), (usize, Carried)> = HashMap::new();
        for fs in &summary.file_sets {
            let Some(p) = replay.get(fs.process) else {
                continue;
            };
            let carried = (p.start.is_none() && p.key.generation == 0 && fs.images.0 == 0)
                .then(|| self.carry.get(&p.key.pid))
                .flatten()
                .filter(|c| c.app == fs.comm)
                .cloned();
            let reading = wrec
                .proc_readings
                .iter()
                .rev()
                .find(|r| r.pid == fs.pid && r.start_ticks != 0);
            let app = if fs.comm.is_empty() {
                UNKNOWN_APP.to_vec()
            } else {
                fs.comm.clone()
            };
            let c = match carried {
                Some(c) => c,
                None => {
                    let n = self.numbers.entry(app.clone()).or_default();
                    let number = *n;
                    *n += 1;
                    let start_ticks = reading.map(|r| r.start_ticks).or_else(|| {
                        (p.exit.is_none())
                            .then(|| crate::procfs::reading(fs.pid, end))
                            .flatten()
                            .map(|r| r.start_ticks)
                    });
                    let begin_ns = match (p.start, start_ticks) {
                        (Some(t), _) if fs.images.0 == 0 => Some(t.wrapping_add(offset)),
                        (_, Some(ticks)) if fs.images.0 == 0 => Some(boot + ticks * tick),
                        _ => p
                            .execs
                            .get(fs.images.0.wrapping_sub(1))
                            .map(|&t| t.wrapping_add(offset)),
                    };
                    Carried {
                        app,
                        number,
                        start_ticks,
                        begin_ns,
                    }
                }
            };
            let last_image = fs.images.1 == p.execs.len();
            let cpu_ns = fs.cpu_ns;
            let (container, cgroup_id) = match p.exit {
                None => cgroup_of(fs.pid, self.cgroup2.as_deref()),
                Some(_) => (None, None),
            };
            instances.push(IndexInstance {
                label: gmon_format::process_label(fs.pid, fs.instance),
                app: c.app.clone(),
                number: c.number,
                pid: fs.pid,
                start_ticks: c.start_ticks,
                samples: fs.samples,
                cpu_ns,
                begin_ns: c.begin_ns,
                // An image ends at the process's exit, or at the exec that replaced it.
                end_ns: if last_image {
                    p.exit
                } else {
                    p.execs.get(fs.images.1).copied()
                }
                .map(|t| t.wrapping_add(offset)),
                container,
                cgroup_id,
                extra: Vec::new(),
            });
            let e = last_of
                .entry((p.key.pid, p.key.generation))
                .or_insert((0, c.clone()));
            if fs.images.1 >= e.0 {
                *e = (fs.images.1, c);
            }
        }
        let alive: Vec<(u32, Carried)> = last_of
            .into_iter()
            .filter(|((pid, generation), _)| {
                replay.processes.iter().any(|p| {
                    p.key.pid == *pid && p.key.generation == *generation && p.exit.is_none()
                })
            })
            .map(|((pid, _), (_, c))| (pid, c))
            .collect();
        self.carry_on(&replay, &alive);

        let name = window_dir_name(seq);
        let window = IndexWindow {
            seq,
            dir: name.clone(),
            start_ns: start.wrapping_add(offset),
            end_ns: end.wrapping_add(offset),
            samples: summary.samples + summary.system_samples.0 + summary.system_samples.1,
            lost: wrec.lost,
            rss_kib: rss_kib(),
            instance_lines: instances.len() as u64,
            instances,
        };
        // The instances go into the window before it is renamed into place: a window is
        // complete with them.
        let shared = self.share_kallsyms(&partial, &summary);
        if let Err(e) = write_instances(&self.dir, &partial, &window, self.opts.mode) {
            let _ = remove_window(&self.dir, &partial);
            return Err(e);
        }
        self.dir.rename(&partial, &name, false).map_err(out)?;
        self.dir.sync().map_err(out)?;
        let bytes: u64 = summary.files.iter().map(|f| f.bytes).sum::<u64>() - shared;

        self.index.host = crate::procfs::text("/proc/sys/kernel/hostname", 4096)
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        self.index.boot_id = self.machine.boot_id.as_ref().map(|b| b.trim().to_owned());
        self.index.frequency = wrec.frequency;
        self.index.windows.push(IndexWindow {
            instances: Vec::new(),
            ..window
        });
        self.sizes.insert(seq, bytes);
        self.written += 1;
        let retained = self.retain(end.wrapping_add(offset));
        release_free_memory();
        retained
    }

    /// Makes the kernel-symbol snapshot of the window being written (`partial`) a hard link to
    /// the previous window's when the two are the same bytes (they are until a module loads):
    /// each window stays a complete measurement, and a day of windows keeps one copy of a
    /// snapshot of several MiB, not one per window. Returns the bytes saved.
    fn share_kallsyms(&self, partial: &str, summary: &crate::WriteSummary) -> u64 {
        let Some(prev) = self.index.windows.last() else {
            return 0;
        };
        let Some(file) = summary.files.iter().find(|f| {
            f.path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("kallsyms."))
        }) else {
            return 0;
        };
        let Some(name) = file.path.file_name().and_then(|n| n.to_str()) else {
            return 0;
        };
        let (Ok(new), Ok(old)) = (
            self.dir.open_subdir(partial),
            self.dir.open_subdir(&prev.dir),
        ) else {
            return 0;
        };
        let read = |d: &Dir| {
            d.read(name, &safe_fs::ReadOptions::untrusted(file.bytes + 1))
                .ok()
                .map(|c| c.into_vec())
        };
        match (read(&new), read(&old)) {
            (Some(a), Some(b)) if a == b && new.link_replacing(name, &old, name).is_ok() => {
                file.bytes
            }
            _ => 0,
        }
    }

    /// Keeps the instances of the processes still running (`alive`, from this window's file
    /// sets; a process without one keeps what it had), and forgets the ones that ended.
    fn carry_on(&mut self, replay: &Replay, alive: &[(u32, Carried)]) {
        for p in &replay.processes {
            if p.exit.is_some() || p.key.generation > 0 || p.start.is_some() {
                self.carry.remove(&p.key.pid);
            }
        }
        for (pid, c) in alive {
            self.carry.insert(*pid, c.clone());
        }
    }

    /// Applies the retention limits, then writes the index.
    fn retain(&mut self, now_ns: u64) -> Result<()> {
        let out = |e: safe_fs::Error| Error::Output(gmon_format::Error::from(e));
        let mut gone = Vec::new();
        if let Some(age) = self.opts.keep_age {
            let oldest = now_ns.saturating_sub(age.as_nanos() as u64);
            while self.index.windows.len() > 1 && self.index.windows[0].end_ns <= oldest {
                gone.push(self.index.windows.remove(0));
            }
        }
        if let Some(limit) = self.opts.keep_bytes {
            while self.index.windows.len() > 1 && self.sizes.values().sum::<u64>() > limit {
                let w = self.index.windows.remove(0);
                self.sizes.remove(&w.seq);
                gone.push(w);
            }
        }
        for w in &gone {
            self.sizes.remove(&w.seq);
        }
        // The index first: it never lists a window that is being removed.
        let f = self.dir.create(self.opts.mode).map_err(out)?;
        let mut f = std::io::BufWriter::new(f);
        self.index.write(&mut f).map_err(Error::Output)?;
        let f = f
            .into_inner()
            .map_err(|e| Error::io(format!("cannot write {INDEX_NAME}"), e.into_error()))?;
        f.persist_replacing(INDEX_NAME).map_err(out)?;
        self.dir.sync().map_err(out)?;
        for w in gone {
            remove_window(&self.dir, &w.dir).map_err(out)?;
        }
        Ok(())
    }
}

impl RecordSink for Continuous {
    fn release(&mut self, rec: &mut Recording, upto: u64) {
        while upto != u64::MAX && upto >= self.end {
            let end = self.end;
            let agg = &mut self.agg;
            rec.release(end - 1, |r, e| agg.feed(r, e));
            self.rotate(rec, end);
        }
        let agg = &mut self.agg;
        rec.release(upto, |r, e| agg.feed(r, e));
    }

    fn paused(&self) -> bool {
        self.opts.pause.is_some_and(|p| p.load(Ordering::Relaxed))
    }
}

/// Gives the pages the allocator holds free back to the system, once a window is written: a
/// window's aggregate and its writing take tens of MiB for a moment, in the writer thread's
/// own arena, and glibc keeps what it freed there (10 minutes at 40 processes a second:
/// RssAnon 34-41 MiB between windows for 16-22 MiB of live heap, heaptrack).
fn release_free_memory() {
    #[cfg(target_env = "gnu")]
    // Safety: malloc_trim has no preconditions; it only returns free pages.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `e` and its causes, `: `-separated, each left out when the text so far already ends with it
/// (a file error's message holds the system's): "cannot write the measurement" alone did not
/// say that the disk was full.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}
