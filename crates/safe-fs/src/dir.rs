//! Creating files inside a directory opened once: random temporary names, `O_EXCL` and
//! `O_NOFOLLOW`, `fsync`, and renames that never replace what is there.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorKind, FileKind, Result};
use crate::read::{Contents, ReadOptions, open_at, read_at};
use crate::sys;

/// What every temporary file name of this crate starts with, so that a later run can find
/// and remove the leftovers of a killed one without reading them.
pub const TEMP_PREFIX: &str = ".safe-fs-tmp.";

/// A directory opened once, without following a symbolic link; every file is created and
/// renamed relative to it, so that nobody can redirect the writes by swapping a path component
/// afterwards.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Checks that `name` is one path component, and makes it a C string.
fn component(dir: &Path, name: &OsStr) -> Result<CString> {
    let bytes = name.as_bytes();
    let why = if bytes.is_empty() {
        Some("an empty file name")
    } else if bytes == b"." || bytes == b".." {
        Some("`.` and `..` are not file names")
    } else if bytes.contains(&b'/') {
        Some("a file name cannot hold `/`")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(Error::new(dir.join(name), ErrorKind::InvalidName(why)));
    }
    CString::new(bytes).map_err(|_| {
        Error::new(
            dir.join(name),
            ErrorKind::InvalidName("a NUL byte in a name"),
        )
    })
}

impl Dir {
    /// Opens a directory. The last component of `path` may not be a symbolic link (earlier
    /// components are the caller's to trust).
    ///
    /// Returns an error if it does not exist, is a symbolic link ([`ErrorKind::Symlink`]) or is
    /// not a directory ([`ErrorKind::NotRegular`] with the kind found).
    pub fn open(path: impl AsRef<Path>) -> Result<Dir> {
        let path = path.as_ref();
        Dir::open_in(libc::AT_FDCWD, path, path.to_path_buf())
    }

    /// Opens a directory that the user named, following a symbolic link to it (for reading a
    /// measurement the user points at, not for writing as root).
    pub fn open_following(path: impl AsRef<Path>) -> Result<Dir> {
        let path = path.as_ref();
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| Error::new(path, ErrorKind::InvalidName("a NUL byte in a path")))?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        sys::open_at(libc::AT_FDCWD, &c, flags, 0, false, 0)
            .map(|fd| Dir {
                fd,
                path: path.to_path_buf(),
            })
            .map_err(|e| Error::io(path, "cannot open directory", e))
    }

    /// Opens the directory `path`, following a symbolic link anywhere in it only if the link
    /// belongs to root or to the effective user: for a root process writing where the user
    /// said, through a path that may cross a shared directory such as `/tmp`, where another
    /// user's link could lead anywhere (`fs.protected_symlinks` guards only sticky
    /// directories, and only where it is set). Each component is opened relative to the last,
    /// and each link read through the descriptor whose owner was checked, so nothing can be
    /// swapped between the check and the use.
    ///
    /// Returns [`ErrorKind::ForeignSymlink`] for another user's link, the kind found for a
    /// component that is not a directory, and I/O errors (`ELOOP` past 40 links).
    pub fn open_owned_links(path: impl AsRef<Path>) -> Result<Dir> {
        let path = path.as_ref();
        let io_error = |e| Error::io(path, "cannot open directory", e);
        let start = |absolute: bool| {
            let c: &CStr = if absolute { c"/" } else { c"." };
            sys::open_at(
                libc::AT_FDCWD,
                c,
                libc::O_PATH | libc::O_DIRECTORY,
                0,
                false,
                0,
            )
        };
        let mut cur = start(path.is_absolute()).map_err(io_error)?;
        // The components still to walk, the next one last.
        let mut pending: Vec<OsString> = Vec::new();
        let push = |pending: &mut Vec<OsString>, p: &Path| {
            pending.extend(
                p.components()
                    .rev()
                    .filter(|c| !matches!(c, Component::RootDir | Component::CurDir))
                    .map(|c| c.as_os_str().to_os_string()),
            );
        };
        push(&mut pending, path);
        let mut walked = PathBuf::from(if path.is_absolute() { "/" } else { "" });
        let mut links = 0;
        while let Some(name) = pending.pop() {
            let c = CString::new(name.as_bytes())
                .map_err(|_| Error::new(path, ErrorKind::InvalidName("a NUL byte in a path")))?;
            let flags = libc::O_PATH | libc::O_NOFOLLOW;
            let fd = sys::open_at(cur.as_raw_fd(), &c, flags, 0, false, 0).map_err(io_error)?;
            walked.push(&name);
            let st = sys::fstat(fd.as_fd()).map_err(io_error)?;
            match FileKind::from_mode(st.st_mode) {
                FileKind::Directory => cur = fd,
                FileKind::Symlink => {
                    links += 1;
                    if links > 40 {
                        return Err(io_error(io::Error::from_raw_os_error(libc::ELOOP)));
                    }
                    if st.st_uid != 0 && st.st_uid != sys::euid() {
                        return Err(Error::new(
                            path,
                            ErrorKind::ForeignSymlink {
                                link: walked,
                                owner: st.st_uid,
                            },
                        ));
                    }
                    let target = PathBuf::from(OsString::from_vec(
                        sys::read_link(fd.as_fd()).map_err(io_error)?,
                    ));
                    walked.pop();
                    if target.is_absolute() {
                        cur = start(true).map_err(io_error)?;
                        walked = PathBuf::from("/");
                    }
                    push(&mut pending, &target);
                }
                _ => return Err(io_error(io::Error::from_raw_os_error(libc::ENOTDIR))),
            }
        }
        let fd = sys::open_at(
            cur.as_raw_fd(),
            c".",
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
            false,
            0,
        )
        .map_err(io_error)?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    fn open_in(parent: libc::c_int, rel: &Path, shown: PathBuf) -> Result<Dir> {
        let c = CString::new(rel.as_os_str().as_bytes())
            .map_err(|_| Error::new(&shown, ErrorKind::InvalidName("a NUL byte in a path")))?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        match sys::open_at(parent, &c, flags, 0, false, 0) {
            Ok(fd) => Ok(Dir { fd, path: shown }),
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                // Say what it is instead: a symbolic link (O_NOFOLLOW and O_DIRECTORY give
                // ENOTDIR for one), a file, a FIFO...
                let kind = std::fs::symlink_metadata(&shown)
                    .map(|m| {
                        use std::os::unix::fs::MetadataExt;
                        FileKind::from_mode(m.mode())
                    })
                    .unwrap_or(FileKind::Other);
                Err(Error::new(
                    &shown,
                    if kind == FileKind::Symlink {
                        ErrorKind::Symlink
                    } else {
                        ErrorKind::NotRegular(kind)
                    },
                ))
            }
            Err(e) => Err(Error::io(&shown, "cannot open directory", e)),
        }
    }

    /// Creates the directory `path` with `mode` (exactly, whatever the umask), and opens it.
    ///
    /// Returns [`ErrorKind::Exists`] if something is already there, or the errors of
    /// [`Dir::open`].
    pub fn create_dir(path: impl AsRef<Path>, mode: u32) -> Result<Dir> {
        let path = path.as_ref();
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| Error::new(path, ErrorKind::InvalidName("a NUL byte in a path")))?;
        sys::mkdir_at(libc::AT_FDCWD, &c, 0o700)
            .map_err(|e| Error::io(path, "cannot create directory", e))?;
        let dir = Dir::open(path)?.made_by_us()?;
        sys::fchmod(dir.fd.as_fd(), mode).map_err(|e| Error::io(path, "cannot chmod", e))?;
        Ok(dir)
    }

    /// Creates the directory `name` inside this one with `mode`, and opens it.
    ///
    /// Returns [`ErrorKind::Exists`] if something is already there.
    pub fn create_subdir(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<Dir> {
        let name = name.as_ref();
        let c = component(&self.path, name)?;
        let shown = self.path.join(name);
        sys::mkdir_at(self.fd.as_raw_fd(), &c, 0o700)
            .map_err(|e| Error::io(&shown, "cannot create directory", e))?;
        let dir = Dir::open_in(self.fd.as_raw_fd(), Path::new(name), shown)?.made_by_us()?;
        sys::fchmod(dir.fd.as_fd(), mode).map_err(|e| Error::io(&dir.path, "cannot chmod", e))?;
        Ok(dir)
    }

    /// The directory just created, if it is still ours: between `mkdir` and `open`, a user
    /// who can write the parent (not sticky) can rename ours away and put their own there.
    fn made_by_us(self) -> Result<Dir> {
        if self.stat()?.st_uid != sys::euid() {
            return Err(Error::new(self.path, ErrorKind::Replaced));
        }
        Ok(self)
    }

    /// Opens the directory `name` inside this one, not following a symbolic link.
    pub fn open_subdir(&self, name: impl AsRef<OsStr>) -> Result<Dir> {
        let name = name.as_ref();
        component(&self.path, name)?;
        Dir::open_in(self.fd.as_raw_fd(), Path::new(name), self.path.join(name))
    }

    /// The path it was opened by (for messages; the directory is used through its descriptor).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `fstat` of the directory itself.
    pub fn stat(&self) -> Result<libc::stat> {
        sys::fstat(self.fd.as_fd()).map_err(|e| Error::io(&self.path, "cannot stat", e))
    }

    /// The names of its entries (not `.` and `..`), unsorted.
    pub fn entries(&self) -> Result<Vec<OsString>> {
        // Reading through /proc/self/fd keeps to the opened directory, whatever its path
        // points at now; without /proc, the path is used.
        let via_fd = PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()));
        let listed = std::fs::read_dir(&via_fd).or_else(|_| std::fs::read_dir(&self.path));
        let io_error = |e| Error::io(&self.path, "cannot list", e);
        let mut names = Vec::new();
        for entry in listed.map_err(io_error)? {
            names.push(entry.map_err(io_error)?.file_name());
        }
        Ok(names)
    }

    /// What the entry `name` is, without following a symbolic link; `None` if there is none.
    pub fn kind_of(&self, name: impl AsRef<OsStr>) -> Result<Option<(FileKind, libc::stat)>> {
        let name = name.as_ref();
        let c = component(&self.path, name)?;
        // Safety: an all-zero `stat` is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // Safety: a valid name relative to an open directory, and a writable `stat`.
        let ret = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if ret == 0 {
            return Ok(Some((FileKind::from_mode(st.st_mode), st)));
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::NotFound {
            Ok(None)
        } else {
            Err(Error::io(self.path.join(name), "cannot stat", e))
        }
    }

    /// Reads the file at `rel`, which must stay inside this directory: a relative path
    /// without `..` (refused by name), resolved with `RESOLVE_BENEATH` so that no symbolic link
    /// leads out either. Otherwise as [`crate::read`].
    pub fn read(&self, rel: impl AsRef<Path>, opts: &ReadOptions) -> Result<Contents> {
        let rel = rel.as_ref();
        let shown = self.beneath(rel)?;
        read_at(self.fd.as_raw_fd(), rel, &shown, opts, sys::RESOLVE_BENEATH)
    }

    /// Opens the file at `rel` for reading it in parts (hashing a file of any size in a fixed
    /// buffer), with the rules of [`Dir::read`] and the checks of [`crate::open`]; returns the
    /// file and its size, checked against `opts.max_bytes`.
    pub fn open_file(&self, rel: impl AsRef<Path>, opts: &ReadOptions) -> Result<(File, u64)> {
        let rel = rel.as_ref();
        let shown = self.beneath(rel)?;
        open_at(self.fd.as_raw_fd(), rel, &shown, opts, sys::RESOLVE_BENEATH)
    }

    /// The path shown for `rel`, if `rel` is a relative path without `..` (the rule of
    /// [`Dir::read`]).
    fn beneath(&self, rel: &Path) -> Result<PathBuf> {
        let shown = self.path.join(rel);
        if rel.as_os_str().is_empty() {
            return Err(Error::new(shown, ErrorKind::InvalidName("an empty path")));
        }
        for c in rel.components() {
            match c {
                Component::Normal(_) | Component::CurDir => {}
                Component::ParentDir => {
                    return Err(Error::new(
                        shown,
                        ErrorKind::InvalidName("a `..` component is not allowed here"),
                    ));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(Error::new(
                        shown,
                        ErrorKind::InvalidName("must be a path relative to its directory"),
                    ));
                }
            }
        }
        Ok(shown)
    }

    /// Creates a new, empty file under a random temporary name, with `mode` exactly (the umask
    /// does not apply). Write it, then [`NewFile::persist`] it; dropped without that, it is
    /// removed.
    pub fn create(&self, mode: u32) -> Result<NewFile<'_>> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let mut tries = 0;
        loop {
            let name = format!("{TEMP_PREFIX}{:016x}", sys::random_u64());
            let c = CString::new(name.clone()).expect("no NUL in a hex name");
            match sys::open_at(self.fd.as_raw_fd(), &c, flags, 0o600, false, 0) {
                Ok(fd) => {
                    let file = NewFile {
                        dir: self,
                        file: File::from(fd),
                        temp: Some(c),
                    };
                    sys::fchmod(file.file.as_fd(), mode)
                        .map_err(|e| Error::io(self.path.join(&name), "cannot chmod", e))?;
                    return Ok(file);
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) && tries < 16 => tries += 1,
                Err(e) => return Err(Error::io(self.path.join(name), "cannot create", e)),
            }
        }
    }

    /// Writes `bytes` as the new file `name` with `mode`: a temporary file, synced, renamed to
    /// `name` if nothing is there. Returns the size written.
    ///
    /// Returns [`ErrorKind::Exists`] if `name` exists (it is left as it was), and I/O errors
    /// naming the file.
    pub fn write_new(&self, name: &str, bytes: &[u8], mode: u32) -> Result<u64> {
        let mut file = self.create(mode)?;
        file.write_all(bytes)
            .map_err(|e| Error::io(self.path.join(name), "cannot write", e))?;
        file.persist(name)
    }

    /// Renames the entry `from` to `to` inside this directory. With `replace` false, an
    /// existing `to` is an error ([`ErrorKind::Exists`]) and is left as it was.
    pub fn rename(&self, from: &str, to: &str, replace: bool) -> Result<()> {
        let f = component(&self.path, OsStr::new(from))?;
        let t = component(&self.path, OsStr::new(to))?;
        let shown = self.path.join(to);
        if replace {
            sys::rename_replacing(self.fd.as_raw_fd(), &f, &t)
                .map_err(|e| Error::io(shown, "cannot rename to", e))
        } else {
            match sys::rename_noreplace(self.fd.as_raw_fd(), &f, &t) {
                Ok(sys::NoReplace::Done) => Ok(()),
                Ok(sys::NoReplace::Exists) => Err(Error::new(shown, ErrorKind::Exists)),
                Err(e) => Err(Error::io(shown, "cannot rename to", e)),
            }
        }
    }

    /// Replaces the entry `name` by a hard link to `from_name` in the directory `from` (a
    /// link `from_name` is linked as the link, never followed): two identical files kept
    /// once on disk. The link is made under a temporary name and renamed over `name`.
    ///
    /// Returns an error if the link cannot be made (another file system, say); `name` is then
    /// left as it was.
    pub fn link_replacing(&self, name: &str, from: &Dir, from_name: &str) -> Result<()> {
        let to = component(&self.path, OsStr::new(name))?;
        let src = component(&from.path, OsStr::new(from_name))?;
        let temp = format!("{TEMP_PREFIX}{:016x}", sys::random_u64());
        let t = CString::new(temp.clone()).expect("no NUL in a hex name");
        sys::link_at(from.fd.as_raw_fd(), &src, self.fd.as_raw_fd(), &t)
            .map_err(|e| Error::io(self.path.join(name), "cannot link", e))?;
        sys::rename_replacing(self.fd.as_raw_fd(), &t, &to).map_err(|e| {
            let _ = sys::unlink_at(self.fd.as_raw_fd(), &t, false);
            Error::io(self.path.join(name), "cannot rename to", e)
        })
    }

    /// Removes the entry `name` (a file or symbolic link, not followed; with `is_dir`, an empty
    /// directory).
    pub fn remove(&self, name: impl AsRef<OsStr>, is_dir: bool) -> Result<()> {
        let name = name.as_ref();
        let c = component(&self.path, name)?;
        sys::unlink_at(self.fd.as_raw_fd(), &c, is_dir)
            .map_err(|e| Error::io(self.path.join(name), "cannot remove", e))
    }

    /// Makes the renames and removals done in the directory durable (`fsync` of the
    /// directory).
    pub fn sync(&self) -> Result<()> {
        sys::fsync(self.fd.as_fd()).map_err(|e| Error::io(&self.path, "cannot sync", e))
    }

    /// Removes the temporary files that a killed run left (names starting with
    /// [`TEMP_PREFIX`]), without opening them; returns their names.
    pub fn remove_stale_temps(&self) -> Result<Vec<OsString>> {
        let mut removed = Vec::new();
        for name in self.entries()? {
            if name.as_bytes().starts_with(TEMP_PREFIX.as_bytes()) {
                match self.remove(&name, false) {
                    Ok(()) => removed.push(name),
                    // Gone meanwhile (another run cleaning up): fine.
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        removed.sort();
        Ok(removed)
    }
}

/// Writes `bytes` to `path` as a user's command writes its output file (gprof's `gmon.sum`):
/// a new file in `path`'s directory under a temporary name, with mode `0666` less the umask,
/// synced and renamed over whatever `path` was. A link at `path` is replaced, never followed,
/// and a reader never sees a partial file. The directory is reached as
/// [`Dir::open_owned_links`] does: through another user's link (`/tmp/x/link/out`, the link
/// planted in `/tmp`) it would be that user's choice of which file is replaced. Returns the
/// size written.
///
/// Returns an error naming `path` if its directory cannot be opened (or is reached through
/// another user's link, [`ErrorKind::ForeignSymlink`]) or written.
pub fn replace_file(path: impl AsRef<Path>, bytes: &[u8]) -> Result<u64> {
    let path = path.as_ref();
    let Some(name) = path.file_name() else {
        return Err(Error::new(path, ErrorKind::InvalidName("names no file")));
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = Dir::open_owned_links(parent)?;
    let Some(name) = name.to_str() else {
        return Err(Error::new(
            path,
            ErrorKind::InvalidName("a file name that is not UTF-8"),
        ));
    };
    let mut file = dir.create(0o666 & !umask())?;
    file.write_all(bytes)
        .map_err(|e| Error::io(path, "cannot write", e))?;
    file.persist_replacing(name)
}

/// A file being written under a temporary name in a [`Dir`]; see [`Dir::create`].
#[derive(Debug)]
pub struct NewFile<'d> {
    dir: &'d Dir,
    file: File,
    /// The temporary name; `None` once persisted.
    temp: Option<CString>,
}

impl NewFile<'_> {
    fn temp_path(&self) -> PathBuf {
        let name = self.temp.as_deref().map_or(&b""[..], CStr::to_bytes);
        self.dir.path.join(OsStr::from_bytes(name))
    }

    /// Syncs the file and gives it the name `name`, unless something has that name already
    /// ([`ErrorKind::Exists`]; the temporary file is then removed). Returns its size.
    pub fn persist(self, name: &str) -> Result<u64> {
        self.finish(name, false)
    }

    /// The same, replacing whatever has the name `name` (for a file this program itself
    /// wrote there earlier, in a directory nobody else can write).
    pub fn persist_replacing(self, name: &str) -> Result<u64> {
        self.finish(name, true)
    }

    fn finish(mut self, name: &str, replace: bool) -> Result<u64> {
        let shown = self.dir.path.join(name);
        let target = component(&self.dir.path, OsStr::new(name))?;
        self.file
            .flush()
            .and_then(|()| self.file.sync_all())
            .map_err(|e| Error::io(&shown, "cannot write", e))?;
        let size = sys::fstat(self.file.as_fd())
            .map_err(|e| Error::io(&shown, "cannot stat", e))?
            .st_size as u64;
        let temp = self.temp.take().expect("not persisted yet");
        let dir = self.dir.fd.as_raw_fd();
        let done = if replace {
            sys::rename_replacing(dir, &temp, &target).map(|()| sys::NoReplace::Done)
        } else {
            sys::rename_noreplace(dir, &temp, &target)
        };
        match done {
            Ok(sys::NoReplace::Done) => Ok(size),
            Ok(sys::NoReplace::Exists) => {
                let _ = sys::unlink_at(dir, &temp, false);
                Err(Error::new(shown, ErrorKind::Exists))
            }
            Err(e) => {
                let _ = sys::unlink_at(dir, &temp, false);
                Err(Error::io(shown, "cannot rename a new file to", e))
            }
        }
    }
}

impl Write for NewFile<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for NewFile<'_> {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = sys::unlink_at(self.dir.fd.as_raw_fd(), temp, false);
        }
    }
}

impl NewFile<'_> {
    /// The temporary path, for messages about a write that failed before [`NewFile::persist`].
    pub fn temporary_path(&self) -> PathBuf {
        self.temp_path()
    }
}

/// The process's umask, from `/proc/self/status` (reading it with `umask(2)` would change it
/// for a moment under other threads); 022 if that is unreadable.
fn umask() -> libc::mode_t {
    let status = crate::read::read_text(
        "/proc/self/status",
        &crate::read::ReadOptions::procfs(1 << 20),
    )
    .unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| libc::mode_t::from_str_radix(v.trim(), 8).ok())
        .unwrap_or(0o022)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("safe-fs-dir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn creates_with_exact_modes_and_never_replaces() {
        let path = scratch("modes");
        let dir = Dir::create_dir(&path, 0o750).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o750);
        assert_eq!(dir.write_new("a", b"one", 0o640).unwrap(), 3);
        assert_eq!(
            std::fs::metadata(path.join("a")).unwrap().mode() & 0o777,
            0o640
        );
        let err = dir.write_new("a", b"two", 0o600).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Exists), "{err}");
        assert_eq!(std::fs::read(path.join("a")).unwrap(), b"one");
        // The refused write left no temporary file.
        assert_eq!(dir.entries().unwrap(), ["a"]);
        let mut f = dir.create(0o600).unwrap();
        f.write_all(b"three").unwrap();
        assert_eq!(f.persist_replacing("a").unwrap(), 5);
        assert_eq!(std::fs::read(path.join("a")).unwrap(), b"three");
        assert!(matches!(
            Dir::create_dir(&path, 0o700).unwrap_err().kind(),
            ErrorKind::Exists
        ));
        std::fs::remove_dir_all(&path).unwrap();
    }

    #[test]
    fn a_planted_link_is_neither_followed_nor_replaced() {
        let path = scratch("links");
        let dir = Dir::create_dir(&path, 0o700).unwrap();
        let victim = path.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, path.join("out")).unwrap();
        let err = dir.write_new("out", b"evil", 0o600).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Exists), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(
            std::fs::symlink_metadata(path.join("out"))
                .unwrap()
                .is_symlink()
        );
        // A link as the directory itself is refused.
        std::os::unix::fs::symlink(&path, path.join("dirlink")).unwrap();
        let err = Dir::open(path.join("dirlink")).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Symlink), "{err:?}");
        let err = dir.open_subdir("victim").unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::NotRegular(FileKind::Regular)),
            "{err:?}"
        );
        std::fs::remove_dir_all(&path).unwrap();
    }

    #[test]
    fn stale_temps_are_removed_unread_and_unfinished_files_vanish() {
        let path = scratch("temps");
        let dir = Dir::create_dir(&path, 0o700).unwrap();
        {
            let mut f = dir.create(0o600).unwrap();
            f.write_all(b"partial").unwrap();
            // Dropped without persist: removed.
        }
        assert!(dir.entries().unwrap().is_empty());
        let stale = format!("{TEMP_PREFIX}0123456789abcdef");
        // A FIFO under a temporary name: removing it must not open it.
        let c = CString::new(path.join(&stale).as_os_str().as_bytes()).unwrap();
        // Safety: a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::fs::write(path.join("keep"), b"").unwrap();
        assert_eq!(dir.remove_stale_temps().unwrap(), [OsString::from(&stale)]);
        assert_eq!(dir.entries().unwrap(), ["keep"]);
        std::fs::remove_dir_all(&path).unwrap();
    }

    #[test]
    fn replace_file_replaces_a_link_instead_of_following_it() {
        let path = scratch("replace");
        std::fs::create_dir_all(&path).unwrap();
        let victim = path.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, path.join("gmon.sum")).unwrap();
        assert_eq!(replace_file(path.join("gmon.sum"), b"sum").unwrap(), 3);
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(path.join("gmon.sum")).unwrap(), b"sum");
        let mode = std::fs::metadata(path.join("gmon.sum")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask());
        // Another user's link to the directory holding `victim`, on the way to the output: it
        // chose which file would be replaced.
        let link = path.join("theirs");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let other = if sys::euid() == 65534 { 1 } else { 65534 };
        std::os::unix::fs::lchown(&link, Some(other), None).unwrap();
        let err = replace_file(link.join("victim"), b"sum").unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::ForeignSymlink { .. }),
            "{err}"
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        std::fs::remove_dir_all(&path).unwrap();
    }

    #[test]
    fn only_links_of_root_or_the_user_are_followed_on_the_way() {
        let path = scratch("owned-links");
        let dir = Dir::create_dir(&path, 0o755).unwrap();
        dir.create_subdir("real", 0o755)
            .unwrap()
            .create_subdir("inner", 0o755)
            .unwrap();
        let link = |target: &str, name: &str, owner: u32| {
            let at = path.join(name);
            std::os::unix::fs::symlink(target, &at).unwrap();
            std::os::unix::fs::lchown(&at, Some(owner), None).unwrap();
        };
        let me = sys::euid();
        // Ours, relative and absolute, and a chain of them.
        link("real", "mine", me);
        link(path.join("mine").to_str().unwrap(), "mine-abs", me);
        let (_, inner) = dir
            .open_subdir("real")
            .unwrap()
            .kind_of("inner")
            .unwrap()
            .unwrap();
        for p in ["mine/inner", "mine-abs/inner", "real/../mine/inner"] {
            let opened = Dir::open_owned_links(path.join(p)).unwrap();
            assert_eq!(opened.stat().unwrap().st_ino, inner.st_ino, "{p}");
        }
        // Another user's, directly or at the end of a chain of ours.
        let other = if me == 65534 { 1 } else { 65534 };
        link("real", "theirs", other);
        link("theirs", "mine-to-theirs", me);
        for (p, at) in [
            ("theirs/inner", "theirs"),
            ("mine-to-theirs/inner", "theirs"),
        ] {
            let err = Dir::open_owned_links(path.join(p)).unwrap_err();
            match err.kind() {
                ErrorKind::ForeignSymlink { link, owner } => {
                    assert_eq!(
                        (link.as_path(), *owner),
                        (path.join(at).as_path(), other),
                        "{p}"
                    );
                }
                k => panic!("{p}: {k:?}"),
            }
            assert!(
                err.to_string().contains("is a symbolic link of user"),
                "{err}"
            );
        }
        // A loop, and a file on the way.
        link("loop", "loop", me);
        let err = Dir::open_owned_links(path.join("loop/x")).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Symlink), "{err:?}");
        dir.write_new("file", b"", 0o600).unwrap();
        let err = Dir::open_owned_links(path.join("file/x")).unwrap_err();
        assert_eq!(
            err.io_error().and_then(io::Error::raw_os_error),
            Some(libc::ENOTDIR),
            "{err:?}"
        );
        std::fs::remove_dir_all(&path).unwrap();
    }

    #[test]
    fn a_new_directory_swapped_for_another_users_is_refused() {
        // What `create_subdir` finds if another user renames its new directory away and puts
        // theirs in its place before it is opened.
        let path = scratch("swapped");
        let dir = Dir::create_dir(&path, 0o755).unwrap();
        assert!(dir.made_by_us().is_ok());
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        let err = Dir::open(&path).unwrap().made_by_us().unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Replaced), "{err:?}");
        assert!(
            err.to_string()
                .contains("was replaced by another user's directory")
        );
        std::fs::remove_dir_all(&path).unwrap();
    }

    #[test]
    fn reads_stay_beneath_the_directory() {
        let path = scratch("beneath");
        let dir = Dir::create_dir(&path, 0o700).unwrap();
        dir.write_new("f", b"x", 0o600).unwrap();
        dir.create_subdir("sub", 0o700)
            .unwrap()
            .write_new("g", b"y", 0o600)
            .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", path.join("out")).unwrap();
        let opts = ReadOptions::default();
        assert_eq!(&*dir.read("f", &opts).unwrap(), b"x");
        assert_eq!(&*dir.read("sub/g", &opts).unwrap(), b"y");
        for bad in ["../f", "sub/../../etc/passwd", "/etc/passwd", "out", ""] {
            let err = dir.read(bad, &opts).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::InvalidName(_)),
                "{bad}: {err:?}"
            );
        }
        let perms = std::fs::metadata(&path).unwrap().permissions();
        assert_eq!(perms.mode() & 0o777, 0o700);
        std::fs::remove_dir_all(&path).unwrap();
    }
}
