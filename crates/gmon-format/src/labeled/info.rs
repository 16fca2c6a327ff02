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
//! * `[name]` starts a section. The sections below are known; `[mapping]` may repeat, the
//!   others may appear once each.
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
//!
//! ## Writing
//!
//! The writer is deterministic: the version line, a blank line, then `[process]`, `[sampling]`,
//! `[kernel]`, `[counters]`, the `[mapping]` sections and the unknown sections, separated by
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
//! newer major version ([`ErrorKind::UnsupportedInfoVersion`]) and writes back the newer of
//! its own minor version and the file's.

use std::fmt::Write as _;
use std::io;

use super::name::Comm;
use crate::error::{Error, ErrorKind, Result};

/// The word that starts the first line of a measurement-info file.
pub const INFO_MAGIC: &str = "pkgprof-info";

/// The major version this crate reads and writes; files of a newer one are refused.
pub const INFO_MAJOR: u32 = 1;

/// The minor version this crate writes at least. 1.1 added the `[end]` line.
pub const INFO_MINOR: u32 = 1;

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
    /// Keys this version does not know, kept to be written back.
    pub extra: Vec<Field>,
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
/// The section-like line that ends a file.
const END: &str = "end";

const PROCESS_KEYS: &[&str] = &[
    "pid",
    "ppid",
    "comm",
    "instances",
    "argv",
    "exe",
    "exe-build-id",
    "start-realtime-ns",
    "start-monotonic-ns",
    "end-realtime-ns",
    "end-monotonic-ns",
];
const SAMPLING_KEYS: &[&str] = &[
    "event",
    "frequency",
    "period",
    "period-unit",
    "arcs",
    "lost-samples",
    "throttled",
];
const KERNEL_KEYS: &[&str] = &["release", "build-id", "symbols-file"];
const COUNTER_KEYS: &[&str] = &[
    "user-cpu-ns",
    "system-cpu-ns",
    "minor-faults",
    "major-faults",
    "voluntary-switches",
    "involuntary-switches",
    "read-bytes",
    "written-bytes",
];
const MAPPING_KEYS: &[&str] = &[
    "start",
    "end",
    "offset",
    "bias",
    "path",
    "build-id",
    "mapped-ns",
    "unmapped-ns",
];

impl MeasurementInfo {
    /// The version the file declared (or ours, if newer): `(major, minor)`.
    pub fn version(&self) -> (u32, u32) {
        (INFO_MAJOR, self.minor)
    }

    /// Reads a measurement-info file.
    ///
    /// Unknown keys and sections are kept in [`Field`]s and [`Section`]s. Returns an error of
    /// kind [`ErrorKind::UnsupportedInfoVersion`] if the file is of a newer major version, and
    /// otherwise of kind [`ErrorKind::Info`], naming the line and byte offset, if the file does
    /// not follow [the format](crate::measurement_info): a wrong first line, bytes that are not
    /// UTF-8, a control character, a line that is neither a section, a `key = value` nor a
    /// comment, a key outside a section, a section or key given twice, a value of the wrong
    /// type, both `frequency` and `period`, a missing `[process]` section, `pid`, or
    /// mapping `start` or `end`, text after `[end]`, or (from version 1.1 on) a missing `[end]`
    /// line: the file was cut short.
    pub fn parse(data: &[u8]) -> Result<Self> {
        Parser::new(data)?.parse()
    }

    /// Writes the file, as described in [the format](crate::measurement_info#writing).
    ///
    /// Nothing is written unless all of it can be. Returns an error of kind
    /// [`ErrorKind::InvalidInfo`] if something would not read back the same: an empty build-id,
    /// a `symbols_file` that is not a single path component, or an unknown key, section or
    /// value that is malformed or has the name of a known one. Returns [`ErrorKind::Io`] if
    /// `out` fails.
    pub fn write<W: io::Write>(&self, mut out: W) -> Result<()> {
        let text = self.to_text()?;
        out.write_all(text.as_bytes())?;
        Ok(())
    }

    fn to_text(&self) -> Result<String> {
        let mut w = TextWriter {
            text: String::new(),
        };
        let _ = writeln!(w.text, "{INFO_MAGIC} {INFO_MAJOR}.{}", self.minor);

        let p = &self.process;
        w.section(PROCESS);
        w.decimal("pid", Some(u64::from(p.pid)));
        w.decimal("ppid", p.ppid.map(u64::from));
        w.string("comm", p.comm.as_ref().map(Comm::as_bytes));
        w.decimal("instances", p.instances);
        if let Some(argv) = &p.argv {
            w.key("argv");
            w.text.push('[');
            for (i, arg) in argv.iter().enumerate() {
                if i > 0 {
                    w.text.push_str(", ");
                }
                push_quoted(&mut w.text, arg);
            }
            w.text.push_str("]\n");
        }
        w.string("exe", p.exe.as_deref());
        w.hex_bytes("exe-build-id", p.exe_build_id.as_deref())?;
        w.decimal("start-realtime-ns", p.start_realtime_ns);
        w.decimal("start-monotonic-ns", p.start_monotonic_ns);
        w.decimal("end-realtime-ns", p.end_realtime_ns);
        w.decimal("end-monotonic-ns", p.end_monotonic_ns);
        w.extra(PROCESS, PROCESS_KEYS, &p.extra)?;

        let s = &self.sampling;
        if *s != SamplingInfo::default() {
            w.section(SAMPLING);
            w.string("event", s.event.as_ref().map(String::as_bytes));
            match s.rate {
                Some(SampleRate::Frequency(hz)) => w.decimal("frequency", Some(hz)),
                Some(SampleRate::Period(n)) => w.decimal("period", Some(n)),
                None => {}
            }
            w.string("period-unit", s.period_unit.as_ref().map(String::as_bytes));
            if let Some(arcs) = s.arcs {
                w.key("arcs");
                w.text.push_str(arcs.as_str());
                w.text.push('\n');
            }
            w.decimal("lost-samples", s.lost_samples);
            w.decimal("throttled", s.throttled);
            w.extra(SAMPLING, SAMPLING_KEYS, &s.extra)?;
        }

        let k = &self.kernel;
        if *k != KernelInfo::default() {
            w.section(KERNEL);
            w.string("release", k.release.as_ref().map(String::as_bytes));
            w.hex_bytes("build-id", k.build_id.as_deref())?;
            if let Some(file) = &k.symbols_file {
                check_file_name(file).map_err(|why| invalid(format!("symbols-file: {why}")))?;
            }
            w.string(
                "symbols-file",
                k.symbols_file.as_ref().map(String::as_bytes),
            );
            w.extra(KERNEL, KERNEL_KEYS, &k.extra)?;
        }

        let c = &self.counters;
        if *c != ProcessCounters::default() {
            w.section(COUNTERS);
            w.decimal("user-cpu-ns", c.user_cpu_ns);
            w.decimal("system-cpu-ns", c.system_cpu_ns);
            w.decimal("minor-faults", c.minor_faults);
            w.decimal("major-faults", c.major_faults);
            w.decimal("voluntary-switches", c.voluntary_switches);
            w.decimal("involuntary-switches", c.involuntary_switches);
            w.decimal("read-bytes", c.read_bytes);
            w.decimal("written-bytes", c.written_bytes);
            w.extra(COUNTERS, COUNTER_KEYS, &c.extra)?;
        }

        for m in &self.mappings {
            w.section(MAPPING);
            w.hex("start", Some(m.start));
            w.hex("end", Some(m.end));
            w.hex("offset", m.file_offset);
            w.hex("bias", m.load_bias);
            w.string("path", m.path.as_deref());
            w.hex_bytes("build-id", m.build_id.as_deref())?;
            w.decimal("mapped-ns", m.mapped_ns);
            w.decimal("unmapped-ns", m.unmapped_ns);
            w.extra(MAPPING, MAPPING_KEYS, &m.extra)?;
        }

        for section in &self.extra_sections {
            if !is_name(&section.name) {
                return Err(invalid(format!(
                    "section name `{}` is not made of letters, digits, `-`, `_` and `.`",
                    section.name.escape_debug()
                )));
            }
            if [PROCESS, SAMPLING, KERNEL, COUNTERS, MAPPING, END].contains(&section.name.as_str())
            {
                return Err(invalid(format!(
                    "unknown section has the name of the known section [{}]",
                    section.name
                )));
            }
            w.section(&section.name);
            w.extra(&section.name, &[], &section.fields)?;
        }
        w.section(END);
        Ok(w.text)
    }
}

fn invalid(why: String) -> Error {
    Error::new(ErrorKind::InvalidInfo(why))
}

struct TextWriter {
    text: String,
}

impl TextWriter {
    fn section(&mut self, name: &str) {
        let _ = write!(self.text, "\n[{name}]\n");
    }

    fn key(&mut self, key: &str) {
        self.text.push_str(key);
        self.text.push_str(" = ");
    }

    fn decimal(&mut self, key: &str, value: Option<u64>) {
        if let Some(v) = value {
            let _ = writeln!(self.text, "{key} = {v}");
        }
    }

    fn hex(&mut self, key: &str, value: Option<u64>) {
        if let Some(v) = value {
            let _ = writeln!(self.text, "{key} = {v:#x}");
        }
    }

    fn string(&mut self, key: &str, value: Option<&[u8]>) {
        if let Some(v) = value {
            self.key(key);
            push_quoted(&mut self.text, v);
            self.text.push('\n');
        }
    }

    fn hex_bytes(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        if let Some(v) = value {
            if v.is_empty() {
                return Err(invalid(format!("empty {key} (leave it out instead)")));
            }
            self.key(key);
            for b in v {
                let _ = write!(self.text, "{b:02x}");
            }
            self.text.push('\n');
        }
        Ok(())
    }

    fn extra(&mut self, section: &str, known: &[&str], fields: &[Field]) -> Result<()> {
        for Field { key, value } in fields {
            if !is_name(key) {
                return Err(invalid(format!(
                    "key `{}` in [{section}] is not made of letters, digits, `-`, `_` and `.`",
                    key.escape_debug()
                )));
            }
            if known.contains(&key.as_str()) {
                return Err(invalid(format!(
                    "unknown key `{key}` in [{section}] has the name of a known one"
                )));
            }
            if value.is_empty()
                || value.starts_with([' ', '\t'])
                || value.ends_with([' ', '\t'])
                || value.chars().any(|c| c.is_control() && c != '\t')
            {
                return Err(invalid(format!(
                    "value of `{key}` in [{section}] is empty, has blanks at an end or holds a \
                     control character: `{}`",
                    value.escape_debug()
                )));
            }
            let _ = writeln!(self.text, "{key} = {value}");
        }
        Ok(())
    }
}

/// Writes `bytes` as a quoted string, escaping what the module docs say.
fn push_quoted(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if hidden(c) => {
                    for b in c.encode_utf8(&mut [0; 4]).bytes() {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
}

/// Characters written as `\xHH` escapes although they are valid UTF-8: control characters, and
/// those that reorder or split lines on screen, so that what is read is what is there.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
        )
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_name_char)
}

/// Why a kernel-symbol file name is not a single path component, if it is not.
fn check_file_name(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() || name == "." || name == ".." {
        Err("must name a file in the measurement directory")
    } else if name.contains(['/', '\\', '\0']) {
        Err("must be a file name without a directory")
    } else {
        Ok(())
    }
}

/// A problem inside a value: its byte offset from the value's start, and what it is.
type ValueError = (usize, String);

/// The section whose keys the parser is reading.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Current {
    None,
    Process,
    Sampling,
    Kernel,
    Counters,
    /// The last of `mappings`.
    Mapping,
    /// The last of `extra_sections`.
    Extra,
}

/// Where a section started, and which known keys it has had.
#[derive(Clone, Copy)]
struct Seen {
    line: usize,
    offset: usize,
    keys: u64,
}

struct Parser<'a> {
    text: &'a str,
    /// Offset in the file of `text`, which starts after the version line.
    base: usize,
    info: MeasurementInfo,
    current: Current,
    process: Option<Seen>,
    sampling: Option<Seen>,
    kernel: Option<Seen>,
    counters: Option<Seen>,
    /// One per entry of `info.mappings`.
    mappings: Vec<Seen>,
    /// The minor version the file declared.
    declared_minor: u32,
    /// The line number of `[end]`, once read.
    end: Option<usize>,
}

fn error(line: usize, offset: usize, message: impl Into<String>) -> Error {
    Error::at(
        offset as u64,
        ErrorKind::Info {
            line,
            message: message.into(),
        },
    )
}

/// At most the first `max` bytes of `bytes`, as text, to quote in a message.
fn excerpt(bytes: &[u8], max: usize) -> String {
    let shown = &bytes[..bytes.len().min(max)];
    let mut s = String::from_utf8_lossy(shown).escape_debug().to_string();
    if bytes.len() > max {
        s.push('…');
    }
    s
}

/// Parses a decimal number with nothing around it.
fn decimal_u32(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

impl<'a> Parser<'a> {
    /// Checks the version line and the encoding.
    fn new(data: &'a [u8]) -> Result<Self> {
        let first_end = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
        let first = &data[..first_end];
        let first = first.strip_suffix(b"\r").unwrap_or(first);
        let prefix = format!("{INFO_MAGIC} ");
        let Some(version) = first.strip_prefix(prefix.as_bytes()) else {
            return Err(error(
                1,
                0,
                format!(
                    "not a pkgprof measurement-info file: the first line must be \
                     `{INFO_MAGIC} <major>.<minor>`"
                ),
            ));
        };
        let at = prefix.len();
        let dot = version.iter().position(|&b| b == b'.');
        let major = decimal_u32(&version[..dot.unwrap_or(version.len())]);
        // A newer major version may change anything after its number, so it is refused before
        // the rest of the line is looked at.
        if major.is_some_and(|m| m > INFO_MAJOR) {
            return Err(Error::at(
                at as u64,
                ErrorKind::UnsupportedInfoVersion {
                    found: excerpt(version, 32),
                    supported: INFO_MAJOR,
                },
            ));
        }
        let minor = dot.and_then(|d| decimal_u32(&version[d + 1..]));
        let (Some(major), Some(minor)) = (major, minor) else {
            return Err(error(
                1,
                at,
                format!(
                    "malformed version `{}`: expected <major>.<minor>",
                    excerpt(version, 32)
                ),
            ));
        };
        if major < INFO_MAJOR {
            return Err(error(
                1,
                at,
                format!("unknown version {major}.{minor}: the first version is 1.0"),
            ));
        }
        let text = match std::str::from_utf8(data) {
            Ok(text) => text,
            Err(e) => {
                let bad = e.valid_up_to();
                let line = 1 + data[..bad].iter().filter(|&&b| b == b'\n').count();
                return Err(error(line, bad, "invalid utf-8"));
            }
        };
        let base = (first_end + 1).min(data.len());
        // Keeping the newer minor version keeps `parse(write(info)) == info`.
        let info = MeasurementInfo {
            minor: minor.max(INFO_MINOR),
            ..MeasurementInfo::default()
        };
        Ok(Parser {
            text: &text[base..],
            base,
            info,
            current: Current::None,
            process: None,
            sampling: None,
            kernel: None,
            counters: None,
            mappings: Vec::new(),
            declared_minor: minor,
            end: None,
        })
    }

    fn parse(mut self) -> Result<MeasurementInfo> {
        let mut offset = self.base;
        let mut number = 1;
        for raw in self.text.split_inclusive('\n') {
            number += 1;
            let line = raw.strip_suffix('\n').unwrap_or(raw);
            let line = line.strip_suffix('\r').unwrap_or(line);
            self.line(number, offset, line)?;
            offset += raw.len();
        }
        let end = (number + 1, self.base + self.text.len());
        match self.end {
            None if self.declared_minor >= 1 => {
                return Err(error(
                    end.0,
                    end.1,
                    "the file ends without its `[end]` line: it was cut short (files of \
                     version 1.1 and later end with one)",
                ));
            }
            Some(line) if !self.text.ends_with('\n') => {
                return Err(error(
                    line,
                    end.1,
                    "the `[end]` line has no line end: the file was cut short",
                ));
            }
            _ => {}
        }
        let Some(process) = self.process else {
            return Err(error(end.0, end.1, "missing [process] section"));
        };
        if process.keys & 1 == 0 {
            return Err(error(process.line, process.offset, "[process] has no pid"));
        }
        for seen in &self.mappings {
            for (bit, key) in [(0, "start"), (1, "end")] {
                if seen.keys & (1 << bit) == 0 {
                    return Err(error(
                        seen.line,
                        seen.offset,
                        format!("[mapping] has no {key}"),
                    ));
                }
            }
        }
        Ok(self.info)
    }

    /// Reads one line (without its end) that starts at byte `offset` of the file.
    fn line(&mut self, number: usize, offset: usize, line: &str) -> Result<()> {
        if let Some(end) = self.end {
            return Err(error(
                number,
                offset,
                format!("text after the `[end]` line {end}, which must be the last"),
            ));
        }
        if let Some((at, c)) = line
            .char_indices()
            .find(|&(_, c)| c.is_control() && c != '\t')
        {
            return Err(error(
                number,
                offset + at,
                format!("control character U+{:04X}", u32::from(c)),
            ));
        }
        let body = line.trim_start_matches([' ', '\t']);
        let start = offset + (line.len() - body.len());
        let body = body.trim_end_matches([' ', '\t']);
        if body.is_empty() || body.starts_with('#') {
            return Ok(());
        }
        if let Some(rest) = body.strip_prefix('[') {
            let name = rest.strip_suffix(']').unwrap_or(rest);
            if name.len() == rest.len() || !is_name(name) {
                return Err(error(
                    number,
                    start,
                    "a section header is `[name]`, the name made of letters, digits, `-`, `_` \
                     and `.`",
                ));
            }
            return self.section(number, start, name);
        }
        let key_len = body.find(|c| !is_name_char(c)).unwrap_or(body.len());
        let (key, rest) = body.split_at(key_len);
        let after_key = rest.trim_start_matches([' ', '\t']);
        let Some(value) = after_key.strip_prefix('=') else {
            return Err(error(
                number,
                start + key_len,
                "expected `key = value`, `[section]`, a `#` comment or a blank line",
            ));
        };
        if key.is_empty() {
            return Err(error(number, start, "missing key before `=`"));
        }
        if self.current == Current::None {
            return Err(error(
                number,
                start,
                format!("`{key}` comes before the first [section]"),
            ));
        }
        let value = value.trim_start_matches([' ', '\t']);
        let value_at = start + (body.len() - value.len());
        if value.is_empty() {
            return Err(error(
                number,
                value_at,
                format!("missing value after `{key} =`"),
            ));
        }
        match self.key(key, value) {
            Ok(()) => Ok(()),
            Err(KeyError::Again(section)) => Err(error(
                number,
                start,
                format!("`{key}` again in [{section}]"),
            )),
            Err(KeyError::Value(at, message)) => Err(error(number, value_at + at, message)),
        }
    }

    fn section(&mut self, number: usize, offset: usize, name: &str) -> Result<()> {
        let seen = Seen {
            line: number,
            offset,
            keys: 0,
        };
        let (slot, current) = match name {
            END => {
                self.end = Some(number);
                self.current = Current::None;
                return Ok(());
            }
            PROCESS => (&mut self.process, Current::Process),
            SAMPLING => (&mut self.sampling, Current::Sampling),
            KERNEL => (&mut self.kernel, Current::Kernel),
            COUNTERS => (&mut self.counters, Current::Counters),
            MAPPING => {
                self.info.mappings.push(Mapping::default());
                self.mappings.push(seen);
                self.current = Current::Mapping;
                return Ok(());
            }
            _ => {
                self.info.extra_sections.push(Section {
                    name: name.to_owned(),
                    fields: Vec::new(),
                });
                self.current = Current::Extra;
                return Ok(());
            }
        };
        if let Some(first) = slot {
            return Err(error(
                number,
                offset,
                format!("[{name}] again (first on line {})", first.line),
            ));
        }
        *slot = Some(seen);
        self.current = current;
        Ok(())
    }

    /// Stores one key's value.
    fn key(&mut self, key: &str, value: &str) -> std::result::Result<(), KeyError> {
        let (known, seen, section) = match self.current {
            Current::None => return Ok(()),
            Current::Extra => {
                if let Some(section) = self.info.extra_sections.last_mut() {
                    section.fields.push(Field::new(key, value));
                }
                return Ok(());
            }
            Current::Process => (PROCESS_KEYS, self.process.as_mut(), PROCESS),
            Current::Sampling => (SAMPLING_KEYS, self.sampling.as_mut(), SAMPLING),
            Current::Kernel => (KERNEL_KEYS, self.kernel.as_mut(), KERNEL),
            Current::Counters => (COUNTER_KEYS, self.counters.as_mut(), COUNTERS),
            Current::Mapping => (MAPPING_KEYS, self.mappings.last_mut(), MAPPING),
        };
        let Some(index) = known.iter().position(|&k| k == key) else {
            let field = Field::new(key, value);
            match self.current {
                Current::Process => self.info.process.extra.push(field),
                Current::Sampling => self.info.sampling.extra.push(field),
                Current::Kernel => self.info.kernel.extra.push(field),
                Current::Counters => self.info.counters.extra.push(field),
                Current::Mapping => {
                    if let Some(m) = self.info.mappings.last_mut() {
                        m.extra.push(field);
                    }
                }
                Current::None | Current::Extra => {}
            }
            return Ok(());
        };
        if let Some(seen) = seen {
            if seen.keys & (1 << index) != 0 {
                return Err(KeyError::Again(section));
            }
            seen.keys |= 1 << index;
        }
        let stored = match self.current {
            Current::Process => set_process(&mut self.info.process, key, value),
            Current::Sampling => set_sampling(&mut self.info.sampling, key, value),
            Current::Kernel => set_kernel(&mut self.info.kernel, key, value),
            Current::Counters => set_counter(&mut self.info.counters, key, value),
            Current::Mapping => match self.info.mappings.last_mut() {
                Some(m) => set_mapping(m, key, value),
                None => Ok(()),
            },
            Current::None | Current::Extra => Ok(()),
        };
        stored.map_err(|(at, message)| KeyError::Value(at, message))
    }
}

/// Why a key's line is refused.
enum KeyError {
    /// The key was already given in this section (named).
    Again(&'static str),
    /// The value is malformed: offset from its start, and message.
    Value(usize, String),
}

fn set_process(p: &mut ProcessInfo, key: &str, value: &str) -> std::result::Result<(), ValueError> {
    match key {
        "pid" => p.pid = number_u32(value)?,
        "ppid" => p.ppid = Some(number_u32(value)?),
        "comm" => {
            let bytes = string(value)?;
            let len = bytes.len();
            p.comm = Some(Comm::new(bytes).map_err(|_| {
                (
                    0,
                    format!(
                        "command name of {len} bytes is longer than {}",
                        Comm::MAX_LEN
                    ),
                )
            })?);
        }
        "instances" => p.instances = Some(number(value)?),
        "argv" => p.argv = Some(string_list(value)?),
        "exe" => p.exe = Some(string(value)?),
        "exe-build-id" => p.exe_build_id = Some(hex_bytes(value)?),
        "start-realtime-ns" => p.start_realtime_ns = Some(number(value)?),
        "start-monotonic-ns" => p.start_monotonic_ns = Some(number(value)?),
        "end-realtime-ns" => p.end_realtime_ns = Some(number(value)?),
        "end-monotonic-ns" => p.end_monotonic_ns = Some(number(value)?),
        _ => {}
    }
    Ok(())
}

fn set_sampling(
    s: &mut SamplingInfo,
    key: &str,
    value: &str,
) -> std::result::Result<(), ValueError> {
    match key {
        "event" => s.event = Some(text(value)?),
        "frequency" | "period" => {
            if s.rate.is_some() {
                return Err((0, "[sampling] has both frequency and period".to_owned()));
            }
            let n = number(value)?;
            s.rate = Some(if key == "frequency" {
                SampleRate::Frequency(n)
            } else {
                SampleRate::Period(n)
            });
        }
        "period-unit" => s.period_unit = Some(text(value)?),
        "arcs" => {
            s.arcs = Some(match value {
                "calls" => ArcCounts::Calls,
                "sampled-edges" => ArcCounts::SampledEdges,
                _ => {
                    return Err((
                        0,
                        format!(
                            "arcs must be `calls` or `sampled-edges`, not `{}`",
                            excerpt(value.as_bytes(), 40)
                        ),
                    ));
                }
            });
        }
        "lost-samples" => s.lost_samples = Some(number(value)?),
        "throttled" => s.throttled = Some(number(value)?),
        _ => {}
    }
    Ok(())
}

fn set_kernel(k: &mut KernelInfo, key: &str, value: &str) -> std::result::Result<(), ValueError> {
    match key {
        "release" => k.release = Some(text(value)?),
        "build-id" => k.build_id = Some(hex_bytes(value)?),
        "symbols-file" => {
            let name = text(value)?;
            check_file_name(&name).map_err(|why| (0, format!("symbols-file {why}")))?;
            k.symbols_file = Some(name);
        }
        _ => {}
    }
    Ok(())
}

fn set_counter(
    c: &mut ProcessCounters,
    key: &str,
    value: &str,
) -> std::result::Result<(), ValueError> {
    let n = Some(number(value)?);
    match key {
        "user-cpu-ns" => c.user_cpu_ns = n,
        "system-cpu-ns" => c.system_cpu_ns = n,
        "minor-faults" => c.minor_faults = n,
        "major-faults" => c.major_faults = n,
        "voluntary-switches" => c.voluntary_switches = n,
        "involuntary-switches" => c.involuntary_switches = n,
        "read-bytes" => c.read_bytes = n,
        "written-bytes" => c.written_bytes = n,
        _ => {}
    }
    Ok(())
}

fn set_mapping(m: &mut Mapping, key: &str, value: &str) -> std::result::Result<(), ValueError> {
    match key {
        "start" => m.start = number(value)?,
        "end" => m.end = number(value)?,
        "offset" => m.file_offset = Some(number(value)?),
        "bias" => m.load_bias = Some(number(value)?),
        "path" => m.path = Some(string(value)?),
        "build-id" => m.build_id = Some(hex_bytes(value)?),
        "mapped-ns" => m.mapped_ns = Some(number(value)?),
        "unmapped-ns" => m.unmapped_ns = Some(number(value)?),
        _ => {}
    }
    Ok(())
}

fn number(value: &str) -> std::result::Result<u64, ValueError> {
    let (digits, radix) = match value.strip_prefix("0x") {
        Some(hex) => (hex, 16),
        None => (value, 10),
    };
    // `from_str_radix` would also take a leading `+`, which is not part of the format.
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err((
            0,
            format!(
                "expected a number, found `{}`",
                excerpt(value.as_bytes(), 40)
            ),
        ));
    }
    u64::from_str_radix(digits, radix).map_err(|_| (0, format!("{value} does not fit 64 bits")))
}

fn number_u32(value: &str) -> std::result::Result<u32, ValueError> {
    let n = number(value)?;
    u32::try_from(n).map_err(|_| (0, format!("{value} does not fit 32 bits")))
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn hex_bytes(value: &str) -> std::result::Result<Vec<u8>, ValueError> {
    let digits = value.as_bytes();
    if let Some(at) = digits.iter().position(|&b| hex_value(b).is_none()) {
        return Err((at, "a build-id is written as hex digits".to_owned()));
    }
    if !digits.len().is_multiple_of(2) {
        return Err((0, "a build-id has an even number of hex digits".to_owned()));
    }
    Ok(digits
        .chunks_exact(2)
        .filter_map(|pair| Some(hex_value(pair[0])? << 4 | hex_value(pair[1])?))
        .collect())
}

/// A whole value that is one string.
fn string(value: &str) -> std::result::Result<Vec<u8>, ValueError> {
    let (bytes, end) = lex_string(value, 0)?;
    let end = skip_blanks(value, end);
    if end != value.len() {
        return Err((end, "unexpected text after the string".to_owned()));
    }
    Ok(bytes)
}

/// A whole value that is one string of UTF-8.
fn text(value: &str) -> std::result::Result<String, ValueError> {
    String::from_utf8(string(value)?).map_err(|_| {
        (
            0,
            "the string's escapes give bytes that are not utf-8".to_owned(),
        )
    })
}

fn skip_blanks(s: &str, mut at: usize) -> usize {
    while matches!(s.as_bytes().get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    at
}

fn string_list(value: &str) -> std::result::Result<Vec<Vec<u8>>, ValueError> {
    let bytes = value.as_bytes();
    if bytes.first() != Some(&b'[') {
        return Err((0, "expected a list of strings in `[` `]`".to_owned()));
    }
    let mut list = Vec::new();
    let mut at = skip_blanks(value, 1);
    if bytes.get(at) == Some(&b']') {
        at += 1;
    } else {
        loop {
            let (item, end) = lex_string(value, at)?;
            list.push(item);
            at = skip_blanks(value, end);
            match bytes.get(at) {
                Some(b',') => at = skip_blanks(value, at + 1),
                Some(b']') => {
                    at += 1;
                    break;
                }
                _ => return Err((at, "expected `,` or `]` after a list item".to_owned())),
            }
        }
    }
    let at = skip_blanks(value, at);
    if at != value.len() {
        return Err((at, "unexpected text after the list".to_owned()));
    }
    Ok(list)
}

/// Reads the quoted string that starts at byte `start` of `s`; returns its bytes and the offset
/// after its closing quote.
fn lex_string(s: &str, start: usize) -> std::result::Result<(Vec<u8>, usize), ValueError> {
    let bytes = s.as_bytes();
    if bytes.get(start) != Some(&b'"') {
        return Err((start, "expected a string in double quotes".to_owned()));
    }
    let mut out = Vec::new();
    let mut i = start + 1;
    loop {
        let Some(&b) = bytes.get(i) else {
            return Err((start, "unterminated string".to_owned()));
        };
        match b {
            b'"' => return Ok((out, i + 1)),
            b'\\' => {
                let escaped = match bytes.get(i + 1) {
                    Some(b'"') => b'"',
                    Some(b'\\') => b'\\',
                    Some(b'n') => b'\n',
                    Some(b't') => b'\t',
                    Some(b'r') => b'\r',
                    Some(b'x') => {
                        let h = bytes.get(i + 2).copied().and_then(hex_value);
                        let l = bytes.get(i + 3).copied().and_then(hex_value);
                        let Some((h, l)) = h.zip(l) else {
                            return Err((i, "`\\x` must be followed by two hex digits".to_owned()));
                        };
                        out.push(h << 4 | l);
                        i += 4;
                        continue;
                    }
                    Some(_) => {
                        let c = s[i + 1..].chars().next().unwrap_or('?');
                        return Err((i, format!("unknown escape `\\{c}`")));
                    }
                    None => return Err((start, "unterminated string".to_owned())),
                };
                out.push(escaped);
                i += 2;
            }
            // The line is UTF-8, so copying byte by byte copies whole characters.
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_of(text: &str) -> Error {
        MeasurementInfo::parse(text.as_bytes()).expect_err(text)
    }

    /// The line, offset and message of an `Info` error.
    fn info_err(text: &str) -> (usize, u64, String) {
        let err = err_of(text);
        match err.kind() {
            ErrorKind::Info { line, message } => {
                (*line, err.offset().expect("offset"), message.clone())
            }
            other => panic!("{text:?}: not an info error: {other:?}"),
        }
    }

    fn written(info: &MeasurementInfo) -> String {
        let mut out = Vec::new();
        info.write(&mut out).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    const HEAD: &str = "pkgprof-info 1.0\n\n[process]\npid = 1\n";

    #[test]
    fn module_doc_example_round_trips() {
        let source = include_str!("info.rs");
        let example: String = source
            .lines()
            .skip_while(|l| *l != "//! ```text")
            .skip(1)
            .take_while(|l| *l != "//! ```")
            .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start_matches(' ')))
            .collect();
        assert!(example.starts_with("pkgprof-info 1.1\n"), "{example}");
        let info = MeasurementInfo::parse(example.as_bytes()).expect("the example parses");
        assert_eq!(written(&info), example);
    }

    #[test]
    fn minimal() {
        let info = MeasurementInfo::parse(b"pkgprof-info 1.0\n[process]\npid = 42").expect("ok");
        assert_eq!(info.process.pid, 42);
        assert_eq!(info.process.ppid, None);
        // A 1.0 file needs no `[end]`; it is written back as 1.1, with one.
        assert_eq!(info.version(), (1, 1));
        assert_eq!(
            written(&info),
            "pkgprof-info 1.1\n\n[process]\npid = 42\n\n[end]\n"
        );
    }

    #[test]
    fn default_writes_pid_zero() {
        assert_eq!(
            written(&MeasurementInfo::default()),
            "pkgprof-info 1.1\n\n[process]\npid = 0\n\n[end]\n"
        );
    }

    #[test]
    fn comments_blanks_crlf_and_spacing() {
        let text = "pkgprof-info 1.0\r\n# made by hand\r\n\r\n  [process]  \r\n\tpid=7 \r\n  # x\nppid\t =\t 0x10\n";
        let info = MeasurementInfo::parse(text.as_bytes()).expect("ok");
        assert_eq!((info.process.pid, info.process.ppid), (7, Some(16)));
        assert_eq!(
            written(&info),
            "pkgprof-info 1.1\n\n[process]\npid = 7\nppid = 16\n\n[end]\n"
        );
    }

    #[test]
    fn strings_round_trip_any_bytes() {
        let mut all: Vec<u8> = (0..=255).collect();
        all.extend("é日本\u{202e}\u{2028}\u{85}\u{feff}".as_bytes());
        all.extend(b"\xc3");
        let mut info = MeasurementInfo::default();
        info.process.exe = Some(all.clone());
        info.process.argv = Some(vec![all.clone(), Vec::new(), b"\"a, b\"".to_vec()]);
        let text = written(&info);
        assert!(text.is_ascii() || std::str::from_utf8(text.as_bytes()).is_ok());
        assert!(
            text.contains("é日本\\xe2\\x80\\xae\\xe2\\x80\\xa8\\xc2\\x85\\xef\\xbb\\xbf\\xc3\"")
        );
        assert!(text.contains(r#", "", "\"a, b\""]"#));
        let back = MeasurementInfo::parse(text.as_bytes()).expect("parses");
        assert_eq!(back, info);
        assert_eq!(written(&back), text);
    }

    #[test]
    fn string_escapes_read() {
        let info = MeasurementInfo::parse(
            format!("{HEAD}exe = \"a\\\"\\\\\\n\\t\\r\\x41\\xFf\tz\"\n").as_bytes(),
        )
        .expect("ok");
        assert_eq!(
            info.process.exe.as_deref(),
            Some(&b"a\"\\\n\t\rA\xff\tz"[..])
        );
    }

    #[test]
    fn lists() {
        for (value, expected) in [
            ("[]", vec![]),
            ("[ ]", vec![]),
            ("[\"a\"]", vec![b"a".to_vec()]),
            ("[ \"a\" ,\"b\"\t]", vec![b"a".to_vec(), b"b".to_vec()]),
            ("[\"]\", \",\"]", vec![b"]".to_vec(), b",".to_vec()]),
        ] {
            let info =
                MeasurementInfo::parse(format!("{HEAD}argv = {value}").as_bytes()).expect(value);
            assert_eq!(info.process.argv, Some(expected), "{value}");
        }
    }

    #[test]
    fn numbers() {
        for (value, expected) in [
            ("0", 0),
            ("007", 7),
            ("0x0", 0),
            ("0xFFffFFffFFffFFff", u64::MAX),
            ("18446744073709551615", u64::MAX),
        ] {
            let info = MeasurementInfo::parse(format!("{HEAD}instances = {value}").as_bytes())
                .expect(value);
            assert_eq!(info.process.instances, Some(expected));
        }
    }

    #[test]
    fn versions() {
        let info =
            MeasurementInfo::parse(b"pkgprof-info 1.7\n[process]\npid = 1\n[end]\n").expect("1.7");
        assert_eq!(info.version(), (1, 7));
        assert!(written(&info).starts_with("pkgprof-info 1.7\n"));

        for (text, found) in [
            ("pkgprof-info 2.0\n[process]\npid = 1\n", "2.0"),
            ("pkgprof-info 10.3\nanything at all \0", "10.3"),
            ("pkgprof-info 2.x-beta", "2.x-beta"),
            ("pkgprof-info 3", "3"),
        ] {
            let err = err_of(text);
            let ErrorKind::UnsupportedInfoVersion {
                found: f,
                supported,
            } = err.kind()
            else {
                panic!("{text:?}: {err:?}")
            };
            assert_eq!((f.as_str(), *supported), (found, 1));
            assert_eq!(err.offset(), Some(13));
            assert!(err.to_string().contains("upgrade pkgprof"), "{err}");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8() {
        let err = MeasurementInfo::parse(b"pkgprof-info 1.0\n[process]\npid = 1\n\xff")
            .expect_err("not utf-8");
        assert_eq!(err.to_string(), "line 4: invalid utf-8 (at offset 0x23)");
        let err = MeasurementInfo::parse(b"pkgprof-info 9.0\n\xff").expect_err("newer");
        assert!(matches!(
            err.kind(),
            ErrorKind::UnsupportedInfoVersion { .. }
        ));
        let err = MeasurementInfo::parse(b"pkgprof-info 1.\xff\n").expect_err("bad version");
        assert!(
            err.to_string().contains("malformed version `1.\u{fffd}`"),
            "{err}"
        );
    }

    #[test]
    fn error_message_names_line_and_offset() {
        let err = err_of("pkgprof-info 1.0\n[process]\npid = x\n");
        assert_eq!(
            err.to_string(),
            "line 3: expected a number, found `x` (at offset 0x21)"
        );
    }

    #[test]
    fn malformed_files() {
        let cases: &[(&str, usize, usize, &str)] = &[
            ("", 1, 0, "not a pkgprof measurement-info file"),
            ("pkgprof-info", 1, 0, "not a pkgprof"),
            ("\u{feff}pkgprof-info 1.0\n", 1, 0, "not a pkgprof"),
            ("pkgprof-info  1.0\n", 1, 13, "malformed version"),
            ("pkgprof-info 1\n", 1, 13, "malformed version"),
            ("pkgprof-info 1.\n", 1, 13, "malformed version"),
            ("pkgprof-info 1.0 \n", 1, 13, "malformed version"),
            ("pkgprof-info 1.+1\n", 1, 13, "malformed version"),
            ("pkgprof-info 1.99999999999\n", 1, 13, "malformed version"),
            ("pkgprof-info 0.9\n", 1, 13, "unknown version 0.9"),
            ("pkgprof-info 1.0\n", 2, 17, "missing [process] section"),
            (
                "pkgprof-info 1.0\n[process]\n",
                2,
                17,
                "[process] has no pid",
            ),
            (
                "pkgprof-info 1.0\npid = 1\n",
                2,
                17,
                "comes before the first [section]",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\x01\n",
                3,
                34,
                "control character U+0001",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\u{85}\n",
                3,
                34,
                "control character U+0085",
            ),
            (
                "pkgprof-info 1.0\n[process\n",
                2,
                17,
                "a section header is `[name]`",
            ),
            ("pkgprof-info 1.0\n[]\n", 2, 17, "a section header"),
            ("pkgprof-info 1.0\n[a b]\n", 2, 17, "a section header"),
            (
                "pkgprof-info 1.0\n [process] x\n",
                2,
                18,
                "a section header",
            ),
            (
                "pkgprof-info 1.0\n[process]\n[process]\n",
                3,
                27,
                "[process] again (first on line 2)",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid\n",
                3,
                30,
                "expected `key = value`",
            ),
            (
                "pkgprof-info 1.0\n[process]\np id = 1\n",
                3,
                28,
                "expected `key = value`",
            ),
            (
                "pkgprof-info 1.0\n[process]\n= 1\n",
                3,
                27,
                "missing key before `=`",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid =  \n",
                3,
                32,
                "missing value after `pid =`",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\npid = 2\n",
                4,
                35,
                "`pid` again in [process]",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = -1\n",
                3,
                33,
                "expected a number, found `-1`",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = +1\n",
                3,
                33,
                "expected a number",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 0x\n",
                3,
                33,
                "expected a number",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1 2\n",
                3,
                33,
                "expected a number",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 4294967296\n",
                3,
                33,
                "does not fit 32 bits",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\ninstances = 18446744073709551616\n",
                4,
                47,
                "does not fit 64 bits",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe = /bin/sh\n",
                4,
                41,
                "expected a string",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"/bin/sh\n",
                4,
                41,
                "unterminated string",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"a\\\"\n",
                4,
                41,
                "unterminated string",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"a\\",
                4,
                41,
                "unterminated string",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"a\" b\n",
                4,
                45,
                "after the string",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"\\q\"\n",
                4,
                42,
                "unknown escape `\\q`",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"\\é\"\n",
                4,
                42,
                "unknown escape `\\é`",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"\\x4\"\n",
                4,
                42,
                "two hex digits",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nargv = \"a\"\n",
                4,
                42,
                "expected a list",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nargv = [\"a\" \"b\"]\n",
                4,
                47,
                "expected `,` or `]`",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nargv = [\"a\",]\n",
                4,
                47,
                "expected a string",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nargv = [\"a\"\n",
                4,
                46,
                "expected `,` or `]`",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nargv = [] x\n",
                4,
                45,
                "after the list",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe-build-id = 0xab\n",
                4,
                51,
                "hex digits",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\nexe-build-id = abc\n",
                4,
                50,
                "even number",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\ncomm = \"12345678901234567890123456789012345678901234567890123456789012345\"\n",
                4,
                42,
                "command name of 65 bytes is longer than 64",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\narcs = call\n",
                5,
                53,
                "arcs must be",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\nfrequency = 1\nperiod = 2\n",
                6,
                69,
                "both frequency and period",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\nevent = \"\\xff\"\n",
                5,
                54,
                "not utf-8",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\n[kernel]\nsymbols-file = \"../x\"\n",
                5,
                59,
                "without a directory",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\n[kernel]\nsymbols-file = \"..\"\n",
                5,
                59,
                "must name a file",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\n[mapping]\nstart = 0x1\n",
                4,
                35,
                "[mapping] has no end",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\n[mapping]\nend = 0x1\n",
                4,
                35,
                "[mapping] has no start",
            ),
            (
                "pkgprof-info 1.0\n[process]\npid = 1\n[mapping]\nstart = 1\nend = 2\nend = 3\n",
                7,
                63,
                "`end` again in [mapping]",
            ),
        ];
        let mut wrong = Vec::new();
        for &(text, line, offset, message) in cases {
            let (l, o, m) = info_err(text);
            if !m.contains(message) || (l, o) != (line, offset as u64) {
                wrong.push(format!(
                    "{text:?}: line {l} offset {o}: {m:?}; wanted {message:?}"
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn unknown_content_is_kept_and_written_back() {
        let text = "pkgprof-info 1.3\n\n\
                    [future]\nx = 1.5e3\n\n\
                    [process]\nnew-key = {a = 1}\npid = 5\n\n\
                    [mapping]\nstart = 0x1\nend = 0x2\nprot = r-x\n\n\
                    [future]\n\n\
                    [Process]\npid = what\n\n\
                    [end]\n";
        let info = MeasurementInfo::parse(text.as_bytes()).expect("1.3 parses");
        assert_eq!(info.process.extra, vec![Field::new("new-key", "{a = 1}")]);
        assert_eq!(info.mappings[0].extra, vec![Field::new("prot", "r-x")]);
        assert_eq!(
            info.extra_sections,
            vec![
                Section {
                    name: "future".into(),
                    fields: vec![Field::new("x", "1.5e3")]
                },
                Section {
                    name: "future".into(),
                    fields: vec![]
                },
                Section {
                    name: "Process".into(),
                    fields: vec![Field::new("pid", "what")]
                },
            ]
        );
        let out = written(&info);
        assert_eq!(
            out,
            "pkgprof-info 1.3\n\n\
             [process]\npid = 5\nnew-key = {a = 1}\n\n\
             [mapping]\nstart = 0x1\nend = 0x2\nprot = r-x\n\n\
             [future]\nx = 1.5e3\n\n\
             [future]\n\n\
             [Process]\npid = what\n\n\
             [end]\n"
        );
        assert_eq!(MeasurementInfo::parse(out.as_bytes()).expect("again"), info);
    }

    #[test]
    fn writer_refuses_what_would_not_read_back() {
        let refuse = |info: MeasurementInfo, what: &str| {
            let mut out = Vec::new();
            let err = info.write(&mut out).expect_err(what);
            assert!(matches!(err.kind(), ErrorKind::InvalidInfo(_)), "{err:?}");
            assert!(err.to_string().contains(what), "{err} lacks {what}");
            assert!(out.is_empty(), "wrote part of the file");
        };
        let mut i = MeasurementInfo::default();
        i.process.exe_build_id = Some(vec![]);
        refuse(i, "empty exe-build-id");
        let mut i = MeasurementInfo::default();
        i.kernel.symbols_file = Some("a/b".into());
        refuse(i, "symbols-file");
        let mut i = MeasurementInfo::default();
        i.process.extra.push(Field::new("pid", "1"));
        refuse(i, "has the name of a known one");
        let mut i = MeasurementInfo::default();
        i.process.extra.push(Field::new("a b", "1"));
        refuse(i, "key `a b`");
        for value in ["", " 1", "1\t", "a\nb", "\u{7f}"] {
            let mut i = MeasurementInfo::default();
            i.counters.extra.push(Field::new("k", value));
            refuse(i, "value of `k` in [counters]");
        }
        let mut i = MeasurementInfo::default();
        i.extra_sections.push(Section {
            name: "mapping".into(),
            fields: vec![],
        });
        refuse(i, "known section [mapping]");
        let mut i = MeasurementInfo::default();
        i.extra_sections.push(Section {
            name: "x]".into(),
            fields: vec![],
        });
        refuse(i, "section name");
    }

    #[test]
    fn empty_known_sections_are_left_out() {
        let text = "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\n[kernel]\n[counters]\n";
        let info = MeasurementInfo::parse(text.as_bytes()).expect("ok");
        assert_eq!(info, {
            let mut i = MeasurementInfo::default();
            i.process.pid = 1;
            i
        });
        assert_eq!(
            written(&info),
            "pkgprof-info 1.1\n\n[process]\npid = 1\n\n[end]\n"
        );
    }

    #[test]
    fn every_truncation_of_a_written_file_is_refused() {
        let mut info = MeasurementInfo::default();
        info.process.pid = 4242;
        info.process.argv = Some(vec![b"job".to_vec(), b"--x".to_vec()]);
        info.sampling.rate = Some(SampleRate::Frequency(997));
        let mut m = Mapping::new(0x5559_c997_0000, 0x5559_c998_0000);
        m.path = Some(b"/usr/bin/job".to_vec());
        info.mappings.push(m);
        let text = written(&info);
        assert!(text.ends_with("\n\n[end]\n"));
        assert_eq!(
            MeasurementInfo::parse(text.as_bytes()).expect("whole"),
            info
        );
        for cut in 0..text.len() {
            let err = MeasurementInfo::parse(&text.as_bytes()[..cut])
                .expect_err(&format!("cut at {cut}: {:?}", &text[..cut]));
            // Every error names a line (and the caller adds the file).
            let ErrorKind::Info { line, .. } = err.kind() else {
                panic!("cut at {cut}: {err:?}");
            };
            assert!(*line >= 1, "cut at {cut}");
        }
        // The error names the line where the end is missing.
        let cut = &text[..text.len() - "[end]\n".len()];
        let err = MeasurementInfo::parse(cut.as_bytes()).expect_err("no end");
        let lines = cut.lines().count();
        assert!(
            err.to_string().contains(&format!("line {}", lines + 1)),
            "{err}"
        );
        // Nothing may follow `[end]`.
        for after in ["\n", "# c\n", "[process]\n", "x = 1\n"] {
            let err = MeasurementInfo::parse(format!("{text}{after}").as_bytes()).expect_err(after);
            assert!(
                err.to_string().contains("text after the `[end]` line"),
                "{err}"
            );
        }
    }

    #[test]
    fn period_and_words() {
        let text =
            "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\nperiod = 1000\narcs = calls\n";
        let info = MeasurementInfo::parse(text.as_bytes()).expect("ok");
        assert_eq!(info.sampling.rate, Some(SampleRate::Period(1000)));
        assert_eq!(info.sampling.arcs, Some(ArcCounts::Calls));
    }
}
