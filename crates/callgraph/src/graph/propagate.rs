//! Print flags, propagation fractions and time propagation through the call graph.

use super::CallGraph;
use crate::symspec::{Selection, Toggle};

impl CallGraph {
    pub(super) fn propagate_flags(&mut self, top: &[usize], selection: &Selection) {
        // A cycle's flag and fraction are worked out once, when its first member comes up;
        // each member then gets its own adjustments (and adds to print_time) at its own turn
        // in the list, which decides the summation order of print_time.
        let mut cycle_done = vec![false; self.nodes.len()];
        for &s in top.iter().rev() {
            if let Some(h) = self.header_of(s).filter(|&h| !cycle_done[h]) {
                cycle_done[h] = true;
                let cycle = self.nodes[h].cycle;
                let (mut flag, mut fract) = (false, 0.0);
                let ncalls = self.nodes[h].ncalls;
                for &m in &self.nodes[h].members {
                    for &a in &self.nodes[m].parents {
                        let arc = &self.arcs[a];
                        let p = &self.nodes[arc.parent];
                        if p.cycle == cycle {
                            continue;
                        }
                        flag |= p.print_flag;
                        if ncalls != 0 {
                            // Ratio first, as gprof: `f * c / n` can miss `f` by one ulp when
                            // c == n, which reorders entries of equal time.
                            fract += p.fract * (arc.count as f64 / ncalls as f64);
                        }
                    }
                }
                self.nodes[h].print_flag = flag;
                self.nodes[h].fract = fract;
                let members = self.nodes[h].members.clone();
                for &m in &members {
                    self.nodes[m].print_flag = flag;
                    self.nodes[m].fract = fract;
                }
            } else if self.header_of(s).is_none() {
                let (mut flag, mut fract) = (false, 0.0);
                let ncalls = self.nodes[s].ncalls;
                for &a in &self.nodes[s].parents {
                    let arc = &self.arcs[a];
                    if arc.parent == s {
                        continue;
                    }
                    let p = &self.nodes[arc.parent];
                    flag |= p.print_flag;
                    if ncalls != 0 {
                        // Ratio first, as gprof: `f * c / n` can miss `f` by one ulp when
                        // c == n, which reorders entries of equal time.
                        fract += p.fract * (arc.count as f64 / ncalls as f64);
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
        for &p in top {
            if self.nodes[p].fract == 0.0 {
                continue;
            }
            let children = self.nodes[p].children.clone();
            for a in children {
                let arc = &self.arcs[a];
                let (count, mut c) = (arc.count, arc.child);
                if count == 0 || c == p || self.nodes[c].fract == 0.0 {
                    continue;
                }
                if let Some(h) = self.header_of(c) {
                    if self.nodes[p].cycle == self.nodes[c].cycle {
                        continue;
                    }
                    c = h;
                } else if self.nodes[p].top_order <= self.nodes[c].top_order {
                    continue;
                }
                let child = &self.nodes[c];
                if child.ncalls == 0 {
                    continue;
                }
                let ratio = count as f64 / child.ncalls as f64;
                let time = child.time * ratio;
                let child_time = child.child_time * ratio;
                let share = time + child_time;
                let fract = self.nodes[p].fract;
                self.nodes[p].child_time += share;
                self.nodes[p].prop_child += fract * share;
                let arc = &mut self.arcs[a];
                arc.time = time * fract;
                arc.child_time = child_time * fract;
                if let Some(h) = self.header_of(p) {
                    self.nodes[h].child_time += share;
                    self.nodes[h].prop_child += fract * share;
                }
            }
        }
    }
}
