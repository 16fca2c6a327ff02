//! Histogram assignment: how many samples ("ticks") each symbol gets.

use gmon_format::{SECONDS, Sum, SumHistogram};

use crate::symbols::SymbolTable;

/// Names gprof always keeps out of the flat profile (and the call graph): the profiling
/// runtime's own entry points. Their samples are subtracted from the total.
pub const MCOUNT_NAMES: [&[u8]; 6] = [
    b"_gprof_mcount",
    b"mcount",
    b"_mcount",
    b"__mcount",
    b"__mcount_internal",
    b"__mcleanup",
];

/// Which symbols take part in the flat profile, gprof's default: all but [`MCOUNT_NAMES`].
///
/// The result is indexed like [`SymbolTable::symbols`]; `false` means the symbol's histogram
/// credit is removed from the total and it is not listed. Symspecs (`-p NAME`, `-P NAME`) are
/// expressed by editing this vector.
pub fn default_flat_selection(table: &SymbolTable) -> Vec<bool> {
    let mut included = vec![true; table.len()];
    for i in table.indices_named(&MCOUNT_NAMES) {
        included[i] = false;
    }
    included
}

/// Samples credited to each symbol, and the totals the flat profile needs.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramTimes {
    /// Ticks (samples, possibly fractional) credited to each symbol, indexed like
    /// [`SymbolTable::symbols`].
    pub time: Vec<f64>,
    /// All samples read, less the credit of excluded symbols: the flat profile's 100%. Samples
    /// that fall on no symbol stay in it, so percentages need not add up to 100.
    pub total_time: f64,
    /// Samples per second of the first histogram record; 0 if there is no histogram.
    pub hz: u32,
    /// Unit of the histogram (`seconds`), up to its first NUL.
    pub dimension: Vec<u8>,
    /// One-letter abbreviation of the unit (`s`).
    pub dimension_abbrev: u8,
    /// 2-byte units per bin of the first histogram record; 0 if there is none.
    pub scale: f64,
    /// Whether any histogram record was read.
    pub has_histogram: bool,
}

impl HistogramTimes {
    /// Spreads the summed histograms of `sum` over the symbols of `table`.
    ///
    /// Each non-zero bin is split over the symbols it overlaps in proportion to the overlap,
    /// computed as gprof does: in 2-byte units, with each bin's bounds truncated to whole units
    /// (`low_pc/2 + trunc(scale × i)`), and each symbol reaching up to the next symbol's start.
    /// So a bin can credit more than its count when the scale is not integral, and the last
    /// symbol of the table never receives anything. `included` (see
    /// [`default_flat_selection`]) marks symbols whose credit counts; the credit of the others
    /// is taken off the total.
    pub fn assign(table: &SymbolTable, sum: &Sum, included: &[bool]) -> Self {
        let unit = sum.unit();
        let (dimension, dimension_abbrev, hz) = match unit {
            Some(u) => {
                let end = u.dimension.iter().position(|&b| b == 0);
                let dim = u.dimension[..end.unwrap_or(u.dimension.len())].to_vec();
                (dim, u.dimension_abbrev, u.prof_rate)
            }
            None => {
                let end = SECONDS.0.iter().position(|&b| b == 0).unwrap_or(0);
                (SECONDS.0[..end].to_vec(), SECONDS.1, 0)
            }
        };
        let scale = sum.histograms().first().map_or(0.0, histogram_scale);
        let mut times = HistogramTimes {
            time: vec![0.0; table.len()],
            total_time: 0.0,
            hz,
            dimension,
            dimension_abbrev,
            scale,
            has_histogram: unit.is_some(),
        };
        let units: Vec<u64> = table.symbols().iter().map(|s| s.unit_address()).collect();
        for h in sum.histograms() {
            times.add_histogram(h, &units, included);
        }
        times
    }

    fn add_histogram(&mut self, h: &SumHistogram, units: &[u64], included: &[bool]) {
        let low = h.low_pc / 2;
        // The last symbol has no successor to bound it, and gprof gives it nothing.
        let ranges = units.len().saturating_sub(1);
        for (i, &count) in h.bins.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let (b_lo, b_hi) = bin_units(low, self.scale, i);
            self.total_time += count as f64;
            if ranges == 0 {
                continue;
            }
            let first = units[1..=ranges].partition_point(|&next| next <= b_lo);
            for j in first..ranges {
                let (s_lo, s_hi) = (units[j], units[j + 1]);
                if s_lo >= b_hi {
                    break;
                }
                let overlap = i128::from(b_hi.min(s_hi)) - i128::from(b_lo.max(s_lo));
                if overlap > 0 {
                    let credit = credit(overlap as u64, count, self.scale);
                    if included.get(j).copied().unwrap_or(true) {
                        self.time[j] += credit;
                    } else {
                        self.total_time -= credit;
                    }
                }
            }
        }
    }

    /// Seconds (or whatever the dimension is) one sample stands for: `1 / hz`.
    pub fn sample_period(&self) -> f64 {
        1.0 / f64::from(self.hz)
    }

    /// Bytes one histogram bin covers as gprof reports it ("each sample hit covers N
    /// byte(s)"): the scale truncated to whole units, times 2.
    pub fn granularity_bytes(&self) -> i64 {
        x86_truncate(self.scale).wrapping_mul(2)
    }
}

/// Truncates as x86's `cvttsd2si` does, which gprof's float-to-integer casts compile to: NaN and
/// out-of-range values (the infinite scale of a histogram with no bins) become `i64::MIN`, the
/// "integer indefinite" value, where Rust's `as` would saturate.
fn x86_truncate(value: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if !(-LIMIT..LIMIT).contains(&value) {
        i64::MIN
    } else {
        value as i64
    }
}

/// 2-byte units per bin, from the record's range and bin count as gprof computes it.
fn histogram_scale(h: &SumHistogram) -> f64 {
    (h.high_pc.wrapping_sub(h.low_pc) / 2) as f64 / h.bins.len() as f64
}

/// The unit range `[lo, hi)` of bin `i`, each bound truncated toward zero.
pub(crate) fn bin_units(low_unit: u64, scale: f64, i: usize) -> (u64, u64) {
    let lo = low_unit.wrapping_add((scale * i as f64) as u64);
    let hi = low_unit.wrapping_add((scale * (i + 1) as f64) as u64);
    (lo, hi)
}

/// Ticks a bin of `count` samples gives a symbol it overlaps by `overlap` units.
pub(crate) fn credit(overlap: u64, count: u64, scale: f64) -> f64 {
    (overlap as f64 * count as f64) / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infinite_scales_truncate_as_on_x86() {
        assert_eq!(x86_truncate(f64::INFINITY).wrapping_mul(2), 0);
        assert_eq!(x86_truncate(f64::NAN), i64::MIN);
        assert_eq!([x86_truncate(2.9), x86_truncate(-2.9)], [2, -2]);
    }
    use crate::symbols::SymbolTable;
    use gmon_format::{AddressSize, Endian, Profile, ReadOptions};

    fn table(symbols: &[(&str, u64)], text_end: u64) -> SymbolTable {
        crate::test_util::functions(symbols, text_end)
    }

    /// A GNU gmon file with one histogram record per `(low, high, bins)`.
    fn sum(records: &[(u64, u64, &[u16])], hz: u32) -> Sum {
        let mut data = b"gmon\x01\0\0\0".to_vec();
        data.extend([0; 12]);
        for (low, high, bins) in records {
            data.push(0);
            data.extend(low.to_le_bytes());
            data.extend(high.to_le_bytes());
            data.extend((bins.len() as u32).to_le_bytes());
            data.extend(hz.to_le_bytes());
            data.extend(b"seconds\0\0\0\0\0\0\0\0s");
            for b in *bins {
                data.extend(b.to_le_bytes());
            }
        }
        let options = ReadOptions::new(AddressSize::U64, Endian::Little);
        let mut sum = Sum::new();
        sum.add(&Profile::parse(&data, &options).unwrap()).unwrap();
        sum
    }

    fn assign(t: &SymbolTable, s: &Sum) -> HistogramTimes {
        HistogramTimes::assign(t, s, &default_flat_selection(t))
    }

    #[test]
    fn bins_split_by_unit_overlap_with_truncated_bounds() {
        // 96 units in 20 bins: 4.8 units per bin. Bin 1 covers units [4, 9), bin 2 [9, 14).
        let t = table(
            &[
                ("_start", 0x401000),
                ("fa", 0x401010),
                ("fb", 0x401030),
                ("zz", 0x401100),
            ],
            0x401110,
        );
        let mut bins = [0u16; 20];
        bins[1] = 1;
        bins[2] = 1;
        let times = assign(&t, &sum(&[(0x401000, 0x4010c0, &bins)], 100));
        assert_eq!(times.scale, 4.8);
        assert_eq!(bin_units(0x401000 / 2, 4.8, 1), (0x200804, 0x200809));
        // _start [0, 8) gets 4 of bin 1's 5 units; fa gets 1 unit of bin 1 and all of bin 2.
        assert_eq!(times.time[0], 4.0 / 4.8);
        assert_eq!(times.time[1], 1.0 / 4.8 + 5.0 / 4.8);
        assert_eq!(times.total_time, 2.0);
        assert_eq!(times.granularity_bytes(), 8);
    }

    #[test]
    fn non_integral_scale_credits_more_than_the_count() {
        // glibc's layout: 2492 units in 1248 bins. Every bin inside `burn` is 2 units wide.
        let t = table(
            &[
                ("a", 0x1000),
                ("burn", 0x11c8),
                ("z", 0x1214),
                ("end", 0x4000),
            ],
            0x4000,
        );
        let mut bins = vec![0u16; 1248];
        for i in [1147, 1153, 1156, 1157] {
            bins[i] = if i == 1156 { 3 } else { 1 };
        }
        let times = assign(&t, &sum(&[(0x0, 0x1378, &bins)], 100));
        assert_eq!(times.total_time, 6.0);
        let per_sample = 2.0 / (2492.0 / 1248.0);
        assert!((times.time[1] - 6.0 * per_sample).abs() < 1e-12);
        assert_eq!(
            format!("{:.2}", 100.0 * times.time[1] / times.total_time),
            "100.16"
        );
        assert_eq!(times.granularity_bytes(), 2);
    }

    #[test]
    fn the_last_symbol_and_addresses_before_the_first_get_nothing() {
        let t = table(&[("a", 0x1010), ("b", 0x1020)], 0x1030);
        // One unit per bin over 0x1000..0x1040: 8 bins before `a`, 8 in `a`, 16 in `b` and past.
        let times = assign(&t, &sum(&[(0x1000, 0x1040, &[1; 32])], 100));
        assert_eq!(times.time, [8.0, 0.0]);
        assert_eq!(times.total_time, 32.0);
    }

    #[test]
    fn excluded_symbols_lose_their_credit_from_the_total() {
        let t = table(
            &[
                ("a", 0x1000),
                ("mcount", 0x1010),
                ("b", 0x1020),
                ("end", 0x1030),
            ],
            0x1030,
        );
        let times = assign(&t, &sum(&[(0x1000, 0x1030, &[2; 24])], 100));
        assert_eq!(times.time, [16.0, 0.0, 16.0, 0.0]);
        assert_eq!(times.total_time, 48.0 - 16.0);
    }

    #[test]
    fn odd_addresses_round_down_to_the_unit() {
        // `b` at 0x1005 starts in unit 0x802, so it owns the bin covering bytes 0x1004..0x1006.
        let t = table(&[("a", 0x1000), ("b", 0x1005), ("end", 0x1010)], 0x1010);
        let mut bins = [0u16; 8];
        bins[2] = 1;
        let times = assign(&t, &sum(&[(0x1000, 0x1010, &bins)], 100));
        assert_eq!(times.time, [0.0, 1.0, 0.0]);
    }

    #[test]
    fn partial_overlaps_use_the_whole_bin_count() {
        // 3 units per bin; `b` starts one unit into bin 0 and ends one unit into bin 1.
        let t = table(
            &[("a", 0x1000), ("b", 0x1002), ("c", 0x1008), ("end", 0x1100)],
            0x1100,
        );
        let times = assign(&t, &sum(&[(0x1000, 0x100c, &[3, 6])], 100));
        assert_eq!(times.time[0], 1.0 * 3.0 / 3.0);
        assert_eq!(times.time[1], 2.0 * 3.0 / 3.0 + 1.0 * 6.0 / 3.0);
        assert_eq!(times.time[2], 2.0 * 6.0 / 3.0);
        assert_eq!(times.total_time, 9.0);
    }

    #[test]
    fn several_records_and_no_histogram() {
        let t = table(&[("a", 0x1000), ("b", 0x2000), ("end", 0x3000)], 0x3000);
        let s = sum(
            &[(0x1000, 0x1004, &[1, 1]), (0x2000, 0x2004, &[0, 5])],
            1000,
        );
        let times = assign(&t, &s);
        assert_eq!(times.time, [2.0, 5.0, 0.0]);
        assert_eq!(times.hz, 1000);
        let none = assign(&t, &Sum::new());
        assert!(!none.has_histogram);
        assert_eq!(
            (none.hz, none.total_time, none.granularity_bytes()),
            (0, 0.0, 0)
        );
        assert_eq!(none.dimension, b"seconds");
    }

    #[test]
    fn empty_tables_still_count_samples() {
        let t = table(&[], 0);
        let times = assign(&t, &sum(&[(0x1000, 0x1004, &[1, 2])], 100));
        assert_eq!(times.total_time, 3.0);
        let t = table(&[("only", 0x1000)], 0x1004);
        assert_eq!(
            assign(&t, &sum(&[(0x1000, 0x1004, &[1, 2])], 100)).time,
            [0.0]
        );
    }
}
