//! The call graph for Graphviz in gprof2dot's conventions, so that people who read gprof2dot's
//! pictures read ours the same way:
//!
//! - a node per function: its name, inclusive share of the total (`12.34%`), self share in
//!   parentheses (`(5.67%)`), and the calls it received (`42×`) when the profile has arcs;
//! - an edge per caller → callee pair: the share of the total spent in the callee on behalf of
//!   this caller (samples whose stack has the caller directly above the callee) and the calls;
//! - colour by heat on gprof2dot's temperature map (dark blue for 0 % to saturated red for
//!   100 %), edge widths and arrow sizes growing with the share;
//! - nodes below `node_threshold` % and edges below `edge_threshold` % left out (0.5 and 0.1 by
//!   default, as gprof2dot).
//!
//! Edges of arcs without stack data (mcount profiles are given reconstructed stacks first, so
//! this is rare) take the callee's share, as gprof2dot does for calls without a time; a
//! function calling itself gets a thin edge with its call count only.

use std::fmt::Write as _;
use std::io::{self, Write};

use profile_model::{Profile, ValueTypeId};

use crate::ExportOptions;
use crate::names::Names;

/// Writes the DOT graph of value type `vt`.
pub(crate) fn write(
    profile: &Profile,
    vt: ValueTypeId,
    options: &ExportOptions,
    note: Option<&str>,
    out: impl Write,
) -> io::Result<()> {
    let names = Names::new(profile);
    let total = profile.total(vt);
    let share = |v: i64| {
        if total > 0 {
            v as f64 / total as f64
        } else {
            0.0
        }
    };
    let totals = profile.function_totals(vt);
    let graph = profile.call_graph(Some(vt));
    let has_arcs = !profile.arcs().is_empty();
    let node_min = options.node_threshold / 100.0;
    let edge_min = options.edge_threshold / 100.0;
    let kept: Vec<bool> = profile
        .functions()
        .map(|(f, _)| {
            let inclusive = share(totals.inclusive(f));
            inclusive >= node_min && (inclusive > 0.0 || !graph.callers(f).is_empty())
        })
        .collect();

    let mut s = String::new();
    s.push_str("digraph {\n");
    if let Some(note) = note {
        let _ = writeln!(s, "\tlabel=\"{}\";", escape(note));
    }
    s.push_str("\tgraph [fontname=Arial, nodesep=0.125, ranksep=0.25];\n");
    s.push_str(
        "\tnode [fontcolor=white, fontname=Arial, height=0, shape=box, style=filled, width=0];\n",
    );
    s.push_str("\tedge [fontname=Arial];\n");
    for (f, _) in profile.functions() {
        if !kept[f.index()] {
            continue;
        }
        let weight = share(totals.inclusive(f));
        let mut label = escape(names.get(f));
        let _ = write!(
            label,
            "\\n{}\\n({})",
            percent(weight),
            percent(share(totals.self_value(f)))
        );
        if has_arcs {
            let calls: i64 = graph.callers(f).iter().map(|(_, e)| e.calls).sum();
            if calls > 0 {
                let _ = write!(label, "\\n{calls}×");
            }
        }
        let _ = writeln!(
            s,
            "\t{} [color=\"{}\", fontcolor=\"#ffffff\", fontsize=\"10.00\", label=\"{label}\"];",
            f.index(),
            color(weight),
        );
        for (callee, edge) in graph.callees(f) {
            if !kept[callee.index()] {
                continue;
            }
            // A function calling itself spends nothing more than its own time on it: the edge
            // shows the calls alone, thin and cold, as gprof lists recursive calls apart.
            let recursion = callee == f && edge.value == 0;
            let weight = if edge.value != 0 {
                share(edge.value)
            } else if recursion {
                0.0
            } else {
                share(totals.inclusive(callee))
            };
            if weight < edge_min && !recursion {
                continue;
            }
            let mut label = if recursion {
                String::new()
            } else {
                percent(weight)
            };
            if edge.calls > 0 {
                if !label.is_empty() {
                    label.push_str("\\n");
                }
                let _ = write!(label, "{}×", edge.calls);
            }
            let pen = (weight * 4.0).max(0.5);
            let _ = writeln!(
                s,
                "\t{} -> {} [arrowsize=\"{:.2}\", color=\"{c}\", fontcolor=\"{c}\", fontsize=\"10.00\", label=\"{label}\", labeldistance=\"{pen:.2}\", penwidth=\"{pen:.2}\"];",
                f.index(),
                callee.index(),
                0.5 * pen.sqrt(),
                c = color(weight),
            );
        }
    }
    s.push_str("}\n");
    let mut out = out;
    out.write_all(s.as_bytes())?;
    out.flush()
}

/// A share as gprof2dot prints it: `12.34%`.
fn percent(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

/// Text inside a DOT double-quoted string.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// gprof2dot's temperature colour map: hue, saturation and lightness interpolated linearly
/// from dark blue (2/3, 0.8, 0.25) at share 0 to saturated red (0, 1, 0.5) at share 1.
fn color(weight: f64) -> String {
    let w = weight.clamp(0.0, 1.0);
    let (h, s, l) = (2.0 / 3.0 * (1.0 - w), 0.8 + 0.2 * w, 0.25 + 0.25 * w);
    let (r, g, b) = hsl_to_rgb(h, s, l);
    let byte = |x: f64| (255.0 * x.clamp(0.0, 1.0) + 0.5) as u8;
    format!("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b))
}

/// CSS3's HSL to RGB conversion.
fn hsl_to_rgb(h: f64, s: f64, l: f64) -> (f64, f64, f64) {
    let m2 = if l <= 0.5 {
        l * (s + 1.0)
    } else {
        l + s - l * s
    };
    let m1 = l * 2.0 - m2;
    let hue = |mut h: f64| {
        if h < 0.0 {
            h += 1.0;
        } else if h > 1.0 {
            h -= 1.0;
        }
        if h * 6.0 < 1.0 {
            m1 + (m2 - m1) * h * 6.0
        } else if h * 2.0 < 1.0 {
            m2
        } else if h * 3.0 < 2.0 {
            m1 + (m2 - m1) * (2.0 / 3.0 - h) * 6.0
        } else {
            m1
        }
    };
    (hue(h + 1.0 / 3.0), hue(h), hue(h - 1.0 / 3.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_run_from_dark_blue_to_red() {
        // gprof2dot's own values for 0, 0.5 and 1 on its temperature map.
        assert_eq!(color(0.0), "#0d0d73");
        assert_eq!(color(0.5), "#0ab60a");
        assert_eq!(color(1.0), "#ff0000");
        assert_eq!(color(2.0), "#ff0000");
    }
}
