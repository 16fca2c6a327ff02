//! Summing several profiles with GNU gprof's rules, and writing the sum.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;

use crate::error::{Error, ErrorKind, Result};
use crate::layout::{AddressSize, DIMENSION_LEN, Endian, Format, Layout};
use crate::read::{
    Arc, Header, HistogramHeader, OLD_BSD_PROF_RATE, Profile, Record, dimension_text,
};
use crate::write::Writer;

/// One summed histogram: a range and its counters, held wide so that sums never wrap in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SumHistogram {
    /// `lpc` of the first record with this range.
    pub low_pc: u64,
    /// `hpc` of the first record with this range.
    pub high_pc: u64,
    /// Summed counters.
    pub bins: Vec<u64>,
}

/// The unit and rate every histogram of a sum shares: the first record's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistogramUnit {
    /// Samples per second.
    pub prof_rate: u32,
    /// Unit name, NUL padded.
    pub dimension: [u8; DIMENSION_LEN],
    /// Unit abbreviation.
    pub dimension_abbrev: u8,
}

/// Profiles added together as `gprof` adds its input files.
///
/// * The profiling rate and unit are the first histogram record's; a later record with another
///   unit is an error, while a later GNU record's rate is not checked (as in gprof).
/// * A histogram with the same range as an earlier one is added to it bin by bin; one with a
///   different scale (bytes per bin) or a range that overlaps without being equal is an error;
///   otherwise it becomes another record, kept in order of first appearance.
/// * BSD files must match the first histogram's range and size, and 4.4BSD files its rate.
/// * Arcs with the same (from_pc, self_pc) add; they are kept in order of first appearance.
/// * Basic-block counts with the same address add.
///
/// Counts are held as `u64`; they are cut to the file's field widths only when written, where
/// histogram bins wrap modulo 2^16 and GNU arc counts modulo 2^32, exactly as `gprof -s` writes
/// them.
#[derive(Debug, Clone, Default)]
pub struct Sum {
    histograms: Vec<SumHistogram>,
    /// Scale of the first histogram record, in 2-byte units per bin.
    scale: Option<f64>,
    unit: Option<HistogramUnit>,
    arcs: Vec<Arc>,
    arc_index: HashMap<(u64, u64), usize, AddressHash>,
    basic_blocks: Vec<(u64, u64)>,
    block_index: HashMap<u64, usize, AddressHash>,
    /// `hpc` and bin count (BSD: `ncnt`) of the last histogram header read.
    last_histogram: Option<(u64, u32)>,
    /// Whether any basic-block record was read, even an empty one.
    basic_block_records: bool,
}

impl Sum {
    /// An empty sum.
    pub fn new() -> Self {
        Sum::default()
    }

    /// Adds every record of `profile`.
    ///
    /// Returns an error, with the offset of the offending record, if a record cannot be read or
    /// breaks one of the rules above. The records before it stay added.
    pub fn add(&mut self, profile: &Profile<'_>) -> Result<()> {
        let format = profile.layout().format;
        for record in profile.records() {
            let (offset, record) = record?;
            let located = |kind| Error::at(offset, kind);
            match record {
                Record::Histogram(h) => {
                    let bsd_ncnt = (format != Format::Gnu).then(|| {
                        (profile.layout().histogram_header_size() + 2 * h.bins.len()) as u32
                    });
                    self.add_histogram(&h.header, &h.bins, format)
                        .map_err(located)?;
                    let tail = bsd_ncnt.unwrap_or(h.bins.len() as u32);
                    self.last_histogram = Some((h.header.high_pc, tail));
                }
                Record::Arc(arc) => self.add_arc(arc),
                Record::BasicBlocks(bb) => {
                    self.basic_block_records = true;
                    for (address, count) in bb.iter() {
                        let next = self.basic_blocks.len();
                        let i = *self.block_index.entry(address).or_insert(next);
                        if i == next {
                            self.basic_blocks.push((address, 0));
                        }
                        self.basic_blocks[i].1 += count;
                    }
                }
            }
        }
        Ok(())
    }

    fn add_histogram(
        &mut self,
        header: &HistogramHeader,
        bins: &crate::read::Bins<'_>,
        format: Format,
    ) -> Result<(), ErrorKind> {
        let n = bins.len();
        if format != Format::Gnu {
            if let Some(first) = self.histograms.first()
                && (first.low_pc != header.low_pc
                    || first.high_pc != header.high_pc
                    || first.bins.len() != n)
            {
                return Err(ErrorKind::IncompatibleWithFirst);
            }
            if format == Format::Bsd44
                && let (Some(unit), false) = (self.unit, self.histograms.is_empty())
                && unit.prof_rate != header.prof_rate
            {
                return Err(ErrorKind::RateIncompatible);
            }
        }
        let unit = HistogramUnit {
            prof_rate: if format == Format::OldBsd {
                OLD_BSD_PROF_RATE
            } else {
                header.prof_rate
            },
            dimension: header.dimension,
            dimension_abbrev: header.dimension_abbrev,
        };
        // gprof computes the scale in floating point from the integer unit count.
        let scale = (header.high_pc.wrapping_sub(header.low_pc) / 2) as f64 / n as f64;
        match (self.unit, self.scale) {
            (Some(first), Some(first_scale)) => {
                if first.dimension != unit.dimension {
                    return Err(ErrorKind::DimensionChanged {
                        old: dimension_text(&first.dimension),
                        new: dimension_text(&unit.dimension),
                    });
                }
                if first.dimension_abbrev != unit.dimension_abbrev {
                    return Err(ErrorKind::AbbrevChanged {
                        old: char::from(first.dimension_abbrev),
                        new: char::from(unit.dimension_abbrev),
                    });
                }
                if (scale - first_scale).abs() > 1e-6 {
                    return Err(ErrorKind::DifferentScales);
                }
            }
            _ => {
                self.unit = Some(unit);
                self.scale = Some(scale);
            }
        }
        let same = self
            .histograms
            .iter_mut()
            .find(|h| h.low_pc == header.low_pc && h.high_pc == header.high_pc);
        if let Some(existing) = same {
            // Equal range and scale imply an equal bin count; the existing record's count rules.
            let len = existing.bins.len().min(n);
            bins.add_to(&mut existing.bins[..len]);
            return Ok(());
        }
        if self
            .histograms
            .iter()
            .any(|h| header.low_pc < h.high_pc && h.low_pc < header.high_pc)
        {
            return Err(ErrorKind::OverlappingHistograms);
        }
        let mut summed = vec![0; n];
        bins.add_to(&mut summed);
        self.histograms.push(SumHistogram {
            low_pc: header.low_pc,
            high_pc: header.high_pc,
            bins: summed,
        });
        Ok(())
    }

    /// Appends a histogram of 2-byte bins as reading its records would (see
    /// [`crate::labeled::sampled_sum`]): its range is new to the sum and `unit` is the first
    /// record's, kept if one was read before.
    pub(crate) fn push_sampled(&mut self, histogram: SumHistogram, unit: HistogramUnit) {
        if self.unit.is_none() {
            self.unit = Some(unit);
            self.scale = Some(1.0);
        }
        self.last_histogram = Some((histogram.high_pc, histogram.bins.len() as u32));
        self.histograms.push(histogram);
    }

    /// Adds `arc.count` to the arc with the same (from_pc, self_pc), creating it if needed.
    pub fn add_arc(&mut self, arc: Arc) {
        let next = self.arcs.len();
        let i = *self
            .arc_index
            .entry((arc.from_pc, arc.self_pc))
            .or_insert(next);
        if i == next {
            self.arcs.push(Arc { count: 0, ..arc });
        }
        self.arcs[i].count += arc.count;
    }

    /// The summed histograms, in order of first appearance.
    pub fn histograms(&self) -> &[SumHistogram] {
        &self.histograms
    }

    /// The rate and unit of the first histogram record, if any was read.
    pub fn unit(&self) -> Option<HistogramUnit> {
        self.unit
    }

    /// The summed arcs, in order of first appearance.
    pub fn arcs(&self) -> &[Arc] {
        &self.arcs
    }

    /// The summed basic-block counts, in order of first appearance.
    pub fn basic_blocks(&self) -> &[(u64, u64)] {
        &self.basic_blocks
    }

    /// Whether any basic-block record was read (even one with no pairs): `gprof -s` then
    /// writes one, however many pairs it kept.
    pub fn has_basic_block_records(&self) -> bool {
        self.basic_block_records
    }

    /// The 12 spare header bytes `gprof -s` writes.
    ///
    /// gprof never initialises them, and in practice they hold the `hpc` (as 8 bytes) and bin
    /// count (`ncnt` for BSD input) of the last histogram header it read, in the byte order of
    /// the machine running gprof (little-endian on x86) whatever the file's order and address
    /// width; zeros if it read none. Writing the same bytes is what makes our gmon.sum identical
    /// to gprof's.
    pub fn gnu_spare(&self) -> [u8; 12] {
        let mut spare = [0u8; 12];
        if let Some((high_pc, count)) = self.last_histogram {
            spare[..8].copy_from_slice(&high_pc.to_le_bytes());
            spare[8..].copy_from_slice(&count.to_le_bytes());
        }
        spare
    }

    /// Writes the sum as a GNU gmon file, as `gprof -s` does for the records it keeps.
    ///
    /// Histograms get the first record's rate and unit, and their bins wrap modulo 2^16; arc
    /// counts wrap modulo 2^32.
    ///
    /// Returns an error if an address does not fit `address_size` or the output fails.
    pub fn write_gnu<W: Write>(
        &self,
        out: W,
        address_size: AddressSize,
        endian: Endian,
    ) -> Result<W> {
        let mut w = Writer::new(out, Layout::gnu(address_size, endian));
        self.write_gnu_records(&mut w, &self.arcs)?;
        if !self.basic_blocks.is_empty() {
            w.basic_blocks(self.basic_blocks.iter().copied())?;
        }
        w.finish()
    }

    /// [`Sum::write_gnu`] as `gprof -s` writes it: `arcs` and `basic_blocks` in place of the
    /// summed ones, since gprof writes what it resolved to symbols, which only the symbol table
    /// knows; the basic-block record is written whenever one was read.
    ///
    /// Returns an error as [`Sum::write_gnu`] does.
    pub fn write_gnu_with<W: Write>(
        &self,
        out: W,
        address_size: AddressSize,
        endian: Endian,
        arcs: &[Arc],
        basic_blocks: &[(u64, u64)],
    ) -> Result<W> {
        let mut w = Writer::new(out, Layout::gnu(address_size, endian));
        self.write_gnu_records(&mut w, arcs)?;
        if self.basic_block_records {
            w.basic_blocks(basic_blocks.iter().copied())?;
        }
        w.finish()
    }

    fn write_gnu_records<W: Write>(&self, w: &mut Writer<W>, arcs: &[Arc]) -> Result<()> {
        w.header(&Header::Gnu {
            version: 1,
            spare: self.gnu_spare(),
        })?;
        if let Some(unit) = self.unit {
            for h in &self.histograms {
                w.histogram(
                    &self.histogram_header(h, unit),
                    h.bins.iter().map(|&b| b as u16),
                )?;
            }
        }
        for arc in arcs {
            w.arc(&Arc {
                count: arc.count & 0xffff_ffff,
                ..*arc
            })?;
        }
        Ok(())
    }

    /// Writes the sum as a BSD file, as `gprof -s -O b` (or `-O 4`) does: the 4.4BSD header if
    /// `force_44` or the rate is not 100, else the old header; the first histogram only.
    ///
    /// Returns an error if an address does not fit `address_size` or the output fails.
    pub fn write_bsd<W: Write>(
        &self,
        out: W,
        address_size: AddressSize,
        endian: Endian,
        force_44: bool,
    ) -> Result<W> {
        self.write_bsd_with_arcs(out, address_size, endian, force_44, &self.arcs)
    }

    /// [`Sum::write_bsd`] with `arcs` in place of the summed arcs (see
    /// [`Sum::write_gnu_with`]).
    ///
    /// Returns an error as [`Sum::write_bsd`] does.
    pub fn write_bsd_with_arcs<W: Write>(
        &self,
        out: W,
        address_size: AddressSize,
        endian: Endian,
        force_44: bool,
        arcs: &[Arc],
    ) -> Result<W> {
        let rate = self.unit.map_or(OLD_BSD_PROF_RATE, |u| u.prof_rate);
        let format = if force_44 || rate != OLD_BSD_PROF_RATE {
            Format::Bsd44
        } else {
            Format::OldBsd
        };
        let mut w = Writer::new(
            out,
            Layout {
                format,
                address_size,
                endian,
            },
        );
        w.header(&match format {
            Format::Bsd44 => Header::Bsd44 { spare: [0; 12] },
            _ => Header::OldBsd,
        })?;
        if let (Some(h), Some(unit)) = (self.histograms.first(), self.unit) {
            w.histogram(
                &self.histogram_header(h, unit),
                h.bins.iter().map(|&b| b as u16),
            )?;
        }
        for arc in arcs {
            w.arc(arc)?;
        }
        w.finish()
    }

    fn histogram_header(&self, h: &SumHistogram, unit: HistogramUnit) -> HistogramHeader {
        HistogramHeader {
            low_pc: h.low_pc,
            high_pc: h.high_pc,
            prof_rate: unit.prof_rate,
            dimension: unit.dimension,
            dimension_abbrev: unit.dimension_abbrev,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::ReadOptions;
    use crate::test_util::Builder;

    const O: ReadOptions = ReadOptions {
        address_size: AddressSize::U64,
        endian: Endian::Little,
        format: crate::layout::FormatChoice::Auto,
    };

    fn add(sum: &mut Sum, data: &[u8]) -> Result<()> {
        sum.add(&Profile::parse(data, &O)?)
    }

    fn gnu() -> Builder {
        Builder::new(AddressSize::U64, Endian::Little).gnu_header(1)
    }

    #[test]
    fn same_ranges_add_and_wrap_only_when_written() {
        let data = gnu()
            .hist(0x100, 0x110, 100, &[40000, 1, 0, 0])
            .arc(0x104, 0x108, u32::MAX)
            .bytes;
        let mut sum = Sum::new();
        add(&mut sum, &data).unwrap();
        add(&mut sum, &data).unwrap();
        assert_eq!(sum.histograms()[0].bins, [80000, 2, 0, 0]);
        assert_eq!(sum.arcs()[0].count, 2 * u64::from(u32::MAX));
        let out = sum
            .write_gnu(Vec::new(), AddressSize::U64, Endian::Little)
            .unwrap();
        let p = Profile::parse(&out, &O).unwrap();
        let recs: Vec<_> = p.records().map(|r| r.unwrap().1).collect();
        let Record::Histogram(h) = recs[0] else {
            panic!()
        };
        assert_eq!(h.bins.iter().collect::<Vec<_>>(), [14464, 2, 0, 0]);
        let Record::Arc(a) = recs[1] else { panic!() };
        assert_eq!(a.count, u64::from(u32::MAX - 1));
        // The spare bytes hold the last histogram's high_pc and bin count, as gprof leaves them.
        assert_eq!(
            p.header(),
            &Header::Gnu {
                version: 1,
                spare: *b"\x10\x01\0\0\0\0\0\0\x04\0\0\0"
            }
        );
    }

    #[test]
    fn gprofs_histogram_rules() {
        let mut sum = Sum::new();
        add(&mut sum, &gnu().hist(0x100, 0x110, 100, &[1; 4]).bytes).unwrap();
        // Disjoint range with the same scale: a second record.
        add(&mut sum, &gnu().hist(0x200, 0x208, 50, &[1; 2]).bytes).unwrap();
        assert_eq!(sum.histograms().len(), 2);
        assert_eq!(
            sum.unit().unwrap().prof_rate,
            100,
            "later gnu rates are not checked"
        );
        let e = add(&mut sum, &gnu().hist(0x108, 0x118, 100, &[1; 4]).bytes).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::OverlappingHistograms));
        assert_eq!(e.offset(), Some(20));
        let e = add(&mut sum, &gnu().hist(0x300, 0x310, 100, &[1; 2]).bytes).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::DifferentScales));
        let mut other_unit = gnu().hist(0x300, 0x310, 100, &[1; 4]).bytes;
        other_unit[45..52].copy_from_slice(b"minutes");
        let e = add(&mut sum, &other_unit).unwrap_err();
        assert_eq!(
            e.to_string(),
            "dimension unit changed between histogram records: from 'seconds' to 'minutes' (at offset 0x14)"
        );
    }

    #[test]
    fn bsd_files_must_match_the_first_histogram() {
        let b = || Builder::new(AddressSize::U64, Endian::Little);
        let mut sum = Sum::new();
        add(&mut sum, &b().bsd44(0x100, 0x110, 1000, &[1; 4]).bytes).unwrap();
        let e = add(&mut sum, &b().bsd44(0x100, 0x110, 100, &[1; 4]).bytes).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::RateIncompatible));
        let e = add(&mut sum, &b().old_bsd(0x100, 0x120, &[1; 8]).bytes).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::IncompatibleWithFirst));
        add(
            &mut sum,
            &b().bsd44(0x100, 0x110, 1000, &[2; 4])
                .bsd_arc(1, 2, 5)
                .bytes,
        )
        .unwrap();
        assert_eq!(sum.histograms()[0].bins, [3; 4]);
        // A rate other than 100 keeps the 4.4BSD header when written as BSD.
        let out = sum
            .write_bsd(Vec::new(), AddressSize::U64, Endian::Little, false)
            .unwrap();
        assert_eq!(out.len(), 40 + 8 + 24);
        assert_eq!(
            Profile::parse(&out, &O).unwrap().layout().format,
            Format::Bsd44
        );
    }
}

/// Hashes addresses with one multiply-rotate per word.
///
/// The default SipHash made summing arcs six times slower than reading them. Its protection
/// against chosen-key flooding buys little here: a hostile profile can only slow down the
/// analysis of that same profile.
type AddressHash = BuildHasherDefault<AddressHasher>;

#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
