//! Small builders for the unit tests.

use crate::{FrameId, Function, ProfileBuilder, Side, StackId};

/// The frame of a user function called `name` (no object, address or line).
pub(crate) fn frame(b: &mut ProfileBuilder, name: &str) -> FrameId {
    let name = b.string(name);
    let f = b.function(Function::new(name, Side::User));
    b.frame(crate::Frame::new(f))
}

/// The stack of the functions `names`, outermost first.
pub(crate) fn stack(b: &mut ProfileBuilder, names: &[&str]) -> StackId {
    let frames: Vec<FrameId> = names.iter().map(|n| frame(b, n)).collect();
    b.stack_of(&frames).expect("at least one name")
}
