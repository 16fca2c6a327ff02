//! Writing a measurement directory from an [`Aggregate`]: per process image the user and
//! kernel gmon files, the info file and the stacks file, plus the kernel-symbol snapshot and
//! the vDSO image, exactly as `gmon_format::labeled` specifies.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use gmon_format::{
    ArcCounts, BoundaryKind, Comm, CounterSource, Endian, HistogramUnit, Mapping as InfoMapping,
    MeasurementInfo, ProcessCounters, ProfileName, Rename, SECONDS, SampleRate, Stack,
    StacksWriter, write_sampled_profile,
};

#[cfg(test)]
use crate::aggregate::AggregateOptions;
use crate::aggregate::{Aggregate, ImageAcc, KernelSymbols, Side, StackKey};
use crate::error::{Error, Result};
use crate::output::{Output, WrittenFile};
use crate::recording::{ProcCounters, Recording};
use crate::replay::{Process, ProcessKey, Replay};
use crate::unwind::{StackEnd, UnwindStats};

/// Options of [`write_measurement`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WriteOptions {
    /// The measurement directory of [`write_measurement`], created if missing; it must not
    /// hold a measurement yet. [`write_measurement_to`] ignores it. Default is `.`.
    pub dir: PathBuf,
    /// The launched command line, written as `argv` of the launched process. Default is None.
    pub argv: Option<Vec<OsString>>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            dir: PathBuf::from("."),
            argv: None,
        }
    }
}

/// What [`write_measurement`] did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct WriteSummary {
    /// The files, in the order written; the manifest last.
    pub files: Vec<WrittenFile>,
    /// File sets written (one per process image).
    pub processes: usize,
    /// Samples written into per-process files.
    pub samples: u64,
    /// System-wide mode: kernel samples written into `gmon.out.-k.kernel` and
    /// `gmon.out.-k.other`.
    pub system_samples: (u64, u64),
    /// Samples whose user stack may lack outer frames.
    pub truncated_stacks: u64,
    /// How the user stacks were unwound.
    pub unwind: UnwindStats,
    /// Problems that did not stop the writing, as sentences for the user.
    pub warnings: Vec<String>,
}

/// One segment of a process's life under one command name: from its start or an exec to the
/// next exec or its end.
#[derive(Debug)]
struct Segment {
    /// Which image: the number of execs before it.
    image: usize,
    start: u64,
    end: u64,
    /// Whether it is the process's last image (which gets the whole process's counters).
    last: bool,
    /// Whether it starts with the exec of the launched command.
    launched: bool,
}

/// Everything that goes into one file set: one process under one command name (the images of
/// a process that execs a program of its own name are one file set).
#[derive(Debug, Default)]
struct FileSet {
    segments: Vec<Segment>,
    user: Side,
    kernel: Side,
    stacks: BTreeMap<StackKey, (u64, u64)>,
    user_only: u64,
    kernel_only: u64,
    samples: u64,
    /// Samples whose user stack may lack outer frames, by reason.
    truncated: BTreeMap<StackEnd, u64>,
}

impl FileSet {
    fn add(&mut self, seg: Segment, acc: Option<&ImageAcc>, ksyms: &KernelSymbols) {
        self.segments.push(seg);
        let Some(acc) = acc else { return };
        self.user.merge(&acc.user);
        self.kernel.merge(&acc.kernel);
        acc.stacks.collect(ksyms, &mut self.stacks);
        for (k, n) in &acc.truncated {
            *self.truncated.entry(*k).or_default() += n;
        }
        self.user_only += acc.user_only;
        self.kernel_only += acc.kernel_only;
        self.samples += acc.samples;
    }
}

/// The GNU build-id note in `/sys/kernel/notes` (a sequence of ELF notes).
fn kernel_build_id() -> Option<Vec<u8>> {
    let notes = crate::procfs::bytes("/sys/kernel/notes", 1 << 20)?;
    let mut pos = 0;
    let u32_at = |p: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(notes.get(p..p + 4)?.try_into().ok()?))
    };
    while pos + 12 <= notes.len() {
        let namesz = u32_at(pos)? as usize;
        let descsz = u32_at(pos + 4)? as usize;
        let ty = u32_at(pos + 8)?;
        let name_at = pos + 12;
        let desc_at = name_at + namesz.next_multiple_of(4);
        let next = desc_at + descsz.next_multiple_of(4);
        if ty == 3 && notes.get(name_at..name_at + namesz) == Some(b"GNU\0") {
            return notes.get(desc_at..desc_at + descsz).map(<[u8]>::to_vec);
        }
        pos = next;
    }
    None
}

/// The snapshot's name: `kallsyms.` and the first 8 hex digits of the boot id.
fn kallsyms_name() -> String {
    let id = crate::procfs::text("/proc/sys/kernel/random/boot_id", 4096).unwrap_or_default();
    let digits: String = id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    format!(
        "kallsyms.{}",
        if digits.len() == 8 {
            digits
        } else {
            "unknown".into()
        }
    )
}

fn gmon_error(what: &str, e: gmon_format::Error) -> Error {
    Error::io(
        format!("cannot encode {what}"),
        std::io::Error::other(e.to_string()),
    )
}

/// Encodes one side's samples and arcs as the contract says (see
/// [`gmon_format::write_sampled_profile`]), sorted by address.
fn gmon_bytes(side: &Side, rate: u32) -> Result<Vec<u8>> {
    let endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };
    let mut hist: Vec<(u64, u64)> = side.hist.iter().map(|(&a, &n)| (a, n)).collect();
    hist.sort_unstable();
    let mut arcs: Vec<((u64, u64), u64)> = side.arcs.iter().map(|(&k, &n)| (k, n)).collect();
    arcs.sort_unstable();
    let unit = HistogramUnit {
        prof_rate: rate,
        dimension: SECONDS.0,
        dimension_abbrev: SECONDS.1,
    };
    write_sampled_profile(endian, &hist, arcs, Some(unit)).map_err(|e| gmon_error("a gmon file", e))
}

fn stacks_bytes(stacks: &BTreeMap<StackKey, (u64, u64)>) -> Result<Vec<u8>> {
    let enc = |e| gmon_error("a stacks file", e);
    let mut w = StacksWriter::new(Vec::new(), stacks.len() as u64).map_err(enc)?;
    for ((kernel, user, boundary, truncated), &(samples, nanoseconds)) in stacks {
        w.stack(&Stack {
            samples,
            nanoseconds,
            boundary: *boundary,
            user_truncated: *truncated,
            kernel,
            user,
        })
        .map_err(enc)?;
    }
    w.finish().map_err(enc)
}

/// The segments of process `pi`: one per image (before the first exec, after each exec), with
/// its command name, less the images without samples that an exec replaced (such as the
/// launched command's image before its exec: the events only start at that exec).
fn segments(agg: &Aggregate, pi: usize, rec: &Recording) -> Vec<(Segment, Vec<u8>)> {
    let p = &agg.replay.processes[pi];
    let start = p.start.unwrap_or(rec.start_time);
    let end = p.exit.unwrap_or(rec.end_time).max(start);
    let mut bounds = vec![start];
    bounds.extend(p.execs.iter().copied());
    let launched = p.key.generation == 0 && agg.launched == Some(p.key.pid);
    let mut out = Vec::new();
    for (k, &from) in bounds.iter().enumerate() {
        let to = bounds.get(k + 1).copied().unwrap_or(end);
        let comm = if k == 0 {
            p.comms.iter().find(|c| !c.2).map(|c| c.1.clone())
        } else {
            p.comms
                .iter()
                .find(|c| c.2 && c.0 == from)
                .map(|c| c.1.clone())
        };
        let has_samples = agg.images.get(&(pi, k)).is_some_and(|a| a.samples > 0);
        // An image replaced before any sample (the moments between a fork and an exec) would
        // only add an empty file set per child; a process's last image is always written, so
        // every process appears.
        if !has_samples && k + 1 < bounds.len() {
            continue;
        }
        let mut comm = comm.unwrap_or_default().into_bytes();
        comm.truncate(Comm::MAX_LEN);
        out.push((
            Segment {
                image: k,
                start: from,
                end: to,
                last: k + 1 == bounds.len(),
                launched: k == 1 && launched,
            },
            comm,
        ));
    }
    out
}

fn proc_counters(c: &ProcCounters, tick_ns: u64) -> ProcessCounters {
    let mut out = ProcessCounters::default();
    out.user_cpu_ns = Some(c.utime_ticks * tick_ns);
    out.system_cpu_ns = Some(c.stime_ticks * tick_ns);
    out.minor_faults = Some(c.minflt);
    out.major_faults = Some(c.majflt);
    out.voluntary_switches = c.voluntary_ctxt_switches;
    out.involuntary_switches = c.nonvoluntary_ctxt_switches;
    out.read_bytes = c.rchar;
    out.written_bytes = c.wchar;
    out
}

/// Applies `f` to each counter of `a` with the same counter of `b`.
fn each_counter(
    a: &mut ProcessCounters,
    b: &ProcessCounters,
    f: impl Fn(&mut Option<u64>, Option<u64>),
) {
    f(&mut a.user_cpu_ns, b.user_cpu_ns);
    f(&mut a.system_cpu_ns, b.system_cpu_ns);
    f(&mut a.minor_faults, b.minor_faults);
    f(&mut a.major_faults, b.major_faults);
    f(&mut a.voluntary_switches, b.voluntary_switches);
    f(&mut a.involuntary_switches, b.involuntary_switches);
    f(&mut a.read_bytes, b.read_bytes);
    f(&mut a.written_bytes, b.written_bytes);
}

/// Keeps in `a` the larger of each counter of `a` and `b`.
fn max_counters(a: &mut ProcessCounters, b: &ProcessCounters) {
    each_counter(a, b, |x, y| {
        if let Some(y) = y {
            *x = Some(x.map_or(y, |x| x.max(y)));
        }
    });
}

fn add_counters(a: &mut ProcessCounters, b: &ProcessCounters) {
    each_counter(a, b, |x, y| {
        if let Some(y) = y {
            *x = Some(x.unwrap_or(0) + y);
        }
    });
}

/// Sums the taskstats exit records of each process's tasks, and says whether every thread
/// exit the run saw of that process had its record.
///
/// Each record is matched to a thread exit the recording saw: of a process with the record's
/// thread group id (before taskstats version 12, which lacks it, any process that had the
/// record's thread), a thread with the record's thread id that exited before the record came,
/// the earliest not matched yet. A record without such an exit (the EXIT record was lost) goes
/// to a process of that id still alive at the time, if any. Other records, of tasks the run
/// did not follow (a pid reused by an unrelated process), are left out.
///
/// "Before" allows 50 ms: the kernel sends the taskstats record a little before it
/// writes the perf EXIT record (and stamps its time), so a record drained at once can carry
/// an earlier time than its exit.
///
/// Each task's CPU time is its exact runtime split by its tick-sampled user and system times
/// ([`exact_cpu`]) when the record has the runtime.
fn taskstats_counters(rec: &Recording, replay: &Replay) -> HashMap<ProcessKey, Exited> {
    /// How much later than its taskstats record a thread's perf EXIT may be stamped.
    const EXIT_SLACK_NS: u64 = 50_000_000;
    let mut by_pid: HashMap<u32, Vec<&Process>> = HashMap::new();
    let mut by_tid: HashMap<u32, Vec<&Process>> = HashMap::new();
    for p in &replay.processes {
        by_pid.entry(p.key.pid).or_default().push(p);
        for t in &p.threads {
            by_tid.entry(t.tid).or_default().push(p);
        }
    }
    let mut order: Vec<usize> = (0..rec.task_exits.len()).collect();
    order.sort_by_key(|&i| rec.task_exits[i].time);
    let mut matched: BTreeSet<(ProcessKey, u32)> = BTreeSet::new();
    let mut out: HashMap<ProcessKey, (ProcessCounters, bool)> = HashMap::new();
    for i in order {
        let e = &rec.task_exits[i];
        let candidates = match e.tgid {
            Some(tgid) => by_pid.get(&tgid),
            None => by_tid.get(&e.tid),
        };
        let candidates = candidates.map_or(&[][..], Vec::as_slice);
        let exited = candidates
            .iter()
            .filter(|p| !matched.contains(&(p.key, e.tid)))
            .filter_map(|p| {
                let t = p.threads.iter().find(|t| t.tid == e.tid)?;
                let x = t
                    .exit
                    .filter(|&x| x <= e.time.saturating_add(EXIT_SLACK_NS))?;
                Some((x, *p))
            })
            .min_by_key(|&(x, p)| (x, p.key.generation))
            .map(|(_, p)| p);
        if let Some(p) = exited {
            matched.insert((p.key, e.tid));
        }
        let owner = exited.or_else(|| {
            candidates
                .iter()
                .filter(|p| {
                    p.exit.is_none() && p.start.unwrap_or(0) <= e.time.saturating_add(EXIT_SLACK_NS)
                })
                .max_by_key(|p| (p.start.unwrap_or(0), p.key.generation))
                .copied()
        });
        let Some(p) = owner else { continue };
        let mut c = ProcessCounters::default();
        let (user, system) = e.runtime_ns.map_or((e.user_cpu_ns, e.system_cpu_ns), |ns| {
            exact_cpu(e.user_cpu_ns, e.system_cpu_ns, ns)
        });
        c.user_cpu_ns = Some(user);
        c.system_cpu_ns = Some(system);
        c.minor_faults = Some(e.minor_faults);
        c.major_faults = Some(e.major_faults);
        c.voluntary_switches = Some(e.voluntary_switches);
        c.involuntary_switches = Some(e.involuntary_switches);
        c.read_bytes = Some(e.read_bytes);
        c.written_bytes = Some(e.written_bytes);
        match out.get_mut(&p.key) {
            Some((acc, exact)) => {
                add_counters(acc, &c);
                *exact &= e.runtime_ns.is_some();
            }
            None => {
                out.insert(p.key, (c, e.runtime_ns.is_some()));
            }
        }
    }
    // Complete: every thread exit the run saw has its record (none was lost to an overflow).
    replay
        .processes
        .iter()
        .filter_map(|p| {
            let (counters, exact_cpu) = out.remove(&p.key)?;
            let complete = p
                .threads
                .iter()
                .filter(|t| t.exit.is_some())
                .all(|t| matched.contains(&(p.key, t.tid)));
            Some((
                p.key,
                Exited {
                    counters,
                    complete,
                    exact_cpu,
                },
            ))
        })
        .collect()
}

/// The taskstats exit records of one process, summed.
struct Exited {
    counters: ProcessCounters,
    /// Every thread exit the run saw of the process had its record.
    complete: bool,
    /// Every record had the task's exact runtime, so the CPU times sum to it.
    exact_cpu: bool,
}

/// User and system time that sum to a task's exact `runtime`, split in the ratio of its
/// tick-sampled `user` and `system` times, as the kernel scales them for `/proc` (all user
/// time when the ticks saw no system time, all system time when they saw no user time). The
/// ticks (every 4 ms at 250 Hz) give a task that ran 2 ms 0 or 4 ms of CPU time; its runtime
/// is exact.
fn exact_cpu(user: u64, system: u64, runtime: u64) -> (u64, u64) {
    let system = match (user, system) {
        (_, 0) => 0,
        (0, _) => runtime,
        (u, s) => (u128::from(s) * u128::from(runtime) / (u128::from(u) + u128::from(s))) as u64,
    };
    (runtime - system, system)
}

/// Writes the measurement into `opts.dir` (created if missing): [`Output::create`], then
/// [`write_measurement_to`].
pub fn write_measurement(
    rec: &Recording,
    agg: &Aggregate,
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    write_measurement_to(rec, agg, opts, Output::create(&opts.dir)?)
}

/// The file sets of the aggregate: for each profiled process (in order of appearance) and
/// command name, keyed by pid, instance number and command name. The first process with a pid
/// is its instance 0; later ones that reused it count on from 1.
fn file_sets(agg: &Aggregate, rec: &Recording) -> BTreeMap<(u32, u32, Vec<u8>), (usize, FileSet)> {
    let mut sets: BTreeMap<(u32, u32, Vec<u8>), (usize, FileSet)> = BTreeMap::new();
    let mut instances: HashMap<u32, u32> = HashMap::new();
    for (pi, p) in agg.replay.processes.iter().enumerate() {
        if !agg.profiled[pi] {
            continue;
        }
        let segs = segments(agg, pi, rec);
        if segs.is_empty() {
            continue;
        }
        let n = instances.entry(p.key.pid).or_default();
        let instance = *n;
        *n += 1;
        for (seg, comm) in segs {
            let acc = agg.images.get(&(pi, seg.image));
            sets.entry((p.key.pid, instance, comm))
                .or_insert_with(|| (pi, FileSet::default()))
                .1
                .add(seg, acc, &agg.ksyms);
        }
    }
    sets
}

/// Writes the measurement into `out`: for each process image (pid, instance and command name)
/// its user gmon, kernel gmon, info and stacks files, the kernel-symbol snapshot, the vDSO
/// image, and last the manifest that makes the measurement complete.
///
/// Output is deterministic for a given recording and machine state: maps are sorted and
/// nothing depends on hash order. Each file is created new through the directory opened by
/// [`Output`] and renamed into place without replacing anything. Returns an error if a file
/// cannot be written; the files written before stay, and the manifest stays the placeholder
/// that marks the measurement incomplete.
pub fn write_measurement_to(
    rec: &Recording,
    agg: &Aggregate,
    opts: &WriteOptions,
    mut out: Output,
) -> Result<WriteSummary> {
    let mut summary = WriteSummary::default();
    let ksyms = &agg.ksyms;
    let symbols_file = kallsyms_name();
    if ksyms.is_empty() {
        summary.warnings.push(
            "kernel addresses are hidden (/proc/kallsyms shows zeros): kernel symbols are \
             unavailable to the report; run as root or lower kernel.kptr_restrict"
                .into(),
        );
    }
    summary.unwind = agg.unwind_stats();
    let sets = file_sets(agg, rec);

    let realtime_offset = rec.start_realtime.wrapping_sub(rec.start_time);
    // Safety: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let tick_ns = 1_000_000_000 / ticks;
    let release =
        crate::procfs::text("/proc/sys/kernel/osrelease", 4096).map(|s| s.trim().to_owned());
    let kernel_build_id = kernel_build_id();
    let rate = u32::try_from(rec.frequency).unwrap_or(u32::MAX);
    let exits = taskstats_counters(rec, &agg.replay);
    let lost_by_cpu = rec.lost_samples_by_cpu();
    // The vDSO image to save: this process's own, when a profiled process mapped one with the
    // same build-id (the kernel maps one image into every 64-bit process).
    let own_vdso = crate::elf::own_vdso().and_then(|bytes| {
        let id = crate::elf::ElfInfo::parse(&bytes[..])?.build_id?;
        Some((id, bytes))
    });
    let mut vdso_used = false;
    let mut files = agg.files.clone();
    if let Some(why) = &rec.taskstats_refused {
        summary.warnings.push(format!(
            "taskstats exit records refused ({why}): counters come from polling /proc and are \
             missing for processes that lived less than one poll interval"
        ));
    }
    if rec.taskstats_overflows > 0 {
        summary.warnings.push(format!(
            "the taskstats socket overflowed {} times: some exit records were lost",
            rec.taskstats_overflows
        ));
    }

    // Processes too short to be checked one by one: how many, their CPU time, their samples.
    let mut short = (0u64, 0u64, 0u64);
    for ((pid, instance, comm_bytes), (pi, set)) in &sets {
        let p = &agg.replay.processes[*pi];
        let truncated: u64 = set.truncated.values().sum();
        let comm = Comm::new(comm_bytes.clone()).map_err(|e| gmon_error("a command name", e))?;
        let mut info = MeasurementInfo::default();
        let first = &set.segments[0];
        let last = &set.segments[set.segments.len() - 1];
        info.process.pid = *pid;
        info.process.ppid = p.parent.map(|k| k.pid);
        info.process.comm = Some(comm.clone());
        info.process.start_monotonic_ns = Some(first.start);
        info.process.start_realtime_ns = Some(first.start.wrapping_add(realtime_offset));
        info.process.end_monotonic_ns = Some(last.end);
        info.process.end_realtime_ns = Some(last.end.wrapping_add(realtime_offset));

        let mut counters: Option<ProcessCounters> = None;
        let mut source = None;
        let mut mappings = Vec::new();
        let mut renames = Vec::new();
        for seg in &set.segments {
            if seg.launched
                && let Some(argv) = &opts.argv
            {
                info.process.argv = Some(argv.iter().map(|a| a.as_bytes().to_vec()).collect());
            }
            let reading = rec
                .proc_readings
                .iter()
                // By time alone: a process may have renamed itself since its exec.
                .filter(|r| r.pid == *pid && r.time >= seg.start && r.time <= seg.end)
                .max_by_key(|r| r.time);
            if info.process.argv.is_none()
                && let Some(r) = reading
                && !r.argv.is_empty()
            {
                info.process.argv = Some(r.argv.clone());
            }
            if seg.last {
                (counters, source) = process_counters(rec, &exits, p, reading, tick_ns);
            }
            renames.extend(
                p.renames
                    .iter()
                    .filter(|r| seg.start <= r.0 && r.0 <= seg.end),
            );
            for m in &p.mappings {
                if m.from > seg.end || m.to.is_some_and(|t| t <= seg.start) {
                    continue;
                }
                let elf = files.get(m);
                let mut im = InfoMapping::new(m.start, m.end);
                im.file_offset = Some(m.pgoff);
                im.load_bias = elf.as_ref().and_then(|e| e.bias(m.start, m.pgoff));
                im.path = Some(m.filename.as_bytes().to_vec());
                im.build_id = m
                    .build_id
                    .clone()
                    .or_else(|| elf.as_ref().and_then(|e| e.build_id.clone()))
                    .filter(|b| !b.is_empty());
                im.mapped_ns = (m.from != 0).then_some(m.from);
                im.unmapped_ns = m.to;
                if m.filename == "[vdso]"
                    && let Some((id, _)) = &own_vdso
                    && im.build_id.as_ref() == Some(id)
                {
                    vdso_used = true;
                }
                if info.process.exe.is_none() && m.filename.starts_with('/') {
                    info.process.exe = im.path.clone();
                    info.process.exe_build_id = im.build_id.clone();
                }
                mappings.push(im);
            }
        }
        match under_sampled(rec, agg, p, last, counters.as_ref(), set.samples, &comm) {
            UnderSampled::Warning(w) => summary.warnings.push(w),
            UnderSampled::Short { cpu_ns } => {
                short.0 += 1;
                short.1 += cpu_ns;
                short.2 += set.samples;
            }
            UnderSampled::No => {}
        }
        let mut c = counters.unwrap_or_default();
        c.source = source;
        c.taskstats_refused = rec.taskstats_refused.is_some();
        info.counters = c;
        info.mappings = mappings;
        let s = &mut info.sampling;
        s.event = Some("cpu-clock".into());
        s.rate = Some(SampleRate::Frequency(rec.frequency));
        s.period_unit = Some("ns".into());
        s.arcs = Some(ArcCounts::SampledEdges);
        s.lost_samples = Some(rec.lost_samples());
        s.lost_samples_by_cpu = lost_by_cpu.clone();
        s.throttled = Some(rec.throttled);
        s.truncated_stacks = Some(truncated);
        let truncated_by = |end| Some(set.truncated.get(&end).copied().unwrap_or(0));
        s.truncated_stack_copy = truncated_by(StackEnd::StackCopy);
        s.truncated_callchain_limit = truncated_by(StackEnd::CallchainLimit);
        s.truncated_unwind_info = truncated_by(StackEnd::UnwindInfo);
        s.stack_size = Some(u64::from(rec.user_stack_bytes));
        s.max_stack = Some(u64::from(rec.max_stack));
        info.kernel.release = release.clone();
        info.kernel.build_id = kernel_build_id.clone();
        info.kernel.symbols_file = Some(symbols_file.clone());
        let name = |n: ProfileName| n.with_instance(*instance);
        let b = &mut info.boundary;
        // Every kind is written, those without samples as 0.
        b.entries = BoundaryKind::ALL.iter().map(|&k| (k, 0)).collect();
        for ((_, _, kind, _), (samples, _)) in &set.stacks {
            if let Some(kind) = kind {
                *b.entries.entry(*kind).or_default() += samples;
            }
        }
        b.user_only = Some(set.user_only);
        b.kernel_only = Some(set.kernel_only);
        b.stacks_file = Some(name(ProfileName::stacks(*pid, comm.clone())).file_name());
        // Names a thread gave itself (prctl PR_SET_NAME) while this image ran, in order.
        for (time, tid, new) in renames {
            let new = Comm::new(new.as_bytes()).map_err(|e| gmon_error("a thread name", e))?;
            info.renames.push(Rename::new(*time, *tid, new));
        }

        let user = gmon_bytes(&set.user, rate)?;
        let kernel = gmon_bytes(&set.kernel, rate)?;
        let stacks_file = stacks_bytes(&set.stacks)?;
        let mut info_text = Vec::new();
        info.write(&mut info_text)
            .map_err(|e| gmon_error("measurement info", e))?;
        for (n, bytes) in [
            (ProfileName::user(*pid, comm.clone()), &user),
            (ProfileName::kernel(*pid, comm.clone()), &kernel),
            (ProfileName::stacks(*pid, comm.clone()), &stacks_file),
            (ProfileName::info(*pid, comm.clone()), &info_text),
        ] {
            out.write(&name(n).file_name(), bytes)?;
        }
        let images: Vec<(usize, usize)> = set.segments.iter().map(|g| (*pi, g.image)).collect();
        if let Some(latency) = agg.syscalls.as_ref().and_then(|t| t.file(rec, &images)) {
            let text = latency
                .to_text()
                .map_err(|e| gmon_error("the latency file", e))?;
            out.write(
                &name(ProfileName::latency(*pid, comm.clone())).file_name(),
                text.as_bytes(),
            )?;
        }
        summary.processes += 1;
        summary.samples += set.samples;
        summary.truncated_stacks += truncated;
    }
    let period_ns = 1_000_000_000 / rec.frequency.max(1);
    if short.0 > 1 && short.1 / period_ns >= 20 && short.2 * 10 < short.1 / period_ns {
        summary.warnings.push(format!(
            "{} short-lived processes used {} ms of CPU time in all but have only {} samples: \
             each ran less than a few sample periods ({} us at {} Hz), and the kernel samples a \
             task only after a whole period of its CPU time; a higher -F shows more of them",
            short.0,
            short.1 / 1_000_000,
            short.2,
            period_ns / 1000,
            rec.frequency
        ));
    }
    if agg.system_wide {
        summary.system_samples = (
            agg.system.hist.values().sum(),
            agg.other.hist.values().sum(),
        );
        for (name, side) in [
            (ProfileName::KernelSystem, &agg.system),
            (ProfileName::KernelOther, &agg.other),
        ] {
            let bytes = gmon_bytes(side, rate)?;
            out.write(&name.file_name(), &bytes)?;
        }
    }
    out.write_kallsyms(&symbols_file, ksyms.text().as_bytes())?;
    if vdso_used && let Some((id, bytes)) = &own_vdso {
        out.write(&gmon_format::vdso_file_name(id), bytes)?;
    }
    summary.files = out.finish()?;
    Ok(summary)
}

/// The counters of process `p` and where they come from.
///
/// A process that ended, whose tasks' taskstats exit records all came (root), has their sum,
/// over its whole life; a `/proc` reading taken while it lived (for the launched command, the
/// one taken while it was a zombie) is a lower bound of every counter, so it wins where a
/// record fell short. The CPU times are the exception when every record had the exact runtime
/// ([`exact_cpu`]): those stand, as `/proc`'s are whole clock ticks of the same. Without
/// the records, the counters are the launched command's zombie reading or the last periodic
/// `/proc` reading of the process.
fn process_counters(
    rec: &Recording,
    exits: &HashMap<ProcessKey, Exited>,
    p: &Process,
    reading: Option<&crate::recording::ProcReading>,
    tick_ns: u64,
) -> (Option<ProcessCounters>, Option<CounterSource>) {
    let from_child = rec
        .child
        .as_ref()
        .filter(|c| c.pid == p.key.pid && p.key.generation == 0)
        .and_then(|c| c.counters.as_ref());
    let lower = from_child.or(reading.map(|r| &r.counters));
    let exited = exits
        .get(&p.key)
        .filter(|e| e.complete)
        .filter(|_| p.exit.is_some() || from_child.is_some() || reading.is_none());
    match (exited, lower) {
        (Some(e), lower) => {
            let mut c = e.counters.clone();
            if let Some(l) = lower {
                let mut l = proc_counters(l, tick_ns);
                // Exact CPU times stand; /proc's are whole clock ticks (10 ms).
                if e.exact_cpu {
                    (l.user_cpu_ns, l.system_cpu_ns) = (None, None);
                }
                max_counters(&mut c, &l);
            }
            (Some(c), Some(CounterSource::Taskstats))
        }
        (None, Some(l)) => (Some(proc_counters(l, tick_ns)), Some(CounterSource::Proc)),
        (None, None) => (None, None),
    }
}

/// Whether a process's samples account for its CPU time.
enum UnderSampled {
    /// They do, or it cannot be told (an attached process, no counters).
    No,
    /// They do not: the warning says why.
    Warning(String),
    /// It ran too briefly to be judged alone (fewer than 20 sample periods); its CPU time.
    Short { cpu_ns: u64 },
}

/// Whether process `p` used far more CPU time than its samples show, and why.
///
/// The kernel stops profiling a process that execs a set-uid or set-gid program (it is no
/// longer dumpable): nothing of the new image is recorded, not even its mappings, which is how
/// such an exec is told from other causes. Otherwise the time went to tasks (threads, or the
/// process itself) that each ran less than a sample period: an inherited event takes its first
/// sample of a task only after a whole period of that task's CPU time. Only processes born
/// during the run are checked: an attached one's counters cover its whole life.
fn under_sampled(
    rec: &Recording,
    agg: &Aggregate,
    p: &Process,
    last: &Segment,
    counters: Option<&ProcessCounters>,
    samples: u64,
    comm: &Comm,
) -> UnderSampled {
    let launched = p.key.generation == 0 && agg.launched == Some(p.key.pid);
    let born_here = launched || p.start.is_some();
    let Some(c) = counters.filter(|_| born_here && rec.frequency > 0) else {
        return UnderSampled::No;
    };
    let cpu_ns = c.user_cpu_ns.unwrap_or(0) + c.system_cpu_ns.unwrap_or(0);
    let period_ns = (1_000_000_000 / rec.frequency).max(1);
    let expected = cpu_ns / period_ns;
    if expected < 20 {
        return UnderSampled::Short { cpu_ns };
    }
    if samples * 10 >= expected {
        return UnderSampled::No;
    }
    let pid = gmon_format::process_label(
        p.key.pid,
        agg.replay
            .processes
            .iter()
            .filter(|q| q.key.pid == p.key.pid && q.key.generation < p.key.generation)
            .count() as u32,
    );
    let ms = cpu_ns / 1_000_000;
    let head =
        format!("process {pid} ({comm}) used {ms} ms of CPU time but has only {samples} samples");
    let period = format!("{} us at {} Hz", period_ns / 1000, rec.frequency);
    // An exec after which the kernel reported nothing of the new image.
    let blind_exec = p
        .execs
        .last()
        .is_some_and(|&e| e >= last.start && !p.mappings.iter().any(|m| m.from >= e));
    let children = agg
        .replay
        .processes
        .iter()
        .filter(|q| q.parent == Some(p.key))
        .count();
    let threads = p.threads.iter().filter(|t| t.tid != p.key.pid).count();
    let lost = rec.lost_samples();
    UnderSampled::Warning(if blind_exec {
        format!(
            "{head}: it exec'd a set-uid or set-gid program, and the kernel stops profiling such \
             a program (nothing of its image was recorded)"
        )
    } else if children >= 10 {
        format!(
            "{head}: it forked {children} processes, and the kernel hardly samples a process \
             while it forks that often, nor any task before it has run a whole sample period \
             ({period}); a higher -F shows more"
        )
    } else if threads >= 10 {
        format!(
            "{head}: its time went to {threads} threads that each ran less than a sample period \
             ({period}), and the kernel samples a task only after a whole period of its CPU \
             time; a higher -F shows more of them"
        )
    } else if lost > 0 {
        format!("{head}: {lost} samples of the run were lost (its ring buffers overflowed)")
    } else {
        format!(
            "{head}: the kernel sampled it less often than its CPU time implies (it samples a \
             task only after a whole period of its CPU time, {period})"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gmon_format::{AddressSize, Endian, Profile, ReadOptions, Record};
    use std::fs;

    #[test]
    fn histograms_split_at_page_runs_and_saturation() {
        let mut side = Side::default();
        side.hist.insert(0x401000, 70_000);
        side.hist.insert(0x402ffe, 1);
        side.hist.insert(0x7f00_0000_0010, 3);
        side.arcs.insert((0x401100, 0x401000), 5);
        let bytes = gmon_bytes(&side, 1000).expect("encode");
        let p = Profile::parse(&bytes, &ReadOptions::new(AddressSize::U64, Endian::Little))
            .expect("parse");
        let mut hists = Vec::new();
        let mut arcs = Vec::new();
        for r in p.records() {
            match r.expect("record").1 {
                Record::Histogram(h) => {
                    let bins: Vec<u16> = h.bins.iter().collect();
                    hists.push((h.header.low_pc, h.header.high_pc, bins));
                }
                Record::Arc(a) => arcs.push((a.from_pc, a.self_pc, a.count)),
                Record::BasicBlocks(_) => panic!("no basic blocks"),
            }
        }
        // Two records for the first run (70000 = 65535 + 4465), one for the second.
        assert_eq!(hists.len(), 3);
        assert_eq!((hists[0].0, hists[0].1), (0x401000, 0x403000));
        assert_eq!(hists[0].2[0], 65535);
        assert_eq!(hists[0].2[0xffe / 2 + 0x800], 1);
        assert_eq!((hists[1].0, hists[1].1), (0x401000, 0x403000));
        assert_eq!(hists[1].2[0], 4465);
        assert_eq!(hists[1].2[0xffe / 2 + 0x800], 0);
        assert_eq!(hists[2].0, 0x7f00_0000_0000);
        assert_eq!(hists[2].2[8], 3);
        assert_eq!(arcs, [(0x401100, 0x401000, 5)]);
    }

    #[test]
    fn edges_count_once_per_sample() {
        let mut side = Side::default();
        let mut edges = Vec::new();
        // A recursive stack: f (0x10) called from f (0x20) twice.
        side.add_stack(&[0x10, 0x20, 0x20, 0x30], &mut edges);
        assert_eq!(side.arcs.get(&(0x20, 0x20)), Some(&1));
        assert_eq!(side.arcs.get(&(0x20, 0x10)), Some(&1));
        assert_eq!(side.arcs.get(&(0x30, 0x20)), Some(&1));
    }

    #[test]
    fn an_earlier_proc_reading_raises_short_taskstats_counters() {
        let mut a = ProcessCounters::default();
        a.user_cpu_ns = Some(8_000_000);
        a.minor_faults = Some(90);
        let mut b = ProcessCounters::default();
        b.user_cpu_ns = Some(290_000_000);
        b.minor_faults = Some(80);
        b.read_bytes = Some(5);
        max_counters(&mut a, &b);
        assert_eq!(
            (a.user_cpu_ns, a.minor_faults, a.read_bytes, a.system_cpu_ns),
            (Some(290_000_000), Some(90), Some(5), None)
        );
    }

    #[test]
    fn taskstats_cpu_times_sum_to_the_exact_runtime() {
        // 2 ms that no tick saw: all user time, as /proc says.
        assert_eq!(exact_cpu(0, 0, 2_000_000), (2_000_000, 0));
        assert_eq!(exact_cpu(0, 4_000_000, 2_000_000), (0, 2_000_000));
        assert_eq!(
            exact_cpu(4_000_000, 12_000_000, 10_000_000),
            (2_500_000, 7_500_000)
        );
        assert_eq!(
            exact_cpu(u64::MAX / 2, u64::MAX / 2, u64::MAX),
            (u64::MAX - u64::MAX / 2, u64::MAX / 2)
        );
    }

    #[test]
    fn taskstats_records_go_to_the_process_whose_thread_exited() {
        use crate::recording::{SideBand, SideRecord, TaskExit};
        let side = |time, kind| SideRecord { time, cpu: 0, kind };
        // A new process has its parent's pid as ppid; a new thread its own process's.
        let fork = |pid, tid| SideBand::Fork {
            pid,
            ppid: if pid == tid { 10 } else { pid },
            tid,
            ptid: if pid == tid { 10 } else { pid },
        };
        let exit = |pid, tid| SideBand::Exit {
            pid,
            ppid: 10,
            tid,
            ptid: 10,
        };
        // Pid 11 runs a thread 12 and exits at 5; the pid is reused at 6, before the records
        // of the first process's tasks arrive at 8, and again at 30.
        let side_band = vec![
            side(1, fork(11, 11)),
            side(2, fork(11, 12)),
            side(4, exit(11, 12)),
            side(5, exit(11, 11)),
            side(6, fork(11, 11)),
            side(25, exit(11, 11)),
            side(30, fork(11, 11)),
        ];
        let task = |tid, tgid, user_cpu_ns, time| TaskExit {
            time,
            tid,
            tgid,
            user_cpu_ns,
            voluntary_switches: 1,
            ..TaskExit::default()
        };
        let task_exits = vec![
            // The third process's exit, whose EXIT record the run did not see: it was alive.
            task(11, Some(11), 700_000, 40),
            task(12, Some(11), 3_000, 8),
            // A version-11 record without a tgid, found by its thread id.
            task(11, None, 4_000, 8),
            // The second process's, drained just before its EXIT was stamped.
            task(11, Some(11), 50_000, 24),
        ];
        let mut rec = Recording {
            side_band,
            task_exits,
            ..Recording::default()
        };
        let rep = crate::replay(&rec);
        let c = taskstats_counters(&rec, &rep);
        let key = |generation| ProcessKey {
            pid: 11,
            generation,
        };
        assert_eq!(c[&key(0)].counters.user_cpu_ns, Some(7_000));
        assert_eq!(c[&key(0)].counters.voluntary_switches, Some(2));
        assert_eq!(c[&key(1)].counters.user_cpu_ns, Some(50_000));
        assert_eq!(c[&key(2)].counters.user_cpu_ns, Some(700_000));
        assert_eq!(c.len(), 3);
        assert!(c.values().all(|c| c.complete), "complete");
        // Without the record of thread 12 (lost to an overflow), the first process's sum is
        // incomplete.
        let mut lossy = rec.clone();
        lossy.task_exits.retain(|e| e.tid != 12);
        let c = taskstats_counters(&lossy, &crate::replay(&lossy));
        assert!(!c[&key(0)].complete && c[&key(1)].complete);
        // When the run saw the third process exit (at 45, its record at 46), a later record
        // (a process the run did not follow, reusing pid 11) is left out.
        rec.side_band.push(side(45, exit(11, 11)));
        rec.task_exits[0].time = 46;
        rec.task_exits.push(task(11, Some(11), 9, 60));
        let rep = crate::replay(&rec);
        let c = taskstats_counters(&rec, &rep);
        assert_eq!(c[&key(2)].counters.user_cpu_ns, Some(700_000));
        assert_eq!(
            c.values()
                .filter_map(|c| c.counters.user_cpu_ns)
                .sum::<u64>(),
            757_000
        );
    }

    #[test]
    fn a_reused_pid_gets_a_file_set_of_its_own_but_an_exec_of_the_same_name_does_not() {
        use crate::recording::{SideBand, SideRecord};
        let side = |time, kind| SideRecord { time, cpu: 0, kind };
        let fork = |pid, ppid| SideBand::Fork {
            pid,
            ppid,
            tid: pid,
            ptid: ppid,
        };
        let comm = |pid, name: &str, exec| SideBand::Comm {
            pid,
            tid: pid,
            comm: name.into(),
            exec,
        };
        let mut rec = Recording {
            frequency: 1000,
            end_time: 10,
            ..Recording::default()
        };
        rec.side_band = vec![
            side(1, comm(10, "sh", true)),
            side(2, fork(11, 10)),
            side(3, comm(11, "job", true)),
            side(
                5,
                SideBand::Exit {
                    pid: 11,
                    ppid: 10,
                    tid: 11,
                    ptid: 10,
                },
            ),
            side(6, fork(11, 10)),
            side(7, comm(11, "job", true)),
            // Process 10 execs a program of its own name: one process, two images.
            side(8, comm(10, "sh", true)),
        ];
        for (t, pid) in [(4, 11), (7, 11), (9, 10), (2, 10)] {
            rec.push_sample(
                t,
                pid,
                pid,
                0,
                1_000_000,
                0x1000,
                true,
                None,
                &[],
                &[0x1000],
                &[],
            );
        }
        let agg = crate::aggregate(&rec, &AggregateOptions::default(), KernelSymbols::default());
        let dir =
            std::env::temp_dir().join(format!("collect-perf-instances-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let opts = WriteOptions {
            dir: dir.clone(),
            ..WriteOptions::default()
        };
        let summary = write_measurement(&rec, &agg, &opts).expect("write");
        assert_eq!(summary.processes, 3);
        let read = |name: &str| {
            MeasurementInfo::parse(&fs::read(dir.join(name)).expect(name)).expect("info")
        };
        // The second process with pid 11 is instance 1, with files of its own.
        let first = read("gmon.out.11.job");
        let second = read("gmon.out.11_1.job");
        assert_eq!(
            (first.process.instances, second.process.instances),
            (None, None)
        );
        assert_eq!(first.process.end_monotonic_ns, Some(5));
        // Its file set (named by its exec) starts at that exec.
        assert_eq!(second.process.start_monotonic_ns, Some(7));
        for name in [
            "gmon.out.11_1u.job",
            "gmon.out.11_1k.job",
            "gmon.out.11_1s.job",
        ] {
            assert!(dir.join(name).is_file(), "{name}");
        }
        let sh = read("gmon.out.10.sh");
        assert_eq!(sh.process.instances, None);
        let _ = fs::remove_dir_all(&dir);
    }
}
