//! The known keys of each section: the one place a key is named, with the field it fills and
//! how its value is spelt. The parser looks keys up here, the writer writes them in this
//! order, and an unknown key is whatever is not here.

use super::values::{
    TextWriter, ValueError, check_file_name, excerpt, hex_bytes, invalid, number, number_u32,
    string, string_list, text,
};
use super::*;
use crate::error::Result;

/// A known key of a section whose fields are a `T`.
pub(super) struct Key<T: 'static> {
    pub(super) name: &'static str,
    pub(super) value: Slot<T>,
}

/// How a key's value is spelt, and the field that holds it (read, then written).
pub(super) enum Slot<T: 'static> {
    /// A decimal number.
    Decimal(fn(&T) -> Option<u64>, fn(&mut T, u64)),
    /// A decimal number below 2^32.
    Decimal32(fn(&T) -> Option<u32>, fn(&mut T, u32)),
    /// A number written in hexadecimal (`0x…`).
    Hex(fn(&T) -> Option<u64>, fn(&mut T, u64)),
    /// A quoted byte string.
    Bytes(fn(&T) -> Option<&[u8]>, fn(&mut T, Vec<u8>)),
    /// A quoted UTF-8 string.
    Text(fn(&T) -> Option<&str>, fn(&mut T, String)),
    /// A quoted file name in the measurement directory: one path component.
    FileName(fn(&T) -> Option<&str>, fn(&mut T, String)),
    /// Bytes written as hexadecimal digits, two per byte.
    HexBytes(fn(&T) -> Option<&[u8]>, fn(&mut T, Vec<u8>)),
    /// A command name: a quoted string of at most [`Comm::MAX_LEN`] bytes.
    Comm(fn(&T) -> Option<&Comm>, fn(&mut T, Comm)),
    /// A value of a form of its own, read and written by these functions (given the key).
    Own(
        fn(&mut T, &'static str, &str) -> std::result::Result<(), ValueError>,
        fn(&T, &'static str, &mut TextWriter) -> Result<()>,
    ),
}

impl<T> Key<T> {
    /// Stores `value`, read as this key's values are spelt, in `t`.
    pub(super) fn read(&self, t: &mut T, value: &str) -> std::result::Result<(), ValueError> {
        let name = self.name;
        match self.value {
            Slot::Decimal(_, set) | Slot::Hex(_, set) => set(t, number(value)?),
            Slot::Decimal32(_, set) => set(t, number_u32(value)?),
            Slot::Bytes(_, set) => set(t, string(value)?),
            Slot::Text(_, set) => set(t, text(value)?),
            Slot::FileName(_, set) => {
                let file = text(value)?;
                check_file_name(&file).map_err(|why| (0, format!("{name} {why}")))?;
                set(t, file);
            }
            Slot::HexBytes(_, set) => set(t, hex_bytes(value)?),
            Slot::Comm(_, set) => set(t, comm(value)?),
            Slot::Own(read, _) => read(t, name, value)?,
        }
        Ok(())
    }

    /// Writes this key's line for `t`, if `t` has a value for it.
    pub(super) fn write(&self, t: &T, w: &mut TextWriter) -> Result<()> {
        let name = self.name;
        match self.value {
            Slot::Decimal(get, _) => w.decimal(name, get(t)),
            Slot::Decimal32(get, _) => w.decimal(name, get(t).map(u64::from)),
            Slot::Hex(get, _) => w.hex(name, get(t)),
            Slot::Bytes(get, _) => w.string(name, get(t)),
            Slot::Text(get, _) => w.string(name, get(t).map(str::as_bytes)),
            Slot::FileName(get, _) => {
                if let Some(file) = get(t) {
                    check_file_name(file).map_err(|why| invalid(format!("{name}: {why}")))?;
                }
                w.string(name, get(t).map(str::as_bytes));
            }
            Slot::HexBytes(get, _) => w.hex_bytes(name, get(t))?,
            Slot::Comm(get, _) => w.string(name, get(t).map(Comm::as_bytes)),
            Slot::Own(_, write) => write(t, name, w)?,
        }
        Ok(())
    }
}

/// The key `name`, its value spelt and kept as `value` says.
const fn key<T>(name: &'static str, value: Slot<T>) -> Key<T> {
    Key { name, value }
}

/// The position of `name` among `keys`.
pub(super) fn position<T>(keys: &[Key<T>], name: &str) -> Option<usize> {
    keys.iter().position(|k| k.name == name)
}

/// The names of `keys`, in order.
pub(super) fn names<T>(keys: &[Key<T>]) -> impl Iterator<Item = &'static str> + '_ {
    keys.iter().map(|k| k.name)
}

/// A command name: a string of at most [`Comm::MAX_LEN`] bytes.
fn comm(value: &str) -> std::result::Result<Comm, ValueError> {
    let bytes = string(value)?;
    let len = bytes.len();
    Comm::new(bytes).map_err(|_| {
        (
            0,
            format!(
                "command name of {len} bytes is longer than {}",
                Comm::MAX_LEN
            ),
        )
    })
}

/// The keys of `[process]`; `pid` (the first) is required.
pub(super) const PROCESS_KEYS: &[Key<ProcessInfo>] = &[
    key("pid", Slot::Decimal32(|p| Some(p.pid), |p, v| p.pid = v)),
    key("ppid", Slot::Decimal32(|p| p.ppid, |p, v| p.ppid = Some(v))),
    key(
        "comm",
        Slot::Comm(|p| p.comm.as_ref(), |p, v| p.comm = Some(v)),
    ),
    key(
        "instances",
        Slot::Decimal(|p| p.instances, |p, v| p.instances = Some(v)),
    ),
    key("argv", Slot::Own(read_argv, write_argv)),
    key(
        "exe",
        Slot::Bytes(|p| p.exe.as_deref(), |p, v| p.exe = Some(v)),
    ),
    key(
        "exe-build-id",
        Slot::HexBytes(
            |p| p.exe_build_id.as_deref(),
            |p, v| p.exe_build_id = Some(v),
        ),
    ),
    key(
        "start-realtime-ns",
        Slot::Decimal(
            |p| p.start_realtime_ns,
            |p, v| p.start_realtime_ns = Some(v),
        ),
    ),
    key(
        "start-monotonic-ns",
        Slot::Decimal(
            |p| p.start_monotonic_ns,
            |p, v| p.start_monotonic_ns = Some(v),
        ),
    ),
    key(
        "end-realtime-ns",
        Slot::Decimal(|p| p.end_realtime_ns, |p, v| p.end_realtime_ns = Some(v)),
    ),
    key(
        "end-monotonic-ns",
        Slot::Decimal(|p| p.end_monotonic_ns, |p, v| p.end_monotonic_ns = Some(v)),
    ),
];

fn read_argv(p: &mut ProcessInfo, _: &str, value: &str) -> std::result::Result<(), ValueError> {
    p.argv = Some(string_list(value)?);
    Ok(())
}

fn write_argv(p: &ProcessInfo, name: &'static str, w: &mut TextWriter) -> Result<()> {
    if let Some(argv) = &p.argv {
        w.string_list(name, argv);
    }
    Ok(())
}

/// The keys of `[sampling]` (the per-CPU `lost-samples-cpu<N>` keys apart: see
/// [`LOST_SAMPLES_CPU`]).
pub(super) const SAMPLING_KEYS: &[Key<SamplingInfo>] = &[
    key(
        "event",
        Slot::Text(|s| s.event.as_deref(), |s, v| s.event = Some(v)),
    ),
    key("frequency", Slot::Own(read_frequency, write_frequency)),
    key("period", Slot::Own(read_period, write_period)),
    key(
        "period-unit",
        Slot::Text(|s| s.period_unit.as_deref(), |s, v| s.period_unit = Some(v)),
    ),
    key("arcs", Slot::Own(read_arcs, write_arcs)),
    key(
        "lost-samples",
        Slot::Decimal(|s| s.lost_samples, |s, v| s.lost_samples = Some(v)),
    ),
    key(
        "throttled",
        Slot::Decimal(|s| s.throttled, |s, v| s.throttled = Some(v)),
    ),
    key(
        LOST_SAMPLES_CPU,
        Slot::Own(read_lost_samples_cpu, write_lost_samples_cpu),
    ),
    key(
        "truncated-stacks",
        Slot::Decimal(|s| s.truncated_stacks, |s, v| s.truncated_stacks = Some(v)),
    ),
    key(
        "truncated-stack-copy",
        Slot::Decimal(
            |s| s.truncated_stack_copy,
            |s, v| s.truncated_stack_copy = Some(v),
        ),
    ),
    key(
        "truncated-callchain-limit",
        Slot::Decimal(
            |s| s.truncated_callchain_limit,
            |s, v| s.truncated_callchain_limit = Some(v),
        ),
    ),
    key(
        "truncated-unwind-info",
        Slot::Decimal(
            |s| s.truncated_unwind_info,
            |s, v| s.truncated_unwind_info = Some(v),
        ),
    ),
    key(
        "stack-size",
        Slot::Decimal(|s| s.stack_size, |s, v| s.stack_size = Some(v)),
    ),
    key(
        "max-stack",
        Slot::Decimal(|s| s.max_stack, |s, v| s.max_stack = Some(v)),
    ),
];

/// The prefix of the per-CPU `lost-samples-cpu<N>` keys of `[sampling]`: the key of that name
/// alone is refused, and written only with a CPU number after it.
pub(super) const LOST_SAMPLES_CPU: &str = "lost-samples-cpu";

fn read_frequency(
    s: &mut SamplingInfo,
    _: &str,
    value: &str,
) -> std::result::Result<(), ValueError> {
    set_rate(s, SampleRate::Frequency(number(value)?))
}

fn read_period(s: &mut SamplingInfo, _: &str, value: &str) -> std::result::Result<(), ValueError> {
    set_rate(s, SampleRate::Period(number(value)?))
}

fn set_rate(s: &mut SamplingInfo, rate: SampleRate) -> std::result::Result<(), ValueError> {
    if s.rate.is_some() {
        return Err((0, "[sampling] has both frequency and period".to_owned()));
    }
    s.rate = Some(rate);
    Ok(())
}

fn write_frequency(s: &SamplingInfo, name: &'static str, w: &mut TextWriter) -> Result<()> {
    if let Some(SampleRate::Frequency(hz)) = s.rate {
        w.decimal(name, Some(hz));
    }
    Ok(())
}

fn write_period(s: &SamplingInfo, name: &'static str, w: &mut TextWriter) -> Result<()> {
    if let Some(SampleRate::Period(n)) = s.rate {
        w.decimal(name, Some(n));
    }
    Ok(())
}

fn read_arcs(s: &mut SamplingInfo, name: &str, value: &str) -> std::result::Result<(), ValueError> {
    let all = [ArcCounts::Calls, ArcCounts::SampledEdges];
    let Some(arcs) = all.into_iter().find(|a| a.as_str() == value) else {
        return Err((
            0,
            format!(
                "{name} must be `{}` or `{}`, not `{}`",
                all[0].as_str(),
                all[1].as_str(),
                excerpt(value.as_bytes(), 40)
            ),
        ));
    };
    s.arcs = Some(arcs);
    Ok(())
}

fn write_arcs(s: &SamplingInfo, name: &'static str, w: &mut TextWriter) -> Result<()> {
    if let Some(arcs) = s.arcs {
        w.word(name, arcs.as_str());
    }
    Ok(())
}

/// `lost-samples-cpu` with no CPU number: never valid (the parser reads the numbered keys).
fn read_lost_samples_cpu(
    _: &mut SamplingInfo,
    name: &str,
    _: &str,
) -> std::result::Result<(), ValueError> {
    Err((0, format!("`{name}` must be followed by a CPU number")))
}

fn write_lost_samples_cpu(s: &SamplingInfo, name: &'static str, w: &mut TextWriter) -> Result<()> {
    for (cpu, n) in &s.lost_samples_by_cpu {
        w.decimal(&format!("{name}{cpu}"), Some(*n));
    }
    Ok(())
}

/// The keys of `[kernel]`.
pub(super) const KERNEL_KEYS: &[Key<KernelInfo>] = &[
    key(
        "release",
        Slot::Text(|k| k.release.as_deref(), |k, v| k.release = Some(v)),
    ),
    key(
        "build-id",
        Slot::HexBytes(|k| k.build_id.as_deref(), |k, v| k.build_id = Some(v)),
    ),
    key(
        "symbols-file",
        Slot::FileName(
            |k| k.symbols_file.as_deref(),
            |k, v| k.symbols_file = Some(v),
        ),
    ),
];

/// The keys of `[counters]`.
pub(super) const COUNTER_KEYS: &[Key<ProcessCounters>] = &[
    key(
        "user-cpu-ns",
        Slot::Decimal(|c| c.user_cpu_ns, |c, v| c.user_cpu_ns = Some(v)),
    ),
    key(
        "system-cpu-ns",
        Slot::Decimal(|c| c.system_cpu_ns, |c, v| c.system_cpu_ns = Some(v)),
    ),
    key(
        "minor-faults",
        Slot::Decimal(|c| c.minor_faults, |c, v| c.minor_faults = Some(v)),
    ),
    key(
        "major-faults",
        Slot::Decimal(|c| c.major_faults, |c, v| c.major_faults = Some(v)),
    ),
    key(
        "voluntary-switches",
        Slot::Decimal(
            |c| c.voluntary_switches,
            |c, v| c.voluntary_switches = Some(v),
        ),
    ),
    key(
        "involuntary-switches",
        Slot::Decimal(
            |c| c.involuntary_switches,
            |c, v| c.involuntary_switches = Some(v),
        ),
    ),
    key(
        "read-bytes",
        Slot::Decimal(|c| c.read_bytes, |c, v| c.read_bytes = Some(v)),
    ),
    key(
        "written-bytes",
        Slot::Decimal(|c| c.written_bytes, |c, v| c.written_bytes = Some(v)),
    ),
    key("source", Slot::Own(read_source, write_source)),
    key("taskstats", Slot::Own(read_taskstats, write_taskstats)),
    key(
        "perf-page-faults",
        Slot::Decimal(|c| c.perf_page_faults, |c, v| c.perf_page_faults = Some(v)),
    ),
    key(
        "perf-context-switches",
        Slot::Decimal(
            |c| c.perf_context_switches,
            |c, v| c.perf_context_switches = Some(v),
        ),
    ),
    key(
        "perf-cpu-migrations",
        Slot::Decimal(
            |c| c.perf_cpu_migrations,
            |c, v| c.perf_cpu_migrations = Some(v),
        ),
    ),
];

/// The word of `taskstats = refused`.
const REFUSED: &str = "refused";

fn read_source(
    c: &mut ProcessCounters,
    name: &str,
    value: &str,
) -> std::result::Result<(), ValueError> {
    let text = text(value)?;
    let Some(source) = CounterSource::ALL.into_iter().find(|s| s.as_str() == text) else {
        let all: Vec<String> = (CounterSource::ALL.iter())
            .map(|s| format!("\"{}\"", s.as_str()))
            .collect();
        return Err((
            0,
            format!(
                "{name} must be {}, not `{}`",
                all.join(" or "),
                excerpt(value.as_bytes(), 40)
            ),
        ));
    };
    c.source = Some(source);
    Ok(())
}

fn write_source(c: &ProcessCounters, name: &'static str, w: &mut TextWriter) -> Result<()> {
    w.string(name, c.source.map(|s| s.as_str().as_bytes()));
    Ok(())
}

fn read_taskstats(
    c: &mut ProcessCounters,
    name: &str,
    value: &str,
) -> std::result::Result<(), ValueError> {
    if value != REFUSED {
        return Err((
            0,
            format!(
                "{name} must be `{REFUSED}`, not `{}`",
                excerpt(value.as_bytes(), 40)
            ),
        ));
    }
    c.taskstats_refused = true;
    Ok(())
}

fn write_taskstats(c: &ProcessCounters, name: &'static str, w: &mut TextWriter) -> Result<()> {
    if c.taskstats_refused {
        w.word(name, REFUSED);
    }
    Ok(())
}

/// The keys of `[mapping]`; `start` and `end` (the first two) are required.
pub(super) const MAPPING_KEYS: &[Key<Mapping>] = &[
    key("start", Slot::Hex(|m| Some(m.start), |m, v| m.start = v)),
    key("end", Slot::Hex(|m| Some(m.end), |m, v| m.end = v)),
    key(
        "offset",
        Slot::Hex(|m| m.file_offset, |m, v| m.file_offset = Some(v)),
    ),
    key(
        "bias",
        Slot::Hex(|m| m.load_bias, |m, v| m.load_bias = Some(v)),
    ),
    key(
        "path",
        Slot::Bytes(|m| m.path.as_deref(), |m, v| m.path = Some(v)),
    ),
    key(
        "build-id",
        Slot::HexBytes(|m| m.build_id.as_deref(), |m, v| m.build_id = Some(v)),
    ),
    key(
        "mapped-ns",
        Slot::Decimal(|m| m.mapped_ns, |m, v| m.mapped_ns = Some(v)),
    ),
    key(
        "unmapped-ns",
        Slot::Decimal(|m| m.unmapped_ns, |m, v| m.unmapped_ns = Some(v)),
    ),
    key(
        "runtime-start",
        Slot::Hex(|m| m.runtime_start, |m, v| m.runtime_start = Some(v)),
    ),
];

/// The keys of `[boundary]` after one per boundary kind (each [`BoundaryKind::as_str`],
/// in the order of [`BoundaryKind::ALL`]).
pub(super) const BOUNDARY_KEYS: &[Key<BoundaryCounts>] = &[
    key(
        "user-only",
        Slot::Decimal(|b| b.user_only, |b, v| b.user_only = Some(v)),
    ),
    key(
        "kernel-only",
        Slot::Decimal(|b| b.kernel_only, |b, v| b.kernel_only = Some(v)),
    ),
    key(
        "stacks-file",
        Slot::FileName(|b| b.stacks_file.as_deref(), |b, v| b.stacks_file = Some(v)),
    ),
];

/// A `[rename]` section as read, whose keys may be missing until the section ends; written
/// from a [`Rename`].
#[derive(Default)]
pub(super) struct PendingRename {
    pub(super) monotonic_ns: Option<u64>,
    pub(super) tid: Option<u32>,
    pub(super) comm: Option<Comm>,
    pub(super) extra: Vec<Field>,
}

impl From<&Rename> for PendingRename {
    fn from(r: &Rename) -> Self {
        PendingRename {
            monotonic_ns: Some(r.monotonic_ns),
            tid: Some(r.tid),
            comm: Some(r.comm.clone()),
            extra: Vec::new(),
        }
    }
}

/// The keys of `[rename]`, all required.
pub(super) const RENAME_KEYS: &[Key<PendingRename>] = &[
    key(
        "monotonic-ns",
        Slot::Decimal(|r| r.monotonic_ns, |r, v| r.monotonic_ns = Some(v)),
    ),
    key("tid", Slot::Decimal32(|r| r.tid, |r, v| r.tid = Some(v))),
    key(
        "comm",
        Slot::Comm(|r| r.comm.as_ref(), |r, v| r.comm = Some(v)),
    ),
];

#[cfg(test)]
mod tests {
    use super::super::values::is_name;
    use super::*;

    /// A name given twice in a table would leave its second field unread and unwritten.
    #[test]
    fn every_key_is_a_distinct_name_in_its_section() {
        let kinds: Vec<&str> = BoundaryKind::ALL.iter().map(|k| k.as_str()).collect();
        let sections: [(&str, Vec<&str>); 7] = [
            (PROCESS, names(PROCESS_KEYS).collect()),
            (SAMPLING, names(SAMPLING_KEYS).collect()),
            (KERNEL, names(KERNEL_KEYS).collect()),
            (COUNTERS, names(COUNTER_KEYS).collect()),
            (MAPPING, names(MAPPING_KEYS).collect()),
            (
                BOUNDARY,
                kinds.into_iter().chain(names(BOUNDARY_KEYS)).collect(),
            ),
            (RENAME, names(RENAME_KEYS).collect()),
        ];
        for (section, keys) in sections {
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(
                sorted.len(),
                keys.len(),
                "a key twice in [{section}]: {keys:?}"
            );
            assert!(keys.iter().all(|k| is_name(k)), "[{section}]: {keys:?}");
        }
    }
}
