//! gprof's suggested function order (`-r`, `--function-ordering`).
//!
//! Reconstructed from experiments with gprof 2.40 on generated call graphs (no documentation
//! describes the algorithm): called functions are chained along their hottest arcs, then the
//! called functions no arc placed follow, then every uncalled symbol.

use crate::graph::CallGraph;
use crate::sort::glibc_qsort;

/// From this many called functions on, gprof first emits its "hub" functions and treats the
/// hottest 90 % of the arcs differently; that part is not reproduced.
pub const ORDERING_HUB_THRESHOLD: usize = 80;

/// The symbols in gprof's suggested order, or `None` when the graph has
/// [`ORDERING_HUB_THRESHOLD`] or more called functions (not reproduced yet).
///
/// A function is "called" when its calls from others (`ncalls`, recursion apart) are not 0.
/// Arcs (self arcs left out) are sorted by count, highest first, ties in creation order. The
/// arcs up to 99 % of the total count form the first pass, the rest the second. In each pass,
/// an arc between two called functions that are both unplaced starts a chain (caller, callee);
/// an arc from an unplaced one to one placed in this pass joins the chain at the end nearer the
/// placed one (the head when equally near and the newcomer is the caller, else the tail); arcs
/// touching a function placed in an earlier pass are ignored. Each pass's chains are listed in
/// creation order, then the called functions left unplaced and then all uncalled symbols, both
/// in address order.
pub fn function_ordering(graph: &CallGraph) -> Option<Vec<usize>> {
    let n = graph.symbol_count;
    let used: Vec<bool> = graph.nodes[..n].iter().map(|s| s.ncalls != 0).collect();
    if used.iter().filter(|&&u| u).count() >= ORDERING_HUB_THRESHOLD {
        return None;
    }
    let mut arcs: Vec<usize> = (0..graph.arcs.len())
        .filter(|&a| graph.arcs[a].parent != graph.arcs[a].child)
        .collect();
    glibc_qsort(&mut arcs, |&a, &b| {
        graph.arcs[b].count.cmp(&graph.arcs[a].count)
    });
    let total: u64 = arcs
        .iter()
        .fold(0u64, |t, &a| t.wrapping_add(graph.arcs[a].count));
    let limit = 0.99 * total as f64;
    let mut cumulative = 0u64;
    let split = arcs
        .iter()
        .position(|&a| {
            cumulative = cumulative.wrapping_add(graph.arcs[a].count);
            cumulative as f64 > limit
        })
        .unwrap_or(arcs.len());

    let mut order: Vec<usize> = Vec::with_capacity(n);
    // The pass in which a symbol was placed, if any.
    let mut placed: Vec<Option<u8>> = vec![None; n];
    for (pass, list) in [(0u8, &arcs[..split]), (1u8, &arcs[split..])] {
        let mut chains: Vec<Vec<usize>> = Vec::new();
        let mut chain_of: Vec<usize> = vec![usize::MAX; n];
        for &a in list {
            let (p, c) = (graph.arcs[a].parent, graph.arcs[a].child);
            if p >= n || c >= n || !used[p] || !used[c] {
                continue;
            }
            let earlier = |s: usize| placed[s].is_some_and(|x| x != pass);
            if earlier(p) || earlier(c) {
                continue;
            }
            match (placed[p], placed[c]) {
                (Some(_), Some(_)) => continue,
                (None, None) => {
                    chain_of[p] = chains.len();
                    chain_of[c] = chains.len();
                    chains.push(vec![p, c]);
                    placed[p] = Some(pass);
                    placed[c] = Some(pass);
                }
                (Some(_), None) | (None, Some(_)) => {
                    let (old, new) = if placed[p].is_some() { (p, c) } else { (c, p) };
                    let chain = &mut chains[chain_of[old]];
                    let k = chain.iter().position(|&s| s == old).unwrap_or(0);
                    let (head, tail) = (k, chain.len() - 1 - k);
                    if head < tail || (head == tail && new == p) {
                        chain.insert(0, new);
                    } else {
                        chain.push(new);
                    }
                    chain_of[new] = chain_of[old];
                    placed[new] = Some(pass);
                }
            }
        }
        order.extend(chains.into_iter().flatten());
    }
    order.extend((0..n).filter(|&s| used[s] && placed[s].is_none()));
    order.extend((0..n).filter(|&s| !used[s]));
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::{RawSymbol, SymbolTable};
    use gmon_format::{AddressSize, Arc, Endian};

    /// `f0`..`f{n-1}` 16 bytes apart from 0x1000, then `end`; `start` (0xff0) calls every
    /// function once so that all are called, plus the arcs given as (from, to, count).
    fn order(n: usize, arcs: &[(usize, usize, u64)]) -> Vec<String> {
        let mut raw: Vec<RawSymbol> = (0..n)
            .map(|i| RawSymbol {
                name: format!("f{i}").into_bytes(),
                address: 0x1000 + 16 * i as u64,
                is_function: true,
                is_static: false,
            })
            .collect();
        raw.push(RawSymbol {
            name: b"start".to_vec(),
            address: 0xff0,
            is_function: true,
            is_static: false,
        });
        let t = SymbolTable::from_symbols(raw, 0x2000, AddressSize::U64, Endian::Little);
        let at = |i: usize| 0x1000 + 16 * i as u64;
        let mut list: Vec<Arc> = (0..n)
            .map(|i| Arc {
                from_pc: 0xff4,
                self_pc: at(i),
                count: 1,
            })
            .collect();
        list.extend(arcs.iter().map(|&(f, c, count)| Arc {
            from_pc: at(f) + 4,
            self_pc: at(c),
            count,
        }));
        let times = crate::test_util::times(vec![0.0; t.len()], 0.0, 100);
        let g = CallGraph::build(&t, &list, &times);
        function_ordering(&g)
            .expect("few functions")
            .into_iter()
            .map(|s| t.symbols()[s].name_lossy().into_owned())
            .collect()
    }

    #[test]
    fn chains_grow_at_the_nearer_end() {
        // [5 2 7 1] from the hottest arcs; 6 joins via 2 (nearer the head), 3 via 7 (tail).
        let got = order(
            9,
            &[(5, 2, 100), (2, 7, 90), (7, 1, 90), (2, 6, 80), (7, 3, 80)],
        );
        assert_eq!(
            got[..7],
            ["f6", "f5", "f2", "f7", "f1", "f3", "f0"].map(String::from)
        );
        assert_eq!(got.last().map(String::as_str), Some("start"));
    }

    #[test]
    fn ties_put_callers_at_the_head_and_callees_at_the_tail() {
        let got = order(9, &[(5, 2, 100), (2, 7, 90), (6, 2, 80)]);
        assert_eq!(got[..4], ["f6", "f5", "f2", "f7"].map(String::from));
        let got = order(9, &[(5, 2, 100), (2, 7, 90), (2, 6, 80)]);
        assert_eq!(got[..4], ["f5", "f2", "f7", "f6"].map(String::from));
    }

    #[test]
    fn the_second_pass_leaves_first_pass_chains_alone() {
        // With 60 calls, f5 -> f3 falls past 99 % of the total: in the second pass it cannot
        // join f5, placed in the first, so f3 stays unplaced. With 40 calls both arcs fall in
        // the second pass and form one chain.
        let got = order(8, &[(6, 5, 5000), (5, 3, 60)]);
        assert_eq!(got[..3], ["f6", "f5", "f0"].map(String::from));
        let got = order(8, &[(6, 5, 5000), (5, 3, 40)]);
        assert_eq!(got[..3], ["f6", "f5", "f3"].map(String::from));
    }
}
