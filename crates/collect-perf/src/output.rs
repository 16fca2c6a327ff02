//! Writing a measurement's files: into a directory opened once, each file created new (never
//! through a planted link, never replacing one), with private modes, and the manifest last
//! (see `gmon_format::manifest`). The aggregation in `measurement.rs` decides what the
//! files hold; this module only puts them on disk.

use std::path::{Path, PathBuf};

use gmon_format::MeasurementWriter;
use safe_fs::{Dir, ReadOptions};

use crate::error::{Error, Result};

/// A file the measurement wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// Its path.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The measurement directory being written.
///
/// [`Output::begin`] is called before profiling starts: it removes the temporary files of an
/// earlier killed run and writes the placeholder manifest, so that an unwritable directory is
/// found before the command runs, and a directory left by a collector killed at any later
/// moment reads as incomplete. `write_measurement_to` then writes the files and finishes the
/// manifest.
#[derive(Debug)]
pub struct Output {
    writer: MeasurementWriter,
    mode: u32,
    files: Vec<WrittenFile>,
}

impl Output {
    /// Starts a measurement in the opened directory `dir`, whose files get `mode` (default
    /// `0o600`; the kernel-symbol snapshot may get less, see [`kallsyms_mode`]).
    ///
    /// Returns an error if `dir` already holds a manifest (an earlier measurement) or cannot
    /// be written.
    pub fn begin(dir: Dir, mode: u32) -> Result<Output> {
        let writer = MeasurementWriter::begin(dir, mode).map_err(Error::Output)?;
        Ok(Output {
            writer,
            mode,
            files: Vec::new(),
        })
    }

    /// Creates the directory `dir` (0700) if it does not exist, opens it without following a
    /// link, and starts a measurement there with files of mode `0o600`: for tests and tools
    /// that write one measurement into a directory of their own.
    pub fn create(dir: impl AsRef<Path>) -> Result<Output> {
        let dir = dir.as_ref();
        let opened = match Dir::create_dir(dir, 0o700) {
            Ok(d) => d,
            Err(e) if matches!(e.kind(), safe_fs::ErrorKind::Exists) => {
                Dir::open(dir).map_err(|e| Error::Output(gmon_format::Error::from(e)))?
            }
            Err(e) => return Err(Error::Output(e.into())),
        };
        Output::begin(opened, 0o600)
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.writer.dir().path()
    }

    /// Writes the new file `name`.
    pub(crate) fn write(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.write_with_mode(name, bytes, self.mode)
    }

    /// Writes the kernel-symbol snapshot, no more readable than `/proc/kallsyms` is to the
    /// users the mode lets read it.
    pub(crate) fn write_kallsyms(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.write_with_mode(name, bytes, kallsyms_mode(self.mode))
    }

    fn write_with_mode(&mut self, name: &str, bytes: &[u8], mode: u32) -> Result<()> {
        let size = self
            .writer
            .write_with_mode(name, bytes, mode)
            .map_err(Error::Output)?;
        self.files.push(WrittenFile {
            path: self.path().join(name),
            bytes: size,
        });
        Ok(())
    }

    /// Gives up before any file was written (the command could not be started): removes the
    /// placeholder manifest. See [`MeasurementWriter::abandon`].
    pub fn abandon(self) -> Result<()> {
        self.writer.abandon().map_err(Error::Output)
    }

    /// Syncs everything and writes the manifest; returns the files written, manifest last.
    pub(crate) fn finish(self) -> Result<Vec<WrittenFile>> {
        let dir = self.path().to_path_buf();
        let mut files = self.files;
        let manifest = self.writer.finish().map_err(Error::Output)?;
        let mut text = Vec::new();
        manifest.write(&mut text).map_err(Error::Output)?;
        files.push(WrittenFile {
            path: dir.join(gmon_format::MANIFEST_NAME),
            bytes: text.len() as u64,
        });
        Ok(files)
    }
}

/// The mode of the kernel-symbol snapshot for files of `mode`: without the group and other
/// read bits, unless `/proc/kallsyms` shows real addresses to every user (the kernel does when
/// `kernel.kptr_restrict` is 0 and `kernel.perf_event_paranoid` is 1 or lower), so that the
/// snapshot never tells other users the kernel's layout (its KASLR base) when the kernel hides
/// it from them.
pub fn kallsyms_mode(mode: u32) -> u32 {
    let sysctl = |name: &str| {
        safe_fs::read_text(format!("/proc/sys/kernel/{name}"), &ReadOptions::procfs(64))
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
    };
    let public =
        sysctl("kptr_restrict") == Some(0) && sysctl("perf_event_paranoid").is_some_and(|p| p <= 1);
    if public { mode } else { mode & !0o044 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_is_never_more_readable_than_the_files() {
        for mode in [0o600, 0o640, 0o644, 0o400] {
            let k = kallsyms_mode(mode);
            assert_eq!(k & !mode, 0, "{mode:o} -> {k:o}");
            assert_eq!(k & 0o700, mode & 0o700);
        }
    }
}
