//! speedscope's JSON file format (`https://www.speedscope.app/file-format-schema.json`): one
//! `sampled` profile per thread (per process when samples carry no thread, one in all when
//! they carry neither), frames shared between them.
//!
//! Each frame is a function, named as in the listings, with its object as `file` (`[kernel]`
//! for kernel code of no known object), so kernel frames show where they come from. Timed
//! samples keep their order, runs of the same stack joined into one weighted sample; samples
//! without times (aggregated profiles) are summed per thread and stack.

use std::io::{self, Write};

use profile_model::{FunctionId, LabelKey, LabelSetId, LabelValue, Profile, Unit, ValueTypeId};
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::names::{Names, object_path};
use crate::{ExportOptions, Result, json_error};

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    exporter: String,
    name: &'a str,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    shared: Shared<'a>,
    profiles: Vec<Sampled>,
}

#[derive(Serialize)]
struct Shared<'a> {
    frames: Vec<Frame<'a>>,
}

#[derive(Serialize)]
struct Frame<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
}

#[derive(Serialize)]
struct Sampled {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: i64,
    #[serde(rename = "endValue")]
    end_value: i64,
    samples: Vec<Vec<u32>>,
    weights: Vec<i64>,
}

/// Writes the speedscope file of value type `vt`.
pub(crate) fn write(
    profile: &Profile,
    vt: ValueTypeId,
    options: &ExportOptions,
    note: Option<&str>,
    out: impl Write,
) -> Result<()> {
    let names = Names::new(profile);
    let frames: Vec<Frame<'_>> = profile
        .functions()
        .map(|(f, _)| Frame {
            name: names.get(f),
            file: object_path(profile, f),
        })
        .collect();
    let unit = match profile.value_type(vt).unit {
        Unit::Nanoseconds => "nanoseconds",
        Unit::Bytes => "bytes",
        _ => "none",
    };
    let mut threads: Vec<Sampled> = Vec::new();
    let mut thread_of: FxHashMap<(Option<i64>, Option<i64>), usize> = FxHashMap::default();
    // Samples without times have no order to keep: each thread's equal stacks are summed.
    // Timed samples keep their order, runs of one stack joined.
    let timed = profile.samples().any(|s| s.time.is_some());
    let mut seen: Vec<FxHashMap<profile_model::StackId, usize>> = Vec::new();
    let mut last_stack: Vec<Option<profile_model::StackId>> = Vec::new();
    let mut stack_cache: FxHashMap<profile_model::StackId, Vec<u32>> = FxHashMap::default();
    for sample in profile.samples() {
        let value = sample.values[vt.index()];
        if value <= 0 {
            continue;
        }
        let key = thread_key(profile, sample.labels);
        let t = *thread_of.entry(key).or_insert_with(|| {
            threads.push(Sampled {
                kind: "sampled",
                name: thread_name(profile, sample.labels, key, options, note),
                unit,
                start_value: 0,
                end_value: 0,
                samples: Vec::new(),
                weights: Vec::new(),
            });
            last_stack.push(None);
            seen.push(FxHashMap::default());
            threads.len() - 1
        });
        let thread = &mut threads[t];
        thread.end_value = thread.end_value.saturating_add(value);
        let earlier = if timed {
            (last_stack[t] == Some(sample.stack)).then(|| thread.weights.len() - 1)
        } else {
            seen[t].get(&sample.stack).copied()
        };
        if let Some(i) = earlier {
            thread.weights[i] = thread.weights[i].saturating_add(value);
            continue;
        }
        last_stack[t] = Some(sample.stack);
        seen[t].insert(sample.stack, thread.weights.len());
        let frames = stack_cache.entry(sample.stack).or_insert_with(|| {
            let mut fs: Vec<u32> = profile
                .stack_frames(sample.stack)
                .map(|fr| index(profile.frame(fr).function))
                .collect();
            fs.reverse();
            fs
        });
        thread.samples.push(frames.clone());
        thread.weights.push(value);
    }
    let title = options.title.clone().unwrap_or_else(|| {
        let kind = profile.value_type(vt);
        format!("pkgprof {}", kind.name)
    });
    let file = File {
        schema: "https://www.speedscope.app/file-format-schema.json",
        exporter: format!("pkgprof {}", env!("CARGO_PKG_VERSION")),
        name: &title,
        active_profile_index: 0,
        shared: Shared { frames },
        profiles: threads,
    };
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut out, &file).map_err(json_error)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

fn index(f: FunctionId) -> u32 {
    u32::try_from(f.index()).expect("function handles are u32")
}

/// The (pid, tid) a sample belongs to, as far as its labels say.
pub(crate) fn thread_key(profile: &Profile, labels: LabelSetId) -> (Option<i64>, Option<i64>) {
    let number = |key: LabelKey| {
        profile
            .labels(labels)
            .iter()
            .find(|l| l.key == key)
            .and_then(|l| match l.value {
                LabelValue::Number(n) => Some(n),
                LabelValue::Text(_) => None,
            })
    };
    (number(LabelKey::Pid), number(LabelKey::Tid))
}

/// A thread's profile name: `comm (pid 137, tid 138)`, or the title when there are no labels.
fn thread_name(
    profile: &Profile,
    labels: LabelSetId,
    key: (Option<i64>, Option<i64>),
    options: &ExportOptions,
    note: Option<&str>,
) -> String {
    let comm = profile
        .labels(labels)
        .iter()
        .find_map(|l| match (l.key, l.value) {
            (LabelKey::Comm, LabelValue::Text(s)) => Some(profile.string(s)),
            _ => None,
        });
    let mut name = match key {
        (Some(pid), Some(tid)) => format!("{} (pid {pid}, tid {tid})", comm.unwrap_or("")),
        (Some(pid), None) => format!("{} (pid {pid})", comm.unwrap_or("")),
        (None, Some(tid)) => format!("{} (tid {tid})", comm.unwrap_or("")),
        (None, None) => options
            .title
            .clone()
            .unwrap_or_else(|| "all samples".into()),
    };
    name = name.trim_start().to_owned();
    if let Some(note) = note {
        name.push_str(" — ");
        name.push_str(note);
    }
    name
}
