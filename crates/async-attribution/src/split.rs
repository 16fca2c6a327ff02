//! The split rule: how the samples of a window that served several beneficiaries are divided.
//!
//! A window's samples are divided among the beneficiaries of the objects it served in
//! proportion to their weights — bytes for network receive (`netif_receive_skb`'s `len`) —
//! and **not** by when each object was processed inside the window. Time slicing per packet
//! is wrong: with GRO list receive the kernel emits every `netif_receive_skb` of a batch
//! before the IP and TCP work of any of them, and a packet's protocol work is spread over
//! the window in an order the tracepoints do not show. Bytes are what the work is
//! proportional to (copies, checksums, coalescing), and the weight a window gives each
//! consumer does not depend on the order of its events.
//!
//! Samples are whole (each keeps its stack), so a window of `n` samples with shares that are
//! not whole numbers is divided by carried credit: each beneficiary's credit grows by its
//! exact share `n × weight / total`, and each of the `n` samples goes, in time order, to the
//! window's beneficiary of highest credit (ties to the one listed first), whose credit then
//! drops by one. The credit a beneficiary did not use carries into its next window, so over
//! many windows each one's samples differ from its exact share by less than one window's
//! worth, and a beneficiary too small for a sample in any single window still gets its
//! share in total. The count moved is exactly the count held: conservation holds window by
//! window.

use std::collections::HashMap;
use std::hash::Hash;

/// Divides windows' samples among beneficiaries of type `B` by the rule above, carrying
/// credit from window to window.
#[derive(Debug, Clone)]
pub struct Splitter<B> {
    credit: HashMap<B, f64>,
}

impl<B> Default for Splitter<B> {
    fn default() -> Self {
        Splitter {
            credit: HashMap::new(),
        }
    }
}

impl<B: Copy + Eq + Hash> Splitter<B> {
    /// Divides `n` samples among `weights` (beneficiary, weight; a beneficiary may appear
    /// several times, its weights add): the beneficiary of each sample in turn. Weights of 0
    /// count as 1 (an object served is never worth nothing). Returns an empty vector when
    /// `weights` is empty.
    pub fn split(&mut self, n: usize, weights: &[(B, u64)]) -> Vec<B> {
        let mut merged: Vec<(B, u64)> = Vec::new();
        for &(b, w) in weights {
            match merged.iter_mut().find(|(m, _)| *m == b) {
                Some(m) => m.1 += w.max(1),
                None => merged.push((b, w.max(1))),
            }
        }
        if merged.is_empty() {
            return Vec::new();
        }
        let total: u64 = merged.iter().map(|&(_, w)| w).sum();
        for &(b, w) in &merged {
            *self.credit.entry(b).or_default() += n as f64 * w as f64 / total as f64;
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let mut best = merged[0].0;
            let mut best_credit = f64::NEG_INFINITY;
            for &(b, _) in &merged {
                let c = self.credit[&b];
                if c > best_credit {
                    best = b;
                    best_credit = c;
                }
            }
            *self.credit.get_mut(&best).expect("credited above") -= 1.0;
            out.push(best);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(v: &[u32], b: u32) -> usize {
        v.iter().filter(|&&x| x == b).count()
    }

    #[test]
    fn one_window_by_bytes() {
        let mut s = Splitter::default();
        let got = s.split(4, &[(1, 100), (2, 300)]);
        assert_eq!(got.len(), 4);
        assert_eq!((count(&got, 1), count(&got, 2)), (1, 3));
        assert!(s.split(3, &[]).is_empty());
    }

    #[test]
    fn small_shares_add_up_over_windows() {
        // A beneficiary with a tenth of each one-sample window gets every tenth.
        let mut s = Splitter::default();
        let mut got = Vec::new();
        for _ in 0..100 {
            got.extend(s.split(1, &[(1, 900), (2, 100)]));
        }
        assert_eq!((count(&got, 1), count(&got, 2)), (90, 10));
    }

    #[test]
    fn same_beneficiary_twice_adds_its_weights() {
        let mut s = Splitter::default();
        let got = s.split(4, &[(1, 100), (2, 100), (1, 200)]);
        assert_eq!((count(&got, 1), count(&got, 2)), (3, 1));
        // Zero weights count as one.
        let got = Splitter::default().split(2, &[(1, 0), (2, 0)]);
        assert_eq!((count(&got, 1), count(&got, 2)), (1, 1));
    }
}
