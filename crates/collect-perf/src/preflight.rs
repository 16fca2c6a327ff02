//! The live machine's perf settings: whether sampling with a [`Config`] is permitted here
//! (`perf_event_paranoid`, rate and stack-depth limits, locked memory), raising
//! `perf_event_max_stack` for the run as root and putting it back, the ring size that fits, and
//! what an error of `perf_event_open` means for the user.

use std::io;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::procfs;
use crate::ring::page_size;

/// What [`preflight`] found out about this machine's perf settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Permissions {
    /// `kernel.perf_event_paranoid` (-9 if unreadable).
    pub paranoid: i32,
    /// `kernel.kptr_restrict` (-9 if unreadable).
    pub kptr_restrict: i32,
    /// Whether we run with euid 0.
    pub is_root: bool,
    /// Whether `/proc/kallsyms` shows real addresses.
    pub kernel_addresses_visible: bool,
    /// Problems that do not prevent sampling, as sentences for the user.
    pub warnings: Vec<String>,
}

pub(crate) fn paranoid() -> i32 {
    procfs::sysctl_i64("/proc/sys/kernel/perf_event_paranoid").map_or(-9, |v| v as i32)
}

/// Checks, before opening anything, that sampling with `config` is permitted here.
///
/// Returns an error with an actionable message if `perf_event_paranoid` forbids it, the
/// frequency or stack depth exceed the kernel's limits, or the ring buffers exceed the
/// locked-memory limit. Hidden kernel addresses only produce a warning.
pub fn preflight(config: &Config) -> Result<Permissions> {
    let paranoid = paranoid();
    let kptr_restrict =
        procfs::sysctl_i64("/proc/sys/kernel/kptr_restrict").map_or(-9, |v| v as i32);
    // Safety: geteuid has no preconditions.
    let is_root = unsafe { libc::geteuid() } == 0;
    if !is_root
        && (paranoid > 2
            || (paranoid > 1 && !config.user_only)
            || (paranoid > 0 && config.system_wide))
    {
        return Err(Error::Refused {
            paranoid,
            hint: if paranoid > 2 {
                ""
            } else {
                " (or sample user space only)"
            },
            source: io::Error::from_raw_os_error(libc::EACCES),
        });
    }
    check_limits(config)?;
    if let Some(limit_kib) = mlock_limit_kib() {
        let ncpu = procfs::online_cpus().len() as u64;
        let kib = ncpu * ((ring_pages(config) + 1) * page_size()) as u64 / 1024;
        if kib > limit_kib {
            return Err(Error::MlockLimit {
                kib,
                limit_kib,
                source: None,
            });
        }
    }
    // Only the first line: the kernel formats the whole 5 MB file on each full read.
    let mut first = String::new();
    if let Ok(f) = std::fs::File::open("/proc/kallsyms") {
        let _ = io::BufRead::read_line(&mut io::BufReader::new(f), &mut first);
    }
    let kernel_addresses_visible = first
        .split_whitespace()
        .next()
        .and_then(|a| u64::from_str_radix(a, 16).ok())
        .is_some_and(|a| a != 0);
    let mut warnings = Vec::new();
    if let Some(limit) = procfs::sysctl_i64(MAX_STACK_SYSCTL)
        && i64::from(config.max_stack) > limit
        && !is_root
    {
        warnings.push(format!(
            "callchains are limited to kernel.perf_event_max_stack={limit} frames (asked for \
             {}; root raises it for the run): deeper stacks are reported truncated",
            config.max_stack
        ));
    }
    if !kernel_addresses_visible && !config.user_only {
        warnings.push(format!(
            "kernel addresses are hidden (kptr_restrict={kptr_restrict}, perf_event_paranoid={paranoid}); kernel frames will be shown as raw addresses"
        ));
    }
    Ok(Permissions {
        paranoid,
        kptr_restrict,
        is_root,
        kernel_addresses_visible,
        warnings,
    })
}

pub(crate) fn check_limits(config: &Config) -> Result<()> {
    if let Some(max) = procfs::sysctl_i64("/proc/sys/kernel/perf_event_max_sample_rate")
        && config.frequency > max.max(0) as u64
    {
        return Err(Error::FrequencyTooHigh {
            freq: config.frequency,
            max: max as u64,
        });
    }
    Ok(())
}

const MAX_STACK_SYSCTL: &str = "/proc/sys/kernel/perf_event_max_stack";

/// The deepest callchain asked of the kernel, however deep `--max-stack` goes (the default
/// depth): frames beyond it come from the stack copy and the thread's earlier samples (see
/// `unwind`), which cost the workload nothing.
///
/// The kernel walks the chain in the sampling interrupt, on the workload's time. A
/// 10,000-level recursion built with frame pointers (0.87 s of CPU alone) took 0.89-0.97 s
/// under pkgmon at 4 kHz with chains of 127 frames, 1.14 s with 1,024, 1.38-1.48 s with
/// 2,048 and 3.8 s with 4,096; with 6,000 and 8,000 its innermost function had 23.1% and
/// 33.5% of the samples for 32.0% and 43.0% of the time. And a sample record's size is a
/// 16-bit field: with its other fields (8 bytes of header, 48 of identifier, ip, pid/tid,
/// time, cpu and period, 8 for the chain's length, 32 of user registers, 16 around the stack
/// copy, which the kernel shrinks to what is left) a chain of more than 8,169 frames and 8
/// context markers does not fit, and the kernel loses the sample without counting it
/// (`--max-stack 9000`: the innermost function, 51.8% of the run, got no sample, none lost).
pub const MAX_KERNEL_CHAIN: u16 = 1024;

/// `kernel.perf_event_max_stack` raised for one run; [`MaxStackRaise::restore`] puts it back.
/// Dropping it puts the limit back too, for runs that fail before they end; a pkgmon killed
/// (SIGKILL) does neither, so a guardian process puts it back then (see [`spawn_guardian`]).
#[derive(Debug)]
pub(crate) struct MaxStackRaise {
    previous: i64,
    raised: i64,
    restored: bool,
    /// The write end of the guardian's pipe: closed when this run is done with the limit.
    guardian: Option<std::os::fd::OwnedFd>,
}

impl MaxStackRaise {
    /// Puts the limit back, if it still is what this run set (another session may have changed
    /// it since). Returns a note for the user when that fails. The kernel refuses while any
    /// callchain event is open, so call it after closing the events.
    pub(crate) fn restore(&mut self) -> Option<String> {
        if std::mem::replace(&mut self.restored, true)
            || procfs::sysctl_i64(MAX_STACK_SYSCTL) != Some(self.raised)
        {
            self.guardian = None;
            return None;
        }
        let written = std::fs::write(MAX_STACK_SYSCTL, self.previous.to_string());
        // The guardian finds the limit put back and leaves, or keeps trying (see below).
        self.guardian = None;
        let e = written.err()?;
        let why = if e.raw_os_error() == Some(libc::EBUSY) {
            "another perf session uses callchains".to_owned()
        } else {
            e.to_string()
        };
        Some(format!(
            "kernel.perf_event_max_stack stays {} for now (it was {}): {why}; a background \
             process puts {} back as soon as the kernel lets it (it tries for an hour), or \
             `sysctl kernel.perf_event_max_stack={}` then",
            self.raised, self.previous, self.previous, self.previous
        ))
    }
}

/// `kernel.perf_event_max_stack` raised ahead of a run by [`raise_callchain_limit`]; put back
/// by [`CallchainLimit::restore`] or when dropped, which must come after every callchain user
/// of the run (perf events, BPF stack maps) is closed.
#[derive(Debug)]
pub struct CallchainLimit(MaxStackRaise);

impl CallchainLimit {
    /// Puts the limit back, if it still is what this run set; a note for the user when the
    /// kernel refuses (another perf session holds callchain buffers: a guardian process
    /// puts it back once they are gone).
    pub fn restore(mut self) -> Option<String> {
        self.0.restore()
    }
}

/// Raises `kernel.perf_event_max_stack` to `depth` frames (at most [`MAX_KERNEL_CHAIN`]) for a
/// run that loads other callchain users before its sampler: while any is open (a BPF stack
/// map of `--blocking` too), the kernel refuses to change the limit, so such runs kept 127
/// frames, and the sampler's own restore, done before the map was closed, failed and left
/// the limit raised. None when nothing is raised (the limit suffices, not root, or refused):
/// the sampler then fits the depth itself and says why.
pub fn raise_callchain_limit(depth: u16) -> Option<CallchainLimit> {
    let (_, raise) = fit_max_stack(depth.clamp(1, MAX_KERNEL_CHAIN), &mut Vec::new());
    raise.map(CallchainLimit)
}

/// The callchain depth a run can have: `requested`, after raising the kernel's limit when it
/// is lower and we may (root); otherwise the kernel's limit, with a note saying so.
pub(crate) fn fit_max_stack(
    requested: u16,
    notes: &mut Vec<String>,
) -> (u16, Option<MaxStackRaise>) {
    let Some(limit) = procfs::sysctl_i64(MAX_STACK_SYSCTL) else {
        return (requested, None);
    };
    if i64::from(requested) <= limit {
        return (requested, None);
    }
    let kept = u16::try_from(limit.max(1)).unwrap_or(u16::MAX);
    // Safety: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        notes.push(format!(
            "callchains are limited to kernel.perf_event_max_stack={limit} frames (asked for \
             {requested}; root raises it for the run): deeper stacks are reported truncated"
        ));
        return (kept, None);
    }
    // The guardian first: raised without one, a pkgmon killed at once would leave the limit.
    let guardian = spawn_guardian(limit, i64::from(requested));
    match std::fs::write(MAX_STACK_SYSCTL, requested.to_string()) {
        Ok(()) => (
            requested,
            Some(MaxStackRaise {
                previous: limit,
                raised: i64::from(requested),
                restored: false,
                guardian,
            }),
        ),
        Err(e) => {
            let why = if e.raw_os_error() == Some(libc::EBUSY) {
                "the kernel refuses while other perf sessions run".to_owned()
            } else {
                e.to_string()
            };
            notes.push(format!(
                "callchains are limited to kernel.perf_event_max_stack={limit} frames: it \
                 could not be raised to {requested} ({why}); deeper stacks are reported \
                 truncated"
            ));
            (kept, None)
        }
    }
}

impl Drop for MaxStackRaise {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// How often the guardian tries: 50 times 0.1 s, then each second for an hour.
const GUARDIAN_ATTEMPTS: u32 = 50 + 3600;

/// Starts a process that waits until this one closes the returned pipe end, which it does when
/// done with the raised limit or by dying, then, if `kernel.perf_event_max_stack` still is
/// `raised`, puts `previous` back: every 0.1 s for 5 s, then every second for an hour while
/// other perf sessions keep it busy (another pkgmon that found the limit raised and uses it;
/// it refits if the limit drops before its events are open).
/// A pkgmon killed by SIGKILL left the limit raised for good, and the next run took the raised
/// value for the one to put back. The process is a grandchild (no zombie is left to reap), in
/// a session of its own (Ctrl-C on the terminal does not reach it), with no other descriptor
/// open. None if it cannot be started: the run goes on without it.
fn spawn_guardian(previous: i64, raised: i64) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // Everything the child uses is made before fork: after it, in a threaded process, the
    // child may only make async-signal-safe calls (no allocation).
    let previous_text = format!("{previous}\n");
    let raised_text = raised.to_string();
    let path = c"/proc/sys/kernel/perf_event_max_stack";
    let mut fds = [0 as libc::c_int; 2];
    // Safety: pipe2 writes two descriptors into the array given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // Safety: both descriptors are new and owned here.
    let (read_end, write_end) = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    // Safety: the child and grandchild call only async-signal-safe functions (close_range,
    // setsid, fork, read, open, write, close, nanosleep, _exit) on memory prepared before the
    // fork, and never return into Rust code.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return None;
    }
    if child == 0 {
        // Safety: see above.
        unsafe { guardian_child(fds, path, previous_text.as_bytes(), raised_text.as_bytes()) }
    }
    drop(read_end);
    let mut status = 0;
    // Safety: reaping the child just forked (it exits at once, leaving the grandchild).
    unsafe { libc::waitpid(child, &mut status, 0) };
    Some(write_end)
}

/// The forked side of [`spawn_guardian`].
///
/// # Safety
///
/// Only to be called in a child just forked; it never returns.
unsafe fn guardian_child(
    fds: [libc::c_int; 2],
    path: &std::ffi::CStr,
    previous: &[u8],
    raised: &[u8],
) -> ! {
    // Safety (the whole body): async-signal-safe calls on memory made before the fork.
    unsafe {
        if libc::fork() != 0 {
            libc::_exit(0);
        }
        libc::setsid();
        // Nothing of pkgmon's stays open here (perf events would keep the limit busy, and a
        // pipe on standard output would wait for this process): only the pipe's read end.
        let keep = fds[0] as libc::c_uint;
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
        let mut byte = [0u8; 1];
        loop {
            let n = libc::read(fds[0], byte.as_mut_ptr().cast(), 1);
            if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
                break;
            }
        }
        for attempt in 0..GUARDIAN_ATTEMPTS {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                libc::_exit(0);
            }
            let mut buf = [0u8; 32];
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            libc::close(fd);
            let mut len = n.max(0) as usize;
            while len > 0 && buf[len - 1].is_ascii_whitespace() {
                len -= 1;
            }
            if buf[..len] != *raised {
                libc::_exit(0);
            }
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                let w = libc::write(fd, previous.as_ptr().cast(), previous.len());
                libc::close(fd);
                if w == previous.len() as isize {
                    libc::_exit(0);
                }
            }
            let pause = libc::timespec {
                tv_sec: if attempt < 50 { 0 } else { 1 },
                tv_nsec: if attempt < 50 { 100_000_000 } else { 0 },
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        libc::_exit(0)
    }
}

/// How much ring buffer memory (all CPUs together, in KiB) we may lock: None for root (no
/// limit), else `kernel.perf_event_mlock_kb` per CPU plus `RLIMIT_MEMLOCK`.
pub(crate) fn mlock_limit_kib() -> Option<u64> {
    // Safety: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return None;
    }
    let ncpu = procfs::online_cpus().len() as u64;
    let mlock_kb = procfs::sysctl_i64("/proc/sys/kernel/perf_event_mlock_kb").unwrap_or(516);
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // Safety: `rl` is a valid out-pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) };
    Some(mlock_kb.max(0) as u64 * ncpu + rl.rlim_cur / 1024)
}

/// Ring buffer data pages per CPU for `config`: as asked, or enough for about a quarter of a
/// second of samples, from 1 to 32 MiB (less when the locked-memory limit allows less). Every
/// sample takes the whole stack copy size in the ring (the kernel reserves it, then writes only
/// the live part of the stack).
pub(crate) fn ring_pages(config: &Config) -> usize {
    if config.mmap_pages > 0 {
        return config.mmap_pages.next_power_of_two();
    }
    let page = page_size() as u64;
    let record =
        256 + 8 * u64::from(config.max_stack.min(256)) + u64::from(config.user_stack_bytes);
    let mut bytes = (config.frequency.saturating_mul(record) / 4).clamp(1 << 20, 32 << 20);
    if !config.tracepoints.is_empty() {
        // A record per system call or switch, hundreds of thousands a second.
        bytes = 32 << 20;
    }
    let mut pages = (bytes.div_ceil(page) as usize).next_power_of_two();
    if let Some(limit_kib) = mlock_limit_kib() {
        let ncpu = procfs::online_cpus().len().max(1) as u64;
        // One page per ring is the metadata page; the data pages are a power of two.
        let fits = (limit_kib * 1024 / ncpu / page).saturating_sub(1).max(1);
        let floor = 1usize << (63 - fits.leading_zeros());
        pages = pages.min(floor);
    }
    pages
}

fn kernel_release() -> String {
    crate::snapshot::kernel_release().unwrap_or_default()
}

/// Turns an errno from `perf_event_open` into an explained error.
pub(crate) fn open_error(e: io::Error, pid: i32, cpu: i32, config: &Config) -> Error {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => Error::Refused {
            paranoid: paranoid(),
            hint: if config.user_only {
                ""
            } else {
                " (or sample user space only)"
            },
            source: e,
        },
        Some(libc::EMFILE | libc::ENFILE) => Error::TooManyFiles(e),
        Some(libc::ESRCH) => Error::NoSuchProcess { pid },
        Some(libc::EINVAL | libc::EOVERFLOW) => match check_limits(config) {
            Err(limit) => limit,
            Ok(()) => Error::Open {
                pid,
                cpu,
                kernel: kernel_release(),
                source: e,
            },
        },
        _ => Error::Open {
            pid,
            cpu,
            kernel: kernel_release(),
            source: e,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_refusals_are_explained() {
        let c = Config {
            frequency: 100_000_000,
            ..Config::default()
        };
        let e = preflight(&c).expect_err("frequency above the kernel limit");
        assert!(
            e.to_string()
                .starts_with("frequency 100000000 Hz exceeds kernel.perf_event_max_sample_rate="),
            "{e}"
        );
        let refused = Error::Refused {
            paranoid: 2,
            hint: "",
            source: io::Error::from_raw_os_error(libc::EACCES),
        };
        assert_eq!(
            refused.to_string(),
            "perf_event_open was refused (perf_event_paranoid=2): run as root or set kernel.perf_event_paranoid to 1 or lower"
        );
    }
}
