//! `pkgmon`: profiles a command, or running processes, in user space and in the kernel, and
//! writes a process-labeled measurement directory for `pkgprof --pid`.
//!
//! Longer than 800 lines only by its unit tests (the last 100 lines); the command's own code
//! is about 750 lines, the summary it prints in `summary.rs` and its files in `output.rs`.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{CommandFactory, Parser};
use collect_perf::{
    AggregateOptions, Aggregator, Config, KernelSymbols, Output, Progress, Sampler, WriteOptions,
    preflight,
};

mod continuous;
mod import;
mod output;
mod summary;

#[cfg(test)]
use summary::truncated_note;
use summary::{exit_status, main_pid, print_async, print_summary, shell_word};

const AFTER_HELP: &str = "\
Files (in DIR, default pkgmon.data; per process PID with command name COMM):
  gmon.out.PIDu.COMM   user-space profile (gmon.out, runtime addresses)
  gmon.out.PIDk.COMM   profile of the kernel working for the process
  gmon.out.PIDs.COMM   sampled stacks (exact inclusive times)
  gmon.out.PID.COMM    measurement info: argv, mappings, counters, boundaries
  gmon.out.PIDl.COMM   system-call latencies per call site (--latency), and
                       where the calls blocked and who woke them (--blocking)
  kallsyms.BOOTID      kernel symbols at record time
  vdso.BUILDID         the vDSO image (it exists only in memory)
  gmon.out.-k.kernel, gmon.out.-k.other   kernel work for no process and for
                       other processes (with -a or --async)
  async.moves          asynchronous kernel work moved to the process it served:
                       who gave how much to whom (--async)
  manifest.sha256      every file's size and SHA-256, written last: until it
                       is complete, pkgprof refuses the measurement
A pid reused during the run gets its own files: PID_1, PID_2, ... in place of
PID for the second, third, ... process with that pid.

Output directory: DIR is created (mode 0700) if missing. If it holds an
earlier measurement and nothing else, that is kept as DIR.old (replacing an
earlier DIR.old that holds only a measurement, unless DIR's is unfinished and
DIR.old's finished: then pkgmon refuses) and DIR is made anew; if it holds a
measurement among other files, pkgmon refuses. Files are 0600 (see
--mode; the kernel-symbol snapshot is never readable by more users than
/proc/kallsyms shows addresses to). A DIR that is a symbolic link, belongs
to another user or is reached through another user's link is refused unless
--trust-output. The directory is checked and the files' placeholder written
before the command starts; temporary files a killed run left there are
removed without being read.

Examples:
  pkgmon -- ./server --port 8080      profile a command and all it starts
  pkgmon -o prof -F 4000 -- make -j2   4000 samples/s, files in prof/
  pkgmon -p 1234,1240 --duration 10    attach to running processes for 10 s
  pkgmon -a --duration 5 -- ./client   system-wide, labelling the client's work
  pkgmon --blocking -- ./server        system-call latencies, sleeps and wakers
  pkgmon --async -- ./udp-pair         packet receive work charged to the reader
  pkgprof -b --pid 1234               report on one process (from pkgmon.data)
  pkgmon --import perf.data -o prof   a `perf record -g` file as a measurement
  pkgmon --continuous -a -o /var/lib/pkgmon --window 60s --keep 24h,2G
                                      always-on: a measurement per minute
  pkgprof --apps /var/lib/pkgmon      applications and instances over the windows

Continuous profiling (--continuous -a): every CPU is sampled at 19 Hz (-F),
kernel and user stacks, until SIGINT or SIGTERM, which finish the current
window. DIR/wNNNNNNNN is one complete measurement per window (written as
.wNNNNNNNN.partial and renamed when complete, so a killed pkgmon leaves only
complete windows); DIR/index lists the windows, and each window's instances
file gives each of its file sets' application instance APP#N (SLEEPY's
appid: the command name and its instance number; a reused pid is a new
instance). SIGUSR1 pauses sampling, SIGUSR2 resumes it. Memory: one window's
distinct stacks and processes, the live processes' mappings, the unwind
tables (.eh_frame) of the files they run, at most 64 MiB of tables of files
no live process runs (tables are mapped from files no other user can write,
copied otherwise), and one index line per window kept; free memory goes back
to the system after each window, so it does not grow with the run: at most
256 MiB on a 2-CPU machine, checked by benches/soak-continuous.sh (an hour of
100,000 short-lived processes peaked at 158 MiB; README).

Ctrl-C (or SIGTERM) stops profiling and still writes complete files; the
command gets Ctrl-C as usual, and SIGTERM if it is still running (SIGKILL
a second later). If pkgmon itself is killed, the command is killed with it
(unless --keep-running) and the measurement stays incomplete.

Exit status:
  the command's exit status (128+N if a signal N ended it); 0 with -p;
  2 for a usage error; 125 if pkgmon failed (e.g. perf_event_open refused);
  126 if the command cannot be run; 127 if it is not found.";

/// Profiles a command (or running processes) in user space and in the kernel with
/// perf_event_open, and writes per-process user and kernel gmon.out files for pkgprof.
#[derive(Debug, Parser)]
#[command(name = "pkgmon", version, after_help = AFTER_HELP)]
struct Args {
    /// Directory to write the measurement into (see "Output directory" below).
    #[arg(short = 'o', long = "output", value_name = "DIR", default_value = DEFAULT_DIR)]
    dir: PathBuf,
    /// Mode of the files written, in octal; the directory gets the same read bits and the
    /// matching search bits.
    #[arg(long, value_name = "MODE", default_value = "600", value_parser = parse_mode)]
    mode: u32,
    /// Write into DIR even if it is a symbolic link or another user's directory.
    #[arg(long)]
    trust_output: bool,
    /// Let the command run on if pkgmon is killed (by default it is killed with pkgmon).
    #[arg(long)]
    keep_running: bool,
    /// Samples per second of CPU time, per thread (at most
    /// kernel.perf_event_max_sample_rate) [default: 1000; 19 per CPU with --continuous].
    #[arg(short = 'F', long = "freq", value_name = "HZ",
          allow_negative_numbers = true, value_parser = parse_freq)]
    freq: Option<u64>,
    /// List every file written (by default only the directory and the command to run next).
    #[arg(short = 'v', long)]
    verbose: bool,
    /// System-wide: sample all CPUs; kernel work for no process and for processes not asked
    /// for goes to gmon.out.-k.kernel and gmon.out.-k.other.
    #[arg(short = 'a', long = "all-cpus")]
    all: bool,
    /// Stop after this many seconds (a command still running gets SIGTERM, then SIGKILL a
    /// second later).
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// Bytes of user stack copied with each sample for unwinding (0 to 65528; 0: frame
    /// pointers only). Stacks deeper than the copy continue by frame pointers where the
    /// program has them, and are reported truncated where they end early.
    #[arg(long = "stack-size", value_name = "BYTES",
          default_value_t = collect_perf::DEFAULT_USER_STACK_BYTES,
          value_parser = clap::value_parser!(u32).range(0..=i64::from(collect_perf::MAX_USER_STACK_BYTES)))]
    stack_size: u32,
    /// Who copies the user stack: `auto` a BPF program, which copies only a thread's frames
    /// once it has seen where they end (root; not with --latency, --blocking or --async,
    /// whose tracing programs would make the kernel drop the samples that fall while they
    /// run), else the kernel; `kernel` the kernel, to the end of the stack's mapping with
    /// every sample; `bpf` the program or an error.
    #[arg(long = "stack-copy", value_name = "BY", default_value = "auto")]
    stack_copy: StackCopy,
    /// Most frames of a stack, kernel and user together. The kernel walks at most 1024 (as
    /// root, kernel.perf_event_max_stack is raised for the run if lower, and put back);
    /// deeper stacks are completed from the stack copy and the thread's earlier samples.
    #[arg(long = "max-stack", value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u16).range(1..))]
    max_stack: u16,
    /// Sample user space only (allowed with kernel.perf_event_paranoid=2 for your own
    /// processes); the kernel files stay empty.
    #[arg(short = 'u', long = "user-only")]
    user_only: bool,
    /// Record the latency of every system call per user call site (OSprof's log2 buckets)
    /// into gmon.out.PIDl.COMM; report with `pkgprof --latency`.
    #[arg(long)]
    latency: bool,
    /// Also record where each system call blocked, for how long, and who woke it (DeBox);
    /// implies --latency. Report with `pkgprof --blocking`.
    #[arg(long)]
    blocking: bool,
    /// How --latency counts: `bpf` aggregates in the kernel (a few hundred ns per call, no
    /// record to lose), `ring` records every entry and exit through the perf rings and
    /// unwinds each call site from a stack copy (exact call sites in code without frame
    /// pointers, but microseconds per call); `auto` is bpf when the kernel allows it, else
    /// ring with a note. With --blocking, bpf also counts each call's sleeps and their
    /// wakers in the kernel; ring records the sleeps and wakers through the rings too (perf
    /// sees wake-ups fired on an idle CPU without their frames, and infers them as the
    /// interrupts they are; `auto` falling back to the rings still takes the wakers from BPF
    /// programs if the kernel allows them).
    #[arg(long = "latency-path", value_name = "PATH", default_value = "auto",
          value_parser = ["auto", "bpf", "ring"])]
    latency_path: String,
    /// With --latency counted in the kernel: also count every entry and exit of the profiled
    /// tasks with counting-mode perf events, and check the programs' counts against them
    /// (OSprof's independent checksums; a mismatch is reported). Costs about as much as the
    /// programs themselves (~230 ns a call), so by default the programs' counts are checked
    /// against what they accounted for. The ring path always checks against them.
    #[arg(long = "latency-checksums")]
    latency_checksums: bool,
    /// Latency buckets per power of two (1 to 64; OSprof's r).
    #[arg(long, value_name = "R", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    resolution: u32,
    /// Keep latency buckets per time slice of this length (e.g. 1s, 250ms): OSprof's
    /// profile sampling, for behaviour that changes over time.
    #[arg(long, value_name = "DURATION", value_parser = parse_slice)]
    slice: Option<u64>,
    /// Charge asynchronous kernel work to the process it served, as pkprof did: the network
    /// receive processing a softirq does in whatever process it interrupted (on loopback, the
    /// sender's own send) moves to the process that reads the packets, under
    /// `PIDk:[async net-rx]`; what no reader is found for stays in gmon.out.-k.kernel as
    /// `[async unattributed net-rx]`. KINDS, separated by commas: `net` (the default),
    /// `workqueue` (a kworker's work item charged to the process that queued it, under
    /// `PIDk:[async workqueue]`), `timer` (a timer's callback charged to the process that
    /// armed it, `PIDk:[async timer]`), `block` (block I/O completion, the BLOCK softirq,
    /// charged to the processes whose requests it completed, `PIDk:[async block]`; its
    /// windows are recorded by BPF programs, which see them on idle CPUs too). Samples every
    /// CPU and traces the kinds' tracepoints; the cost is printed.
    #[arg(long = "async", value_name = "KINDS", num_args = 0..=1, require_equals = true,
          default_missing_value = "net", value_delimiter = ',', conflicts_with = "continuous")]
    asynchronous: Option<Vec<AsyncKind>>,
    /// Attach to running processes (and what they start from now on).
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID",
        value_delimiter = ',',
        conflicts_with = "command"
    )]
    pids: Vec<i32>,
    /// The command to run and profile, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
    /// Convert a perf.data file (`perf record -g`, frame pointers or --call-graph dwarf,
    /// compressed or pipe mode; cpu-clock samples) into a measurement in DIR instead of
    /// profiling.
    #[arg(long, value_name = "PERF.DATA", conflicts_with_all = ["command", "pids", "all"])]
    import: Option<PathBuf>,
    /// With --import: the kernel symbols of the kernel the file was recorded on (default:
    /// perf's build-id cache, else this machine's if it runs the same kernel release).
    #[arg(long, value_name = "FILE", requires = "import")]
    kallsyms: Option<PathBuf>,
    /// Profile the whole machine until stopped, writing a complete measurement per time
    /// window into DIR with an index of windows and application instances (see
    /// "Continuous profiling" below); needs -a.
    #[arg(long, requires = "all", conflicts_with_all = ["command", "pids", "duration"])]
    continuous: bool,
    /// With --continuous: the length of a window (e.g. 60s, 10m).
    #[arg(long, value_name = "DURATION", default_value = "60s", requires = "continuous",
          value_parser = continuous::parse_window)]
    window: std::time::Duration,
    /// With --continuous: remove windows older than AGE (e.g. 24h, 7d) and/or the oldest
    /// while the windows take more than SIZE (e.g. 2G, 500M); comma-separated.
    #[arg(long, value_name = "AGE|SIZE", default_value = "24h", requires = "continuous",
          value_parser = continuous::parse_keep)]
    keep: continuous::Keep,
}

/// Who copies the user stack with each sample (`--stack-copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StackCopy {
    /// The BPF program where it can run, else the kernel.
    Auto,
    /// The kernel.
    Kernel,
    /// The BPF program.
    Bpf,
}

impl StackCopy {
    /// The copier a run asks for; `tracing` when it loads tracing BPF programs of its own.
    pub(crate) fn copier(self, tracing: bool) -> collect_perf::StackCopier {
        match self {
            StackCopy::Auto if tracing => collect_perf::StackCopier::Kernel,
            StackCopy::Auto => collect_perf::StackCopier::Auto,
            StackCopy::Kernel => collect_perf::StackCopier::Kernel,
            StackCopy::Bpf => collect_perf::StackCopier::Bpf,
        }
    }
}

/// A kind of asynchronous work `--async` attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum AsyncKind {
    /// Network receive (the NET_RX softirq).
    Net,
    /// Work items run by kworkers, charged to the process that queued them.
    Workqueue,
    /// Timer callbacks, charged to the process that armed the timer.
    Timer,
    /// Block I/O completions, charged to the processes whose requests they completed.
    Block,
}

impl AsyncKind {
    fn kind(self) -> collect_perf::AsyncKind {
        match self {
            AsyncKind::Net => collect_perf::AsyncKind::NetRx,
            AsyncKind::Workqueue => collect_perf::AsyncKind::Workqueue,
            AsyncKind::Timer => collect_perf::AsyncKind::Timer,
            AsyncKind::Block => collect_perf::AsyncKind::Block,
        }
    }
}

/// The measurement directory when `-o` is not given (`pkgprof --pid` reads it by default too).
pub const DEFAULT_DIR: &str = "pkgmon.data";

/// The kernel's limit on samples per second, if it can be read.
fn max_sample_rate() -> Option<u64> {
    let text = safe_fs::read_text(
        "/proc/sys/kernel/perf_event_max_sample_rate",
        &safe_fs::ReadOptions::procfs(64),
    )
    .ok()?;
    text.trim().parse().ok()
}

/// Parses `-F`: a whole number of samples per second the kernel accepts, checked against its
/// limit now rather than when the events are opened.
fn parse_freq(text: &str) -> Result<u64, String> {
    let max = max_sample_rate();
    let range = match max {
        Some(max) => format!(
            "1 to {max} samples per second (the kernel's limit, \
             kernel.perf_event_max_sample_rate)"
        ),
        None => "at least 1 sample per second".to_string(),
    };
    let hz: i128 = text
        .parse()
        .map_err(|_| format!("`{text}' is not a number; give {range}"))?;
    if hz < 1 || max.is_some_and(|m| hz > i128::from(m)) {
        return Err(format!("{hz} is out of range; give {range}"));
    }
    u64::try_from(hz).map_err(|_| format!("{hz} is out of range; give {range}"))
}

/// Parses `--slice`: a number with `s`, `ms`, `us` or `ns`.
fn parse_slice(text: &str) -> Result<u64, String> {
    let (num, unit) = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or((text, "s"), |i| text.split_at(i));
    let scale = match unit {
        "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        _ => return Err(format!("unknown unit `{unit}` (use s, ms, us or ns)")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 1s or 250ms"))?;
    let ns = (v * scale).round();
    if !(1_000.0..1e18).contains(&ns) {
        return Err(format!("slice `{text}` must be from 1us on"));
    }
    Ok(ns as u64)
}

/// Parses `--mode`: octal permission bits, at most 0777, readable and writable by the owner.
fn parse_mode(text: &str) -> Result<u32, String> {
    let mode = u32::from_str_radix(text.trim_start_matches("0o"), 8)
        .map_err(|_| format!("`{text}` is not an octal mode such as 600 or 640"))?;
    if mode > 0o777 || mode & 0o600 != 0o600 {
        return Err(format!(
            "mode {text} must be at most 777 and readable and writable by the owner (6xx)"
        ));
    }
    Ok(mode)
}

/// The directory mode for files of `mode`: the owner's rwx, and search where there is read.
fn dir_mode(mode: u32) -> u32 {
    0o700 | (mode & 0o044) | ((mode & 0o044) >> 2)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Makes SIGINT and SIGTERM set [`STOP`] instead of killing pkgmon, so the files still get
/// written. The launched command resets them at exec, so it reacts to Ctrl-C as usual.
fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // Safety: installing a handler that only stores to an atomic, which is
        // async-signal-safe; the sigaction struct is fully initialized.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Exit statuses of pkgmon's own failures (as `timeout` and `env` use them).
const EXIT_FAILED: u8 = 125;
const EXIT_CANNOT_RUN: u8 = 126;
const EXIT_NOT_FOUND: u8 = 127;

/// Runs pkgmon with the process's arguments; returns its exit status.
pub fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    if args.command.is_empty() && args.pids.is_empty() && !args.all && args.import.is_none() {
        let e = Args::command().error(
            clap::error::ErrorKind::MissingRequiredArgument,
            "nothing to profile: give a command after `--`, -p PID, or --import PERF.DATA",
        );
        let _ = e.print();
        return ExitCode::from(2);
    }
    // A pid that is not there is a typo more often than a process that just exited: a usage
    // error, found before anything is set up.
    if let Some(pid) = args
        .pids
        .iter()
        .find(|&&pid| pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists())
    {
        eprintln!(
            "pkgmon: no process has pid {pid} (`ps -p {pid}` lists none): give the pid of a \
             running process"
        );
        return ExitCode::from(2);
    }
    match run(args) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("pkgmon: {err:#}");
            if err
                .chain()
                .any(|c| matches!(c.downcast_ref(), Some(collect_perf::Error::Refused { .. })))
            {
                eprintln!(
                    "pkgmon: --user-only samples user space only, which needs less privilege"
                );
            }
            let spawn = err
                .chain()
                .find_map(|c| match c.downcast_ref::<collect_perf::Error>() {
                    Some(collect_perf::Error::Spawn { source, .. }) => Some(source.kind()),
                    _ => None,
                });
            ExitCode::from(match spawn {
                Some(std::io::ErrorKind::NotFound) => EXIT_NOT_FOUND,
                Some(_) => EXIT_CANNOT_RUN,
                None => EXIT_FAILED,
            })
        }
    }
}

/// The progress line on a terminal: rewritten in place, cleared before other messages.
struct Status {
    tty: bool,
    shown: bool,
}

impl Status {
    fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[K");
            self.shown = false;
        }
    }

    fn update(&mut self, p: &Progress<'_>) {
        for (pid, comm) in p.new_processes {
            self.clear();
            if comm.is_empty() {
                // Seen before its name was known (it exited, or had not exec'd yet).
                eprintln!("pkgmon: pid {pid}");
            } else {
                // The process chose its name: escape sequences in it must not reach the
                // terminal.
                eprintln!("pkgmon: pid {pid} ({})", gmon_format::printable(comm));
            }
        }
        if self.tty {
            eprint!(
                "\r\x1b[Kpkgmon: {:.1} s, {} process{}, {} samples, {} lost",
                p.elapsed.as_secs_f64(),
                p.processes,
                if p.processes == 1 { "" } else { "es" },
                p.samples,
                p.lost
            );
            let _ = std::io::stderr().flush();
            self.shown = true;
        }
    }
}

fn run(args: Args) -> anyhow::Result<u8> {
    if let Some(perf_data) = &args.import {
        return import::run(perf_data, &args);
    }
    if args.continuous {
        return continuous::run(&args);
    }
    if args.all && args.command.is_empty() && args.pids.is_empty() && args.duration.is_none() {
        eprintln!("pkgmon: profiling the whole system until Ctrl-C");
    }
    let mut config = Config::default();
    config.frequency = args.freq.unwrap_or(1000);
    config.system_wide = args.all;
    config.user_only = args.user_only;
    config.user_stack_bytes = args.stack_size;
    config.max_stack = args.max_stack;
    if let Some(s) = args.duration {
        if !(s.is_finite() && s > 0.0) {
            bail!("--duration must be a positive number of seconds, not {s}");
        }
        config.duration = Some(Duration::from_secs_f64(s));
    }
    config.keep_running = args.keep_running;
    let mut latency = (args.latency || args.blocking).then(|| {
        let mut l = collect_perf::LatencyOptions::default();
        l.resolution = args.resolution;
        l.slice_ns = args.slice;
        l.blocking = args.blocking;
        l.counting_events = args.latency_checksums;
        l
    });
    // Raised before the BPF programs load their stack maps (the kernel refuses to change it
    // while one is open) and put back after they are closed, at the end.
    let callchain_limit = collect_perf::raise_callchain_limit(args.max_stack);
    let mut in_kernel = None;
    let mut wakers = None;
    if let Some(l) = &mut latency {
        in_kernel = kernel_latency(l, &args)?;
        // Counted in the kernel, the sleeps have their wakers counted there too.
        if in_kernel.is_none() {
            wakers = kernel_wakers(l, &args);
            l.kernel_wakers = wakers.is_some();
            config.tracepoints = l.tracepoints()?;
            config.context_switches = l.blocking;
        }
    }
    // The work runs in whatever task a CPU was running: every CPU is sampled.
    let mut asynchronous = args.asynchronous.as_ref().map(|kinds| {
        let mut a = collect_perf::AsyncOptions::default();
        a.entries = KernelSymbols::live().softirq_entries();
        a.kinds = kinds.iter().map(|k| k.kind()).collect();
        a.kinds.sort();
        a.kinds.dedup();
        a
    });
    let mut block_programs = None;
    if let Some(a) = &mut asynchronous
        && a.kinds.contains(&collect_perf::AsyncKind::Block)
    {
        // In the kernel, block windows on idle CPUs are seen too; through perf they are not.
        match collect_perf::BlockPrograms::load() {
            Ok(p) => block_programs = Some(p),
            Err(e) => eprintln!(
                "pkgmon: warning: --async=block: cannot load the BPF programs that see block \
                 completions in the idle task ({e}): the windows perf misses there stay \
                 unseen, their samples unattributed (window-unseen)"
            ),
        }
        a.kernel_block = block_programs.is_some();
    }
    if let Some(a) = &asynchronous {
        if a.entries.is_empty() {
            eprintln!(
                "pkgmon: warning: --async: the kernel's softirq entry functions are not in \
                 /proc/kallsyms (addresses hidden?): samples count as softirq work by their \
                 time alone and their stacks are not cut"
            );
        }
        config.tracepoints.extend(a.tracepoints());
        config.system_wide = true;
    }
    let tracing = latency.is_some() || asynchronous.is_some();
    config.stack_copier = args.stack_copy.copier(tracing);
    // The latency programs' rings (call sites, wakers) are read at each round.
    config.quiet_rounds = !tracing;
    let perms = preflight(&config)?;
    for w in &perms.warnings {
        eprintln!("pkgmon: warning: {w}");
    }
    let dir = output::prepare(&args.dir, dir_mode(args.mode), args.trust_output)?;
    let out = Output::begin(dir, args.mode)
        .with_context(|| format!("cannot write into {}", args.dir.display()))?;
    catch_signals();
    let started = if !args.command.is_empty() {
        Sampler::launch_with(&args.command, &config, |pid| {
            if let Some(k) = &mut in_kernel {
                k.follow(pid, false)?;
            }
            if let Some(w) = &mut wakers {
                w.follow(pid, false)?;
            }
            Ok(())
        })
    } else {
        Sampler::attach(&args.pids, &config).and_then(|s| {
            for &pid in &args.pids {
                if let Some(k) = &mut in_kernel {
                    k.follow(pid as u32, true)?;
                }
                if let Some(w) = &mut wakers {
                    w.follow(pid as u32, true)?;
                }
            }
            Ok(s)
        })
    };
    let sampler = match started {
        Ok(s) => s,
        Err(e) => {
            // Nothing was measured: leave no placeholder claiming a measurement.
            if let Err(a) = out.abandon() {
                eprintln!("pkgmon: warning: {a:#}");
            }
            return Err(e.into());
        }
    };
    for note in sampler.notes() {
        eprintln!("pkgmon: note: {note}");
    }
    let notes_before = sampler.notes().len();
    let mut status = Status {
        tty: std::io::stderr().is_terminal(),
        shown: false,
    };
    let mut aggregate = AggregateOptions::default();
    // User stacks are unwound as deep as the callchains asked for: `--max-stack 4000` raised
    // the kernel's limit but left the unwinding at 1,024 frames, and the summary still said
    // to raise --max-stack.
    aggregate.max_frames = usize::from(args.max_stack);
    aggregate.launched = sampler.child_pid();
    aggregate.latency = latency;
    aggregate.asynchronous = asynchronous;
    if args.all || args.asynchronous.is_some() {
        let mut asked: std::collections::BTreeSet<u32> =
            args.pids.iter().map(|&p| p as u32).collect();
        asked.extend(sampler.child_pid());
        aggregate.system_wide = Some(asked);
    }
    let mut agg = Aggregator::new(aggregate);
    if let Some(w) = wakers {
        agg.kernel_wakers(w);
    }
    if let Some(p) = block_programs {
        agg.kernel_block(p);
    }
    let mut drain_error = None;
    let rec = sampler.run_aggregating(
        &STOP,
        |p| {
            status.update(p);
            // The call sites' copies and exited threads' open calls are read at each round,
            // and a sliced run's past slices leave the histogram map; the rest at the end.
            if let Some(k) = &mut in_kernel
                && let Err(e) = k.drain()
            {
                drain_error.get_or_insert(e);
            }
        },
        &mut agg,
    )?;
    if let Some(e) = drain_error {
        return Err(e.into());
    }
    if let Some(k) = in_kernel {
        let counts = k.finish()?;
        for note in &counts.notes {
            eprintln!("pkgmon: warning: {note}");
        }
        for remark in &counts.remarks {
            eprintln!("pkgmon: note: {remark}");
        }
        for c in &counts.checks {
            match c.counted {
                Some(n) if n != c.received => eprintln!(
                    "pkgmon: warning: {}: {} calls counted in the kernel, but its counting \
                     event saw {n}",
                    c.event, c.received
                ),
                Some(_) if args.verbose => eprintln!(
                    "pkgmon: {}: {} calls counted in the kernel, checksum matches",
                    c.event, c.received
                ),
                _ => {}
            }
        }
        agg.kernel_latency(counts);
    }
    let agg = agg.finish(KernelSymbols::live());
    status.clear();
    if let Some(note) = callchain_limit.and_then(collect_perf::CallchainLimit::restore) {
        eprintln!("pkgmon: note: {note}");
    }
    if STOP.load(Ordering::Relaxed) {
        eprintln!("pkgmon: interrupted; writing the files");
    }
    for note in rec.notes.iter().skip(notes_before) {
        eprintln!("pkgmon: note: {note}");
    }
    let mut opts = WriteOptions::default();
    if !args.command.is_empty() {
        opts.argv = Some(args.command.clone());
    }
    let summary = collect_perf::write_measurement_to(&rec, &agg, &opts, out)
        .with_context(|| format!("cannot write the measurement into {}", args.dir.display()))?;
    for w in &summary.warnings {
        eprintln!("pkgmon: warning: {w}");
    }
    print_summary(&rec, &summary, &args, main_pid(&rec, &args));
    if let Some(moves) = &summary.async_moves {
        print_async(&rec, moves, summary.async_kernel_block);
    }
    for t in &rec.tracepoints {
        // --async's windows unseen are in its own lines above, with what they mean.
        if args.asynchronous.is_some() && t.format.name == collect_perf::AsyncOptions::WINDOW_EVENT
        {
            continue;
        }
        let idle = t.check().unsampled_in_idle();
        match t.counted {
            Some(n) if n != t.received + idle => eprintln!(
                "pkgmon: warning: {}: {} records received but the kernel counted {n} hits \
                 ({} lost with the rest of {lost} lost records); the latency files say which \
                 calls were left out",
                t.format.name,
                t.received,
                n.saturating_sub(t.received),
                lost = rec.lost_samples()
            ),
            _ if args.verbose => eprintln!(
                "pkgmon: {}: {} records{}",
                t.format.name,
                t.received,
                t.counted
                    .map(|n| if idle > 0 {
                        format!(", {n} counted: the others fired on idle CPUs, which the kernel does not sample")
                    } else {
                        format!(", {n} counted: checksum matches")
                    })
                    .unwrap_or_default()
            ),
            _ => {}
        }
    }
    Ok(exit_status(&rec, args.command.is_empty()))
}

/// The in-kernel latency collection for `l`, loaded, if `--latency-path` allows it and the
/// kernel takes it; None for the ring path (said in a note when it was not asked for).
fn kernel_latency(
    l: &collect_perf::LatencyOptions,
    args: &Args,
) -> anyhow::Result<Option<collect_perf::bpf::SyscallLatency>> {
    let why_not = if args.latency_path == "ring" {
        return Ok(None);
    } else if args.all {
        "system-wide runs (-a) record through the perf rings"
    } else {
        match collect_perf::bpf::SyscallLatency::load(l) {
            Ok(k) => return Ok(Some(k)),
            Err(e) if args.latency_path == "bpf" => {
                return Err(anyhow::Error::new(e).context("--latency-path bpf"));
            }
            Err(e) => {
                eprintln!(
                    "pkgmon: note: system calls are recorded through the perf rings (costlier \
                     per call): in-kernel counting is unavailable: {e}"
                );
                return Ok(None);
            }
        }
    };
    if args.latency_path == "bpf" {
        bail!("--latency-path bpf: {why_not}; use --latency-path ring or auto");
    }
    Ok(None)
}

/// The wakers of `--blocking`'s sleeps seen by BPF programs, loaded, unless the run is
/// system-wide (its waker event covers every task already), `--latency-path ring` asked for
/// perf alone, or the kernel refuses them (said in a note: wake-ups fired on idle CPUs then
/// lose their frames).
fn kernel_wakers(
    l: &collect_perf::LatencyOptions,
    args: &Args,
) -> Option<collect_perf::bpf::Wakers> {
    if !l.blocking || args.all || args.latency_path == "ring" {
        return None;
    }
    match collect_perf::bpf::Wakers::load(l.kernel_frames) {
        Ok(w) => Some(w),
        Err(e) => {
            eprintln!(
                "pkgmon: note: wakers are recorded through perf, which takes no sample of a \
                 wake-up on an idle CPU (its frames are lost): {e}"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        Args::command().debug_assert();
        let a = Args::try_parse_from(["pkgmon", "-o", "d", "-F", "99", "--", "ls", "-l"])
            .expect("parses");
        assert_eq!(a.dir, PathBuf::from("d"));
        assert_eq!(a.freq, Some(99));
        assert_eq!(a.command, ["ls", "-l"]);
        let a = Args::try_parse_from(["pkgmon", "-p", "3,4", "--duration", "1.5"]).expect("pids");
        assert_eq!(a.pids, [3, 4]);
        assert_eq!(a.duration, Some(1.5));
        assert!(Args::try_parse_from(["pkgmon", "-p", "3", "--", "ls"]).is_err());
        assert!(Args::try_parse_from(["pkgmon", "-F", "0", "--", "ls"]).is_err());
        let a = Args::try_parse_from(["pkgmon", "--", "ls"]).expect("defaults");
        assert_eq!((a.dir.to_str(), a.mode), (Some(DEFAULT_DIR), 0o600));
        assert!(!a.trust_output && !a.keep_running);
        let a = Args::try_parse_from(["pkgmon", "--mode", "640", "--", "ls"]).expect("mode");
        assert_eq!(a.mode, 0o640);
        for bad in ["999", "400", "1777", "rw"] {
            assert!(
                Args::try_parse_from(["pkgmon", "--mode", bad, "--", "ls"]).is_err(),
                "{bad}"
            );
        }
        assert_eq!(dir_mode(0o600), 0o700);
        assert_eq!(dir_mode(0o640), 0o750);
        assert_eq!(dir_mode(0o644), 0o755);
        assert_eq!(dir_mode(0o604), 0o705);
    }

    #[test]
    fn truncated_stacks_are_explained_with_a_remedy() {
        let none = collect_perf::UnwindStats::default();
        assert_eq!(truncated_note(0, 100, &none, (2048, 1024), false), None);
        let mut copy = collect_perf::UnwindStats::default();
        (copy.stack_copy, copy.callchain_limit) = (40, 11);
        let note = truncated_note(51, 100, &copy, (2048, 1024), false).unwrap();
        assert!(
            note.starts_with("51% of the stacks are truncated"),
            "{note}"
        );
        assert!(
            note.contains("40 ended with the 2048-byte stack copy: copy more (--stack-size 65528)"),
            "{note}"
        );
        assert!(
            note.contains(
                "11 reached the callchain limit: allow deeper chains (--max-stack, now 1024)"
            ),
            "{note}"
        );
        assert!(!note.contains("unwind information"), "{note}");
        // Past the kernel's own chain, a cut stack may also be one the thread's earlier
        // samples could not complete: sampling more often is the other remedy.
        let deep = truncated_note(51, 100, &copy, (2048, 16000), false).unwrap();
        assert!(
            deep.contains(
                "11 reached the callchain limit: deeper than --max-stack (now 16000), or than \
                 the kernel's 1024-frame chain where the thread's earlier samples did not \
                 reach: allow deeper chains (--max-stack) or sample more often (-F)"
            ),
            "{deep}"
        );
        // At the largest copy only frame pointers help; a rare truncation is counted, not
        // rounded to 0%.
        let mut copy = collect_perf::UnwindStats::default();
        copy.stack_copy = 1;
        let note = truncated_note(
            1,
            300,
            &copy,
            (collect_perf::MAX_USER_STACK_BYTES, 127),
            false,
        )
        .unwrap();
        assert!(
            note.starts_with("1 of 300 stacks (0.3%) are truncated"),
            "{note}"
        );
        assert!(!note.contains("--stack-size"), "{note}");
        // Past a copy cut at its size frame pointers go on with either copier (the BPF
        // copier walks them itself there).
        let max = collect_perf::MAX_USER_STACK_BYTES;
        for chains_from_copies in [false, true] {
            let note = truncated_note(1, 300, &copy, (max, 127), chains_from_copies).unwrap();
            assert!(
                note.contains(
                    "frame pointers go on past the copy (-fno-omit-frame-pointer), as far as the \
                     first function built without them"
                ),
                "{note}"
            );
        }
        // Copies stopped at a page never touched: no larger copy helps, and they are not
        // counted again as cut by the copy's size.
        let mut hole = collect_perf::UnwindStats::default();
        (hole.stack_copy, hole.untouched_page) = (5, 4);
        let note = truncated_note(5, 100, &hole, (8192, 127), false).unwrap();
        assert!(
            note.contains("4 ended where the stack copy stopped at a stack page not yet touched"),
            "{note}"
        );
        assert!(
            note.contains("frame pointers (-fno-omit-frame-pointer) go on past it"),
            "{note}"
        );
        let note = truncated_note(5, 100, &hole, (8192, 127), true).unwrap();
        assert!(
            note.contains("whatever --stack-size): with --stack-copy kernel and"),
            "{note}"
        );
        assert!(
            note.contains("; 1 ended with the 8192-byte stack copy: copy more"),
            "{note}"
        );
        let mut info = collect_perf::UnwindStats::default();
        info.unwind_info = 3;
        let note = truncated_note(3, 30, &info, (8192, 127), false).unwrap();
        assert!(note.ends_with("or keep its .eh_frame"), "{note}");
        assert!(!note.contains("--max-stack"), "{note}");
    }

    #[test]
    fn help_ends_with_examples_and_exit_statuses() {
        let help = Args::command().render_long_help().to_string();
        let ex = help.find("Examples:").expect("examples");
        let st = help.find("Exit status:").expect("exit statuses");
        assert!(
            ex < st && help.trim_end().ends_with("if it is not found."),
            "{help}"
        );
    }
}
