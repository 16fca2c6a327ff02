//! Reading untrusted paths and creating output files safely, for tools that run as root.
//!
//! `pkgmon` runs as root and reads paths that a profiled process chose (its executable, its
//! libraries); `pkgprof` reads whatever a measurement directory names. A plain `fs::read` of
//! such a path hangs forever on a FIFO, reads `/dev/zero` until memory runs out, and follows a
//! symbolic link anywhere; a plain `File::create` in a shared directory writes through a link
//! an attacker planted. This crate is the one place where both commands open files:
//!
//! 1. **Read** with [`read`] (or [`Dir::read`] inside an opened directory) and a
//!    [`ReadOptions`]: the file is opened non-blocking, checked with `fstat` on the opened
//!    descriptor, refused unless it is a regular file (the error names what it is: FIFO,
//!    device, socket, directory, a `/proc` file of unknown size), capped by a limit, and
//!    memory-mapped instead of copied when it is large and no other user can truncate it.
//!    The result, [`Contents`], dereferences to `&[u8]`.
//! 2. **Create** through a [`Dir`] opened once ([`Dir::open`], [`Dir::create_dir`]), never
//!    through a path: [`Dir::create`] makes a file under a random temporary name with
//!    `O_CREAT|O_EXCL|O_NOFOLLOW`, and [`NewFile::persist`] syncs it and renames it to its
//!    final name without replacing anything there. [`Dir::sync`] makes the renames durable;
//!    [`Dir::remove_stale_temps`] deletes the temporary files of an earlier run that was
//!    killed (they are never read).
//! 3. Report the [`Error`]: its message names the path and what is wrong with it.
//!
//! ```
//! # fn main() -> Result<(), safe_fs::Error> {
//! # let tmp = std::env::temp_dir().join(format!("safe-fs-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&tmp);
//! let dir = safe_fs::Dir::create_dir(&tmp, 0o700)?;
//! dir.write_new("result.txt", b"42\n", 0o600)?;
//! dir.sync()?;
//! let bytes = safe_fs::read(tmp.join("result.txt"), &safe_fs::ReadOptions::default())?;
//! assert_eq!(&*bytes, b"42\n");
//! // A device is refused without reading it (a FIFO without blocking).
//! let err = safe_fs::read("/dev/null", &safe_fs::ReadOptions::default()).unwrap_err();
//! assert_eq!(err.to_string(), "/dev/null: is a character device, not a regular file");
//! # std::fs::remove_dir_all(&tmp).unwrap();
//! # Ok(())
//! # }
//! ```
//!
//! What it does not do: parse anything, or protect a read from a file that its owner rewrites
//! while it is mapped (only files that no *other* user can write are mapped; see [`Map`]).
//! It is Linux-specific (`openat2`, `renameat2`, `fstatfs`), with fallbacks for older kernels
//! and file systems that lack the first two.

#![deny(missing_docs)]

mod dir;
mod error;
mod read;
mod sys;

pub use dir::{Dir, NewFile, TEMP_PREFIX, replace_file};
pub use error::{Error, ErrorKind, FileKind, Result};
pub use read::{
    Contents, DEFAULT_MAX_BYTES, MAP_THRESHOLD, Map, ReadOptions, has_hole, open, read, read_text,
};
