//! Stacks for profiles that recorded none: a gmon.out has each function's self samples and
//! counted arcs, and formats built on stacks (folded, flame graphs, speedscope, Firefox) get
//! stacks reconstructed from them by gprof's own assumption — every call of a function costs
//! the average, so a function's samples are shared among its callers in proportion to the
//! calls each made, and so on up to functions nobody called.
//!
//! The shares are whole samples (largest remainders), so every total is kept exactly, each
//! reconstructed stack carries at least one sample, and there are never more stacks than
//! samples. No function is climbed twice on one stack: calls that come back round a cycle
//! (mutual recursion) are handed, as gprof treats a cycle as a whole, to the sites that enter
//! the cycle from outside, in proportion to their calls; direct recursion adds nothing. For an
//! acyclic graph a function's inclusive value is what gprof's propagation gives it, and a
//! cycle's callers get the whole of its time as in gprof's listing.

use profile_model::{
    FrameId, FunctionId, Profile, ProfileBuilder, Sample, StackId, Unit, ValueTypeId,
};
use rustc_hash::FxHashMap;

/// A profile with stacks: the one given, or a copy with stacks reconstructed from its arcs.
pub(crate) enum View<'p> {
    Original(&'p Profile),
    Reconstructed(Box<Profile>),
}

impl View<'_> {
    pub(crate) fn profile(&self) -> &Profile {
        match self {
            View::Original(p) => p,
            View::Reconstructed(p) => p,
        }
    }

    pub(crate) fn reconstructed(&self) -> bool {
        matches!(self, View::Reconstructed(_))
    }
}

/// `profile` itself if it has stacks (or nothing to reconstruct them from), else a copy whose
/// one-frame samples are spread over stacks reconstructed from its arcs.
pub(crate) fn with_stacks(profile: &Profile) -> View<'_> {
    let flat = profile.stacks().all(|(_, node)| node.parent.is_none());
    if !flat || !profile.arcs().iter().any(|a| a.count > 0) {
        return View::Original(profile);
    }
    View::Reconstructed(Box::new(reconstruct(profile)))
}

/// How finely a sample without a count is shared out: its values are split in this many parts.
const PARTS_WITHOUT_COUNT: u64 = 10_000;

fn reconstruct(profile: &Profile) -> Profile {
    let callers = Callers::new(profile);
    // Samples are shared out in whole units of the first count-valued type (ticks, samples).
    let unit_column: Option<ValueTypeId> = profile
        .value_types()
        .find(|(_, k)| k.unit == Unit::Count)
        .map(|(id, _)| id);
    let mut builder = ProfileBuilder::from_profile(profile.clone());
    builder.clear_samples();
    let mut paths = Vec::new();
    let mut values = vec![0i64; profile.value_types().len()];
    let mut outermost_first: Vec<FrameId> = Vec::new();
    for sample in profile.samples() {
        let units = match unit_column {
            Some(vt) => sample.values[vt.index()].unsigned_abs(),
            None => PARTS_WITHOUT_COUNT,
        };
        paths.clear();
        callers.expand(
            profile,
            profile.stack(sample.stack).frame,
            units,
            &mut paths,
        );
        let weights: Vec<u128> = paths.iter().map(|&(_, u)| u128::from(u)).collect();
        let shares: Vec<Vec<i64>> = sample
            .values
            .iter()
            .map(|&v| apportion(v, &weights))
            .collect();
        for (i, (path, _)) in paths.iter().enumerate() {
            outermost_first.clear();
            outermost_first.extend(path.iter().rev());
            let stack: StackId = builder
                .stack_of(&outermost_first)
                .expect("a reconstructed path has its leaf");
            for (value, share) in values.iter_mut().zip(&shares) {
                *value = share[i];
            }
            add(&mut builder, stack, &sample, &values);
        }
    }
    builder.build()
}

fn add(builder: &mut ProfileBuilder, stack: StackId, sample: &Sample<'_>, values: &[i64]) {
    builder
        .add_sample_at(stack, sample.labels, values, sample.time)
        .expect("one value per value type, as in the profile");
}

/// A calling site, and the member of a cycle it enters when it is reached round the cycle.
type Site = (FrameId, Option<FrameId>);

/// Who calls each function, and who enters each cycle from outside.
struct Callers {
    /// (call-site frame, calls) into each function from other functions, in frame order.
    by_callee: FxHashMap<FunctionId, Vec<(FrameId, u64)>>,
    /// The cycle (strongly connected component of several functions) each function is in.
    cycle_of: FxHashMap<FunctionId, usize>,
    /// (call-site frame, entry frame, calls) into each cycle from functions outside it.
    entries: Vec<Vec<(FrameId, FrameId, u64)>>,
}

impl Callers {
    fn new(profile: &Profile) -> Self {
        let mut counts: FxHashMap<(FunctionId, FrameId), u64> = FxHashMap::default();
        for arc in profile.arcs() {
            let callee = profile.frame(arc.callee).function;
            let caller = profile.frame(arc.caller).function;
            if arc.count > 0 && caller != callee {
                *counts.entry((callee, arc.caller)).or_default() += arc.count as u64;
            }
        }
        let mut cycle_of = FxHashMap::default();
        let cycles: Vec<Vec<FunctionId>> = profile
            .call_graph(None)
            .cycles()
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect();
        for (i, cycle) in cycles.iter().enumerate() {
            cycle_of.extend(cycle.iter().map(|&f| (f, i)));
        }
        let mut by_callee: FxHashMap<FunctionId, Vec<(FrameId, u64)>> = FxHashMap::default();
        let mut entries: Vec<FxHashMap<(FrameId, FrameId), u64>> =
            vec![FxHashMap::default(); cycles.len()];
        for arc in profile.arcs() {
            let (callee, caller) = (
                profile.frame(arc.callee).function,
                profile.frame(arc.caller).function,
            );
            if let Some(&c) = cycle_of.get(&callee)
                && arc.count > 0
                && cycle_of.get(&caller) != Some(&c)
            {
                *entries[c].entry((arc.caller, arc.callee)).or_default() += arc.count as u64;
            }
        }
        for ((callee, site), n) in counts {
            by_callee.entry(callee).or_default().push((site, n));
        }
        for sites in by_callee.values_mut() {
            sites.sort_unstable();
        }
        let entries = entries
            .into_iter()
            .map(|e| {
                let mut e: Vec<(FrameId, FrameId, u64)> = e
                    .into_iter()
                    .map(|((site, entry), n)| (site, entry, n))
                    .collect();
                e.sort_unstable();
                e
            })
            .collect();
        Callers {
            by_callee,
            cycle_of,
            entries,
        }
    }

    /// Where the samples of `function` go up one level, given the functions already on the
    /// stack: each calling site by its calls. Calls from a function already on the stack (the
    /// way back round a cycle) are handed on, as gprof treats a cycle as a whole, to the sites
    /// that enter the cycle from outside, in proportion to their calls, through the member
    /// they enter (`via`). Returns the sites with their weights and the weight that has nowhere
    /// to go (a cycle nobody entered).
    fn sites(
        &self,
        profile: &Profile,
        function: FunctionId,
        on_stack: &[FunctionId],
    ) -> (Vec<(Site, u128)>, u128) {
        let sites = self.by_callee.get(&function).map_or(&[][..], Vec::as_slice);
        let entries = self
            .cycle_of
            .get(&function)
            .map_or(&[][..], |&c| self.entries[c].as_slice());
        let entry_calls: u128 = entries.iter().map(|&(_, _, n)| u128::from(n)).sum();
        let back: u128 = sites
            .iter()
            .filter(|(site, _)| on_stack.contains(&profile.frame(*site).function))
            .map(|&(_, n)| u128::from(n))
            .sum();
        // Weights scaled by the entry calls so that a back edge's share divides exactly.
        let scale = entry_calls.max(1);
        let mut weights: FxHashMap<Site, u128> = FxHashMap::default();
        for &(site, n) in sites {
            if !on_stack.contains(&profile.frame(site).function) {
                *weights.entry((site, None)).or_default() += u128::from(n) * scale;
            }
        }
        let mut stuck = 0;
        if back > 0 {
            if entry_calls == 0 {
                stuck = back * scale;
            }
            for &(site, entry, n) in entries {
                if on_stack.contains(&profile.frame(site).function) {
                    stuck += back * u128::from(n);
                } else {
                    let via = (profile.frame(entry).function != function).then_some(entry);
                    *weights.entry((site, via)).or_default() += back * u128::from(n);
                }
            }
        }
        let mut weights: Vec<(Site, u128)> = weights.into_iter().collect();
        weights.sort_unstable();
        (weights, stuck)
    }

    /// Pushes onto `out` every reconstructed stack above `leaf` (leaf first) with its units.
    fn expand(
        &self,
        profile: &Profile,
        leaf: FrameId,
        units: u64,
        out: &mut Vec<(Vec<FrameId>, u64)>,
    ) {
        // Depth first with an explicit stack: call chains can be thousands of functions deep.
        // An entry's `via` frame goes on the stack with its units, straight to its caller.
        let mut todo: Vec<(usize, FrameId, u64, Option<FrameId>)> = vec![(0, leaf, units, None)];
        let mut path: Vec<FrameId> = Vec::new();
        let mut functions: Vec<FunctionId> = Vec::new();
        let mut weights: Vec<u128> = Vec::new();
        while let Some((depth, frame, units, then)) = todo.pop() {
            path.truncate(depth);
            functions.truncate(depth);
            path.push(frame);
            let function = profile.frame(frame).function;
            functions.push(function);
            if let Some(caller) = then {
                todo.push((depth + 1, caller, units, None));
                continue;
            }
            let (sites, stuck) = self.sites(profile, function, &functions);
            weights.clear();
            weights.extend(sites.iter().map(|&(_, w)| w));
            weights.push(stuck);
            let shares = apportion(units as i64, &weights);
            let kept = if sites.is_empty() && stuck == 0 {
                units
            } else {
                shares[sites.len()] as u64
            };
            for (&((site, via), _), &share) in sites.iter().zip(&shares).rev() {
                if share > 0 {
                    todo.push(match via {
                        Some(entry) => (depth + 1, entry, share as u64, Some(site)),
                        None => (depth + 1, site, share as u64, None),
                    });
                }
            }
            if kept > 0 {
                out.push((path.clone(), kept));
            }
        }
    }
}

/// `total` shared in proportion to `weights` in whole parts that add up to it exactly: each
/// gets the floor of its share, and what remains goes one by one to the largest remainders
/// (the first on ties). All zeros if the weights are.
pub(crate) fn apportion(total: i64, weights: &[u128]) -> Vec<i64> {
    let shifted_sum = |shift: u32| {
        weights
            .iter()
            .fold(0u128, |sum, &w| sum.saturating_add(w >> shift))
    };
    if shifted_sum(0) == 0 {
        return vec![0; weights.len()];
    }
    // Weights are scaled down until their sum fits 64 bits, so that no product below
    // overflows (a nonzero weight stays nonzero).
    let mut shift = 0;
    while shifted_sum(shift) > u128::from(u64::MAX) {
        shift += 1;
    }
    let scaled: Vec<u128> = weights
        .iter()
        .map(|&w| if w == 0 { 0 } else { (w >> shift).max(1) })
        .collect();
    let weights = &scaled[..];
    let sum: u128 = weights.iter().sum();
    let magnitude = u128::from(total.unsigned_abs());
    let mut parts: Vec<u128> = Vec::with_capacity(weights.len());
    let mut remainders: Vec<(u128, usize)> = Vec::with_capacity(weights.len());
    for (i, &w) in weights.iter().enumerate() {
        let product = magnitude * w;
        parts.push(product / sum);
        remainders.push((product % sum, i));
    }
    let left = magnitude - parts.iter().sum::<u128>();
    remainders.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in remainders.iter().take(left as usize) {
        parts[i] += 1;
    }
    let sign = if total < 0 { -1 } else { 1 };
    parts.into_iter().map(|p| sign * p as i64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{arc_profile, by_name};

    #[test]
    fn apportion_keeps_the_total() {
        assert_eq!(apportion(10, &[1, 1, 1]), [4, 3, 3]);
        assert_eq!(apportion(-10, &[1, 1, 1]), [-4, -3, -3]);
        assert_eq!(apportion(7, &[0, 5, 2]), [0, 5, 2]);
        assert_eq!(apportion(1, &[1, 3]), [0, 1]);
        assert_eq!(apportion(5, &[0, 0]), [0, 0]);
        assert_eq!(
            apportion(i64::MAX, &[u128::MAX, 1]).iter().sum::<i64>(),
            i64::MAX
        );
    }

    #[test]
    fn shares_follow_call_counts_up_to_the_roots() {
        // main calls a 3 times and b once; both call leaf (a 2 times, b 2 times); leaf has 8
        // samples, a 4 of its own.
        let p = arc_profile(
            &[("leaf", 8), ("a", 4), ("main", 0), ("b", 0)],
            &[
                ("main", "a", 3),
                ("main", "b", 1),
                ("a", "leaf", 2),
                ("b", "leaf", 2),
            ],
        );
        let view = with_stacks(&p);
        assert!(view.reconstructed());
        let r = view.profile();
        assert_eq!(
            by_name(r),
            [
                ("main;a".to_owned(), 4),
                ("main;a;leaf".to_owned(), 4),
                ("main;b;leaf".to_owned(), 4)
            ]
        );
        assert_eq!(r.arcs().len(), 4);
    }

    #[test]
    fn cycles_are_entered_from_outside_as_gprof_does() {
        // a and b call each other; main calls a.
        let p = arc_profile(
            &[("b", 6), ("a", 0), ("main", 0)],
            &[
                ("main", "a", 1),
                ("a", "b", 2),
                ("b", "a", 1),
                ("a", "a", 5),
            ],
        );
        let r = with_stacks(&p);
        assert_eq!(by_name(r.profile()), [("main;a;b".to_owned(), 6)]);
    }

    #[test]
    fn profiles_with_stacks_are_left_alone() {
        let p = arc_profile(&[("main", 1)], &[]);
        assert!(!with_stacks(&p).reconstructed());
    }
}
