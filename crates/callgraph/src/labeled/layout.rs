//! The synthetic address space and the model: the used symbols of every region laid out one
//! after another as functions of a [`Profile`], and every sample, arc and stack moved to its
//! symbol's new place (see "How the merge works" in the module docs). The listings read the
//! model back through [`crate::gprof_view`].

use std::collections::BTreeMap;

use profile_model::{
    Arc, Frame, FrameId, Function, FunctionId, Label, LabelKey, LabelSetId, Period, Profile,
    ProfileBuilder, Side as ModelSide, ValueKind,
};

use super::ProcessLabels;
use super::state::{Builder, Loc, Side, Table, What};
use crate::gprof_view::{HISTOGRAM, SYNTHETIC_BASE};

/// The largest offset into one symbol the synthetic space keeps; anything further is placed at
/// this offset, so that a damaged object whose symbol spans most of the address space cannot
/// overflow the layout.
const MAX_SYMBOL_SPAN: u64 = 1 << 32;

/// The distinct offsets used inside each symbol, in order. A symbol's samples and arc ends are
/// laid out at their offsets' ranks (one 2-byte bin each), not at the offsets themselves: the
/// listings are per function and only need the offsets apart and in order, and a profile whose
/// bins are spread over a gigabyte of kernel text (1 KiB per bin) would otherwise lay out a
/// gigabyte of synthetic text, and a histogram of half a billion bins for it.
struct OffsetRanks(Vec<(usize, usize, u64)>);

impl OffsetRanks {
    fn new<'a>(locs: impl Iterator<Item = &'a Loc>) -> Self {
        let mut keys: Vec<(usize, usize, u64)> = locs
            .filter_map(|l| Some((l.region, l.symbol?, l.offset.min(MAX_SYMBOL_SPAN))))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        OffsetRanks(keys)
    }

    /// The synthetic offset of `loc` in its symbol: twice the rank of its offset.
    fn offset(&self, loc: &Loc) -> u64 {
        let Some(symbol) = loc.symbol else { return 0 };
        let first = self
            .0
            .partition_point(|k| (k.0, k.1) < (loc.region, symbol));
        let at = self
            .0
            .partition_point(|k| *k < (loc.region, symbol, loc.offset.min(MAX_SYMBOL_SPAN)));
        2 * (at - first) as u64
    }

    /// The largest synthetic offset used in symbol `symbol` of region `region` (0 if none).
    fn span(&self, region: usize, symbol: usize) -> u64 {
        let first = self.0.partition_point(|k| (k.0, k.1) < (region, symbol));
        let end = self.0.partition_point(|k| (k.0, k.1) <= (region, symbol));
        2 * (end - first).saturating_sub(1) as u64
    }
}

impl Builder {
    pub(super) fn table_of(&self, what: &What) -> Option<Table<'_>> {
        match what {
            What::Object(o) => self.objects[*o].as_ref().map(|o| Table::Object(&o.table)),
            What::Kernel(k) => self.kernels[*k].as_ref().map(|(t, _)| Table::Kernel(t)),
            What::Pseudo(_) => None,
        }
    }

    /// Lays the used symbols out as the model's functions and adds every sample, arc and
    /// stack at its symbol's place.
    ///
    /// The model's value types: without sampled stacks or sleeps, `samples` holds the
    /// histograms (one one-frame sample per symbol hit); with either, `samples` holds the
    /// stacks, `off-cpu` the sleeps (when there are any) and [`HISTOGRAM`] the histograms,
    /// which the flat profile keeps apart from the stacks. Arcs are the profiles' arcs in
    /// either case.
    pub(super) fn finish(&mut self) -> Profile {
        let mut order: Vec<usize> = (0..self.regions.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (&self.regions[a], &self.regions[b]);
            (ra.space, ra.side, ra.first_address, &ra.what).cmp(&(
                rb.space,
                rb.side,
                rb.first_address,
                &rb.what,
            ))
        });
        // Samples sit at their symbol's start; call sites and stack frames keep their place.
        let ranks = OffsetRanks::new(
            self.arcs
                .iter()
                .flat_map(|(f, t, _)| [f, t])
                .chain(&self.locs),
        );
        let hist = std::mem::take(&mut self.hist);
        let mut b = ProfileBuilder::new();
        // A process that only slept (no CPU sample) still has its off-CPU stacks.
        let off_cpu = !self.off_cpu.is_empty();
        let stacks = off_cpu || !self.stacks.is_empty();
        b.value_type(ValueKind::SAMPLES);
        if off_cpu {
            b.value_type(ValueKind::OFF_CPU_TIME);
        }
        if stacks {
            b.value_type(HISTOGRAM);
        }
        if let Some(unit) = self.unit.filter(|u| u.prof_rate > 0) {
            b.set_period(Period {
                kind: ValueKind::CPU_TIME,
                value: 1_000_000_000 / i64::from(unit.prof_rate),
            });
        }
        // The samples' labels, per space: the process's pid and command name.
        let sample_labels: Vec<LabelSetId> = (self.spaces.iter())
            .map(|space| match &space.process {
                Some((pid, comm)) => {
                    let comm = b.string(comm);
                    b.label_set(&[
                        Label::number(LabelKey::Pid, i64::from(*pid)),
                        Label::text(LabelKey::Comm, comm),
                    ])
                }
                None => {
                    let comm = b.string(&space.label);
                    b.label_set(&[Label::text(LabelKey::Comm, comm)])
                }
            })
            .collect();
        // Per region, the function and place of its pseudo-function and of each placed symbol.
        type Placed = (FunctionId, u64);
        let mut functions: Vec<(Option<Placed>, BTreeMap<usize, Placed>)> =
            vec![(None, BTreeMap::new()); self.regions.len()];
        let mut cursor = SYNTHETIC_BASE;
        let align = |x: u64, a: u64| x.div_ceil(a) * a;
        for &id in &order {
            let region = &self.regions[id];
            let space = &self.spaces[region.space];
            let (side, label) = function_label(space, region.side, self.options.labels);
            let label = b.string(&label);
            let function = |b: &mut ProfileBuilder, name: &[u8], demangle: bool, at, entry| {
                let name = b.string(&printed_name(name, demangle));
                b.function(Function::new(name, side).with_label(label).at(at, entry))
            };
            cursor = align(cursor, 0x1000);
            if region.pseudo_used || self.options.keep_unused {
                let f = function(&mut b, &region.pseudo_name, false, cursor, true);
                functions[id].0 = Some((f, cursor));
                cursor += 0x10;
            }
            if let Some(table) = self.table_of(&region.what) {
                let mut place = |i: usize| {
                    let span = ranks.span(id, i);
                    let (name, address, is_function) = table.symbol(i);
                    // Keep the symbol's alignment modulo 16, so odd addresses stay odd.
                    let at = align(cursor, 0x10) + (address & 0xf);
                    let f = function(&mut b, name, self.options.demangle, at, is_function);
                    functions[id].1.insert(i, (f, at));
                    cursor = at + span + 2;
                };
                if self.options.keep_unused {
                    (0..table.len()).for_each(&mut place);
                } else {
                    region.used.keys().copied().for_each(&mut place);
                }
            }
        }

        // A location's function and synthetic address: its symbol's, or its region's
        // pseudo-function's.
        let place = |loc: &Loc| -> Option<Placed> {
            let (pseudo, placed) = &functions[loc.region];
            match loc.symbol.and_then(|s| placed.get(&s)) {
                Some(&(f, at)) => Some((f, at + ranks.offset(loc))),
                None => *pseudo,
            }
        };
        let frame = |b: &mut ProfileBuilder, loc: &Loc| -> Option<FrameId> {
            let (f, at) = place(loc)?;
            Some(b.frame(Frame::new(f).with_address(at)))
        };
        let width = 1 + usize::from(off_cpu) + usize::from(stacks);
        let mut values = vec![0i64; width];
        // `frames` outermost caller first, as the model takes them; `space` the innermost's.
        let mut add = |b: &mut ProfileBuilder, frames: &[FrameId], space: usize, column, n| {
            let Some(stack) = b.stack_of(frames) else {
                return;
            };
            values.fill(0);
            values[column] = i64::try_from(n).unwrap_or(i64::MAX);
            // One value per value type: cannot fail.
            let _ = b.add_sample(stack, sample_labels[space], &values);
        };
        if stacks {
            // Each distinct location's frame, made once, when first met (the model numbers
            // frames in the order made).
            let mut frames: Vec<Option<Option<FrameId>>> = vec![None; self.locs.len()];
            let mut stack = Vec::new();
            for (list, column) in [(&self.stacks, 0), (&self.off_cpu, 1)] {
                for (locs, n) in list {
                    // Innermost first here.
                    stack.clear();
                    stack.extend(locs.iter().rev().map_while(|&l| {
                        *frames[l].get_or_insert_with(|| frame(&mut b, &self.locs[l]))
                    }));
                    let Some(&innermost) = locs.first() else {
                        continue;
                    };
                    if stack.len() == locs.len() {
                        let space = self.regions[self.locs[innermost].region].space;
                        add(&mut b, &stack, space, column, *n);
                    }
                }
            }
        }
        // The histograms, in address order, one sample per symbol.
        let mut hits: Vec<(u64, Loc, u64)> = (hist.into_iter())
            .filter_map(|((region, symbol), count)| {
                let loc = Loc {
                    region,
                    symbol,
                    offset: 0,
                };
                Some((place(&loc)?.1, loc, count))
            })
            .collect();
        hits.sort_by_key(|&(at, _, _)| at);
        for (_, loc, count) in hits {
            if let Some(f) = frame(&mut b, &loc) {
                add(
                    &mut b,
                    &[f],
                    self.regions[loc.region].space,
                    width - 1,
                    count,
                );
            }
        }
        // The arcs summed by their ends' places, in the order of those places.
        let mut arcs: BTreeMap<(u64, u64), (FunctionId, FunctionId, u64)> = BTreeMap::new();
        for (from, to, count) in &self.arcs {
            let (Some((caller, from)), Some((callee, to))) = (place(from), place(to)) else {
                continue;
            };
            let arc = arcs.entry((from, to)).or_insert((caller, callee, 0));
            arc.2 = arc.2.saturating_add(*count);
        }
        for ((from, to), (caller, callee, count)) in arcs.into_iter().filter(|a| a.1.2 > 0) {
            let caller = b.frame(Frame::new(caller).with_address(from));
            let callee = b.frame(Frame::new(callee).with_address(to));
            let count = i64::try_from(count).unwrap_or(i64::MAX);
            b.add_arc(Arc::new(caller, callee, count));
        }
        b.build()
    }
}

/// A symbol's name as the model prints it: demangled when `demangle`, bytes that are not
/// UTF-8 replaced.
pub(super) fn printed_name(name: &[u8], demangle: bool) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(name) {
        Ok(text) if demangle => demangle::demangle(text),
        _ => String::from_utf8_lossy(name),
    }
}

/// The model side and label of the functions of `space`'s `side`, in the style asked for: the
/// listings' `137u`, `137k` and `kernel`; or by side or command name for diffs across runs.
pub(super) fn function_label(
    space: &super::state::Space,
    side: Side,
    style: ProcessLabels,
) -> (ModelSide, String) {
    let model_side = match side {
        Side::User => ModelSide::User,
        Side::Kernel => ModelSide::Kernel,
    };
    let suffix = match side {
        Side::User => "u",
        Side::Kernel => "k",
    };
    let label = match (&space.process, style) {
        (None, _) => space.label.clone(),
        (Some(_), ProcessLabels::Pid) => format!("{}{suffix}", space.label),
        (Some(_), ProcessLabels::Side) => suffix.to_owned(),
        (Some((_, comm)), ProcessLabels::Comm) => format!("{comm}/{suffix}"),
    };
    (model_side, label)
}
