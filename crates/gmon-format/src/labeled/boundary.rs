//! Boundary kinds: how the kernel part of a sample was entered from user space, and the one
//! rule that tells them apart.
//!
//! Every list of kinds — the stacks file's codes, the info file's `[boundary]` keys, the
//! report header's `kernel entries` line, the collector's counts — is [`BoundaryKind::ALL`]
//! or a method below, all made by one table (`boundary_kinds!` at the end of this file), so
//! a new kind is one new row there and cannot drop out of any of them. Codes are written in
//! stacks files: a new kind takes the next code, and no code is ever reused.
//!
//! The collector classifies each sample's kernel chain with [`BoundaryKind::classify`] when
//! it records; a report that sees only a gmon file's boundary arcs classifies their entry
//! symbol with the same function. No other code decides a boundary kind.

use crate::error::{Error, ErrorKind, Result};

/// How many kernel frames, from the outermost in, [`BoundaryKind::classify`] looks at: entry
/// code sometimes ends in a thunk or a trampoline, so the frame that names the entry may be
/// one or two further in.
pub const ENTRY_FRAMES: usize = 3;

/// Defines [`BoundaryKind`] and every list of its kinds from one table. Each row: the doc, the
/// variant, its code in a stacks file, its key in the info file's `[boundary]` section, the
/// pseudo-functions a listing shows above its kernel frames (for work of a process, and for
/// the residue of no process), and the prefixes and suffixes of the kernel entry symbols
/// that classify as it (checked in the table's order; `Other` takes whatever no other does).
macro_rules! boundary_kinds {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $code:literal, $key:literal,
            pseudo $pseudo:expr, residue $residue:expr,
            prefixes [$($prefix:literal),* $(,)?], suffixes [$($suffix:literal),* $(,)?];
    )*) => {
        /// How the kernel part of a sample's stack was entered from user space.
        ///
        /// The report draws `syscall` and `fault` boundaries as calls from the user function
        /// to the kernel entry; `interrupt` ones are not calls (the interrupted user code did
        /// not ask for them), so their kernel time is shown without a user caller. More kinds
        /// will come (asynchronous work charged to a process), hence `#[non_exhaustive]`:
        /// iterate [`BoundaryKind::ALL`] rather than naming the kinds.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum BoundaryKind {
            $($(#[$doc])* $variant,)*
        }

        impl BoundaryKind {
            /// All kinds, in the order of their codes.
            pub const ALL: [BoundaryKind; [$($code),*].len()] = [$(BoundaryKind::$variant),*];

            /// Its key in the `[boundary]` section of the info file and in the report header:
            /// `syscall`, `fault`, `interrupt`, `other`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(BoundaryKind::$variant => $key,)*
                }
            }

            /// The pseudo-function a listing shows as the parent of this kind's kernel
            /// frames in a process's profile, when they are not drawn as a call from its user
            /// code: `[interrupt]`, `[async net-rx]`; None for `syscall`, `fault`, `other`.
            pub fn pseudo_parent(self) -> Option<&'static str> {
                match self {
                    $(BoundaryKind::$variant => $pseudo,)*
                }
            }

            /// For asynchronous work charged to the process it served, the pseudo-function
            /// above the part no process could be charged (in the system-wide kernel
            /// profile): `[async unattributed net-rx]`. None for the kinds of work a process
            /// entered itself.
            pub fn residue_parent(self) -> Option<&'static str> {
                match self {
                    $(BoundaryKind::$variant => $residue,)*
                }
            }

            /// Its code in a stacks file (1 for the first kind, then one more for each).
            pub fn code(self) -> u8 {
                match self {
                    $(BoundaryKind::$variant => $code,)*
                }
            }

            /// The entry symbols' prefixes and suffixes that classify as this kind.
            fn entry_patterns(self) -> (&'static [&'static str], &'static [&'static str]) {
                match self {
                    $(BoundaryKind::$variant => (&[$($prefix),*], &[$($suffix),*]),)*
                }
            }
        }
    };
}

boundary_kinds! {
    /// A system call: `entry_SYSCALL_64*`, `entry_SYSENTER*`, `entry_INT80*`, `do_syscall_*`.
    Syscall = 1, "syscall", pseudo None, residue None,
        prefixes [
            "entry_SYSCALL",
            "entry_SYSENTER",
            "entry_INT80",
            "do_syscall_",
            "do_fast_syscall_",
            "do_int80_",
            "__do_fast_syscall_",
        ],
        suffixes [];
    /// An exception raised by the user code, such as a page fault: `asm_exc_*`, `exc_*`.
    Fault = 2, "fault", pseudo None, residue None, prefixes ["asm_exc_", "exc_"], suffixes [];
    /// An asynchronous interrupt (timer, IPI, device): `asm_sysvec_*`, `sysvec_*`,
    /// `asm_common_interrupt`, `common_interrupt` and other `*_interrupt` entries.
    Interrupt = 3, "interrupt", pseudo Some("[interrupt]"), residue None,
        prefixes ["asm_sysvec_", "sysvec_"], suffixes ["_interrupt"];
    /// Anything else, such as `ret_from_fork*` (the first run of a new thread).
    Other = 4, "other", pseudo None, residue None, prefixes [], suffixes [];
    /// Network receive work (the `NET_RX` softirq) charged to the process that consumed the
    /// packets, by `pkgmon --async`: a kernel stack cut at the softirq entry
    /// (`handle_softirqs`, `__do_softirq`) or at `net_rx_action`, with no user frames. Only
    /// moved stacks start there: a stack recorded as it ran has its real entry outermost.
    /// (Other softirq kinds will be told apart by the frame inside the entry.)
    AsyncNetRx = 5, "async-net-rx", pseudo Some("[async net-rx]"),
        residue Some("[async unattributed net-rx]"),
        prefixes ["handle_softirqs", "__do_softirq", "net_rx_action"], suffixes [];
    /// A work item run by a kworker, charged to the process that queued it, by `pkgmon
    /// --async=workqueue`: a kernel stack cut at `process_one_work`, with no user frames (a
    /// kworker's stack as it ran starts at `ret_from_fork`, further out).
    AsyncWorkqueue = 6, "async-workqueue", pseudo Some("[async workqueue]"),
        residue Some("[async unattributed workqueue]"),
        prefixes ["process_one_work"], suffixes [];
    /// A timer's callback charged to the process that armed the timer, by `pkgmon
    /// --async=timer`: a kernel stack cut at `call_timer_fn` or `__run_hrtimer` (or
    /// `__hrtimer_run_queues`, where that is inlined), with no user frames (a stack as it ran
    /// starts at an interrupt or softirq entry, further out).
    AsyncTimer = 7, "async-timer", pseudo Some("[async timer]"),
        residue Some("[async unattributed timer]"),
        prefixes ["call_timer_fn", "__run_hrtimer", "__hrtimer_run_queues"], suffixes [];
    /// Block I/O completion (the `BLOCK` softirq) charged to the processes whose requests it
    /// completed, by `pkgmon --async=block`: a kernel stack cut at `blk_done_softirq` (not at
    /// the softirq entry, so that it is told from network receive), with no user frames.
    AsyncBlock = 8, "async-block", pseudo Some("[async block]"),
        residue Some("[async unattributed block]"),
        prefixes ["blk_done_softirq"], suffixes [];
}

impl BoundaryKind {
    /// Classifies a sample's kernel chain by the names of its outermost frames, outermost
    /// first (`None` for a frame without a symbol): the first of the [`ENTRY_FRAMES`]
    /// outermost frames whose name is an entry of a kind other than [`BoundaryKind::Other`]
    /// gives the kind; `Other` if none is.
    ///
    /// This is the rule: the collector applies it when it records, and a report applies it to
    /// a boundary arc's entry symbol (the only frame a gmon file keeps).
    ///
    /// ```
    /// use gmon_format::BoundaryKind;
    /// assert_eq!(BoundaryKind::classify([Some("entry_SYSCALL_64_after_hwframe")]), BoundaryKind::Syscall);
    /// // A thunk at the outermost place: the frame inside it names the entry.
    /// assert_eq!(
    ///     BoundaryKind::classify([Some("__x86_indirect_thunk_rax"), None, Some("asm_exc_page_fault")]),
    ///     BoundaryKind::Fault
    /// );
    /// assert_eq!(BoundaryKind::classify([Some("ret_from_fork_asm")]), BoundaryKind::Other);
    /// ```
    pub fn classify<'a>(outermost_first: impl IntoIterator<Item = Option<&'a str>>) -> Self {
        outermost_first
            .into_iter()
            .take(ENTRY_FRAMES)
            .flatten()
            .map(BoundaryKind::from_entry_symbol)
            .find(|&k| k != BoundaryKind::Other)
            .unwrap_or(BoundaryKind::Other)
    }

    /// Whether it is asynchronous work charged to the process it served (it has a residue
    /// pseudo-function), rather than a way a process entered the kernel itself.
    pub fn is_asynchronous(self) -> bool {
        self.residue_parent().is_some()
    }

    /// Classifies one kernel entry symbol by the table of prefixes and suffixes (see each
    /// kind's doc); [`BoundaryKind::Other`] when no kind claims it.
    ///
    /// ```
    /// use gmon_format::BoundaryKind;
    /// assert_eq!(BoundaryKind::from_entry_symbol("entry_SYSCALL_64_after_hwframe"), BoundaryKind::Syscall);
    /// assert_eq!(BoundaryKind::from_entry_symbol("asm_exc_page_fault"), BoundaryKind::Fault);
    /// assert_eq!(BoundaryKind::from_entry_symbol("asm_sysvec_apic_timer_interrupt"), BoundaryKind::Interrupt);
    /// assert_eq!(BoundaryKind::from_entry_symbol("ret_from_fork_asm"), BoundaryKind::Other);
    /// ```
    pub fn from_entry_symbol(name: &str) -> Self {
        BoundaryKind::ALL
            .into_iter()
            .find(|k| {
                let (prefixes, suffixes) = k.entry_patterns();
                prefixes.iter().any(|p| name.starts_with(p))
                    || suffixes.iter().any(|s| name.ends_with(s))
            })
            .unwrap_or(BoundaryKind::Other)
    }

    /// The kind whose `[boundary]` key is `key`.
    pub fn from_key(key: &str) -> Option<Self> {
        BoundaryKind::ALL.into_iter().find(|k| k.as_str() == key)
    }

    /// The kind of a stacks-file code, None for 0 (no boundary). Returns an error, at
    /// `offset`, for a code no kind has: a file from a newer collector with a kind this
    /// reader does not know is refused, never read with that kind's samples misplaced.
    pub(crate) fn from_code(code: u8, offset: u64) -> Result<Option<Self>> {
        if code == 0 {
            return Ok(None);
        }
        match BoundaryKind::ALL.into_iter().find(|k| k.code() == code) {
            Some(k) => Ok(Some(k)),
            None => Err(Error::at(
                offset,
                ErrorKind::InvalidStacks(format!(
                    "unknown boundary kind {code} (a kind added after this reader; \
                     read the measurement with a newer pkgprof)"
                )),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_symbols() {
        for (name, kind) in [
            ("entry_SYSCALL_64_after_hwframe", BoundaryKind::Syscall),
            ("entry_SYSCALL_64", BoundaryKind::Syscall),
            ("entry_SYSENTER_compat", BoundaryKind::Syscall),
            ("entry_INT80_compat", BoundaryKind::Syscall),
            ("do_syscall_64", BoundaryKind::Syscall),
            ("asm_exc_page_fault", BoundaryKind::Fault),
            ("exc_page_fault", BoundaryKind::Fault),
            ("asm_exc_int3", BoundaryKind::Fault),
            ("asm_sysvec_apic_timer_interrupt", BoundaryKind::Interrupt),
            ("sysvec_reschedule_ipi", BoundaryKind::Interrupt),
            ("asm_common_interrupt", BoundaryKind::Interrupt),
            ("common_interrupt", BoundaryKind::Interrupt),
            ("ret_from_fork_asm", BoundaryKind::Other),
            ("ret_from_fork", BoundaryKind::Other),
            ("__x86_indirect_thunk_rax", BoundaryKind::Other),
            ("handle_softirqs", BoundaryKind::AsyncNetRx),
            ("net_rx_action", BoundaryKind::AsyncNetRx),
            ("process_one_work", BoundaryKind::AsyncWorkqueue),
            ("call_timer_fn", BoundaryKind::AsyncTimer),
            ("__run_hrtimer", BoundaryKind::AsyncTimer),
            ("blk_done_softirq", BoundaryKind::AsyncBlock),
        ] {
            assert_eq!(BoundaryKind::from_entry_symbol(name), kind, "{name}");
            assert_eq!(BoundaryKind::classify([Some(name)]), kind, "{name}");
        }
    }

    #[test]
    fn classify_looks_past_thunks_but_only_so_far() {
        let thunk = Some("__x86_indirect_thunk_rax");
        let entry = Some("entry_SYSCALL_64");
        assert_eq!(
            BoundaryKind::classify([thunk, None, entry]),
            BoundaryKind::Syscall
        );
        assert_eq!(
            BoundaryKind::classify([thunk, None, thunk, entry]),
            BoundaryKind::Other
        );
        assert_eq!(BoundaryKind::classify([]), BoundaryKind::Other);
        // The outermost frame that names an entry wins.
        assert_eq!(
            BoundaryKind::classify([Some("asm_exc_page_fault"), entry]),
            BoundaryKind::Fault
        );
    }

    /// Every list made from the table holds every kind, once, and each mapping goes both
    /// ways: a kind left out of one of them (a key, a code) fails here.
    #[test]
    fn every_kind_is_in_every_list() {
        let n = BoundaryKind::ALL.len();
        for (i, k) in BoundaryKind::ALL.into_iter().enumerate() {
            // Codes are 1, 2, … in the table's order, so files stay readable as kinds are added.
            assert_eq!(usize::from(k.code()), i + 1, "{k:?}");
            assert_eq!(BoundaryKind::from_code(k.code(), 0).expect("code"), Some(k));
            assert_eq!(BoundaryKind::from_key(k.as_str()), Some(k));
            assert!(
                BoundaryKind::ALL[..i]
                    .iter()
                    .all(|o| o.as_str() != k.as_str())
            );
        }
        assert_eq!(BoundaryKind::from_code(0, 0).expect("none"), None);
        let past = u8::try_from(n + 1).expect("fits");
        assert!(BoundaryKind::from_code(past, 7).is_err());
        // The catch-all claims no symbol of its own.
        assert_eq!(BoundaryKind::Other.entry_patterns(), (&[][..], &[][..]));
        // Asynchronous kinds have both pseudo-functions; the others no residue.
        for k in BoundaryKind::ALL {
            assert!(!k.is_asynchronous() || k.pseudo_parent().is_some(), "{k:?}");
        }
    }

    /// A stack as it ran, with softirq work inside a system call or an interrupt, keeps its
    /// real entry: only a moved stack (cut at the softirq entry) is asynchronous.
    #[test]
    fn softirq_work_inside_an_entry_is_not_asynchronous() {
        let classify = |names: &[&str]| BoundaryKind::classify(names.iter().map(|n| Some(*n)));
        assert_eq!(
            classify(&[
                "entry_SYSCALL_64_after_hwframe",
                "do_syscall_64",
                "__x64_sys_sendto"
            ]),
            BoundaryKind::Syscall
        );
        assert_eq!(
            classify(&[
                "asm_sysvec_apic_timer_interrupt",
                "sysvec_apic_timer_interrupt",
                "irq_exit_rcu"
            ]),
            BoundaryKind::Interrupt
        );
        assert_eq!(
            classify(&[
                "ret_from_fork_asm",
                "ret_from_fork",
                "kthread",
                "smpboot_thread_fn"
            ]),
            BoundaryKind::Other
        );
        assert_eq!(
            classify(&["handle_softirqs", "net_rx_action"]),
            BoundaryKind::AsyncNetRx
        );
    }
}
