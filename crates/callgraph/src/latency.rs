//! Latency and blocking reports of a measurement's latency files (`pkgmon --latency`,
//! `--blocking`): OSprof's per-operation histograms with their peaks, sorted by total latency;
//! DeBox's table of where calls slept and who woke them; and OSprof's automatic comparison of
//! two measurements. Addresses are named as the seamless listing names them.

use std::collections::BTreeMap;
use std::io::{self, Write};

use gmon_format::latency::{LatencyFile, Operation, syscall_name};
use gmon_format::{Measurement, ProcessFiles};
use latency::plot::PlotOptions;
use latency::{
    Histogram, PeakChange, PeakOptions, Resolution, SelectOptions, Selected, peaks, select,
};

use crate::error::{Error, Result};
use crate::labeled::{AddressNames, ProcessSelection, SeamlessOptions};

/// How the reports are drawn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LatencyOptions {
    /// Call sites listed per operation. Default is 5.
    pub top_sites: usize,
    /// Width of the histogram bars. Default is 40.
    pub width: usize,
    /// How peaks are found.
    pub peaks: PeakOptions,
    /// Thresholds of `--latency-diff`.
    pub select: SelectOptions,
    /// How objects are found to name user addresses.
    pub seamless: SeamlessOptions,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            top_sites: 5,
            width: 40,
            peaks: PeakOptions::default(),
            select: SelectOptions::default(),
            seamless: SeamlessOptions::default(),
        }
    }
}

/// One operation of one process, named: system call and call site.
#[derive(Debug, Clone)]
struct Named {
    syscall: String,
    /// The call site from the outermost kept frame in, `main > nap > clock_nanosleep`.
    site: String,
    op: Operation,
}

/// One process's latency file, read and named.
#[derive(Debug)]
struct ProcessLatency {
    label: String,
    comm: String,
    file: LatencyFile,
    ops: Vec<Named>,
    names: AddressNames,
}

fn io_err(e: io::Error) -> Error {
    Error::from(gmon_format::Error::from(e))
}

/// The file sets `selection` picks that have a latency file.
fn selected<'a>(
    measurement: &'a Measurement,
    selection: &ProcessSelection,
) -> Result<Vec<&'a ProcessFiles>> {
    let files = selection.files(measurement)?;
    let with: Vec<&ProcessFiles> = files.into_iter().filter(|f| f.latency.is_some()).collect();
    if with.is_empty() {
        return Err(Error::NoLatency {
            dir: measurement.dir.clone(),
        });
    }
    Ok(with)
}

fn read(
    measurement: &Measurement,
    files: &ProcessFiles,
    opts: &LatencyOptions,
) -> Result<ProcessLatency> {
    let Some(path) = &files.latency else {
        return Err(Error::NoLatency {
            dir: measurement.dir.clone(),
        });
    };
    let data = safe_fs::read(
        path,
        &safe_fs::ReadOptions::untrusted(crate::TEXT_MAX_BYTES)
            .with_max_holes(gmon_format::MEASUREMENT_MAX_HOLES),
    )
    .map_err(gmon_format::Error::from)?;
    let file = LatencyFile::parse(&data).map_err(|e| e.with_path(path))?;
    let mut names = AddressNames::new(measurement, files, &opts.seamless)?;
    let ops = file
        .operations
        .iter()
        .map(|op| Named {
            syscall: syscall_name(&file.arch, op.syscall)
                .map_or_else(|| format!("syscall_{}", op.syscall), str::to_owned),
            site: site_name(&mut names, &op.site),
            op: op.clone(),
        })
        .collect();
    Ok(ProcessLatency {
        label: gmon_format::process_label(files.pid, files.instance),
        comm: files.comm.to_string(),
        file,
        ops,
        names,
    })
}

fn site_name(names: &mut AddressNames, frames: &[u64]) -> String {
    if frames.is_empty() {
        return "[no user stack]".into();
    }
    let mut parts: Vec<String> = frames.iter().map(|&a| names.user(a)).collect();
    parts.dedup();
    parts.reverse();
    parts.join(" > ")
}

fn histogram(file: &LatencyFile, op: &Operation) -> Histogram {
    let r = Resolution::new(file.resolution).unwrap_or(Resolution::ONE);
    let mut h = Histogram::new(r);
    for b in &op.buckets {
        h.add_bucket(b.bucket, b.count, b.total_ns);
    }
    h.set_extremes(op.min_ns, op.max_ns);
    h
}

/// OSprof's checksums and the calls left out, as one paragraph.
fn checks(out: &mut dyn Write, f: &LatencyFile) -> io::Result<()> {
    let mut parts = Vec::new();
    for c in &f.checks {
        let short = c.event.rsplit(':').next().unwrap_or(&c.event);
        parts.push(match c.counted {
            Some(n) if n == c.received => format!("{short} {} = {n} counted", c.received),
            Some(n) if c.unsampled_in_idle() > 0 => format!(
                "{short} {} of {n} counted (the others fired on idle CPUs, which the kernel \
                 does not sample)",
                c.received
            ),
            Some(n) => format!("{short} {} of {n} counted (MISMATCH)", c.received),
            None => format!("{short} {}", c.received),
        });
    }
    writeln!(out, "  records: {}", parts.join(", "))?;
    writeln!(
        out,
        "  lost records: {}; calls left out because records were lost while they ran: {}",
        f.lost, f.dropped
    )?;
    writeln!(
        out,
        "  unpaired: {} entered and never returned (exit, exec, or still running at the end), \
         {} returned without an entry seen (begun before the run, e.g. the exec itself)",
        f.unpaired_enters, f.unpaired_exits
    )
}

fn percent(part: u64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole.max(1) as f64
}

/// Writes `pkgprof --latency`: per process, operations (system calls) sorted by total latency,
/// each with its histogram in bpftrace's style, its peaks (mean latency and share of calls)
/// and its top call sites.
///
/// Returns an error if a selected process does not exist, none has a latency file, a file is
/// damaged, or `out` fails.
pub fn write_latency_report(
    out: &mut dyn Write,
    measurement: &Measurement,
    selection: &ProcessSelection,
    opts: &LatencyOptions,
) -> Result<()> {
    for files in selected(measurement, selection)? {
        let p = read(measurement, files, opts)?;
        latency_process(out, &p, opts).map_err(io_err)?;
    }
    Ok(())
}

fn latency_process(
    out: &mut dyn Write,
    p: &ProcessLatency,
    opts: &LatencyOptions,
) -> io::Result<()> {
    let calls: u64 = p.ops.iter().map(|o| o.op.calls).sum();
    let total: u64 = p.ops.iter().map(|o| o.op.total_ns).sum();
    writeln!(
        out,
        "process {} ({}): {calls} system calls, {} in all; resolution {} bucket{} per power of two",
        p.label,
        p.comm,
        latency::text::duration(total),
        p.file.resolution,
        if p.file.resolution == 1 { "" } else { "s" }
    )?;
    checks(out, &p.file)?;
    // Operations: system calls, their sites merged.
    let mut by_call: BTreeMap<&str, (Histogram, Vec<&Named>)> = BTreeMap::new();
    for n in &p.ops {
        let h = histogram(&p.file, &n.op);
        let e = by_call
            .entry(&n.syscall)
            .or_insert_with(|| (Histogram::new(h.resolution()), Vec::new()));
        e.0.merge(&h);
        e.1.push(n);
    }
    let mut ops: Vec<(&str, Histogram, Vec<&Named>)> =
        by_call.into_iter().map(|(k, (h, v))| (k, h, v)).collect();
    ops.sort_by_key(|(name, h, _)| (std::cmp::Reverse(h.total_ns()), *name));
    for (name, h, sites) in ops {
        writeln!(out)?;
        writeln!(
            out,
            "{name}: {} calls, {} total ({:.1}%), mean {}, min {}, max {}",
            h.count(),
            latency::text::duration(h.total_ns()),
            percent(h.total_ns(), total),
            latency::text::duration(h.mean_ns().unwrap_or(0)),
            latency::text::duration(h.min_ns().unwrap_or(0)),
            latency::text::duration(h.max_ns().unwrap_or(0)),
        )?;
        for line in latency::text::histogram(&h, opts.width).lines() {
            writeln!(out, "  {line}")?;
        }
        for (i, pk) in peaks(&h, &opts.peaks).iter().enumerate() {
            let r = h.resolution();
            writeln!(
                out,
                "  peak {}: [{}, {}) {} calls ({:.1}%), mean {}",
                i + 1,
                latency::text::duration(r.lower_bound(pk.first)),
                latency::text::duration(r.upper_bound(pk.last)),
                pk.count,
                pk.share(&h) * 100.0,
                latency::text::duration(pk.mean_ns()),
            )?;
        }
        let mut per_site: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for n in sites {
            let e = per_site.entry(&n.site).or_default();
            e.0 += n.op.calls;
            e.1 += n.op.total_ns;
        }
        let mut per_site: Vec<_> = per_site.into_iter().collect();
        per_site.sort_by_key(|(s, (_, t))| (std::cmp::Reverse(*t), *s));
        writeln!(out, "  call sites:")?;
        for (site, (n, t)) in per_site.iter().take(opts.top_sites) {
            writeln!(
                out,
                "    {n:>9} calls {:>9}  {site}",
                latency::text::duration(*t)
            )?;
        }
        if per_site.len() > opts.top_sites {
            writeln!(
                out,
                "    ({} more call sites)",
                per_site.len() - opts.top_sites
            )?;
        }
    }
    writeln!(out)
}

/// The first kernel frame of a sleep that is not the scheduler itself: where the call chose to
/// sleep (DeBox's file:line and wait message).
fn sleep_site(names: &mut AddressNames, frames: &[u64]) -> String {
    let scheduler = |n: &str| {
        n == "schedule"
            || n.starts_with("__schedule")
            || n.starts_with("schedule_")
            || n.starts_with("io_schedule")
            || n.starts_with("preempt_schedule")
            || n.starts_with("__traceiter")
            || n.starts_with("__cond_resched")
            || n.starts_with("perf_")
    };
    let all: Vec<String> = frames.iter().map(|&a| names.kernel(a)).collect();
    all.iter()
        .find(|n| !scheduler(n))
        .or(all.last())
        .cloned()
        .unwrap_or_else(|| "[unknown]".into())
}

/// How [`waker_site`] marks a wake-up from an interrupt.
const INTERRUPT: &str = " (interrupt)";

/// What a waker was doing: its first kernel frame outside the wake-up machinery, and whether
/// it ran in an interrupt.
fn waker_site(names: &mut AddressNames, frames: &[u64]) -> String {
    let machinery = |n: &str| {
        n.starts_with("try_to_wake_up")
            || n.starts_with("ttwu")
            || n.starts_with("wake_up")
            || n.starts_with("__wake_up")
            || n.ends_with("wake_function")
            || n.starts_with("__traceiter")
            || n.starts_with("perf_")
            || n == "pollwake"
    };
    let all: Vec<String> = frames.iter().map(|&a| names.kernel(a)).collect();
    let site = all
        .iter()
        .find(|n| !machinery(n))
        .or(all.last())
        .cloned()
        .unwrap_or_else(|| "[unknown]".into());
    let irq = all.iter().any(|n| {
        n.starts_with("asm_sysvec") || n.starts_with("sysvec_") || n.ends_with("_interrupt")
    });
    if irq {
        format!("{site}{INTERRUPT}")
    } else {
        site
    }
}

/// Writes `pkgprof --blocking`: DeBox's table per system call and call site — calls, wall,
/// CPU and off-CPU time, page faults, and every kernel site where the calls slept with how
/// often and how long, and who woke them — busiest first.
///
/// Returns an error if a selected process does not exist, none has a latency file, a file
/// lacks blocking data (recorded without `--blocking`), is damaged, or `out` fails.
pub fn write_blocking_report(
    out: &mut dyn Write,
    measurement: &Measurement,
    selection: &ProcessSelection,
    opts: &LatencyOptions,
) -> Result<()> {
    for files in selected(measurement, selection)? {
        let mut p = read(measurement, files, opts)?;
        if p.ops.iter().any(|n| n.op.blocking.is_none()) {
            return Err(Error::NoBlocking {
                dir: measurement.dir.clone(),
            });
        }
        blocking_process(out, &mut p, opts).map_err(io_err)?;
    }
    Ok(())
}

fn blocking_process(
    out: &mut dyn Write,
    p: &mut ProcessLatency,
    opts: &LatencyOptions,
) -> io::Result<()> {
    writeln!(
        out,
        "process {} ({}): where system calls blocked",
        p.label, p.comm
    )?;
    checks(out, &p.file)?;
    let mut ops = p.ops.clone();
    ops.sort_by_key(|n| {
        (
            std::cmp::Reverse(n.op.total_ns),
            n.syscall.clone(),
            n.site.clone(),
        )
    });
    writeln!(out)?;
    writeln!(
        out,
        "{:>9} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7}  system call, call site",
        "calls", "wall", "cpu", "blocked", "runnable", "faults", "sleeps"
    )?;
    for n in &ops {
        let Some(b) = &n.op.blocking else { continue };
        let d = latency::text::duration;
        let cpu =
            n.op.total_ns
                .saturating_sub(b.blocked_ns)
                .saturating_sub(b.runnable_ns);
        writeln!(
            out,
            "{:>9} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7}  {} from {}",
            n.op.calls,
            d(n.op.total_ns),
            d(cpu),
            d(b.blocked_ns),
            d(b.runnable_ns),
            n.op.faults,
            b.sleeps,
            n.syscall,
            n.site
        )?;
        // Sites and wakers, named and merged by name.
        let mut sites: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for s in &b.sites {
            let e = sites
                .entry(sleep_site(&mut p.names, &s.frames))
                .or_default();
            e.0 += s.count;
            e.1 += s.blocked_ns;
        }
        let mut sites: Vec<_> = sites.into_iter().collect();
        sites.sort_by_key(|(k, (_, t))| (std::cmp::Reverse(*t), k.clone()));
        for (site, (count, t)) in sites.iter().take(opts.top_sites) {
            writeln!(
                out,
                "{:>31} {:>10} {count:>8} x  slept in {site}",
                "",
                d(*t)
            )?;
        }
        // An interrupt's waker pid is whatever task it interrupted: its wake-ups are merged
        // by site alone (None).
        let mut wakers: BTreeMap<(Option<u32>, String), (u64, u64)> = BTreeMap::new();
        for w in &b.wakers {
            let site = if w.unsampled_in_idle() {
                format!("an idle CPU, frames not sampled{INTERRUPT}")
            } else {
                waker_site(&mut p.names, &w.frames)
            };
            let pid = (!site.ends_with(INTERRUPT)).then_some(w.pid);
            let e = wakers.entry((pid, site)).or_default();
            e.0 += w.count;
            e.1 += w.blocked_ns;
        }
        let woken: u64 = wakers.values().map(|v| v.0).sum();
        let mut wakers: Vec<_> = wakers.into_iter().collect();
        wakers.sort_by_key(|(k, (_, t))| (std::cmp::Reverse(*t), k.clone()));
        for ((pid, site), (count, t)) in wakers.iter().take(opts.top_sites) {
            let who = match pid {
                None => String::new(),
                Some(0) => "by pid 0 (idle) ".to_owned(),
                Some(pid) => format!("by pid {pid} "),
            };
            writeln!(
                out,
                "{:>31} {:>10} {count:>8} x  woken {who}in {site}",
                "",
                d(*t)
            )?;
        }
        if b.sleeps > woken {
            writeln!(out, "{:>42} {:>8} x  waker not seen", "", b.sleeps - woken)?;
        }
    }
    writeln!(out)
}

/// The operations of every selected process of a measurement, by system call name, merged.
fn operation_set(
    measurement: &Measurement,
    selection: &ProcessSelection,
    opts: &LatencyOptions,
) -> Result<Vec<(String, Histogram)>> {
    let mut set: BTreeMap<String, Histogram> = BTreeMap::new();
    for files in selected(measurement, selection)? {
        let p = read(measurement, files, opts)?;
        for n in &p.ops {
            let h = histogram(&p.file, &n.op);
            let e = set
                .entry(n.syscall.clone())
                .or_insert_with(|| Histogram::new(h.resolution()));
            if !e.merge(&h) {
                return Err(Error::ResolutionsDiffer {
                    dir: measurement.dir.clone(),
                });
            }
        }
    }
    Ok(set.into_iter().collect())
}

/// Writes `pkgprof --latency-diff A B`: OSprof's three phases over the system calls of two
/// measurements — pairs with nearly equal totals or too small to matter dropped, peaks
/// compared, the rest rated by the Earth Mover's Distance (χ² and KS beside it) — most
/// changed first.
///
/// Returns an error if either has no latency file, their resolutions differ, a file is
/// damaged, or `out` fails.
pub fn write_latency_diff(
    out: &mut dyn Write,
    a: (&Measurement, &ProcessSelection),
    b: (&Measurement, &ProcessSelection),
    opts: &LatencyOptions,
) -> Result<()> {
    let sa = operation_set(a.0, a.1, opts)?;
    let sb = operation_set(b.0, b.1, opts)?;
    if let (Some((_, x)), Some((_, y))) = (sa.first(), sb.first())
        && x.resolution() != y.resolution()
    {
        return Err(Error::ResolutionsDiffer {
            dir: b.0.dir.clone(),
        });
    }
    let chosen = select(&sa, &sb, &opts.select);
    diff_text(out, a.0, b.0, &sa, &sb, &chosen, opts).map_err(io_err)
}

fn diff_text(
    out: &mut dyn Write,
    a: &Measurement,
    b: &Measurement,
    sa: &[(String, Histogram)],
    sb: &[(String, Histogram)],
    chosen: &[Selected<String>],
    opts: &LatencyOptions,
) -> io::Result<()> {
    let d = latency::text::duration;
    writeln!(
        out,
        "latency diff: A = {}, B = {}; {} system calls in A, {} in B, {} changed (OSprof: \
         prefilter by totals, compare peaks, rate by EMD)",
        a.dir.display(),
        b.dir.display(),
        sa.len(),
        sb.len(),
        chosen.len()
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>7} {:>7} {:>8} {:>9} {:>9} {:>10} {:>10}  system call: peaks",
        "EMD", "KS", "chi2", "calls A", "calls B", "total A", "total B"
    )?;
    let bucket = |b: u32| {
        let r = sa
            .first()
            .or(sb.first())
            .map_or(Resolution::ONE, |(_, h)| h.resolution());
        format!("[{}, {})", d(r.lower_bound(b)), d(r.upper_bound(b)))
    };
    for s in chosen {
        let num = |v: Option<f64>, w: usize| {
            v.map_or_else(|| format!("{:>w$}", "-"), |x| format!("{x:>w$.2}"))
        };
        let changes: Vec<String> = s
            .changes
            .iter()
            .map(|c| match *c {
                PeakChange::Added(m) => format!("new peak at {}", bucket(m)),
                PeakChange::Removed(m) => format!("peak at {} gone", bucket(m)),
                PeakChange::Moved { from, to } => {
                    format!("peak moved {} -> {}", bucket(from), bucket(to))
                }
            })
            .collect();
        let what = if s.counts.0 == 0 {
            "only in B".to_owned()
        } else if s.counts.1 == 0 {
            "only in A".to_owned()
        } else if changes.is_empty() {
            "same peaks".to_owned()
        } else {
            changes.join(", ")
        };
        writeln!(
            out,
            "{} {} {} {:>9} {:>9} {:>10} {:>10}  {}: {what}",
            num(s.emd, 7),
            num(s.ks, 7),
            num(s.chi_squared, 8),
            s.counts.0,
            s.counts.1,
            d(s.totals.0),
            d(s.totals.1),
            s.key
        )?;
    }
    if !chosen.is_empty() {
        writeln!(out)?;
    }
    for s in chosen.iter().take(opts.top_sites) {
        for (label, set) in [("A", sa), ("B", sb)] {
            if let Some((_, h)) = set.iter().find(|(k, _)| *k == s.key) {
                writeln!(out, "{} in {label}:", s.key)?;
                for line in latency::text::histogram(h, opts.width).lines() {
                    writeln!(out, "  {line}")?;
                }
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The system call a plot draws: the one named, else the one with the most total latency.
fn plotted<'a>(
    set: &'a [(String, Histogram)],
    syscall: Option<&str>,
    dir: &std::path::Path,
) -> Result<&'a (String, Histogram)> {
    match syscall {
        Some(name) => set
            .iter()
            .find(|(k, _)| k == name)
            .ok_or_else(|| Error::NoSuchSyscall {
                syscall: name.to_owned(),
                dir: dir.to_path_buf(),
            }),
        // The report's first operation: most total latency, ties by name.
        None => set
            .iter()
            .min_by_key(|(_, h)| std::cmp::Reverse(h.total_ns()))
            .ok_or_else(|| Error::NoLatency {
                dir: dir.to_path_buf(),
            }),
    }
}

/// Draws `pkgprof --latency --plot`: the latency profile of one system call (`syscall`, else
/// the one with the most total latency) over the selected processes as an SVG picture, as in
/// OSprof's figures (log2 buckets, log counts, peaks marked); a heat map of its time slices
/// when the files were recorded with `--slice`.
///
/// Returns an error if a selected process does not exist, none has a latency file, none made
/// `syscall`, or a file is damaged.
pub fn latency_plot(
    measurement: &Measurement,
    selection: &ProcessSelection,
    syscall: Option<&str>,
    opts: &LatencyOptions,
) -> Result<String> {
    let set = operation_set(measurement, selection, opts)?;
    let (name, h) = plotted(&set, syscall, &measurement.dir)?;
    let mut plot = PlotOptions::default();
    plot.title = format!(
        "{name}: {} calls, mean {}",
        h.count(),
        latency::text::duration(h.mean_ns().unwrap_or(0))
    );
    let mut slices: BTreeMap<u64, Histogram> = BTreeMap::new();
    let mut slice_ns = None;
    for files in selected(measurement, selection)? {
        let p = read(measurement, files, opts)?;
        let Some((len, _)) = p.file.slices else {
            continue;
        };
        slice_ns = Some(len);
        for n in p.ops.iter().filter(|n| n.syscall == *name) {
            for b in &n.op.buckets {
                slices
                    .entry(b.slice)
                    .or_insert_with(|| Histogram::new(h.resolution()))
                    .add_bucket(b.bucket, b.count, b.total_ns);
            }
        }
    }
    Ok(match (slice_ns, slices.last_key_value()) {
        (Some(len), Some((&last, _))) => {
            // Every slice from the first to the last, empty ones too: time runs evenly.
            let first = slices.first_key_value().map_or(0, |(&k, _)| k);
            let all: Vec<Histogram> = (first..=last)
                .map(|i| {
                    slices
                        .remove(&i)
                        .unwrap_or_else(|| Histogram::new(h.resolution()))
                })
                .collect();
            latency::plot::heatmap_svg(&all, len, &plot)
        }
        _ => latency::plot::profile_svg(h, &plot),
    })
}

/// Draws `pkgprof --latency-diff A B --plot`: one system call's profiles in A (filled) and B
/// (outlined) overlaid, as OSprof's comparison figures. `syscall` names it; without it, the
/// one made in both that the comparison rates as changed most, else the first it selects,
/// else the one with the most total latency in A.
///
/// Returns an error if either has no latency file, their resolutions differ, neither made
/// `syscall`, or a file is damaged.
pub fn latency_diff_plot(
    a: (&Measurement, &ProcessSelection),
    b: (&Measurement, &ProcessSelection),
    syscall: Option<&str>,
    opts: &LatencyOptions,
) -> Result<String> {
    let sa = operation_set(a.0, a.1, opts)?;
    let sb = operation_set(b.0, b.1, opts)?;
    let name = match syscall {
        Some(n) => n.to_owned(),
        None => {
            // Two profiles to overlay: the pair rated most changed, before one-sided ones.
            let chosen = select(&sa, &sb, &opts.select);
            match chosen.iter().find(|s| s.emd.is_some()).or(chosen.first()) {
                Some(s) => s.key.clone(),
                None => plotted(&sa, None, &a.0.dir)?.0.clone(),
            }
        }
    };
    fn find<'s>(set: &'s [(String, Histogram)], name: &str) -> Option<&'s Histogram> {
        set.iter().find(|(k, _)| k == name).map(|x| &x.1)
    }
    let (ha, hb) = match (find(&sa, &name), find(&sb, &name)) {
        (None, None) => {
            return Err(Error::NoSuchSyscall {
                syscall: name,
                dir: a.0.dir.clone(),
            });
        }
        (x, y) => {
            let r = x.or(y).map_or(Resolution::ONE, Histogram::resolution);
            let empty = Histogram::new(r);
            (
                x.cloned().unwrap_or_else(|| empty.clone()),
                y.cloned().unwrap_or(empty),
            )
        }
    };
    if ha.resolution() != hb.resolution() {
        return Err(Error::ResolutionsDiffer {
            dir: b.0.dir.clone(),
        });
    }
    let mut plot = PlotOptions::default();
    plot.title = format!("{name}: A {} calls, B {} calls", ha.count(), hb.count());
    let names = (
        format!("A {}", a.0.dir.display()),
        format!("B {}", b.0.dir.display()),
    );
    Ok(latency::plot::diff_svg(
        &ha,
        &hb,
        (&names.0, &names.1),
        &plot,
    ))
}
