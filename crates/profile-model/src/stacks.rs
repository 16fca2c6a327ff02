//! The stack table: every call stack of a profile as a node (parent, frame), shared prefixes
//! stored once.

use crate::FrameId;

handle!(
    /// A call stack of a profile: a [`StackNode`] and, through its parents, every frame down
    /// to the outermost caller.
    StackId
);

/// One entry of the stack table: the innermost frame of a stack and the stack of its caller.
///
/// A stack's parent is always created before it, so a node's handle is greater than its
/// parent's; walking the table backwards visits every node before its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StackNode {
    /// The stack of the caller; `None` for an outermost frame (a root).
    pub parent: Option<StackId>,
    /// The innermost frame.
    pub frame: FrameId,
}
