//! The system calls this crate needs that `std` does not offer: `openat2`, `renameat2`,
//! `fstatfs` and `getrandom`, each with its fallback for kernels or file systems without it.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// `openat2`'s `RESOLVE_NO_SYMLINKS`: no component of the path may be a symbolic link.
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
/// `RESOLVE_BENEATH`: the path may not leave the directory it is resolved in.
pub(crate) const RESOLVE_BENEATH: u64 = 0x08;
/// `RESOLVE_NO_MAGICLINKS`: no `/proc/PID/fd/N`-style links.
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;

/// `struct open_how` of `openat2(2)`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Converts a `-1` return into the thread's errno.
fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Opens `path` relative to `dir` (`AT_FDCWD` for the current directory) with `flags`.
///
/// `no_symlinks` refuses a symbolic link in any component (`openat2` with
/// `RESOLVE_NO_SYMLINKS`; on a kernel without `openat2`, only in the last component, with
/// `O_NOFOLLOW`); `resolve` adds other `RESOLVE_*` bits. Interrupted calls are retried.
pub(crate) fn open_at(
    dir: RawFd,
    path: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
    no_symlinks: bool,
    resolve: u64,
) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_CLOEXEC;
    if no_symlinks || resolve != 0 {
        let how = OpenHow {
            flags: flags as u64
                | if no_symlinks {
                    libc::O_NOFOLLOW as u64
                } else {
                    0
                },
            mode: u64::from(mode),
            resolve: resolve
                | if no_symlinks {
                    RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
                } else {
                    0
                },
        };
        loop {
            // Safety: `how` is a valid `open_how` of the size passed, and `path` is a valid
            // NUL-terminated string; the returned descriptor is owned by nobody else.
            let ret = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    dir,
                    path.as_ptr(),
                    &how as *const OpenHow,
                    std::mem::size_of::<OpenHow>(),
                )
            };
            match check(ret) {
                // Safety: a new descriptor that nothing else owns.
                Ok(fd) => return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) && resolve == 0 => break,
                Err(e) => return Err(e),
            }
        }
    }
    let flags = flags | if no_symlinks { libc::O_NOFOLLOW } else { 0 };
    loop {
        // Safety: `path` is a valid NUL-terminated string.
        let fd = unsafe { libc::openat(dir, path.as_ptr(), flags, libc::c_uint::from(mode)) };
        match check(fd as libc::c_long) {
            // Safety: a new descriptor that nothing else owns.
            Ok(fd) => return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `fstat` of an open descriptor.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // Safety: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // Safety: `fd` is open and `st` is writable.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } as libc::c_long)?;
    Ok(st)
}

/// Whether the file system of `fd` is procfs or sysfs, whose files report size 0.
pub(crate) fn is_pseudo_fs(fd: BorrowedFd<'_>) -> bool {
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    const SYSFS_MAGIC: i64 = 0x6265_6572;
    const DEBUGFS_MAGIC: i64 = 0x6462_6720;
    const TRACEFS_MAGIC: i64 = 0x7472_6163;
    // Safety: an all-zero `statfs` is a valid value to be overwritten.
    let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
    // Safety: `fd` is open and `sfs` is writable.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut sfs) } != 0 {
        return false;
    }
    #[allow(
        clippy::unnecessary_cast,
        reason = "f_type's type differs between targets"
    )]
    let magic = sfs.f_type as i64;
    matches!(
        magic,
        PROC_SUPER_MAGIC | SYSFS_MAGIC | DEBUGFS_MAGIC | TRACEFS_MAGIC
    )
}

/// Whether the file open at `fd` has a hole (a range not stored on disk) that starts before
/// `end` at or after `start`, by `lseek(SEEK_HOLE)`; a file system that does not report holes
/// has none. The file offset is put back at 0 (readers here read at offsets they give).
pub(crate) fn has_hole(fd: BorrowedFd<'_>, start: u64, end: u64) -> bool {
    let Ok(from) = libc::off_t::try_from(start) else {
        return false;
    };
    // Safety: lseek on an open descriptor has no other effect than moving its offset.
    let hole = unsafe { libc::lseek(fd.as_raw_fd(), from, libc::SEEK_HOLE) };
    // Safety: as above.
    unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET) };
    hole >= 0 && (hole as u64) < end
}

/// What happened to a rename that must not replace its target.
pub(crate) enum NoReplace {
    Done,
    /// The target exists.
    Exists,
}

/// Renames `from` to `to` in `dir` unless `to` exists: `renameat2(RENAME_NOREPLACE)`, or,
/// where the file system does not support it, `linkat` (which never replaces) then `unlinkat`.
pub(crate) fn rename_noreplace(dir: RawFd, from: &CStr, to: &CStr) -> io::Result<NoReplace> {
    // Safety: valid NUL-terminated names relative to an open directory.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            dir,
            from.as_ptr(),
            dir,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    match check(ret) {
        Ok(_) => return Ok(NoReplace::Done),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => return Ok(NoReplace::Exists),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {}
        Err(e) => return Err(e),
    }
    // Safety: as above.
    let ret = unsafe { libc::linkat(dir, from.as_ptr(), dir, to.as_ptr(), 0) };
    match check(ret as libc::c_long) {
        Ok(_) => {}
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => return Ok(NoReplace::Exists),
        Err(e) => return Err(e),
    }
    unlink_at(dir, from, false)?;
    Ok(NoReplace::Done)
}

/// `renameat` within `dir`, replacing `to` if it exists.
pub(crate) fn rename_replacing(dir: RawFd, from: &CStr, to: &CStr) -> io::Result<()> {
    // Safety: valid NUL-terminated names relative to an open directory.
    check(unsafe { libc::renameat(dir, from.as_ptr(), dir, to.as_ptr()) } as libc::c_long)?;
    Ok(())
}

/// `linkat` from `from` in `from_dir` to the new entry `to` in `to_dir`, not following a
/// symbolic link `from`.
pub(crate) fn link_at(from_dir: RawFd, from: &CStr, to_dir: RawFd, to: &CStr) -> io::Result<()> {
    // Safety: valid NUL-terminated names relative to open directories.
    check(
        unsafe { libc::linkat(from_dir, from.as_ptr(), to_dir, to.as_ptr(), 0) } as libc::c_long,
    )?;
    Ok(())
}

/// `unlinkat`, of a directory entry that is not a directory, or of an empty directory.
pub(crate) fn unlink_at(dir: RawFd, name: &CStr, is_dir: bool) -> io::Result<()> {
    let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
    // Safety: a valid NUL-terminated name relative to an open directory.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) } as libc::c_long)?;
    Ok(())
}

/// `mkdirat`.
pub(crate) fn mkdir_at(dir: RawFd, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // Safety: a valid NUL-terminated name relative to an open directory (or AT_FDCWD).
    check(unsafe { libc::mkdirat(dir, name.as_ptr(), mode) } as libc::c_long)?;
    Ok(())
}

/// `readlinkat` of the symbolic link open at `fd` (an `O_PATH|O_NOFOLLOW` descriptor): its
/// target, of at most `PATH_MAX` bytes.
pub(crate) fn read_link(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // Safety: an empty name reads the link `fd` refers to; `buf` is writable for its length.
    let n = unsafe {
        libc::readlinkat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = check(n as libc::c_long)? as usize;
    if n >= buf.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    buf.truncate(n);
    Ok(buf)
}

/// `fchmod`: the exact mode, whatever the umask took away at creation.
pub(crate) fn fchmod(fd: BorrowedFd<'_>, mode: libc::mode_t) -> io::Result<()> {
    // Safety: `fd` is open.
    check(unsafe { libc::fchmod(fd.as_raw_fd(), mode) } as libc::c_long)?;
    Ok(())
}

/// `fsync`.
pub(crate) fn fsync(fd: BorrowedFd<'_>) -> io::Result<()> {
    // Safety: `fd` is open.
    check(unsafe { libc::fsync(fd.as_raw_fd()) } as libc::c_long)?;
    Ok(())
}

/// 64 random bits for a temporary name: `getrandom`, or the time and pid mixed if it fails
/// (the name only needs to be hard to predict; `O_EXCL` makes a collision an error, not a
/// hazard).
pub(crate) fn random_u64() -> u64 {
    let mut buf = [0u8; 8];
    // Safety: `buf` is writable for its length.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), libc::GRND_NONBLOCK) };
    if n == buf.len() as isize {
        return u64::from_ne_bytes(buf);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // splitmix64 of the time and pid.
    let mut z = t ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The process's effective user id.
pub(crate) fn euid() -> u32 {
    // Safety: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}
