//! Reading a measurement-info file, line by line, into a [`MeasurementInfo`].

use super::values::{
    ValueError, check_file_name, excerpt, hex_bytes, is_name, is_name_char, number, number_u32,
    string, string_list, text,
};
use super::*;
use crate::error::{Error, ErrorKind, Result};

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
    Boundary,
    /// The last of the parser's `renames`.
    Rename,
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

pub(super) struct Parser<'a> {
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
    boundary: Option<Seen>,
    /// The `[rename]` sections so far, moved to `info.renames` once their required keys are
    /// known to be there.
    renames: Vec<(Seen, PendingRename)>,
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

/// Parses a decimal number with nothing around it.
fn decimal_u32(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

impl<'a> Parser<'a> {
    /// Checks the version line and the encoding.
    pub(super) fn new(data: &'a [u8]) -> Result<Self> {
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
            boundary: None,
            renames: Vec::new(),
            declared_minor: minor,
            end: None,
        })
    }

    pub(super) fn parse(mut self) -> Result<MeasurementInfo> {
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
        for (seen, pending) in self.renames {
            let (Some(monotonic_ns), Some(tid), Some(comm)) =
                (pending.monotonic_ns, pending.tid, pending.comm)
            else {
                let missing = RENAME_KEYS
                    .iter()
                    .enumerate()
                    .filter(|&(bit, _)| seen.keys & (1 << bit) == 0)
                    .map(|(_, key)| *key)
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(error(
                    seen.line,
                    seen.offset,
                    format!("[rename] has no {missing}"),
                ));
            };
            self.info.renames.push(Rename {
                monotonic_ns,
                tid,
                comm,
                extra: pending.extra,
            });
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
            Err(KeyError::Key(message)) => Err(error(number, start, message)),
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
            BOUNDARY => (&mut self.boundary, Current::Boundary),
            RENAME => {
                self.renames.push((seen, PendingRename::default()));
                self.current = Current::Rename;
                return Ok(());
            }
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
        if self.current == Current::Sampling
            && let Some(cpu) = key.strip_prefix(LOST_SAMPLES_CPU)
        {
            return lost_samples_on(&mut self.info.sampling, cpu, value);
        }
        let kind_keys: Vec<&str>;
        let (known, seen, section): (&[&str], _, _) = match self.current {
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
            Current::Boundary => {
                kind_keys = boundary_keys();
                (&kind_keys[..], self.boundary.as_mut(), BOUNDARY)
            }
            Current::Rename => (
                RENAME_KEYS,
                self.renames.last_mut().map(|(seen, _)| seen),
                RENAME,
            ),
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
                Current::Boundary => self.info.boundary.extra.push(field),
                Current::Rename => {
                    if let Some((_, r)) = self.renames.last_mut() {
                        r.extra.push(field);
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
            Current::Boundary => set_boundary(&mut self.info.boundary, key, value),
            Current::Rename => match self.renames.last_mut() {
                Some((_, r)) => set_rename(r, key, value),
                None => Ok(()),
            },
            Current::None | Current::Extra => Ok(()),
        };
        stored.map_err(|(at, message)| KeyError::Value(at, message))
    }
}

/// A `[rename]` section being read: its required keys may still be missing.
#[derive(Default)]
struct PendingRename {
    monotonic_ns: Option<u64>,
    tid: Option<u32>,
    comm: Option<Comm>,
    extra: Vec<Field>,
}

/// Stores `lost-samples-cpu<cpu> = value`: `cpu` must be a CPU number written as the writer
/// writes it (decimal, no sign, no leading zero), so that what is read is written back the same.
fn lost_samples_on(
    s: &mut SamplingInfo,
    cpu: &str,
    value: &str,
) -> std::result::Result<(), KeyError> {
    let canonical = !cpu.is_empty()
        && cpu.bytes().all(|b| b.is_ascii_digit())
        && (cpu == "0" || !cpu.starts_with('0'));
    let Some(cpu) = canonical.then(|| cpu.parse::<u32>().ok()).flatten() else {
        return Err(KeyError::Key(format!(
            "`{LOST_SAMPLES_CPU}` must be followed by a CPU number (decimal, no leading zero), \
             not `{}`",
            excerpt(cpu.as_bytes(), 20)
        )));
    };
    let n = number(value).map_err(|(at, message)| KeyError::Value(at, message))?;
    if s.lost_samples_by_cpu.insert(cpu, n).is_some() {
        return Err(KeyError::Again(SAMPLING));
    }
    Ok(())
}

/// Why a key's line is refused.
enum KeyError {
    /// The key was already given in this section (named).
    Again(&'static str),
    /// The value is malformed: offset from its start, and message.
    Value(usize, String),
    /// The key is malformed.
    Key(String),
}

fn set_process(p: &mut ProcessInfo, key: &str, value: &str) -> std::result::Result<(), ValueError> {
    match key {
        "pid" => p.pid = number_u32(value)?,
        "ppid" => p.ppid = Some(number_u32(value)?),
        "comm" => p.comm = Some(comm(value)?),
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
        "truncated-stacks" => s.truncated_stacks = Some(number(value)?),
        "truncated-stack-copy" => s.truncated_stack_copy = Some(number(value)?),
        "truncated-callchain-limit" => s.truncated_callchain_limit = Some(number(value)?),
        "truncated-unwind-info" => s.truncated_unwind_info = Some(number(value)?),
        "stack-size" => s.stack_size = Some(number(value)?),
        "max-stack" => s.max_stack = Some(number(value)?),
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
    match key {
        "source" => {
            let name = text(value)?;
            let source = CounterSource::ALL.into_iter().find(|s| s.as_str() == name);
            c.source = Some(source.ok_or_else(|| {
                (
                    0,
                    format!(
                        "source must be \"taskstats\" or \"proc\", not `{}`",
                        excerpt(value.as_bytes(), 40)
                    ),
                )
            })?);
            return Ok(());
        }
        "taskstats" => {
            if value != REFUSED {
                return Err((
                    0,
                    format!(
                        "taskstats must be `{REFUSED}`, not `{}`",
                        excerpt(value.as_bytes(), 40)
                    ),
                ));
            }
            c.taskstats_refused = true;
            return Ok(());
        }
        _ => {}
    }
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
        "perf-page-faults" => c.perf_page_faults = n,
        "perf-context-switches" => c.perf_context_switches = n,
        "perf-cpu-migrations" => c.perf_cpu_migrations = n,
        _ => {}
    }
    Ok(())
}

fn set_boundary(
    b: &mut BoundaryCounts,
    key: &str,
    value: &str,
) -> std::result::Result<(), ValueError> {
    match key {
        "user-only" => b.user_only = Some(number(value)?),
        "kernel-only" => b.kernel_only = Some(number(value)?),
        "stacks-file" => {
            let name = text(value)?;
            check_file_name(&name).map_err(|why| (0, format!("stacks-file {why}")))?;
            b.stacks_file = Some(name);
        }
        _ => {
            if let Some(kind) = BoundaryKind::from_key(key) {
                b.entries.insert(kind, number(value)?);
            }
        }
    }
    Ok(())
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

fn set_rename(
    r: &mut PendingRename,
    key: &str,
    value: &str,
) -> std::result::Result<(), ValueError> {
    match key {
        "monotonic-ns" => r.monotonic_ns = Some(number(value)?),
        "tid" => r.tid = Some(number_u32(value)?),
        "comm" => r.comm = Some(comm(value)?),
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
