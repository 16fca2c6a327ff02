//! The flat profile in gprof's GNU layout.

use std::io::{self, Write};

use crate::flat::FlatProfile;
use crate::report::format::{fixed_width, general, left_cut, right, right_cut};

/// How the flat profile is printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlatPrintOptions {
    /// Whether another listing was printed before, so a form feed must separate them.
    /// Default is false.
    pub after_other_output: bool,
}

/// Writes `profile` as `gprof -b -p` does (GNU layout, no explanatory text).
///
/// Returns an error if writing to `out` fails.
pub fn write_flat<W: Write>(
    mut out: W,
    profile: &FlatProfile,
    options: &FlatPrintOptions,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(256 + 80 * profile.rows.len());
    if options.after_other_output {
        buf.extend_from_slice(b"\x0c\n");
    }
    buf.extend_from_slice(b"Flat profile:\n\nEach sample counts as ");
    buf.extend_from_slice(general(profile.sample_period).as_bytes());
    buf.push(b' ');
    buf.extend_from_slice(&profile.dimension);
    buf.extend_from_slice(b".\n");
    if profile.no_time_accumulated {
        buf.extend_from_slice(b" no time accumulated\n\n");
    }
    let dim = &profile.dimension;
    let unit = [
        profile.unit_prefix,
        profile.dimension_abbrev,
        b'/',
        b'c',
        b'a',
        b'l',
        b'l',
    ];

    write_column_header(&mut buf, dim, &unit);

    for (row, name) in profile.rows.iter().zip(&profile.names) {
        buf.extend_from_slice(fixed_width(row.percent, 6, 2).as_bytes());
        buf.push(b' ');
        buf.extend_from_slice(fixed_width(row.cumulative_seconds, 9, 2).as_bytes());
        buf.push(b' ');
        buf.extend_from_slice(fixed_width(row.self_seconds, 8, 2).as_bytes());
        match row.calls {
            Some(calls) => {
                buf.push(b' ');
                right(&mut buf, calls.to_string().as_bytes(), 8);
                buf.push(b' ');
                buf.extend_from_slice(fixed_width(row.self_per_call, 8, 2).as_bytes());
                buf.push(b' ');
                buf.extend_from_slice(fixed_width(row.total_per_call, 8, 2).as_bytes());
                buf.extend_from_slice(b"  ");
            }
            None => buf.extend_from_slice(&[b' '; 29]),
        }
        buf.extend_from_slice(name);
        buf.push(b'\n');
    }
    out.write_all(&buf)
}

/// The two-line column header of the flat profile, shared by the GNU and BSD layouts: `dim` is
/// the unit name (`seconds`), `unit` the per-call unit (`ms/call`, `us/call` ...).
pub(crate) fn write_column_header(buf: &mut Vec<u8>, dim: &[u8], unit: &[u8]) {
    right_cut(buf, b"%  ", 5);
    buf.push(b' ');
    right_cut(buf, b"cumulative", 10);
    buf.push(b' ');
    right_cut(buf, b"self  ", 8);
    buf.push(b' ');
    right_cut(buf, b"", 8);
    buf.push(b' ');
    right_cut(buf, b"self  ", 8);
    buf.push(b' ');
    right_cut(buf, b"total ", 8);
    buf.extend_from_slice(b"  ");
    left_cut(buf, b"", 8);
    buf.push(b'\n');

    right_cut(buf, b"time", 5);
    buf.push(b' ');
    right_cut(buf, dim, 9);
    buf.extend_from_slice(b"  ");
    right_cut(buf, dim, 8);
    buf.push(b' ');
    right_cut(buf, b"calls", 8);
    buf.push(b' ');
    right_cut(buf, unit, 8);
    buf.push(b' ');
    right_cut(buf, unit, 8);
    buf.extend_from_slice(b"  ");
    left_cut(buf, b"name", 8);
    buf.push(b'\n');
}
