//! Differential test against GNU gprof: random images, profiles and options (the generator in
//! tests/common/diff.rs), our report compared with gprof's byte for byte.
//!
//! It is seeded and bounded by time, not by a case count, so it stays short in
//! `cargo test --workspace` and can run for hours on demand:
//!
//! * `PKGPROF_DIFF_SECONDS` — time budget (default 20), split between the flat-profile, full
//!   report and symspec modes;
//! * `PKGPROF_DIFF_SEED` — seed (default 1); the same seed replays the same cases;
//! * `PKGPROF_NO_GPROF=1` — where gprof or gcc is missing, pass with a loud notice instead of
//!   failing. CI has both, so there a missing tool is an error.
//!
//! A differing case stays on disk (gprof.txt, ours.txt, cmd) and the failure message says how
//! to replay it.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::diff::{self, Mode};

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

/// Whether `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn random_cases_match_gprof() {
    let missing: Vec<&str> = ["gprof", "gcc"].into_iter().filter(|p| !runs(p)).collect();
    if !missing.is_empty() {
        let what = missing.join(" and ");
        if std::env::var_os("PKGPROF_NO_GPROF").is_some_and(|v| v == "1") {
            println!(
                "\n*** differential test NOT RUN: {what} not found on PATH \
                 (PKGPROF_NO_GPROF=1 allows this) ***\n"
            );
            eprintln!("differential test not run: {what} not found");
            return;
        }
        panic!(
            "the differential test needs {what} on PATH (GNU gprof 2.40 and gcc); install them, \
             or set PKGPROF_NO_GPROF=1 to skip this test on a machine without them"
        );
    }
    let seconds = env_number("PKGPROF_DIFF_SECONDS", 20);
    let seed = env_number("PKGPROF_DIFF_SEED", 1);
    let dir = std::env::temp_dir().join(format!("pkgprof-differential-{}", std::process::id()));
    let modes = [
        (Mode::Flat, "flat"),
        (Mode::Report, "report"),
        (Mode::Symspecs, "symspecs"),
    ];
    let share = Duration::from_secs(seconds) / modes.len() as u32;
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    let mut total = 0;
    for (mode, name) in modes {
        let mode_dir = dir.join(name);
        let deadline = Instant::now() + share;
        let summary = diff::run(u64::MAX, seed, mode, &mode_dir, deadline, false)
            .unwrap_or_else(|e| panic!("cannot set up a case: {e}"));
        total += summary.run;
        lines.push(format!(
            "{name}: {}/{} identical, {} refused by both",
            summary.same, summary.run, summary.gprof_failed
        ));
        for case in &summary.differ {
            failures.push(format!(
                "{name} case {case}: see {}/case-{case}/{{cmd,gprof.txt,ours.txt}}; replay with \
                 PKGPROF_DIFF=1 PKGPROF_DIFF_KEEP=1 cargo run -p callgraph --example flat_diff \
                 -- {} {seed} 600 {name}",
                mode_dir.display(),
                case + 1
            ));
        }
    }
    println!(
        "differential test, seed {seed}, {seconds} s: {total} cases ({})",
        lines.join("; ")
    );
    assert!(total > 0, "no case ran within {seconds} s");
    assert!(
        failures.is_empty(),
        "{} cases differ from gprof:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
