//! The raw kernel ABI: attr construction, the syscall, ioctls and record constants.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use perf_event_open_sys as pe;

pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;
pub(crate) const PERF_TYPE_TRACEPOINT: u32 = 2;
pub(crate) const PERF_COUNT_SW_DUMMY: u64 = 9;
pub(crate) const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
pub(crate) const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
pub(crate) const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
pub(crate) const PERF_COUNT_SW_BPF_OUTPUT: u64 = 10;

pub(crate) const SAMPLE_IP: u64 = 1 << 0;
pub(crate) const SAMPLE_TID: u64 = 1 << 1;
pub(crate) const SAMPLE_TIME: u64 = 1 << 2;
pub(crate) const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub(crate) const SAMPLE_CPU: u64 = 1 << 7;
pub(crate) const SAMPLE_PERIOD: u64 = 1 << 8;
pub(crate) const SAMPLE_RAW: u64 = 1 << 10;
pub(crate) const SAMPLE_REGS_USER: u64 = 1 << 12;
pub(crate) const SAMPLE_STACK_USER: u64 = 1 << 13;
pub(crate) const SAMPLE_IDENTIFIER: u64 = 1 << 16;

/// x86_64 `PERF_REG_X86_{BX,BP,SP,IP}`; the kernel dumps them in ascending bit order.
pub(crate) const REGS_MASK_X86_64: u64 = (1 << 1) | (1 << 6) | (1 << 7) | (1 << 8);

pub(crate) const RECORD_LOST: u32 = 2;
pub(crate) const RECORD_COMM: u32 = 3;
pub(crate) const RECORD_EXIT: u32 = 4;
pub(crate) const RECORD_THROTTLE: u32 = 5;
pub(crate) const RECORD_UNTHROTTLE: u32 = 6;
pub(crate) const RECORD_FORK: u32 = 7;
pub(crate) const RECORD_SAMPLE: u32 = 9;
pub(crate) const RECORD_MMAP2: u32 = 10;
pub(crate) const RECORD_SWITCH: u32 = 14;

pub(crate) const MISC_CPUMODE_MASK: u16 = 7;
pub(crate) const MISC_USER: u16 = 2;
pub(crate) const MISC_COMM_EXEC: u16 = 1 << 13;
pub(crate) const MISC_SWITCH_OUT: u16 = 1 << 13;
pub(crate) const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
pub(crate) const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

pub(crate) const CONTEXT_KERNEL: u64 = -128i64 as u64;
pub(crate) const CONTEXT_USER: u64 = -512i64 as u64;
pub(crate) const CONTEXT_MAX: u64 = -4095i64 as u64;

/// `sample_id_all` trailer for our sample_type: {pid,tid}, time, {cpu,res}, identifier.
pub(crate) const SAMPLE_ID_LEN: usize = 32;
/// The same trailer of the BPF output event ([`bpf_output_attr`]): {cpu,res}, identifier.
pub(crate) const OUTPUT_ID_LEN: usize = 16;
/// The BPF output event's sample_type: what its samples and its trailer hold.
pub(crate) const OUTPUT_SAMPLE_TYPE: u64 = SAMPLE_IDENTIFIER | SAMPLE_CPU | SAMPLE_RAW;

/// `read()` returns `{value, lost}` (Linux 6.0+).
pub(crate) const FORMAT_LOST: u64 = 1 << 4;

const FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// What to put into the cpu-clock attr.
#[derive(Debug, Clone)]
pub(crate) struct EventSpec {
    pub freq: u64,
    pub stack_user: u32,
    pub max_stack: u16,
    pub user_only: bool,
    /// Whether the kernel walks the user part of each sample's callchain (not when the BPF
    /// copier copies the stacks: the chain is walked over the copy).
    pub user_chain: bool,
    /// Turn on at exec (launch mode); otherwise the caller enables the events.
    pub enable_on_exec: bool,
    /// Follow new threads and children (task events); off for CPU-wide events.
    pub inherit: bool,
    pub wakeup_watermark: u32,
    /// Ask for each mapping's build-id in its MMAP2 record. Only for events that follow
    /// tasks: the kernel sets the build-id flag on the header it shares with every other
    /// session watching the same mapping, and a session that did not ask reads a device/inode
    /// body as a build-id (perf 6.1 aborts). A CPU-wide event sees every mapping of the
    /// machine, so it would damage every other perf session's records.
    pub mmap_build_ids: bool,
}

impl EventSpec {
    /// A counting event on a task and the threads and processes it starts, no samples, no
    /// stacks: enabled by the caller `now`, else by the kernel at the task's exec.
    pub(crate) fn task_counter(now: bool) -> EventSpec {
        EventSpec {
            freq: 0,
            stack_user: 0,
            max_stack: 0,
            user_only: false,
            user_chain: false,
            enable_on_exec: !now,
            inherit: true,
            wakeup_watermark: 0,
            mmap_build_ids: false,
        }
    }
}

/// The sample_type every event uses; `ring`/`recording` parse exactly this layout.
pub(crate) fn sample_type(stack_user: u32) -> u64 {
    let mut t = SAMPLE_IDENTIFIER
        | SAMPLE_IP
        | SAMPLE_TID
        | SAMPLE_TIME
        | SAMPLE_CPU
        | SAMPLE_PERIOD
        | SAMPLE_CALLCHAIN
        | SAMPLE_REGS_USER;
    if stack_user > 0 {
        t |= SAMPLE_STACK_USER;
    }
    t
}

/// Builds the cpu-clock sampling attr with all side-band records switched on.
pub(crate) fn cpu_clock_attr(spec: &EventSpec) -> pe::bindings::perf_event_attr {
    let mut a = pe::bindings::perf_event_attr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<pe::bindings::perf_event_attr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_type: sample_type(spec.stack_user),
        read_format: FORMAT_LOST,
        sample_regs_user: REGS_MASK_X86_64,
        sample_stack_user: spec.stack_user,
        sample_max_stack: spec.max_stack,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    };
    a.__bindgen_anon_1.sample_freq = spec.freq;
    a.__bindgen_anon_2.wakeup_watermark = spec.wakeup_watermark;
    a.set_freq(1);
    a.set_disabled(1);
    a.set_enable_on_exec(u64::from(spec.enable_on_exec));
    a.set_inherit(u64::from(spec.inherit));
    a.set_mmap(1);
    a.set_mmap2(1);
    a.set_build_id(u64::from(spec.mmap_build_ids));
    a.set_comm(1);
    a.set_comm_exec(1);
    a.set_task(1);
    a.set_sample_id_all(1);
    a.set_use_clockid(1);
    a.set_watermark(1);
    a.set_exclude_hv(1);
    a.set_exclude_guest(1);
    a.set_exclude_kernel(u64::from(spec.user_only));
    a.set_exclude_callchain_user(u64::from(!spec.user_chain));
    a
}

/// The sample_type of the counting events: just enough to attribute each event to a task, and
/// the same `sample_id_all` trailer as the cpu-clock event, which they share a ring with.
pub(crate) const COUNTER_SAMPLE_TYPE: u64 =
    SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU;

/// Builds a software event (`config`: page faults, or the dummy event of switch records) that
/// writes one small sample per occurrence, so each can be attributed to its task.
pub(crate) fn counter_attr(config: u64, spec: &EventSpec) -> pe::bindings::perf_event_attr {
    let mut a = pe::bindings::perf_event_attr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<pe::bindings::perf_event_attr>() as u32,
        config,
        sample_type: COUNTER_SAMPLE_TYPE,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    };
    a.__bindgen_anon_1.sample_period = 1;
    a.set_disabled(1);
    a.set_enable_on_exec(u64::from(spec.enable_on_exec));
    a.set_inherit(u64::from(spec.inherit));
    a.set_sample_id_all(1);
    a.set_use_clockid(1);
    a.set_exclude_hv(1);
    a.set_exclude_guest(1);
    a.set_exclude_kernel(u64::from(spec.user_only));
    a
}

/// Builds the per-CPU event BPF programs write records into (`bpf_perf_event_output`): one
/// sample per record, its data as `PERF_SAMPLE_RAW`, with its identifier and CPU only: the
/// thread and the time cost each record ~0.2 us of the sampled task's time (`bpf_stats`), and
/// a copy is paired with its sample by CPU and stack pointer. Its trailer (on the lost-records
/// notices it may write into the cpu-clock ring it shares) is then [`OUTPUT_ID_LEN`] long.
/// Enabled at once: it writes only what a program gives it.
pub(crate) fn bpf_output_attr() -> pe::bindings::perf_event_attr {
    let mut a = pe::bindings::perf_event_attr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<pe::bindings::perf_event_attr>() as u32,
        config: PERF_COUNT_SW_BPF_OUTPUT,
        sample_type: OUTPUT_SAMPLE_TYPE,
        // The copies it could not write, read at the end of the run.
        read_format: FORMAT_LOST,
        // Never read (no time is asked for), but a ring is shared only by events of one clock.
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    };
    a.__bindgen_anon_1.sample_period = 1;
    a.set_sample_id_all(1);
    a.set_use_clockid(1);
    a
}

/// Which parts of a callchain a tracepoint record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChainParts {
    pub kernel: bool,
    pub user: bool,
}

/// The sample_type of a tracepoint event (see [`crate::tracepoint::sample_type`]).
pub(crate) fn tracepoint_sample_type(chain: ChainParts, stack_user: u32) -> u64 {
    crate::tracepoint::sample_type(chain.kernel, chain.user, stack_user)
}

/// Builds a tracepoint event writing one record per hit (`counting` false), or a counting-mode
/// twin that only counts hits, read at the end to check the records against (OSprof's
/// checksums).
pub(crate) fn tracepoint_attr(
    id: u64,
    chain: ChainParts,
    stack_user: u32,
    counting: bool,
    spec: &EventSpec,
) -> pe::bindings::perf_event_attr {
    let mut a = pe::bindings::perf_event_attr {
        type_: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<pe::bindings::perf_event_attr>() as u32,
        config: id,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    };
    if !counting {
        a.sample_type = tracepoint_sample_type(chain, stack_user);
        a.__bindgen_anon_1.sample_period = 1;
        a.sample_max_stack = spec.max_stack;
        if chain.user {
            a.sample_regs_user = REGS_MASK_X86_64;
            a.sample_stack_user = stack_user;
        }
        a.set_exclude_callchain_kernel(u64::from(!chain.kernel));
        a.set_exclude_callchain_user(u64::from(!chain.user));
        a.set_sample_id_all(1);
        a.set_use_clockid(1);
    }
    a.set_disabled(1);
    a.set_enable_on_exec(u64::from(spec.enable_on_exec));
    a.set_inherit(u64::from(spec.inherit));
    a
}

/// Builds a dummy software event whose only output is `PERF_RECORD_SWITCH` in/out records of
/// the tasks it follows (when each blocked or was preempted, and when it ran again).
pub(crate) fn switch_attr(spec: &EventSpec) -> pe::bindings::perf_event_attr {
    let mut a = counter_attr(PERF_COUNT_SW_DUMMY, spec);
    a.set_context_switch(1);
    a
}

/// Builds a dummy event whose only output is the task records (fork, exit, the comm of an
/// exec) of the tasks it follows, into a small ring of its own that wakes the collector at
/// each record: a new process or program is read from /proc while it runs, however long the
/// collector sleeps otherwise. Its records are not read (the cpu-clock ring has the same).
pub(crate) fn task_wake_attr(spec: &EventSpec) -> pe::bindings::perf_event_attr {
    let mut a = counter_attr(PERF_COUNT_SW_DUMMY, spec);
    a.__bindgen_anon_2.wakeup_watermark = 1;
    a.set_watermark(1);
    a.set_task(1);
    a.set_comm(1);
    a.set_comm_exec(1);
    a
}

/// Sets a tracepoint's kernel-side filter (`common_pid == 42 && id != 0`): records that do
/// not match are never written.
pub(crate) fn set_filter(fd: &OwnedFd, filter: &std::ffi::CStr) -> io::Result<()> {
    // Safety: `fd` is an open tracepoint event; the kernel copies the NUL-terminated string
    // and does not write through the pointer despite its type.
    let r = unsafe { pe::ioctls::SET_FILTER(fd.as_raw_fd(), filter.as_ptr().cast_mut()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads a counting event's value (`read_format` 0).
pub(crate) fn read_count(fd: &OwnedFd) -> io::Result<u64> {
    let mut v = 0u64;
    // Safety: reading at most 8 bytes into an 8-byte local.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&raw mut v).cast(), 8) };
    if n != 8 {
        return Err(io::Error::last_os_error());
    }
    Ok(v)
}

/// The kernel's id of an event (what `PERF_SAMPLE_IDENTIFIER` reports).
pub(crate) fn event_id(fd: &OwnedFd) -> io::Result<u64> {
    let mut id = 0u64;
    // Safety: `fd` is an open perf event descriptor and `id` a valid out-pointer.
    let r = unsafe { pe::ioctls::ID(fd.as_raw_fd(), &mut id) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(id)
}

/// Calls `perf_event_open` with `PERF_FLAG_FD_CLOEXEC` so the workload never inherits the fd.
pub(crate) fn open(
    attr: &mut pe::bindings::perf_event_attr,
    pid: i32,
    cpu: i32,
) -> io::Result<OwnedFd> {
    // Safety: `attr` is a valid, initialized attr of the size stored in `attr.size`; the kernel
    // only reads it (and may write the supported size back on E2BIG, which is in bounds).
    let fd = unsafe { pe::perf_event_open(attr, pid, cpu, -1, FLAG_FD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // Safety: the kernel just returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Redirects `fd`'s records into the ring buffer mapped on `target`.
pub(crate) fn set_output(fd: &OwnedFd, target: &OwnedFd) -> io::Result<()> {
    // Safety: both are open perf event descriptors; SET_OUTPUT takes an fd by value.
    let r = unsafe { pe::ioctls::SET_OUTPUT(fd.as_raw_fd(), target.as_raw_fd()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Enables (`true`) or disables the event.
pub(crate) fn set_enabled(fd: &OwnedFd, on: bool) -> io::Result<()> {
    // Safety: `fd` is an open perf event descriptor; the argument 0 means "this event only".
    let r = unsafe {
        if on {
            pe::ioctls::ENABLE(fd.as_raw_fd(), 0)
        } else {
            pe::ioctls::DISABLE(fd.as_raw_fd(), 0)
        }
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads the `PERF_FORMAT_LOST` count of an event: samples it could not write to its ring.
pub(crate) fn read_lost(fd: &OwnedFd) -> io::Result<u64> {
    let mut v = [0u64; 2];
    // Safety: reading at most 16 bytes into a 16-byte local; the layout is {value, lost}.
    let n = unsafe { libc::read(fd.as_raw_fd(), v.as_mut_ptr().cast(), 16) };
    if n != 16 {
        return Err(io::Error::last_os_error());
    }
    Ok(v[1])
}
