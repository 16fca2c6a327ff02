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
