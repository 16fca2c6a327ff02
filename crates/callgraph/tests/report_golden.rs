//! Golden tests of the full report: `gprof -b` on every shared fixture program
//! (`fixtures/programs/out/<name>/gprof-b.txt`, recorded with GNU gprof 2.40).

#![allow(clippy::unwrap_used)]

use std::path::Path;

mod common;

use callgraph::{Analysis, ReportOptions, write_report};

/// Our `gprof -b IMAGE GMON...` output.
fn report(image: &Path, gmons: &[&Path], options: &ReportOptions) -> Vec<u8> {
    let (table, sum) = common::load(image, gmons, common::Flags::default())
        .unwrap_or_else(|e| panic!("{}: {e}", image.display()));
    // Debugging information gives static functions a `(file)` in the index.
    let data = std::fs::read(image).unwrap();
    let lines = callgraph::SourceLines::parse(image, &data).unwrap();
    let sources = callgraph::symbol_sources(&table, lines.as_ref());
    let names = callgraph::SourceNames::new(&table, &sources, false, false, false);
    let mut analysis = Analysis::new(table, &sum);
    analysis.set_sources(names);
    let mut out = Vec::new();
    write_report(&mut out, &analysis, options).unwrap_or_else(|e| panic!("{e}"));
    out
}

#[test]
fn shared_fixtures_full_report_matches_gprof() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/programs/out");
    let mut dirs: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("gprof-b.txt").is_file())
        .collect();
    dirs.sort();
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let prog = name.split('-').next().unwrap();
        let mut options = ReportOptions::default();
        options.brief = true;
        let ours = report(&dir.join(prog), &[&dir.join("gmon.out")], &options);
        let expected = std::fs::read(dir.join("gprof-b.txt")).unwrap();
        if ours != expected {
            failures.push(format!(
                "{name}: differs\n--- gprof\n{}\n--- ours\n{}",
                String::from_utf8_lossy(&expected),
                String::from_utf8_lossy(&ours)
            ));
        }
    }
    assert!(dirs.len() >= 12, "expected the 12 shared fixtures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
