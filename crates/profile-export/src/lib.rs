//! Exports of pkgprof's profile model to the formats people already read, and profile diffs.
//!
//! Every export reads a [`profile_model::Profile`] — never gprof text or gmon bytes — and writes
//! one format to an [`io::Write`]:
//!
//! | [`Format`] | what reads it |
//! |---|---|
//! | `folded` | FlameGraph's `flamegraph.pl`, `inferno-flamegraph`: one `caller;callee;leaf N` line per stack |
//! | `svg` | a browser: an interactive flame graph (inferno's renderer), `--inverted` for an icicle graph |
//! | `pprof` | `go tool pprof`, Pyroscope, Parca: gzip-compressed `profile.proto` |
//! | `speedscope` | speedscope.app: its JSON file format, one sampled profile per thread |
//! | `firefox` | profiler.firefox.com: the processed profile format (fxprof-processed-profile) |
//! | `dot` | Graphviz `dot`: the call graph in gprof2dot's conventions |
//! | `json` | scripts: the model itself, versioned (see the [`json`] module) |
//!
//! Using it takes three steps:
//!
//! 1. Read a profile into the model (callgraph's readers do it for gmon.out files and
//!    measurements).
//! 2. Pick a [`Format`] (by name with [`Format::from_name`]) and [`ExportOptions`].
//! 3. Call [`export`]; the returned [`Exported`] says what the output stands for (for example
//!    that its stacks were reconstructed from arcs).
//!
//! ```
//! use profile_export::{ExportOptions, Format, export};
//! use profile_model::{Frame, Function, LabelSetId, ProfileBuilder, Side, ValueKind};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut b = ProfileBuilder::new();
//! b.value_type(ValueKind::SAMPLES);
//! let mut frame = |b: &mut ProfileBuilder, name: &str| {
//!     let name = b.string(name);
//!     let function = b.function(Function::new(name, Side::User));
//!     b.frame(Frame::new(function))
//! };
//! let (main, work) = (frame(&mut b, "main"), frame(&mut b, "work"));
//! let stack = b.stack_of(&[main, work]).expect("two frames");
//! b.add_sample(stack, LabelSetId::EMPTY, &[7])?;
//! let profile = b.build();
//!
//! let mut out = Vec::new();
//! export(&profile, Format::Folded, &ExportOptions::default(), &mut out)?;
//! assert_eq!(String::from_utf8(out)?, "main;work 7\n");
//! # Ok(())
//! # }
//! ```
//!
//! Profiles of mcount data (a gmon.out: arcs and self times, no stacks) have no stacks to
//! fold. pprof and DOT carry the arcs themselves (pprof as two-frame samples of a `calls`
//! value type, DOT as edges with their counts); every stack-based format gets stacks
//! reconstructed by gprof's own assumption — each call of a function costs the average — and
//! says so in its output (see [`Exported::reconstructed`]).
//!
//! Diffs of two profiles ([`Diff`]) match functions by symbolic identity and print a flat
//! listing, differential folded stacks, a red/blue flame graph, or a pprof profile with
//! `-diff_base` semantics.
//!
//! What it does not do: read any of these formats back (except JSON in tests), symbolize, or
//! choose which processes a profile holds — the readers decide what goes into the model.

#![deny(missing_docs)]

use std::io;
use std::str::FromStr;

use profile_model::{Profile, ValueTypeId};

mod diff;
mod dot;
mod error;
mod firefox;
mod flamegraph;
mod folded;
pub mod json;
mod names;
mod pprof;
mod reconstruct;
mod speedscope;
#[cfg(test)]
mod test_util;

pub use diff::{Diff, DiffOptions, DiffRow, Normalize, export_diff};
pub use error::{Error, Result};

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Folded stacks, `a;b;c N`: what FlameGraph and inferno read.
    Folded,
    /// An interactive flame graph, SVG.
    FlameGraph,
    /// pprof's `profile.proto`, gzip-compressed.
    Pprof,
    /// speedscope's JSON file format.
    Speedscope,
    /// The Firefox Profiler's processed profile JSON.
    Firefox,
    /// The call graph for Graphviz, in gprof2dot's conventions.
    Dot,
    /// The model as JSON, with a versioned schema.
    Json,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 7] = [
        Format::Folded,
        Format::FlameGraph,
        Format::Pprof,
        Format::Speedscope,
        Format::Firefox,
        Format::Dot,
        Format::Json,
    ];

    /// The format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Folded => "folded",
            Format::FlameGraph => "svg",
            Format::Pprof => "pprof",
            Format::Speedscope => "speedscope",
            Format::Firefox => "firefox",
            Format::Dot => "dot",
            Format::Json => "json",
        }
    }

    /// The format named `name` (also `flamegraph` for `svg`).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "flamegraph" => Some(Format::FlameGraph),
            _ => Format::ALL.into_iter().find(|f| f.name() == name),
        }
    }

    /// Whether the output is binary (gzip), not text.
    pub fn is_binary(self) -> bool {
        self == Format::Pprof
    }

    fn names() -> String {
        Format::ALL.map(Format::name).join(", ")
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Format::from_name(s).ok_or_else(|| Error::UnknownFormat(s.to_owned()))
    }
}

/// How [`export`] writes a profile.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ExportOptions {
    /// The value type exported where a format takes one (folded stacks, flame graphs, DOT's
    /// percentages, pprof's default sample type), by name (`samples`, `cpu`, …). Default is
    /// `None`: the profile's first value type.
    pub value: Option<String>,
    /// The title of a flame graph or the name of a speedscope or Firefox profile. Default is
    /// `None`: a title naming the value type.
    pub title: Option<String>,
    /// Whether a flame graph grows downwards from the roots (an icicle graph). Default is false.
    pub inverted: bool,
    /// DOT: functions whose inclusive share of the total is below this percentage are left out.
    /// Default is 0.5, gprof2dot's `--node-thres`.
    pub node_threshold: f64,
    /// DOT: edges whose share of the total is below this percentage are left out. Default is
    /// 0.1, gprof2dot's `--edge-thres`.
    pub edge_threshold: f64,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            value: None,
            title: None,
            inverted: false,
            node_threshold: 0.5,
            edge_threshold: 0.1,
        }
    }
}

/// What an export wrote, beyond the bytes: what a reader of the output should be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Exported {
    /// Whether the stacks were reconstructed from arcs by gprof's assumption (the profile had
    /// arcs but no stacks); the output says so too where the format has room for it.
    pub reconstructed: bool,
}

/// The note every output with reconstructed stacks carries.
pub const RECONSTRUCTED_NOTE: &str = "stacks reconstructed from call arcs by gprof's assumption \
    (every call of a function costs the average); the profile recorded no stacks";

/// Writes `profile` in `format` to `out`.
///
/// Returns an error if the value type named in `options` is not in the profile, if the profile
/// has no value type, or if writing fails.
pub fn export(
    profile: &Profile,
    format: Format,
    options: &ExportOptions,
    out: impl io::Write,
) -> Result<Exported> {
    let vt = value_type(profile, options.value.as_deref())?;
    if format == Format::Json {
        json::write(profile, out)?;
        return Ok(Exported {
            reconstructed: false,
        });
    }
    let view = reconstruct::with_stacks(profile);
    let p = view.profile();
    let reconstructed = view.reconstructed();
    let note = reconstructed.then_some(RECONSTRUCTED_NOTE);
    match format {
        Format::Folded => folded::write(p, vt, note, out)?,
        Format::FlameGraph => flamegraph::write(p, vt, options, note, out)?,
        Format::Pprof => pprof::write(p, vt, note, out)?,
        Format::Speedscope => speedscope::write(p, vt, options, note, out)?,
        Format::Firefox => firefox::write(p, vt, options, note, out)?,
        Format::Dot => dot::write(p, vt, options, note, out)?,
        Format::Json => unreachable!("written above"),
    }
    Ok(Exported { reconstructed })
}

/// The value type named `name`, or the profile's first.
///
/// Returns an error if there is no such value type, or none at all.
pub fn value_type(profile: &Profile, name: Option<&str>) -> Result<ValueTypeId> {
    let mut types = profile.value_types();
    match name {
        None => types.next().map(|(id, _)| id).ok_or(Error::NoValues),
        Some(name) => types
            .find(|(_, k)| k.name == name)
            .map(|(id, _)| id)
            .ok_or_else(|| Error::NoSuchValue {
                name: name.to_owned(),
                known: profile
                    .value_types()
                    .map(|(_, k)| k.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
    }
}

/// A JSON serializer's error as this crate's: i/o failures stay i/o errors.
fn json_error(e: serde_json::Error) -> Error {
    if e.is_io() {
        Error::Io(e.into())
    } else {
        Error::Json(e)
    }
}
