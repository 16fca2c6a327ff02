//! The measurement-info file, `gmon.out.<pid>.<comm>`: what is needed besides a process's two
//! gmon files to read them again, later or on another machine.
//!
//! [`MeasurementInfo`] is its typed form; [`MeasurementInfo::parse`] reads it and
//! [`MeasurementInfo::write`] writes it. The format, specified below, is pkgprof's own. It is
//! text so that a person can read it and `diff` two of them, and versioned so that it can grow.
//!
//! # Format, version 1.1
//!
//! ```text
//! pkgprof-info 1.1
//!
//! [process]
//! pid = 137
//! ppid = 1
//! comm = "cat"
//! argv = ["cat", "/etc/motd"]
//! exe = "/usr/bin/cat"
//! exe-build-id = 5d4a1e1a0b0c2f9e6d7c8b9a0f1e2d3c4b5a6978
//! start-realtime-ns = 1700000000000000000
//! start-monotonic-ns = 5000000000
//! end-realtime-ns = 1700000000250000000
//! end-monotonic-ns = 5250000000
//!
//! [sampling]
//! event = "cpu-clock"
//! frequency = 997
//! period-unit = "ns"
//! arcs = sampled-edges
//! lost-samples = 0
//! throttled = 0
//!
//! [mapping]
//! start = 0x555555554000
//! end = 0x555555558000
//! offset = 0x0
//! bias = 0x555555554000
//! path = "/usr/bin/cat"
//! mapped-ns = 5000100000
//!
//! [end]
//! ```
//!
//! ## Lines
//!
//! The file is UTF-8. Lines end in `\n`; a `\r` before it is ignored, and so is a missing `\n`
//! at the end of the file. No control character other than tab may appear (strings escape
//! theirs). Spaces and tabs at either end of a line and around `=` do not count.
//!
//! * The first line is `pkgprof-info <major>.<minor>`, both decimal.
//! * `[name]` starts a section. The sections below are known; `[mapping]` and `[rename]` may
//!   repeat, the others may appear once each.
//! * `key = value` sets a key of the current section. A key may not come before the first
//!   section, nor appear twice in one section.
//! * Blank lines and lines whose first other character is `#` are comments. They are not kept:
//!   writing what was read drops them.
//! * `[end]` ends the file: it is its last line, ends in `\n`, and nothing follows it, not
//!   even a blank line. From version 1.1 on it is required, so that a file cut short anywhere
//!   (a full disk, a collector killed while writing) is refused, naming the line where the end
//!   is missing, instead of being read as a shorter measurement. A version 1.0 file (written
//!   before 1.1 existed) may lack it and is read as before.
//!
//! Section names and keys are made of ASCII letters, digits, `-`, `_` and `.`.
//!
//! ## Values
//!
//! * A *number* is an unsigned 64-bit integer, decimal (`137`) or hexadecimal (`0x7f3a`, either
//!   case). Pids must fit 32 bits. Addresses are written in hexadecimal, the rest in decimal.
//! * A *string* is in double quotes. Inside, `\"`, `\\`, `\n`, `\t`, `\r` and `\xHH` (one byte,
//!   any case) are escapes; any other character stands for its UTF-8 bytes. A string is a byte
//!   string, so paths and arguments that are not UTF-8 are kept exactly. The writer escapes
//!   `"` and `\`, control characters, invisible direction and line-separator characters, and
//!   bytes that are not UTF-8, and writes everything else as itself. Strings marked *text*
//!   below must decode to UTF-8.
//! * A *list* is `[` strings separated by commas `]`, on one line: `["cat", "-n"]`, `[]`.
//! * *Hex bytes* (build-ids) are an even number of hex digits, without quotes or `0x`.
//! * A *word* is one of the listed bare words.
//!
//! ## Keys
//!
//! Every key is optional except where marked required.
//!
//! `[process]` (required section):
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `pid` | number, required | process id, as in the file names |
//! | `ppid` | number | parent's process id |
//! | `comm` | string | command name (at most 64 bytes) |
//! | `instances` | number | how many processes with this pid and comm the files hold, when the pid was reused during the measurement and their profiles were merged; absent means one |
//! | `argv` | list | command line |
//! | `exe` | string | path of the executable |
//! | `exe-build-id` | hex bytes | its GNU build-id |
//! | `start-realtime-ns`, `start-monotonic-ns` | number | when profiling of the process began, in `CLOCK_REALTIME` and `CLOCK_MONOTONIC` nanoseconds |
//! | `end-realtime-ns`, `end-monotonic-ns` | number | when it ended, on the same clocks |
//!
//! `[sampling]`:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `event` | text | the sampling event, e.g. `cpu-clock`, `cycles` |
//! | `frequency` | number | samples per second asked for; excludes `period` |
//! | `period` | number | one sample every this many units; excludes `frequency` |
//! | `period-unit` | text | what the event counts, e.g. `ns`, `cycles`, `events` |
//! | `arcs` | word `calls` or `sampled-edges` | whether arc counts are exact call counts (`mcount`) or counts of caller-callee edges seen in sampled call chains |
//! | `lost-samples` | number | samples the kernel dropped (sum of `PERF_RECORD_LOST`) |
//! | `throttled` | number | times the kernel throttled the event (`PERF_RECORD_THROTTLE`) |
//! | `lost-samples-cpu<N>` | number | samples the kernel dropped on CPU `<N>` (decimal, no leading zero), one key per CPU that lost any, in CPU order; they sum to `lost-samples` |
//! | `truncated-stacks` | number | samples of this process whose user stack may lack outer frames |
//! | `truncated-stack-copy` | number | those whose user stack copy ended first |
//! | `truncated-callchain-limit` | number | those cut by the kernel's callchain depth limit (or the most frames kept) |
//! | `truncated-unwind-info` | number | those with a frame unwound neither by unwind information nor by frame pointer; the three sum to `truncated-stacks` |
//! | `stack-size` | number | bytes of user stack copied with each sample |
//! | `max-stack` | number | the callchain depth limit the run had |
//!
//! `[kernel]`:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `release` | text | `uname -r` |
//! | `build-id` | hex bytes | the kernel's GNU build-id |
//! | `symbols-file` | text | file name, in the measurement directory, of the kernel-symbol snapshot; a single path component |
//!
//! `[counters]`, the process's kernel counters over the measurement:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `user-cpu-ns`, `system-cpu-ns` | number | CPU time in user and system mode |
//! | `minor-faults`, `major-faults` | number | page faults |
//! | `voluntary-switches`, `involuntary-switches` | number | context switches |
//! | `read-bytes`, `written-bytes` | number | bytes read and written |
//! | `source` | string `"taskstats"` or `"proc"` | where the counters above come from: the kernel's taskstats exit records, or `/proc/PID/{stat,status,io}` |
//! | `taskstats` | word `refused` | the collector was refused taskstats records (every process's counters then come from `/proc`) |
//! | `perf-page-faults`, `perf-context-switches`, `perf-cpu-migrations` | number | counted from perf software events; only in measurements written before November 2026 |
//!
//! `[mapping]`, one per memory mapping of the process over time, in the order written:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `start`, `end` | number, required | address range, end exclusive |
//! | `offset` | number | file offset mapped at `start` |
//! | `bias` | number | load bias: add it (wrapping) to an address in the ELF file to get the runtime address |
//! | `path` | string | mapped file, or a pseudo-path such as `[vdso]` |
//! | `build-id` | hex bytes | the file's GNU build-id |
//! | `mapped-ns` | number | when it was mapped, `CLOCK_MONOTONIC` nanoseconds |
//! | `unmapped-ns` | number | when it was unmapped or replaced; absent if it lasted to the end |
//! | `runtime-start` | number | the address the mapping had in the process, when `start` is not it: a mapping placed where an earlier one of the same image, of another file or placement, had been (a library unloaded and another loaded in its place) is written displaced, see [`Mapping::runtime_start`] |
//!
//! `[boundary]`, the samples by how their kernel part was entered from user space:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `syscall`, `fault`, `interrupt`, `other`, … | number | samples whose kernel part was entered so: one key per [`BoundaryKind`], named by [`BoundaryKind::as_str`], in the order of [`BoundaryKind::ALL`] |
//! | `user-only` | number | samples without kernel frames |
//! | `kernel-only` | number | samples without user frames (kernel threads, exits) |
//! | `stacks-file` | text | file name, in the measurement directory, of the process's sampled-stacks file; a single path component |
//!
//! `[rename]`, one per name a thread of the process gave itself (`prctl(PR_SET_NAME)`), in
//! order (pkgmon writes the first 1,000):
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `monotonic-ns` | number, required | when, `CLOCK_MONOTONIC` nanoseconds |
//! | `tid` | number, required | the thread (fits 32 bits) |
//! | `comm` | string, required | its new name (at most 64 bytes) |
//!
//! ## Writing
//!
//! The writer is deterministic: the version line, a blank line, then `[process]`, `[sampling]`,
//! `[kernel]`, `[counters]`, the `[mapping]` sections, `[boundary]`, the `[rename]` sections
//! and the unknown sections, separated by
//! blank lines; each section's known keys in the order of the tables above, then its unknown
//! keys; `key = value` with one space either side of `=`; one `\n` after every line. Sections
//! other than `[process]` are left out when they hold nothing, and keys whose value is absent
//! are left out. Reading a file that this writer wrote and writing it again gives the same
//! bytes.
//!
//! ## Versions and growth
//!
//! A new minor version only adds keys, sections or words of meaning that an older reader may
//! ignore. A reader keeps the unknown keys of known sections and the unknown sections, with
//! their values as written, in order, and writes them back: unknown keys after the known ones
//! of their section and unknown sections after the known ones. A reader refuses a file of a
//! newer major version ([`ErrorKind::UnsupportedInfoVersion`](crate::ErrorKind::UnsupportedInfoVersion)) and writes back the newer of
//! its own minor version and the file's.

use std::collections::BTreeMap;
use std::io;

use super::boundary::BoundaryKind;
use super::name::Comm;
use crate::error::Result;

mod keys;
mod parse;
mod values;
mod write;

/// The word that starts the first line of a measurement-info file.
pub const INFO_MAGIC: &str = "pkgprof-info";

/// The major version this crate reads and writes; files of a newer one are refused.
pub const INFO_MAJOR: u32 = 1;

/// The minor version this crate writes at least. 1.1 added the `[end]` line.
pub const INFO_MINOR: u32 = 1;

/// Where the collector puts the mappings it displaces ([`Mapping::runtime_start`]): above
/// every user address of x86-64 with 4- or 5-level page tables (and of arm64) and below the
/// kernel's half, `0x8000_0000_0000_0000`, so never an address a process ran at. Each
/// displaced mapping gets a slot of its own, [`DISPLACED_MAPPING_SLOT`] bytes apart.
pub const DISPLACED_MAPPINGS_START: u64 = 0x4000_0000_0000_0000;

/// The distance between the slots of displaced mappings (2 TiB): a mapping keeps its address
/// modulo 1 TiB (so its page offsets and alignment) within its slot.
pub const DISPLACED_MAPPING_SLOT: u64 = 1 << 41;

/// The contents of a measurement-info file.
///
/// The file format is specified in [`crate::measurement_info`]. Fields whose key is absent
/// from the file are `None`; all are `None` or empty by default, and `pid` is 0.
///
/// ```
/// use gmon_format::{ArcCounts, MeasurementInfo, SampleRate};
///
/// # fn main() -> gmon_format::Result<()> {
/// let mut info = MeasurementInfo::default();
/// info.process.pid = 137;
/// info.process.argv = Some(vec![b"cat".to_vec(), b"/etc/motd".to_vec()]);
/// info.sampling.rate = Some(SampleRate::Frequency(997));
/// info.sampling.arcs = Some(ArcCounts::SampledEdges);
///
/// let mut text = Vec::new();
/// info.write(&mut text)?;
/// assert_eq!(
///     String::from_utf8_lossy(&text),
///     "pkgprof-info 1.1\n\n\
///      [process]\npid = 137\nargv = [\"cat\", \"/etc/motd\"]\n\n\
///      [sampling]\nfrequency = 997\narcs = sampled-edges\n\n\
///      [end]\n"
/// );
/// assert_eq!(MeasurementInfo::parse(&text)?, info);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MeasurementInfo {
    /// `[process]`: who was measured, and when.
    pub process: ProcessInfo,
    /// `[sampling]`: how.
    pub sampling: SamplingInfo,
    /// `[kernel]`: which kernel.
    pub kernel: KernelInfo,
    /// `[counters]`: the process's kernel counters.
    pub counters: ProcessCounters,
    /// `[mapping]` sections: the process's memory map over time.
    pub mappings: Vec<Mapping>,
    /// `[boundary]`: samples by kind of kernel entry.
    pub boundary: BoundaryCounts,
    /// `[rename]` sections: names the process's threads gave themselves, in order.
    pub renames: Vec<Rename>,
    /// Sections this version does not know, kept to be written back.
    pub extra_sections: Vec<Section>,
    /// The minor version to write: ours, or a newer file's.
    minor: u32,
}

impl Default for MeasurementInfo {
    fn default() -> Self {
        MeasurementInfo {
            process: ProcessInfo::default(),
            sampling: SamplingInfo::default(),
            kernel: KernelInfo::default(),
            counters: ProcessCounters::default(),
            mappings: Vec::new(),
            boundary: BoundaryCounts::default(),
            renames: Vec::new(),
            extra_sections: Vec::new(),
            minor: INFO_MINOR,
        }
    }
}

/// The `[process]` section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProcessInfo {
    /// `pid`: process id. Required in a file; default is 0.
    pub pid: u32,
    /// `ppid`: parent's process id.
    pub ppid: Option<u32>,
    /// `comm`: command name.
    pub comm: Option<Comm>,
    /// `instances`: how many processes with this pid and comm the files hold, when the pid was
    /// reused during the measurement and their profiles were merged. `None` means one.
    pub instances: Option<u64>,
    /// `argv`: the command line, each argument as bytes.
    pub argv: Option<Vec<Vec<u8>>>,
    /// `exe`: path of the executable, as bytes.
    pub exe: Option<Vec<u8>>,
    /// `exe-build-id`: the executable's GNU build-id. Never empty.
    pub exe_build_id: Option<Vec<u8>>,
    /// `start-realtime-ns`: when profiling began, `CLOCK_REALTIME` nanoseconds.
    pub start_realtime_ns: Option<u64>,
    /// `start-monotonic-ns`: when profiling began, `CLOCK_MONOTONIC` nanoseconds.
    pub start_monotonic_ns: Option<u64>,
    /// `end-realtime-ns`: when profiling ended, `CLOCK_REALTIME` nanoseconds.
    pub end_realtime_ns: Option<u64>,
    /// `end-monotonic-ns`: when profiling ended, `CLOCK_MONOTONIC` nanoseconds.
    pub end_monotonic_ns: Option<u64>,
    /// Keys this version does not know, kept to be written back.
    pub extra: Vec<Field>,
}

/// The `[sampling]` section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SamplingInfo {
    /// `event`: the sampling event, e.g. `cpu-clock`.
    pub event: Option<String>,
    /// `frequency` or `period`.
    pub rate: Option<SampleRate>,
    /// `period-unit`: what the event counts, e.g. `ns`, `cycles`.
    pub period_unit: Option<String>,
    /// `arcs`: what the arc counts of the gmon files are.
    pub arcs: Option<ArcCounts>,
    /// `lost-samples`: samples the kernel dropped.
    pub lost_samples: Option<u64>,
    /// `throttled`: times the kernel throttled the event.
    pub throttled: Option<u64>,
    /// `lost-samples-cpu<N>`: samples the kernel dropped on CPU `N`, for the CPUs that lost
    /// any. Written in CPU order.
    pub lost_samples_by_cpu: BTreeMap<u32, u64>,
    /// `truncated-stacks`: samples whose user stack may lack outer frames.
    pub truncated_stacks: Option<u64>,
    /// `truncated-stack-copy`: of those, the ones whose user stack copy ended first.
    pub truncated_stack_copy: Option<u64>,
    /// `truncated-callchain-limit`: of those, the ones cut by the callchain depth limit.
    pub truncated_callchain_limit: Option<u64>,
    /// `truncated-unwind-info`: of those, the ones with a frame nothing could unwind.
    pub truncated_unwind_info: Option<u64>,
    /// `stack-size`: bytes of user stack copied with each sample.
    pub stack_size: Option<u64>,
    /// `max-stack`: the callchain depth limit of the run.
    pub max_stack: Option<u64>,
    /// Keys this version does not know, kept to be written back.
    pub extra: Vec<Field>,
}

/// How often samples were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleRate {
    /// `frequency`: samples per second (the kernel adjusts the period to reach it).
    Frequency(u64),
    /// `period`: one sample every this many units of the event.
    Period(u64),
}

/// What the arc counts of a process's gmon files mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArcCounts {
    /// `calls`: exact call counts, as `mcount` records them.
    Calls,
    /// `sampled-edges`: how often each caller-callee edge appeared in sampled call chains.
    SampledEdges,
}

impl ArcCounts {
    /// The word for it in a file.
    pub fn as_str(self) -> &'static str {
        match self {
            ArcCounts::Calls => "calls",
            ArcCounts::SampledEdges => "sampled-edges",
        }
    }
}

/// The `[kernel]` section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct KernelInfo {
    /// `release`: `uname -r`.
    pub release: Option<String>,
    /// `build-id`: the kernel's GNU build-id. Never empty.
    pub build_id: Option<Vec<u8>>,
    /// `symbols-file`: name of the kernel-symbol snapshot in the measurement directory. A single
    /// path component, so that reading it cannot leave the directory.
    pub symbols_file: Option<String>,
    /// Keys this version does not know, kept to be written back.
    pub extra: Vec<Field>,
}

/// The `[counters]` section: the process's kernel counters over the measurement.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProcessCounters {
    /// `user-cpu-ns`: CPU time in user mode, nanoseconds.
    pub user_cpu_ns: Option<u64>,
    /// `system-cpu-ns`: CPU time in the kernel, nanoseconds.
    pub system_cpu_ns: Option<u64>,
    /// `minor-faults`: page faults served without I/O.
    pub minor_faults: Option<u64>,
    /// `major-faults`: page faults that needed I/O.
    pub major_faults: Option<u64>,
    /// `voluntary-switches`: context switches while waiting.
    pub voluntary_switches: Option<u64>,
    /// `involuntary-switches`: preemptions.
    pub involuntary_switches: Option<u64>,
    /// `read-bytes`: bytes read.
    pub read_bytes: Option<u64>,
    /// `written-bytes`: bytes written.
    pub written_bytes: Option<u64>,
    /// `source`: where the counters come from.
    pub source: Option<CounterSource>,
    /// `taskstats = refused`: the collector was refused taskstats exit records.
    pub taskstats_refused: bool,
    /// `perf-page-faults`: page faults counted by a perf software event (measurements written
    /// before November 2026).
    pub perf_page_faults: Option<u64>,
    /// `perf-context-switches`: context switches counted by a perf software event (before
    /// November 2026).
    pub perf_context_switches: Option<u64>,
    /// `perf-cpu-migrations`: CPU migrations counted by a perf software event (before
    /// November 2026).
    pub perf_cpu_migrations: Option<u64>,
    /// Keys this version does not know, kept to be written back.
    pub extra: Vec<Field>,
}

/// Where a process's counters come from: the `source` key of `[counters]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CounterSource {
    /// `"taskstats"`: the kernel's taskstats exit records of all the process's threads.
    Taskstats,
    /// `"proc"`: `/proc/PID/{stat,status,io}`, read while the process lived.
    Proc,
}

impl CounterSource {
    /// All sources.
    pub const ALL: [CounterSource; 2] = [CounterSource::Taskstats, CounterSource::Proc];

    /// Its name in a file (inside the quotes) and in the report header.
    pub fn as_str(self) -> &'static str {
        match self {
            CounterSource::Taskstats => "taskstats",
            CounterSource::Proc => "proc",
        }
    }
}

/// The `[boundary]` section: the process's samples by how their kernel part was entered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BoundaryCounts {
    /// One key per [`BoundaryKind`]: samples whose kernel part was entered so.
    pub entries: BTreeMap<BoundaryKind, u64>,
    /// `user-only`: samples without kernel frames.
    pub user_only: Option<u64>,
    /// `kernel-only`: samples without user frames.
    pub kernel_only: Option<u64>,
    /// `stacks-file`: name of the process's sampled-stacks file in the measurement directory.
    /// A single path component.
    pub stacks_file: Option<String>,
    /// Keys this version does not know, kept to be written back.
    pub extra: Vec<Field>,
}

/// A `[rename]` section: a name a thread of the process gave itself.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rename {
    /// `monotonic-ns`: when, `CLOCK_MONOTONIC` nanoseconds.
    pub monotonic_ns: u64,
    /// `tid`: the thread.
    pub tid: u32,
    /// `comm`: its new name.
    pub comm: Comm,
    /// Keys this version does not know, kept to be written back.
    pub extra: Vec<Field>,
}

impl Rename {
    /// Thread `tid` named itself `comm` at `monotonic_ns`.
    pub fn new(monotonic_ns: u64, tid: u32, comm: Comm) -> Self {
        Rename {
            monotonic_ns,
            tid,
            comm,
            extra: Vec::new(),
        }
    }
}

/// A `[mapping]` section: one memory mapping of the process, and when it existed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Mapping {
    /// `start`: first address.
    pub start: u64,
    /// `end`: address after the last.
    pub end: u64,
    /// `offset`: file offset mapped at `start`.
    pub file_offset: Option<u64>,
    /// `bias`: added (wrapping) to an address of the ELF file, gives the runtime address.
    pub load_bias: Option<u64>,
    /// `path`: the mapped file, or a pseudo-path such as `[vdso]`.
    pub path: Option<Vec<u8>>,
    /// `build-id`: the file's GNU build-id. Never empty.
    pub build_id: Option<Vec<u8>>,
    /// `mapped-ns`: when it was mapped, `CLOCK_MONOTONIC` nanoseconds.
    pub mapped_ns: Option<u64>,
    /// `unmapped-ns`: when it was unmapped or replaced; `None` if it lasted to the end.
    pub unmapped_ns: Option<u64>,
    /// `runtime-start`: the address the mapping had in the process, when `start` is not it.
    ///
    /// The profiles keep addresses, not times, so two mappings of one image over the same
    /// addresses (a library unloaded and another, or the same one elsewhere in its file,
    /// loaded in its place) would make their addresses ambiguous. The collector writes the
    /// later one displaced into addresses no process uses, from
    /// [`DISPLACED_MAPPINGS_START`] on: `start`, `end` and `bias` moved by
    /// `start - runtime_start`, and so are its samples' addresses in every profile of the
    /// image, so that each address names one mapping. `None` for a mapping written where it
    /// was.
    pub runtime_start: Option<u64>,
    /// Keys this version does not know, kept to be written back.
    pub extra: Vec<Field>,
}

impl Mapping {
    /// A mapping of `start..end` with nothing else known.
    pub fn new(start: u64, end: u64) -> Self {
        Mapping {
            start,
            end,
            ..Mapping::default()
        }
    }
}

/// A section this version does not know, kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Its name, without brackets.
    pub name: String,
    /// Its keys and values, in order.
    pub fields: Vec<Field>,
}

/// A key this version does not know, kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The key.
    pub key: String,
    /// The value's text as it appeared after `=`, without surrounding blanks.
    pub value: String,
}

impl Field {
    /// A key and the text of its value.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> Self {
        Field {
            key: key.into(),
            value: value.into(),
        }
    }
}

const PROCESS: &str = "process";
const SAMPLING: &str = "sampling";
const KERNEL: &str = "kernel";
const COUNTERS: &str = "counters";
const MAPPING: &str = "mapping";
const BOUNDARY: &str = "boundary";
const RENAME: &str = "rename";
/// The section-like line that ends a file.
const END: &str = "end";

impl MeasurementInfo {
    /// The version the file declared (or ours, if newer): `(major, minor)`.
    pub fn version(&self) -> (u32, u32) {
        (INFO_MAJOR, self.minor)
    }

    /// Reads a measurement-info file.
    ///
    /// Unknown keys and sections are kept in [`Field`]s and [`Section`]s. Returns an error of
    /// kind [`ErrorKind::UnsupportedInfoVersion`](crate::ErrorKind::UnsupportedInfoVersion) if the file is of a newer major version, and
    /// otherwise of kind [`ErrorKind::Info`](crate::ErrorKind::Info), naming the line and byte offset, if the file does
    /// not follow [the format](crate::measurement_info): a wrong first line, bytes that are not
    /// UTF-8, a control character, a line that is neither a section, a `key = value` nor a
    /// comment, a key outside a section, a section or key given twice, a value of the wrong
    /// type, both `frequency` and `period`, a missing `[process]` section, `pid`, or
    /// mapping `start` or `end`, text after `[end]`, or (from version 1.1 on) a missing `[end]`
    /// line: the file was cut short.
    pub fn parse(data: &[u8]) -> Result<Self> {
        parse::Parser::new(data)?.parse()
    }

    /// Writes the file, as described in [the format](crate::measurement_info#writing).
    ///
    /// Nothing is written unless all of it can be. Returns an error of kind
    /// [`ErrorKind::InvalidInfo`](crate::ErrorKind::InvalidInfo) if something would not read back the same: an empty build-id,
    /// a `symbols_file` that is not a single path component, or an unknown key, section or
    /// value that is malformed or has the name of a known one. Returns [`ErrorKind::Io`](crate::ErrorKind::Io) if
    /// `out` fails.
    pub fn write<W: io::Write>(&self, mut out: W) -> Result<()> {
        let text = self.to_text()?;
        out.write_all(text.as_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
