//! Per-function totals of a value type: self (samples whose innermost frame is in the
//! function) and inclusive (samples with the function anywhere on their stack).

use crate::{FunctionId, Profile, ValueTypeId};

/// Self and inclusive values of one value type for every function of a profile.
///
/// A function's inclusive value counts each sample once, however many times the function is
/// on the sample's stack (recursion does not inflate it), so it is at most the profile's total.
/// Arcs carry no values and do not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionTotals {
    self_values: Vec<i64>,
    inclusive: Vec<i64>,
}

impl FunctionTotals {
    pub(crate) fn new(profile: &Profile, vt: ValueTypeId) -> Self {
        let n = profile.functions.len();
        let mut totals = FunctionTotals {
            self_values: vec![0; n],
            inclusive: vec![0; n],
        };
        // The stack node a function was last counted for, so that a recursive stack counts
        // it once.
        let mut counted_for = vec![u32::MAX; n];
        for (leaf, value) in profile.leaf_values(vt).into_iter().enumerate() {
            if value == 0 {
                continue;
            }
            let mut node = Some(profile.stacks[leaf]);
            let mut innermost = true;
            while let Some(n) = node {
                let f = profile.frames[n.frame.index()].function.index();
                if innermost {
                    totals.self_values[f] = totals.self_values[f].saturating_add(value);
                    innermost = false;
                }
                if counted_for[f] != leaf as u32 {
                    counted_for[f] = leaf as u32;
                    totals.inclusive[f] = totals.inclusive[f].saturating_add(value);
                }
                node = n.parent.map(|p| profile.stacks[p.index()]);
            }
        }
        totals
    }

    /// The value of the samples taken in `f` itself.
    pub fn self_value(&self, f: FunctionId) -> i64 {
        self.self_values[f.index()]
    }

    /// The value of the samples taken in `f` or in what it called.
    pub fn inclusive(&self, f: FunctionId) -> i64 {
        self.inclusive[f.index()]
    }

    /// (function, self, inclusive) for every function, in the profile's order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (FunctionId, i64, i64)> + '_ {
        self.self_values
            .iter()
            .zip(&self.inclusive)
            .enumerate()
            .map(|(i, (&s, &t))| (FunctionId::from_u32(i as u32), s, t))
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::stack;
    use crate::{LabelSetId, ProfileBuilder, ValueKind};

    #[test]
    fn recursion_counts_each_sample_once() {
        let mut b = ProfileBuilder::new();
        let samples = b.value_type(ValueKind::SAMPLES);
        let deep = stack(&mut b, &["main", "f", "f", "g", "f"]);
        let shallow = stack(&mut b, &["main", "g"]);
        let only_main = stack(&mut b, &["main"]);
        b.add_sample(deep, LabelSetId::EMPTY, &[4]).unwrap();
        b.add_sample(shallow, LabelSetId::EMPTY, &[1]).unwrap();
        b.add_sample(only_main, LabelSetId::EMPTY, &[2]).unwrap();
        b.add_sample(deep, LabelSetId::EMPTY, &[1]).unwrap();
        let p = b.build();
        let rows: Vec<(&str, i64, i64)> = p
            .function_totals(samples)
            .iter()
            .map(|(f, s, t)| (p.function_name(f), s, t))
            .collect();
        assert_eq!(rows, [("main", 2, 8), ("f", 5, 5), ("g", 1, 6)]);
        assert_eq!(p.total(samples), 8);
    }
}
