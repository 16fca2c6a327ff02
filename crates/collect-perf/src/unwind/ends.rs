//! Why each user stack ends where it does, the counts of those reasons, and the stacks of a
//! whole recording.

use std::ops::Range;

/// Why a user stack ends where it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StackEnd {
    /// The outermost frame (`_start`, a thread's `clone3`) was reached: nothing is missing.
    Complete,
    /// The user stack copy ended before the outermost frame and no frame-pointer chain went
    /// on from it: a larger copy (`Config::user_stack_bytes`) would show more, unless the
    /// copy stopped at a stack page not yet touched ([`UnwindStats::untouched_page`]).
    StackCopy,
    /// The kernel's callchain stopped at its depth limit (`sample_max_stack`), or the stack
    /// is deeper than the most frames kept.
    CallchainLimit,
    /// A frame could be unwound neither from unwind information nor by its frame pointer
    /// (code without `.eh_frame` built without frame pointers, or a damaged stack).
    UnwindInfo,
}

impl StackEnd {
    /// The reasons a stack can be incomplete, in the order the info file lists them.
    pub const TRUNCATED: [StackEnd; 3] = [
        StackEnd::StackCopy,
        StackEnd::CallchainLimit,
        StackEnd::UnwindInfo,
    ];

    /// Whether outer frames may be missing.
    pub fn is_truncated(self) -> bool {
        self != StackEnd::Complete
    }

    /// Its name in the info file and messages: `stack-copy`, `callchain-limit`,
    /// `unwind-info` (`complete` for a whole stack).
    pub fn as_str(self) -> &'static str {
        match self {
            StackEnd::Complete => "complete",
            StackEnd::StackCopy => "stack-copy",
            StackEnd::CallchainLimit => "callchain-limit",
            StackEnd::UnwindInfo => "unwind-info",
        }
    }
}

/// Counts of how user stacks were obtained and why they end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnwindStats {
    /// Samples with a user context (user registers and a user callchain).
    pub user_samples: u64,
    /// Samples whose stack reached the outermost frame.
    pub complete: u64,
    /// Samples whose stack ended with the stack copy ([`StackEnd::StackCopy`]).
    pub stack_copy: u64,
    /// Of those, the copies that stopped short of their size and of the stack's end, at a
    /// page of the stack not yet touched (a large buffer never filled, or a frame just grown
    /// into a new page): the kernel copies only pages in memory, and no larger copy goes
    /// further.
    pub untouched_page: u64,
    /// Samples whose stack ended at the callchain limit ([`StackEnd::CallchainLimit`]).
    pub callchain_limit: u64,
    /// Samples whose stack ended at a frame that could not be unwound
    /// ([`StackEnd::UnwindInfo`]).
    pub unwind_info: u64,
    /// Samples whose CFI unwinding of the copy met the frame-pointer chain, whose rest was
    /// appended.
    pub joined: u64,
    /// Samples whose outer frames came from an earlier complete stack of the same thread.
    pub completed_from_thread: u64,
    /// Samples without a stack copy, or whose copy gave less than the frame-pointer chain,
    /// which keep the frame-pointer chain alone.
    pub frame_pointers_only: u64,
    /// Samples whose frame-pointer chain stopped at a frame inside the copy and went on
    /// from it by unwind information (a frameless caller of code without unwind tables).
    pub fp_then_cfi: u64,
    /// Samples whose user ip lies in no known mapping (the launcher's code as a launched
    /// command's exec begins): they keep no user stack.
    pub unmapped_ip: u64,
}

impl UnwindStats {
    /// Samples whose user stack may lack outer frames, whatever the reason.
    pub fn truncated(&self) -> u64 {
        self.stack_copy + self.callchain_limit + self.unwind_info
    }

    pub(super) fn count(&mut self, end: StackEnd) {
        *match end {
            StackEnd::Complete => &mut self.complete,
            StackEnd::StackCopy => &mut self.stack_copy,
            StackEnd::CallchainLimit => &mut self.callchain_limit,
            StackEnd::UnwindInfo => &mut self.unwind_info,
        } += 1;
    }
}

/// Each sample's user stack, innermost first: the user ip, then return addresses.
#[derive(Debug, Clone, Default)]
pub struct UserStacks {
    pub(super) frames: Vec<u64>,
    pub(super) ranges: Vec<Range<u32>>,
    pub(super) ends: Vec<Option<StackEnd>>,
    /// How the stacks were obtained.
    pub stats: UnwindStats,
}

impl UserStacks {
    /// The user stack of sample `i` (an index into [`Recording::samples`](crate::Recording::samples)); empty for samples
    /// without a user context, such as those of kernel threads.
    pub fn frames(&self, i: usize) -> &[u64] {
        self.ranges
            .get(i)
            .map_or(&[], |r| &self.frames[r.start as usize..r.end as usize])
    }

    /// Why the user stack of sample `i` ends where it does (None without a user stack).
    pub fn end(&self, i: usize) -> Option<StackEnd> {
        self.ends.get(i).copied().flatten()
    }

    /// Whether the user stack of sample `i` may lack outer frames.
    pub fn truncated(&self, i: usize) -> bool {
        self.end(i).is_some_and(StackEnd::is_truncated)
    }
}
