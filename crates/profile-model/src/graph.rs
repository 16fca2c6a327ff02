//! The caller/callee graph of a profile's functions, as a petgraph view: strongly connected
//! components (recursion, mutual recursion) and traversal come from petgraph's algorithms.

use petgraph::Direction;
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, EdgeRef};
use rustc_hash::FxHashMap;

use crate::{FunctionId, Profile, ValueTypeId};

/// What an edge of the [`CallGraph`] carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallEdge {
    /// The summed counts of the arcs between the two functions.
    pub calls: i64,
    /// The value (of the type the graph was made for) of the samples whose stack has the
    /// caller directly above the callee, each sample counted once however often the pair
    /// repeats on its stack.
    pub value: i64,
}

/// The caller/callee graph of a profile's functions.
///
/// Every function of the profile is a node, with the same index as its [`FunctionId`]; there
/// is one edge from caller to callee for each pair that an arc or a stack joins, in order of
/// (caller, callee). It is a view, built from the profile on demand: the profile itself stores
/// stacks and arcs, which say more.
///
/// Strongly connected components are petgraph's (Tarjan); listings that must number cycles
/// exactly as gprof does keep their own numbering on top.
#[derive(Debug, Clone)]
pub struct CallGraph {
    graph: DiGraph<FunctionId, CallEdge, u32>,
}

impl CallGraph {
    pub(crate) fn new(profile: &Profile, vt: Option<ValueTypeId>) -> Self {
        let mut edges: FxHashMap<(u32, u32), CallEdge> = FxHashMap::default();
        for arc in &profile.arcs {
            let caller = profile.frames[arc.caller.index()].function.index() as u32;
            let callee = profile.frames[arc.callee.index()].function.index() as u32;
            let edge = edges.entry((caller, callee)).or_default();
            edge.calls = edge.calls.saturating_add(arc.count);
        }
        if let Some(vt) = vt {
            let function_of = |node: usize| {
                profile.frames[profile.stacks[node].frame.index()]
                    .function
                    .index() as u32
            };
            let mut pairs: Vec<(u32, u32)> = Vec::new();
            for (leaf, value) in profile.leaf_values(vt).into_iter().enumerate() {
                if value == 0 {
                    continue;
                }
                pairs.clear();
                let mut node = leaf;
                while let Some(parent) = profile.stacks[node].parent {
                    pairs.push((function_of(parent.index()), function_of(node)));
                    node = parent.index();
                }
                pairs.sort_unstable();
                pairs.dedup();
                for &pair in &pairs {
                    let edge = edges.entry(pair).or_default();
                    edge.value = edge.value.saturating_add(value);
                }
            }
        }
        let mut graph = DiGraph::with_capacity(profile.functions.len(), edges.len());
        for (f, _) in profile.functions() {
            graph.add_node(f);
        }
        let mut edges: Vec<_> = edges.into_iter().collect();
        edges.sort_unstable_by_key(|&(pair, _)| pair);
        for ((caller, callee), edge) in edges {
            graph.add_edge(
                NodeIndex::new(caller as usize),
                NodeIndex::new(callee as usize),
                edge,
            );
        }
        CallGraph { graph }
    }

    /// The petgraph graph itself, for algorithms this view does not wrap. Node weights are
    /// function handles; node `i` is the function of index `i`.
    pub fn graph(&self) -> &DiGraph<FunctionId, CallEdge, u32> {
        &self.graph
    }

    /// The functions `f` called, with the edge to each, in order of callee.
    pub fn callees(&self, f: FunctionId) -> Vec<(FunctionId, CallEdge)> {
        self.neighbors(f, Direction::Outgoing)
    }

    /// The functions that called `f`, with the edge from each, in order of caller.
    pub fn callers(&self, f: FunctionId) -> Vec<(FunctionId, CallEdge)> {
        self.neighbors(f, Direction::Incoming)
    }

    fn neighbors(&self, f: FunctionId, direction: Direction) -> Vec<(FunctionId, CallEdge)> {
        let mut found: Vec<(FunctionId, CallEdge)> = self
            .graph
            .edges_directed(node(f), direction)
            .map(|e| {
                let other = match direction {
                    Direction::Outgoing => e.target(),
                    Direction::Incoming => e.source(),
                };
                (self.graph[other], *e.weight())
            })
            .collect();
        found.sort_unstable_by_key(|&(g, _)| g);
        found
    }

    /// The strongly connected components, each sorted by function handle, callees' components
    /// before their callers' (reverse topological order).
    pub fn components(&self) -> Vec<Vec<FunctionId>> {
        tarjan_scc(&self.graph)
            .into_iter()
            .map(|component| {
                let mut functions: Vec<FunctionId> =
                    component.into_iter().map(|n| self.graph[n]).collect();
                functions.sort_unstable();
                functions
            })
            .collect()
    }

    /// The components that are cycles: several functions calling each other, or one calling
    /// itself.
    pub fn cycles(&self) -> Vec<Vec<FunctionId>> {
        self.components()
            .into_iter()
            .filter(|c| match c.as_slice() {
                [f] => self.graph.contains_edge(node(*f), node(*f)),
                _ => true,
            })
            .collect()
    }

    /// Every function reachable from `f` through calls (`f` first), depth first.
    pub fn reachable_from(&self, f: FunctionId) -> Vec<FunctionId> {
        let mut dfs = Dfs::new(&self.graph, node(f));
        std::iter::from_fn(|| dfs.next(&self.graph))
            .map(|n| self.graph[n])
            .collect()
    }
}

fn node(f: FunctionId) -> NodeIndex<u32> {
    NodeIndex::new(f.index())
}

#[cfg(test)]
mod tests {
    use crate::test_util::{frame, stack};
    use crate::{Arc, FunctionId, LabelSetId, Profile, ProfileBuilder, ValueKind};

    fn names(p: &Profile, fs: &[FunctionId]) -> Vec<String> {
        fs.iter().map(|&f| p.function_name(f).to_owned()).collect()
    }

    #[test]
    fn edges_come_from_arcs_and_stacks() {
        let mut b = ProfileBuilder::new();
        let cpu = b.value_type(ValueKind::CPU_TIME);
        // main → f → g → f → g: the pair f → g twice on one stack counts once.
        let s = stack(&mut b, &["main", "f", "g", "f", "g"]);
        b.add_sample(s, LabelSetId::EMPTY, &[10]).unwrap();
        let t = stack(&mut b, &["main", "h"]);
        b.add_sample(t, LabelSetId::EMPTY, &[5]).unwrap();
        let (main, h, idle) = (
            frame(&mut b, "main"),
            frame(&mut b, "h"),
            frame(&mut b, "idle"),
        );
        b.add_arc(Arc::new(main, h, 7));
        b.add_arc(Arc::new(h, h, 2));
        let p = b.build();
        let graph = p.call_graph(Some(cpu));
        let fun = |name: &str| {
            p.functions()
                .find(|&(f, _)| p.function_name(f) == name)
                .unwrap()
                .0
        };
        let callees: Vec<(String, i64, i64)> = graph
            .callees(fun("main"))
            .into_iter()
            .map(|(f, e)| (p.function_name(f).to_owned(), e.calls, e.value))
            .collect();
        assert_eq!(callees, [("f".into(), 0, 10), ("h".into(), 7, 5)]);
        let fg = graph.callees(fun("f"));
        assert_eq!((fg.len(), fg[0].1.value), (1, 10));
        assert_eq!(
            names(
                &p,
                &graph
                    .callers(fun("f"))
                    .iter()
                    .map(|x| x.0)
                    .collect::<Vec<_>>()
            ),
            ["main", "g"]
        );
        // Without a value type, only arcs make edges.
        let arcs_only = p.call_graph(None);
        assert_eq!(arcs_only.callees(fun("main")).len(), 1);
        assert_eq!(arcs_only.graph().node_count(), 5);
        assert!(graph.callers(p.frame(idle).function).is_empty());
    }

    #[test]
    fn cycles_and_components() {
        let mut b = ProfileBuilder::new();
        let samples = b.value_type(ValueKind::SAMPLES);
        let s = stack(&mut b, &["main", "a", "b", "a", "leaf"]);
        b.add_sample(s, LabelSetId::EMPTY, &[1]).unwrap();
        let r = stack(&mut b, &["main", "rec", "rec"]);
        b.add_sample(r, LabelSetId::EMPTY, &[1]).unwrap();
        let p = b.build();
        let graph = p.call_graph(Some(samples));
        let cycles: Vec<Vec<String>> = graph.cycles().iter().map(|c| names(&p, c)).collect();
        assert_eq!(cycles, [vec!["rec"], vec!["a", "b"]]);
        let components: Vec<Vec<String>> =
            graph.components().iter().map(|c| names(&p, c)).collect();
        // Callees before callers: leaf before the a/b cycle, main last.
        let at = |name: &str| components.iter().position(|c| c.iter().any(|n| n == name));
        assert!(at("leaf") < at("a") && at("a") < at("main") && at("rec") < at("main"));
        let main = p.functions().next().unwrap().0;
        let mut reached = names(&p, &graph.reachable_from(main));
        assert_eq!(reached.remove(0), "main");
        reached.sort();
        assert_eq!(reached, ["a", "b", "leaf", "rec"]);
    }
}
