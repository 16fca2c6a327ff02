//! OSprof's automatic selection (§3.2): sort operations by total latency, and from two sets
//! of profiles pick the pairs worth a person's time — prefilter by totals, compare peaks,
//! rate by EMD (χ² and KS beside it).

use std::collections::BTreeMap;

use crate::compare::{chi_squared, emd, ks};
use crate::histogram::Histogram;
use crate::peaks::{Peak, PeakOptions, peaks};

/// The operations of one profile set by total latency, largest first (the paper's first
/// step: these are where the time went). Ties keep their order.
pub fn by_total_latency<K>(profiles: &mut [(K, Histogram)]) {
    profiles.sort_by_key(|(_, h)| std::cmp::Reverse(h.total_ns()));
}

/// Thresholds of the selection.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct SelectOptions {
    /// Phase 1: a pair whose total latencies and operation counts both differ by less than
    /// this share of the larger is dropped as unchanged. Default is 0.05.
    pub min_change: f64,
    /// Phase 1: a pair whose total latency and operation count are both below this share of
    /// its set's (the larger set's) is dropped as too small to matter. Default is 0.01.
    pub min_share: f64,
    /// Phase 2: how peaks are found.
    pub peaks: PeakOptions,
}

impl Default for SelectOptions {
    fn default() -> Self {
        SelectOptions {
            min_change: 0.05,
            min_share: 0.01,
            peaks: PeakOptions::default(),
        }
    }
}

/// How the peaks of an operation changed between the two profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeakChange {
    /// A peak around this bucket exists only in the second profile.
    Added(u32),
    /// A peak around this bucket exists only in the first.
    Removed(u32),
    /// A peak's highest bucket moved.
    Moved {
        /// Its mode in the first profile.
        from: u32,
        /// Its mode in the second.
        to: u32,
    },
}

/// A pair of profiles of one operation that the selection kept, with its ratings.
#[derive(Debug, Clone, PartialEq)]
pub struct Selected<K> {
    /// The operation.
    pub key: K,
    /// Operations in the first and second profile.
    pub counts: (u64, u64),
    /// Total latency in ns in the first and second profile.
    pub totals: (u64, u64),
    /// Peaks of the first and second profile.
    pub peaks: (Vec<Peak>, Vec<Peak>),
    /// What happened to the peaks.
    pub changes: Vec<PeakChange>,
    /// Earth Mover's Distance in powers of two; None when the operation is in one profile
    /// only (the largest change of all).
    pub emd: Option<f64>,
    /// χ² statistic, when both have operations.
    pub chi_squared: Option<f64>,
    /// Kolmogorov–Smirnov distance, when both have operations.
    pub ks: Option<f64>,
}

fn changed(a: u64, b: u64, share: f64) -> bool {
    let (lo, hi) = (a.min(b), a.max(b));
    (hi - lo) as f64 > share * hi as f64
}

/// Matches the peaks of two profiles by nearest mode (each peak at most once, within two
/// powers of two) and lists what was added, removed or moved.
pub fn peak_changes(a: &[Peak], b: &[Peak], resolution: u32) -> Vec<PeakChange> {
    let reach = 2 * resolution;
    let mut used = vec![false; b.len()];
    let mut out = Vec::new();
    for p in a {
        let best = b
            .iter()
            .enumerate()
            .filter(|(j, q)| !used[*j] && q.mode.abs_diff(p.mode) <= reach)
            .min_by_key(|(_, q)| q.mode.abs_diff(p.mode));
        match best {
            Some((j, q)) => {
                used[j] = true;
                if q.mode != p.mode {
                    out.push(PeakChange::Moved {
                        from: p.mode,
                        to: q.mode,
                    });
                }
            }
            None => out.push(PeakChange::Removed(p.mode)),
        }
    }
    out.extend(
        b.iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|(q, _)| PeakChange::Added(q.mode)),
    );
    out
}

/// Compares two sets of profiles, keyed by operation, in OSprof's three phases, and returns
/// the pairs worth looking at, most different first.
///
/// 1. Prefilter: pairs with nearly equal totals (`opts.min_change`) or too small to matter
///    (`opts.min_share`) are dropped. An operation present on one side only is kept unless
///    small.
/// 2. Peaks: each side's peaks, and how they changed.
/// 3. Rating: by EMD, largest first (one-sided operations before all), then by the change
///    of total latency.
pub fn select<K: Ord + Clone>(
    a: &[(K, Histogram)],
    b: &[(K, Histogram)],
    opts: &SelectOptions,
) -> Vec<Selected<K>> {
    let mut pairs: BTreeMap<&K, (Option<&Histogram>, Option<&Histogram>)> = BTreeMap::new();
    for (k, h) in a {
        pairs.entry(k).or_default().0 = Some(h);
    }
    for (k, h) in b {
        pairs.entry(k).or_default().1 = Some(h);
    }
    let set_total = |s: &[(K, Histogram)]| -> (u64, u64) {
        s.iter()
            .fold((0, 0), |(t, c), (_, h)| (t + h.total_ns(), c + h.count()))
    };
    let (ta, ca) = set_total(a);
    let (tb, cb) = set_total(b);
    let (big_t, big_c) = (ta.max(tb) as f64, ca.max(cb) as f64);
    let empty = |h: Option<&Histogram>| h.map_or((0, 0), |h| (h.total_ns(), h.count()));
    let mut out = Vec::new();
    for (k, (ha, hb)) in pairs {
        let ((t1, c1), (t2, c2)) = (empty(ha), empty(hb));
        let small = (t1.max(t2) as f64) < opts.min_share * big_t
            && (c1.max(c2) as f64) < opts.min_share * big_c;
        let one_sided = c1 == 0 || c2 == 0;
        let unchanged =
            !one_sided && !changed(t1, t2, opts.min_change) && !changed(c1, c2, opts.min_change);
        if small || unchanged {
            continue;
        }
        let pa = ha.map_or_else(Vec::new, |h| peaks(h, &opts.peaks));
        let pb = hb.map_or_else(Vec::new, |h| peaks(h, &opts.peaks));
        let r = ha.or(hb).map_or(1, |h| h.resolution().get());
        let changes = peak_changes(&pa, &pb, r);
        let (emd, chi, ks) = match (ha, hb) {
            (Some(x), Some(y)) => (emd(x, y), chi_squared(x, y), ks(x, y)),
            _ => (None, None, None),
        };
        out.push(Selected {
            key: k.clone(),
            counts: (c1, c2),
            totals: (t1, t2),
            peaks: (pa, pb),
            changes,
            emd,
            chi_squared: chi,
            ks,
        });
    }
    out.sort_by(|x, y| {
        let e = |s: &Selected<K>| s.emd.unwrap_or(f64::INFINITY);
        e(y).total_cmp(&e(x)).then_with(|| {
            let d = |s: &Selected<K>| s.totals.0.abs_diff(s.totals.1);
            d(y).cmp(&d(x))
        })
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Resolution;

    fn hist(counts: &[(u32, u64)]) -> Histogram {
        let mut h = Histogram::new(Resolution::ONE);
        for &(b, n) in counts {
            h.add_bucket(b, n, n << b);
        }
        h
    }

    #[test]
    fn three_phases_keep_what_changed_most_different_first() {
        let a = vec![
            ("read", hist(&[(10, 1000)])),
            ("write", hist(&[(12, 500)])),
            ("clone", hist(&[(11, 100)])),
            ("getpid", hist(&[(5, 3)])),
        ];
        let b = vec![
            // Unchanged: dropped in phase 1.
            ("read", hist(&[(10, 1010)])),
            // Shifted by two powers of two.
            ("write", hist(&[(14, 500)])),
            // A second peak appeared: lock contention.
            ("clone", hist(&[(11, 100), (17, 40)])),
            // Too small to matter.
            ("getpid", hist(&[(6, 3)])),
            ("fsync", hist(&[(20, 10)])),
        ];
        let s = select(&a, &b, &SelectOptions::default());
        let keys: Vec<_> = s.iter().map(|s| s.key).collect();
        assert_eq!(keys, vec!["fsync", "write", "clone"]);
        assert_eq!(s[1].changes, vec![PeakChange::Moved { from: 12, to: 14 }]);
        assert_eq!(s[1].emd, Some(2.0));
        // Farther than two powers of two, a peak is another path: one gone, one new.
        let far = peak_changes(
            &s[1].peaks.0,
            &peaks(&hist(&[(15, 5)]), &PeakOptions::default()),
            1,
        );
        assert_eq!(far, vec![PeakChange::Removed(12), PeakChange::Added(15)]);
        assert_eq!(s[2].changes, vec![PeakChange::Added(17)]);
        assert!(s[2].ks.is_some_and(|k| (k - 40.0 / 140.0).abs() < 1e-9));
        let mut sorted = b.clone();
        by_total_latency(&mut sorted);
        assert_eq!(sorted[0].0, "fsync");
        assert_eq!(sorted[1].0, "write");
    }
}
