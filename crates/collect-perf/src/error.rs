//! The crate's error type.

use std::io;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while setting up or running a recording.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel refused `perf_event_open` for lack of privilege.
    #[error(
        "perf_event_open was refused (perf_event_paranoid={paranoid}): run as root or set kernel.perf_event_paranoid to 1 or lower{hint}"
    )]
    Refused {
        /// The value of `kernel.perf_event_paranoid` (`-9` when unreadable).
        paranoid: i32,
        /// Extra advice, e.g. about user-only sampling.
        hint: &'static str,
        /// The errno the kernel returned.
        #[source]
        source: io::Error,
    },
    /// The requested sampling frequency exceeds the kernel's limit.
    #[error("frequency {freq} Hz exceeds kernel.perf_event_max_sample_rate={max}")]
    FrequencyTooHigh {
        /// The requested frequency.
        freq: u64,
        /// `kernel.perf_event_max_sample_rate`.
        max: u64,
    },
    /// The requested callchain depth exceeds the kernel's limit.
    #[error("max stack {requested} exceeds kernel.perf_event_max_stack={max}")]
    MaxStackTooHigh {
        /// The requested depth.
        requested: u16,
        /// `kernel.perf_event_max_stack`.
        max: u64,
    },
    /// The ring buffers would exceed the locked-memory limit.
    #[error(
        "ring buffers of {kib} KiB exceed the locked-memory limit (kernel.perf_event_mlock_kb x cpus + RLIMIT_MEMLOCK = {limit_kib} KiB): use fewer mmap pages or raise `ulimit -l`"
    )]
    MlockLimit {
        /// Requested total in KiB.
        kib: u64,
        /// The limit in KiB.
        limit_kib: u64,
        /// The errno from `mmap`, if it came to that.
        #[source]
        source: Option<io::Error>,
    },
    /// Too many file descriptors.
    #[error("too many open files; raise `ulimit -n` (needs about cpus x threads descriptors)")]
    TooManyFiles(#[source] io::Error),
    /// A target process does not exist (any more).
    #[error("process {pid} exited before profiling started")]
    NoSuchProcess {
        /// The pid.
        pid: i32,
    },
    /// `perf_event_open` failed for another reason.
    #[error("perf_event_open failed for pid {pid} on cpu {cpu} (kernel {kernel})")]
    Open {
        /// The target pid.
        pid: i32,
        /// The cpu.
        cpu: i32,
        /// The running kernel's release, for bug reports.
        kernel: String,
        /// The errno.
        #[source]
        source: io::Error,
    },
    /// The command could not be started.
    #[error("cannot run {program}")]
    Spawn {
        /// The program as given.
        program: String,
        /// Why (from `execvp` or `fork`).
        #[source]
        source: io::Error,
    },
    /// The command line was empty.
    #[error("no command given")]
    EmptyCommand,
    /// A file of the measurement could not be written (the source names it), or the output
    /// directory cannot take one.
    #[error("cannot write the measurement")]
    Output(#[source] gmon_format::Error),
    /// A tracepoint could not be found, read or opened; the message says what to do.
    #[error("{what}")]
    Tracing {
        /// What went wrong and what to do.
        what: String,
        /// The underlying error, if any.
        #[source]
        source: Option<io::Error>,
    },
    /// Any other operating-system failure.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl Error {
    #[cfg(target_os = "linux")]
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
