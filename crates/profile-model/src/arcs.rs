//! Arcs: counted caller → callee edges, what mcount-instrumented programs record instead of
//! stacks.

use crate::FrameId;

/// A counted call edge: `caller` (the call site) called `callee` (the entry) `count` times.
///
/// gmon.out holds arcs, not stacks: each one says that a call site in one function called
/// another function so many times, with no context above the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Arc {
    /// The call site: the caller's function at the return address, when known.
    pub caller: FrameId,
    /// The function called, at its entry when known.
    pub callee: FrameId,
    /// How many times (negative in a difference of two profiles).
    pub count: i64,
}

impl Arc {
    /// `caller` called `callee` `count` times.
    pub fn new(caller: FrameId, callee: FrameId, count: i64) -> Self {
        Arc {
            caller,
            callee,
            count,
        }
    }
}
