//! `pkgprof --latency`, `--blocking` and `--latency-diff A B`: the reports of the latency
//! files `pkgmon --latency` / `--blocking` write (see [`callgraph::write_latency_report`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use callgraph::{LatencyOptions, ProcessSelection};

use crate::options::Options;
use crate::seamless::{check_complete, default_dir, refuse_unknown_pids};

fn measurement(dir: PathBuf, o: &Options) -> Result<gmon_format::Measurement> {
    let m = gmon_format::scan(&dir).context("cannot read the measurement directory")?;
    check_complete(&m, o.force)?;
    refuse_unknown_pids(&m, o.system, &o.pids)?;
    Ok(m)
}

/// Runs the latency report `o` asks for, writing it to `out`.
///
/// Returns an error if the options conflict, a directory cannot be read or is incomplete, a
/// process asked for is absent, or a latency file is missing or damaged.
pub fn run(o: &Options, out: &mut dyn Write) -> Result<()> {
    if let Some(bad) = &o.bad_pid {
        bail!("--pid: `{bad}' is not a process id");
    }
    let modes = [o.latency, o.blocking, o.latency_diff];
    if modes.iter().filter(|&&m| m).count() > 1 {
        bail!("--latency, --blocking and --latency-diff exclude each other");
    }
    if o.system {
        bail!(
            "--system is for the seamless listing; the latency reports take every process by default"
        );
    }
    if (o.plot.is_some() || o.operation.is_some()) && o.blocking {
        bail!("--plot and --operation draw --latency or --latency-diff, not --blocking");
    }
    if o.operation.is_some() && o.plot.is_none() {
        bail!("--operation names the system call --plot draws: give --plot=FILE too");
    }
    let mut opts = LatencyOptions::default();
    opts.seamless.object_path = o.object_path.iter().map(PathBuf::from).collect();
    opts.seamless.demangle = o.demangle;
    let selection = if o.pids.is_empty() {
        ProcessSelection::System
    } else {
        ProcessSelection::Pids(o.pids.clone())
    };
    if o.latency_diff {
        let [a, b] = o.operands.as_slice() else {
            bail!(
                "--latency-diff takes two measurement directories, A and B, not {}",
                o.operands.len()
            );
        };
        let (a, b) = (
            measurement(PathBuf::from(a), o)?,
            measurement(PathBuf::from(b), o)?,
        );
        if !o.pids.is_empty() {
            bail!(
                "--latency-diff compares every process of two measurements (their pids differ); \
                 drop --pid"
            );
        }
        let all = ProcessSelection::System;
        if let Some(file) = &o.plot {
            let svg = callgraph::latency_diff_plot(
                (&a, &all),
                (&b, &all),
                o.operation.as_deref(),
                &opts,
            )?;
            return write_plot(Path::new(file), &svg);
        }
        callgraph::write_latency_diff(out, (&a, &all), (&b, &all), &opts)?;
        return Ok(());
    }
    if o.operands.len() > 1 {
        bail!(
            "--latency and --blocking take one measurement directory, not {}",
            o.operands.len()
        );
    }
    let dir = o.operands.first().map_or_else(default_dir, PathBuf::from);
    let m = measurement(dir, o)?;
    if let Some(file) = &o.plot {
        let svg = callgraph::latency_plot(&m, &selection, o.operation.as_deref(), &opts)?;
        return write_plot(Path::new(file), &svg);
    }
    if o.blocking {
        callgraph::write_blocking_report(out, &m, &selection, &opts)?;
    } else {
        callgraph::write_latency_report(out, &m, &selection, &opts)?;
    }
    Ok(())
}

/// Writes a plot as SVG, or as PNG when `path` ends in `.png`; a new file renamed over any old
/// one (a link planted at `path` is replaced, not followed).
fn write_plot(path: &Path, svg: &str) -> Result<()> {
    let png = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let bytes = if png {
        latency::plot::png(svg).with_context(|| format!("cannot draw {}", path.display()))?
    } else {
        svg.as_bytes().to_vec()
    };
    safe_fs::replace_file(path, &bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
