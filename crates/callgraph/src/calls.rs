//! Call counts per function, straight from the arcs.
//!
//! This is the part of gprof's arc ingestion the flat profile needs. The call graph proper
//! (cycles, time propagation) builds on the same resolution of arc ends.

use gmon_format::Arc;

use crate::graph::CallGraph;
use crate::symbols::SymbolTable;

/// How often each symbol was called, indexed like [`SymbolTable::symbols`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Calls from other symbols: gprof's `ncalls` once self-recursive calls are taken out.
    pub calls: Vec<u64>,
    /// Calls a symbol made to itself (direct recursion).
    pub self_calls: Vec<u64>,
}

impl CallCounts {
    /// Counts the calls recorded by `arcs` (summed over all input files).
    ///
    /// An arc's caller is the symbol containing `from_pc`, its callee the symbol containing
    /// `self_pc` — moved back to the nearest preceding function if that symbol is a label or
    /// an object. Arcs with either end outside every symbol are ignored, which is why `main`,
    /// called from libc, usually has no calls. A symbol calling itself does not count towards
    /// its `calls`.
    pub fn from_arcs(table: &SymbolTable, arcs: &[Arc]) -> Self {
        let mut counts = CallCounts {
            calls: vec![0; table.len()],
            self_calls: vec![0; table.len()],
        };
        for arc in arcs {
            let Some(parent) = table.lookup(arc.from_pc) else {
                continue;
            };
            let Some(child) = table.lookup_callee(arc.self_pc) else {
                continue;
            };
            counts.calls[child] = counts.calls[child].wrapping_add(arc.count);
            if parent == child {
                counts.self_calls[child] = counts.self_calls[child].wrapping_add(arc.count);
            }
        }
        for (calls, &own) in counts.calls.iter_mut().zip(&counts.self_calls) {
            *calls = calls.wrapping_sub(own);
        }
        counts
    }

    /// The same counts read off a call graph built from the same arcs, which has already
    /// resolved every arc end: each symbol node's `ncalls` and `self_calls`.
    pub(crate) fn from_graph(graph: &CallGraph) -> Self {
        let symbols = &graph.nodes[..graph.symbol_count];
        CallCounts {
            calls: symbols.iter().map(|n| n.ncalls).collect(),
            self_calls: symbols.iter().map(|n| n.self_calls).collect(),
        }
    }
}
