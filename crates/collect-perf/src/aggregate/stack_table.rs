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
        let mut at = self.node(ROOT, 1 + u64::from(truncated));
        for &a in user.iter().rev() {
            at = self.node(at, a);
        }
        at = self.node(at, KERNEL_PART);
        for &a in kernel.iter().rev() {
            at = self.node(at, a);
        }
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
