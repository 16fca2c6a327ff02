//! Depth-first numbering and cycle detection (gprof's "top order" and cycle membership).

use super::{BUSY, CallGraph, Node, UNNUMBERED};

impl CallGraph {
    /// Depth-first numbering with cycle detection. Returns each symbol's cycle head and the
    /// member chain links.
    pub(super) fn number_depth_first(&mut self) -> (Vec<usize>, Vec<Option<usize>>) {
        let n = self.symbol_count;
        let mut head: Vec<usize> = (0..n).collect();
        let mut next: Vec<Option<usize>> = vec![None; n];
        let mut counter = 0u64;
        let mut stack: Vec<(usize, usize)> = Vec::new();
        // The walk reads each node's callees and DFS number many times; both are laid out
        // compactly here (callees in each node's list order, newest arc first), as hopping
        // between 176-byte nodes was most of its cost.
        let mut top: Vec<u64> = self.nodes[..n].iter().map(|x| x.top_order).collect();
        let mut callee_start = Vec::with_capacity(n + 1);
        let mut callees = Vec::with_capacity(self.arcs.len());
        for node in &self.nodes[..n] {
            callee_start.push(callees.len());
            callees.extend(node.children.iter().map(|&a| self.arcs[a].child));
        }
        callee_start.push(callees.len());
        for root in 0..n {
            if top[root] != UNNUMBERED {
                continue;
            }
            top[root] = BUSY;
            stack.push((root, callee_start[root]));
            while let Some(&mut (node, ref mut pos)) = stack.last_mut() {
                if *pos < callee_start[node + 1] {
                    let child = callees[*pos];
                    *pos += 1;
                    match top[child] {
                        UNNUMBERED => {
                            top[child] = BUSY;
                            stack.push((child, callee_start[child]));
                        }
                        BUSY => find_cycle(child, &stack, &mut head, &mut next),
                        _ => {}
                    }
                    continue;
                }
                stack.pop();
                if head[node] == node {
                    counter += 1;
                    let mut m = Some(node);
                    while let Some(x) = m {
                        top[x] = counter;
                        m = next[x];
                    }
                }
            }
        }
        for (node, t) in self.nodes.iter_mut().zip(top) {
            node.top_order = t;
        }
        (head, next)
    }

    pub(super) fn number_cycles(&mut self, head: &[usize], next: &[Option<usize>]) {
        let n = self.symbol_count;
        // Reserve exactly: growing a vector of 60,000 nodes by one header doubles it.
        let cycles = (0..n)
            .filter(|&h| head[h] == h && next[h].is_some())
            .count();
        self.nodes.reserve_exact(cycles);
        for h in 0..n {
            if head[h] != h || next[h].is_none() {
                continue;
            }
            let number = self.nodes.len() - n + 1;
            let mut header = Node::new(None);
            header.print_flag = true;
            header.cycle = number;
            header.top_order = self.nodes[h].top_order;
            let mut m = Some(h);
            while let Some(x) = m {
                header.members.push(x);
                self.nodes[x].cycle = number;
                m = next[x];
            }
            self.nodes.push(header);
        }
        for c in n..self.nodes.len() {
            let cycle = self.nodes[c].cycle;
            let (mut ncalls, mut self_calls) = (0u64, 0u64);
            for &m in &self.nodes[c].members {
                for &a in &self.nodes[m].parents {
                    let arc = &self.arcs[a];
                    if self.nodes[arc.parent].cycle != cycle {
                        ncalls = ncalls.wrapping_add(arc.count);
                    } else if arc.parent != arc.child {
                        self_calls = self_calls.wrapping_add(arc.count);
                    }
                }
            }
            self.nodes[c].ncalls = ncalls;
            self.nodes[c].self_calls = self_calls;
        }
    }
}

/// A call back into `child`, which is still on the DFS stack: merge everything above it (or
/// above the head of the cycle it already belongs to) into one cycle.
fn find_cycle(
    child: usize,
    stack: &[(usize, usize)],
    head: &mut [usize],
    next: &mut [Option<usize>],
) {
    let Some(pos) = stack
        .iter()
        .rposition(|&(s, _)| s == child || (head[child] != child && head[child] == s))
    else {
        return;
    };
    if pos + 1 == stack.len() {
        return;
    }
    let mut cycle_head = stack[pos].0;
    let mut tail = cycle_head;
    while let Some(t) = next[tail] {
        tail = t;
    }
    if head[cycle_head] != cycle_head {
        cycle_head = head[cycle_head];
    }
    for &(s, _) in &stack[pos + 1..] {
        if head[s] == s {
            next[tail] = Some(s);
            head[s] = cycle_head;
            tail = s;
            while let Some(t) = next[tail] {
                head[t] = cycle_head;
                tail = t;
            }
        }
    }
}
