//! `pkgprof --pid PID[,PID...] [DIR]` and `--system`: the seamless report of a measurement
//! directory written by pkgmon (pkprof paper, Figure 2.2).
//!
//! The processes' user and kernel profiles are symbolized and merged into one labelled profile
//! model by [`callgraph::Seamless`], whose gprof view ([`callgraph::Seamless::gprof`]: symbol
//! table, histogram, arcs, stacks) is printed by the ordinary gprof listings,
//! so every gprof option that applies to a report (`-b`, `-p`, `-q`, `-P`, `-Q`, `-z`, `-T`,
//! `--no-demangle`) works in the same layout. A header with each process's kernel counters
//! comes first (see [`callgraph::write_process_header`]).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use callgraph::{
    Analysis, GprofView, ProcessLabels, ProcessSelection, Seamless, SeamlessOptions, apply_stacks,
    relabel_symspecs, write_async_matrix, write_process_header, write_report, write_symbol_image,
};

use crate::options::Options;

/// Runs the seamless report for `o`, writing it to `out`; warnings go to standard error.
///
/// Returns an error if the options conflict, the directory cannot be scanned, a process asked
/// for is absent, or a profile is damaged.
pub fn run(o: &Options, report: callgraph::ReportOptions, out: &mut dyn Write) -> Result<()> {
    let asked = exact_inclusive(o)?;
    let seamless = build(o, asked || o.value.is_some())?;
    let (view, exact) = match listed_value(&seamless, o.value.as_deref())? {
        Some((value, unit)) => (callgraph::gprof_view_of(&seamless.model, value, unit), true),
        None => (seamless.gprof(), asked),
    };
    if let Some(path) = &o.merge_out {
        write_merged(Path::new(path), &view)?;
    }
    write_process_header(
        &mut *out,
        &seamless.processes,
        seamless.async_moves.as_ref(),
    )?;
    if let (true, Some(_)) = (as_recorded(o)?, &seamless.async_moves) {
        writeln!(
            out,
            "Asynchronous kernel work is listed in the process it ran in (--async=victim), \
             under PIDk:[async KIND]; the frames it ran inside were not kept.\n"
        )?;
    }
    if let (true, Some(moves)) = (o.system, &seamless.async_moves) {
        write_async_matrix(&mut *out, moves)?;
    }
    if o.line {
        let mut instructions = crate::instructions::Instructions::default();
        instructions.add(seamless.instructions);
        let what = match o.system {
            true => "the system".to_string(),
            false => (o.pids.iter())
                .map(|&(pid, n)| gmon_format::process_label(pid, n))
                .collect::<Vec<_>>()
                .join(", "),
        };
        return instructions.write(&what, o.print_path, out);
    }
    write_listing(o, report, view, exact, out)
}

/// The value `--value=NAME` asks the listing to count instead of the samples, with its unit:
/// `off-cpu`, the nanoseconds the system calls of a `pkgmon --blocking` run slept (listed
/// in seconds, inclusive times exact from its stacks). None for the samples (no `--value`,
/// `samples`).
///
/// Returns an error for a value the measurement does not have, or one that is not a time.
fn listed_value(
    seamless: &Seamless,
    name: Option<&str>,
) -> Result<Option<(profile_model::ValueTypeId, gmon_format::HistogramUnit)>> {
    let samples = profile_model::ValueKind::SAMPLES.name;
    let Some(name) = name.filter(|&n| n != samples && n != callgraph::HISTOGRAM.name) else {
        return Ok(None);
    };
    let model = &seamless.model;
    let Some((value, kind)) = model.value_types().find(|(_, k)| k.name == name) else {
        let known: Vec<_> = (model.value_types().map(|(_, k)| k.name))
            .filter(|&n| n != callgraph::HISTOGRAM.name)
            .collect();
        bail!(
            "--value={name}: the measurement has no such value (it has: {}); off-cpu comes \
             from a run with pkgmon --blocking",
            known.join(", ")
        );
    };
    match kind.unit {
        profile_model::Unit::Nanoseconds => Ok(Some((value, callgraph::NANOSECONDS))),
        unit => bail!(
            "--value={name}: the listing counts time, and {name} is in {}; export it instead \
             (--export=folded|svg|pprof --value={name})",
            unit.as_str()
        ),
    }
}

/// Whether `--async` asks for the view as recorded (`victim`) rather than the one charged to
/// the beneficiary (`beneficiary`, the default).
///
/// Returns an error for another view.
fn as_recorded(o: &Options) -> Result<bool> {
    Ok(match o.async_view.as_deref() {
        None | Some("beneficiary") => false,
        Some("victim") => true,
        Some(view) => bail!("--async: unknown view `{view}' (expected victim or beneficiary)"),
    })
}

/// Whether `--inclusive` asks for exact inclusive times from the sampled stacks.
///
/// Returns an error for a method other than `gprof` and `stacks`.
pub(crate) fn exact_inclusive(o: &Options) -> Result<bool> {
    Ok(match o.inclusive.as_deref() {
        None | Some("gprof") => false,
        Some("stacks") => true,
        Some(kind) => bail!("--inclusive: unknown method `{kind}' (expected gprof or stacks)"),
    })
}

/// The gprof listings of a seamless view (one measurement's, or a sum of windows'), with the
/// symbol specifications of `o` relabelled and, when `exact`, inclusive times from the stacks.
pub(crate) fn write_listing(
    o: &Options,
    report: callgraph::ReportOptions,
    view: GprofView,
    exact: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let mut specs = crate::listing::symspecs(o);
    relabel_symspecs(&mut specs);
    let mut analysis = Analysis::with_symspecs(view.table, &view.sum, &specs);
    if !analysis.has_histogram() && !analysis.has_arcs {
        // gprof's "gmon.out file is missing histogram" would send the user looking for a
        // damaged file; the usual cause is a process shorter than one sample period. The
        // header above is the listing then, so this is a note, not a failure.
        eprintln!(
            "pkgprof: note: nothing to list: the selected processes have no samples (their \
             headers above give their CPU time; a process gets its first sample after a whole \
             sample period of CPU time, 1 ms at pkgmon's default -F 1000); record a longer \
             run, or sample faster (pkgmon -F 10000)"
        );
        return Ok(());
    }
    if exact {
        apply_stacks(&mut analysis, &view.stacks);
    }
    let mut report = report;
    report.after_other_output = true;
    report.sampled_arcs = true;
    // Names are labelled (and demangled) already; the listings print them as they are.
    report.no_demangle = true;
    write_report(out, &analysis, &report)?;
    Ok(())
}

/// The seamless profile the command line asks for, its stacks read when `stacks` is set;
/// warnings printed.
///
/// Returns an error if the options conflict, the directory cannot be scanned, a process asked
/// for is absent, or a profile is damaged.
pub(crate) fn build(o: &Options, stacks: bool) -> Result<Seamless> {
    if let Some(bad) = &o.bad_pid {
        bail!(
            "--pid: `{bad}' is not a process id (PID, or PID_N for a reused pid's N-th later process)"
        );
    }
    if o.threads {
        bail!(
            "--threads: per-thread listings (4242u/4243:name) need samples that carry their \
             thread, but pkgmon merges the threads of a process when it writes the \
             measurement: its user, kernel and stacks files keep no thread ids. Report the \
             process as a whole (--pid), or run the threads as separate processes"
        );
    }
    if o.user_only && o.kernel_only {
        bail!("--user and --kernel exclude each other (give neither for both sides)");
    }
    if o.seamless && o.system {
        bail!("--pid and --system exclude each other");
    }
    if o.operands.len() > 1 {
        bail!(
            "--pid and --system take one measurement directory, not {} operands",
            o.operands.len()
        );
    }
    let dir = o.operands.first().map_or_else(default_dir, PathBuf::from);
    build_at(o, &dir, &o.pids, stacks, ProcessLabels::Pid)
}

/// The seamless profile of processes `pids` (or of the whole system with `--system`) of the
/// measurement `dir` — a directory, or a perf.data file converted into one — with the other
/// options of `o`, its functions labelled in the style `labels`; warnings printed.
///
/// Returns an error if the directory cannot be scanned or the file converted, a process asked
/// for is absent, or a profile is damaged.
pub(crate) fn build_at(
    o: &Options,
    dir: &Path,
    pids: &[(u32, u32)],
    stacks: bool,
    labels: ProcessLabels,
) -> Result<Seamless> {
    #[cfg(target_os = "linux")]
    let converted = crate::perf_data::convert_if_perf_data(
        dir,
        o.kallsyms.as_deref().map(Path::new),
        "pkgprof",
    )?;
    #[cfg(target_os = "linux")]
    let dir = converted.as_ref().map_or(dir, |c| c.path());
    let measurement = gmon_format::scan(dir).context("cannot read the measurement directory")?;
    check_complete(&measurement, o.force)?;
    refuse_unknown_pids(&measurement, o.system, pids)?;
    let selection = if o.system {
        ProcessSelection::System
    } else {
        ProcessSelection::Pids(pids.to_vec())
    };
    let mut options = SeamlessOptions::default();
    options.user = !o.kernel_only;
    options.kernel = !o.user_only;
    options.object_path = o.object_path.iter().map(PathBuf::from).collect();
    // perf's build-id cache last, when there is one, as perf report does: objects of an
    // imported perf.data that are gone from their paths, found by build-id (checked when read).
    options
        .object_path
        .extend(gmon_format::perf_cache::default_dir().filter(|d| d.is_dir()));
    options.keep_unused = o.display_unused;
    options.demangle = o.demangle && !o.traditional;
    // `-l` lists the instructions the samples were taken at: their stacks' innermost frames.
    options.stacks = stacks || o.line;
    options.instructions = o.line;
    options.labels = labels;
    options.async_as_recorded = as_recorded(o)?;
    let seamless = Seamless::build(&measurement, &selection, &options).map_err(|e| match e {
        callgraph::Error::NoStacks { .. } if o.line => anyhow::Error::new(e).context(
            "-l lists the instructions the samples were taken at, which only the \
             sampled-stacks files hold (pkgmon writes one per process; record again)",
        ),
        e => e.into(),
    })?;
    for w in seamless
        .warnings
        .iter()
        .chain(&callgraph::stripped_warnings(&seamless.stripped))
    {
        eprintln!("pkgprof: warning: {w}");
    }
    Ok(seamless)
}

/// Refuses a directory pkgmon did not write, and pids it holds no files of, saying which it
/// holds: a wrong directory or pid is the usual mistake, and the fix is in the listing.
pub(crate) fn refuse_unknown_pids(
    measurement: &gmon_format::Measurement,
    system: bool,
    pids: &[(u32, u32)],
) -> Result<()> {
    let dir = measurement.dir.display();
    if measurement.processes.is_empty()
        && measurement.kernel_system.is_none()
        && measurement.kernel_other.is_none()
    {
        bail!(
            "{dir} is not a measurement directory: it holds no pkgmon files \
             (gmon.out.<pid>u.<comm> and the like); `pkgmon -- COMMAND` records one into \
             pkgmon.data/, which `pkgprof --pid PID` reads by default"
        );
    }
    if system {
        return Ok(());
    }
    let Some(&(pid, instance)) = pids
        .iter()
        .find(|&&(pid, n)| measurement.instance(pid, n).next().is_none())
    else {
        return Ok(());
    };
    let missing = gmon_format::process_label(pid, instance);
    let mut held: Vec<String> = Vec::new();
    for p in &measurement.processes {
        let entry = format!(
            "{} ({})",
            gmon_format::process_label(p.pid, p.instance),
            p.comm
        );
        if !held.contains(&entry) {
            held.push(entry);
        }
    }
    const SHOWN: usize = 8;
    let mut list = held
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if held.len() > SHOWN {
        list.push_str(&format!(" and {} more", held.len() - SHOWN));
    }
    if held.is_empty() {
        list = "no process, only kernel-wide profiles (report them with --system)".into();
    }
    bail!("no profile of process {missing} in {dir}; it holds {list}")
}

/// The measurement directory when none is given: pkgmon's default, `pkgmon.data`, if it is
/// there, else the current directory (where pkgmon wrote before it had a default directory).
pub(crate) fn default_dir() -> PathBuf {
    let default = Path::new("pkgmon.data");
    if default.is_dir() {
        default.to_path_buf()
    } else {
        PathBuf::from(".")
    }
}

/// Refuses a measurement that its manifest says is incomplete or changed, naming every
/// problem; with `force`, says so loudly and goes on. A directory without a manifest was
/// written before manifests existed and is read as it is.
pub(crate) fn check_complete(measurement: &gmon_format::Measurement, force: bool) -> Result<()> {
    let gmon_format::Verification::Incomplete(problems) = measurement
        .verify()
        .context("cannot check the measurement directory")?
    else {
        return Ok(());
    };
    let list: String = problems.iter().map(|p| format!("\n  {p}")).collect();
    let dir = measurement.dir.display();
    if !force {
        bail!(
            "{dir} is not a complete measurement:{list}\npkgmon was stopped before it \
             finished (killed, disk full, directory removed), or files were changed since; \
             `--force` reports what is there"
        );
    }
    eprintln!(
        "pkgprof: warning: {dir} is NOT a complete measurement; reporting what is there \
         because of --force:{list}"
    );
    Ok(())
}

/// Writes the merged profile to `path` and its symbol table to `path.elf`, so that
/// `gprof path.elf path` reads them.
fn write_merged(path: &Path, view: &GprofView) -> Result<()> {
    safe_fs::replace_file(path, &view.write_gmon()?)?;
    let mut image_path = OsString::from(path.as_os_str());
    image_path.push(".elf");
    let image_path = PathBuf::from(image_path);
    let mut image = Vec::new();
    write_symbol_image(&mut image, &view.table)?;
    safe_fs::replace_file(&image_path, &image)?;
    Ok(())
}
