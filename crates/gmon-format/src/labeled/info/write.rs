//! Writing a measurement-info file: the known sections and keys in the order the format
//! gives, then what was kept of unknown ones.

use std::fmt::Write as _;

use super::values::{check_file_name, invalid, is_name, push_quoted};
use super::*;
use crate::error::Result;

impl MeasurementInfo {
    pub(super) fn to_text(&self) -> Result<String> {
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
                w.word("arcs", arcs.as_str());
            }
            w.decimal("lost-samples", s.lost_samples);
            w.decimal("throttled", s.throttled);
            for (cpu, n) in &s.lost_samples_by_cpu {
                w.decimal(&format!("{LOST_SAMPLES_CPU}{cpu}"), Some(*n));
            }
            w.decimal("truncated-stacks", s.truncated_stacks);
            w.decimal("truncated-stack-copy", s.truncated_stack_copy);
            w.decimal("truncated-callchain-limit", s.truncated_callchain_limit);
            w.decimal("truncated-unwind-info", s.truncated_unwind_info);
            w.decimal("stack-size", s.stack_size);
            w.decimal("max-stack", s.max_stack);
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
            w.string("source", c.source.map(|s| s.as_str().as_bytes()));
            if c.taskstats_refused {
                w.word("taskstats", REFUSED);
            }
            w.decimal("perf-page-faults", c.perf_page_faults);
            w.decimal("perf-context-switches", c.perf_context_switches);
            w.decimal("perf-cpu-migrations", c.perf_cpu_migrations);
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

        let b = &self.boundary;
        if *b != BoundaryCounts::default() {
            w.section(BOUNDARY);
            // In the order of the kinds, whatever order the map was filled in.
            for kind in BoundaryKind::ALL {
                w.decimal(kind.as_str(), b.entries.get(&kind).copied());
            }
            w.decimal("user-only", b.user_only);
            w.decimal("kernel-only", b.kernel_only);
            if let Some(file) = &b.stacks_file {
                check_file_name(file).map_err(|why| invalid(format!("stacks-file: {why}")))?;
            }
            w.string("stacks-file", b.stacks_file.as_ref().map(String::as_bytes));
            w.extra(BOUNDARY, &boundary_keys(), &b.extra)?;
        }

        for r in &self.renames {
            w.section(RENAME);
            w.decimal("monotonic-ns", Some(r.monotonic_ns));
            w.decimal("tid", Some(u64::from(r.tid)));
            w.string("comm", Some(r.comm.as_bytes()));
            w.extra(RENAME, RENAME_KEYS, &r.extra)?;
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
            w.extra(&section.name, &[], &section.fields)?;
        }
        w.section(END);
        Ok(w.text)
    }
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

    fn word(&mut self, key: &str, word: &str) {
        let _ = writeln!(self.text, "{key} = {word}");
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
            // `lost-samples-cpu<N>` keys are known too: one would be read back as typed.
            let per_cpu = section == SAMPLING && key.starts_with(LOST_SAMPLES_CPU);
            if known.contains(&key.as_str()) || per_cpu {
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
