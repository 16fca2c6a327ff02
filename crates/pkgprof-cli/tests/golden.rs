//! Golden tests: every directory under fixtures/cases/ holds a `cmd` (the exact arguments),
//! the expected `stdout`, and optionally `stderr` (absent means empty) and `status` (absent
//! means 0). The command runs in the case directory. Each case is one test named after its
//! directory, so `cargo test --test golden annotate-J` runs one case and `--list` lists them.
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
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use libtest_mimic::{Arguments, Failed, Trial};

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

fn run_case(dir: &Path) -> Result<Outcome, Failed> {
    let cmd = fs::read_to_string(dir.join("cmd")).map_err(|e| format!("cmd: {e}"))?;
    let mut words = cmd.split_whitespace();
    let exe = match words.next() {
        Some("pkgprof") => env!("CARGO_BIN_EXE_pkgprof"),
        other => return Err(format!("cmd names an unknown program: {other:?}").into()),
    };
    let expected = expected_files(dir)?;
    for name in &expected {
        let _ = fs::remove_file(dir.join(name));
    }
    // A case's output depends on its own files only: no user's perf build-id cache
    // ($HOME/.debug, searched for objects not at their recorded paths).
    let out = Command::new(exe)
        .args(words)
        .current_dir(dir)
        .env("HOME", "/nonexistent")
        .output()
        .map_err(|e| format!("cannot run pkgprof: {e}"))?;
    let files = expected
        .into_iter()
        .map(|name| {
            let written = fs::read(dir.join(&name)).ok();
            let _ = fs::remove_file(dir.join(&name));
            (name, written)
        })
        .collect();
    Ok(Outcome {
        stdout: out.stdout,
        stderr: out.stderr,
        status: out.status.code().unwrap_or(-1),
        files,
    })
}

/// The names of the files a case expects to be written: `NAME` for every `expected-NAME`.
fn expected_files(dir: &Path) -> Result<Vec<String>, Failed> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| format!("case directory: {e}"))? {
        let name = entry
            .map_err(|e| format!("case directory: {e}"))?
            .file_name();
        if let Some(name) = name.to_string_lossy().strip_prefix("expected-") {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

fn read_or(path: &Path, default: &[u8]) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|_| default.to_vec())
}

/// Rewrites a case's expectations from what the command printed (our own cases only).
fn bless(dir: &Path, got: &Outcome) -> io::Result<()> {
    fs::write(dir.join("stdout"), &got.stdout)?;
    for name in ["stderr", "status"] {
        match fs::remove_file(dir.join(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    if !got.stderr.is_empty() {
        fs::write(dir.join("stderr"), &got.stderr)?;
    }
    if got.status != 0 {
        fs::write(dir.join("status"), format!("{}\n", got.status))?;
    }
    for (name, written) in &got.files {
        if let Some(data) = written {
            fs::write(dir.join(format!("expected-{name}")), data)?;
        }
    }
    Ok(())
}

/// Runs one case and compares (or, blessing, rewrites) its expectations.
fn check_case(dir: &Path, bless_ours: bool) -> Result<(), Failed> {
    let from_gprof = dir.join("gprof-version").exists();
    let got = run_case(dir)?;
    if bless_ours && !from_gprof {
        return bless(dir, &got).map_err(|e| format!("cannot bless: {e}").into());
    }
    let want_stdout = read_or(&dir.join("stdout"), b"");
    let want_status: i32 = String::from_utf8_lossy(&read_or(&dir.join("status"), b"0"))
        .trim()
        .parse()
        .map_err(|e| format!("status file: {e}"))?;
    let mut problems = Vec::new();
    if got.stdout != want_stdout {
        problems.push(format!(
            "stdout differs:\n--- expected\n{}\n--- got\n{}",
            String::from_utf8_lossy(&want_stdout),
            String::from_utf8_lossy(&got.stdout)
        ));
    }
    for (name, written) in &got.files {
        let want = fs::read(dir.join(format!("expected-{name}")))
            .map_err(|e| format!("expected-{name}: {e}"))?;
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
    if problems.is_empty() {
        return Ok(());
    }
    let how = if from_gprof {
        "the expectation is GNU gprof's output, recorded by fixtures/record-gprof.sh"
    } else {
        "PKGPROF_BLESS=1 rewrites the expectations of this case if the new output is right"
    };
    Err(format!("{}\n\n({how})", problems.join("\n")).into())
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let bless_ours = std::env::var_os("PKGPROF_BLESS").is_some_and(|v| v == "1");
    let mut dirs: Vec<PathBuf> = match fs::read_dir(cases_dir()) {
        Ok(entries) => entries
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.join("cmd").exists())
            .collect(),
        Err(e) => {
            eprintln!("fixtures/cases: {e}");
            return ExitCode::FAILURE;
        }
    };
    dirs.sort();
    if dirs.is_empty() {
        eprintln!("no golden cases found under fixtures/cases");
        return ExitCode::FAILURE;
    }
    let trials = dirs
        .into_iter()
        .map(|dir| {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Trial::test(name, move || check_case(&dir, bless_ours))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit_code()
}
