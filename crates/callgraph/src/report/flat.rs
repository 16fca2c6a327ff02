//! The flat profile in gprof's GNU layout.

use std::io::{self, Write};

use crate::flat::FlatProfile;
use crate::report::format::{general, left_cut, pad, push_fixed, push_uint, right_cut};
use crate::report::graph::CHUNK;

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
    out: W,
    profile: &FlatProfile,
    options: &FlatPrintOptions,
) -> io::Result<()> {
    write_flat_named(out, profile, options, |row| &profile.names[row])
}

/// [`write_flat`] printing `name(row)` for each row instead of [`FlatProfile::names`], so a
/// report can print demangled names without copying the profile.
pub(crate) fn write_flat_named<'n, W: Write>(
    mut out: W,
    profile: &FlatProfile,
    options: &FlatPrintOptions,
    name: impl Fn(usize) -> &'n [u8],
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(CHUNK + 4096);
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

    for (i, row) in profile.rows.iter().enumerate().take(profile.names.len()) {
        push_fixed(&mut buf, row.percent, 6, 2);
        buf.push(b' ');
        push_fixed(&mut buf, row.cumulative_seconds, 9, 2);
        buf.push(b' ');
        push_fixed(&mut buf, row.self_seconds, 8, 2);
        match row.calls {
            Some(calls) => {
                buf.push(b' ');
                push_uint(&mut buf, calls, 8);
                buf.push(b' ');
                push_fixed(&mut buf, row.self_per_call, 8, 2);
                buf.push(b' ');
                push_fixed(&mut buf, row.total_per_call, 8, 2);
                buf.extend_from_slice(b"  ");
            }
            None => pad(&mut buf, 29),
        }
        buf.extend_from_slice(name(i));
        buf.push(b'\n');
        if buf.len() >= CHUNK {
            out.write_all(&buf)?;
            buf.clear();
        }
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
