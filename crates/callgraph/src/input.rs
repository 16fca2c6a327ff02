//! Reading pkgprof's inputs: every file goes through the bounded reader of `safe_fs` (special
//! files refused by name without blocking, sizes capped, large files mapped), with a limit that
//! fits what the file can hold. The limits are here, in one place.

use std::path::Path;

use safe_fs::{Contents, Map, ReadOptions};

use crate::error::Error;

/// Images, objects and their debug files: large programs' debug files reach a few GiB.
pub const IMAGE_MAX_BYTES: u64 = 16 << 30;

/// gmon and sampled-stacks files: mapped, so the limit only stops absurd files.
pub const PROFILE_MAX_BYTES: u64 = 16 << 30;

/// Measurement-info files and kernel-symbol snapshots (a few MiB in practice).
pub const TEXT_MAX_BYTES: u64 = 256 << 20;

/// Reads the input file `path` of at most `limit` bytes. Large files are memory-mapped: pkgprof
/// runs with the rights of its user, so a file truncated under it costs only that run.
///
/// Returns the reader's error (naming `path`) if the file cannot be read, is not a regular
/// file, or is larger than `limit`.
pub fn read_input(path: &Path, limit: u64) -> Result<Contents, safe_fs::Error> {
    let opts = ReadOptions::default()
        .with_max_bytes(limit)
        .with_map(Map::Large);
    safe_fs::read(path, &opts)
}

/// Reads a file at a path that a profiled process could have planted, such as an object path
/// recorded in an info file, as [`read_input`] does but without following a symbolic link in
/// its last component: the kernel records the real path of a mapped file, never a link, so a
/// link there was put in its place.
pub fn read_recorded(path: &Path, limit: u64) -> Result<Contents, safe_fs::Error> {
    safe_fs::read(path, &ReadOptions::untrusted(limit).with_map(Map::Large))
}

/// Reads an image (the profiled program or a mapped object), as [`crate::SymbolTable::read`]
/// does.
///
/// Returns [`Error::ReadImage`] if a system call fails, [`Error::Refused`] if the file is not a
/// regular file or is larger than [`IMAGE_MAX_BYTES`].
pub fn read_image(path: &Path) -> Result<Contents, Error> {
    read_input(path, IMAGE_MAX_BYTES).map_err(|e| {
        error(e, |source| Error::ReadImage {
            path: path.to_owned(),
            source,
        })
    })
}

/// An error of [`read_input`] as this crate's: a failed system call keeps its io error in `io`'s
/// variant (`Error::ReadImage` or `Error::ReadFile`); a refusal is [`Error::Refused`].
pub(crate) fn error(e: safe_fs::Error, io: impl FnOnce(std::io::Error) -> Error) -> Error {
    let path = e.path().to_owned();
    match e.into_kind() {
        safe_fs::ErrorKind::Io { source, .. } => io(source),
        kind => Error::Refused(safe_fs::Error::new(path, kind)),
    }
}
