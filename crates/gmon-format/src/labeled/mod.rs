//! Process-labeled profile sets: the files a measurement leaves in its directory (pkprof
//! paper, §4.7–4.8), their names, the measurement-info file, the sampled-stacks file, and
//! listing a directory of them.
//!
//! # The measurement directory (normative)
//!
//! This is the contract between the collector (`pkgmon`, crate `collect-perf`) and the report
//! (`pkgprof --pid`). A measurement directory (`pkgmon -o DIR`, default `pkgmon.data`) holds,
//! for each profiled process, the files below. A process is a thread group: all threads of a process go
//! into its files. A process that `exec`s gets a new file set under its new command name (and
//! keeps its pid); an image that an exec replaced before it was sampled (a forked child between
//! `fork` and `exec`) gets none, but a process's last image always gets one. When a pid is
//! reused during a measurement, each process gets its own file set: the later ones carry an
//! instance number after the pid, `gmon.out.4242_1u.cmd` (see
//! [`ProfileName`](crate::ProfileName#reused-pids-the-instance-number)). Measurements written
//! before instance numbers existed merged them into one file set and counted them in the info
//! file's `instances`.
//!
//! | file | contents |
//! |---|---|
//! | `gmon.out.<pid>u.<comm>` | user profile (1) |
//! | `gmon.out.<pid>k.<comm>` | profile of the kernel working for the process (2) |
//! | `gmon.out.<pid>.<comm>` | measurement info (3) |
//! | `kallsyms.<boot-id>` | kernel symbols at record time (4) |
//! | `gmon.out.<pid>s.<comm>` | sampled stacks (5) |
//! | `gmon.out.-k.kernel`, `gmon.out.-k.other` | system-wide kernel profiles, `pkgmon -a` only (6) |
//! | `vdso.<build-id>` | the vDSO image the processes ran (7) |
//! | `gmon.out.<pid>l.<comm>` | system-call latencies and blocking, `pkgmon --latency`/`--blocking` only (8) |
//! | `async.moves` | asynchronous-event attribution: who gave kernel work to whom, `pkgmon --async` only (9, [`async_moves`]) |
//! | `manifest.sha256` | every file's size and SHA-256, written last ([`manifest`]) |
//!
//! Names are built and parsed by [`ProfileName`], which also says how a
//! command name is escaped.
//!
//! 1. **User profile.** GNU tagged gmon, version 1, with the machine's address width and byte
//!    order (64-bit little-endian on x86_64). Addresses are *runtime* virtual addresses of the
//!    process, so the executable, its libraries, `ld.so` and the vDSO live in one file without
//!    clashing; the info file's `[mapping]` sections relate them to files. The one exception:
//!    a mapping placed where an earlier mapping of the same image, of another file or
//!    placement, had been (a library unloaded and another loaded in its place) has its
//!    addresses displaced, in this file, the kernel profile's boundary arcs, the stacks file
//!    and the latency file alike, to where its `[mapping]` section says it is, and that
//!    section's `runtime-start` says where it was (see [`Mapping::runtime_start`](crate::Mapping::runtime_start)); else a
//!    sample of the first library would be read as the second's.
//!    - Histogram: one tag-0 record per run of contiguous 4 KiB pages holding samples, with
//!      `low_pc` and `high_pc` page-aligned (`high_pc` exclusive) and bins of 2 bytes, so every
//!      record has the same scale (gprof requires it). `prof_rate` is the sampling frequency
//!      in Hz, the dimension `seconds`, abbreviation `s`. Records are sorted by address. A bin
//!      count above 65535 is carried by further records of the same range (gprof adds records
//!      with identical ranges).
//!    - Arcs: caller→callee edges of the sampled user stacks. `from_pc` is the return address
//!      in the caller's frame, `self_pc` the pc of the callee's frame (the sampled pc for the
//!      innermost frame, the return address into it for the others). `count` is the number of
//!      samples whose stack holds that edge; a sample counts an edge at most once. Sorted by
//!      (`from_pc`, `self_pc`). A count above 2³²−1 is carried by further records of the same
//!      edge. The info file says `arcs = sampled-edges`.
//!    - A stack that could not be unwound to its outermost frame adds one more arc, from
//!      `from_pc` 0 to its outermost frame found, so that a report does not take that frame
//!      for a root (pkgprof shows the caller as `[truncated]`).
//!    - A stack unwound to its outermost frame adds one more arc, from `from_pc`
//!      [`ROOT_FROM_PC`] (1) to that frame: how often it was a root. A function can be both a
//!      root and a callee (glibc's `clone3` starts every new thread's stack and is what
//!      `pthread_create` calls), and gprof's arithmetic shares a function's time among its
//!      callers by their arcs: without its entries as a root counted, one sample of
//!      `pthread_create` in `clone3` gave it every thread's time. pkgprof draws these arcs
//!      only into functions that have callers too (as `[root]`); plain gprof finds no symbol
//!      at 1 and drops them, as it drops the arcs from 0. Measurements written before
//!      November 2026 have none.
//!    - User stacks are unwound from `.eh_frame` on a copy of the user stack (frames known by
//!      their stack position, so recursion is no obstacle); where the copy ends, the kernel's
//!      frame-pointer chain goes on from a frame both walks found at the same place, so the
//!      caller of a frameless function (glibc's `read`) is right and deep stacks are whole.
//! 2. **Kernel profile** of the kernel working for the process (in system calls, faults and
//!    interrupts that hit while it ran). Same layout, kernel runtime addresses (at or above
//!    `0x8000_0000_0000_0000`). Arcs kernel→kernel as above, plus one *boundary arc* per sample
//!    that has both parts: `from_pc` = the innermost user pc (the sample's user pc, e.g. inside
//!    libc's `read`), `self_pc` = the outermost kernel frame (the entry point, e.g.
//!    `entry_SYSCALL_64_after_hwframe`). User addresses are below `0x8000_0000_0000_0000`, so
//!    the two ends cannot be confused; plain gprof shows such arcs as `<spontaneous>`.
//!    Boundary arcs of every kind are written; the info file's `[boundary]` section and the
//!    stacks file say which kind each was.
//! 3. **Measurement info**, [`MeasurementInfo`], format in
//!    [`crate::measurement_info`]. The collector writes:
//!    - `[process]` `pid`, `ppid`, `comm`, `instances` (when above one), `argv` (the launched
//!      command's, or `/proc/PID/cmdline` of a process seen alive), `exe` and `exe-build-id`
//!      (from the mapping of the executable), `start-*-ns` and `end-*-ns`.
//!    - `[sampling]` `event = "cpu-clock"`, `frequency`, `period-unit = "ns"`,
//!      `arcs = sampled-edges`, `lost-samples` (of the whole measurement), one
//!      `lost-samples-cpu<N>` per CPU that lost any (their sum is `lost-samples`),
//!      `throttled`, `truncated-stacks`: samples of this process whose user stack may lack
//!      outer frames, and the same by reason: `truncated-stack-copy` (the user stack copy ended
//!      first), `truncated-callchain-limit` (the kernel's callchain depth limit, or the most
//!      frames kept, was reached), `truncated-unwind-info` (a frame could be unwound neither by
//!      unwind information nor by frame pointer); they sum to `truncated-stacks`. Then
//!      `stack-size`, the bytes of user stack copied with each sample, and `max-stack`, the
//!      callchain depth limit the run had. Losses cannot be attributed to processes: every profiled task that runs
//!      on a CPU writes into that CPU's ring buffer, and a `PERF_RECORD_LOST` (or the event's
//!      own lost count) says how many samples did not fit that ring, not whose they were. Per
//!      CPU, the collector takes the larger of the two counts.
//!    - `[kernel]` `release`, `build-id` (from `/sys/kernel/notes`, if readable),
//!      `symbols-file` = the name of the snapshot (4).
//!    - `[counters]`: `user-cpu-ns`, `system-cpu-ns`, `minor-faults`, `major-faults`,
//!      `voluntary-switches`, `involuntary-switches`, `read-bytes` and `written-bytes`
//!      (bytes passed through read and write system calls), and `source`, which says where
//!      they come from:
//!      - `"taskstats"`: for a process that ended during the run (the launched command too),
//!        when the collector may register for the kernel's taskstats exit records (root:
//!        `CAP_NET_ADMIN`, initial network namespace) and got the record of every thread exit
//!        it saw of that process. The records of all its threads are summed, so even a process
//!        that lived microseconds has counts over its whole life. Each thread's CPU time is its
//!        exact runtime (`cpu_run_virtual_total`, the scheduler's own sum, in ns) split between
//!        user and system in the ratio of the kernel's tick-sampled `ac_utime` and `ac_stime`,
//!        as the kernel scales them for `/proc` (all user when the ticks saw no system time).
//!        The ticks alone are not a measure of short tasks: at 250 Hz a task that ran 2 ms
//!        has 0 or 4 ms, and on a loaded machine, where tasks start running right after the
//!        tick that switched them in, fifty 2 ms children showed 12 to 36 ms in all. A kernel
//!        without delay accounting has no runtime in the record; then the tick-sampled times
//!        are written (measurements written before November 2026 have those too). When the
//!        process also has a `/proc` reading (from a poll while it lived, or for the launched
//!        command the one taken while it was a zombie, `waitid(WNOWAIT)`), each other counter
//!        is the larger of the two (a counter only grows, so the reading is a lower bound),
//!        and so are the CPU times when they are tick-sampled.
//!      - `"proc"`: `/proc/PID/{stat,status,io}` (CPU time in clock ticks × 10⁹ / `CLK_TCK`;
//!        `rchar`, `wchar`), when taskstats records are missing: the launched command's read
//!        while it is a zombie, so they cover its whole life; any other process's the last
//!        values read by a periodic poll (every 100 ms by default) while it was alive, so they
//!        miss up to one interval at its end. A process still running at the end of the run,
//!        or whose exit records were lost, or every process when taskstats is refused, has
//!        these.
//!
//!      When taskstats is refused the collector says so (a warning, and `taskstats = refused`
//!      in every info file) and a process that never lived through a poll has no counters.
//!
//!      Measurements written before November 2026 also have `perf-page-faults`,
//!      `perf-context-switches` and `perf-cpu-migrations`, counted per process and image from
//!      perf software events sampled at every occurrence; the collector no longer opens them,
//!      because a record per fault and per switch made fault- and switch-heavy code a third
//!      slower, and the faults and switches are among the counters above.
//!    - One `[mapping]` per executable mapping, with `start`, `end`, `offset`, `bias` (runtime
//!      address − ELF virtual address, from the ELF program headers when the file is readable
//!      and its build-id matches; absent otherwise), `path`, `build-id`, `mapped-ns` and
//!      `unmapped-ns`; and `runtime-start` for a displaced one (see (1)), whose `start`,
//!      `end` and `bias` are displaced as its samples are.
//!    - `[boundary]`: sample counts per boundary kind, keys `syscall`, `fault`, `interrupt`,
//!      `other` (see [`BoundaryKind`]), plus `user-only` (samples without
//!      kernel frames), `kernel-only` (samples without user frames: kernel threads, exits) and
//!      `stacks-file` = the name of the stacks file (5).
//!    - One `[rename]` per name a thread of the process gave itself while this image ran
//!      (`prctl(PR_SET_NAME)`, `pthread_setname_np`; not an exec), in order: `monotonic-ns`,
//!      `tid` and the new `comm`; pkgmon writes the first 1,000 of a process and counts the
//!      others in a warning. The file names keep the command name of the exec.
//! 4. **Kernel symbols**: `kallsyms.<boot-id>`, a verbatim copy of `/proc/kallsyms` taken at
//!    record time (`ffffffff81000000 T _stext`), `<boot-id>` being the first 8 hex digits of
//!    `/proc/sys/kernel/random/boot_id`: KASLR moves the kernel at each boot, so snapshots of
//!    different boots must not overwrite each other. If its addresses read as 0
//!    (`kptr_restrict`), the collector warns and the report says kernel symbols are
//!    unavailable.
//! 5. **Sampled stacks**, [`crate::stacks`]: each distinct full stack (kernel frames, then user
//!    frames, each innermost first, with its boundary kind) and how many samples and
//!    nanoseconds it had. It gives exact inclusive times (each function counted once per
//!    sample).
//! 6. **System-wide kernel profiles** (`pkgmon -a`): `gmon.out.-k.kernel` holds kernel work done
//!    for no process — samples of pid 0 (the idle task and interrupts that hit it) and of kernel
//!    threads (tasks without a user context, e.g. `kworker`, `ksoftirqd`) — and
//!    `gmon.out.-k.other` the kernel part of the samples of user processes that were not asked
//!    for. Same kernel layout, without boundary arcs (except the residue of `--async`, 9).
//! 7. **The vDSO**: `vdso.<build-id>` ([`vdso_file_name`]), a copy of the kernel's vDSO
//!    image (an ELF shared object that exists only in memory), with its GNU build-id in
//!    lower-case hex. The collector saves the copy mapped into itself, the one every 64-bit
//!    process of the running kernel maps, when a profiled process had a `[vdso]` mapping whose
//!    build-id (recorded in that `[mapping]`, with its `bias`) is the copy's. A report
//!    symbolizes addresses in a `[vdso]` mapping with the file of its build-id, so
//!    `clock_gettime`'s time shows as `__vdso_clock_gettime` instead of `[vdso]`.
//! 8. **Latencies** (`pkgmon --latency`, `--blocking`), [`crate::latency`]: per system call
//!    and user call site, the latency distribution in log2 buckets at resolution r (OSprof),
//!    optionally per time slice, page faults per call, and with `--blocking` the DeBox
//!    summary: time blocked and runnable, sleeps by kernel site, wakers; with OSprof's
//!    checksums (records received against counting-mode twins, lost records, unpaired calls).
//! 9. **Asynchronous-event attribution** (`pkgmon --async`), [`async_moves`]: kernel work done
//!    asynchronously (network receive, block completion, work items, timers) is in the files
//!    of the process it served, not of the process it interrupted. Such a sample's kernel frames are cut
//!    at the softirq entry (its user frames and the frames outside the entry are the victim's
//!    and are dropped); its kernel profile counts its hit and arcs as for any kernel stack,
//!    plus one boundary arc from `from_pc` **0** (no user caller) to its outermost frame,
//!    and its stacks record has no user frames and the boundary kind of the work
//!    (`async-net-rx`, classified from the entry symbols by the one rule). The residue (work
//!    no consumer was found for) is in `gmon.out.-k.kernel` in the same form. `async.moves`
//!    says who gave how much to whom, and (version 1.1) which stacks left which file set for
//!    which: what a reader takes out and puts back for the view as recorded.
//!
//! **Boundary kinds.** A sample's kernel chain is classified by the kernel symbols of its
//! outermost frames with [`BoundaryKind::classify`], the one rule (the collector applies it
//! when recording, a report to a boundary arc's entry symbol):
//! `entry_SYSCALL_64*`, `entry_SYSENTER*`, `entry_INT80*`, `do_syscall_*` are system calls;
//! `asm_exc_*`, `exc_*` (page faults and other exceptions) faults; `asm_sysvec_*`,
//! `sysvec_*`, `*_interrupt` interrupts; `ret_from_fork*` (a new thread's first return to
//! user space) and anything else `other`. When the outermost frame is `other`, it looks at up
//! to two frames further in (entry code sometimes ends in a thunk). A report must
//! not draw interrupt boundaries as calls from the user function: an interrupt's kernel time
//! gets a `<spontaneous>`-style parent or a labelled pseudo-function.
//!
//! **Complete or refused.** Every file is created new under a random temporary name in the
//! directory (opened once; `O_EXCL|O_NOFOLLOW`), synced, and renamed to its name without
//! replacing anything there, so an interrupted run never leaves a partial file under a final
//! name and never writes through a planted link. The manifest is written first as a
//! placeholder and last complete ([`MeasurementWriter`]); a report refuses a directory whose
//! manifest is incomplete or does not match its files ([`Measurement::verify`]).

mod boundary;
mod name;
mod sampled;
mod scan;

pub mod async_moves;
pub mod continuous;
pub mod info;
pub mod latency;
pub mod manifest;
pub mod stacks;

/// The `from_pc` of the user profile's arcs that count how often a frame was the outermost
/// of a complete stack (see the user profile's arcs above). Never a code address: the first
/// page is never mapped.
pub const ROOT_FROM_PC: u64 = 1;

pub use async_moves::{ASYNC_MOVES_FILE, AsyncMoves, KindTotals, Move, MovedStack};
pub use boundary::{BoundaryKind, ENTRY_FRAMES};
pub use info::{
    ArcCounts, BoundaryCounts, CounterSource, DISPLACED_MAPPING_SLOT, DISPLACED_MAPPINGS_START,
    Field, INFO_MAGIC, INFO_MAJOR, INFO_MINOR, KernelInfo, Mapping, MeasurementInfo,
    ProcessCounters, ProcessInfo, Rename, SampleRate, SamplingInfo, Section,
};
pub use manifest::{
    MANIFEST_NAME, MEASUREMENT_MAX_HOLES, Manifest, ManifestEntry, MeasurementWriter, Verification,
    is_measurement_file,
};
pub use name::{
    Comm, FileKind, INSTANCE_SEPARATOR, NAME_PREFIX, ProfileName, acts_on_terminal,
    parse_process_label, printable, process_label, vdso_file_name,
};
pub use sampled::{sampled_sum, write_sampled_profile};
pub use scan::{Measurement, ProcessFiles, Skipped, scan};
pub use stacks::{
    Frames, STACKS_MAGIC, STACKS_MAJOR, STACKS_MINOR, Stack, StackRecord, StackRecords, Stacks,
    StacksHeader, StacksWriter,
};
