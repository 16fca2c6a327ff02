//! The order of a call-graph entry's lines: its parents and children (gprof's arc
//! comparator and insertion sort) and a cycle's members, with stable sorts that give the same
//! order in O(n log n) for long lists.

use crate::graph::{CallGraph, GraphArc};

/// Whether both ends of `arc` are in the same cycle; `cycle` holds each node's cycle number,
/// 0 outside cycles.
pub(crate) fn intra_cycle(cycle: &[u32], arc: &GraphArc) -> bool {
    let c = cycle[arc.parent];
    c != 0 && c == cycle[arc.child]
}

/// Ordering of two arcs inside an entry (gprof's arc comparator): self arcs, then arcs inside a
/// cycle by count, then the rest by propagated time and count.
fn arc_cmp(cycle: &[u32], a: &GraphArc, b: &GraphArc) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    if a.parent == a.child {
        return Less;
    }
    if b.parent == b.child {
        return Greater;
    }
    match (intra_cycle(cycle, a), intra_cycle(cycle, b)) {
        (true, true) => return a.count.cmp(&b.count),
        (true, false) => return Less,
        (false, true) => return Greater,
        _ => {}
    }
    let (ta, tb) = (a.time + a.child_time, b.time + b.child_time);
    if ta < tb {
        Less
    } else if ta > tb {
        Greater
    } else {
        a.count.cmp(&b.count)
    }
}

/// Lists at most this long are sorted by insertion, exactly as gprof does; longer ones by a
/// stable sort that gives the same order in O(n log n) (see [`sort_arcs`]).
const INSERTION_LIMIT: usize = 32;

/// gprof's insertion sort of an arc list into `sorted`; `descending` selects the children's
/// order.
///
/// gprof inserts each arc before the first one it is less than or equal to (greater than or
/// equal to, for children), so the result is ordered with ties in reverse list order. Unless a
/// time is NaN, [`arc_cmp`] is a total preorder (the only self arc of a list is its least
/// element), and a stable sort of the reversed list gives that same order without the
/// quadratic cost on functions with thousands of callers.
pub(crate) fn sort_arcs(
    g: &CallGraph,
    cycle: &[u32],
    list: &[usize],
    descending: bool,
    sorted: &mut Vec<usize>,
) {
    sorted.clear();
    let total = |a: usize| g.arcs[a].time + g.arcs[a].child_time;
    if list.len() > INSERTION_LIMIT && !list.iter().any(|&a| total(a).is_nan()) {
        sorted.extend(list.iter().rev());
        sorted.sort_by(|&a, &b| match (a == b, descending) {
            (true, _) => std::cmp::Ordering::Equal,
            (false, true) => arc_cmp(cycle, &g.arcs[b], &g.arcs[a]),
            (false, false) => arc_cmp(cycle, &g.arcs[a], &g.arcs[b]),
        });
        return;
    }
    insert_arcs(g, cycle, list, descending, sorted);
}

/// gprof's own insertion sort, for short lists and lists with NaN times.
fn insert_arcs(
    g: &CallGraph,
    cycle: &[u32],
    list: &[usize],
    descending: bool,
    sorted: &mut Vec<usize>,
) {
    for &a in list {
        let pos = sorted
            .iter()
            .position(|&e| {
                let o = arc_cmp(cycle, &g.arcs[a], &g.arcs[e]);
                if descending { o.is_ge() } else { o.is_le() }
            })
            .unwrap_or(sorted.len());
        sorted.insert(pos, a);
    }
}

/// gprof's order of a cycle's members: most time first, then most calls, ties in chain order.
///
/// gprof inserts each member before the first one it beats, which is a stable descending
/// sort; long lists without NaN times use the library's stable sort instead.
pub(crate) fn sort_members(g: &CallGraph, members: &[usize], sorted: &mut Vec<usize>) {
    let key = |x: usize| {
        let y = &g.nodes[x];
        (
            y.prop_self + y.prop_child,
            y.ncalls.wrapping_add(y.self_calls),
        )
    };
    sorted.clear();
    if members.len() > INSERTION_LIMIT && !members.iter().any(|&m| key(m).0.is_nan()) {
        sorted.extend_from_slice(members);
        sorted.sort_by(|&a, &b| {
            let ((ta, ca), (tb, cb)) = (key(a), key(b));
            tb.partial_cmp(&ta)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(cb.cmp(&ca))
        });
        return;
    }
    insert_members(g, members, sorted);
}

/// gprof's own insertion of cycle members, for short lists and lists with NaN times.
fn insert_members(g: &CallGraph, members: &[usize], sorted: &mut Vec<usize>) {
    let key = |x: usize| {
        let y = &g.nodes[x];
        (
            y.prop_self + y.prop_child,
            y.ncalls.wrapping_add(y.self_calls),
        )
    };
    for &m in members {
        let (tm, cm) = key(m);
        let pos = sorted
            .iter()
            .position(|&e| {
                let (te, ce) = key(e);
                tm > te || (tm == te && cm > ce)
            })
            .unwrap_or(sorted.len());
        sorted.insert(pos, m);
    }
}

#[cfg(test)]
mod tests {
    use gmon_format::Arc;

    use super::*;

    /// Long lists take the stable sort; it must give exactly the order of gprof's insertion
    /// sort, whatever the ties: arcs inside and outside cycles, a self arc, equal times with
    /// equal and different counts, zero times.
    #[test]
    fn long_lists_sort_as_gprofs_insertion() {
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut long_cycles = 0;
        for case in 0..40 {
            let n = 40 + next(80) as usize;
            let table = crate::test_util::numbered(n);
            let at = |i: usize| 0x1000 + 0x100 * i as u64;
            // Node 0 calls everyone, everyone calls node 1, node 1 calls half of them back
            // (one big cycle), and random edges add more.
            let mut arcs = Vec::new();
            for i in 0..n {
                arcs.push(Arc {
                    from_pc: at(0) + 4,
                    self_pc: at(i),
                    count: 1 + next(3),
                });
                arcs.push(Arc {
                    from_pc: at(i) + 4,
                    self_pc: at(1),
                    count: 1 + next(3),
                });
                if next(2) == 0 {
                    // Back to a caller of node 1: node 1 and i form a cycle.
                    arcs.push(Arc {
                        from_pc: at(1) + 12,
                        self_pc: at(i),
                        count: 1 + next(2),
                    });
                }
                if next(4) == 0 {
                    arcs.push(Arc {
                        from_pc: at(i) + 8,
                        self_pc: at(next(n as u64) as usize),
                        count: next(3),
                    });
                }
            }
            let time = (0..n)
                .map(|_| [0.0, 1.0, 2.0, 0.5][next(4) as usize])
                .collect();
            let times = crate::test_util::times(time, 100.0, 100);
            let g = CallGraph::build(&table, &arcs, &times);
            let cycle: Vec<u32> = g.nodes.iter().map(|n| n.cycle as u32).collect();
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            for node in 0..g.nodes.len() {
                for (list, descending) in [
                    (&g.nodes[node].parents, false),
                    (&g.nodes[node].children, true),
                ] {
                    sort_arcs(&g, &cycle, list, descending, &mut fast);
                    slow.clear();
                    insert_arcs(&g, &cycle, list, descending, &mut slow);
                    assert_eq!(
                        fast, slow,
                        "case {case}, node {node}, descending {descending}"
                    );
                }
                sort_members(&g, &g.nodes[node].members, &mut fast);
                slow.clear();
                insert_members(&g, &g.nodes[node].members, &mut slow);
                assert_eq!(fast, slow, "case {case}, cycle node {node}");
            }
            assert!(g.nodes[1].parents.len() > INSERTION_LIMIT);
            long_cycles += g.nodes[g.symbol_count..]
                .iter()
                .filter(|c| c.members.len() > INSERTION_LIMIT)
                .count();
        }
        assert!(long_cycles > 10, "only {long_cycles} long cycles");
    }
}
