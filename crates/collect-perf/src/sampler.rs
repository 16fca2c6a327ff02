//! The public sampling API: launch or attach, drain the rings, return a [`Recording`].

use std::collections::BTreeSet;
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::aggregate::Aggregator;
use crate::error::{Error, Result};
use crate::procfs;
use crate::recording::TracepointInfo;
use crate::recording::{ChildExit, CounterKind, Recording, SideBand, SideRecord};
use crate::ring::{Ring, page_size};
use crate::sys;
use crate::taskstats;
use crate::tracefs::{Tracefs, TracepointRequest};

/// The default size of the user stack copy: the most the kernel copies, so that programs
/// built without frame pointers unwind through deep recursion and large local arrays. The
/// kernel copies only the live part of the stack (up to its top), so a shallow stack costs
/// what it holds; README shows the cost.
pub const DEFAULT_USER_STACK_BYTES: u32 = MAX_USER_STACK_BYTES;

/// The largest user stack copy the kernel takes (a sample record must fit in 64 KiB).
pub const MAX_USER_STACK_BYTES: u32 = 65528;

/// Sampling options.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Samples per second of CPU time per thread. Default is 1000.
    pub frequency: u64,
    /// Bytes of user stack copied with each sample, for unwinding user frames from
    /// `.eh_frame` (rounded up to a multiple of 8; at most [`MAX_USER_STACK_BYTES`]). 0 turns
    /// the copy off: stacks then come from frame pointers alone. Default is
    /// [`DEFAULT_USER_STACK_BYTES`].
    pub user_stack_bytes: u32,
    /// Maximum callchain depth, kernel and user frames together. When it exceeds
    /// `kernel.perf_event_max_stack`, a run as root raises that limit for its duration and
    /// puts it back afterwards; otherwise (or if the kernel refuses, as it does while other
    /// perf sessions run) the kernel's limit applies and [`Sampler::notes`] says so.
    /// Default is 1024.
    pub max_stack: u16,
    /// Data pages per CPU ring buffer (rounded up to a power of two); 0 sizes them so that
    /// about a quarter of a second of samples fits, from 1 to 32 MiB. Default is 0.
    pub mmap_pages: usize,
    /// Sample user space only (works with `perf_event_paranoid=2`). Default is false.
    pub user_only: bool,
    /// Stop after this long even if processes remain. Default is None (run to the end).
    pub duration: Option<Duration>,
    /// Longest wait between drains of the rings. Default is 100 ms.
    pub poll_interval: Duration,
    /// Sample every task on every CPU (`pid = -1`), not only the command or the attached
    /// processes and their descendants; needs root or `perf_event_paranoid` ≤ 0. The run then
    /// ends when the launched command exits, at the duration, or at the stop flag. Default is
    /// false.
    pub system_wide: bool,
    /// Let a launched command run on if the collector dies (is SIGKILLed). Default is false:
    /// the command gets SIGKILL when the thread that launched it ends (`PR_SET_PDEATHSIG`), so
    /// that it never runs on unprofiled and unnoticed.
    pub keep_running: bool,
    /// Tracepoints recorded besides the samples, on the same rings and in time order with
    /// them ([`Recording::traces`]). tracefs is mounted if it is not (root), and the recording
    /// notes it. Default is none.
    pub tracepoints: Vec<TracepointRequest>,
    /// Record when each followed thread leaves a CPU (blocked or preempted) and gets it back
    /// ([`SideBand::Switch`]). Default is false.
    pub context_switches: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            frequency: 1000,
            user_stack_bytes: DEFAULT_USER_STACK_BYTES,
            max_stack: 1024,
            mmap_pages: 0,
            user_only: false,
            duration: None,
            poll_interval: Duration::from_millis(100),
            system_wide: false,
            keep_running: false,
            tracepoints: Vec::new(),
            context_switches: false,
        }
    }
}

/// How a run is going, passed to the callback of [`Sampler::run_with`] after each drain.
#[derive(Debug)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// Time since [`Sampler::run_with`] started.
    pub elapsed: Duration,
    /// Samples so far.
    pub samples: u64,
    /// Samples lost so far (from LOST records).
    pub lost: u64,
    /// Processes seen so far.
    pub processes: usize,
    /// Processes that appeared since the last call: pid and command name (empty if not known
    /// yet).
    pub new_processes: &'a [(u32, String)],
}

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

fn paranoid() -> i32 {
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

fn check_limits(config: &Config) -> Result<()> {
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

/// `kernel.perf_event_max_stack` raised for one run; [`MaxStackRaise::restore`] puts it back.
/// Dropping it puts the limit back too, for runs that fail before they end.
#[derive(Debug)]
struct MaxStackRaise {
    previous: i64,
    raised: i64,
    restored: bool,
}

impl MaxStackRaise {
    /// Puts the limit back, if it still is what this run set (another session may have changed
    /// it since). Returns a note for the user when that fails. The kernel refuses while any
    /// callchain event is open, so call it after closing the events.
    fn restore(&mut self) -> Option<String> {
        if std::mem::replace(&mut self.restored, true)
            || procfs::sysctl_i64(MAX_STACK_SYSCTL) != Some(self.raised)
        {
            return None;
        }
        let e = std::fs::write(MAX_STACK_SYSCTL, self.previous.to_string()).err()?;
        Some(format!(
            "kernel.perf_event_max_stack stays {} (it was {}): {e}; put it back with \
             `sysctl kernel.perf_event_max_stack={}` once no perf session runs",
            self.raised, self.previous, self.previous
        ))
    }
}

/// The callchain depth a run can have: `requested`, after raising the kernel's limit when it
/// is lower and we may (root); otherwise the kernel's limit, with a note saying so.
fn fit_max_stack(requested: u16, notes: &mut Vec<String>) -> (u16, Option<MaxStackRaise>) {
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
    match std::fs::write(MAX_STACK_SYSCTL, requested.to_string()) {
        Ok(()) => (
            requested,
            Some(MaxStackRaise {
                previous: limit,
                raised: i64::from(requested),
                restored: false,
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

/// How much ring buffer memory (all CPUs together, in KiB) we may lock: None for root (no
/// limit), else `kernel.perf_event_mlock_kb` per CPU plus `RLIMIT_MEMLOCK`.
fn mlock_limit_kib() -> Option<u64> {
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
fn ring_pages(config: &Config) -> usize {
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
    procfs::text("/proc/sys/kernel/osrelease", 4096)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Turns an errno from `perf_event_open` into an explained error.
fn open_error(e: io::Error, pid: i32, cpu: i32, config: &Config) -> Error {
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

pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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

/// A set of per-CPU cpu-clock events with their rings, following a command or processes.
#[derive(Debug)]
pub struct Sampler {
    config: Config,
    events: Vec<OwnedFd>,
    /// The CPU of each of `events`.
    event_cpus: Vec<i32>,
    /// Page-fault, context-switch and migration events, tracepoints and the switch event,
    /// writing into the cpu-clock rings.
    counters: Vec<OwnedFd>,
    /// Counting-mode twins of tracepoints: (index in `recording.tracepoints`, event).
    twins: Vec<(usize, OwnedFd)>,
    /// Pids seen in the records, read from /proc at each poll while they live.
    watched: BTreeSet<u32>,
    /// Every pid reported through [`Progress::new_processes`].
    ever_seen: BTreeSet<u32>,
    /// System-wide mode: the processes asked for and their descendants, the only ones watched
    /// and reported.
    follow: Option<BTreeSet<u32>>,
    /// How far `watched` has looked into the recording.
    seen_samples: usize,
    seen_side_band: usize,
    last_proc_poll: Option<Instant>,
    rings: Vec<Ring>,
    child: Option<u32>,
    /// Taskstats exit records, when the kernel allows them (root).
    taskstats: Option<taskstats::Listener>,
    recording: Recording,
    /// Dropped last: the kernel lets the limit go back only once the events are closed.
    max_stack_raise: Option<MaxStackRaise>,
}

impl Sampler {
    fn open_events(pids: &[i32], config: &Config, on_exec: bool) -> Result<Sampler> {
        let mut notes = Vec::new();
        let (max_stack, max_stack_raise) = fit_max_stack(config.max_stack.max(1), &mut notes);
        let stack_user = config
            .user_stack_bytes
            .min(MAX_USER_STACK_BYTES)
            .next_multiple_of(8);
        let pages = ring_pages(&Config {
            max_stack,
            user_stack_bytes: stack_user,
            ..config.clone()
        });
        let spec = sys::EventSpec {
            freq: config.frequency,
            stack_user,
            max_stack,
            user_only: config.user_only,
            enable_on_exec: on_exec,
            inherit: !config.system_wide,
            wakeup_watermark: (pages * page_size() / 4) as u32,
        };
        let mut events = Vec::new();
        let mut event_cpus = Vec::new();
        let mut counters = Vec::new();
        let mut counter_ids = Vec::new();
        let mut rings = Vec::new();
        let mut tracepoints = Vec::new();
        if !config.tracepoints.is_empty() {
            let tracefs = Tracefs::find_or_mount()?;
            if tracefs.mounted_here() {
                notes.push(format!(
                    "tracefs was not mounted: mounted it at {} (left mounted)",
                    tracefs.root().display()
                ));
            }
            for t in &config.tracepoints {
                let format = tracefs.event(&t.system, &t.name)?;
                tracepoints.push(TracepointInfo {
                    format,
                    filter: t.filter.clone(),
                    kernel_chain: t.kernel_chain,
                    user_chain: t.user_chain,
                    user_stack_bytes: t.user_stack_bytes,
                    counted: t.count.then_some(0),
                    received: 0,
                    sample_type: sys::tracepoint_sample_type(
                        sys::ChainParts {
                            kernel: t.kernel_chain,
                            user: t.user_chain,
                        },
                        t.user_stack_bytes,
                    ),
                });
            }
        }
        let mut trace_ids = Vec::new();
        let mut twins = Vec::new();
        for cpu in procfs::online_cpus() {
            let mut owner: Option<usize> = None;
            for &pid in pids {
                let mut attr = sys::cpu_clock_attr(&spec);
                let fd =
                    sys::open(&mut attr, pid, cpu).map_err(|e| open_error(e, pid, cpu, config))?;
                match owner {
                    None => {
                        let ring = Ring::map(&fd, pages).map_err(|e| {
                            if e.raw_os_error() == Some(libc::EPERM) {
                                Error::MlockLimit {
                                    kib: ((pages + 1) * page_size() / 1024) as u64,
                                    limit_kib: procfs::sysctl_i64(
                                        "/proc/sys/kernel/perf_event_mlock_kb",
                                    )
                                    .unwrap_or(0)
                                    .max(0) as u64,
                                    source: Some(e),
                                }
                            } else {
                                Error::io(format!("cannot map the ring buffer of cpu {cpu}"), e)
                            }
                        })?;
                        rings.push(ring);
                        owner = Some(events.len());
                    }
                    Some(i) => sys::set_output(&fd, &events[i]).map_err(|e| {
                        Error::io(format!("cannot share the ring buffer of cpu {cpu}"), e)
                    })?,
                }
                let ring_owner = owner.unwrap_or(events.len());
                events.push(fd);
                event_cpus.push(cpu);
                for (config_id, kind) in [
                    (sys::PERF_COUNT_SW_PAGE_FAULTS, CounterKind::PageFault),
                    (
                        sys::PERF_COUNT_SW_CONTEXT_SWITCHES,
                        CounterKind::ContextSwitch,
                    ),
                    (sys::PERF_COUNT_SW_CPU_MIGRATIONS, CounterKind::CpuMigration),
                ] {
                    let mut attr = sys::counter_attr(config_id, &spec);
                    let fd = sys::open(&mut attr, pid, cpu)
                        .map_err(|e| open_error(e, pid, cpu, config))?;
                    sys::set_output(&fd, &events[ring_owner]).map_err(|e| {
                        Error::io(format!("cannot share the ring buffer of cpu {cpu}"), e)
                    })?;
                    let id = sys::event_id(&fd)
                        .map_err(|e| Error::io("cannot read a perf event's id", e))?;
                    counter_ids.push((id, kind));
                    counters.push(fd);
                }
                let ring = &events[ring_owner];
                if config.context_switches {
                    let mut attr = sys::switch_attr(&spec);
                    let fd = sys::open(&mut attr, pid, cpu)
                        .map_err(|e| open_error(e, pid, cpu, config))?;
                    sys::set_output(&fd, ring).map_err(|e| {
                        Error::io(format!("cannot share the ring buffer of cpu {cpu}"), e)
                    })?;
                    counters.push(fd);
                }
                for (i, (t, info)) in config.tracepoints.iter().zip(&tracepoints).enumerate() {
                    // A CPU-wide tracepoint is opened once per CPU, with the first pid.
                    if t.all_tasks && pid != pids[0] {
                        continue;
                    }
                    let (tpid, tspec) = if t.all_tasks {
                        let mut s = spec.clone();
                        (s.inherit, s.enable_on_exec) = (false, false);
                        (-1, s)
                    } else {
                        (pid, spec.clone())
                    };
                    let opened = open_tracepoint(t, info, tpid, cpu, ring, &tspec, config)?;
                    trace_ids.push((opened.id, i as u32));
                    if t.all_tasks && on_exec {
                        // enable_on_exec means nothing to a CPU-wide event: it starts now, and
                        // the launcher's records before the exec are told apart by pid.
                        sys::set_enabled(&opened.sampled, true)
                            .map_err(|e| Error::io("cannot enable the events", e))?;
                    }
                    counters.push(opened.sampled);
                    if let Some(twin) = opened.twin {
                        if t.all_tasks && on_exec {
                            sys::set_enabled(&twin, true)
                                .map_err(|e| Error::io("cannot enable the events", e))?;
                        }
                        twins.push((i, twin));
                    }
                }
            }
        }
        let (taskstats, taskstats_refused) =
            match taskstats::Listener::register(&procfs::online_cpus()) {
                Ok(l) => (Some(l), None),
                Err(e) => (None, Some(e.to_string())),
            };
        let recording = Recording {
            taskstats_refused,
            notes,
            frequency: config.frequency,
            user_stack_bytes: spec.stack_user,
            max_stack: spec.max_stack,
            start_time: monotonic_ns(),
            start_realtime: realtime_ns(),
            counter_ids,
            tracepoints,
            trace_ids,
            ..Recording::default()
        };
        Ok(Sampler {
            config: config.clone(),
            events,
            event_cpus,
            counters,
            twins,
            watched: BTreeSet::new(),
            ever_seen: BTreeSet::new(),
            follow: None,
            seen_samples: 0,
            seen_side_band: 0,
            last_proc_poll: None,
            rings,
            child: None,
            taskstats,
            recording,
            max_stack_raise,
        })
    }

    /// Starts `argv` stopped, opens the events on it and lets it `exec`, which enables them.
    ///
    /// The child resets SIGINT to its default so Ctrl-C reaches it even if the caller ignores
    /// it. Returns an error if the command cannot be run (errno from `execvp`) or the events
    /// cannot be opened (see [`preflight`] for the messages).
    pub fn launch(argv: &[OsString], config: &Config) -> Result<Sampler> {
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
        let die_with_parent = !config.keep_running;
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
        let reap = |pid: i32| {
            // Safety: `pid` is our child; killing and reaping it has no memory effects.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        };
        let opened = if config.system_wide {
            Sampler::open_events(&[-1], config, false).and_then(|mut s| {
                s.enable()?;
                s.follow = Some(BTreeSet::from([pid as u32]));
                Ok(s)
            })
        } else {
            Sampler::open_events(&[pid], config, true)
        };
        let mut sampler = match opened {
            Ok(s) => s,
            Err(e) => {
                reap(pid);
                return Err(e);
            }
        };
        sampler.child = Some(pid as u32);
        // Safety: writing one byte from a live local to our end of the pipe.
        let w = unsafe { libc::write(go_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        if w != 1 {
            sampler.child = None;
            reap(pid);
            return Err(spawn_err(io::Error::last_os_error()));
        }
        drop(go_w);
        let mut errno = [0u8; 4];
        let n = loop {
            // Safety: reading at most 4 bytes into a 4-byte local.
            let n = unsafe { libc::read(err_r.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break n;
        };
        if n == 4 {
            sampler.child = None;
            reap(pid);
            return Err(spawn_err(io::Error::from_raw_os_error(i32::from_ne_bytes(
                errno,
            ))));
        }
        Ok(sampler)
    }

    /// Attaches to running processes: every current thread of each pid, and (through
    /// `inherit`) everything they start from now on.
    ///
    /// Existing executable mappings and thread names are synthesized from /proc with time 0.
    /// Threads created while attaching may be missed. Returns an error if a pid does not exist
    /// or the events cannot be opened.
    pub fn attach(pids: &[i32], config: &Config) -> Result<Sampler> {
        let mut tids = Vec::new();
        for &pid in pids {
            tids.extend(procfs::threads(pid).map_err(|_| Error::NoSuchProcess { pid })?);
        }
        if config.system_wide {
            tids = vec![-1];
        } else if tids.is_empty() {
            return Err(Error::EmptyCommand);
        }
        let mut s = Sampler::open_events(&tids, config, false)?;
        if config.system_wide {
            s.follow = Some(pids.iter().map(|&p| p as u32).collect());
        }
        s.enable()?;
        // Read /proc only after enabling, so a mapping made meanwhile shows up in at least one
        // of the two; records from the rings override these snapshots (time 0) in replay.
        let mut synth = Vec::new();
        for &pid in pids {
            for tid in procfs::threads(pid).unwrap_or_default() {
                let comm =
                    procfs::text(&format!("/proc/{pid}/task/{tid}/comm"), 4096).unwrap_or_default();
                synth.push(SideBand::Comm {
                    pid: pid as u32,
                    tid: tid as u32,
                    comm: comm.trim_end().to_owned(),
                    exec: false,
                });
            }
            let maps =
                procfs::text(&format!("/proc/{pid}/maps"), procfs::LARGE).unwrap_or_default();
            synth.extend(parse_maps(pid as u32, &maps));
        }
        s.recording
            .side_band
            .extend(synth.into_iter().map(|kind| SideRecord {
                time: 0,
                cpu: 0,
                kind,
            }));
        Ok(s)
    }

    fn enable(&self) -> Result<()> {
        for fd in self.all_events() {
            sys::set_enabled(fd, true).map_err(|e| Error::io("cannot enable the events", e))?;
        }
        Ok(())
    }

    /// Every event of the run but the twins: samplers, counters, tracepoints.
    fn all_events(&self) -> impl Iterator<Item = &OwnedFd> {
        self.events
            .iter()
            .chain(&self.counters)
            .chain(self.twins.iter().map(|(_, fd)| fd))
    }

    /// Things the user should know about how this run samples (a callchain limit that could
    /// not be raised, say), as sentences; the recording keeps them too.
    pub fn notes(&self) -> &[String] {
        &self.recording.notes
    }

    /// The pid of the launched command, if any.
    pub fn child_pid(&self) -> Option<u32> {
        self.child
    }

    fn drain(&mut self) {
        let rec = &mut self.recording;
        for ring in &mut self.rings {
            ring.drain(|r| rec.push_raw(r));
        }
        self.drain_taskstats();
    }

    fn drain_taskstats(&mut self) {
        if let Some(l) = &mut self.taskstats {
            l.drain(monotonic_ns, &mut self.recording.task_exits);
            self.recording.taskstats_overflows = l.overflows;
        }
    }

    /// Reads /proc for every process the records have named, at most once per poll interval,
    /// keeping the latest reading of each: processes other than the launched command are reaped
    /// by their own parents, so this is the last chance to see their counters.
    fn poll_proc(&mut self) {
        if self
            .last_proc_poll
            .is_some_and(|t| t.elapsed() < self.config.poll_interval)
        {
            return;
        }
        self.last_proc_poll = Some(Instant::now());
        let rec = &mut self.recording;
        let now = monotonic_ns();
        self.watched.retain(|&pid| {
            let Some(reading) = procfs::reading(pid, now) else {
                return false;
            };
            // A zombie's /proc entry is still readable; a pid seen exiting stays watched until
            // its entry goes, which costs one failed read.
            match rec
                .proc_readings
                .iter_mut()
                .find(|r| r.pid == pid && r.start_ticks == reading.start_ticks)
            {
                Some(old) => *old = reading,
                None => rec.proc_readings.push(reading),
            }
            true
        });
    }

    fn report(&mut self, started: Instant, progress: &mut impl FnMut(&Progress<'_>)) {
        let new = self.note_new_pids();
        progress(&Progress {
            elapsed: started.elapsed(),
            samples: self.recording.sample_count,
            lost: self.recording.lost,
            processes: self.ever_seen.len(),
            new_processes: &new,
        });
    }

    /// Adds the pids named by records drained since the last call to the watched set, and
    /// returns the ones never seen before, with their command name when a record gave it.
    fn note_new_pids(&mut self) -> Vec<(u32, String)> {
        let rec = &self.recording;
        let mut new = Vec::new();
        let (watched, seen) = (&mut self.watched, &mut self.ever_seen);
        let mut add = |pid: u32, follow: &Option<BTreeSet<u32>>| {
            if follow.as_ref().is_some_and(|f| !f.contains(&pid)) {
                return;
            }
            if seen.insert(pid) {
                watched.insert(pid);
                new.push(pid);
            }
        };
        for r in &rec.side_band[self.seen_side_band..] {
            match r.kind {
                SideBand::Fork { pid, ppid, .. } => {
                    if let Some(f) = self.follow.as_mut()
                        && f.contains(&ppid)
                    {
                        f.insert(pid);
                    }
                    add(pid, &self.follow);
                }
                SideBand::Comm { pid, .. } => add(pid, &self.follow),
                _ => {}
            }
        }
        for s in &rec.samples[self.seen_samples..] {
            add(s.pid, &self.follow);
        }
        let named: Vec<(u32, String)> = new
            .into_iter()
            .map(|pid| {
                let comm = rec.side_band[..]
                    .iter()
                    .rev()
                    .find_map(|r| match &r.kind {
                        SideBand::Comm {
                            pid: p, tid, comm, ..
                        } if *p == pid && *tid == pid => Some(comm.clone()),
                        _ => None,
                    })
                    .or_else(|| {
                        procfs::text(&format!("/proc/{pid}/comm"), 4096)
                            .map(|c| c.trim_end().to_owned())
                    })
                    .unwrap_or_default();
                (pid, comm)
            })
            .collect();
        self.seen_samples = rec.samples.len();
        self.seen_side_band = rec.side_band.len();
        named
    }

    /// Reaps the launched child if it exited (or waits for it if `block`), reading its /proc
    /// counters first while it is a zombie.
    fn collect_child(&mut self, block: bool) {
        let Some(pid) = self.child else { return };
        // Safety: zeroed siginfo_t is a valid out-buffer for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOWAIT | if block { 0 } else { libc::WNOHANG };
        // Safety: `info` is a valid out-pointer; `pid` is our child.
        let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, flags) };
        // Safety: after a successful waitid the pid field is initialized (0 if none exited).
        if r < 0 || unsafe { info.si_pid() } == 0 {
            return;
        }
        let counters = procfs::counters(pid);
        let mut status = 0;
        // Safety: zeroed rusage is a valid out-buffer.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // Safety: valid out-pointers; reaping our own child.
        unsafe { libc::wait4(pid as i32, &mut status, 0, &mut ru) };
        self.child = None;
        self.recording.child = Some(ChildExit {
            pid,
            code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            counters,
            max_rss_kib: ru.ru_maxrss as u64,
        });
    }

    /// Ends a launched command that is still running: SIGTERM, so that it can clean up as it
    /// would on Ctrl-C, then SIGKILL if it has not exited within a second.
    fn end_child(&mut self) {
        let Some(pid) = self.child else { return };
        // Safety: `pid` is our unreaped child, so it cannot have been reused.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        for _ in 0..100 {
            self.collect_child(false);
            if self.child.is_none() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Safety: as above; still unreaped.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }

    /// Drains the rings until every ring reports POLLHUP (the whole process tree is gone),
    /// `stop` becomes true, or the configured duration passes.
    ///
    /// When stopped early, the events are disabled, the rings drained once more, and a launched
    /// command that is still running is sent SIGTERM (SIGKILL if it has not exited a second
    /// later) and reaped. Returns an error only if `poll` fails.
    pub fn run(self, stop: &AtomicBool) -> Result<Recording> {
        self.run_with(stop, |_| {})
    }

    /// Like [`Sampler::run`], calling `progress` after each drain of the rings (about every
    /// poll interval) with counts so far and the processes that appeared.
    pub fn run_with(
        self,
        stop: &AtomicBool,
        progress: impl FnMut(&Progress<'_>),
    ) -> Result<Recording> {
        self.run_into(stop, progress, None)
    }

    /// Like [`Sampler::run_with`], but hands every record to `agg` as soon as no earlier one
    /// can still arrive (the rings of different CPUs are drained in turn, so a record is passed
    /// on once a whole later round of draining has begun), and keeps none: memory stays
    /// proportional to what `agg` holds (distinct stacks and processes), not to the samples.
    /// The recording returned has everything but the samples, side-band records and counted
    /// events, which went to `agg`.
    pub fn run_aggregating(
        self,
        stop: &AtomicBool,
        progress: impl FnMut(&Progress<'_>),
        agg: &mut Aggregator,
    ) -> Result<Recording> {
        self.run_into(stop, progress, Some(agg))
    }

    /// Passes on the records stamped before `upto` (all with `u64::MAX`).
    fn release(&mut self, upto: u64, agg: &mut Option<&mut Aggregator>) {
        if let Some(agg) = agg {
            self.recording.release(upto, |r, e| agg.feed(r, e));
            self.seen_samples = self.recording.samples.len();
            self.seen_side_band = self.recording.side_band.len();
        }
    }

    fn run_into(
        mut self,
        stop: &AtomicBool,
        mut progress: impl FnMut(&Progress<'_>),
        mut agg: Option<&mut Aggregator>,
    ) -> Result<Recording> {
        /// How long before the previous round of draining a record must be stamped to be
        /// passed on: the kernel writes a record within microseconds of stamping it.
        const SETTLE_NS: u64 = 5_000_000;
        let mut previous_round = monotonic_ns();
        let started = Instant::now();
        let timeout = self.config.poll_interval.as_millis().clamp(1, 10_000) as i32;
        let mut pfds: Vec<libc::pollfd> = self
            .events
            .iter()
            .map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        loop {
            // Safety: `pfds` is a valid array of pollfd of the given length.
            let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(Error::io("cannot poll the perf events", e));
                }
            }
            let round = monotonic_ns();
            self.drain();
            self.collect_child(false);
            self.report(started, &mut progress);
            self.release(previous_round.saturating_sub(SETTLE_NS), &mut agg);
            previous_round = round;
            self.poll_proc();
            let all_hup = r > 0 && pfds.iter().all(|p| p.revents & libc::POLLHUP != 0);
            // CPU-wide events never hang up: a system-wide run of a command ends with it.
            let command_done = self.config.system_wide && self.recording.child.is_some();
            if all_hup || command_done {
                if command_done {
                    for fd in self.all_events() {
                        let _ = sys::set_enabled(fd, false);
                    }
                }
                break;
            }
            let expired = self.config.duration.is_some_and(|d| started.elapsed() >= d);
            if stop.load(Ordering::Relaxed) || expired {
                self.recording.stopped = true;
                for fd in self.all_events() {
                    let _ = sys::set_enabled(fd, false);
                }
                self.end_child();
                break;
            }
        }
        self.drain();
        self.report(started, &mut progress);
        self.release(u64::MAX, &mut agg);
        self.recording.lost_reported_by_events_per_cpu = self
            .events
            .iter()
            .zip(&self.event_cpus)
            .filter_map(|(fd, &cpu)| Some((cpu as u32, sys::read_lost(fd).ok()?)))
            .collect();
        self.recording.lost_reported_by_events = self
            .recording
            .lost_reported_by_events_per_cpu
            .iter()
            .map(|&(_, n)| n)
            .sum();
        self.collect_child(true);
        for (i, fd) in &self.twins {
            if let (Some(t), Ok(n)) = (self.recording.tracepoints.get_mut(*i), sys::read_count(fd))
            {
                *t.counted.get_or_insert(0) += n;
            }
        }
        // The kernel queues a task's exit record before the task becomes a zombie, so the
        // launched command's is here now that it is reaped.
        self.drain_taskstats();
        self.recording.end_time = monotonic_ns();
        self.rings.clear();
        self.events.clear();
        self.counters.clear();
        self.twins.clear();
        if let Some(note) = self
            .max_stack_raise
            .as_mut()
            .and_then(MaxStackRaise::restore)
        {
            self.recording.notes.push(note);
        }
        Ok(std::mem::take(&mut self.recording))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if let Some(pid) = self.child.take() {
            // Safety: `pid` is our unreaped child; kill and reap it so it does not linger.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
                libc::waitpid(pid as i32, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// A tracepoint event opened on one CPU, writing into `ring`, and its counting twin.
struct OpenedTracepoint {
    sampled: OwnedFd,
    id: u64,
    twin: Option<OwnedFd>,
}

fn open_tracepoint(
    t: &TracepointRequest,
    info: &TracepointInfo,
    pid: i32,
    cpu: i32,
    ring: &OwnedFd,
    spec: &sys::EventSpec,
    config: &Config,
) -> Result<OpenedTracepoint> {
    let chain = sys::ChainParts {
        kernel: t.kernel_chain,
        user: t.user_chain,
    };
    let name = &info.format.name;
    let refused = |e: io::Error| match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => Error::Tracing {
            what: format!(
                "recording tracepoint {name} was refused (perf_event_paranoid={}): run as root \
                 or with CAP_PERFMON",
                paranoid()
            ),
            source: Some(e),
        },
        _ => open_error(e, pid, cpu, config),
    };
    let mut attr = sys::tracepoint_attr(info.format.id, chain, t.user_stack_bytes, false, spec);
    let sampled = sys::open(&mut attr, pid, cpu).map_err(refused)?;
    sys::set_output(&sampled, ring)
        .map_err(|e| Error::io(format!("cannot share the ring buffer of cpu {cpu}"), e))?;
    let filter = t
        .filter
        .as_deref()
        .map(|f| {
            std::ffi::CString::new(f).map_err(|_| Error::Tracing {
                what: format!("the filter of {name} holds a NUL byte"),
                source: None,
            })
        })
        .transpose()?;
    let mut twin = None;
    if t.count {
        let mut attr = sys::tracepoint_attr(info.format.id, chain, 0, true, spec);
        twin = Some(sys::open(&mut attr, pid, cpu).map_err(refused)?);
    }
    if let Some(f) = &filter {
        for fd in std::iter::once(&sampled).chain(&twin) {
            sys::set_filter(fd, f).map_err(|e| Error::Tracing {
                what: format!(
                    "the kernel refused the filter `{}` on {name} (see its fields in \
                     events/{}/{}/format)",
                    f.to_string_lossy(),
                    t.system,
                    t.name
                ),
                source: Some(e),
            })?;
        }
    }
    let id = sys::event_id(&sampled).map_err(|e| Error::io("cannot read a perf event's id", e))?;
    Ok(OpenedTracepoint { sampled, id, twin })
}

/// Executable mappings of `/proc/PID/maps` as MMAP side-band records.
pub(crate) fn parse_maps(pid: u32, maps: &str) -> Vec<SideBand> {
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms), Some(off)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if perms.as_bytes().get(2) != Some(&b'x') {
            continue;
        }
        let (_dev, _ino) = (f.next(), f.next());
        let filename = f.collect::<Vec<_>>().join(" ");
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b), Ok(off)) = (
            u64::from_str_radix(a, 16),
            u64::from_str_radix(b, 16),
            u64::from_str_radix(off, 16),
        ) else {
            continue;
        };
        let Some(len) = b.checked_sub(a) else {
            continue;
        };
        out.push(SideBand::Mmap {
            pid,
            tid: pid,
            addr: a,
            len,
            pgoff: off,
            build_id: None,
            prot: (libc::PROT_READ | libc::PROT_EXEC) as u32,
            flags: libc::MAP_PRIVATE as u32,
            filename,
        });
    }
    out
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

    #[test]
    fn proc_maps_executable_lines_become_mappings() {
        let maps = "00400000-00401000 r-xp 00001000 08:01 12 /bin/a b\n\
                    00600000-00601000 rw-p 00000000 08:01 12 /bin/a b\n\
                    7fff0000-7fff2000 r-xp 00000000 00:00 0 [vdso]\n";
        let m = parse_maps(3, maps);
        assert_eq!(m.len(), 2);
        assert!(
            matches!(&m[0], SideBand::Mmap { addr: 0x400000, len: 0x1000, pgoff: 0x1000, filename, .. } if filename == "/bin/a b")
        );
    }
}
