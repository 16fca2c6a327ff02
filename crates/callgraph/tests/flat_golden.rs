//! Golden tests: our flat profile against GNU gprof's recorded `-b -p` output.
//!
//! * `tests/data/cases/<name>/`: `cmd` holds gprof's arguments (run in that directory) and
//!   `stdout` what GNU gprof 2.40 printed; see `tests/data/make.sh` and `tests/data/VERSIONS`.
//! * `tests/data/fixtures-flat/<name>.stdout`: `gprof -b -p` on the shared programs in
//!   `fixtures/programs/out/<name>/`.
//!
//! The expectations are gprof's output, so there is no bless mode: regenerate them with
//! `tests/data/make.sh`, which runs the real gprof.

mod common;

use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Runs our flat profile for gprof arguments `cmd` in directory `dir`.
fn run_cmd(dir: &Path, cmd: &str) -> (Vec<u8>, PathBuf, Vec<PathBuf>) {
    let mut flags = common::Flags::default();
    let mut files = Vec::new();
    for arg in cmd.split_whitespace() {
        match arg {
            "-b" | "-p" => {}
            "-z" => flags.display_unused = true,
            "-a" => flags.no_static = true,
            "-D" => flags.ignore_non_functions = true,
            other if other.starts_with('-') => {
                panic!("{}: unsupported option {other}", dir.display())
            }
            file => files.push(dir.join(file)),
        }
    }
    let (image, gmons) = files.split_first().expect("cmd names no image");
    let gmon_refs: Vec<&Path> = gmons.iter().map(PathBuf::as_path).collect();
    let out = common::flat_output(image, &gmon_refs, flags).unwrap_or_else(|e| panic!("{e}"));
    (out, image.clone(), gmons.to_vec())
}

fn check(name: &str, ours: &[u8], expected: &[u8]) -> Result<(), String> {
    if ours == expected {
        return Ok(());
    }
    Err(format!(
        "{name}: output differs from gprof's\n--- gprof\n{}\n--- ours\n{}",
        String::from_utf8_lossy(expected),
        String::from_utf8_lossy(ours)
    ))
}

#[test]
fn own_cases_match_gprof_byte_for_byte() {
    let cases = data_dir().join("cases");
    let mut failures = Vec::new();
    let mut n = 0;
    let mut dirs: Vec<_> = std::fs::read_dir(&cases)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let cmd = std::fs::read_to_string(dir.join("cmd")).unwrap();
        let expected = std::fs::read(dir.join("stdout")).unwrap();
        let (ours, _, _) = run_cmd(&dir, &cmd);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if let Err(e) = check(&name, &ours, &expected) {
            failures.push(e);
        }
        n += 1;
    }
    assert!(
        n >= 6,
        "expected the cases of tests/data/make.sh, found {n}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn shared_fixtures_match_gprof() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/programs/out");
    let mut expected: Vec<_> = std::fs::read_dir(data_dir().join("fixtures-flat"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    expected.sort();
    let mut exact = 0;
    let mut failures = Vec::new();
    for path in expected {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let prog = name.rsplit_once('-').unwrap().0;
        let dir = fixtures.join(&name);
        assert!(dir.is_dir(), "{}: fixture missing", dir.display());
        let (ours, _, _) = run_cmd(&dir, &format!("{prog} gmon.out"));
        let gprof = std::fs::read(&path).unwrap();
        exact += 1;
        if let Err(e) = check(&name, &ours, &gprof) {
            failures.push(e);
        }
    }
    assert!(exact >= 12, "expected the 12 shared fixtures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
