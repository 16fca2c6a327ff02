//! A built profile: read-only tables and the questions every listing, export and diff asks.

use crate::samples::SampleTable;
use crate::values::ValueType;
use crate::{
    Arc, CallGraph, Frame, FrameId, Function, FunctionId, FunctionTotals, Label, LabelKey,
    LabelSetId, MergeOptions, Object, ObjectId, Period, ProfileBuilder, Sample, StackId, StackNode,
    StringId, ValueKind, ValueTypeId, intern::to_u32,
};

/// A profile: what ran (objects, functions, frames, stacks), what was measured (samples with
/// typed values and labels; arcs) and what one sample stands for.
///
/// Built by a [`ProfileBuilder`]; read through the handles it returned or by walking the
/// tables, which list items in the order they were first added.
#[derive(Debug, Clone)]
pub struct Profile {
    pub(crate) strings: Vec<Box<str>>,
    pub(crate) objects: Vec<Object>,
    pub(crate) functions: Vec<Function>,
    pub(crate) frames: Vec<Frame>,
    pub(crate) stacks: Vec<StackNode>,
    pub(crate) value_types: Vec<ValueType>,
    pub(crate) label_sets: Vec<Box<[Label]>>,
    pub(crate) samples: SampleTable,
    pub(crate) arcs: Vec<Arc>,
    pub(crate) period: Option<(ValueType, i64)>,
}

impl Default for Profile {
    fn default() -> Self {
        ProfileBuilder::new().build()
    }
}

/// The handles of a table of `len` items, in order.
fn handles<H>(len: usize, make: fn(u32) -> H) -> impl ExactSizeIterator<Item = H> {
    (0..to_u32(len)).map(make)
}

impl Profile {
    /// The sum of `profiles`: every sample and arc of each, functions matched by identity.
    pub fn sum<'a>(profiles: impl IntoIterator<Item = &'a Profile>) -> Profile {
        let mut builder = ProfileBuilder::new();
        for p in profiles {
            builder.add_profile(p, &MergeOptions::default());
        }
        builder.build()
    }

    /// The text of `id`.
    pub fn string(&self, id: StringId) -> &str {
        &self.strings[id.index()]
    }

    /// Every object, in the order they were added.
    pub fn objects(&self) -> impl ExactSizeIterator<Item = (ObjectId, &Object)> {
        handles(self.objects.len(), ObjectId::from_u32).zip(&self.objects)
    }

    /// The object `id`.
    pub fn object(&self, id: ObjectId) -> &Object {
        &self.objects[id.index()]
    }

    /// Every function, in the order they were added.
    pub fn functions(&self) -> impl ExactSizeIterator<Item = (FunctionId, &Function)> {
        handles(self.functions.len(), FunctionId::from_u32).zip(&self.functions)
    }

    /// The function `id`.
    pub fn function(&self, id: FunctionId) -> &Function {
        &self.functions[id.index()]
    }

    /// The name of function `id`.
    pub fn function_name(&self, id: FunctionId) -> &str {
        self.string(self.function(id).name)
    }

    /// Every frame, in the order they were added.
    pub fn frames(&self) -> impl ExactSizeIterator<Item = (FrameId, &Frame)> {
        handles(self.frames.len(), FrameId::from_u32).zip(&self.frames)
    }

    /// The frame `id`.
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id.index()]
    }

    /// Every stack node, parents before their children.
    pub fn stacks(&self) -> impl ExactSizeIterator<Item = (StackId, StackNode)> {
        handles(self.stacks.len(), StackId::from_u32).zip(self.stacks.iter().copied())
    }

    /// The node of stack `id`: its innermost frame and its caller's stack.
    pub fn stack(&self, id: StackId) -> StackNode {
        self.stacks[id.index()]
    }

    /// The frames of stack `id`, innermost first.
    pub fn stack_frames(&self, id: StackId) -> impl Iterator<Item = FrameId> + '_ {
        std::iter::successors(Some(self.stack(id)), |node| {
            node.parent.map(|p| self.stack(p))
        })
        .map(|node| node.frame)
    }

    /// The function of stack `id`'s innermost frame.
    pub fn stack_function(&self, id: StackId) -> FunctionId {
        self.frame(self.stack(id).frame).function
    }

    /// Every value type, in the order of each sample's values.
    pub fn value_types(&self) -> impl ExactSizeIterator<Item = (ValueTypeId, ValueKind<'_>)> {
        handles(self.value_types.len(), ValueTypeId::from_u32).map(|id| (id, self.value_type(id)))
    }

    /// The name and unit of value type `id`.
    pub fn value_type(&self, id: ValueTypeId) -> ValueKind<'_> {
        let vt = self.value_types[id.index()];
        ValueKind::new(self.string(vt.name), vt.unit)
    }

    /// The value type of this name and unit, if the profile has it.
    pub fn find_value_type(&self, kind: ValueKind<'_>) -> Option<ValueTypeId> {
        self.value_types()
            .find(|&(_, k)| k == kind)
            .map(|(id, _)| id)
    }

    /// What one sample stands for, if the reader knew.
    pub fn period(&self) -> Option<Period<'_>> {
        self.period.map(|(vt, value)| Period {
            kind: ValueKind::new(self.string(vt.name), vt.unit),
            value,
        })
    }

    /// Every label set, the empty set first, in the order they were added.
    pub fn label_sets(&self) -> impl ExactSizeIterator<Item = (LabelSetId, &[Label])> {
        handles(self.label_sets.len(), LabelSetId::from_u32)
            .zip(self.label_sets.iter().map(|s| &s[..]))
    }

    /// The labels of set `id`, sorted by key.
    pub fn labels(&self, id: LabelSetId) -> &[Label] {
        &self.label_sets[id.index()]
    }

    /// The name of a label key (its string for [`LabelKey::Other`]).
    pub fn label_key_name(&self, key: LabelKey) -> &str {
        match key {
            LabelKey::Other(s) => self.string(s),
            known => known.known_name().unwrap_or_default(),
        }
    }

    /// Every sample, in the order they were added.
    pub fn samples(&self) -> impl ExactSizeIterator<Item = Sample<'_>> {
        (0..self.samples.len()).map(|i| self.samples.get(i))
    }

    /// How many samples there are.
    pub fn sample_count(&self) -> usize {
        self.samples.len()
    }

    /// Every arc, in the order they were added.
    pub fn arcs(&self) -> &[Arc] {
        &self.arcs
    }

    /// The sum of every sample's value of type `vt`.
    pub fn total(&self, vt: ValueTypeId) -> i64 {
        let (column, width) = (vt.index(), self.samples.width);
        self.samples
            .values
            .iter()
            .skip(column)
            .step_by(width.max(1))
            .fold(0i64, |sum, &v| sum.saturating_add(v))
    }

    /// Self and inclusive values of type `vt` for every function (see [`FunctionTotals`]).
    pub fn function_totals(&self, vt: ValueTypeId) -> FunctionTotals {
        FunctionTotals::new(self, vt)
    }

    /// The caller/callee graph of the functions: arcs' counts and, with `vt`, the stacks'
    /// values of that type on each edge (see [`CallGraph`]).
    pub fn call_graph(&self, vt: Option<ValueTypeId>) -> CallGraph {
        CallGraph::new(self, vt)
    }

    /// The value of type `vt` of the samples whose innermost frame is each stack node,
    /// indexed like [`Profile::stacks`].
    pub(crate) fn leaf_values(&self, vt: ValueTypeId) -> Vec<i64> {
        let mut leaf = vec![0i64; self.stacks.len()];
        let width = self.samples.width;
        for (i, stack) in self.samples.stacks.iter().enumerate() {
            let v = self.samples.values[i * width + vt.index()];
            let slot = &mut leaf[stack.index()];
            *slot = slot.saturating_add(v);
        }
        leaf
    }
}
