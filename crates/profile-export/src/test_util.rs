//! Small profiles for the unit tests.

use profile_model::{
    Arc, Frame, FrameId, Function, LabelSetId, Profile, ProfileBuilder, Side, ValueKind,
};

/// The frame of function `name` (user side, no object).
pub(crate) fn frame(b: &mut ProfileBuilder, name: &str) -> FrameId {
    let name = b.string(name);
    let f = b.function(Function::new(name, Side::User));
    b.frame(Frame::new(f))
}

/// A profile of mcount data: `self_samples` one-frame samples per function (in this order,
/// zero adds no sample) and counted arcs (caller, callee, count).
pub(crate) fn arc_profile(self_samples: &[(&str, i64)], arcs: &[(&str, &str, i64)]) -> Profile {
    let mut b = ProfileBuilder::new();
    b.value_type(ValueKind::SAMPLES);
    for &(name, n) in self_samples {
        let f = frame(&mut b, name);
        if n != 0 {
            let stack = b.stack(None, f);
            b.add_sample(stack, LabelSetId::EMPTY, &[n]).unwrap();
        }
    }
    for &(from, to, n) in arcs {
        let (from, to) = (frame(&mut b, from), frame(&mut b, to));
        b.add_arc(Arc::new(from, to, n));
    }
    b.build()
}

/// A profile of sampled stacks, each `a;b;c` (outermost first) with its count.
pub(crate) fn stack_profile(stacks: &[(&str, i64)]) -> Profile {
    let mut b = ProfileBuilder::new();
    b.value_type(ValueKind::SAMPLES);
    for &(stack, n) in stacks {
        let frames: Vec<FrameId> = stack.split(';').map(|f| frame(&mut b, f)).collect();
        let s = b.stack_of(&frames).unwrap();
        b.add_sample(s, LabelSetId::EMPTY, &[n]).unwrap();
    }
    b.build()
}

/// The folded stacks of the profile's first value type, sorted.
pub(crate) fn by_name(p: &Profile) -> Vec<(String, i64)> {
    let vt = p.value_types().next().unwrap().0;
    crate::folded::collapse(p, vt, false)
}
