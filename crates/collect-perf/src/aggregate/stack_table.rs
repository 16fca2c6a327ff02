//! The distinct stacks of one process image, interned as they arrive: memory grows with the
//! distinct stacks, not with the samples.

use std::collections::BTreeMap;

use gmon_format::BoundaryKind;
use rustc_hash::FxHashMap;

use crate::kernel_symbols::KernelSymbols;

/// A stack of the stacks file: kernel frames, user frames (each innermost first), boundary
/// kind, and whether the user frames may lack outer ones.
pub(crate) type StackKey = (Vec<u64>, Vec<u64>, Option<BoundaryKind>, bool);

/// Distinct stacks as paths in a tree of (parent, frame) nodes, from the outermost frame in,
/// each with its samples and nanoseconds: stacks that share their outer frames share nodes, so
/// deep stacks that differ near the leaf cost a node or two each.
#[derive(Debug, Default)]
pub(crate) struct StackTable {
    nodes: Vec<(u32, u64)>,
    index: FxHashMap<(u32, u64), u32>,
    counts: FxHashMap<u32, (u64, u64)>,
    /// The path of the stack added last, (frame, node) from its header in: a sample's stack
    /// mostly shares its outer frames with the one before, whose nodes are taken from here
    /// without a lookup.
    last: Vec<(u64, u32)>,
}

/// The parent of the first node of every path.
const ROOT: u32 = u32::MAX;
/// Separates the user frames from the kernel frames in a path (no code lives at address 11).
const KERNEL_PART: u64 = 11;

impl StackTable {
    fn node(&mut self, parent: u32, frame: u64) -> u32 {
        if let Some(&n) = self.index.get(&(parent, frame)) {
            return n;
        }
        let n = self.nodes.len() as u32;
        self.nodes.push((parent, frame));
        self.index.insert((parent, frame), n);
        n
    }

    /// Counts one sample of `nanoseconds` with this stack. The path is a header node (1, or 2
    /// for a truncated stack), the user frames from the outermost in, [`KERNEL_PART`], the
    /// kernel frames from the outermost in.
    pub(super) fn add(&mut self, kernel: &[u64], user: &[u64], truncated: bool, nanoseconds: u64) {
        let header = 1 + u64::from(truncated);
        let path = std::iter::once(header)
            .chain(user.iter().rev().copied())
            .chain(std::iter::once(KERNEL_PART))
            .chain(kernel.iter().rev().copied());
        let (mut at, mut depth) = (ROOT, 0);
        for frame in path {
            // The same frames from the header in lead to the same nodes.
            at = match self.last.get(depth) {
                Some(&(f, n)) if f == frame => n,
                _ => {
                    self.last.truncate(depth);
                    let n = self.node(at, frame);
                    self.last.push((frame, n));
                    n
                }
            };
            depth += 1;
        }
        self.last.truncate(depth);
        let c = self.counts.entry(at).or_default();
        c.0 += 1;
        c.1 += nanoseconds;
    }

    /// Every distinct stack with its samples and nanoseconds, added to `out`, its boundary
    /// kind classified by `ksyms` (none unless it has both kernel and user frames).
    pub(crate) fn collect(&self, ksyms: &KernelSymbols, out: &mut BTreeMap<StackKey, (u64, u64)>) {
        let mut path = Vec::new();
        for (&end, &(samples, ns)) in &self.counts {
            path.clear();
            let mut at = end;
            while at != ROOT {
                let (parent, frame) = self.nodes[at as usize];
                path.push(frame);
                at = parent;
            }
            // `path` runs from the innermost kernel frame out to the header.
            let truncated = path.pop() == Some(2);
            let split = path.iter().position(|&a| a == KERNEL_PART).unwrap_or(0);
            let kernel = path[..split].to_vec();
            let user = path[split + 1..].to_vec();
            // A stack with no user frames has a boundary only when it is asynchronous work
            // moved to this process.
            let boundary = (!kernel.is_empty())
                .then(|| ksyms.boundary(&kernel))
                .filter(|k| !user.is_empty() || k.is_asynchronous());
            let e = out.entry((kernel, user, boundary, truncated)).or_default();
            e.0 += samples;
            e.1 += ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each stack's path starts from the one before where their frames are the same: the
    /// table is the one lookups alone build, whatever the order (prefixes of each other,
    /// recursion, the same frames truncated, kernel frames or none).
    #[test]
    fn stack_table_takes_from_the_stack_before_only_what_is_the_same() {
        let ksyms = KernelSymbols::parse("ffff800000000000 T entry_SYSCALL_64\n".into());
        let (mut reused, mut looked_up) = (StackTable::default(), StackTable::default());
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..5000 {
            let user: Vec<u64> = (0..next(6)).map(|_| 0x10 * (1 + next(3))).collect();
            let kernel: Vec<u64> = (0..next(3))
                .map(|_| 0xffff_8000_0000_1000 + 0x1000 * next(2))
                .collect();
            let (truncated, ns) = (next(4) == 0, 1 + next(9));
            reused.add(&kernel, &user, truncated, ns);
            looked_up.last.clear();
            looked_up.add(&kernel, &user, truncated, ns);
        }
        let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
        reused.collect(&ksyms, &mut a);
        looked_up.collect(&ksyms, &mut b);
        assert_eq!(a, b);
        assert_eq!(reused.nodes, looked_up.nodes);
        assert!(a.len() > 500, "{} stacks", a.len());
    }
}
