//! The model as JSON, for scripts: every table of the profile, items referring to each other by
//! position (0-based), text inline.
//!
//! Schema, version 1 (`"format": "pkgprof-profile", "version": 1`); a later version adds fields
//! or bumps the number, never changes the meaning of a field of this one:
//!
//! ```text
//! {
//!   "format": "pkgprof-profile", "version": 1,
//!   "value_types": [{"name": "samples", "unit": "count"}, ...],   // unit: count|nanoseconds|bytes
//!   "period": {"name": "cpu", "unit": "nanoseconds", "value": 1000000} | null,
//!   "objects":   [{"path": "/bin/prog", "build_id": "ab12..." | null}, ...],
//!   "functions": [{"name": "read", "system_name": "_Z4readv" | null, "object": 0 | null,
//!                  "side": "user" | "kernel", "label": "137u" | null, "file": "read.c" | null},
//!                 ...],
//!   "frames":    [{"function": 3, "address": 4198400 | null, "line": 12 | null}, ...],
//!   "stacks":    [{"parent": 0 | null, "frame": 5}, ...],        // parents come first
//!   "label_sets": [[{"key": "pid", "number": 137}, {"key": "comm", "text": "cat"}], ...],
//!   "samples":   [{"stack": 7, "labels": 0, "values": [1, 1000000], "time": 123 | null}, ...],
//!   "arcs":      [{"caller": 2, "callee": 5, "count": 40}, ...]
//! }
//! ```
//!
//! `values` has one entry per value type, in order. Label set 0 is the empty set. A stack's
//! frames are found by following `parent` from the innermost frame to a root.

use std::io::{self, Write};

use profile_model::{LabelValue, Profile, Side};
use serde::Serialize;

use crate::{Result, json_error};

/// The schema version [`write()`] produces.
pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    version: u32,
    value_types: Vec<ValueType<'a>>,
    period: Option<Period<'a>>,
    objects: Vec<Object<'a>>,
    functions: Vec<Function<'a>>,
    frames: Vec<Frame>,
    stacks: Vec<Stack>,
    label_sets: Vec<Vec<Label<'a>>>,
    samples: Vec<Sample<'a>>,
    arcs: Vec<Arc>,
}

#[derive(Serialize)]
struct ValueType<'a> {
    name: &'a str,
    unit: &'static str,
}

#[derive(Serialize)]
struct Period<'a> {
    name: &'a str,
    unit: &'static str,
    value: i64,
}

#[derive(Serialize)]
struct Object<'a> {
    path: &'a str,
    build_id: Option<String>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    system_name: Option<&'a str>,
    object: Option<usize>,
    side: &'static str,
    label: Option<&'a str>,
    file: Option<&'a str>,
}

#[derive(Serialize)]
struct Frame {
    function: usize,
    address: Option<u64>,
    line: Option<u32>,
}

#[derive(Serialize)]
struct Stack {
    parent: Option<usize>,
    frame: usize,
}

#[derive(Serialize)]
struct Label<'a> {
    key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    number: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

#[derive(Serialize)]
struct Sample<'a> {
    stack: usize,
    labels: usize,
    values: &'a [i64],
    time: Option<u64>,
}

#[derive(Serialize)]
struct Arc {
    caller: usize,
    callee: usize,
    count: i64,
}

/// Writes `profile` as a version-1 document (see the module docs), one line.
///
/// Returns an error if writing fails.
pub fn write(profile: &Profile, out: impl Write) -> Result<()> {
    let label_sets = profile
        .label_sets()
        .map(|(_, labels)| {
            labels
                .iter()
                .map(|l| Label {
                    key: profile.label_key_name(l.key),
                    number: match l.value {
                        LabelValue::Number(n) => Some(n),
                        LabelValue::Text(_) => None,
                    },
                    text: match l.value {
                        LabelValue::Text(s) => Some(profile.string(s)),
                        LabelValue::Number(_) => None,
                    },
                })
                .collect()
        })
        .collect();
    let doc = Document {
        format: "pkgprof-profile",
        version: VERSION,
        value_types: profile
            .value_types()
            .map(|(_, k)| ValueType {
                name: k.name,
                unit: k.unit.as_str(),
            })
            .collect(),
        period: profile.period().map(|p| Period {
            name: p.kind.name,
            unit: p.kind.unit.as_str(),
            value: p.value,
        }),
        objects: profile
            .objects()
            .map(|(_, o)| Object {
                path: profile.string(o.path),
                build_id: o
                    .build_id
                    .as_deref()
                    .map(|id| id.iter().map(|b| format!("{b:02x}")).collect()),
            })
            .collect(),
        functions: profile
            .functions()
            .map(|(_, f)| Function {
                name: profile.string(f.name),
                system_name: f.system_name.map(|s| profile.string(s)),
                object: f.object.map(|o| o.index()),
                side: match f.side {
                    Side::Kernel => "kernel",
                    _ => "user",
                },
                label: f.label.map(|s| profile.string(s)),
                file: f.file.map(|s| profile.string(s)),
            })
            .collect(),
        frames: profile
            .frames()
            .map(|(_, f)| Frame {
                function: f.function.index(),
                address: f.address,
                line: f.line,
            })
            .collect(),
        stacks: profile
            .stacks()
            .map(|(_, n)| Stack {
                parent: n.parent.map(|p| p.index()),
                frame: n.frame.index(),
            })
            .collect(),
        label_sets,
        samples: profile
            .samples()
            .map(|s| Sample {
                stack: s.stack.index(),
                labels: s.labels.index(),
                values: s.values,
                time: s.time,
            })
            .collect(),
        arcs: profile
            .arcs()
            .iter()
            .map(|a| Arc {
                caller: a.caller.index(),
                callee: a.callee.index(),
                count: a.count,
            })
            .collect(),
    };
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut out, &doc).map_err(json_error)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}
