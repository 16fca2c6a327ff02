//! Starting the command to profile on the live machine: forked and held before its `exec` until
//! the events are open on it (so that `enable_on_exec` turns them on at the first instruction of
//! the new program), with an `exec` failure reported back through a close-on-exec pipe.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use crate::error::{Error, Result};

/// A forked child waiting, before its `exec`, to be released.
pub(crate) struct StoppedChild {
    pid: i32,
    program: String,
    /// Our end of the pipe the child waits on.
    go: OwnedFd,
    /// Our end of the pipe its `exec` failure comes back on (closed by a successful `exec`).
    exec_error: OwnedFd,
}

impl StoppedChild {
    /// Forks a child that waits, then execs `argv` (searched in `PATH`). With
    /// `die_with_parent`, the child gets SIGKILL when the collector dies.
    ///
    /// Returns an error if `argv` is empty, holds a NUL byte, or the fork fails.
    pub(crate) fn fork(argv: &[OsString], die_with_parent: bool) -> Result<StoppedChild> {
        let program = argv
            .first()
            .ok_or(Error::EmptyCommand)?
            .to_string_lossy()
            .into_owned();
        let spawn_err = |source| Error::Spawn {
            program: program.clone(),
            source,
        };
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| spawn_err(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (go_r, go_w) = pipe().map_err(spawn_err)?;
        let (err_r, err_w) = pipe().map_err(spawn_err)?;
        // Safety: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // Safety: the child only calls async-signal-safe functions (close, read, prctl,
        // getppid, signal, execvp, write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(spawn_err(io::Error::last_os_error()));
        }
        if pid == 0 {
            // Safety: see above; all pointers point to data owned by this (copied) process.
            unsafe {
                libc::close(go_w.as_raw_fd());
                libc::close(err_r.as_raw_fd());
                // Die with the collector. If it died before the prctl took effect, the child
                // was reparented already and would never get the signal: check, and go.
                if die_with_parent
                    && (libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                        || libc::getppid() != parent)
                {
                    libc::_exit(127);
                }
                let mut b = 0u8;
                if libc::read(go_r.as_raw_fd(), (&raw mut b).cast(), 1) != 1 {
                    libc::_exit(127);
                }
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::execvp(ptrs[0], ptrs.as_ptr());
                let errno = *libc::__errno_location();
                libc::write(err_w.as_raw_fd(), (&raw const errno).cast(), 4);
                libc::_exit(127);
            }
        }
        drop(go_r);
        drop(err_w);
        Ok(StoppedChild {
            pid,
            program,
            go: go_w,
            exec_error: err_r,
        })
    }

    /// The child's pid.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Kills and reaps the child.
    pub(crate) fn kill(self) {
        reap(self.pid);
    }

    /// Lets the child exec, and waits until it has (or failed to).
    ///
    /// Returns an error, with the child killed and reaped, if it cannot be released or its
    /// `exec` failed.
    pub(crate) fn release(self) -> Result<()> {
        let spawn_err = |source| Error::Spawn {
            program: self.program.clone(),
            source,
        };
        // Safety: writing one byte from a live local to our end of the pipe.
        let w = unsafe { libc::write(self.go.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        if w != 1 {
            let e = io::Error::last_os_error();
            reap(self.pid);
            return Err(spawn_err(e));
        }
        let mut errno = [0u8; 4];
        let n = loop {
            // Safety: reading at most 4 bytes into a 4-byte local.
            let n =
                unsafe { libc::read(self.exec_error.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break n;
        };
        if n == 4 {
            reap(self.pid);
            return Err(spawn_err(io::Error::from_raw_os_error(i32::from_ne_bytes(
                errno,
            ))));
        }
        Ok(())
    }
}

/// Kills and reaps child `pid`.
fn reap(pid: i32) {
    // Safety: `pid` is our child; killing and reaping it has no memory effects.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // Safety: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // Safety: pipe2 just created both descriptors and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
