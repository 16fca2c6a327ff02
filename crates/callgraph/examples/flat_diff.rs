//! Differential test against GNU gprof on random images, profiles and options; the generator
//! is `tests/common/diff.rs` (see its header for what it draws). `cargo test` runs a short,
//! time-bounded version of it (`tests/differential.rs`); this example runs long sessions.
//!
//! Run: `PKGPROF_DIFF=1 cargo run -p callgraph --example flat_diff -- [CASES] [SEED] [SECONDS]
//! [flat|report|symspecs]` (defaults 300 cases, seed 1, 600 s, flat). Needs `gprof` and `gcc`
//! (with `-m32` for 32-bit cases) on PATH. Failing cases are kept under the printed directory;
//! `PKGPROF_DIFF_KEEP=1` keeps all of them.

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::diff::{self, Mode};

fn main() -> ExitCode {
    if std::env::var_os("PKGPROF_DIFF").is_none() {
        eprintln!("set PKGPROF_DIFF=1 to run the differential test (needs gprof and gcc)");
        return ExitCode::SUCCESS;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cases: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(300);
    let seed: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let seconds: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(600);
    let mode = match args.get(3).map(String::as_str) {
        None | Some("flat") => Mode::Flat,
        Some("report") => Mode::Report,
        Some("symspecs") => Mode::Symspecs,
        Some(other) => {
            eprintln!("unknown mode {other}: expected flat, report or symspecs");
            return ExitCode::FAILURE;
        }
    };
    let dir = std::env::temp_dir().join(format!("pkgprof-flat-diff-{}", std::process::id()));
    // PKGPROF_DIFF_KEEP=1 keeps every case, e.g. to pick golden cases from.
    let keep = std::env::var_os("PKGPROF_DIFF_KEEP").is_some();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let summary = match diff::run(cases, seed, mode, &dir, deadline, keep) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if summary.timed_out {
        eprintln!("time limit reached");
    }
    println!(
        "flat_diff {mode:?} seed {seed}: {}/{} identical ({} differ, {} refused by gprof and by us)",
        summary.same,
        summary.run,
        summary.differ.len(),
        summary.gprof_failed
    );
    if !summary.differ.is_empty() {
        println!(
            "differing cases kept in {}: {:?}",
            dir.display(),
            summary.differ
        );
        return ExitCode::FAILURE;
    }
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    ExitCode::SUCCESS
}
