//! Reading a measurement-info file, line by line, into a [`MeasurementInfo`].

use super::keys::{
    BOUNDARY_KEYS, COUNTER_KEYS, KERNEL_KEYS, Key, LOST_SAMPLES_CPU, MAPPING_KEYS, PROCESS_KEYS,
    PendingRename, RENAME_KEYS, SAMPLING_KEYS, names, position,
};
use super::values::{excerpt, is_name, is_name_char, number};
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
        // `pid`, the first key, is required.
        if process.keys & 1 == 0 {
            let pid = PROCESS_KEYS[0].name;
            return Err(error(
                process.line,
                process.offset,
                format!("[process] has no {pid}"),
            ));
        }
        for seen in &self.mappings {
            // `start` and `end`, the first two keys, are required.
            for (bit, key) in names(MAPPING_KEYS).take(2).enumerate() {
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
                let missing = names(RENAME_KEYS)
                    .enumerate()
                    .filter(|&(bit, _)| seen.keys & (1 << bit) == 0)
                    .map(|(_, key)| key)
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
        let info = &mut self.info;
        match self.current {
            Current::None => Ok(()),
            Current::Extra => {
                if let Some(section) = info.extra_sections.last_mut() {
                    section.fields.push(Field::new(key, value));
                }
                Ok(())
            }
            Current::Process => {
                let at = Known::new(PROCESS_KEYS, self.process.as_mut(), PROCESS, 0);
                at.store(&mut info.process, |p| &mut p.extra, key, value)
            }
            Current::Sampling => {
                let at = Known::new(SAMPLING_KEYS, self.sampling.as_mut(), SAMPLING, 0);
                at.store(&mut info.sampling, |s| &mut s.extra, key, value)
            }
            Current::Kernel => {
                let at = Known::new(KERNEL_KEYS, self.kernel.as_mut(), KERNEL, 0);
                at.store(&mut info.kernel, |k| &mut k.extra, key, value)
            }
            Current::Counters => {
                let at = Known::new(COUNTER_KEYS, self.counters.as_mut(), COUNTERS, 0);
                at.store(&mut info.counters, |c| &mut c.extra, key, value)
            }
            Current::Mapping => match info.mappings.last_mut() {
                Some(m) => {
                    let at = Known::new(MAPPING_KEYS, self.mappings.last_mut(), MAPPING, 0);
                    at.store(m, |m| &mut m.extra, key, value)
                }
                None => Ok(()),
            },
            Current::Boundary => {
                // One key per boundary kind first, then the table's.
                let kinds = BoundaryKind::ALL.len();
                if let Some(index) = BoundaryKind::ALL.iter().position(|k| k.as_str() == key) {
                    mark(self.boundary.as_mut(), index, BOUNDARY)?;
                    let n = number(value).map_err(|(at, m)| KeyError::Value(at, m))?;
                    info.boundary.entries.insert(BoundaryKind::ALL[index], n);
                    return Ok(());
                }
                let at = Known::new(BOUNDARY_KEYS, self.boundary.as_mut(), BOUNDARY, kinds);
                at.store(&mut info.boundary, |b| &mut b.extra, key, value)
            }
            Current::Rename => match self.renames.last_mut() {
                Some((seen, r)) => {
                    let at = Known::new(RENAME_KEYS, Some(seen), RENAME, 0);
                    at.store(r, |r| &mut r.extra, key, value)
                }
                None => Ok(()),
            },
        }
    }
}

/// The known keys of the section being read, and which of them it has had.
struct Known<'k, 's, T: 'static> {
    keys: &'k [Key<T>],
    seen: Option<&'s mut Seen>,
    section: &'static str,
    /// The bit of the first key in `seen`'s keys.
    first_bit: usize,
}

impl<'k, 's, T> Known<'k, 's, T> {
    fn new(
        keys: &'k [Key<T>],
        seen: Option<&'s mut Seen>,
        section: &'static str,
        first_bit: usize,
    ) -> Self {
        Known {
            keys,
            seen,
            section,
            first_bit,
        }
    }

    /// Stores `key = value` in `t` if the key is known (once per section), else keeps it
    /// among the section's unknown fields.
    fn store(
        self,
        t: &mut T,
        extra: fn(&mut T) -> &mut Vec<Field>,
        key: &str,
        value: &str,
    ) -> std::result::Result<(), KeyError> {
        let Some(index) = position(self.keys, key) else {
            extra(t).push(Field::new(key, value));
            return Ok(());
        };
        mark(self.seen, self.first_bit + index, self.section)?;
        (self.keys[index].read(t, value)).map_err(|(at, message)| KeyError::Value(at, message))
    }
}

/// Records that the key of bit `bit` was given in `section`; refuses it the second time.
fn mark(
    seen: Option<&mut Seen>,
    bit: usize,
    section: &'static str,
) -> std::result::Result<(), KeyError> {
    if let Some(seen) = seen {
        if seen.keys & (1 << bit) != 0 {
            return Err(KeyError::Again(section));
        }
        seen.keys |= 1 << bit;
    }
    Ok(())
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
