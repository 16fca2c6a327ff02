//! Writing a measurement-info file: the known sections and keys in the order the format
//! gives, then what was kept of unknown ones.

use std::fmt::Write as _;

use super::keys::{
    BOUNDARY_KEYS, COUNTER_KEYS, KERNEL_KEYS, Key, LOST_SAMPLES_CPU, MAPPING_KEYS, PROCESS_KEYS,
    PendingRename, RENAME_KEYS, SAMPLING_KEYS, position,
};
use super::values::{TextWriter, invalid, is_name};
use super::*;
use crate::error::Result;

impl MeasurementInfo {
    pub(super) fn to_text(&self) -> Result<String> {
        let mut w = TextWriter {
            text: String::new(),
        };
        let _ = writeln!(w.text, "{INFO_MAGIC} {INFO_MAJOR}.{}", self.minor);

        w.section(PROCESS);
        write_keys(
            &mut w,
            PROCESS,
            PROCESS_KEYS,
            &self.process,
            &self.process.extra,
        )?;
        if self.sampling != SamplingInfo::default() {
            w.section(SAMPLING);
            write_keys(
                &mut w,
                SAMPLING,
                SAMPLING_KEYS,
                &self.sampling,
                &self.sampling.extra,
            )?;
        }
        if self.kernel != KernelInfo::default() {
            w.section(KERNEL);
            write_keys(
                &mut w,
                KERNEL,
                KERNEL_KEYS,
                &self.kernel,
                &self.kernel.extra,
            )?;
        }
        if self.counters != ProcessCounters::default() {
            w.section(COUNTERS);
            write_keys(
                &mut w,
                COUNTERS,
                COUNTER_KEYS,
                &self.counters,
                &self.counters.extra,
            )?;
        }
        for m in &self.mappings {
            w.section(MAPPING);
            write_keys(&mut w, MAPPING, MAPPING_KEYS, m, &m.extra)?;
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
            write_keys(&mut w, BOUNDARY, BOUNDARY_KEYS, b, &b.extra)?;
        }
        for r in &self.renames {
            w.section(RENAME);
            write_keys(
                &mut w,
                RENAME,
                RENAME_KEYS,
                &PendingRename::from(r),
                &r.extra,
            )?;
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
            write_extra::<()>(&mut w, &section.name, &[], &section.fields)?;
        }
        w.section(END);
        Ok(w.text)
    }
}

/// The lines of the known `keys` that `t` has, in order, then the unknown `extra` ones.
fn write_keys<T>(
    w: &mut TextWriter,
    section: &str,
    keys: &[Key<T>],
    t: &T,
    extra: &[Field],
) -> Result<()> {
    for key in keys {
        key.write(t, w)?;
    }
    write_extra(w, section, keys, extra)
}

/// The unknown fields of a section, refused when one could not be read back as it is.
fn write_extra<T>(
    w: &mut TextWriter,
    section: &str,
    known: &[Key<T>],
    fields: &[Field],
) -> Result<()> {
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
        w.word(key, value);
    }
    Ok(())
}
