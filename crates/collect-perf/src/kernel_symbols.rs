//! The kernel's text symbols of a `/proc/kallsyms` snapshot, as the collector classifies kernel
//! entries with them: portable (parsed from text); [`KernelSymbols::live`] reads this machine's.

use async_attribution::SoftirqEntries;
use gmon_format::BoundaryKind;
use gmon_format::kallsyms::{Kallsyms, KallsymsOptions};

/// The kernel's text symbols (a `/proc/kallsyms` snapshot, kept verbatim for the measurement),
/// for classifying how each sample entered the kernel: gmon-format's kallsyms parser with
/// [`KallsymsOptions::entry_code`] (text symbols with real addresses, no `__pfx_` padding, so an
/// address in a function's padding belongs to the function before it), sorted by address.
#[derive(Debug, Clone, Default)]
pub struct KernelSymbols {
    text: String,
    syms: Kallsyms,
}

impl KernelSymbols {
    /// Indexes the text of a `/proc/kallsyms` snapshot (`ffffffff81000000 T _stext` lines).
    /// Addresses that read as 0 (hidden by `kernel.kptr_restrict`) give no symbols; malformed
    /// lines are skipped.
    pub fn parse(text: String) -> KernelSymbols {
        let mut syms =
            Kallsyms::parse(text.as_bytes(), &KallsymsOptions::entry_code()).unwrap_or_default();
        syms.sort_by_key(|s| s.address);
        KernelSymbols { text, syms }
    }

    /// The snapshot's text, as read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether it has any symbol (its addresses were not hidden).
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The name of the last symbol at or below `addr` (of several at one address, the last
    /// in the file).
    pub(crate) fn name(&self, addr: u64) -> Option<&str> {
        let i = self.syms.last_at_or_below(addr)?;
        std::str::from_utf8(self.syms.symbol(i).name).ok()
    }

    /// Where kernel stacks enter softirq processing, for [`AsyncOptions::entries`](crate::AsyncOptions::entries): the
    /// functions `async_attribution::SoftirqEntries` names, each up to the next symbol.
    pub fn softirq_entries(&self) -> SoftirqEntries {
        let n = self.syms.len();
        SoftirqEntries::from_symbols((0..n).filter_map(|i| {
            let s = self.syms.symbol(i);
            let end = if i + 1 < n {
                self.syms.symbol(i + 1).address
            } else {
                s.address.saturating_add(1)
            };
            Some((std::str::from_utf8(s.name).ok()?, s.address, end))
        }))
    }

    /// The boundary kind of a kernel chain (innermost first), by gmon-format's one rule
    /// ([`BoundaryKind::classify`]) on the names of its outermost frames.
    pub(crate) fn boundary(&self, kernel: &[u64]) -> BoundaryKind {
        BoundaryKind::classify(kernel.iter().rev().map(|&a| self.name(a)))
    }
}
