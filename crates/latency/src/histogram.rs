//! Log2 latency histograms at resolution r: r buckets per power of two (OSprof §2).

use std::collections::BTreeMap;

/// Buckets per power of two: OSprof's `r` in `b = ⌊log_{2^{1/r}}(latency)⌋ = ⌊r·log2(latency)⌋`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Resolution(u32);

impl Resolution {
    /// One bucket per power of two, as OSprof always used.
    pub const ONE: Resolution = Resolution(1);
    /// The largest resolution accepted.
    pub const MAX: u32 = 64;

    /// `r` buckets per power of two; None unless 1 ≤ r ≤ 64.
    pub fn new(r: u32) -> Option<Resolution> {
        (1..=Self::MAX).contains(&r).then_some(Resolution(r))
    }

    /// `r`.
    pub fn get(self) -> u32 {
        self.0
    }

    /// The bucket of a latency of `ns` nanoseconds: the largest `b` with
    /// [`lower_bound`](Self::lower_bound)`(b) ≤ ns`; 0 for 0 and 1 ns.
    pub fn bucket(self, ns: u64) -> u32 {
        if ns <= 1 {
            return 0;
        }
        let r = self.0;
        let e = 63 - ns.leading_zeros();
        if r == 1 {
            return e;
        }
        // Within the power of two [2^e, 2^(e+1)) the r sub-buckets start at 2^(e + j/r).
        let mut b = e * r;
        while b + 1 < (e + 1) * r && self.lower_bound(b + 1) <= ns {
            b += 1;
        }
        b
    }

    /// The smallest latency in bucket `b`: ⌈2^(b/r)⌉ ns (bucket 0 also holds 0 ns).
    pub fn lower_bound(self, b: u32) -> u64 {
        let r = self.0;
        let (e, j) = (b / r, b % r);
        if e >= 64 {
            return u64::MAX;
        }
        if j == 0 {
            return 1u64 << e;
        }
        let v = (f64::from(b) / f64::from(r)).exp2().ceil();
        if v >= u64::MAX as f64 {
            u64::MAX
        } else {
            v as u64
        }
    }

    /// The first latency past bucket `b`.
    pub fn upper_bound(self, b: u32) -> u64 {
        self.lower_bound(b + 1)
    }
}

/// One bucket's calls and their summed latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bucket {
    /// Operations whose latency fell in the bucket.
    pub count: u64,
    /// Their latencies summed, in ns (so each peak's mean is exact, not a bucket midpoint).
    pub total_ns: u64,
}

/// A latency histogram of one operation: counts per log2 bucket at a resolution, with the
/// exact total, minimum and maximum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    resolution: Resolution,
    buckets: BTreeMap<u32, Bucket>,
    min_ns: u64,
    max_ns: u64,
}

impl Histogram {
    /// An empty histogram.
    pub fn new(resolution: Resolution) -> Histogram {
        Histogram {
            resolution,
            buckets: BTreeMap::new(),
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// Counts one operation of `ns` nanoseconds.
    pub fn add(&mut self, ns: u64) {
        let b = self.buckets.entry(self.resolution.bucket(ns)).or_default();
        b.count += 1;
        b.total_ns = b.total_ns.saturating_add(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Adds `count` operations summing `total_ns` to bucket `b` as read from a file, with the
    /// extremes known to lie in it.
    pub fn add_bucket(&mut self, b: u32, count: u64, total_ns: u64) {
        if count == 0 {
            return;
        }
        let e = self.buckets.entry(b).or_default();
        e.count += count;
        e.total_ns = e.total_ns.saturating_add(total_ns);
        self.min_ns = self.min_ns.min(self.resolution.lower_bound(b));
        self.max_ns = self
            .max_ns
            .max(self.resolution.upper_bound(b).saturating_sub(1));
    }

    /// Sets the exact extremes (a file records them beside the buckets).
    pub fn set_extremes(&mut self, min_ns: u64, max_ns: u64) {
        if self.count() > 0 {
            (self.min_ns, self.max_ns) = (min_ns, max_ns);
        }
    }

    /// Adds every operation of `other`, which must have the same resolution.
    ///
    /// Returns false (and adds nothing) if the resolutions differ.
    pub fn merge(&mut self, other: &Histogram) -> bool {
        if other.resolution != self.resolution {
            return false;
        }
        for (&b, o) in &other.buckets {
            let e = self.buckets.entry(b).or_default();
            e.count += o.count;
            e.total_ns = e.total_ns.saturating_add(o.total_ns);
        }
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        true
    }

    /// Its resolution.
    pub fn resolution(&self) -> Resolution {
        self.resolution
    }

    /// The non-empty buckets, in order.
    pub fn buckets(&self) -> impl Iterator<Item = (u32, Bucket)> + '_ {
        self.buckets.iter().map(|(&b, &v)| (b, v))
    }

    /// The calls in bucket `b`.
    pub fn count_in(&self, b: u32) -> u64 {
        self.bucket(b).count
    }

    /// Bucket `b` (empty if nothing fell in it).
    pub fn bucket(&self, b: u32) -> Bucket {
        self.buckets.get(&b).copied().unwrap_or_default()
    }

    /// Operations counted.
    pub fn count(&self) -> u64 {
        self.buckets.values().map(|b| b.count).sum()
    }

    /// Their latencies summed, in ns.
    pub fn total_ns(&self) -> u64 {
        self.buckets
            .values()
            .fold(0u64, |a, b| a.saturating_add(b.total_ns))
    }

    /// The shortest latency, if any operation was counted.
    pub fn min_ns(&self) -> Option<u64> {
        (self.count() > 0).then_some(self.min_ns)
    }

    /// The longest latency, if any operation was counted.
    pub fn max_ns(&self) -> Option<u64> {
        (self.count() > 0).then_some(self.max_ns)
    }

    /// The mean latency, if any operation was counted.
    pub fn mean_ns(&self) -> Option<u64> {
        let n = self.count();
        (n > 0).then(|| self.total_ns() / n)
    }

    /// The first and last non-empty buckets.
    pub fn span(&self) -> Option<(u32, u32)> {
        Some((
            *self.buckets.keys().next()?,
            *self.buckets.keys().next_back()?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_osprof_formula() {
        let r1 = Resolution::ONE;
        assert_eq!(r1.bucket(0), 0);
        assert_eq!(r1.bucket(1), 0);
        assert_eq!(r1.bucket(2), 1);
        assert_eq!(r1.bucket(1_048_575), 19);
        assert_eq!(r1.bucket(1_048_576), 20);
        assert_eq!(r1.bucket(u64::MAX), 63);
        let r2 = Resolution::new(2).expect("valid");
        // 2^(20.5) = 1482910.4: the second half of the 2^20 power.
        assert_eq!(r2.bucket(1_048_576), 40);
        assert_eq!(r2.bucket(1_482_910), 40);
        assert_eq!(r2.bucket(1_482_911), 41);
        assert_eq!(r2.lower_bound(41), 1_482_911);
        let r4 = Resolution::new(4).expect("valid");
        for ns in [3u64, 5, 7, 100, 1000, 123_456_789] {
            let b = r4.bucket(ns);
            assert!(r4.lower_bound(b) <= ns && ns < r4.upper_bound(b).max(ns + 1));
            // Against the formula in floating point, away from the edges.
            assert_eq!(b, (4.0 * (ns as f64).log2()).floor() as u32, "{ns}");
        }
        assert!(Resolution::new(0).is_none() && Resolution::new(65).is_none());
    }

    #[test]
    fn histograms_count_sum_and_merge() {
        let mut h = Histogram::new(Resolution::ONE);
        for ns in [1_100_000, 1_050_000, 1_200_000, 300] {
            h.add(ns);
        }
        assert_eq!(h.count(), 4);
        assert_eq!(h.count_in(20), 3);
        assert_eq!(h.count_in(8), 1);
        assert_eq!((h.min_ns(), h.max_ns()), (Some(300), Some(1_200_000)));
        assert_eq!(h.total_ns(), 3_350_300);
        let mut g = Histogram::new(Resolution::ONE);
        assert!(g.merge(&h) && g.merge(&h));
        assert_eq!(g.count(), 8);
        assert!(!g.merge(&Histogram::new(Resolution::new(2).expect("valid"))));
        assert_eq!(Histogram::new(Resolution::ONE).mean_ns(), None);
    }
}
