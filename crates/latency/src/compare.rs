//! Distances between two latency histograms of the same resolution: the Earth Mover's
//! Distance (OSprof's best-rated method, 2% misclassified against 5% for χ²), and χ² and
//! Kolmogorov–Smirnov beside it.

use crate::histogram::Histogram;

/// Both histograms' normalized counts over their common bucket range, or None if either is
/// empty or their resolutions differ.
fn aligned(a: &Histogram, b: &Histogram) -> Option<Vec<(f64, f64)>> {
    if a.resolution() != b.resolution() || a.count() == 0 || b.count() == 0 {
        return None;
    }
    let (alo, ahi) = a.span()?;
    let (blo, bhi) = b.span()?;
    let (na, nb) = (a.count() as f64, b.count() as f64);
    Some(
        (alo.min(blo)..=ahi.max(bhi))
            .map(|k| (a.count_in(k) as f64 / na, b.count_in(k) as f64 / nb))
            .collect(),
    )
}

/// The Earth Mover's Distance between the normalized histograms: the least work to move one
/// onto the other, a unit being one operation's share moved by one power of two. In one
/// dimension it is the area between the two cumulative distributions, Σ|CDFa − CDFb|, divided
/// by the resolution so that it reads in powers of two at every resolution.
///
/// Returns None if either is empty or their resolutions differ.
pub fn emd(a: &Histogram, b: &Histogram) -> Option<f64> {
    let v = aligned(a, b)?;
    let (mut ca, mut cb, mut sum) = (0.0, 0.0, 0.0);
    for (x, y) in v {
        ca += x;
        cb += y;
        sum += f64::abs(ca - cb);
    }
    Some(sum / f64::from(a.resolution().get()))
}

/// The two-sample χ² statistic over the common buckets, Σ (√(nb/na)·a_k − √(na/nb)·b_k)² /
/// (a_k + b_k) on raw counts: 0 for identical shapes, growing with the counts (it tests,
/// bin by bin, whether both came from one distribution).
///
/// Returns None if either is empty or their resolutions differ.
pub fn chi_squared(a: &Histogram, b: &Histogram) -> Option<f64> {
    if a.resolution() != b.resolution() || a.count() == 0 || b.count() == 0 {
        return None;
    }
    let (na, nb) = (a.count() as f64, b.count() as f64);
    let (ka, kb) = ((nb / na).sqrt(), (na / nb).sqrt());
    let (alo, ahi) = a.span()?;
    let (blo, bhi) = b.span()?;
    Some(
        (alo.min(blo)..=ahi.max(bhi))
            .map(|k| (a.count_in(k) as f64, b.count_in(k) as f64))
            .filter(|(x, y)| x + y > 0.0)
            .map(|(x, y)| (ka * x - kb * y).powi(2) / (x + y))
            .sum(),
    )
}

/// The Kolmogorov–Smirnov distance: the largest gap between the two cumulative distributions,
/// 0 to 1 (blind to where the mass moved, but sees a distribution that split in two while
/// its median held).
///
/// Returns None if either is empty or their resolutions differ.
pub fn ks(a: &Histogram, b: &Histogram) -> Option<f64> {
    let v = aligned(a, b)?;
    let (mut ca, mut cb, mut max) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in v {
        ca += x;
        cb += y;
        max = max.max((ca - cb).abs());
    }
    Some(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Resolution;

    fn hist(counts: &[(u32, u64)]) -> Histogram {
        let mut h = Histogram::new(Resolution::ONE);
        for &(b, n) in counts {
            h.add_bucket(b, n, 0);
        }
        h
    }

    #[test]
    fn distances_see_what_moved_and_how_far() {
        let a = hist(&[(10, 100)]);
        let near = hist(&[(11, 100)]);
        let far = hist(&[(15, 100)]);
        assert_eq!(emd(&a, &a), Some(0.0));
        assert_eq!(emd(&a, &near), Some(1.0));
        assert_eq!(emd(&a, &far), Some(5.0));
        // Bin-by-bin measures cannot tell near from far; EMD can.
        assert_eq!(ks(&a, &near), ks(&a, &far));
        assert_eq!(chi_squared(&a, &near), chi_squared(&a, &far));
        assert_eq!(ks(&a, &far), Some(1.0));
        assert_eq!(chi_squared(&a, &a), Some(0.0));
        // Scale does not matter to the normalized distances.
        assert_eq!(emd(&a, &hist(&[(10, 7)])), Some(0.0));
        let half = hist(&[(10, 50), (14, 50)]);
        assert_eq!(emd(&a, &half), Some(2.0));
        assert_eq!(ks(&a, &half), Some(0.5));
        assert_eq!(emd(&a, &Histogram::new(Resolution::ONE)), None);
    }
}
