//! Encoding sampled counts as a gmon file in the measurement layout (module docs, items 1 and
//! 2): the collector writes its per-process files with it, and `pkgprof --pid --merge-out` its
//! merged profile, so both follow the one layout. [`sampled_sum`] gives the [`Sum`] such a file
//! reads back to without encoding it, for reports that only need the sum.

use crate::error::Result;
use crate::layout::{AddressSize, Endian, Layout};
use crate::read::{Arc, Header, HistogramHeader};
use crate::sum::{HistogramUnit, Sum, SumHistogram};
use crate::write::Writer;

/// Bytes per histogram bin: every record has the same scale, as gprof requires.
const BIN_BYTES: u64 = 2;
/// Histogram records cover whole pages of this many bytes.
const PAGE_BYTES: u64 = 4096;

/// Encodes samples and arcs as a 64-bit GNU gmon file (version 1, byte order `endian`).
///
/// `samples` are (address, count) pairs sorted by address; several may fall in one 2-byte bin.
/// With a `unit`, the histogram is one record per run of contiguous 4 KiB pages holding
/// samples, repeated while a bin holds more than a record's 16 bits can carry (gprof adds
/// records with identical ranges); the last page of the address space, which cannot have a
/// page-aligned exclusive end, is left out. Without a `unit` no histogram is written. Arcs are
/// written in the order given, a count above 2³²−1 split over several records of the same edge.
///
/// Returns an error if the writer refuses a record (it does not for these inputs).
pub fn write_sampled_profile(
    endian: Endian,
    samples: &[(u64, u64)],
    arcs: impl IntoIterator<Item = ((u64, u64), u64)>,
    unit: Option<HistogramUnit>,
) -> Result<Vec<u8>> {
    let mut w = Writer::new(Vec::new(), Layout::gnu(AddressSize::U64, endian));
    w.header(&Header::Gnu {
        version: 1,
        spare: [0; 12],
    })?;
    if let Some(unit) = unit {
        for (low, high, bins) in page_histograms(samples) {
            let max = bins.iter().copied().max().unwrap_or(0);
            let header = HistogramHeader {
                low_pc: low,
                high_pc: high,
                prof_rate: unit.prof_rate,
                dimension: unit.dimension,
                dimension_abbrev: unit.dimension_abbrev,
            };
            let mut carried = 0u64;
            while carried < max {
                let part = bins
                    .iter()
                    .map(|&b| b.saturating_sub(carried).min(u64::from(u16::MAX)) as u16);
                w.histogram(&header, part)?;
                carried += u64::from(u16::MAX);
            }
        }
    }
    for ((from_pc, self_pc), count) in arcs {
        let mut left = count;
        while left > 0 {
            let part = left.min(u64::from(u32::MAX));
            w.arc(&Arc {
                from_pc,
                self_pc,
                count: part,
            })?;
            left -= part;
        }
    }
    w.finish()
}

/// The sum that reading [`write_sampled_profile`]`(_, samples, arcs, unit)` gives, made
/// without the bytes: one summed histogram per run of pages (its repeated records added
/// again), the arcs' counts whole, in the order given, and [`Sum::gnu_spare`] as the last
/// record read leaves it.
pub fn sampled_sum(
    samples: &[(u64, u64)],
    arcs: impl IntoIterator<Item = ((u64, u64), u64)>,
    unit: Option<HistogramUnit>,
) -> Sum {
    let mut sum = Sum::new();
    if let Some(unit) = unit {
        for (low, high, bins) in page_histograms(samples) {
            // A run whose bins are all zero writes no record.
            if bins.iter().any(|&b| b > 0) {
                sum.push_sampled(
                    SumHistogram {
                        low_pc: low,
                        high_pc: high,
                        bins,
                    },
                    unit,
                );
            }
        }
    }
    for ((from_pc, self_pc), count) in arcs {
        if count > 0 {
            sum.add_arc(Arc {
                from_pc,
                self_pc,
                count,
            });
        }
    }
    sum
}

/// The histogram of each run of pages: its [low, high) byte range and its bins.
fn page_histograms(samples: &[(u64, u64)]) -> impl Iterator<Item = (u64, u64, Vec<u64>)> + '_ {
    page_runs(samples).into_iter().map(|(low, high)| {
        let mut bins = vec![0u64; ((high - low) / BIN_BYTES) as usize];
        let from = samples.partition_point(|&(a, _)| a < low);
        for &(a, n) in samples[from..].iter().take_while(|&&(a, _)| a < high) {
            bins[((a - low) / BIN_BYTES) as usize] += n;
        }
        (low, high, bins)
    })
}

/// The [low, high) byte ranges of the runs of contiguous pages that hold samples.
fn page_runs(samples: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &(a, _) in samples {
        let page = a / PAGE_BYTES;
        if page == u64::MAX / PAGE_BYTES {
            continue;
        }
        match runs.last_mut() {
            Some((_, last)) if *last == page || *last + 1 == page => *last = page,
            _ => runs.push((page, page)),
        }
    }
    runs.into_iter()
        .map(|(first, last)| (first * PAGE_BYTES, (last + 1) * PAGE_BYTES))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::ReadOptions;
    use crate::read::{Profile, SECONDS};
    use crate::sum::Sum;

    #[test]
    fn bins_above_16_bits_are_carried_by_repeated_records() {
        let samples = [(0x10000, 70_000), (0x10002, 5)];
        let arcs = [((0x10000, 0x10010), 5_000_000_000u64)];
        let unit = HistogramUnit {
            prof_rate: 100,
            dimension: SECONDS.0,
            dimension_abbrev: SECONDS.1,
        };
        let data = write_sampled_profile(Endian::Little, &samples, arcs, Some(unit)).unwrap();
        let mut sum = Sum::new();
        let read = ReadOptions::new(AddressSize::U64, Endian::Little);
        sum.add(&Profile::parse(&data, &read).unwrap()).unwrap();
        assert_eq!(sum.histograms().len(), 1);
        let h = &sum.histograms()[0];
        assert_eq!((h.low_pc, h.high_pc), (0x10000, 0x11000));
        assert_eq!((h.bins[0], h.bins[1]), (70_000, 5));
        assert_eq!(sum.arcs()[0].count, 5_000_000_000);
    }

    #[test]
    fn the_sum_is_the_one_the_encoded_file_reads_back_to() {
        let unit = HistogramUnit {
            prof_rate: 997,
            dimension: SECONDS.0,
            dimension_abbrev: SECONDS.1,
        };
        // Two runs of pages, a bin above 16 bits, a zero count, samples sharing a bin, an arc
        // above 32 bits, a repeated arc and a zero one.
        let samples = [
            (0x10000, 3),
            (0x10001, 4),
            (0x11ffe, 200_000),
            (0x40000, 0),
            (0x50010, 1),
        ];
        let arcs = [
            ((0x50010, 0x10000), 1u64),
            ((0x10000, 0x50010), 9_000_000_000),
            ((0x50010, 0x10000), 2),
            ((0x10, 0x20), 0),
        ];
        for unit in [Some(unit), None] {
            let data = write_sampled_profile(Endian::Little, &samples, arcs, unit).unwrap();
            let mut read = Sum::new();
            let options = ReadOptions::new(AddressSize::U64, Endian::Little);
            read.add(&Profile::parse(&data, &options).unwrap()).unwrap();
            let made = sampled_sum(&samples, arcs, unit);
            assert_eq!(made.histograms(), read.histograms());
            assert_eq!(made.unit(), read.unit());
            assert_eq!(made.arcs(), read.arcs());
            assert_eq!(made.gnu_spare(), read.gnu_spare());
            let gnu = |s: &Sum| s.write_gnu(Vec::new(), AddressSize::U64, Endian::Little);
            assert_eq!(gnu(&made).unwrap(), gnu(&read).unwrap());
        }
    }
}
