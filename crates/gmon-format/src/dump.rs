//! A readable text dump of every record, used by `pkgprof --dump` and the golden dump tests.

use std::io::Write;

use crate::error::Result;
use crate::layout::{AddressSize, Endian, Format};
use crate::read::{Header, Profile, Record};

/// How many records of each kind a file holds; what `gprof -i` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    /// GNU header version; 0 for BSD files, as gprof reports them.
    pub version: u32,
    /// Histogram records (a BSD file counts one if it has any bin).
    pub histograms: u64,
    /// Call-graph arcs.
    pub arcs: u64,
    /// Basic-block count records.
    pub basic_blocks: u64,
}

impl Profile<'_> {
    /// Counts the records of each kind.
    ///
    /// Returns an error if a record cannot be read.
    pub fn summary(&self) -> Result<Summary> {
        let version = match self.header() {
            Header::Gnu { version, .. } => *version,
            Header::Bsd44 { .. } | Header::OldBsd => 0,
        };
        let mut summary = Summary {
            version,
            ..Summary::default()
        };
        for record in self.records() {
            match record?.1 {
                // gprof counts a BSD file's histogram only when it has bins.
                Record::Histogram(h)
                    if self.layout().format != Format::Gnu && h.bins.is_empty() => {}
                Record::Histogram(_) => summary.histograms += 1,
                Record::Arc(_) => summary.arcs += 1,
                Record::BasicBlocks(_) => summary.basic_blocks += 1,
            }
        }
        Ok(summary)
    }
}

/// Writes every record of `profile` as text: one line per record, preceded by its byte offset,
/// with each non-zero histogram bin on a line of its own.
///
/// The text is stable across versions so that dumps can be kept and compared.
///
/// Returns an error if writing fails or a record cannot be read; records before the bad one are
/// written first, so the dump shows where the file goes wrong.
pub fn dump<W: Write>(out: &mut W, profile: &Profile<'_>) -> Result<()> {
    let layout = profile.layout();
    let width = match layout.address_size {
        AddressSize::U32 => 8,
        AddressSize::U64 => 16,
    };
    let bits = layout.address_size.bytes() * 8;
    let endian = match layout.endian {
        Endian::Little => "little-endian",
        Endian::Big => "big-endian",
    };
    match profile.header() {
        Header::Gnu { version, spare } => {
            writeln!(out, "format gnu version {version}, {bits}-bit {endian}")?;
            writeln!(out, "spare {}", hex(spare))?;
        }
        Header::Bsd44 { spare } => {
            writeln!(out, "format 4.4bsd, {bits}-bit {endian}")?;
            writeln!(out, "spare {}", hex(spare))?;
        }
        Header::OldBsd => writeln!(
            out,
            "format old-bsd, {bits}-bit {endian} (rate not stored, 100 assumed)"
        )?,
    }
    let (mut histograms, mut arcs, mut blocks) = (0u64, 0u64, 0u64);
    for record in profile.records() {
        let (offset, record) = record?;
        match record {
            Record::Histogram(h) => {
                histograms += 1;
                let hh = &h.header;
                let total: u64 = h.bins.iter().map(u64::from).sum();
                writeln!(
                    out,
                    "{offset:#010x} histogram {:#0w$x}..{:#0w$x} bins {} rate {} dimension {:?} abbrev {:?} samples {total}",
                    hh.low_pc,
                    hh.high_pc,
                    h.bins.len(),
                    hh.prof_rate,
                    hh.dimension_str(),
                    char::from(hh.dimension_abbrev),
                    w = width + 2,
                )?;
                let n = h.bins.len() as u128;
                let span = u128::from(hh.high_pc.wrapping_sub(hh.low_pc));
                for (i, count) in h.bins.iter().enumerate().filter(|&(_, c)| c != 0) {
                    // The lowest address the bin covers, in exact integer arithmetic.
                    let start = u128::from(hh.low_pc) + i as u128 * span / n;
                    writeln!(out, "  bin {i} at {start:#0w$x}: {count}", w = width + 2)?;
                }
            }
            Record::Arc(a) => {
                arcs += 1;
                writeln!(
                    out,
                    "{offset:#010x} arc {:#0w$x} -> {:#0w$x} count {}",
                    a.from_pc,
                    a.self_pc,
                    a.count,
                    w = width + 2
                )?;
            }
            Record::BasicBlocks(bb) => {
                blocks += 1;
                writeln!(out, "{offset:#010x} basic-blocks {}", bb.len())?;
                for (address, count) in bb.iter() {
                    writeln!(out, "  {address:#0w$x}: {count}", w = width + 2)?;
                }
            }
        }
    }
    let tail = profile.trailing_bytes();
    if !tail.is_empty() {
        let at = profile.data().len() - tail.len();
        writeln!(
            out,
            "{at:#010x} ignored {} bytes of a partial arc (gprof ignores them too)",
            tail.len()
        )?;
    }
    writeln!(
        out,
        "end at {:#010x}: histograms {histograms}, arcs {arcs}, basic-block records {blocks}",
        profile.data().len()
    )?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
