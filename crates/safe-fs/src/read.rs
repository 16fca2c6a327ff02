//! Bounded, typed reads: open without blocking, check what was opened, cap, map or copy.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::error::{Error, ErrorKind, FileKind, Result};
use crate::sys;

/// The limit of [`ReadOptions::max_bytes`] by default: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Files at least this large are memory-mapped when [`ReadOptions::map`] allows it: 1 MiB.
pub const MAP_THRESHOLD: u64 = 1 << 20;

/// Whether a large file may be memory-mapped instead of copied.
///
/// A mapped file that someone truncates while it is read kills the reader with `SIGBUS`, so
/// mapping is only safe when the file's writers are trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Map {
    /// Always copy (up to the limit).
    Never,
    /// Map files of [`MAP_THRESHOLD`] bytes or more.
    Large,
    /// Map files of [`MAP_THRESHOLD`] bytes or more when no other user can write them: owned
    /// by root or by the reader's effective user, and not writable by group or others.
    /// Others are copied.
    LargePrivate,
}

/// How to read a file. `ReadOptions::default()` suits a user-given input of a command run by
/// that user.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Refuse files larger than this. Default is [`DEFAULT_MAX_BYTES`].
    pub max_bytes: u64,
    /// Follow symbolic links. When false, a symbolic link anywhere in the path is refused
    /// (with `openat2`; on kernels before 5.6, only in the last component). Default is true.
    pub follow_symlinks: bool,
    /// Read `/proc`, `/sys`, debugfs and tracefs files, whose size reads as 0, up to
    /// `max_bytes` (a longer one is refused). Default is false: such files are refused.
    pub proc_text: bool,
    /// When to memory-map instead of copying. Default is [`Map::LargePrivate`].
    pub map: Map,
    /// Refuse a sparse file with more than this many bytes of holes (ranges its size claims
    /// but the disk does not store; they read as zeros), which cost whoever made them nothing
    /// and a reader as much time and memory as data. For files written without holes (every
    /// file pkgmon writes). Default is `u64::MAX`: holes are not checked.
    pub max_holes: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_bytes: DEFAULT_MAX_BYTES,
            follow_symlinks: true,
            proc_text: false,
            map: Map::LargePrivate,
            max_holes: u64::MAX,
        }
    }
}

impl ReadOptions {
    /// Options for a path that someone else may have planted or swapped (a profiled process's
    /// executable, read by root): no symbolic links, at most `max_bytes`, mapped only when no
    /// other user can write the file.
    pub fn untrusted(max_bytes: u64) -> Self {
        ReadOptions {
            max_bytes,
            follow_symlinks: false,
            ..ReadOptions::default()
        }
    }

    /// Options for a `/proc` or `/sys` text file of at most `max_bytes`.
    pub fn procfs(max_bytes: u64) -> Self {
        ReadOptions {
            max_bytes,
            proc_text: true,
            map: Map::Never,
            ..ReadOptions::default()
        }
    }

    /// The same with another mapping rule.
    pub fn with_map(mut self, map: Map) -> Self {
        self.map = map;
        self
    }

    /// The same with another limit.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The same with another limit on holes ([`ReadOptions::max_holes`]).
    pub fn with_max_holes(mut self, max_holes: u64) -> Self {
        self.max_holes = max_holes;
        self
    }
}

/// A file's bytes, copied or memory-mapped; dereferences to `&[u8]`.
#[derive(Debug)]
pub struct Contents(Inner);

#[derive(Debug)]
enum Inner {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Contents {
    /// Whether the bytes are memory-mapped rather than copied.
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Inner::Mapped(_))
    }

    /// The bytes as an owned vector (a copy, if they were mapped).
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Inner::Owned(v) => v,
            Inner::Mapped(m) => m.to_vec(),
        }
    }
}

impl Contents {
    /// Maps a file opened with [`open`] read-only, whatever its size, when no other user can
    /// write it (the rule of [`Map::LargePrivate`]) and it still has the `size` that [`open`]
    /// checked; None otherwise (the caller then reads the parts it needs).
    ///
    /// For readers that touch a small part of a large file (an unwinder's tables): only the
    /// pages read become resident, and they are the page cache's, shared with every process
    /// that maps the file.
    pub fn map_private(file: &File, size: u64) -> Option<Contents> {
        let st = sys::fstat(file.as_fd()).ok()?;
        if !is_private(&st) || st.st_size.max(0) as u64 != size || size == 0 {
            return None;
        }
        // Safety: only files that no other user can write are mapped; a truncation by their
        // owner while mapped would raise SIGBUS, the documented limit of this crate.
        let m = unsafe { memmap2::Mmap::map(file) }.ok()?;
        (m.len() as u64 == size).then_some(Contents(Inner::Mapped(m)))
    }
}

impl Deref for Contents {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Inner::Owned(v) => v,
            Inner::Mapped(m) => m,
        }
    }
}

impl AsRef<[u8]> for Contents {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// Reads a regular file, as [the crate docs](crate) describe.
///
/// Returns an error naming the path if it cannot be opened or read, is not a regular file
/// ([`ErrorKind::NotRegular`]: FIFO, device, socket, directory), is a symbolic link where
/// `opts` refuses them ([`ErrorKind::Symlink`]), is a `/proc`-style file where `opts` does not
/// allow them ([`ErrorKind::PseudoFile`]), or is larger than `opts.max_bytes`
/// ([`ErrorKind::TooLarge`]). Opening never blocks (`O_NONBLOCK`), so a FIFO is refused at once.
pub fn read(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Contents> {
    let path = path.as_ref();
    read_at(libc::AT_FDCWD, path, path, opts, 0)
}

/// Opens a regular file for reading parts of it (an ELF reader that fetches only the
/// sections it needs), with the checks of [`read`]: the same errors, except that a `/proc`-style
/// file is always refused (its size is unknown). The size checked against
/// `opts.max_bytes` is returned with the file.
pub fn open(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<(File, u64)> {
    let path = path.as_ref();
    open_at(libc::AT_FDCWD, path, path, opts, 0)
}

/// Whether the bytes `range` of `file` (opened with [`open`]) hold a hole: a range the file
/// system does not store, read as zeros. For a reader about to copy part of a file another
/// user wrote (a section its headers claim): a hole there cost that user nothing, its copy
/// costs the reader as much as data. Always false on a file system that does not report
/// holes.
pub fn has_hole(file: &File, range: std::ops::Range<u64>) -> bool {
    !range.is_empty() && sys::has_hole(file.as_fd(), range.start, range.end)
}

/// [`open`] of `rel` relative to the directory `dir` (or `AT_FDCWD`), with extra `RESOLVE_*`
/// bits; `shown` is the path used in errors.
pub(crate) fn open_at(
    dir: RawFd,
    rel: &Path,
    shown: &Path,
    opts: &ReadOptions,
    resolve: u64,
) -> Result<(File, u64)> {
    let path = shown;
    let fd = open_fd(dir, rel, shown, opts, resolve)?;
    let st = check_regular(&fd, path)?;
    let size = st.st_size.max(0) as u64;
    if size == 0 && sys::is_pseudo_fs(fd.as_fd()) {
        return Err(Error::new(path, ErrorKind::PseudoFile));
    }
    if size > opts.max_bytes {
        return Err(Error::new(
            path,
            ErrorKind::TooLarge {
                size,
                limit: opts.max_bytes,
            },
        ));
    }
    check_holes(&fd, &st, path, opts)?;
    Ok((File::from(fd), size))
}

/// Reads a regular file of UTF-8 text, as [`read`] does.
///
/// Returns the errors of [`read`], and [`ErrorKind::NotUtf8`] if the bytes are not UTF-8.
pub fn read_text(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<String> {
    let path = path.as_ref();
    let bytes = read(path, opts)?.into_vec();
    String::from_utf8(bytes).map_err(|e| {
        Error::new(
            path,
            ErrorKind::NotUtf8 {
                offset: e.utf8_error().valid_up_to() as u64,
            },
        )
    })
}

/// Reads `rel` relative to the directory `dir` (or `AT_FDCWD`), with extra `RESOLVE_*` bits;
/// `shown` is the path used in errors.
pub(crate) fn read_at(
    dir: RawFd,
    rel: &Path,
    shown: &Path,
    opts: &ReadOptions,
    resolve: u64,
) -> Result<Contents> {
    let fd = open_fd(dir, rel, shown, opts, resolve)?;
    read_fd(fd, shown, opts)
}

/// Opens without blocking, with the symbolic-link rules of `opts` and `resolve`.
fn open_fd(
    dir: RawFd,
    rel: &Path,
    shown: &Path,
    opts: &ReadOptions,
    resolve: u64,
) -> Result<OwnedFd> {
    let c = CString::new(rel.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            shown,
            ErrorKind::InvalidName("a path cannot hold a NUL byte"),
        )
    })?;
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
    sys::open_at(dir, &c, flags, 0, !opts.follow_symlinks, resolve).map_err(|e| {
        if resolve != 0 && e.raw_os_error() == Some(libc::EXDEV) {
            Error::new(
                shown,
                ErrorKind::InvalidName("leaves the directory it must stay in"),
            )
        } else {
            Error::io(shown, "cannot open", e)
        }
    })
}

/// `fstat` of the opened descriptor: refuses anything but a regular file, by what it is.
fn check_regular(fd: &OwnedFd, path: &Path) -> Result<libc::stat> {
    let st = sys::fstat(fd.as_fd()).map_err(|e| Error::io(path, "cannot stat", e))?;
    let kind = FileKind::from_mode(st.st_mode);
    if kind != FileKind::Regular {
        return Err(Error::new(path, ErrorKind::NotRegular(kind)));
    }
    Ok(st)
}

/// Checks what an open descriptor is, then copies or maps it.
fn read_fd(fd: OwnedFd, path: &Path, opts: &ReadOptions) -> Result<Contents> {
    let st = check_regular(&fd, path)?;
    let size = st.st_size.max(0) as u64;
    if size == 0 && sys::is_pseudo_fs(fd.as_fd()) {
        if !opts.proc_text {
            return Err(Error::new(path, ErrorKind::PseudoFile));
        }
        return read_capped(File::from(fd), path, opts.max_bytes, None);
    }
    if size > opts.max_bytes {
        return Err(Error::new(
            path,
            ErrorKind::TooLarge {
                size,
                limit: opts.max_bytes,
            },
        ));
    }
    check_holes(&fd, &st, path, opts)?;
    let private = is_private(&st);
    let map = size >= MAP_THRESHOLD
        && match opts.map {
            Map::Never => false,
            Map::Large => true,
            Map::LargePrivate => private,
        };
    let file = File::from(fd);
    if map {
        // Safety: the file is a regular file that only trusted users can write (or the
        // caller accepted the risk with `Map::Large`); a truncation by them while mapped
        // would raise SIGBUS, which is the documented limit of this crate.
        match unsafe { memmap2::Mmap::map(&file) } {
            Ok(m) if m.len() as u64 == size => return Ok(Contents(Inner::Mapped(m))),
            // A file that changed size under us, or a file system that cannot map: copy.
            _ => {}
        }
    }
    read_capped(file, path, opts.max_bytes, Some(size))
}

/// Refuses a regular file with more holes than `opts.max_holes`: its size less what the disk
/// stores (`st_blocks`), once `lseek(SEEK_HOLE)` confirms a hole (a compressing file system
/// stores less than the size without any).
fn check_holes(fd: &OwnedFd, st: &libc::stat, path: &Path, opts: &ReadOptions) -> Result<()> {
    let size = st.st_size.max(0) as u64;
    let stored = (st.st_blocks.max(0) as u64).saturating_mul(512);
    if size.saturating_sub(stored) > opts.max_holes && sys::has_hole(fd.as_fd(), 0, size) {
        return Err(Error::new(
            path,
            ErrorKind::Sparse {
                size,
                stored,
                limit: opts.max_holes,
            },
        ));
    }
    Ok(())
}

/// Whether no other user can write the file: owned by root or by the reader's effective
/// user, and not writable by group or others (the rule of [`Map::LargePrivate`]).
fn is_private(st: &libc::stat) -> bool {
    (st.st_uid == 0 || st.st_uid == sys::euid())
        && st.st_mode & (libc::S_IWGRP | libc::S_IWOTH) == 0
}

/// The first read of a file whose size is unknown (a /proc or /sys file says 0): a page, so
/// that `stat` or `status` comes in one read instead of five to eight growing ones (a followed
/// process's /proc files are read again and again while a run records).
const FIRST_READ: usize = 4096;

/// Copies at most `limit` bytes (and at most `size`, when known); a file with more than
/// `limit` is refused.
fn read_capped(file: File, path: &Path, limit: u64, size: Option<u64>) -> Result<Contents> {
    let mut buf = Vec::new();
    let cap = size.unwrap_or(limit.saturating_add(1));
    let reserve = size.unwrap_or(cap.min(FIRST_READ as u64));
    buf.try_reserve_exact(reserve as usize).map_err(|_| {
        Error::io(
            path,
            "cannot allocate memory for",
            std::io::Error::from(std::io::ErrorKind::OutOfMemory),
        )
    })?;
    file.take(cap)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, "cannot read", e))?;
    if size.is_none() && buf.len() < FIRST_READ / 2 {
        // Kept texts (a process's `stat`, `io`) hold what they read, not the page.
        buf.shrink_to_fit();
    }
    if buf.len() as u64 > limit {
        return Err(Error::new(
            path,
            ErrorKind::TooLarge {
                size: buf.len() as u64,
                limit,
            },
        ));
    }
    Ok(Contents(Inner::Owned(buf)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("safe-fs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_system_error_is_said_once() {
        // Its message says it; a chain of sources (`{:#}` in the commands) must not again.
        let missing = scratch("missing").join("no-such-file");
        let err = read(&missing, &ReadOptions::untrusted(1 << 20)).unwrap_err();
        assert!(err.is_not_found());
        let text = err.to_string();
        let said = std::io::Error::from_raw_os_error(libc::ENOENT).to_string();
        assert_eq!(text.matches(&said).count(), 1, "{text}");
        assert!(text.starts_with("cannot open "), "{text}");
        assert!(std::error::Error::source(&err).is_none());
    }

    #[test]
    fn reads_a_small_file_and_maps_a_large_one() {
        let dir = scratch("sizes");
        std::fs::write(dir.join("small"), b"abc").unwrap();
        let big = vec![7u8; MAP_THRESHOLD as usize + 10];
        std::fs::write(dir.join("big"), &big).unwrap();
        let small = read(dir.join("small"), &ReadOptions::default()).unwrap();
        assert_eq!((&*small, small.is_mapped()), (&b"abc"[..], false));
        let mapped = read(dir.join("big"), &ReadOptions::default()).unwrap();
        assert!(mapped.is_mapped());
        assert_eq!(&*mapped, &big[..]);
        let never = ReadOptions {
            map: Map::Never,
            ..ReadOptions::default()
        };
        let copied = read(dir.join("big"), &never).unwrap();
        assert!(!copied.is_mapped());
        assert_eq!(copied.into_vec(), big);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_special_files_by_name() {
        let dir = scratch("special");
        let fifo = dir.join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // Safety: a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let opts = ReadOptions::default();
        for (path, what) in [
            (fifo.clone(), "a FIFO (named pipe)"),
            (PathBuf::from("/dev/zero"), "a character device"),
            (PathBuf::from("/dev/urandom"), "a character device"),
            (dir.clone(), "a directory"),
        ] {
            let err = read(&path, &opts).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{}: is {what}, not a regular file", path.display())
            );
        }
        let err = read("/proc/self/maps", &opts).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::PseudoFile), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn open_checks_like_read() {
        let (file, size) = open("/proc/self/exe", &ReadOptions::default()).unwrap();
        assert!(size > 0 && file.metadata().unwrap().len() == size);
        for (path, kind) in [
            ("/dev/zero", "a character device"),
            ("/proc/self/status", "a /proc or /sys file"),
        ] {
            let err = open(path, &ReadOptions::default()).unwrap_err();
            assert!(err.to_string().contains(kind), "{err}");
        }
        let err = open("/proc/self/exe", &ReadOptions::default().with_max_bytes(10)).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::TooLarge { .. }), "{err}");
    }

    #[test]
    fn holes_are_refused_beyond_the_limit() {
        let dir = scratch("holes");
        let sparse = dir.join("sparse");
        let f = File::create(&sparse).unwrap();
        f.set_len(8 << 20).unwrap();
        drop(f);
        std::fs::write(dir.join("dense"), vec![0u8; 8 << 20]).unwrap();
        let opts = ReadOptions::default().with_max_holes(1 << 20);
        let err = read(&sparse, &opts).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Sparse {
                    size: 0x80_0000,
                    limit: 0x10_0000,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("is a sparse file of 8388608 bytes")
        );
        let err = open(&sparse, &opts).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Sparse { .. }), "{err}");
        let (file, _) = open(&sparse, &ReadOptions::default()).unwrap();
        assert!(has_hole(&file, 4096..8192));
        let (file, _) = open(dir.join("dense"), &ReadOptions::default()).unwrap();
        assert!(!has_hole(&file, 0..8 << 20));
        // Without a limit on holes, and a file without holes under one, are read.
        assert_eq!(
            read(&sparse, &ReadOptions::default()).unwrap().len(),
            8 << 20
        );
        assert_eq!(read(dir.join("dense"), &opts).unwrap().len(), 8 << 20);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn procfs_text_is_capped() {
        let text = read_text("/proc/self/status", &ReadOptions::procfs(1 << 20)).unwrap();
        assert!(text.starts_with("Name:"), "{text}");
        let err = read("/proc/self/status", &ReadOptions::procfs(10)).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::TooLarge {
                    size: 11,
                    limit: 10
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn procfs_files_come_whole_past_the_first_read() {
        // kallsyms (thousands of lines) says its size is 0, so it is read a page at first and
        // then in growing reads. It changes only when a BPF program or module comes or goes:
        // read again if it did between the two readings.
        let whole = (0..5).any(|_| {
            let ours = read("/proc/kallsyms", &ReadOptions::procfs(1 << 30)).unwrap();
            let std = std::fs::read("/proc/kallsyms").unwrap();
            assert!(std.len() > 4 * FIRST_READ, "{}", std.len());
            *ours == std[..]
        });
        assert!(
            whole,
            "kallsyms read differently from std's read five times"
        );
        // A short text keeps what it holds, not the first read's page.
        let kept = read("/proc/self/stat", &ReadOptions::procfs(1 << 20))
            .unwrap()
            .into_vec();
        assert!(kept.capacity() < FIRST_READ / 2, "{}", kept.capacity());
        assert!(kept.starts_with(format!("{} (", std::process::id()).as_bytes()));
    }

    #[test]
    fn limit_and_symlinks() {
        let dir = scratch("limits");
        std::fs::write(dir.join("f"), b"0123456789").unwrap();
        std::os::unix::fs::symlink(dir.join("f"), dir.join("link")).unwrap();
        let err = read(dir.join("f"), &ReadOptions::default().with_max_bytes(9)).unwrap_err();
        assert!(matches!(
            err.kind(),
            ErrorKind::TooLarge { size: 10, limit: 9 }
        ));
        assert_eq!(
            &*read(dir.join("link"), &ReadOptions::default()).unwrap(),
            b"0123456789"
        );
        let err = read(dir.join("link"), &ReadOptions::untrusted(100)).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Symlink), "{err:?}");
        // A link in a directory component is refused too.
        std::os::unix::fs::symlink(&dir, dir.join("dirlink")).unwrap();
        let err = read(dir.join("dirlink/f"), &ReadOptions::untrusted(100)).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Symlink), "{err:?}");
        let err = read_text(dir.join("missing"), &ReadOptions::default()).unwrap_err();
        assert!(err.is_not_found());
        std::fs::write(dir.join("bin"), b"a\xffb").unwrap();
        let err = read_text(dir.join("bin"), &ReadOptions::default()).unwrap_err();
        assert!(err.to_string().ends_with("not UTF-8 text (at offset 0x1)"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
