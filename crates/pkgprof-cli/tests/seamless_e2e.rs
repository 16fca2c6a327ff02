//! End to end: pkgmon records a C program that calls read() in a loop, and `pkgprof -b --pid`
//! shows the pkprof paper's Figure 2.2 chain: the C function calling read() is the parent of
//! libc's `read`, which is the parent of the kernel's system-call entry.
//!
//! Needs perf_event_open with kernel sampling (root here, or kernel.perf_event_paranoid <= 1);
//! if it is refused the test fails with pkgmon's message, it never skips.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("seamless-e2e");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The entries of a `-b -q` listing: each function's `[n]` line with its parents' names.
fn parents(listing: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut above = Vec::new();
    for line in listing.lines() {
        if line.starts_with("----") {
            above.clear();
        } else if line.starts_with('[') {
            let name = line
                .split_whitespace()
                .rev()
                .nth(1)
                .unwrap_or("")
                .to_owned();
            out.push((name, std::mem::take(&mut above)));
        } else if let Some(name) = line.split_whitespace().rev().nth(1) {
            above.push(name.to_owned());
        }
    }
    out
}

#[test]
fn the_function_calling_read_is_the_parent_of_libcs_read_and_of_the_syscall_entry() {
    let dir = scratch();
    let exe = dir.join("readloop");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/readloop.c");
    let st = Command::new("cc")
        .args(["-O1", "-fno-omit-frame-pointer", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "cc failed for {}", src.display());
    let m = dir.join("m");
    let rec = Command::new(env!("CARGO_BIN_EXE_pkgmon"))
        .arg("-o")
        .arg(&m)
        .arg("--")
        .arg(&exe)
        .arg("300")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&rec.stderr);
    assert_eq!(rec.status.code(), Some(0), "pkgmon failed: {err}");
    let measurement = gmon_format::scan(&m).unwrap();
    assert_eq!(measurement.processes.len(), 1, "{err}");
    let pid = measurement.processes[0].pid;

    for extra in [&[][..], &["--inclusive=stacks"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
            .args(["-b", "-q", "--pid", &pid.to_string()])
            .args(extra)
            .arg(&m)
            .output()
            .unwrap();
        let listing = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let entries = parents(&listing);
        let parents_of = |name: &str| {
            entries
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, p)| p.clone())
                .unwrap_or_else(|| panic!("no entry for {name} in:\n{listing}"))
        };
        let u = |f: &str| format!("{pid}u:{f}");
        assert!(
            parents_of(&u("read")).contains(&u("read_zeros")),
            "{extra:?}\n{listing}"
        );
        // The kernel entry's name depends on the kernel (entry_SYSCALL_64,
        // entry_SYSCALL_64_after_hwframe, …); its parent is libc's read.
        let entry = entries
            .iter()
            .find(|(n, _)| n.starts_with(&format!("{pid}k:entry_SYSCALL")))
            .unwrap_or_else(|| panic!("no kernel entry in:\n{listing}"));
        assert!(
            entry.1.contains(&u("read")),
            "{extra:?} {entry:?}\n{listing}"
        );
        // And the system-call entry's time is most of read_zeros' time: the loop lives in
        // the kernel.
        let header = listing
            .lines()
            .find(|l| l.contains("kernel entries:"))
            .unwrap();
        assert!(!header.contains(" 0 syscall"), "{header}");
    }
}
