//! Golden tests: every directory under fixtures/cases/ holds a `cmd` (the exact arguments),
//! the expected `stdout`, and optionally `stderr` (absent means empty) and `status` (absent
//! means 0). The command runs in the case directory.
//!
//! Cases with a `gprof-version` file expect GNU gprof's own output, recorded by
//! fixtures/record-gprof.sh; there stdout and status must match, and stderr is compared only
//! when the case has a hand-written `stderr` (our warnings where gprof says nothing); gprof's
//! own is kept as `gprof.stderr` for reference. All other cases are our own output: run with
//! PKGPROF_BLESS=1 to rewrite their expectations.
//!
//! A case with `expected-NAME` files must write each of them, byte for byte, as `NAME`
//! (`gmon.sum` for `-s`, `FILE-ann` for `-y`); the written files are removed afterwards.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cases")
}

struct Outcome {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: i32,
    /// The files the command wrote that the case expects: (name, contents if written).
    files: Vec<(String, Option<Vec<u8>>)>,
}

fn run_case(dir: &Path) -> Outcome {
    let cmd = fs::read_to_string(dir.join("cmd")).expect("cmd file");
    let mut words = cmd.split_whitespace();
    let program = words.next().expect("cmd names a program");
    let exe = match program {
        "pkgprof" => env!("CARGO_BIN_EXE_pkgprof"),
        other => panic!("{}: unknown program {other}", dir.display()),
    };
    let expected = expected_files(dir);
    for name in &expected {
        let _ = fs::remove_file(dir.join(name));
    }
    let out = Command::new(exe)
        .args(words)
        .current_dir(dir)
        .output()
        .expect("run pkgprof");
    let files = expected
        .into_iter()
        .map(|name| {
            let written = fs::read(dir.join(&name)).ok();
            let _ = fs::remove_file(dir.join(&name));
            (name, written)
        })
        .collect();
    Outcome {
        stdout: out.stdout,
        stderr: out.stderr,
        status: out.status.code().unwrap_or(-1),
        files,
    }
}

/// The names of the files a case expects to be written: `NAME` for every `expected-NAME`.
fn expected_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("case directory")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_prefix("expected-").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

fn read_or(path: &Path, default: &[u8]) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|_| default.to_vec())
}

#[test]
fn golden_cases() {
    let bless = std::env::var_os("PKGPROF_BLESS").is_some_and(|v| v == "1");
    let mut dirs: Vec<PathBuf> = fs::read_dir(cases_dir())
        .expect("fixtures/cases exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.join("cmd").exists())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no golden cases found");
    let mut failed = Vec::new();
    for dir in &dirs {
        let name = dir
            .file_name()
            .expect("case name")
            .to_string_lossy()
            .into_owned();
        let from_gprof = dir.join("gprof-version").exists();
        let got = run_case(dir);
        if bless && !from_gprof {
            fs::write(dir.join("stdout"), &got.stdout).expect("write stdout");
            let _ = fs::remove_file(dir.join("stderr"));
            let _ = fs::remove_file(dir.join("status"));
            if !got.stderr.is_empty() {
                fs::write(dir.join("stderr"), &got.stderr).expect("write stderr");
            }
            if got.status != 0 {
                fs::write(dir.join("status"), format!("{}\n", got.status)).expect("write status");
            }
            continue;
        }
        let want_stdout = read_or(&dir.join("stdout"), b"");
        let want_status: i32 = String::from_utf8_lossy(&read_or(&dir.join("status"), b"0"))
            .trim()
            .parse()
            .expect("status holds a number");
        let mut problems = Vec::new();
        if got.stdout != want_stdout {
            problems.push(format!(
                "stdout differs:\n--- expected\n{}\n--- got\n{}",
                String::from_utf8_lossy(&want_stdout),
                String::from_utf8_lossy(&got.stdout)
            ));
        }
        for (name, written) in &got.files {
            let want = fs::read(dir.join(format!("expected-{name}"))).expect("expected file");
            match written {
                None => problems.push(format!("{name} was not written")),
                Some(data) if *data != want => problems.push(format!(
                    "{name} differs from expected-{name} ({} bytes written, {} expected; \
                     first difference at byte {})",
                    data.len(),
                    want.len(),
                    data.iter()
                        .zip(&want)
                        .position(|(a, b)| a != b)
                        .unwrap_or(data.len().min(want.len()))
                )),
                Some(_) => {}
            }
        }
        if got.status != want_status {
            problems.push(format!(
                "exit status {} instead of {want_status}",
                got.status
            ));
        }
        if !from_gprof || dir.join("stderr").exists() {
            let want_stderr = read_or(&dir.join("stderr"), b"");
            if got.stderr != want_stderr {
                problems.push(format!(
                    "stderr differs:\n--- expected\n{}\n--- got\n{}",
                    String::from_utf8_lossy(&want_stderr),
                    String::from_utf8_lossy(&got.stderr)
                ));
            }
        }
        if !problems.is_empty() {
            failed.push(format!("case {name}:\n{}", problems.join("\n")));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} golden cases failed (PKGPROF_BLESS=1 rewrites the expectations of our own \
         cases; gprof's are recorded by fixtures/record-gprof.sh):\n\n{}",
        failed.len(),
        dirs.len(),
        failed.join("\n\n")
    );
}
