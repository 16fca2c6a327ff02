//! Interactive flame graphs (SVG with inferno's script: click to zoom, search), drawn by
//! inferno from the folded stacks; an icicle graph with `inverted`.
//!
//! Kernel frames are orange and the others red (C) or yellow (C++ `::` names): the folded
//! lines carry FlameGraph's `_[k]` annotation, which the renderer colours by and does not print.
//! Colours come from a hash of each name, so the same profile gives the same bytes.

use std::io::{self, Write};

use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self as inferno_flamegraph, Direction};
use profile_model::{Profile, Unit, ValueTypeId};

use crate::ExportOptions;
use crate::folded::collapse;

/// Writes the flame graph of value type `vt`.
pub(crate) fn write(
    profile: &Profile,
    vt: ValueTypeId,
    options: &ExportOptions,
    note: Option<&str>,
    out: impl Write,
) -> io::Result<()> {
    let lines: Vec<String> = collapse(profile, vt, true)
        .into_iter()
        .map(|(stack, value)| format!("{stack} {value}"))
        .collect();
    let kind = profile.value_type(vt);
    let title = match &options.title {
        Some(t) => t.clone(),
        None => format!("{} flame graph", kind.name),
    };
    render(
        lines.iter().map(String::as_str),
        &title,
        count_name(kind.unit, kind.name),
        options.inverted,
        note,
        out,
    )
}

/// What inferno's tooltips call one unit of value of this kind ("3 samples", "5,000 ns").
pub(crate) fn count_name(unit: Unit, name: &str) -> &str {
    match unit {
        Unit::Nanoseconds => "ns",
        Unit::Bytes => "bytes",
        _ => name,
    }
}

/// Renders folded lines (one or two counts each: two make a differential graph).
pub(crate) fn render<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    title: &str,
    count_name: &str,
    inverted: bool,
    subtitle: Option<&str>,
    out: impl Write,
) -> io::Result<()> {
    let mut options = inferno_flamegraph::Options::default();
    options.title = title.to_owned();
    options.subtitle = subtitle.map(str::to_owned);
    options.count_name = count_name.to_owned();
    options.colors = Palette::Multi(MultiPalette::Perl);
    options.hash = true;
    options.deterministic = true;
    if inverted {
        options.direction = Direction::Inverted;
    }
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    inferno_flamegraph::from_lines(&mut options, lines, &mut out)?;
    out.flush()
}
