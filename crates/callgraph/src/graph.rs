//! The call graph: arc ingestion, cycle detection, and time propagation as gprof does them.
//!
//! Everything here follows gprof's observable order of operations, because printed digits and
//! the order of entries depend on it (see the shared behaviour notes, §4).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use gmon_format::Arc;

use crate::histogram::HistogramTimes;
use crate::sort::glibc_qsort_fast;
use crate::symbols::SymbolTable;
use crate::symspec::{Selection, Symspecs};

mod cycles;
mod propagate;

/// One caller → callee edge, with the time it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphArc {
    /// Calling node (an index into [`CallGraph::nodes`]; always a symbol).
    pub parent: usize,
    /// Called node (always a symbol).
    pub child: usize,
    /// Number of calls, summed over all input files.
    pub count: u64,
    /// Callee self time (ticks) propagated along this arc, already scaled by the caller's
    /// fraction.
    pub time: f64,
    /// Callee descendants' time (ticks) propagated along this arc, scaled likewise.
    pub child_time: f64,
}

/// A function or a cycle as a whole ("cycle header").
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Index in the symbol table, or `None` for a cycle header.
    pub symbol: Option<usize>,
    /// Calls from other functions (for a cycle: from outside the cycle).
    pub ncalls: u64,
    /// Calls to itself (for a cycle: calls between different members).
    pub self_calls: u64,
    /// Self time in ticks.
    pub time: f64,
    /// Descendants' time in ticks, unscaled (what the flat profile's "total" column uses).
    pub child_time: f64,
    /// Self time as printed in the call graph (ticks).
    pub prop_self: f64,
    /// Children time as printed in the call graph (ticks).
    pub prop_child: f64,
    /// Share of the function's time that propagates to its callers.
    pub fract: f64,
    /// Whether the call graph prints an entry for it.
    pub print_flag: bool,
    /// DFS number: callees get smaller numbers than callers; cycle members share one.
    pub top_order: u64,
    /// Cycle number (1-based), 0 when not in a cycle.
    pub cycle: usize,
    /// Arcs into this node (indices into [`CallGraph::arcs`]), newest first as gprof keeps them.
    pub parents: Vec<usize>,
    /// Arcs out of this node, newest first.
    pub children: Vec<usize>,
    /// For a cycle header: its members in gprof's chain order (DFS head first).
    pub members: Vec<usize>,
    /// Position in the printed order, 1-based (gprof's `[index]`).
    pub index: usize,
}

impl Node {
    fn new(symbol: Option<usize>) -> Self {
        Node {
            symbol,
            ncalls: 0,
            self_calls: 0,
            time: 0.0,
            child_time: 0.0,
            prop_self: 0.0,
            prop_child: 0.0,
            fract: 0.0,
            print_flag: false,
            top_order: 0,
            cycle: 0,
            parents: Vec::new(),
            children: Vec::new(),
            members: Vec::new(),
            index: 0,
        }
    }
}

/// gprof's call graph after assembly and time propagation, not yet printed.
///
/// Nodes `0..symbol_count` are the table's symbols in address order; cycle headers follow, in
/// cycle-number order.
#[derive(Debug, Clone, PartialEq)]
pub struct CallGraph {
    /// Symbols, then cycle headers.
    pub nodes: Vec<Node>,
    /// All arcs, in creation order (first appearance in the input).
    pub arcs: Vec<GraphArc>,
    /// Number of symbol nodes (the rest are cycle headers).
    pub symbol_count: usize,
    /// Node indices in printed order (sorted by propagated time).
    pub order: Vec<usize>,
    /// Sum of all printed self times (ticks), the base of the "% time" column.
    pub print_time: f64,
}

pub(crate) const UNNUMBERED: u64 = 0;
pub(crate) const BUSY: u64 = u64::MAX;

impl CallGraph {
    /// Builds the call graph from the summed arcs and the histogram's self times.
    ///
    /// Arc ends are resolved like [`crate::CallCounts::from_arcs`]; arcs with an end outside
    /// every symbol are dropped. The mcount helpers are excluded from printing and from time
    /// propagation, as gprof does by default.
    pub fn build(table: &SymbolTable, arcs: &[Arc], times: &HistogramTimes) -> Self {
        Self::build_selected(
            table,
            arcs,
            times,
            &Selection::new(table, &Symspecs::default()),
        )
    }

    /// [`CallGraph::build`] with the call-graph and time tables of `selection` (`-q`, `-Q`,
    /// `-n`, `-N`, …) deciding which entries print and which propagate time. The arcs must
    /// already be filtered by the selection's arc specs (see [`Selection::keeps_arc`]).
    pub fn build_selected(
        table: &SymbolTable,
        arcs: &[Arc],
        times: &HistogramTimes,
        selection: &Selection,
    ) -> Self {
        Self::build_with_static(table, arcs, &[], times, selection)
    }

    /// [`CallGraph::build_selected`] with the (caller, callee) symbol pairs of a static call
    /// graph (`-c`) added as count-0 arcs after the arcs read. The callee is taken as it is,
    /// even a label, as gprof adds these arcs without moving them to a function.
    pub fn build_with_static(
        table: &SymbolTable,
        arcs: &[Arc],
        static_pairs: &[(usize, usize)],
        times: &HistogramTimes,
        selection: &Selection,
    ) -> Self {
        let n = table.len();
        let mut nodes: Vec<Node> = (0..n).map(|i| Node::new(Some(i))).collect();
        for (i, node) in nodes.iter_mut().enumerate() {
            node.time = times.time.get(i).copied().unwrap_or(0.0);
        }
        let mut graph_arcs: Vec<GraphArc> = Vec::with_capacity(arcs.len());
        // Merging repeated caller/callee pairs by a map keeps big profiles linear. The key packs
        // both symbol indices into one word (tables hold fewer than 2^32 symbols).
        let mut by_pair: HashMap<u64, usize, PairHash> =
            HashMap::with_capacity_and_hasher(arcs.len(), PairHash::default());
        // Summed apart from the nodes, which are too big to touch once per arc.
        let mut ncalls = vec![0u64; n];
        for arc in arcs {
            let Some(parent) = table.lookup(arc.from_pc) else {
                continue;
            };
            let Some(child) = table.lookup_callee(arc.self_pc) else {
                continue;
            };
            ncalls[child] = ncalls[child].wrapping_add(arc.count);
            let key = ((parent as u64) << 32) ^ child as u64;
            let id = *by_pair.entry(key).or_insert(graph_arcs.len());
            if id < graph_arcs.len() {
                graph_arcs[id].count = graph_arcs[id].count.wrapping_add(arc.count);
            } else {
                graph_arcs.push(GraphArc {
                    parent,
                    child,
                    count: arc.count,
                    time: 0.0,
                    child_time: 0.0,
                });
            }
        }
        for &(parent, child) in static_pairs {
            let key = ((parent as u64) << 32) ^ child as u64;
            if parent >= n || child >= n || by_pair.contains_key(&key) {
                continue;
            }
            by_pair.insert(key, graph_arcs.len());
            graph_arcs.push(GraphArc {
                parent,
                child,
                count: 0,
                time: 0.0,
                child_time: 0.0,
            });
        }
        drop(by_pair);
        for (node, c) in nodes.iter_mut().zip(ncalls) {
            node.ncalls = c;
        }
        graph_arcs.shrink_to_fit();
        // gprof prepends each new arc to both lists, so they hold the newest first: walking
        // the arcs backwards fills them in that order, each list allocated once at its size.
        let mut out_degree = vec![0usize; n];
        let mut in_degree = vec![0usize; n];
        for arc in &graph_arcs {
            out_degree[arc.parent] += 1;
            in_degree[arc.child] += 1;
        }
        for (i, node) in nodes.iter_mut().enumerate() {
            node.children = Vec::with_capacity(out_degree[i]);
            node.parents = Vec::with_capacity(in_degree[i]);
        }
        drop((out_degree, in_degree));
        for (id, arc) in graph_arcs.iter().enumerate().rev() {
            nodes[arc.parent].children.push(id);
            nodes[arc.child].parents.push(id);
        }
        // A self arc's calls are recursion, not calls from outside: gprof shows them as `+N`.
        for (i, node) in nodes.iter_mut().enumerate() {
            let own = node
                .children
                .iter()
                .find(|&&a| graph_arcs[a].child == i)
                .map(|&a| graph_arcs[a].count);
            if let Some(c) = own {
                node.ncalls = node.ncalls.wrapping_sub(c);
                node.self_calls = c;
            }
        }
        let mut graph = CallGraph {
            nodes,
            arcs: graph_arcs,
            symbol_count: n,
            order: Vec::new(),
            print_time: 0.0,
        };
        let (head, next) = graph.number_depth_first();
        graph.number_cycles(&head, &next);
        let top = graph.topological_order();
        graph.propagate_flags(&top, selection);
        graph.cycle_times();
        graph.propagate_time(&top);
        graph.sort_for_printing(table);
        graph
    }

    /// Symbols by ascending DFS number, ties in symbol order: what gprof's merge sort on the
    /// DFS numbers gives, by counting, as the numbers run from 1 to at most the symbol count.
    fn topological_order(&self) -> Vec<usize> {
        let n = self.symbol_count;
        let key = |i: usize| {
            let t = self.nodes[i].top_order;
            usize::try_from(t).ok().filter(|&t| t <= n)
        };
        if (0..n).any(|i| key(i).is_none()) {
            let mut top: Vec<usize> = (0..n).collect();
            top.sort_by_key(|&i| self.nodes[i].top_order);
            return top;
        }
        let mut start = vec![0usize; n + 2];
        for i in 0..n {
            start[key(i).unwrap_or(0) + 1] += 1;
        }
        for k in 1..start.len() {
            start[k] += start[k - 1];
        }
        let mut top = vec![0; n];
        for i in 0..n {
            let k = key(i).unwrap_or(0);
            top[start[k]] = i;
            start[k] += 1;
        }
        top
    }

    /// The cycle-header node of symbol `s`, if it is in a cycle.
    pub fn header_of(&self, s: usize) -> Option<usize> {
        let c = self.nodes.get(s)?.cycle;
        (c != 0 && s < self.symbol_count).then(|| self.symbol_count + c - 1)
    }

    pub(crate) fn sort_for_printing(&mut self, table: &SymbolTable) {
        let symbols = table.symbols();
        // The keys sit side by side, so the sort does not chase 176-byte nodes.
        let mut keys: Vec<PrintKey<'_>> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let name = n.symbol.map_or(&[][..], |s| &symbols[s].name[..]);
                PrintKey {
                    total: n.prop_self + n.prop_child,
                    header: n.symbol.is_none(),
                    underscore: name.first() == Some(&b'_'),
                    ncalls: n.ncalls,
                    name,
                    node: i,
                }
            })
            .collect();
        // Without NaN times the comparator is consistent, and any stable sort gives glibc's
        // order.
        let consistent = !keys.iter().any(|k| k.total.is_nan());
        glibc_qsort_fast(&mut keys, consistent, print_order);
        let order: Vec<usize> = keys.iter().map(|k| k.node).collect();
        drop(keys);
        for (i, &node) in order.iter().enumerate() {
            self.nodes[node].index = i + 1;
        }
        self.order = order;
    }

    /// Per-symbol child time in ticks, as [`crate::FlatProfile::new`] takes it.
    pub fn child_times(&self) -> Vec<f64> {
        self.nodes[..self.symbol_count]
            .iter()
            .map(|n| n.child_time)
            .collect()
    }

    /// Whether the input had any arcs that resolved to symbols.
    pub fn has_arcs(&self) -> bool {
        !self.arcs.is_empty()
    }
}

/// What the printed order of the call graph compares, per node.
#[derive(Debug, Clone, Copy)]
struct PrintKey<'a> {
    total: f64,
    header: bool,
    underscore: bool,
    ncalls: u64,
    name: &'a [u8],
    node: usize,
}

/// gprof's order of call-graph entries: most propagated time first; on a tie cycle headers
/// before functions, names without a leading underscore before those with one, then most
/// calls, then by name.
///
/// gprof's comparator calls the left one of two tied headers the smaller, whichever it is;
/// its merge sort only asks whether the left element is less or equal, so that is the same
/// as calling them equal, which keeps this comparator consistent.
fn print_order(a: &PrintKey<'_>, b: &PrintKey<'_>) -> Ordering {
    if a.total > b.total {
        return Ordering::Less;
    }
    if a.total < b.total {
        return Ordering::Greater;
    }
    match (a.header, b.header) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        (false, false) => {}
    }
    if a.underscore != b.underscore {
        return if a.underscore {
            Ordering::Greater
        } else {
            Ordering::Less
        };
    }
    b.ncalls.cmp(&a.ncalls).then_with(|| a.name.cmp(b.name))
}

/// A multiplicative hash for the (caller, callee) map: the keys are small indices, and the
/// default SipHash costs more than the rest of arc ingestion.
type PairHash = BuildHasherDefault<PairHasher>;

#[derive(Debug, Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{functions, spaced};

    /// Functions 0x100 bytes apart starting at 0x1000, in the order given.
    fn table(names: &[&str]) -> SymbolTable {
        let end = 0x1000 + 0x100 * names.len() as u64;
        functions(&spaced(names, 0x100), end)
    }

    fn times(ticks: &[f64]) -> HistogramTimes {
        crate::test_util::times(ticks.to_vec(), ticks.iter().sum(), 100)
    }

    /// Arcs between symbol positions, as a gmon file would record them: from inside the
    /// caller to the callee's entry.
    fn arcs(list: &[(usize, usize, u64)]) -> Vec<Arc> {
        list.iter()
            .map(|&(from, to, count)| Arc {
                from_pc: 0x1000 + 0x100 * from as u64 + 0x10,
                self_pc: 0x1000 + 0x100 * to as u64,
                count,
            })
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn arc_between(g: &CallGraph, parent: usize, child: usize) -> &GraphArc {
        g.arcs
            .iter()
            .find(|a| a.parent == parent && a.child == child)
            .expect("arc exists")
    }

    /// McKusick's "Using gprof to Tune the 4.2BSD Kernel", figure 1: EXAMPLE called 4 times
    /// by CALLER1 and 6 by CALLER2, 4 times by itself, calling SUB1 (a member of cycle 1, 40
    /// outside calls) 20 times, SUB2 (5 calls) once and SUB3 never.
    #[test]
    fn mckusick_example_entry() {
        const CALLER1: usize = 0;
        const CALLER2: usize = 1;
        const EXAMPLE: usize = 2;
        const SUB1: usize = 3;
        const CYC2: usize = 4;
        const SUB2: usize = 5;
        const SUB3: usize = 6;
        const LEAF1: usize = 7;
        const LEAF2: usize = 8;
        const OTHER: usize = 9;
        let t = table(&[
            "CALLER1", "CALLER2", "EXAMPLE", "SUB1", "CYC2", "SUB2", "SUB3", "LEAF1", "LEAF2",
            "OTHER", "zend",
        ]);
        // Ticks at 100 Hz: EXAMPLE 0.50 s, the cycle 3.00 s (SUB1 2.00 + CYC2 1.00) with 2.00 s
        // of descendants (LEAF1), SUB2 nothing of its own but 2.50 s in LEAF2.
        let h = times(&[
            0.0, 0.0, 50.0, 200.0, 100.0, 0.0, 0.0, 200.0, 250.0, 0.0, 0.0,
        ]);
        let a = arcs(&[
            (CALLER1, EXAMPLE, 4),
            (CALLER2, EXAMPLE, 6),
            (EXAMPLE, EXAMPLE, 4),
            (EXAMPLE, SUB1, 20),
            (EXAMPLE, SUB2, 1),
            (EXAMPLE, SUB3, 0),
            (SUB1, CYC2, 3),
            (CYC2, SUB1, 2),
            (CYC2, LEAF1, 1),
            (SUB2, LEAF2, 1),
            (OTHER, SUB1, 20),
            (OTHER, SUB2, 4),
            (OTHER, SUB3, 5),
        ]);
        let g = CallGraph::build(&t, &a, &h);

        // "10+4": outside calls and self-recursive calls are kept apart.
        assert_eq!(
            (g.nodes[EXAMPLE].ncalls, g.nodes[EXAMPLE].self_calls),
            (10, 4)
        );
        // SUB1 and CYC2 form cycle 1, entered 40 times from outside, 5 calls inside.
        let header = g.header_of(SUB1).expect("SUB1 is in a cycle");
        assert_eq!(g.header_of(CYC2), Some(header));
        assert_eq!(g.nodes[header].cycle, 1);
        assert_eq!(g.nodes[header].members, [SUB1, CYC2]);
        assert_eq!(
            (g.nodes[header].ncalls, g.nodes[header].self_calls),
            (40, 5)
        );

        // EXAMPLE [2]   0.50 self, 3.00 descendants.
        let e = &g.nodes[EXAMPLE];
        assert!(
            close(e.prop_self, 50.0) && close(e.prop_child, 300.0),
            "{e:?}"
        );
        // Parents: 0.20 1.20 4/10 CALLER1, 0.30 1.80 6/10 CALLER2.
        let c1 = arc_between(&g, CALLER1, EXAMPLE);
        assert!(
            close(c1.time, 20.0) && close(c1.child_time, 120.0),
            "{c1:?}"
        );
        let c2 = arc_between(&g, CALLER2, EXAMPLE);
        assert!(
            close(c2.time, 30.0) && close(c2.child_time, 180.0),
            "{c2:?}"
        );
        // Children: 1.50 1.00 20/40 SUB1 (half the cycle), 0.00 0.50 1/5 SUB2, 0.00 0.00 0/5.
        let s1 = arc_between(&g, EXAMPLE, SUB1);
        assert!(
            close(s1.time, 150.0) && close(s1.child_time, 100.0),
            "{s1:?}"
        );
        let s2 = arc_between(&g, EXAMPLE, SUB2);
        assert!(close(s2.time, 0.0) && close(s2.child_time, 50.0), "{s2:?}");
        let s3 = arc_between(&g, EXAMPLE, SUB3);
        assert_eq!((s3.count, s3.time, s3.child_time), (0, 0.0, 0.0));
        assert_eq!(g.nodes[SUB3].ncalls, 5);
        // Recursion never moves time.
        let own = arc_between(&g, EXAMPLE, EXAMPLE);
        assert_eq!((own.count, own.time, own.child_time), (4, 0.0, 0.0));
        // The flat profile's "total" for EXAMPLE uses the unscaled child time.
        assert!(close(g.child_times()[EXAMPLE], 300.0));
    }

    /// Spec §4.11 (`c1.out`): cycle membership order, header counts and the printed order.
    #[test]
    fn worked_example_cycle_and_order() {
        let t = table(&["_start", "fa", "fb", "fc", "fd", "fe", "zend"]);
        let h = times(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0]);
        let a = arcs(&[
            (0, 1, 1),
            (1, 2, 10),
            (2, 3, 5),
            (3, 2, 3),
            (3, 4, 7),
            (4, 4, 4),
            (1, 5, 2),
            (5, 3, 1),
        ]);
        let g = CallGraph::build(&t, &a, &h);
        assert_eq!((g.nodes[4].ncalls, g.nodes[4].self_calls), (7, 4));
        let header = g.header_of(3).expect("fc is in a cycle");
        assert_eq!(g.nodes[header].members, [3, 2], "head fc, then fb");
        assert_eq!(
            (g.nodes[header].ncalls, g.nodes[header].self_calls),
            (11, 8)
        );
        // fa [1], _start [2], cycle [3], fc [4], fe [5], fd [6], fb [7]; zend last.
        let index = |n: usize| g.nodes[n].index;
        assert_eq!(
            [
                index(1),
                index(0),
                index(header),
                index(3),
                index(5),
                index(4),
                index(2)
            ],
            [1, 2, 3, 4, 5, 6, 7]
        );
        // fa's child line to fb: 0.05 0.04 10/11 (time 5 × 10/11 ticks, children 4 × 10/11).
        let fab = arc_between(&g, 1, 2);
        assert!(close(fab.time, 5.0 * (10.0 / 11.0)), "{fab:?}");
        assert!(close(fab.child_time, 4.0 * (10.0 / 11.0)), "{fab:?}");
        assert!(close(g.print_time, 15.0));
    }

    /// A cycle nobody outside calls keeps its header hidden (print flag false, fraction 0).
    #[test]
    fn cycle_without_outside_caller_is_not_printed() {
        let t = table(&["fa", "fb", "fc", "fd", "zend"]);
        let h = times(&[1.0, 1.0, 1.0, 1.0, 0.0]);
        let a = arcs(&[(0, 1, 2), (1, 0, 3), (1, 2, 4), (2, 3, 1)]);
        let g = CallGraph::build(&t, &a, &h);
        let header = g.header_of(0).expect("fa is in a cycle");
        assert!(!g.nodes[header].print_flag);
        assert_eq!(g.nodes[header].fract, 0.0);
        assert!(g.nodes[0].print_flag && g.nodes[1].print_flag);
    }

    /// Arcs outside every symbol are dropped and nothing panics on odd input.
    #[test]
    fn arcs_outside_the_table_and_empty_input() {
        let t = table(&["fa", "fb"]);
        let h = times(&[0.0, 0.0]);
        let a = vec![
            Arc {
                from_pc: 0x10,
                self_pc: 0x1000,
                count: 1,
            },
            Arc {
                from_pc: 0x1000,
                self_pc: u64::MAX,
                count: 1,
            },
        ];
        let g = CallGraph::build(&t, &a, &h);
        assert!(g.arcs.is_empty());
        let empty = table(&[]);
        let g = CallGraph::build(&empty, &a, &times(&[]));
        assert!(g.nodes.is_empty() && g.order.is_empty());
    }

    /// The depth-first walk uses its own stack: a 100,000-deep call chain closed into one
    /// big cycle must not overflow the thread's stack.
    #[test]
    fn deep_chain_and_big_cycle() {
        let n = 100_000;
        let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let t = table(&refs);
        let mut list: Vec<(usize, usize, u64)> = (0..n - 1).map(|i| (i, i + 1, 1)).collect();
        list.push((n - 1, 1, 1));
        let g = CallGraph::build(&t, &arcs(&list), &times(&vec![1.0; n]));
        let header = g.header_of(1).expect("f1..f99999 form a cycle");
        assert_eq!(g.nodes[header].members.len(), n - 1);
        assert_eq!(g.nodes[header].members[0], 1, "the DFS head comes first");
        assert_eq!(g.header_of(0), None);
    }
}
