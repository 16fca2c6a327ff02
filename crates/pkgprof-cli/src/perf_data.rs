//! perf.data files where a measurement directory is expected: `pkgprof --pid N perf.data`
//! (and `--system`, `--export`, `--diff`) converts the file into a private temporary
//! measurement directory with perf-import and reads that; `pkgmon --import perf.data -o DIR`
//! keeps the converted measurement.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use collect_perf::Output;
use perf_import::{ImportOptions, Imported, import_file, is_perf_data};
use safe_fs::ReadOptions;

/// A measurement directory converted from a perf.data file, removed when dropped.
#[derive(Debug)]
pub(crate) struct Converted {
    path: PathBuf,
}

impl Converted {
    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Converted {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Whether `path` is a regular file that starts like perf.data.
fn looks_like_perf_data(path: &Path) -> bool {
    path.is_file() && check(path).is_ok()
}

/// Refuses a file that is not perf.data, saying what it should be.
///
/// Returns an error naming the file if it cannot be opened as a regular file or does not start
/// with perf.data's magic.
pub(crate) fn check(path: &Path) -> Result<()> {
    let (file, _) = safe_fs::open(path, &ReadOptions::default().with_max_bytes(u64::MAX))?;
    let mut magic = [0u8; 8];
    if file.read_exact_at(&mut magic, 0).is_err() || !is_perf_data(&magic) {
        anyhow::bail!(
            "{} is not a perf.data file (it does not start with PERFILE2): give what `perf \
             record -g` wrote",
            path.display()
        );
    }
    Ok(())
}

/// The measurement in a new private temporary directory when `path` is a perf.data file;
/// `None` for anything else (a directory is read as it is). Notes on the conversion go to
/// standard error, prefixed with `program`.
///
/// Returns an error naming the file if it cannot be converted.
pub(crate) fn convert_if_perf_data(
    path: &Path,
    kallsyms: Option<&Path>,
    program: &str,
) -> Result<Option<Converted>> {
    if !looks_like_perf_data(path) {
        return Ok(None);
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir_path =
        std::env::temp_dir().join(format!("pkgprof-perf-{}-{stamp}", std::process::id()));
    let dir = safe_fs::Dir::create_dir(&dir_path, 0o700)
        .with_context(|| format!("cannot convert {}", path.display()))?;
    let converted = Converted { path: dir_path };
    let out =
        Output::begin(dir, 0o600).with_context(|| format!("cannot convert {}", path.display()))?;
    import(path, kallsyms, out, program)?;
    Ok(Some(converted))
}

/// Imports the perf.data file at `path` into `out`, telling standard error what the user
/// should know.
///
/// Returns an error naming the file if it cannot be read or the measurement written.
pub(crate) fn import(
    path: &Path,
    kallsyms: Option<&Path>,
    out: Output,
    program: &str,
) -> Result<Imported> {
    let mut options = ImportOptions::default();
    options.kallsyms = kallsyms.map(Path::to_path_buf);
    // perf-import's errors name the file they are about (perf.data, kallsyms or output).
    let imported = import_file(path, &options, out).context("cannot import")?;
    for note in &imported.notes {
        eprintln!("{program}: note: {note}");
    }
    for w in &imported.written.warnings {
        eprintln!("{program}: warning: {w}");
    }
    Ok(imported)
}
