//! Writing a measurement directory from an [`Aggregate`]: per process image the user and
//! kernel gmon files, the info file and the stacks file, plus the kernel-symbol snapshot and
//! the vDSO image, exactly as `gmon_format::labeled` specifies.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use gmon_format::async_moves::MovedStack;
use gmon_format::{
    ArcCounts, BoundaryKind, Comm, Endian, HistogramUnit, Mapping as InfoMapping, MeasurementInfo,
    ProcessCounters, ProfileName, Rename, SECONDS, SampleRate, Stack, StacksWriter,
    write_sampled_profile,
};

#[cfg(test)]
use crate::aggregate::AggregateOptions;
use crate::aggregate::{Aggregate, ImageAcc, Place, Side, StackKey};
use crate::counters::{UnderSampled, process_counters, taskstats_counters, under_sampled};
use crate::error::{Error, Result};
use crate::kernel_symbols::KernelSymbols;
use crate::output::{Output, WrittenFile};
use crate::recording::Recording;
use crate::snapshot::MachineSnapshot;
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
    /// What to record of the machine the recording was made on. Default is None: the running
    /// machine's ([`MachineSnapshot::live`]).
    pub machine: Option<MachineSnapshot>,
    /// Write files only for the processes that had samples: the others that started or ended
    /// during the recording are only summarized ([`WriteSummary::file_sets`], with their CPU
    /// time), and those that did neither are left out. A time window of a continuous run
    /// writes so, its index naming them all. Default is false (every process appears).
    pub only_active: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            dir: PathBuf::from("."),
            argv: None,
            machine: None,
            only_active: false,
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
    /// What `async.moves` says, when the asynchronous-event attribution ran.
    pub async_moves: Option<gmon_format::AsyncMoves>,
    /// What the block programs saw, when the block kind's windows came from them.
    pub async_kernel_block: Option<crate::KernelBlock>,
    /// The file sets written, in the order of their names.
    pub file_sets: Vec<FileSetSummary>,
}

/// One file set a measurement holds: one process (pid and instance number) under one command
/// name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileSetSummary {
    /// The pid.
    pub pid: u32,
    /// Which process with this pid in the measurement (the `_N` of its files' names).
    pub instance: u32,
    /// The command name of its files.
    pub comm: Vec<u8>,
    /// The process in [`Aggregate::replay`].
    pub process: crate::ProcessKey,
    /// Its first and last image (execs before them).
    pub images: (usize, usize),
    /// Its samples.
    pub samples: u64,
    /// Its user + system CPU time as its info file gives it, if known: the process's, to its
    /// exit or to its latest reading.
    pub cpu_ns: Option<u64>,
    /// Whether its files were written ([`WriteOptions::only_active`] writes none for a file
    /// set without samples).
    pub files: bool,
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
        let (user_only, kernel_only) = acc.stacks.count(&mut self.user, &mut self.kernel);
        self.user_only += user_only;
        self.kernel_only += kernel_only;
        acc.stacks.collect(ksyms, &mut self.stacks);
        for (k, n) in &acc.truncated {
            *self.truncated.entry(*k).or_default() += n;
        }
        self.samples += acc.samples;
    }
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
fn file_sets(
    agg: &Aggregate,
    rec: &Recording,
    only_active: bool,
) -> BTreeMap<(u32, u32, Vec<u8>), (usize, FileSet)> {
    let mut sets: BTreeMap<(u32, u32, Vec<u8>), (usize, FileSet)> = BTreeMap::new();
    let mut instances: HashMap<u32, u32> = HashMap::new();
    for (pi, p) in agg.replay.processes.iter().enumerate() {
        if !agg.profiled[pi] {
            continue;
        }
        let idle = || {
            p.start.is_none()
                && p.exit.is_none()
                && p.execs.is_empty()
                && !(0..=p.execs.len())
                    .any(|k| agg.images.get(&(pi, k)).is_some_and(|a| a.samples > 0))
        };
        if only_active && idle() {
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
    let live;
    let machine = match &opts.machine {
        Some(m) => m,
        None => {
            live = MachineSnapshot::live();
            &live
        }
    };
    let symbols_file = machine.symbols_file();
    if ksyms.is_empty() {
        summary.warnings.push(
            "kernel addresses are hidden (/proc/kallsyms shows zeros): kernel symbols are \
             unavailable to the report; run as root or lower kernel.kptr_restrict"
                .into(),
        );
    }
    summary.unwind = agg.unwind_stats();
    let sets = file_sets(agg, rec, opts.only_active);

    let realtime_offset = rec.start_realtime.wrapping_sub(rec.start_time);
    let tick_ns = machine.tick_ns();
    let rate = u32::try_from(rec.frequency).unwrap_or(u32::MAX);
    let exits = taskstats_counters(rec, &agg.replay);
    let lost_by_cpu = rec.lost_samples_by_cpu();
    // The vDSO image to save: this process's own, when a profiled process mapped one with the
    // same build-id (the kernel maps one image into every 64-bit process).
    let own_vdso = machine.vdso.as_ref().and_then(|bytes| {
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
            for (index, m) in p.mappings.iter().enumerate() {
                if m.from > seg.end || m.to.is_some_and(|t| t <= seg.start) {
                    continue;
                }
                let elf = files.get(m);
                let delta = agg.displaced.delta(*pi, index).unwrap_or(0);
                let mut im =
                    InfoMapping::new(m.start.wrapping_add(delta), m.end.wrapping_add(delta));
                im.runtime_start = (delta != 0).then_some(m.start);
                im.file_offset = Some(m.pgoff);
                im.load_bias = elf
                    .as_ref()
                    .and_then(|e| e.bias(m.start, m.end, m.pgoff))
                    .map(|b| b.wrapping_add(delta));
                im.path = Some(m.filename.as_bytes().to_vec());
                im.build_id = m
                    .build_id
                    .clone()
                    .or_else(|| elf.as_ref().and_then(|e| e.build_id.clone()))
                    .filter(|b| !b.is_empty());
                im.mapped_ns = (m.from != 0).then_some(m.from);
                im.unmapped_ns = m.to;
                if &*m.filename == "[vdso]"
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
        if p.renames_dropped > 0 && set.segments.iter().any(|s| s.last) {
            summary.warnings.push(format!(
                "process {} ({comm}) renamed its threads {} times: its info file keeps the \
                 first {}",
                gmon_format::process_label(*pid, *instance),
                p.renames.len() as u64 + p.renames_dropped,
                crate::replay::MAX_RENAMES
            ));
        }
        if p.mappings_dropped > 0 && set.segments.iter().any(|s| s.last) {
            summary.warnings.push(format!(
                "process {} ({comm}) mapped code at {} places: its info file keeps the first \
                 {}, and samples in the others are [unknown]",
                gmon_format::process_label(*pid, *instance),
                p.mappings.len() as u64 + p.mappings_dropped,
                crate::replay::MAX_MAPPINGS
            ));
        }
        match under_sampled(
            rec,
            agg,
            p,
            last.start,
            counters.as_ref(),
            set.samples,
            &comm,
        ) {
            UnderSampled::Warning(w) => summary.warnings.push(w),
            UnderSampled::Short { cpu_ns } => {
                short.0 += 1;
                short.1 += cpu_ns;
                short.2 += set.samples;
            }
            UnderSampled::No => {}
        }
        let cpu_ns = counters
            .as_ref()
            .and_then(|c| Some(c.user_cpu_ns? + c.system_cpu_ns?));
        if opts.only_active && set.samples == 0 {
            // Counted, not written: a continuous window names it in its index, with its CPU
            // time, rather than keep four files of headers for each short process.
            summary.file_sets.push(FileSetSummary {
                pid: *pid,
                instance: *instance,
                comm: comm_bytes.clone(),
                process: p.key,
                images: (first.image, last.image),
                samples: 0,
                cpu_ns,
                files: false,
            });
            continue;
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
        info.kernel.release = machine.release.clone();
        info.kernel.build_id = machine.kernel_build_id.clone();
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
        summary.file_sets.push(FileSetSummary {
            pid: *pid,
            instance: *instance,
            comm: comm_bytes.clone(),
            process: p.key,
            images: (first.image, last.image),
            samples: set.samples,
            cpu_ns,
            files: true,
        });
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
    // The attribution's residue is in the system-wide kernel profile, so it is written with
    // `--async` whatever the mode.
    if agg.system_wide || agg.asynchronous.is_some() {
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
    if let Some(moves) = &agg.asynchronous {
        let mut moves = moves.clone();
        for t in
            (rec.tracepoints.iter()).filter(|t| t.format.name == crate::asynchronous::WINDOW_EVENT)
        {
            let Some(kind) = crate::asynchronous::window_kind(t.filter.as_deref()) else {
                continue;
            };
            for k in moves.kinds.iter_mut().filter(|k| k.kind == kind.as_str()) {
                k.counted = t.counted;
            }
        }
        // Each moved stack with the kernel profiles it left and went to: what a reader needs
        // for the view as recorded.
        let mut kernel_files: HashMap<Place, String> = HashMap::new();
        for ((pid, instance, comm), (pi, set)) in &sets {
            let comm = Comm::new(comm.clone()).map_err(|e| gmon_error("a command name", e))?;
            let name = ProfileName::kernel(*pid, comm).with_instance(*instance);
            for seg in &set.segments {
                kernel_files.insert(Place::Image(*pi, seg.image), name.file_name());
            }
        }
        kernel_files.insert(Place::System, ProfileName::KernelSystem.file_name());
        kernel_files.insert(Place::Other, ProfileName::KernelOther.file_name());
        for (&(kind, from, to, ref frames), &(samples, nanoseconds)) in &agg.moved {
            // A beneficiary always has files: the samples it received.
            let Some(to) = kernel_files.get(&to) else {
                continue;
            };
            moves.stacks.push(MovedStack {
                kind: kind.into(),
                from: kernel_files.get(&from).cloned(),
                to: to.clone(),
                frames: frames.clone(),
                samples,
                nanoseconds,
            });
        }
        let mut text = Vec::new();
        moves
            .write(&mut text)
            .map_err(|e| gmon_error("the async.moves file", e))?;
        out.write(gmon_format::ASYNC_MOVES_FILE, &text)?;
        summary.async_moves = Some(moves);
        summary.async_kernel_block = agg.kernel_block;
    }
    out.write_kallsyms(&symbols_file, ksyms.text().as_bytes())?;
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
        side.add_stack(&[0x10, 0x20, 0x20, 0x30], 1, &mut edges);
        assert_eq!(side.arcs.get(&(0x20, 0x20)), Some(&1));
        assert_eq!(side.arcs.get(&(0x20, 0x10)), Some(&1));
        assert_eq!(side.arcs.get(&(0x30, 0x20)), Some(&1));
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
