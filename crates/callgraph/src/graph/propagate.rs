//! Print flags, propagation fractions and time propagation through the call graph.

use super::CallGraph;
use crate::symspec::{Selection, Toggle};

impl CallGraph {
    pub(super) fn propagate_flags(&mut self, top: &[usize], selection: &Selection) {
        // A cycle's flag and fraction are worked out once, when its first member comes up;
        // each member then gets its own adjustments (and adds to print_time) at its own turn
        // in the list, which decides the summation order of print_time.
        let mut cycle_done = vec![false; self.nodes.len()];
        // Callers' flags, fractions and cycles are read from these compact copies, kept in
        // step with the nodes, rather than from callers' nodes all over the graph.
        let mut flags: Vec<bool> = self.nodes.iter().map(|x| x.print_flag).collect();
        let mut fracts: Vec<f64> = self.nodes.iter().map(|x| x.fract).collect();
        let cycles: Vec<usize> = self.nodes.iter().map(|x| x.cycle).collect();
        for &s in top.iter().rev() {
            if let Some(h) = self.header_of(s).filter(|&h| !cycle_done[h]) {
                cycle_done[h] = true;
                let cycle = self.nodes[h].cycle;
                let (mut flag, mut fract) = (false, 0.0);
                let ncalls = self.nodes[h].ncalls;
                for &m in &self.nodes[h].members {
                    for &a in &self.nodes[m].parents {
                        let arc = &self.arcs[a];
                        if cycles[arc.parent] == cycle {
                            continue;
                        }
                        flag |= flags[arc.parent];
                        if ncalls != 0 {
                            // Ratio first, as gprof: `f * c / n` can miss `f` by one ulp when
                            // c == n, which reorders entries of equal time.
                            fract += fracts[arc.parent] * (arc.count as f64 / ncalls as f64);
                        }
                    }
                }
                self.nodes[h].print_flag = flag;
                self.nodes[h].fract = fract;
                (flags[h], fracts[h]) = (flag, fract);
                for i in 0..self.nodes[h].members.len() {
                    let m = self.nodes[h].members[i];
                    self.nodes[m].print_flag = flag;
                    self.nodes[m].fract = fract;
                    (flags[m], fracts[m]) = (flag, fract);
                }
            } else if self.header_of(s).is_none() {
                let (mut flag, mut fract) = (false, 0.0);
                let ncalls = self.nodes[s].ncalls;
                for &a in &self.nodes[s].parents {
                    let arc = &self.arcs[a];
                    if arc.parent == s {
                        continue;
                    }
                    flag |= flags[arc.parent];
                    if ncalls != 0 {
                        // Ratio first, as gprof: `f * c / n` can miss `f` by one ulp when
                        // c == n, which reorders entries of equal time.
                        fract += fracts[arc.parent] * (arc.count as f64 / ncalls as f64);
                    }
                }
                self.nodes[s].print_flag = flag;
                self.nodes[s].fract = fract;
            }
            let print = selection.print.get(s).copied().unwrap_or(Toggle {
                on: true,
                off: false,
            });
            let time = selection.time.get(s).copied().unwrap_or(Toggle {
                on: true,
                off: false,
            });
            let node = &mut self.nodes[s];
            if !node.print_flag {
                node.print_flag = print.on;
            } else if print.off {
                node.print_flag = false;
            }
            if node.fract == 0.0 {
                if time.on {
                    node.fract = 1.0;
                }
            } else if time.off {
                node.fract = 0.0;
            }
            (flags[s], fracts[s]) = (node.print_flag, node.fract);
            node.prop_self = node.time * node.fract;
            self.print_time += node.prop_self;
        }
    }

    pub(super) fn cycle_times(&mut self) {
        for c in self.symbol_count..self.nodes.len() {
            let mut time = 0.0;
            for &m in &self.nodes[c].members {
                if self.nodes[m].fract != 0.0 {
                    time += self.nodes[m].time;
                }
            }
            self.nodes[c].time = time;
            self.nodes[c].prop_self = self.nodes[c].fract * time;
        }
    }

    pub(super) fn propagate_time(&mut self, top: &[usize]) {
        // What the walk reads and writes of each node, a third of a node's size, so that the
        // callees visited all over the graph cost fewer cache misses. Same operations in the
        // same order as on the nodes themselves.
        let mut hot: Vec<Hot> = self
            .nodes
            .iter()
            .map(|x| Hot {
                fract: x.fract,
                time: x.time,
                child_time: x.child_time,
                prop_child: x.prop_child,
                ncalls: x.ncalls,
                top_order: x.top_order,
                cycle: x.cycle,
            })
            .collect();
        let symbols = self.symbol_count;
        let header_of = |hot: &[Hot], s: usize| {
            let c = hot[s].cycle;
            (c != 0 && s < symbols).then(|| symbols + c - 1)
        };
        for &p in top {
            let fract = hot[p].fract;
            if fract == 0.0 {
                continue;
            }
            for &a in &self.nodes[p].children {
                let arc = &self.arcs[a];
                let (count, mut c) = (arc.count, arc.child);
                if count == 0 || c == p || hot[c].fract == 0.0 {
                    continue;
                }
                if let Some(h) = header_of(&hot, c) {
                    if hot[p].cycle == hot[c].cycle {
                        continue;
                    }
                    c = h;
                } else if hot[p].top_order <= hot[c].top_order {
                    continue;
                }
                let child = &hot[c];
                if child.ncalls == 0 {
                    continue;
                }
                let ratio = count as f64 / child.ncalls as f64;
                let time = child.time * ratio;
                let child_time = child.child_time * ratio;
                let share = time + child_time;
                hot[p].child_time += share;
                hot[p].prop_child += fract * share;
                let arc = &mut self.arcs[a];
                arc.time = time * fract;
                arc.child_time = child_time * fract;
                if let Some(h) = header_of(&hot, p) {
                    hot[h].child_time += share;
                    hot[h].prop_child += fract * share;
                }
            }
        }
        for (node, h) in self.nodes.iter_mut().zip(hot) {
            node.child_time = h.child_time;
            node.prop_child = h.prop_child;
        }
    }
}

/// The fields of a node that time propagation uses.
#[derive(Debug, Clone, Copy)]
struct Hot {
    fract: f64,
    time: f64,
    child_time: f64,
    prop_child: f64,
    ncalls: u64,
    top_order: u64,
    cycle: usize,
}
