//! Samples: a stack, one value per value type, a label set and maybe a time each, stored as
//! columns so that a million of them take a few dozen megabytes.

use crate::{LabelSetId, StackId};

/// A sample as [`Profile::samples`](crate::Profile::samples) yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sample<'a> {
    /// Where it was taken: the innermost frame and its callers.
    pub stack: StackId,
    /// Whose it is.
    pub labels: LabelSetId,
    /// One value per value type, in the order of
    /// [`Profile::value_types`](crate::Profile::value_types).
    pub values: &'a [i64],
    /// When it was taken, in nanoseconds on the recording's clock, if the reader knew.
    pub time: Option<u64>,
}

/// The sample columns of a builder or profile.
#[derive(Debug, Clone, Default)]
pub(crate) struct SampleTable {
    pub(crate) stacks: Vec<StackId>,
    pub(crate) labels: Vec<LabelSetId>,
    /// `width` values per sample, row after row.
    pub(crate) values: Vec<i64>,
    /// Values per sample: the number of value types.
    pub(crate) width: usize,
    /// One time per sample ([`NO_TIME`] where there is none), or `None` when no sample has one.
    pub(crate) times: Option<Vec<u64>>,
}

/// The stored time of a sample that has none.
const NO_TIME: u64 = u64::MAX;

impl SampleTable {
    pub(crate) fn len(&self) -> usize {
        self.stacks.len()
    }

    /// Appends a sample whose `values` has `width` entries.
    pub(crate) fn push(
        &mut self,
        stack: StackId,
        labels: LabelSetId,
        values: &[i64],
        time: Option<u64>,
    ) {
        debug_assert_eq!(values.len(), self.width);
        let n = self.stacks.len();
        self.stacks.push(stack);
        self.labels.push(labels);
        self.values.extend_from_slice(values);
        match (&mut self.times, time) {
            (Some(times), t) => times.push(t.unwrap_or(NO_TIME)),
            (None, Some(t)) => {
                let mut times = vec![NO_TIME; n];
                times.push(t);
                self.times = Some(times);
            }
            (None, None) => {}
        }
    }

    /// The values of sample `i`.
    pub(crate) fn values(&self, i: usize) -> &[i64] {
        &self.values[i * self.width..(i + 1) * self.width]
    }

    pub(crate) fn time(&self, i: usize) -> Option<u64> {
        self.times.as_ref().map(|t| t[i]).filter(|&t| t != NO_TIME)
    }

    pub(crate) fn get(&self, i: usize) -> Sample<'_> {
        Sample {
            stack: self.stacks[i],
            labels: self.labels[i],
            values: self.values(i),
            time: self.time(i),
        }
    }

    /// Adds a value type: every sample gets a 0 for it.
    pub(crate) fn widen(&mut self) {
        let width = self.width + 1;
        if !self.stacks.is_empty() {
            let mut values = Vec::with_capacity(self.stacks.len() * width);
            for i in 0..self.stacks.len() {
                values.extend_from_slice(self.values(i));
                values.push(0);
            }
            self.values = values;
        }
        self.width = width;
    }
}
