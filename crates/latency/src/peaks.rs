//! Peaks of a latency histogram: each is a path through the code (a cache hit, a lock
//! contention, a disk seek), OSprof's unit of analysis.

use crate::histogram::{Bucket, Histogram};

/// A peak: a run of buckets around a local maximum, bounded by valleys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peak {
    /// First bucket of the peak.
    pub first: u32,
    /// Last bucket of the peak.
    pub last: u32,
    /// The bucket with the most operations.
    pub mode: u32,
    /// Operations in the peak.
    pub count: u64,
    /// Their latencies summed, in ns.
    pub total_ns: u64,
}

impl Peak {
    /// The peak's mean latency in ns (exact: buckets keep their latency sums).
    pub fn mean_ns(&self) -> u64 {
        self.total_ns / self.count.max(1)
    }

    /// Its share of the histogram's operations, 0 to 1.
    pub fn share(&self, of: &Histogram) -> f64 {
        self.count as f64 / of.count().max(1) as f64
    }
}

/// How peaks are told apart from noise.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct PeakOptions {
    /// A peak must hold at least this share of all operations. Default is 0.01.
    pub min_share: f64,
    /// Two maxima are separate peaks only if the lowest bucket between them holds at most this
    /// share of the smaller maximum; otherwise they are one peak. Default is 0.5.
    pub valley: f64,
}

impl Default for PeakOptions {
    fn default() -> Self {
        PeakOptions {
            min_share: 0.01,
            valley: 0.5,
        }
    }
}

/// The peaks of `h`, from the shortest latencies to the longest.
///
/// Empty buckets between non-empty ones count as zero, so a gap always separates peaks. A
/// run of buckets is split at every valley deep enough (`opts.valley`); runs too small to be
/// a peak (`opts.min_share`) are left out, so the peaks' counts may sum to less than the
/// histogram's.
pub fn peaks(h: &Histogram, opts: &PeakOptions) -> Vec<Peak> {
    let Some((lo, hi)) = h.span() else {
        return Vec::new();
    };
    let dense: Vec<Bucket> = (lo..=hi).map(|b| h.bucket(b)).collect();
    // Split into maximal segments, each holding one maximum: walk up to a maximum, then down
    // to the next valley (the bucket where counts start rising again).
    let mut segments: Vec<(usize, usize, usize)> = Vec::new(); // (first, last, mode)
    let mut i = 0;
    while i < dense.len() {
        if dense[i].count == 0 {
            i += 1;
            continue;
        }
        let first = i;
        while i + 1 < dense.len() && dense[i + 1].count >= dense[i].count && dense[i + 1].count > 0
        {
            i += 1;
        }
        let mode = i;
        while i + 1 < dense.len() && dense[i + 1].count <= dense[i].count && dense[i + 1].count > 0
        {
            i += 1;
        }
        segments.push((first, i, mode));
        i += 1;
    }
    // Merge neighbours whose valley is shallow.
    let mut merged: Vec<(usize, usize, usize)> = Vec::new();
    for seg in segments {
        if let Some(prev) = merged.last_mut()
            && prev.1 + 1 == seg.0
        {
            let valley = dense[prev.1].count.min(dense[seg.0].count) as f64;
            let smaller = dense[prev.2].count.min(dense[seg.2].count) as f64;
            if valley > opts.valley * smaller {
                if dense[seg.2].count > dense[prev.2].count {
                    prev.2 = seg.2;
                }
                prev.1 = seg.1;
                continue;
            }
        }
        merged.push(seg);
    }
    let total = h.count().max(1) as f64;
    merged
        .into_iter()
        .map(|(f, l, m)| {
            let (count, total_ns) = dense[f..=l].iter().fold((0u64, 0u64), |(c, t), b| {
                (c + b.count, t.saturating_add(b.total_ns))
            });
            Peak {
                first: lo + f as u32,
                last: lo + l as u32,
                mode: lo + m as u32,
                count,
                total_ns,
            }
        })
        .filter(|p| p.count as f64 / total >= opts.min_share)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Resolution;

    fn hist(counts: &[(u32, u64)]) -> Histogram {
        let mut h = Histogram::new(Resolution::ONE);
        for &(b, n) in counts {
            h.add_bucket(b, n, n * (3 << b) / 2);
        }
        h
    }

    #[test]
    fn one_peak_and_two() {
        let p = peaks(
            &hist(&[(19, 3), (20, 990), (21, 7)]),
            &PeakOptions::default(),
        );
        assert_eq!(p.len(), 1);
        assert_eq!(
            (p[0].first, p[0].last, p[0].mode, p[0].count),
            (19, 21, 20, 1000)
        );
        // Figure 1 of the paper: no contention on the left, contention on the right.
        let h = hist(&[
            (10, 50),
            (11, 800),
            (12, 60),
            (13, 5),
            (14, 2),
            (16, 30),
            (17, 200),
            (18, 40),
        ]);
        let p = peaks(&h, &PeakOptions::default());
        assert_eq!(p.iter().map(|p| p.mode).collect::<Vec<_>>(), vec![11, 17]);
        assert_eq!(p[1].count, 270);
        assert!((p[1].share(&h) - 270.0 / 1187.0).abs() < 1e-9);
    }

    #[test]
    fn shallow_valleys_merge_and_noise_is_dropped() {
        let h = hist(&[(10, 100), (11, 80), (12, 90), (30, 1)]);
        let p = peaks(&h, &PeakOptions::default());
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!((p[0].first, p[0].last, p[0].mode), (10, 12, 10));
        assert!(peaks(&Histogram::new(Resolution::ONE), &PeakOptions::default()).is_empty());
    }
}
