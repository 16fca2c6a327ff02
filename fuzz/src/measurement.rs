//! Fuzz body for `pkgprof --pid`/`--system` on a whole measurement directory built from the
//! bytes: they are cut into files at `0xff 0xfe`, each file a name line then its contents.
//! Scanning, checking the manifest and building the seamless profile must end in a result or
//! an error, never a panic, and nothing is read outside the directory.

use std::path::Path;

use callgraph::{ProcessSelection, Seamless, SeamlessOptions};

/// Writes the files `data` describes into `dir` (which must exist and be empty), then reads the
/// directory as a measurement.
pub fn run_in(dir: &Path, data: &[u8]) {
    let files = data.split(|&b| b == 0xfe).take(32).map(|file| {
        match file.iter().position(|&b| b == b'\n') {
            Some(n) => (&file[..n], &file[n + 1..]),
            None => (file, &[][..]),
        }
    });
    run_files(dir, files, data.first().is_some_and(|b| b & 1 == 1));
}

/// Writes `files` (name, contents) into `dir`, then reads it as a measurement; `stacks` asks for
/// exact inclusive times from the stacks files.
pub fn run_files<'a>(dir: &Path, files: impl Iterator<Item = (&'a [u8], &'a [u8])>, stacks: bool) {
    for (name, contents) in files {
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        // One plain file name per entry: no directories, no way out.
        if name.is_empty() || name.contains(['/', '\0']) || name == "." || name == ".." {
            continue;
        }
        let _ = safe_fs::replace_file(dir.join(name), contents);
    }
    let Ok(measurement) = gmon_format::scan(dir) else {
        return;
    };
    let _ = measurement.verify();
    let mut options = SeamlessOptions::default();
    // Only what the directory holds: no search directories.
    options.stacks = stacks;
    let _ = Seamless::build(&measurement, &ProcessSelection::System, &options);
    for p in measurement.processes.iter().take(4) {
        let _ = Seamless::build(
            &measurement,
            &ProcessSelection::Pids(vec![(p.pid, p.instance)]),
            &options,
        );
    }
}

/// Builds the directory under the system's temporary directory, then removes it.
pub fn run(data: &[u8]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUN: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "pkgprof-fuzz-measurement-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::create_dir_all(&dir).is_ok() {
        run_in(&dir, data);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
