//! Checks `demangle::demangle` against GNU's spelling on the committed sample.
//!
//! `tests/data/sample.tsv` holds `mangled<TAB>expected` lines, the expected text
//! being `c++filt -i` (binutils 2.40) output, which is what GNU gprof 2.40 prints; see
//! `tests/data/README.md` and `make.sh` there to regenerate it.

use std::fmt::Write as _;

#[path = "../../../fuzz/src/demangle.rs"]
mod fuzz_demangle;

#[test]
fn sample_matches_gnu() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sample.tsv");
    let sample = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let known = known_differences();
    let mut total = 0;
    let mut report = String::new();
    let mut failures = 0;
    for line in sample.lines() {
        let Some((mangled, expected)) = line.split_once('\t') else {
            panic!("{path}: malformed line {line:?}");
        };
        total += 1;
        let got = demangle::demangle(mangled);
        if got != expected && !known.contains(&mangled) {
            failures += 1;
            let _ = writeln!(report, "{mangled}\n  gnu:  {expected}\n  ours: {got}");
        }
    }
    assert!(total > 1000, "{path}: only {total} names");
    assert!(
        failures == 0,
        "{failures} of {total} names differ from GNU:\n{report}"
    );
}

/// Runs the fuzz body over every prefix of every 20th sample name (truncated manglings
/// reach the error paths of every production) and over the whole names with odd tails.
#[test]
fn truncated_and_garbled_names_do_not_panic() {
    let sample = include_str!("data/sample.tsv");
    for (i, line) in sample.lines().enumerate() {
        let mangled = line.split('\t').next().unwrap();
        fuzz_demangle::run(mangled.as_bytes());
        fuzz_demangle::run(format!("{mangled}@@V1").as_bytes());
        fuzz_demangle::run(format!("{mangled}E_E").as_bytes());
        if i % 20 == 0 {
            for end in 1..mangled.len() {
                fuzz_demangle::run(&mangled.as_bytes()[..end]);
            }
        }
    }
}

/// Names of the sample on which we are known to differ from GNU (bugs of the underlying
/// `cpp_demangle` crate that the rewrites cannot repair).  Keep this list shrinking.
fn known_differences() -> Vec<&'static str> {
    include_str!("data/known-differences.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// Measures the whole corpus made by `make.sh OUTDIR` (not committed: tens of thousands of
/// names).  Run with `PKGPROF_DEMANGLE_CORPUS=OUTDIR cargo test -p demangle --test corpus
/// -- --ignored --nocapture`; it prints the exact-match rate and fails below 99.99 %.
#[test]
#[ignore = "needs the corpus made by tests/data/make.sh"]
fn full_corpus_matches_gnu() {
    let Some(dir) = std::env::var_os("PKGPROF_DEMANGLE_CORPUS") else {
        panic!("set PKGPROF_DEMANGLE_CORPUS to the OUTDIR of tests/data/make.sh");
    };
    let dir = std::path::PathBuf::from(dir);
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let mut corpus = read("corpus.txt");
    let mut oracle = read("oracle.txt");
    if dir.join("rust.txt").exists() {
        corpus.push_str(&read("rust.txt"));
        oracle.push_str(&read("rust-oracle.txt"));
    }
    let mut total = 0usize;
    let mut differ = 0usize;
    for (mangled, expected) in corpus.lines().zip(oracle.lines()) {
        total += 1;
        if demangle::demangle(mangled) != expected {
            differ += 1;
            println!(
                "{mangled}\n  gnu:  {expected}\n  ours: {}",
                demangle::demangle(mangled)
            );
        }
    }
    let rate = 100.0 * (total - differ) as f64 / total as f64;
    println!(
        "{} of {total} names identical to GNU ({rate:.3} %)",
        total - differ
    );
    assert!(
        rate >= 99.99,
        "only {rate:.3} % of {total} names identical to GNU"
    );
}
