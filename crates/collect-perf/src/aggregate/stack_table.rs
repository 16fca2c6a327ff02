//! The distinct stacks of one process image, interned as they arrive: memory grows with the
//! distinct stacks, not with the samples. The image's histograms and arcs are derived from
//! them when its files are written, once per distinct stack rather than once per sample.

use std::collections::BTreeMap;

use gmon_format::{BoundaryKind, ROOT_FROM_PC};
use rustc_hash::FxHashMap;

use super::Side;
use crate::kernel_symbols::KernelSymbols;

/// A stack of the stacks file: kernel frames, user frames (each innermost first), boundary
/// kind, and whether the user frames may lack outer ones.
pub(crate) type StackKey = (Vec<u64>, Vec<u64>, Option<BoundaryKind>, bool);

/// Where a sample's histogram hit goes, and what else its stack alone does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Hit {
    /// A user-mode sample at this address (displaced as its frames are; bit 0 clear).
    User(u64),
    /// A kernel-mode sample: its innermost kernel frame.
    Kernel,
    /// Asynchronous kernel work moved to this process: its innermost kernel frame, and an
    /// arc from 0 (no user caller) to its outermost.
    Moved,
}

/// Distinct stacks as paths in a tree of (parent, frame) nodes, from the outermost frame in,
/// each with its samples and nanoseconds: stacks that share their outer frames share nodes, so
/// deep stacks that differ near the leaf cost a node or two each.
#[derive(Debug, Default)]
pub(crate) struct StackTable {
    nodes: Vec<(u32, u64)>,
    index: FxHashMap<(u32, u64), u32>,
    /// (last node of a path, hit) → samples and nanoseconds.
    counts: FxHashMap<(u32, Hit), (u64, u64)>,
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

    /// Counts one sample of `nanoseconds` with this stack and `hit`. The path is a header node
    /// (1, or 2 for a truncated stack), the user frames from the outermost in, [`KERNEL_PART`],
    /// the kernel frames from the outermost in.
    pub(super) fn add(
        &mut self,
        kernel: &[u64],
        user: &[u64],
        truncated: bool,
        hit: Hit,
        nanoseconds: u64,
    ) {
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
        let c = self.counts.entry((at, hit)).or_default();
        c.0 += 1;
        c.1 += nanoseconds;
    }

    /// The stack that ends at node `end`: (kernel frames, user frames, truncated), each
    /// innermost first, the frames into `path`.
    fn stack<'a>(&self, end: u32, path: &'a mut Vec<u64>) -> (&'a [u64], &'a [u64], bool) {
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
        let (kernel, user) = path.split_at(split);
        (kernel, user.get(1..).unwrap_or(&[]), truncated)
    }

    /// Every distinct stack with its samples and nanoseconds, added to `out`, its boundary
    /// kind classified by `ksyms` (none unless it has both kernel and user frames).
    pub(crate) fn collect(&self, ksyms: &KernelSymbols, out: &mut BTreeMap<StackKey, (u64, u64)>) {
        let mut path = Vec::new();
        for (&(end, _), &(samples, ns)) in &self.counts {
            let (kernel, user, truncated) = self.stack(end, &mut path);
            // A stack with no user frames has a boundary only when it is asynchronous work
            // moved to this process.
            let boundary = (!kernel.is_empty())
                .then(|| ksyms.boundary(kernel))
                .filter(|k| !user.is_empty() || k.is_asynchronous());
            let e = out
                .entry((kernel.to_vec(), user.to_vec(), boundary, truncated))
                .or_default();
            e.0 += samples;
            e.1 += ns;
        }
    }

    /// Adds every distinct stack's histogram hits and arcs to the user and kernel sides, as
    /// many times as it was sampled: the hit where the sample's time went, each distinct
    /// caller→callee edge of each part, the user root's arc (from 0 when the stack may lack
    /// outer frames, which the report shows as `[truncated]`, else from [`ROOT_FROM_PC`]: a
    /// function that is a root in some stacks and called in others keeps its roots' share),
    /// and the boundary arc from the innermost user frame to the outermost kernel one; a moved
    /// stack as [`Side::add_moved`] counts it. Returns how many samples (not moved) had user
    /// frames only, and kernel frames only.
    pub(crate) fn count(&self, user_side: &mut Side, kernel_side: &mut Side) -> (u64, u64) {
        let (mut path, mut edges) = (Vec::new(), Vec::new());
        let (mut user_only, mut kernel_only) = (0, 0);
        for (&(end, hit), &(n, _)) in &self.counts {
            let (kernel, user, truncated) = self.stack(end, &mut path);
            match (hit, kernel.first()) {
                (Hit::Moved, _) => {
                    kernel_side.add_moved(kernel, n, &mut edges);
                    continue;
                }
                (Hit::User(pc), _) => *user_side.hist.entry(pc).or_default() += n,
                (Hit::Kernel, Some(&pc)) => *kernel_side.hist.entry(pc & !1).or_default() += n,
                (Hit::Kernel, None) => {}
            }
            match (kernel.is_empty(), user.is_empty()) {
                (true, _) => user_only += n,
                (false, true) => kernel_only += n,
                (false, false) => {}
            }
            user_side.add_stack(user, n, &mut edges);
            if let Some(&outer) = user.last() {
                let from = if truncated { 0 } else { ROOT_FROM_PC };
                *user_side.arcs.entry((from, outer)).or_default() += n;
            }
            kernel_side.add_stack(kernel, n, &mut edges);
            if let (Some(&entry), Some(&upc)) = (kernel.last(), user.first()) {
                *kernel_side.arcs.entry((upc, entry)).or_default() += n;
            }
        }
        (user_only, kernel_only)
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
            let hit = if kernel.is_empty() {
                Hit::User(user.first().copied().unwrap_or(0))
            } else {
                Hit::Kernel
            };
            reused.add(&kernel, &user, truncated, hit, ns);
            looked_up.last.clear();
            looked_up.add(&kernel, &user, truncated, hit, ns);
        }
        let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
        reused.collect(&ksyms, &mut a);
        looked_up.collect(&ksyms, &mut b);
        assert_eq!(a, b);
        assert_eq!(reused.nodes, looked_up.nodes);
        assert!(a.len() > 500, "{} stacks", a.len());
    }

    /// Histogram and arcs as the samples gave them: each hit where its time went, each distinct
    /// edge once a sample (a recursion's repeated edge too), the user root's arc from 0 when
    /// truncated and from ROOT_FROM_PC when whole, the boundary arc, and a moved stack's arc
    /// from 0.
    #[test]
    fn hist_and_arcs_are_counted_from_each_distinct_stack_times_its_samples() {
        let (k1, k2) = (0xffff_8000_0000_2000u64, 0xffff_8000_0000_1000u64);
        let mut t = StackTable::default();
        // Two user-mode samples in f (0x10) at two addresses, called from g (0x20), from main.
        t.add(&[], &[0x10, 0x20, 0x30], false, Hit::User(0x12), 1);
        t.add(&[], &[0x10, 0x20, 0x30], false, Hit::User(0x10), 1);
        // f recursing through itself, cut short.
        t.add(&[], &[0x10, 0x10, 0x10, 0x20], true, Hit::User(0x10), 1);
        // Three kernel-mode samples from a system call in f.
        for _ in 0..3 {
            t.add(&[k1, k2], &[0x10, 0x20, 0x30], false, Hit::Kernel, 1);
        }
        // Kernel work moved here, and a kernel-mode sample with the same stack.
        t.add(&[k1, k2], &[], false, Hit::Moved, 1);
        t.add(&[k1, k2], &[], false, Hit::Kernel, 1);
        // A user-mode sample whose unwind found no frame.
        t.add(&[], &[], false, Hit::User(0x40), 1);
        let (mut user, mut kernel) = (Side::default(), Side::default());
        assert_eq!(t.count(&mut user, &mut kernel), (4, 1));
        fn sorted<K: Copy + Ord>(m: &FxHashMap<K, u64>) -> Vec<(K, u64)> {
            let mut v: Vec<_> = m.iter().map(|(&k, &n)| (k, n)).collect();
            v.sort_unstable();
            v
        }
        assert_eq!(sorted(&user.hist), [(0x10, 2), (0x12, 1), (0x40, 1)]);
        assert_eq!(
            sorted(&user.arcs),
            [
                ((0, 0x20), 1),
                ((ROOT_FROM_PC, 0x30), 5),
                ((0x10, 0x10), 1),
                ((0x20, 0x10), 6),
                ((0x30, 0x20), 5),
            ]
        );
        assert_eq!(sorted(&kernel.hist), [(k1, 5)]);
        assert_eq!(
            sorted(&kernel.arcs),
            [((0, k2), 1), ((0x10, k2), 3), ((k2, k1), 5)]
        );
    }
}
