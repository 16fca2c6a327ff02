//! The perf.data fuzz body, run over files perf itself records (file and pipe mode) and over
//! cut and damaged copies of them: every one converts or fails with a byte offset.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../../fuzz/src/perf_data.rs"]
mod perf_data_target;

/// A scratch directory removed when the test passes (kept, and named, when it fails).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `perf record` of a short shell loop, in file mode (`-o FILE`) or pipe mode (`-o -`).
fn record(dir: &Path, pipe: bool) -> Vec<u8> {
    let file = dir.join(if pipe { "pipe.data" } else { "file.data" });
    let mut cmd = Command::new("perf");
    cmd.args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o"]);
    if pipe {
        cmd.arg("-");
    } else {
        cmd.arg(&file);
    }
    cmd.args([
        "--",
        "sh",
        "-c",
        "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
    ]);
    let out = cmd
        .output()
        .expect("perf is needed to record a perf.data file");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if pipe {
        out.stdout
    } else {
        std::fs::read(&file).unwrap()
    }
}

#[test]
fn perf_records_and_their_damaged_copies_convert_or_fail_at_a_byte() {
    let dir = std::env::temp_dir().join(format!("perf-import-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scratch = Scratch(dir);
    for pipe in [false, true] {
        let data = record(&scratch.0, pipe);
        // `PKGPROF_FUZZ_SEEDS=DIR` saves the inputs as seeds for `cargo fuzz run perf_data DIR`.
        if let Some(seeds) = std::env::var_os("PKGPROF_FUZZ_SEEDS") {
            let name = if pipe { "pipe.data" } else { "file.data" };
            std::fs::write(Path::new(&seeds).join(name), &data).unwrap();
        }
        let (samples, damaged) = perf_import::fuzzing::convert(&data).unwrap();
        assert_eq!(damaged, 0);
        assert!(samples > 0, "no samples in a {} byte recording", data.len());
        perf_data_target::run(&data);
        let step = (data.len() / 60).max(1);
        for cut in (0..data.len()).step_by(step) {
            perf_data_target::run(&data[..cut]);
        }
        for i in (0..data.len()).step_by(step + 7) {
            let mut d = data.clone();
            d[i] ^= 0xa5;
            perf_data_target::run(&d);
        }
        // A cut copy's error names the file and where the damage was found.
        let err = perf_import::fuzzing::convert(&data[..data.len() / 2])
            .err()
            .map(|e| e.to_string());
        if let Some(e) = err {
            assert!(e.contains("fuzz.data") && e.contains("byte"), "{e}");
        }
    }
}

/// Inputs the fuzzer found (fixtures/perf-data): each once panicked the reader.
#[test]
fn what_the_fuzzer_found_fails_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/perf-data");
    // An MMAP2 record whose build-id claims 128 bytes (linux-perf-event-reader asserts 20):
    // left out and counted, the rest of the file read.
    let data = std::fs::read(dir.join("mmap2-build-id-too-long.data")).unwrap();
    perf_data_target::run(&data);
    let (_, damaged) = perf_import::fuzzing::convert(&data).unwrap();
    assert_eq!(damaged, 1);
}
