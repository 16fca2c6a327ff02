//! The index by function name that ends gprof's call-graph report.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::graph::CallGraph;
use crate::report::format::{left_cut, right_cut, uint_digits};
use crate::report::graph::CHUNK;
use crate::sort::glibc_qsort_fast;

/// Writes `\f\nIndex by function name` and the three-column index (GNU layout, width 80, or
/// with `bsd` the fixed-width BSD layout).
///
/// `names` are printed, `mangled` decide the order (and are what the BSD index prints);
/// `width` is `-w`. `self_time` is the histogram self time per symbol; a symbol is listed if it was called or
/// sampled (always with `display_unused`), which is not the call graph's own filter.
// The listing needs all of these; a struct for one caller would only rename them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_index<W: Write>(
    mut out: W,
    graph: &CallGraph,
    names: &[Cow<'_, [u8]>],
    mangled: &[Cow<'_, [u8]>],
    self_time: &[f64],
    display_unused: bool,
    bsd: bool,
    width: i64,
) -> io::Result<()> {
    let mut symbols: Vec<usize> = (0..graph.symbol_count)
        .filter(|&s| {
            let n = &graph.nodes[s];
            display_unused || n.ncalls != 0 || self_time.get(s).copied().unwrap_or(0.0) != 0.0
        })
        .collect();
    let name = |s: usize| names.get(s).map_or(&[][..], |n| &n[..]);
    // gprof sorts by the mangled name whatever it prints.
    let key = |s: usize| mangled.get(s).map_or(&[][..], |n| &n[..]);
    // Byte-wise name order is consistent, so a stable sort gives glibc's order.
    glibc_qsort_fast(&mut symbols, true, |&a, &b| key(a).cmp(key(b)));
    let entries: Vec<usize> = symbols
        .into_iter()
        .chain(graph.symbol_count..graph.nodes.len())
        .collect();

    let mut buf = Vec::with_capacity(CHUNK + 4096);
    buf.extend_from_slice(b"\x0c\nIndex by function name\n\n");
    // gprof's column width, from the output width (`-w`, default 80) in C's int arithmetic:
    // widths below 4 give 0 or negative columns, which just pack the entries.
    let column = width.saturating_sub(1) / 3;
    let rows = entries.len().div_ceil(3);
    for row in 0..rows {
        let (mut col, mut start) = (0i64, 0i64);
        for &e in entries.iter().skip(row).step_by(rows.max(1)) {
            let n = &graph.nodes[e];
            let mut digits = [0u8; 20];
            let mut label_buf = [0u8; 22];
            let index = uint_digits(&mut digits, n.index as u64);
            let (open, close) = if n.print_flag {
                (b'[', b']')
            } else {
                (b'(', b')')
            };
            label_buf[0] = open;
            label_buf[1..=index.len()].copy_from_slice(index);
            label_buf[index.len() + 1] = close;
            let label = &label_buf[..index.len() + 2];
            let mut cycle_buf = [0u8; 28];
            let text: &[u8] = match n.symbol {
                Some(s) => name(s),
                None => {
                    let digits = uint_digits(&mut digits, n.cycle as u64);
                    let len = digits.len() + 8;
                    cycle_buf[..7].copy_from_slice(b"<cycle ");
                    cycle_buf[7..len - 1].copy_from_slice(digits);
                    cycle_buf[len - 1] = b'>';
                    &cycle_buf[..len]
                }
            };
            if bsd {
                // Fixed columns: label right-aligned in 6, the bare name (no source suffix)
                // cut to 19.
                let bare = match n.symbol {
                    Some(s) => key(s),
                    None => text,
                };
                right_cut(&mut buf, label, 6);
                buf.push(b' ');
                left_cut(&mut buf, bare, 19);
                continue;
            }
            col += label.len() as i64;
            // The two spaces around the label are not counted, as in gprof, so columns drift.
            // A wide index (`-w 2147483647`) pads lines of gigabytes, written out as they grow.
            while col < start.saturating_add(5) {
                let n = (start.saturating_add(5) - col).min(CHUNK as i64);
                buf.resize(buf.len() + n as usize, b' ');
                col += n;
                if buf.len() >= CHUNK {
                    out.write_all(&buf)?;
                    buf.clear();
                }
            }
            buf.push(b' ');
            buf.extend_from_slice(label);
            buf.push(b' ');
            col += text.len() as i64;
            buf.extend_from_slice(text);
            start = start.saturating_add(column);
        }
        buf.push(b'\n');
        if buf.len() >= CHUNK {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}
