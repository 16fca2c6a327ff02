//! Exact inclusive times from sampled stacks, in place of gprof's propagation.
//!
//! gprof knows only each function's self time and how often each arc was taken. It gives
//! every caller a share of a callee's total time in proportion to the arc's count, which
//! assumes that every call of a function costs the same. When a function is cheap from one
//! caller and expensive from another (a `read` of a cached file and one that waits for the
//! disk), that assumption moves time to the wrong caller.
//!
//! With the samples' whole stacks, nothing needs assuming: a function's inclusive time is the
//! number of samples whose stack holds it, counted once per sample however often it recurses,
//! and an arc's share is the number of samples whose stack holds that caller directly above
//! that callee. [`apply_stacks`] puts those numbers into an [`Analysis`] so that the same
//! listings print them: self times stay the histogram's, children = inclusive − self, and the
//! call graph is sorted again by the new totals.

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::Analysis;

/// One distinct stack and how many samples had it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledStack {
    /// Addresses in the analysis's symbol table, innermost first: the sampled pc, then the
    /// return addresses of its callers.
    pub frames: Vec<u64>,
    /// Samples with exactly this stack.
    pub samples: u64,
}

/// Replaces the propagated children times of `analysis` by exact ones from `stacks`.
///
/// Every symbol node gets `prop_child = child_time = inclusive − self` (never below 0), cycle
/// headers likewise from the samples holding any member, and each arc `time` = samples with
/// the callee innermost directly below the caller and `child_time` = the rest of the samples
/// holding that edge. Frames outside every symbol are skipped. The call-graph order and the
/// flat profile's total columns are then recomputed.
pub fn apply_stacks(analysis: &mut Analysis, stacks: &[SampledStack]) {
    let table = &analysis.table;
    let graph = &mut analysis.graph;
    let mut inclusive: Vec<f64> = vec![0.0; graph.nodes.len()];
    let mut edge_total: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut edge_self: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for stack in stacks {
        let n = stack.samples as f64;
        let functions: Vec<Option<usize>> = stack.frames.iter().map(|&a| table.lookup(a)).collect();
        let mut seen = BTreeSet::new();
        for f in functions.iter().flatten() {
            if seen.insert(*f) {
                inclusive[*f] += n;
                if let Some(h) = graph.header_of(*f)
                    && seen.insert(h)
                {
                    inclusive[h] += n;
                }
            }
        }
        let mut edges = BTreeSet::new();
        for (i, pair) in functions.windows(2).enumerate() {
            if let [Some(callee), Some(caller)] = *pair
                && edges.insert((caller, callee))
            {
                *edge_total.entry((caller, callee)).or_default() += n;
                if i == 0 {
                    *edge_self.entry((caller, callee)).or_default() += n;
                }
            }
        }
    }
    for (i, node) in graph.nodes.iter_mut().enumerate() {
        let child = (inclusive[i] - node.time).max(0.0);
        node.child_time = child;
        node.prop_child = child * node.fract;
    }
    for arc in &mut graph.arcs {
        let key = (arc.parent, arc.child);
        let total = edge_total.get(&key).copied().unwrap_or(0.0);
        let own = edge_self.get(&key).copied().unwrap_or(0.0);
        arc.time = own;
        arc.child_time = total - own;
    }
    graph.sort_for_printing(table);
    analysis.flat = Analysis::flat_profile(
        &analysis.table,
        &analysis.times,
        &analysis.calls,
        &analysis.graph,
        &analysis.included,
        false,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{functions, spaced};

    use gmon_format::{AddressSize, Endian, Profile, ReadOptions, Sum};

    /// main → {cheap, costly} → leaf: leaf is called equally often from both, but all its
    /// time is spent when `costly` calls it.
    fn analysis() -> Analysis {
        let names = ["main", "cheap", "costly", "leaf", "end"];
        let table = functions(&spaced(&names, 0x100), 0x1500);
        let mut data = b"gmon\x01\0\0\0".to_vec();
        data.extend([0; 12]);
        // 10 samples in leaf (bin of 0x1300), 2 in cheap, 2 in costly.
        let mut bins = vec![0u16; 0x500 / 2];
        bins[0x300 / 2] = 10;
        bins[0x100 / 2] = 2;
        bins[0x200 / 2] = 2;
        data.push(0);
        data.extend(0x1000u64.to_le_bytes());
        data.extend(0x1500u64.to_le_bytes());
        data.extend((bins.len() as u32).to_le_bytes());
        data.extend(100u32.to_le_bytes());
        data.extend(b"seconds\0\0\0\0\0\0\0\0s");
        for b in bins {
            data.extend(b.to_le_bytes());
        }
        for (from, to, count) in [
            (0x1010, 0x1100, 5),
            (0x1020, 0x1200, 5),
            (0x1110, 0x1300, 5),
            (0x1210, 0x1300, 5),
        ] {
            data.push(1);
            data.extend(u64::to_le_bytes(from));
            data.extend(u64::to_le_bytes(to));
            data.extend(u32::to_le_bytes(count));
        }
        let mut sum = Sum::new();
        let read = ReadOptions::new(AddressSize::U64, Endian::Little);
        sum.add(&Profile::parse(&data, &read).unwrap()).unwrap();
        Analysis::new(table, &sum)
    }

    #[test]
    fn exact_times_follow_the_stacks_not_the_call_counts() {
        let mut a = analysis();
        let (cheap, costly, leaf) = (1, 2, 3);
        // gprof splits leaf's 10 samples evenly: 5 each.
        let arc = |a: &Analysis, p, c| {
            a.graph
                .arcs
                .iter()
                .find(|x| x.parent == p && x.child == c)
                .unwrap()
                .clone()
        };
        assert_eq!(arc(&a, cheap, leaf).time, 5.0);
        assert_eq!(a.graph.nodes[costly].prop_child, 5.0);
        let stacks = [
            SampledStack {
                frames: vec![0x1300, 0x1210, 0x1020],
                samples: 10,
            },
            SampledStack {
                frames: vec![0x1100, 0x1010],
                samples: 2,
            },
            SampledStack {
                frames: vec![0x1200, 0x1020],
                samples: 2,
            },
        ];
        apply_stacks(&mut a, &stacks);
        assert_eq!(arc(&a, cheap, leaf).time, 0.0);
        assert_eq!(arc(&a, costly, leaf).time, 10.0);
        assert_eq!(a.graph.nodes[costly].prop_child, 10.0);
        assert_eq!(a.graph.nodes[cheap].prop_child, 0.0);
        assert_eq!(a.graph.nodes[0].prop_child, 14.0);
        // The call graph is ordered by the new totals: main, costly, leaf, cheap.
        let order: Vec<usize> = a.graph.order.iter().copied().take(4).collect();
        assert_eq!(order, [0, costly, leaf, cheap]);
    }

    #[test]
    fn recursion_counts_once_per_sample() {
        let mut a = analysis();
        let stacks = [SampledStack {
            frames: vec![0x1300, 0x1310, 0x1310, 0x1210, 0x1020],
            samples: 4,
        }];
        apply_stacks(&mut a, &stacks);
        // leaf holds 10 histogram samples; its inclusive time from the stacks is 4 (< self),
        // so children clamp at 0 rather than going negative.
        assert_eq!(a.graph.nodes[3].prop_child, 0.0);
        assert_eq!(a.graph.nodes[2].child_time, 4.0 - 2.0);
    }
}
