//! Golden tests of the call graph and the full report on hand-picked random images:
//! `tests/data/graph-cases/<name>/` holds the image (and its source `img.s`), gmon files,
//! `cmd` with gprof's arguments and `stdout` with what GNU gprof 2.40 printed (recorded by
//! `tests/data/make.sh`; see `tests/data/VERSIONS`).

use std::path::{Path, PathBuf};

mod common;

use callgraph::{Analysis, ReportOptions, write_report};

/// Our output for gprof arguments `cmd` (`-b`, `-q`, `-p`, `-z`, `-a`, `-D`, `-T`, then files).
fn run(dir: &Path, cmd: &str) -> Vec<u8> {
    let mut flags = common::Flags::default();
    let mut report = ReportOptions::default();
    let mut files: Vec<PathBuf> = Vec::new();
    for arg in cmd.split_whitespace() {
        match arg {
            "-b" => report.brief = true,
            "-q" => report.call_graph = Some(true),
            "-p" => report.flat_profile = Some(true),
            "-z" => report.display_unused = true,
            "-T" => report.traditional = true,
            "-a" => flags.no_static = true,
            "-D" => flags.ignore_non_functions = true,
            other if other.starts_with('-') => panic!("{}: unsupported {other}", dir.display()),
            file => files.push(dir.join(file)),
        }
    }
    let (image, gmons) = files.split_first().expect("cmd names no image");
    let gmons: Vec<&Path> = gmons.iter().map(PathBuf::as_path).collect();
    let (table, sum) =
        common::load(image, &gmons, flags).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let analysis = Analysis::new(table, &sum);
    let mut out = Vec::new();
    write_report(&mut out, &analysis, &report).unwrap_or_else(|e| panic!("{e}"));
    out
}

#[test]
fn graph_cases_match_gprof_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graph-cases");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let mut failures = Vec::new();
    for dir in &dirs {
        let cmd = std::fs::read_to_string(dir.join("cmd")).unwrap();
        let expected = std::fs::read(dir.join("stdout")).unwrap();
        let ours = run(dir, &cmd);
        if ours != expected {
            failures.push(format!(
                "{}: differs from gprof (regenerate expectations with tests/data/make.sh)\n--- gprof\n{}\n--- ours\n{}",
                dir.display(),
                String::from_utf8_lossy(&expected),
                String::from_utf8_lossy(&ours)
            ));
        }
    }
    assert!(
        dirs.len() >= 6,
        "expected the graph cases, found {}",
        dirs.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
