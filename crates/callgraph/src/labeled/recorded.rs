//! The view as recorded (`SeamlessOptions::async_as_recorded`, `pkgprof --async=victim`): the
//! asynchronous work of a measurement made with `pkgmon --async` shown in the process it ran
//! in, not the one it was charged to.
//!
//! The files hold the view charged to the beneficiary; `async.moves` (version 1.1) lists each
//! moved stack with the kernel profile it was written into and the one it was taken for. Each
//! moved sample is in its beneficiary's kernel profile as the collector counts any kernel
//! stack (its innermost frame's histogram bin, each distinct caller → callee pair of its
//! frames once) plus the boundary arc from 0 to its outermost frame, and in its stacks file
//! as a record with no user frames and the work's boundary kind: all of it is taken out of the
//! beneficiary and put into the victim, under the kind's pseudo-function (`[async net-rx]`)
//! in a process, with no caller in a system-wide profile. The victim's own frames outside the
//! cut (the system call or interrupt the work ran inside, the user frames) were never kept:
//! that is the one way this view differs from a measurement made without `--async`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use gmon_format::{Arc, AsyncMoves, BoundaryKind};

use super::ProcessSummary;
use super::state::{Builder, Moved, Recorded};
use crate::error::{Error, Result};

impl Recorded {
    /// The moved stacks of `moves`, the `async.moves` of `dir`.
    ///
    /// Returns an error if moves were made but the file does not list their stacks (a file
    /// written before version 1.1), or a stack is of a kind this reader does not know.
    pub(super) fn new(moves: &AsyncMoves, dir: &Path) -> Result<Recorded> {
        if moves.stacks.is_empty() && moves.moves.iter().any(|m| m.samples > 0) {
            return Err(Error::NoMovedStacks {
                dir: dir.to_owned(),
            });
        }
        let mut r = Recorded::default();
        for s in &moves.stacks {
            let kind = BoundaryKind::from_key(&format!("async-{}", s.kind))
                .filter(|k| k.is_asynchronous())
                .ok_or_else(|| Error::UnknownAsyncKind {
                    dir: dir.to_owned(),
                    kind: s.kind.clone(),
                })?;
            let moved = (s.frames.clone(), kind, s.samples);
            r.out.entry(s.to.clone()).or_default().push(moved.clone());
            match &s.from {
                Some(from) => r.back.entry(from.clone()).or_default().push(moved),
                None => r.homeless += s.samples,
            }
        }
        Ok(r)
    }

    /// The samples moved into and out of the kernel profile named `name`.
    pub(super) fn balance(&self, name: &str) -> (u64, u64) {
        let sum = |m: &HashMap<String, Vec<Moved>>| {
            m.get(name)
                .map_or(0, |v| v.iter().map(|&(_, _, n)| n).sum())
        };
        (sum(&self.out), sum(&self.back))
    }

    /// Moves the counts of entries by kind that a collector's info file gives (the view
    /// charged to the beneficiary) to the view as recorded, for the file set whose kernel
    /// profile is `name`.
    pub(super) fn recount_entries(&self, name: &str, entries: &mut BTreeMap<BoundaryKind, u64>) {
        for (_, kind, n) in self.out.get(name).into_iter().flatten() {
            if let Some(e) = entries.get_mut(kind) {
                *e = e.saturating_sub(*n);
            }
        }
        entries.retain(|k, n| *n > 0 || !k.is_asynchronous());
        for (_, kind, n) in self.stacks_back(name) {
            *entries.entry(*kind).or_default() += n;
        }
    }

    /// The stacks records moved into the process whose kernel profile is `name`, to take out
    /// of its stacks file: samples by (kind, kernel frames).
    pub(super) fn stacks_out(&self, name: &str) -> HashMap<(BoundaryKind, Vec<u64>), u64> {
        let mut out = HashMap::new();
        for (frames, kind, n) in self.out.get(name).into_iter().flatten() {
            *out.entry((*kind, frames.clone())).or_default() += n;
        }
        out
    }

    /// The stacks taken for the file set whose kernel profile is `name`.
    pub(super) fn stacks_back(&self, name: &str) -> &[Moved] {
        self.back.get(name).map_or(&[], Vec::as_slice)
    }

    /// Takes the moved samples out of the histogram `bins` (bin address, count; any order) and
    /// `arcs` of the kernel profile named `name`; returns the samples that were not there
    /// (nonzero only for files that do not match their `async.moves`).
    pub(super) fn take_out(&self, name: &str, bins: &mut [(u64, u64)], arcs: &mut [Arc]) -> u64 {
        let Some(moved) = self.out.get(name) else {
            return 0;
        };
        bins.sort_unstable_by_key(|b| b.0);
        let mut arc_at: HashMap<(u64, u64), usize> = HashMap::new();
        for (i, a) in arcs.iter().enumerate() {
            arc_at.entry((a.from_pc, a.self_pc)).or_insert(i);
        }
        let mut missing = 0;
        let mut edges = Vec::new();
        for (frames, _, n) in moved {
            let (Some(&pc), Some(&entry)) = (frames.first(), frames.last()) else {
                continue;
            };
            // The bin holding the innermost frame: the last nonzero one starting at or before
            // it (its own bin is nonzero, since the sample was counted there).
            let pc = pc & !1;
            match bins.partition_point(|b| b.0 <= pc).checked_sub(1) {
                Some(i) if bins[i].1 >= *n => bins[i].1 -= n,
                _ => missing += n,
            }
            caller_callee(frames, &mut edges);
            edges.push((0, entry));
            for e in &edges {
                match arc_at.get(e) {
                    Some(&i) if arcs[i].count >= *n => arcs[i].count -= n,
                    _ => missing += n,
                }
            }
        }
        missing
    }
}

/// The distinct caller → callee pairs of `frames` (innermost first), into `out`: each counted
/// once per sample, as the collector counts a stack's arcs.
fn caller_callee(frames: &[u64], out: &mut Vec<(u64, u64)>) {
    out.clear();
    out.extend(frames.windows(2).map(|w| (w[1], w[0])));
    out.sort_unstable();
    out.dedup();
}

impl Builder {
    /// Puts the samples taken for the file set (or system-wide profile) whose kernel profile
    /// is `name` back into its `space`'s kernel side: histogram, arcs, and the boundary arc
    /// from the kind's pseudo-function in a process (none in a system-wide profile, where
    /// the entry has no caller, as when recorded without `--async`), counted in `summary`.
    pub(super) fn put_back(&mut self, space: usize, name: &str, summary: &mut ProcessSummary) {
        let Some(recorded) = self.recorded.take() else {
            return;
        };
        let mut edges = Vec::new();
        for (frames, kind, n) in recorded.stacks_back(name) {
            let (Some(&pc), Some(&entry)) = (frames.first(), frames.last()) else {
                continue;
            };
            summary.kernel_samples += n;
            *summary.entries.entry(*kind).or_default() += n;
            let loc = self.kernel_loc(space, pc & !1);
            self.hit(loc, *n);
            caller_callee(frames, &mut edges);
            for &(from, to) in &edges {
                let (from, to) = (self.kernel_loc(space, from), self.kernel_loc(space, to));
                self.arc(from, to, *n);
            }
            if self.spaces[space].process.is_some()
                && let Some(pseudo) = self.pseudo_parent(space, *kind)
            {
                let to = self.kernel_loc(space, entry);
                self.arc(pseudo, to, *n);
            }
        }
        self.recorded = Some(recorded);
    }
}
