//! Writing a measurement-info file: the known sections and keys in the order the format
//! gives, then what was kept of unknown ones.

use std::fmt::Write as _;

use super::keys::{
    BOUNDARY_KEYS, COUNTER_KEYS, KERNEL_KEYS, Key, LOST_SAMPLES_CPU, MAPPING_KEYS, PROCESS_KEYS,
    PendingRename, RENAME_KEYS, SAMPLING_KEYS, position,
};
use super::values::{invalid, is_name, push_quoted};
use super::*;
use crate::error::Result;

impl MeasurementInfo {
    pub(super) fn to_text(&self) -> Result<String> {
        let mut w = TextWriter {
            text: String::new(),
        };
        let _ = writeln!(w.text, "{INFO_MAGIC} {INFO_MAJOR}.{}", self.minor);

        w.section(PROCESS);
        w.keys(PROCESS, PROCESS_KEYS, &self.process, &self.process.extra)?;
        if self.sampling != SamplingInfo::default() {
            w.section(SAMPLING);
            w.keys(
                SAMPLING,
                SAMPLING_KEYS,
                &self.sampling,
                &self.sampling.extra,
            )?;
        }
        if self.kernel != KernelInfo::default() {
            w.section(KERNEL);
            w.keys(KERNEL, KERNEL_KEYS, &self.kernel, &self.kernel.extra)?;
        }
        if self.counters != ProcessCounters::default() {
            w.section(COUNTERS);
            w.keys(COUNTERS, COUNTER_KEYS, &self.counters, &self.counters.extra)?;
        }
        for m in &self.mappings {
            w.section(MAPPING);
            w.keys(MAPPING, MAPPING_KEYS, m, &m.extra)?;
        }
        let b = &self.boundary;
        if *b != BoundaryCounts::default() {
            w.section(BOUNDARY);
            // In the order of the kinds, whatever order the map was filled in.
            for kind in BoundaryKind::ALL {
                w.decimal(kind.as_str(), b.entries.get(&kind).copied());
            }
            let kind_named = |k: &&BoundaryKind| b.extra.iter().any(|f| f.key == k.as_str());
            if let Some(kind) = BoundaryKind::ALL.iter().find(kind_named) {
                return Err(invalid(format!(
                    "unknown key `{}` in [{BOUNDARY}] has the name of a known one",
                    kind.as_str()
                )));
            }
            w.keys(BOUNDARY, BOUNDARY_KEYS, b, &b.extra)?;
        }
        for r in &self.renames {
            w.section(RENAME);
            w.keys(RENAME, RENAME_KEYS, &PendingRename::from(r), &r.extra)?;
        }

        for section in &self.extra_sections {
            if !is_name(&section.name) {
                return Err(invalid(format!(
                    "section name `{}` is not made of letters, digits, `-`, `_` and `.`",
                    section.name.escape_debug()
                )));
            }
            if [
                PROCESS, SAMPLING, KERNEL, COUNTERS, MAPPING, BOUNDARY, RENAME, END,
            ]
            .contains(&section.name.as_str())
            {
                return Err(invalid(format!(
                    "unknown section has the name of the known section [{}]",
                    section.name
                )));
            }
            w.section(&section.name);
            w.extra::<()>(&section.name, &[], &section.fields)?;
        }
        w.section(END);
        Ok(w.text)
    }
}

pub(super) struct TextWriter {
    text: String,
}

impl TextWriter {
    /// The lines of the known `keys` that `t` has, in order, then the unknown `extra` ones.
    fn keys<T>(&mut self, section: &str, keys: &[Key<T>], t: &T, extra: &[Field]) -> Result<()> {
        for key in keys {
            key.write(t, self)?;
        }
        self.extra(section, keys, extra)
    }

    fn section(&mut self, name: &str) {
        let _ = write!(self.text, "\n[{name}]\n");
    }

    pub(super) fn key(&mut self, key: &str) {
        self.text.push_str(key);
        self.text.push_str(" = ");
    }

    pub(super) fn decimal(&mut self, key: &str, value: Option<u64>) {
        if let Some(v) = value {
            let _ = writeln!(self.text, "{key} = {v}");
        }
    }

    pub(super) fn word(&mut self, key: &str, word: &str) {
        let _ = writeln!(self.text, "{key} = {word}");
    }

    pub(super) fn hex(&mut self, key: &str, value: Option<u64>) {
        if let Some(v) = value {
            let _ = writeln!(self.text, "{key} = {v:#x}");
        }
    }

    pub(super) fn string(&mut self, key: &str, value: Option<&[u8]>) {
        if let Some(v) = value {
            self.key(key);
            push_quoted(&mut self.text, v);
            self.text.push('\n');
        }
    }

    pub(super) fn hex_bytes(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
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

    /// Writes the list of quoted strings `list`.
    pub(super) fn string_list(&mut self, key: &str, list: &[Vec<u8>]) {
        self.key(key);
        self.text.push('[');
        for (i, item) in list.iter().enumerate() {
            if i > 0 {
                self.text.push_str(", ");
            }
            push_quoted(&mut self.text, item);
        }
        self.text.push_str("]\n");
    }

    fn extra<T>(&mut self, section: &str, known: &[Key<T>], fields: &[Field]) -> Result<()> {
        for Field { key, value } in fields {
            if !is_name(key) {
                return Err(invalid(format!(
                    "key `{}` in [{section}] is not made of letters, digits, `-`, `_` and `.`",
                    key.escape_debug()
                )));
            }
            // `lost-samples-cpu<N>` keys are known too: one would be read back as typed.
            let per_cpu = section == SAMPLING && key.starts_with(LOST_SAMPLES_CPU);
            if position(known, key).is_some() || per_cpu {
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
