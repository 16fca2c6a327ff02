//! `pkgmon --import perf.data [-o DIR]`: a perf.data file converted into a measurement
//! directory, prepared as a recording's would be, so archived perf runs become reproducible
//! pkgprof measurements.

use std::path::Path;

use anyhow::Context;
use collect_perf::Output;

use super::{Args, dir_mode, output};

/// Converts `perf_data` into `args.dir`; returns pkgmon's exit status.
///
/// Returns an error if the directory cannot be prepared, or the file read or converted.
pub(super) fn run(perf_data: &Path, args: &Args) -> anyhow::Result<u8> {
    // Refused before the directory is prepared, so a wrong file leaves no placeholder.
    crate::perf_data::check(perf_data)?;
    let dir = output::prepare(&args.dir, dir_mode(args.mode), args.trust_output)?;
    let out = Output::begin(dir, args.mode)
        .with_context(|| format!("cannot write into {}", args.dir.display()))?;
    let imported = crate::perf_data::import(perf_data, args.kallsyms.as_deref(), out, "pkgmon")?;
    let s = &imported.written;
    eprintln!(
        "pkgmon: imported {}: {} process{}, {} samples, {} lost, {} truncated stacks",
        perf_data.display(),
        s.processes,
        if s.processes == 1 { "" } else { "es" },
        s.samples,
        imported.lost,
        s.truncated_stacks
    );
    if args.verbose {
        for f in &s.files {
            eprintln!("pkgmon: wrote {} ({} bytes)", f.path.display(), f.bytes);
        }
    }
    let measurement = gmon_format::scan(&args.dir)
        .with_context(|| format!("cannot read back {}", args.dir.display()))?;
    let mut seen = Vec::new();
    for p in &measurement.processes {
        let label = gmon_format::process_label(p.pid, p.instance);
        if !seen.contains(&label) {
            eprintln!(
                "pkgmon: report with: pkgprof -b --pid {label} {}   ({})",
                args.dir.display(),
                p.comm
            );
            seen.push(label);
        }
    }
    Ok(0)
}
