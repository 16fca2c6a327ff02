//! Latencies for people: durations in human units and histograms drawn as text in bpftrace's
//! style (`[1ms, 2ms)   990 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|`).

use std::fmt::Write as _;

use crate::histogram::Histogram;

/// A duration in ns in the largest unit that keeps it at least 1, with up to three
/// significant digits: `950ns`, `1.05ms`, `2s`, `12.5us`.
pub fn duration(ns: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    let (scale, unit) = UNITS
        .iter()
        .copied()
        .find(|&(s, _)| ns >= s)
        .unwrap_or((1, "ns"));
    if scale == 1 {
        return format!("{ns}{unit}");
    }
    let v = ns as f64 / scale as f64;
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    };
    format!("{s}{unit}")
}

/// A bucket's bound in bpftrace's compact units: `512`, `1K`, `1M`, `4G` (powers of 1024) for
/// whole powers, else the duration.
fn bound(ns: u64) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if ns >= 1 << shift && ns.is_multiple_of(1 << shift) {
            return format!("{}{unit}", ns >> shift);
        }
    }
    ns.to_string()
}

/// Draws `h` as bpftrace prints a `hist()`: one line per bucket from the first non-empty to
/// the last, `[low, high)` in nanoseconds (K, M, G are powers of 1024), the count, and a bar
/// of `@` scaled to `width` at the fullest bucket.
pub fn histogram(h: &Histogram, width: usize) -> String {
    let mut out = String::new();
    let Some((lo, hi)) = h.span() else {
        return out;
    };
    let r = h.resolution();
    let max = h.buckets().map(|(_, b)| b.count).max().unwrap_or(1).max(1);
    let rows: Vec<(String, u64)> = (lo..=hi)
        .map(|b| {
            (
                format!("[{}, {})", bound(r.lower_bound(b)), bound(r.upper_bound(b))),
                h.count_in(b),
            )
        })
        .collect();
    let label_w = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let count_w = rows
        .iter()
        .map(|(_, c)| c.to_string().len())
        .max()
        .unwrap_or(1);
    for (label, count) in rows {
        let bar = (count as u128 * width as u128).div_ceil(max as u128) as usize;
        let _ = writeln!(
            out,
            "{label:<label_w$} {count:>count_w$} |{:<width$}|",
            "@".repeat(bar)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Resolution;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(950), "950ns");
        assert_eq!(duration(1_050_000), "1.05ms");
        assert_eq!(duration(2_000_000_000), "2s");
        assert_eq!(duration(12_500), "12.5us");
        assert_eq!(duration(123_456), "123us");
        assert_eq!(duration(0), "0ns");
    }

    #[test]
    fn histograms_draw_like_bpftrace() {
        let mut h = Histogram::new(Resolution::ONE);
        for _ in 0..4 {
            h.add(1_100_000);
        }
        h.add(600_000);
        h.add(3_000_000);
        assert_eq!(
            histogram(&h, 8),
            "[512K, 1M) 1 |@@      |\n\
             [1M, 2M)   4 |@@@@@@@@|\n\
             [2M, 4M)   1 |@@      |\n"
        );
    }
}
