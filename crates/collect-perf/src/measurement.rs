//! Writing a measurement directory from a recording: per process the user and kernel gmon
//! files, the info file and the stacks file, plus the kernel-symbol snapshot, exactly as
//! `gmon_format::labeled` specifies.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use gmon_format::{
    ArcCounts, BoundaryKind, Comm, Endian, Field, HistogramUnit, Mapping as InfoMapping,
    MeasurementInfo, ProcessCounters, ProfileName, SECONDS, SampleRate, Section, Stack,
    StacksWriter, write_sampled_profile,
};

use crate::error::{Error, Result};
use crate::output::{Output, WrittenFile};
use crate::recording::{CounterKind, ProcCounters, Recording};
use crate::replay::{Process, ProcessKey, Replay};
use crate::unwind::{Images, StackEnd, UnwindStats, unwind_with};

/// Options of [`write_measurement`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WriteOptions {
    /// The measurement directory of [`write_measurement`], created if missing; it must not
    /// hold a measurement yet. [`write_measurement_to`] ignores it. Default is `.`.
    pub dir: PathBuf,
    /// The launched command line, written as `argv` of the launched process. Default is None.
    pub argv: Option<Vec<OsString>>,
    /// System-wide mode: the pids asked for. Their processes, and the processes they start, get
    /// file sets; the kernel part of every other process's samples goes to `gmon.out.-k.other`,
    /// and kernel work for no process (pid 0, kernel threads) to `gmon.out.-k.kernel`. None (the
    /// default) gives every process of the recording its file set.
    pub system_wide: Option<BTreeSet<u32>>,
    /// Most frames kept of each user stack. Default is 1024.
    pub max_frames: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            dir: PathBuf::from("."),
            argv: None,
            system_wide: None,
            max_frames: 1024,
        }
    }
}

/// What [`write_measurement`] did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct WriteSummary {
    /// The files, in the order written; the manifest last.
    pub files: Vec<WrittenFile>,
    /// File sets written (one per process and command name).
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

/// Histogram bins and arcs of one gmon file. Hash maps while counting (a sample touches a
/// dozen entries); sorted when written, so the output does not depend on hash order.
#[derive(Debug, Default)]
struct Side {
    /// Address of a 2-byte bin → samples.
    hist: HashMap<u64, u64>,
    /// (from_pc, self_pc) → samples whose stack holds the edge.
    arcs: HashMap<(u64, u64), u64>,
}

impl Side {
    fn add_stack(&mut self, frames: &[u64], edges: &mut Vec<(u64, u64)>) {
        edges.clear();
        edges.extend(frames.windows(2).map(|w| (w[1], w[0])));
        edges.sort_unstable();
        edges.dedup();
        for e in edges.iter() {
            *self.arcs.entry(*e).or_default() += 1;
        }
    }
}

type StackKey = (Vec<u64>, Vec<u64>, Option<BoundaryKind>, bool);

/// One segment of a process's life under one command name: from its start or an exec to the
/// next exec or its end.
#[derive(Debug)]
struct Segment<'a> {
    process: &'a Process,
    /// Which image: the number of execs before it.
    image: usize,
    start: u64,
    end: u64,
    /// Whether it is the process's last image (which gets the whole process's counters).
    last: bool,
    /// Whether it starts with the exec of the launched command.
    launched: bool,
    /// Whether its process is the launched command.
    launched_process: bool,
}

/// Which image of `p` ran at `time`: the number of its execs at or before then. For the
/// launched command, whose events may start before its exec (system-wide mode), the kernel's
/// work on that exec counts for the command's image, not for pkgmon's.
fn image_at(p: &Process, time: u64, launched: bool) -> usize {
    let k = p.execs.partition_point(|&e| e <= time);
    if launched && k == 0 && !p.execs.is_empty() {
        1
    } else {
        k
    }
}

/// Everything that goes into one file set.
#[derive(Debug, Default)]
struct FileSet<'a> {
    segments: Vec<Segment<'a>>,
    user: Side,
    kernel: Side,
    stacks: HashMap<StackKey, (u64, u64)>,
    boundary: BTreeMap<BoundaryKind, u64>,
    user_only: u64,
    kernel_only: u64,
    samples: u64,
    /// Samples whose user stack may lack outer frames, by reason.
    truncated: BTreeMap<StackEnd, u64>,
}

/// Sorted kernel text symbols, for classifying entry points (names borrowed from the
/// snapshot's text: it has over 100,000 lines).
struct KernelSymbols<'a>(Vec<(u64, &'a str)>);

impl<'a> KernelSymbols<'a> {
    fn parse(text: &'a str) -> KernelSymbols<'a> {
        let mut v: Vec<(u64, &'a str)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let a = u64::from_str_radix(f.next()?, 16).ok()?;
                let t = f.next()?;
                let name = f.next()?;
                (matches!(t, "t" | "T" | "w" | "W") && a != 0 && !name.starts_with("__pfx_"))
                    .then_some((a, name))
            })
            .collect();
        v.sort_unstable();
        KernelSymbols(v)
    }

    fn name(&self, addr: u64) -> Option<&'a str> {
        let i = self.0.partition_point(|(a, _)| *a <= addr);
        (i > 0).then(|| self.0[i - 1].1)
    }

    /// The boundary kind of a kernel chain (innermost first): its outermost frame, or one of
    /// the two inside it when the outermost is a thunk or other unknown entry code.
    fn boundary(&self, kernel: &[u64]) -> BoundaryKind {
        let mut kind = BoundaryKind::Other;
        for &a in kernel.iter().rev().take(3) {
            kind = self
                .name(a)
                .map_or(BoundaryKind::Other, BoundaryKind::from_entry_symbol);
            if kind != BoundaryKind::Other {
                break;
            }
        }
        kind
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

fn stacks_bytes(stacks: &HashMap<StackKey, (u64, u64)>) -> Result<Vec<u8>> {
    let enc = |e| gmon_error("a stacks file", e);
    let mut sorted: Vec<(&StackKey, &(u64, u64))> = stacks.iter().collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut w = StacksWriter::new(Vec::new(), stacks.len() as u64).map_err(enc)?;
    for ((kernel, user, boundary, truncated), &(samples, nanoseconds)) in sorted {
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

/// The segments of a process: one per image (before the first exec, after each exec), less
/// the images without samples that an exec replaced (such as the launched command's image
/// before its exec: the events only start at that exec).
fn segments<'a>(p: &'a Process, rec: &Recording) -> Vec<(Segment<'a>, Vec<u8>)> {
    let start = p.start.unwrap_or(rec.start_time);
    let end = p.exit.unwrap_or(rec.end_time).max(start);
    let mut bounds = vec![start];
    bounds.extend(p.execs.iter().copied());
    let launched_pid = rec.child.as_ref().map(|c| c.pid);
    let launched = p.key.generation == 0 && launched_pid == Some(p.key.pid);
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
        let has_samples = p
            .samples
            .iter()
            .any(|&i| image_at(p, rec.samples[i].time, launched) == k);
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
                process: p,
                image: k,
                start: from,
                end: to,
                last: k + 1 == bounds.len(),
                launched: k == 1 && launched,
                launched_process: launched,
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
fn taskstats_counters(
    rec: &Recording,
    replay: &Replay,
) -> HashMap<ProcessKey, (ProcessCounters, bool)> {
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
    let mut out: HashMap<ProcessKey, ProcessCounters> = HashMap::new();
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
        c.user_cpu_ns = Some(e.user_cpu_ns);
        c.system_cpu_ns = Some(e.system_cpu_ns);
        c.minor_faults = Some(e.minor_faults);
        c.major_faults = Some(e.major_faults);
        c.voluntary_switches = Some(e.voluntary_switches);
        c.involuntary_switches = Some(e.involuntary_switches);
        c.read_bytes = Some(e.read_bytes);
        c.written_bytes = Some(e.written_bytes);
        match out.get_mut(&p.key) {
            Some(acc) => add_counters(acc, &c),
            None => {
                out.insert(p.key, c);
            }
        }
    }
    // Complete: every thread exit the run saw has its record (none was lost to an overflow).
    replay
        .processes
        .iter()
        .filter_map(|p| {
            let c = out.remove(&p.key)?;
            let complete = p
                .threads
                .iter()
                .filter(|t| t.exit.is_some())
                .all(|t| matched.contains(&(p.key, t.tid)));
            Some((p.key, (c, complete)))
        })
        .collect()
}

/// Writes the measurement into `opts.dir` (created if missing): [`Output::create`], then
/// [`write_measurement_to`].
pub fn write_measurement(
    rec: &Recording,
    replay: &Replay,
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    write_measurement_to(rec, replay, opts, Output::create(&opts.dir)?)
}

/// Writes the measurement into `out`: for each process (pid and command name) its user gmon,
/// kernel gmon, info and stacks files, the kernel-symbol snapshot, the vDSO image, and last
/// the manifest that makes the measurement complete.
///
/// Output is deterministic for a given recording and machine state: maps are sorted and
/// nothing depends on hash order. Each file is created new through the directory opened by
/// [`Output`] and renamed into place without replacing anything. Returns an error if a file
/// cannot be written; the files written before stay, and the manifest stays the placeholder
/// that marks the measurement incomplete.
pub fn write_measurement_to(
    rec: &Recording,
    replay: &Replay,
    opts: &WriteOptions,
    mut out: Output,
) -> Result<WriteSummary> {
    let mut summary = WriteSummary::default();
    let mut images = Images::default();

    let kallsyms_text =
        crate::procfs::text("/proc/kallsyms", crate::procfs::LARGE).unwrap_or_default();
    let ksyms = KernelSymbols::parse(&kallsyms_text);
    let symbols_file = kallsyms_name();
    if ksyms.0.is_empty() {
        summary.warnings.push(
            "kernel addresses are hidden (/proc/kallsyms shows zeros): kernel symbols are \
             unavailable to the report; run as root or lower kernel.kptr_restrict"
                .into(),
        );
    }

    // Which processes get file sets: all, or in system-wide mode those asked for and their
    // descendants.
    let profiled: BTreeSet<usize> = match &opts.system_wide {
        None => (0..replay.processes.len()).collect(),
        Some(pids) => {
            let mut set = BTreeSet::new();
            for (i, p) in replay.processes.iter().enumerate() {
                let asked = pids.contains(&p.key.pid)
                    || p.parent.is_some_and(|k| {
                        replay
                            .processes
                            .iter()
                            .position(|q| q.key == k)
                            .is_some_and(|j| set.contains(&j))
                    });
                if asked && p.key.pid != 0 {
                    set.insert(i);
                }
            }
            set
        }
    };
    // Only the profiled processes' user stacks are written, so only theirs are unwound.
    let stacks = unwind_with(rec, replay, opts.max_frames.max(1), &mut images, |k| {
        profiled.contains(&k)
    });
    summary.unwind = stacks.stats;

    let mut sets: BTreeMap<(u32, Vec<u8>), FileSet<'_>> = BTreeMap::new();
    let mut system = Side::default();
    let mut other = Side::default();
    let mut edges = Vec::new();
    for (pi, p) in replay.processes.iter().enumerate() {
        if !profiled.contains(&pi) {
            // System-wide mode only: the kernel part goes to -k.kernel (pid 0 and kernel
            // threads, which have no user context) or -k.other.
            for &i in &p.samples {
                let s = &rec.samples[i];
                let kernel = rec.kernel_chain(s);
                if s.user_mode || kernel.is_empty() {
                    continue;
                }
                let side = if s.pid == 0 || s.regs.is_none() {
                    &mut system
                } else {
                    &mut other
                };
                *side.hist.entry(kernel[0] & !1).or_default() += 1;
                side.add_stack(kernel, &mut edges);
            }
            continue;
        }
        let segs = segments(p, rec);
        for (seg, comm) in segs {
            let set = sets.entry((p.key.pid, comm)).or_default();
            for &i in &p.samples {
                let s = &rec.samples[i];
                if image_at(p, s.time, seg.launched_process) != seg.image {
                    continue;
                }
                let kernel = rec.kernel_chain(s);
                let user = stacks.frames(i);
                let truncated = stacks.truncated(i);
                set.samples += 1;
                if let Some(end) = stacks.end(i).filter(|e| e.is_truncated()) {
                    *set.truncated.entry(end).or_default() += 1;
                }
                if s.user_mode {
                    *set.user.hist.entry(s.ip & !1).or_default() += 1;
                } else if let Some(&pc) = kernel.first() {
                    *set.kernel.hist.entry(pc & !1).or_default() += 1;
                }
                set.user.add_stack(user, &mut edges);
                // The outermost frame found of a stack cut short gets an arc from 0, which the
                // report shows as `[truncated]` rather than taking that frame for a root.
                if let (true, Some(&outer)) = (truncated, user.last()) {
                    *set.user.arcs.entry((0, outer)).or_default() += 1;
                }
                set.kernel.add_stack(kernel, &mut edges);
                let boundary = match (kernel.last(), user.first()) {
                    (Some(&entry), Some(&upc)) => {
                        *set.kernel.arcs.entry((upc, entry)).or_default() += 1;
                        let kind = ksyms.boundary(kernel);
                        *set.boundary.entry(kind).or_default() += 1;
                        Some(kind)
                    }
                    (None, _) => {
                        set.user_only += 1;
                        None
                    }
                    (Some(_), None) => {
                        set.kernel_only += 1;
                        None
                    }
                };
                let e = set
                    .stacks
                    .entry((kernel.to_vec(), user.to_vec(), boundary, truncated))
                    .or_default();
                e.0 += 1;
                e.1 += s.period;
            }
            set.segments.push(seg);
        }
    }
    let realtime_offset = rec.start_realtime.wrapping_sub(rec.start_time);
    // Safety: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let tick_ns = 1_000_000_000 / ticks;
    let release =
        crate::procfs::text("/proc/sys/kernel/osrelease", 4096).map(|s| s.trim().to_owned());
    let kernel_build_id = kernel_build_id();
    let mut perf_by_pid: BTreeMap<u32, Vec<(u64, CounterKind)>> = BTreeMap::new();
    for e in &rec.counter_events {
        perf_by_pid.entry(e.pid).or_default().push((e.time, e.kind));
    }
    let rate = u32::try_from(rec.frequency).unwrap_or(u32::MAX);
    let exits = taskstats_counters(rec, replay);
    let lost_by_cpu = rec.lost_samples_by_cpu();
    // The vDSO image to save: this process's own, when a profiled process mapped one with the
    // same build-id (the kernel maps one image into every 64-bit process).
    let own_vdso = crate::elf::own_vdso().and_then(|bytes| {
        let id = crate::elf::ElfInfo::parse(&bytes[..])?.build_id?;
        Some((id, bytes))
    });
    let mut vdso_used = false;
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

    for ((pid, comm_bytes), set) in &sets {
        let truncated: u64 = set.truncated.values().sum();
        let comm = Comm::new(comm_bytes.clone()).map_err(|e| gmon_error("a command name", e))?;
        let mut info = MeasurementInfo::default();
        let first = &set.segments[0];
        let last = &set.segments[set.segments.len() - 1];
        info.process.pid = *pid;
        info.process.ppid = first.process.parent.map(|k| k.pid);
        info.process.comm = Some(comm.clone());
        // Processes, not images: a process that execs a program of the same name is one.
        let instances: BTreeSet<_> = set.segments.iter().map(|g| g.process.key).collect();
        if instances.len() > 1 {
            info.process.instances = Some(instances.len() as u64);
        }
        info.process.start_monotonic_ns = Some(first.start);
        info.process.start_realtime_ns = Some(first.start.wrapping_add(realtime_offset));
        info.process.end_monotonic_ns = Some(last.end);
        info.process.end_realtime_ns = Some(last.end.wrapping_add(realtime_offset));

        let mut counters: Option<ProcessCounters> = None;
        let mut source = None;
        let mut perf: BTreeMap<CounterKind, u64> = BTreeMap::new();
        let mut mappings = Vec::new();
        for seg in &set.segments {
            let p = seg.process;
            if seg.launched
                && let Some(argv) = &opts.argv
            {
                info.process.argv = Some(argv.iter().map(|a| a.as_bytes().to_vec()).collect());
            }
            let reading = rec
                .proc_readings
                .iter()
                .filter(|r| {
                    r.pid == *pid
                        && r.time >= seg.start
                        && r.comm.as_bytes() == comm_bytes.as_slice()
                })
                .max_by_key(|r| r.time);
            if info.process.argv.is_none()
                && let Some(r) = reading
                && !r.argv.is_empty()
            {
                info.process.argv = Some(r.argv.clone());
            }
            // The launched command's /proc counters, read while it was a zombie, cover its
            // whole life and scale CPU time to the scheduler's exact runtime: best. Any other
            // process that ended has its tasks' exit records, over its whole life, when all
            // of them came. One still alive at the end, or without them, has its last /proc
            // reading.
            let from_child = rec
                .child
                .as_ref()
                .filter(|c| c.pid == *pid && p.key.generation == 0)
                .and_then(|c| c.counters.as_ref());
            let exited = exits
                .get(&p.key)
                .filter(|(_, complete)| *complete)
                .map(|(c, _)| c)
                .filter(|_| from_child.is_none() && (p.exit.is_some() || reading.is_none()));
            if seg.last
                && let Some(c) = exited
            {
                // Every counter only grows, so a /proc reading taken while the process lived
                // is a lower bound: it wins where the tick-sampled taskstats CPU times fell
                // short of the exact runtime /proc scales to.
                let mut c = c.clone();
                if let Some(r) = reading {
                    max_counters(&mut c, &proc_counters(&r.counters, tick_ns));
                }
                match &mut counters {
                    Some(acc) => add_counters(acc, &c),
                    None => counters = Some(c),
                }
                source = Some("taskstats");
            } else if seg.last
                && let Some(c) = from_child.or(reading.map(|r| &r.counters))
            {
                source.get_or_insert("proc");
                let c = proc_counters(c, tick_ns);
                match &mut counters {
                    Some(acc) => add_counters(acc, &c),
                    None => counters = Some(c),
                }
            }
            for &(t, kind) in perf_by_pid.get(pid).map_or(&[][..], Vec::as_slice) {
                if image_at(p, t, seg.launched_process) == seg.image {
                    *perf.entry(kind).or_default() += 1;
                }
            }
            for m in &p.mappings {
                if m.from > seg.end || m.to.is_some_and(|t| t <= seg.start) {
                    continue;
                }
                let elf = images.get(m);
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
        // The kernel silently stops profiling a process that execs a set-uid or set-gid
        // program (it is no longer dumpable); its CPU time then has no samples. Only processes
        // born during the run are checked: an attached one's counters cover its whole life.
        let born_here = last.launched_process || last.process.start.is_some();
        if let Some(c) = counters.as_ref().filter(|_| born_here && rec.frequency > 0) {
            let cpu_ns = c.user_cpu_ns.unwrap_or(0) + c.system_cpu_ns.unwrap_or(0);
            let expected = cpu_ns / (1_000_000_000 / rec.frequency).max(1);
            if expected >= 20 && set.samples * 10 < expected {
                summary.warnings.push(format!(
                    "process {pid} ({comm}) used {} ms of CPU time but has only {} samples: the \
                     kernel stops profiling a process that execs a set-uid or set-gid program",
                    cpu_ns / 1_000_000,
                    set.samples
                ));
            }
        }
        let mut c = counters.unwrap_or_default();
        if let Some(source) = source {
            c.extra.push(Field::new("source", format!("\"{source}\"")));
        }
        if rec.taskstats_refused.is_some() {
            c.extra.push(Field::new("taskstats", "refused"));
        }
        for kind in CounterKind::ALL {
            c.extra.push(Field::new(
                kind.key(),
                perf.get(&kind).copied().unwrap_or(0).to_string(),
            ));
        }
        info.counters = c;
        info.mappings = mappings;
        info.sampling.event = Some("cpu-clock".into());
        info.sampling.rate = Some(SampleRate::Frequency(rec.frequency));
        info.sampling.period_unit = Some("ns".into());
        info.sampling.arcs = Some(ArcCounts::SampledEdges);
        info.sampling.lost_samples = Some(rec.lost_samples());
        for (cpu, n) in &lost_by_cpu {
            info.sampling
                .extra
                .push(Field::new(format!("lost-samples-cpu{cpu}"), n.to_string()));
        }
        info.sampling.throttled = Some(rec.throttled);
        info.sampling
            .extra
            .push(Field::new("truncated-stacks", truncated.to_string()));
        info.sampling
            .extra
            .push(Field::new("stack-size", rec.user_stack_bytes.to_string()));
        info.sampling
            .extra
            .push(Field::new("max-stack", rec.max_stack.to_string()));
        for end in StackEnd::TRUNCATED {
            info.sampling.extra.push(Field::new(
                format!("truncated-{}", end.as_str()),
                set.truncated.get(&end).copied().unwrap_or(0).to_string(),
            ));
        }
        info.kernel.release = release.clone();
        info.kernel.build_id = kernel_build_id.clone();
        info.kernel.symbols_file = Some(symbols_file.clone());
        let stacks_name = ProfileName::stacks(*pid, comm.clone()).file_name();
        let mut fields: Vec<Field> = BoundaryKind::ALL
            .iter()
            .map(|k| {
                Field::new(
                    k.as_str(),
                    set.boundary.get(k).copied().unwrap_or(0).to_string(),
                )
            })
            .collect();
        fields.push(Field::new("user-only", set.user_only.to_string()));
        fields.push(Field::new("kernel-only", set.kernel_only.to_string()));
        let quoted: String = stacks_name
            .chars()
            .flat_map(|c| match c {
                '"' | '\\' => vec!['\\', c],
                c => vec![c],
            })
            .collect();
        fields.push(Field::new("stacks-file", format!("\"{quoted}\"")));
        info.extra_sections.push(Section {
            name: "boundary".into(),
            fields,
        });

        let user = gmon_bytes(&set.user, rate)?;
        let kernel = gmon_bytes(&set.kernel, rate)?;
        let stacks_file = stacks_bytes(&set.stacks)?;
        let mut info_text = Vec::new();
        info.write(&mut info_text)
            .map_err(|e| gmon_error("measurement info", e))?;
        for (name, bytes) in [
            (ProfileName::user(*pid, comm.clone()), &user),
            (ProfileName::kernel(*pid, comm.clone()), &kernel),
            (ProfileName::stacks(*pid, comm.clone()), &stacks_file),
            (ProfileName::info(*pid, comm.clone()), &info_text),
        ] {
            out.write(&name.file_name(), bytes)?;
        }
        summary.processes += 1;
        summary.samples += set.samples;
        summary.truncated_stacks += truncated;
    }
    if opts.system_wide.is_some() {
        summary.system_samples = (system.hist.values().sum(), other.hist.values().sum());
        for (name, side) in [
            (ProfileName::KernelSystem, &system),
            (ProfileName::KernelOther, &other),
        ] {
            let bytes = gmon_bytes(side, rate)?;
            out.write(&name.file_name(), &bytes)?;
        }
    }
    out.write_kallsyms(&symbols_file, kallsyms_text.as_bytes())?;
    if vdso_used && let Some((id, bytes)) = &own_vdso {
        out.write(&gmon_format::vdso_file_name(id), bytes)?;
    }
    summary.files = out.finish()?;
    Ok(summary)
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
        assert_eq!(c[&key(0)].0.user_cpu_ns, Some(7_000));
        assert_eq!(c[&key(0)].0.voluntary_switches, Some(2));
        assert_eq!(c[&key(1)].0.user_cpu_ns, Some(50_000));
        assert_eq!(c[&key(2)].0.user_cpu_ns, Some(700_000));
        assert_eq!(c.len(), 3);
        assert!(c.values().all(|c| c.1), "complete");
        // Without the record of thread 12 (lost to an overflow), the first process's sum is
        // incomplete.
        let mut lossy = rec.clone();
        lossy.task_exits.retain(|e| e.tid != 12);
        let c = taskstats_counters(&lossy, &crate::replay(&lossy));
        assert!(!c[&key(0)].1 && c[&key(1)].1);
        // When the run saw the third process exit (at 45, its record at 46), a later record
        // (a process the run did not follow, reusing pid 11) is left out.
        rec.side_band.push(side(45, exit(11, 11)));
        rec.task_exits[0].time = 46;
        rec.task_exits.push(task(11, Some(11), 9, 60));
        let rep = crate::replay(&rec);
        let c = taskstats_counters(&rec, &rep);
        assert_eq!(c[&key(2)].0.user_cpu_ns, Some(700_000));
        assert_eq!(
            c.values().filter_map(|c| c.0.user_cpu_ns).sum::<u64>(),
            757_000
        );
    }

    #[test]
    fn pid_reuse_merges_and_counts_instances_but_exec_does_not() {
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
        let rep = crate::replay(&rec);
        let dir =
            std::env::temp_dir().join(format!("collect-perf-instances-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir");
        let opts = WriteOptions {
            dir: dir.clone(),
            ..WriteOptions::default()
        };
        let summary = write_measurement(&rec, &rep, &opts).expect("write");
        assert_eq!(summary.processes, 2);
        let read = |name: &str| {
            MeasurementInfo::parse(&fs::read(dir.join(name)).expect(name)).expect("info")
        };
        let job = read("gmon.out.11.job");
        assert_eq!(job.process.instances, Some(2));
        let sh = read("gmon.out.10.sh");
        assert_eq!(sh.process.instances, None);
        let _ = fs::remove_dir_all(&dir);
    }
}
