//! Building a profile: interning everything a reader finds, adding samples and arcs, and
//! summing profiles into one.

use std::ops::Range;

use rustc_hash::FxHashMap;

use crate::intern::{Interner, to_u32};
use crate::samples::SampleTable;
use crate::values::ValueType;
use crate::{
    Arc, Error, Frame, FrameId, Function, FunctionId, Label, LabelKey, LabelSetId, LabelValue,
    Object, ObjectId, Period, Profile, Result, StackId, StackNode, StringId, ValueKind,
    ValueTypeId,
};

/// Builds a [`Profile`]: interns strings, objects, functions, frames, stacks and label sets
/// (each distinct item once, whatever the number of times it is added) and collects samples
/// and arcs.
///
/// Handles returned by one builder belong to it and to the profile it builds; giving them to
/// another builder is a bug (it panics or mixes up items).
#[derive(Debug, Clone)]
pub struct ProfileBuilder {
    strings: Interner<Box<str>>,
    objects: Interner<Object>,
    functions: Interner<Function>,
    frames: Interner<Frame>,
    stacks: Interner<StackNode>,
    value_types: Vec<ValueType>,
    label_sets: Interner<Box<[Label]>>,
    samples: SampleTable,
    arcs: Vec<Arc>,
    period: Option<(ValueType, i64)>,
    /// Every stack [`ProfileBuilder::stack_of`] was asked for, by its frames.
    whole_stacks: FxHashMap<Box<[FrameId]>, StackId>,
}

impl Default for ProfileBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// How [`ProfileBuilder::add_profile`] adds a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MergeOptions {
    /// What every value and arc count is multiplied by. Default is 1; -1 subtracts the profile,
    /// which is how a difference of two profiles is built.
    pub factor: i64,
    /// Whether frames are reduced to their function (address and line dropped) and objects to
    /// their path (build-id dropped). Default is false. Profiles of two builds of a program
    /// then match by symbolic identity: same function names in the same files, whatever
    /// their addresses.
    pub symbolic: bool,
    /// Which samples are added, by time (nanoseconds, end excluded). Default is `None`: all.
    /// With a window, samples without a time are left out, so a long recording can be cut
    /// into per-window profiles.
    pub time_window: Option<Range<u64>>,
    /// Which of the added profile's value types are added, by its handles. Default is `None`:
    /// all. With a choice, samples whose chosen values are all zero are left out, so a
    /// profile that keeps two measures in one (a histogram beside sampled stacks) can be
    /// reduced to one of them.
    pub value_types: Option<Vec<ValueTypeId>>,
    /// Whether the added profile's arcs are added. Default is true.
    pub arcs: bool,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            factor: 1,
            symbolic: false,
            time_window: None,
            value_types: None,
            arcs: true,
        }
    }
}

impl ProfileBuilder {
    /// An empty builder: no value types, no samples.
    pub fn new() -> Self {
        let mut label_sets = Interner::default();
        label_sets.intern(Box::from([]));
        ProfileBuilder {
            strings: Interner::default(),
            objects: Interner::default(),
            functions: Interner::default(),
            frames: Interner::default(),
            stacks: Interner::default(),
            value_types: Vec::new(),
            label_sets,
            samples: SampleTable::default(),
            arcs: Vec::new(),
            period: None,
            whole_stacks: FxHashMap::default(),
        }
    }

    /// The builder of `profile` itself, to add to it.
    pub fn from_profile(profile: Profile) -> Self {
        ProfileBuilder {
            strings: Interner::from_items(profile.strings),
            objects: Interner::from_items(profile.objects),
            functions: Interner::from_items(profile.functions),
            frames: Interner::from_items(profile.frames),
            stacks: Interner::from_items(profile.stacks),
            value_types: profile.value_types,
            label_sets: Interner::from_items(profile.label_sets),
            samples: profile.samples,
            arcs: profile.arcs,
            period: profile.period,
            whole_stacks: FxHashMap::default(),
        }
    }

    /// The handle of `text`, interned.
    pub fn string(&mut self, text: &str) -> StringId {
        StringId::from_u32(self.strings.intern_borrowed(text, |s| Box::from(s)))
    }

    /// The handle of `object`, interned.
    pub fn object(&mut self, object: Object) -> ObjectId {
        ObjectId::from_u32(self.objects.intern(object))
    }

    /// The handle of `function`, interned.
    pub fn function(&mut self, function: Function) -> FunctionId {
        FunctionId::from_u32(self.functions.intern(function))
    }

    /// The handle of `frame`, interned.
    pub fn frame(&mut self, frame: Frame) -> FrameId {
        FrameId::from_u32(self.frames.intern(frame))
    }

    /// The stack whose innermost frame is `frame`, called from `parent` (`None`: a root).
    pub fn stack(&mut self, parent: Option<StackId>, frame: FrameId) -> StackId {
        StackId::from_u32(self.stacks.intern(StackNode { parent, frame }))
    }

    /// The stack of `frames`, outermost caller first; `None` if there are no frames.
    ///
    /// Whole stacks seen before are found with one lookup, so a reader that adds each sample's
    /// stack this way pays for a stack's nodes once, not once per sample.
    pub fn stack_of(&mut self, frames: &[FrameId]) -> Option<StackId> {
        if let Some(&stack) = self.whole_stacks.get(frames) {
            return Some(stack);
        }
        let stack = frames
            .iter()
            .fold(None, |parent, &frame| Some(self.stack(parent, frame)))?;
        self.whole_stacks.insert(frames.into(), stack);
        Some(stack)
    }

    /// The handle of the set of `labels` (order and repetitions do not matter).
    pub fn label_set(&mut self, labels: &[Label]) -> LabelSetId {
        let mut labels = labels.to_vec();
        labels.sort_unstable();
        labels.dedup();
        LabelSetId::from_u32(self.label_sets.intern(labels.into_boxed_slice()))
    }

    /// The value type `kind`, declared if it is new. Samples already added get 0 for a new
    /// type; samples added afterwards have one value more.
    pub fn value_type(&mut self, kind: ValueKind<'_>) -> ValueTypeId {
        let name = self.string(kind.name);
        let vt = ValueType {
            name,
            unit: kind.unit,
        };
        if let Some(i) = self.value_types.iter().position(|&v| v == vt) {
            return ValueTypeId::from_u32(to_u32(i));
        }
        self.value_types.push(vt);
        self.samples.widen();
        ValueTypeId::from_u32(to_u32(self.value_types.len() - 1))
    }

    /// Says what one sample stands for: `value` of `kind` (pprof's period).
    pub fn set_period(&mut self, period: Period<'_>) {
        let name = self.string(period.kind.name);
        let vt = ValueType {
            name,
            unit: period.kind.unit,
        };
        self.period = Some((vt, period.value));
    }

    /// Adds a sample taken in `stack`, with one value per value type in declaration order.
    ///
    /// Returns an error if `values` does not have one value per value type.
    pub fn add_sample(&mut self, stack: StackId, labels: LabelSetId, values: &[i64]) -> Result<()> {
        self.add_sample_at(stack, labels, values, None)
    }

    /// [`ProfileBuilder::add_sample`] for a sample taken at `time` (nanoseconds), if known.
    ///
    /// Returns an error as [`ProfileBuilder::add_sample`] does.
    pub fn add_sample_at(
        &mut self,
        stack: StackId,
        labels: LabelSetId,
        values: &[i64],
        time: Option<u64>,
    ) -> Result<()> {
        if values.len() != self.value_types.len() {
            return Err(Error::ValueCount {
                expected: self.value_types.len(),
                got: values.len(),
            });
        }
        self.samples.push(stack, labels, values, time);
        Ok(())
    }

    /// Adds a counted arc.
    pub fn add_arc(&mut self, arc: Arc) {
        self.arcs.push(arc);
    }

    /// Adds every sample and arc of `other`, its items interned into this builder (so a
    /// function of both profiles is one function of the result), values multiplied by
    /// `options.factor`. Value types are matched by name and unit; the other's new ones are
    /// declared.
    pub fn add_profile(&mut self, other: &Profile, options: &MergeOptions) {
        let strings: Vec<StringId> = other.strings.iter().map(|s| self.string(s)).collect();
        let objects: Vec<ObjectId> = other
            .objects
            .iter()
            .map(|o| {
                self.object(Object {
                    path: strings[o.path.index()],
                    build_id: o.build_id.clone().filter(|_| !options.symbolic),
                })
            })
            .collect();
        let functions: Vec<FunctionId> = other
            .functions
            .iter()
            .map(|f| {
                self.function(Function {
                    name: strings[f.name.index()],
                    system_name: f.system_name.map(|s| strings[s.index()]),
                    object: f.object.map(|o| objects[o.index()]),
                    side: f.side,
                    label: f.label.map(|s| strings[s.index()]),
                    file: f.file.map(|s| strings[s.index()]),
                    address: f.address.filter(|_| !options.symbolic),
                    entry: f.entry,
                })
            })
            .collect();
        let frames: Vec<FrameId> = other
            .frames
            .iter()
            .map(|f| {
                let function = functions[f.function.index()];
                self.frame(if options.symbolic {
                    Frame::new(function)
                } else {
                    Frame { function, ..*f }
                })
            })
            .collect();
        // Parents come before their children, so each parent is mapped when it is needed.
        let mut stacks: Vec<StackId> = Vec::with_capacity(other.stacks.len());
        for node in &other.stacks {
            let parent = node.parent.map(|p| stacks[p.index()]);
            let stack = self.stack(parent, frames[node.frame.index()]);
            stacks.push(stack);
        }
        let label_sets: Vec<LabelSetId> = other
            .label_sets
            .iter()
            .map(|set| {
                let labels: Vec<Label> = set
                    .iter()
                    .map(|l| Label {
                        key: match l.key {
                            LabelKey::Other(s) => LabelKey::Other(strings[s.index()]),
                            key => key,
                        },
                        value: match l.value {
                            LabelValue::Text(s) => LabelValue::Text(strings[s.index()]),
                            number => number,
                        },
                    })
                    .collect();
                self.label_set(&labels)
            })
            .collect();
        // The column of each of the other's value types here, `None` for one not added.
        let columns: Vec<Option<usize>> = (other.value_types.iter().enumerate())
            .map(|(i, vt)| {
                let chosen = (options.value_types.as_ref())
                    .is_none_or(|keep| keep.iter().any(|k| k.index() == i));
                chosen.then(|| {
                    self.value_type(ValueKind::new(other.string(vt.name), vt.unit))
                        .index()
                })
            })
            .collect();
        let mut row = vec![0; self.value_types.len()];
        for i in 0..other.samples.len() {
            let time = other.samples.time(i);
            if let Some(window) = &options.time_window
                && !time.is_some_and(|t| window.contains(&t))
            {
                continue;
            }
            row.fill(0);
            let mut any = false;
            for (&column, &v) in columns.iter().zip(other.samples.values(i)) {
                if let Some(column) = column {
                    row[column] = v.saturating_mul(options.factor);
                    any |= v != 0;
                }
            }
            if options.value_types.is_some() && !any {
                continue;
            }
            self.samples.push(
                stacks[other.samples.stacks[i].index()],
                label_sets[other.samples.labels[i].index()],
                &row,
                time,
            );
        }
        for arc in other.arcs.iter().filter(|_| options.arcs) {
            self.arcs.push(Arc {
                caller: frames[arc.caller.index()],
                callee: frames[arc.callee.index()],
                count: arc.count.saturating_mul(options.factor),
            });
        }
        if self.period.is_none()
            && let Some((vt, value)) = other.period
        {
            let name = strings[vt.name.index()];
            self.period = Some((ValueType { name, ..vt }, value));
        }
    }

    /// Sums samples with the same stack and labels into one, and arcs with the same ends into
    /// one. Times are dropped: an aggregated sample stands for many moments.
    pub fn aggregate(&mut self) {
        let old = std::mem::take(&mut self.samples);
        let mut table = SampleTable {
            width: old.width,
            ..SampleTable::default()
        };
        let mut rows: FxHashMap<(StackId, LabelSetId), usize> = FxHashMap::default();
        for i in 0..old.len() {
            let key = (old.stacks[i], old.labels[i]);
            let values = old.values(i);
            match rows.get(&key) {
                Some(&row) => {
                    let start = row * table.width;
                    for (sum, &v) in table.values[start..start + table.width]
                        .iter_mut()
                        .zip(values)
                    {
                        *sum = sum.saturating_add(v);
                    }
                }
                None => {
                    rows.insert(key, table.len());
                    table.push(key.0, key.1, values, None);
                }
            }
        }
        self.samples = table;
        let mut arcs: FxHashMap<(FrameId, FrameId), usize> = FxHashMap::default();
        let mut merged: Vec<Arc> = Vec::new();
        for arc in self.arcs.drain(..) {
            match arcs.get(&(arc.caller, arc.callee)) {
                Some(&i) => merged[i].count = merged[i].count.saturating_add(arc.count),
                None => {
                    arcs.insert((arc.caller, arc.callee), merged.len());
                    merged.push(arc);
                }
            }
        }
        self.arcs = merged;
    }

    /// Drops every sample, keeping everything interned and every arc, so that a transformation
    /// that rewrites the samples (stacks reconstructed from arcs, say) can start from a
    /// profile's builder and keep its handles.
    pub fn clear_samples(&mut self) {
        let width = self.samples.width;
        self.samples = SampleTable {
            width,
            ..SampleTable::default()
        };
    }

    /// The samples added so far.
    pub fn sample_count(&self) -> usize {
        self.samples.len()
    }

    /// The profile built.
    pub fn build(self) -> Profile {
        Profile {
            strings: self.strings.items,
            objects: self.objects.items,
            functions: self.functions.items,
            frames: self.frames.items,
            stacks: self.stacks.items,
            value_types: self.value_types,
            label_sets: self.label_sets.items,
            samples: self.samples,
            arcs: self.arcs,
            period: self.period,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{frame, stack};
    use crate::{Side, Unit};

    #[test]
    fn equal_items_get_one_handle() {
        let mut b = ProfileBuilder::new();
        assert_eq!(b.string("read"), b.string("read"));
        assert_ne!(b.string("read"), b.string("write"));
        let libc = b.string("/lib/libc.so.6");
        let o1 = b.object(Object::new(libc).with_build_id(&[1, 2]));
        let o2 = b.object(Object::new(libc).with_build_id(&[1, 2]));
        let o3 = b.object(Object::new(libc));
        assert_eq!(o1, o2);
        assert_ne!(o1, o3);
        let read = b.string("read");
        let user = b.function(Function::new(read, Side::User).with_object(o1));
        let kernel = b.function(Function::new(read, Side::Kernel));
        let label = b.string("137u");
        let labelled = b.function(
            Function::new(read, Side::User)
                .with_object(o1)
                .with_label(label),
        );
        assert_eq!(
            user,
            b.function(Function::new(read, Side::User).with_object(o1))
        );
        assert_ne!(user, kernel);
        assert_ne!(user, labelled);
        let at = b.frame(Frame::new(user).with_address(0x1234));
        assert_eq!(at, b.frame(Frame::new(user).with_address(0x1234)));
        assert_ne!(at, b.frame(Frame::new(user)));
        assert_eq!(stack(&mut b, &["main", "f"]), stack(&mut b, &["main", "f"]));
        assert_ne!(stack(&mut b, &["main", "f"]), stack(&mut b, &["f"]));
    }

    #[test]
    fn label_sets_ignore_order_and_repetition() {
        let mut b = ProfileBuilder::new();
        let comm = b.string("cat");
        let a = b.label_set(&[
            Label::number(LabelKey::Pid, 7),
            Label::text(LabelKey::Comm, comm),
        ]);
        let c = b.label_set(&[
            Label::text(LabelKey::Comm, comm),
            Label::number(LabelKey::Pid, 7),
            Label::number(LabelKey::Pid, 7),
        ]);
        assert_eq!(a, c);
        assert_eq!(b.label_set(&[]), LabelSetId::EMPTY);
        let p = b.build();
        assert_eq!(p.labels(a).len(), 2);
        let sets: Vec<(LabelSetId, usize)> = p.label_sets().map(|(id, l)| (id, l.len())).collect();
        assert_eq!(sets, [(LabelSetId::EMPTY, 0), (a, 2)]);
        assert_eq!(p.labels(a)[0], Label::number(LabelKey::Pid, 7));
        assert_eq!(p.label_key_name(LabelKey::Comm), "comm");
    }

    #[test]
    fn a_sample_needs_one_value_per_type() {
        let mut b = ProfileBuilder::new();
        b.value_type(ValueKind::SAMPLES);
        let s = stack(&mut b, &["main"]);
        let err = b.add_sample(s, LabelSetId::EMPTY, &[1, 2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a sample has 2 values but the profile has 1 value types"
        );
        assert_eq!(b.sample_count(), 0);
    }

    #[test]
    fn a_late_value_type_gives_earlier_samples_zero() {
        let mut b = ProfileBuilder::new();
        let samples = b.value_type(ValueKind::SAMPLES);
        let s = stack(&mut b, &["main"]);
        b.add_sample(s, LabelSetId::EMPTY, &[5]).unwrap();
        let wait = b.value_type(ValueKind::OFF_CPU_TIME);
        assert_eq!(b.value_type(ValueKind::SAMPLES), samples);
        b.add_sample(s, LabelSetId::EMPTY, &[1, 900]).unwrap();
        let p = b.build();
        let values: Vec<&[i64]> = p.samples().map(|s| s.values).collect();
        assert_eq!(values, [&[5, 0][..], &[1, 900][..]]);
        assert_eq!((p.total(samples), p.total(wait)), (6, 900));
        assert_eq!(
            p.value_type(wait),
            ValueKind::new("off-cpu", Unit::Nanoseconds)
        );
        assert_eq!(p.find_value_type(ValueKind::OFF_CPU_TIME), Some(wait));
        assert_eq!(p.find_value_type(ValueKind::LATENCY), None);
    }

    #[test]
    fn times_are_kept_where_given() {
        let mut b = ProfileBuilder::new();
        b.value_type(ValueKind::SAMPLES);
        let s = stack(&mut b, &["main"]);
        b.add_sample(s, LabelSetId::EMPTY, &[1]).unwrap();
        b.add_sample_at(s, LabelSetId::EMPTY, &[1], Some(50))
            .unwrap();
        b.add_sample(s, LabelSetId::EMPTY, &[1]).unwrap();
        let p = b.build();
        let times: Vec<Option<u64>> = p.samples().map(|s| s.time).collect();
        assert_eq!(times, [None, Some(50), None]);
    }

    #[test]
    fn aggregate_sums_equal_stacks_and_labels() {
        let mut b = ProfileBuilder::new();
        b.value_type(ValueKind::SAMPLES);
        b.value_type(ValueKind::CPU_TIME);
        let s = stack(&mut b, &["main", "f"]);
        let t = stack(&mut b, &["main", "g"]);
        let pid1 = b.label_set(&[Label::number(LabelKey::Pid, 1)]);
        let pid2 = b.label_set(&[Label::number(LabelKey::Pid, 2)]);
        for (stack, labels, time) in [(s, pid1, 1), (t, pid1, 2), (s, pid1, 3), (s, pid2, 4)] {
            b.add_sample_at(stack, labels, &[1, 10], Some(time))
                .unwrap();
        }
        let (main, f) = (frame(&mut b, "main"), frame(&mut b, "f"));
        b.add_arc(Arc::new(main, f, 2));
        b.add_arc(Arc::new(main, f, 3));
        b.aggregate();
        let p = b.build();
        let rows: Vec<(StackId, LabelSetId, Vec<i64>, Option<u64>)> = p
            .samples()
            .map(|x| (x.stack, x.labels, x.values.to_vec(), x.time))
            .collect();
        assert_eq!(
            rows,
            [
                (s, pid1, vec![2, 20], None),
                (t, pid1, vec![1, 10], None),
                (s, pid2, vec![1, 10], None)
            ]
        );
        assert_eq!(p.arcs(), [Arc::new(main, f, 5)]);
    }

    #[test]
    fn cleared_samples_keep_tables_and_arcs() {
        let mut b = ProfileBuilder::new();
        let samples = b.value_type(ValueKind::SAMPLES);
        let s = stack(&mut b, &["main", "f"]);
        b.add_sample_at(s, LabelSetId::EMPTY, &[3], Some(1))
            .unwrap();
        let (main, f) = (frame(&mut b, "main"), frame(&mut b, "f"));
        b.add_arc(Arc::new(main, f, 2));
        let mut b = ProfileBuilder::from_profile(b.build());
        b.clear_samples();
        b.add_sample(s, LabelSetId::EMPTY, &[4]).unwrap();
        let p = b.build();
        assert_eq!((p.sample_count(), p.total(samples)), (1, 4));
        assert_eq!(p.samples().next().unwrap().time, None);
        assert_eq!((p.arcs().len(), p.functions().len()), (1, 2));
    }

    /// A profile of `main → work` and `main → work → read` built in the given order, with
    /// frames at `base + offset` in an object with `build_id`.
    fn build(order_reversed: bool, base: u64, build_id: u8) -> Profile {
        let mut b = ProfileBuilder::new();
        let cpu = b.value_type(ValueKind::CPU_TIME);
        let path = b.string("/bin/prog");
        let prog = b.object(Object::new(path).with_build_id(&[build_id]));
        let mut names = [(0, "main"), (1, "work"), (2, "read")];
        if order_reversed {
            names.reverse();
        }
        let mut frames = FxHashMap::default();
        for (offset, name) in names {
            let name_id = b.string(name);
            let f = b.function(Function::new(name_id, Side::User).with_object(prog));
            frames.insert(name, b.frame(Frame::new(f).with_address(base + offset)));
        }
        let work = b.stack_of(&[frames["main"], frames["work"]]).unwrap();
        let read = b.stack(Some(work), frames["read"]);
        b.add_sample_at(work, LabelSetId::EMPTY, &[2], Some(100))
            .unwrap();
        b.add_sample_at(read, LabelSetId::EMPTY, &[3], Some(200))
            .unwrap();
        b.add_arc(Arc::new(frames["main"], frames["work"], 1));
        b.set_period(Period {
            kind: ValueKind::CPU_TIME,
            value: 1_000_000,
        });
        assert_eq!(b.value_type(ValueKind::CPU_TIME), cpu);
        b.build()
    }

    fn inclusive_by_name(p: &Profile) -> Vec<(String, i64)> {
        let cpu = p.find_value_type(ValueKind::CPU_TIME).unwrap();
        let totals = p.function_totals(cpu);
        let mut rows: Vec<(String, i64)> = p
            .functions()
            .map(|(f, _)| (p.function_name(f).to_owned(), totals.inclusive(f)))
            .collect();
        rows.sort();
        rows
    }

    #[test]
    fn sums_match_functions_by_identity() {
        let (a, b) = (build(false, 0x1000, 1), build(true, 0x1000, 1));
        let sum = Profile::sum([&a, &b]);
        assert_eq!(sum.functions().len(), 3);
        assert_eq!(sum.sample_count(), 4);
        assert_eq!(
            inclusive_by_name(&sum),
            [("main".into(), 10), ("read".into(), 6), ("work".into(), 10)]
        );
        let arcs: Vec<i64> = {
            let mut builder = ProfileBuilder::from_profile(sum);
            builder.aggregate();
            builder.build().arcs().iter().map(|a| a.count).collect()
        };
        assert_eq!(arcs, [2]);
    }

    #[test]
    fn a_difference_of_equal_profiles_is_zero() {
        let a = build(false, 0x1000, 1);
        let mut diff = ProfileBuilder::new();
        diff.add_profile(&a, &MergeOptions::default());
        diff.add_profile(
            &build(true, 0x1000, 1),
            &MergeOptions {
                factor: -1,
                ..MergeOptions::default()
            },
        );
        diff.aggregate();
        let diff = diff.build();
        assert!(inclusive_by_name(&diff).iter().all(|(_, v)| *v == 0));
        assert_eq!(diff.period().map(|p| p.value), Some(1_000_000));
    }

    #[test]
    fn symbolic_merges_match_other_builds() {
        let (a, b) = (build(false, 0x1000, 1), build(false, 0x2000, 2));
        assert_eq!(Profile::sum([&a, &b]).functions().len(), 6);
        let mut builder = ProfileBuilder::new();
        let symbolic = MergeOptions {
            symbolic: true,
            ..MergeOptions::default()
        };
        builder.add_profile(&a, &symbolic);
        builder.add_profile(&b, &symbolic);
        let p = builder.build();
        assert_eq!(
            (p.functions().len(), p.frames().len(), p.objects().len()),
            (3, 3, 1)
        );
        assert!(p.frames().all(|(_, f)| f.address.is_none()));
    }

    #[test]
    fn chosen_value_types_and_no_arcs() {
        let mut b = ProfileBuilder::new();
        let samples = b.value_type(ValueKind::SAMPLES);
        let other = b.value_type(ValueKind::new("histogram", crate::Unit::Count));
        let name = b.string("f");
        let f = b.function(Function::new(name, crate::Side::User).at(0x10, true));
        let frame = b.frame(Frame::new(f));
        let stack = b.stack(None, frame);
        b.add_sample(stack, LabelSetId::EMPTY, &[3, 0]).unwrap();
        b.add_sample(stack, LabelSetId::EMPTY, &[0, 5]).unwrap();
        b.add_arc(Arc::new(frame, frame, 1));
        let p = b.build();
        let mut out = ProfileBuilder::new();
        out.add_profile(
            &p,
            &MergeOptions {
                value_types: Some(vec![samples]),
                arcs: false,
                ..MergeOptions::default()
            },
        );
        let q = out.build();
        assert_eq!(q.value_types().len(), 1);
        let values: Vec<&[i64]> = q.samples().map(|s| s.values).collect();
        assert_eq!(values, [&[3][..]]);
        assert!(q.arcs().is_empty());
        let (_, function) = q.functions().next().unwrap();
        assert_eq!((function.address, function.entry), (Some(0x10), true));
        // Everything, as before, without a choice.
        let mut all = ProfileBuilder::new();
        all.add_profile(&p, &MergeOptions::default());
        let all = all.build();
        assert_eq!((all.sample_count(), all.arcs().len()), (2, 1));
        assert_eq!(all.total(other), 5);
    }

    #[test]
    fn a_time_window_keeps_its_samples() {
        let a = build(false, 0x1000, 1);
        let mut builder = ProfileBuilder::new();
        builder.add_profile(
            &a,
            &MergeOptions {
                time_window: Some(150..250),
                ..MergeOptions::default()
            },
        );
        let p = builder.build();
        let times: Vec<Option<u64>> = p.samples().map(|s| s.time).collect();
        assert_eq!(times, [Some(200)]);
    }
}
