//! The flat profile in gprof's BSD layout (`-T`).

use std::borrow::Cow;
use std::io::{self, Write};

use crate::flat::FlatProfile;
use crate::graph::CallGraph;
use crate::histogram::HistogramTimes;
use crate::report::format::{fixed, pad, push_fixed, push_uint};
use crate::report::graph::{CHUNK, push_decorated};

/// What the BSD flat profile needs beyond the GNU one: per-call times are always in
/// milli-units, names carry cycle and index decorations, and a granularity line leads.
pub(crate) struct BsdFlat<'a> {
    pub flat: &'a FlatProfile,
    pub times: &'a HistogramTimes,
    pub graph: &'a CallGraph,
    pub names: &'a [Cow<'a, [u8]>],
    /// Whether the call graph exists, so names get ` <cycle N>` and ` [index]`.
    pub decorate: bool,
    pub after_other_output: bool,
}

/// Writes the flat profile as `gprof -b -T -p` does.
pub(crate) fn write_flat_bsd<W: Write>(mut out: W, p: &BsdFlat<'_>) -> io::Result<()> {
    let times = p.times;
    let hz = f64::from(times.hz);
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    if p.after_other_output {
        buf.extend_from_slice(b"\x0c\n");
    }
    buf.extend_from_slice(
        format!(
            "\ngranularity: each sample hit covers {} byte(s)",
            times.granularity_bytes()
        )
        .as_bytes(),
    );
    if times.total_time > 0.0 {
        buf.extend_from_slice(
            format!(
                " for {}% of {} ",
                fixed(100.0 / times.total_time, 2),
                fixed(times.total_time / hz, 2)
            )
            .as_bytes(),
        );
        buf.extend_from_slice(&times.dimension);
        buf.extend_from_slice(b"\n\n");
    } else {
        buf.extend_from_slice(b" no time accumulated\n\n");
    }
    let dim = &times.dimension;
    let unit = [b'm', times.dimension_abbrev, b'/', b'c', b'a', b'l', b'l'];
    super::flat::write_column_header(&mut buf, dim, &unit);

    let child = p.graph.child_times();
    for row in &p.flat.rows {
        let i = row.symbol;
        let t = times.time.get(i).copied().unwrap_or(0.0);
        push_fixed(&mut buf, row.percent, 5, 1);
        buf.push(b' ');
        push_fixed(&mut buf, row.cumulative_seconds, 10, 2);
        buf.push(b' ');
        push_fixed(&mut buf, row.self_seconds, 8, 2);
        match row.calls {
            Some(calls) => {
                let c = calls as f64;
                let ch = child.get(i).copied().unwrap_or(0.0);
                buf.push(b' ');
                push_uint(&mut buf, calls, 8);
                buf.push(b' ');
                push_fixed(&mut buf, 1000.0 * t / hz / c, 8, 2);
                buf.push(b' ');
                push_fixed(&mut buf, 1000.0 * (t + ch) / hz / c, 8, 2);
                buf.extend_from_slice(b"  ");
            }
            None => pad(&mut buf, 29),
        }
        let name = p.names.get(i).map_or(&[][..], |v| v);
        match p.graph.nodes.get(i).filter(|_| p.decorate) {
            Some(n) => push_decorated(&mut buf, n, name),
            None => buf.extend_from_slice(name),
        }
        buf.push(b'\n');
        if buf.len() >= CHUNK {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}
