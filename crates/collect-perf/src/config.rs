//! What a sampling run is asked to do ([`Config`]), apart from the sampler that does it, so
//! that the checks before a run (`preflight`) and the tracepoint opening (`tracefs`) read it
//! without depending on the sampler.

use std::time::Duration;

/// The default size of the user stack copy: the most the kernel copies, so that programs
/// built without frame pointers unwind through deep recursion and large local arrays. The
/// kernel copies only the live part of the stack (up to its top), so a shallow stack costs
/// what it holds; README shows the cost.
pub const DEFAULT_USER_STACK_BYTES: u32 = MAX_USER_STACK_BYTES;

/// The largest user stack copy the kernel takes (a sample record must fit in 64 KiB).
pub const MAX_USER_STACK_BYTES: u32 = 65528;

/// Who copies each sample's user stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StackCopier {
    /// A BPF program on the sampling events where BPF is permitted (root), else the kernel.
    #[default]
    Auto,
    /// The kernel (`PERF_SAMPLE_STACK_USER`): from the stack pointer to the end of the
    /// stack's mapping, with every sample.
    Kernel,
    /// A BPF program, which copies a thread's stack only up to where its frames end once an
    /// earlier copy has shown where (a main thread's `argv`, a glibc thread's descriptor),
    /// and otherwise as the kernel does; an error where it cannot run. Samples that fall
    /// while another tracing BPF program (a kprobe's or tracepoint's) runs on their CPU are
    /// dropped by the kernel with it: `Auto` does not choose it when the run loads such
    /// programs itself.
    Bpf,
}

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
    /// Who copies the user stack. Default is [`StackCopier::Auto`].
    pub stack_copier: StackCopier,
    /// Maximum callchain depth, kernel and user frames together, asked of the kernel; at most
    /// 1,024 are asked for (a deeper walk costs the workload its time, and past 8,169 frames
    /// a sample does not fit its record and is lost uncounted), with a note when more was
    /// wanted: the aggregation completes deeper stacks from the stack copy and the thread's
    /// earlier samples. When it exceeds `kernel.perf_event_max_stack`, a run as root raises
    /// that limit for its duration and puts it back afterwards; otherwise (or if the kernel
    /// refuses, as it does while other perf sessions run) the kernel's limit applies and
    /// [`Sampler::notes`](crate::Sampler::notes) says so. Default is 1024.
    pub max_stack: u16,
    /// Data pages per CPU ring buffer (rounded up to a power of two); 0 sizes them so that
    /// about a quarter of a second of samples fits, from 1 to 32 MiB. Default is 0.
    pub mmap_pages: usize,
    /// Sample user space only (works with `perf_event_paranoid=2`). Default is false.
    pub user_only: bool,
    /// Stop after this long even if processes remain. Default is None (run to the end).
    pub duration: Option<Duration>,
    /// How often the rings are drained and /proc read, at least, unless [`Config::quiet_rounds`]
    /// lets the run sleep longer. The stop flag is looked at after each round, and a signal
    /// begins one. Default is 100 ms.
    pub poll_interval: Duration,
    /// Let a run as root that follows its tasks (not system-wide) sleep until a ring is a
    /// quarter full, a task appears (the kernel wakes the run at each new task or program, read
    /// from /proc 10 ms later, at most one such round every 20 ms) or a second has
    /// passed, since its rounds cost the collector its own time; taskstats then gives the
    /// counters of each task that ends. Turn it off when something else must be read at each
    /// round (a BPF program's ring, which would fill meanwhile). Default is true.
    pub quiet_rounds: bool,
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
    /// them ([`Recording::traces`](crate::Recording::traces)). tracefs is mounted if it is not (root), and the recording
    /// notes it. Default is none.
    pub tracepoints: Vec<TracepointRequest>,
    /// Record when each followed thread leaves a CPU (blocked or preempted) and gets it back
    /// ([`SideBand::Switch`](crate::SideBand::Switch)). Default is false.
    pub context_switches: bool,
    /// Shortest time between two readings of a process's /proc counters. Default is None:
    /// the poll interval. A continuous run reads them less often, since the kernel's exit
    /// records (taskstats) give the counters of processes that end.
    pub proc_poll_interval: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            frequency: 1000,
            user_stack_bytes: DEFAULT_USER_STACK_BYTES,
            stack_copier: StackCopier::Auto,
            max_stack: 1024,
            mmap_pages: 0,
            user_only: false,
            duration: None,
            poll_interval: Duration::from_millis(100),
            quiet_rounds: true,
            system_wide: false,
            keep_running: false,
            tracepoints: Vec::new(),
            context_switches: false,
            proc_poll_interval: None,
        }
    }
}

/// A tracepoint to record during a run, on the same per-CPU rings as the samples, in time
/// order with them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TracepointRequest {
    /// Its subsystem, e.g. `raw_syscalls`.
    pub system: String,
    /// Its name, e.g. `sys_enter`.
    pub name: String,
    /// A kernel-side filter in tracefs syntax over its fields (`prev_state != 0`), so that
    /// records that do not match are never written. Default is none.
    pub filter: Option<String>,
    /// Record the kernel part of the callchain. Default is false.
    pub kernel_chain: bool,
    /// Record the user part of the callchain, the user registers and a copy of
    /// `user_stack_bytes` of the user stack, for unwinding like a cpu-clock sample. Default is
    /// false.
    pub user_chain: bool,
    /// Bytes of user stack copied with each record when `user_chain`. Default is 0.
    pub user_stack_bytes: u32,
    /// Record it for every task on every CPU (a CPU-wide event), not only for the followed
    /// processes: for events that fire in one task about another (`sched_waking` fires in the
    /// waker). Needs root or `perf_event_paranoid` ≤ 0. Default is false.
    pub all_tasks: bool,
    /// Open a counting-mode twin beside it, whose total is set against the records received
    /// and lost ([`TracepointInfo::counted`](crate::TracepointInfo)). Default is false.
    pub count: bool,
}

impl TracepointRequest {
    /// `system:name` with the defaults.
    pub fn new(system: &str, name: &str) -> TracepointRequest {
        TracepointRequest {
            system: system.into(),
            name: name.into(),
            filter: None,
            kernel_chain: false,
            user_chain: false,
            user_stack_bytes: 0,
            all_tasks: false,
            count: false,
        }
    }
}
