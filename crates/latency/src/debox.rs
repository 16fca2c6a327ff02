//! DeBox's per-system-call results (Ruan and Pai, 2004): wall and CPU time, page faults, and
//! every place the call slept — how often and how long — with who woke it.

use std::collections::BTreeMap;

/// Where a call slept (the kernel function under `schedule()`, standing in for DeBox's
/// file:line and wait message), how often and how long.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SleepSite {
    /// Times the call blocked there.
    pub count: u64,
    /// Time blocked there, in ns, from leaving the CPU to getting it back.
    pub blocked_ns: u64,
}

/// Who woke the sleeping calls, how often, and how long the woken calls had slept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Wakes {
    /// Wake-ups.
    pub count: u64,
    /// Blocked time those wake-ups ended, in ns.
    pub blocked_ns: u64,
}

/// The DeBox summary of the calls of one operation (one system call from one call site):
/// sums over its calls, sleep sites keyed by `S`, wakers keyed by `W`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSummary<S: Ord, W: Ord> {
    /// Calls.
    pub calls: u64,
    /// Wall time from entry to exit, summed, in ns.
    pub wall_ns: u64,
    /// Time off the CPU while blocked (voluntary switches), summed, in ns.
    pub blocked_ns: u64,
    /// Time off the CPU while runnable (preempted), summed, in ns.
    pub runnable_ns: u64,
    /// Page faults taken during the calls.
    pub faults: u64,
    /// Sleeps by site.
    pub sleeps: BTreeMap<S, SleepSite>,
    /// Wake-ups by waker.
    pub wakers: BTreeMap<W, Wakes>,
}

impl<S: Ord, W: Ord> Default for CallSummary<S, W> {
    fn default() -> Self {
        CallSummary {
            calls: 0,
            wall_ns: 0,
            blocked_ns: 0,
            runnable_ns: 0,
            faults: 0,
            sleeps: BTreeMap::new(),
            wakers: BTreeMap::new(),
        }
    }
}

impl<S: Ord + Clone, W: Ord + Clone> CallSummary<S, W> {
    /// CPU time: wall time less the time off the CPU.
    pub fn cpu_ns(&self) -> u64 {
        self.wall_ns
            .saturating_sub(self.blocked_ns)
            .saturating_sub(self.runnable_ns)
    }

    /// Times the calls slept, over all sites.
    pub fn sleeps_total(&self) -> u64 {
        self.sleeps.values().map(|s| s.count).sum()
    }

    /// Adds another summary's calls (of the same operation, from another process, say).
    pub fn merge(&mut self, other: &CallSummary<S, W>) {
        self.calls += other.calls;
        self.wall_ns += other.wall_ns;
        self.blocked_ns += other.blocked_ns;
        self.runnable_ns += other.runnable_ns;
        self.faults += other.faults;
        for (k, s) in &other.sleeps {
            let e = self.sleeps.entry(k.clone()).or_default();
            e.count += s.count;
            e.blocked_ns += s.blocked_ns;
        }
        for (k, w) in &other.wakers {
            let e = self.wakers.entry(k.clone()).or_default();
            e.count += w.count;
            e.blocked_ns += w.blocked_ns;
        }
    }

    /// Sleep sites by blocked time, longest first.
    pub fn sleeps_by_time(&self) -> Vec<(&S, &SleepSite)> {
        let mut v: Vec<_> = self.sleeps.iter().collect();
        v.sort_by_key(|(_, s)| std::cmp::Reverse(s.blocked_ns));
        v
    }

    /// Wakers by the blocked time they ended, longest first.
    pub fn wakers_by_time(&self) -> Vec<(&W, &Wakes)> {
        let mut v: Vec<_> = self.wakers.iter().collect();
        v.sort_by_key(|(_, w)| std::cmp::Reverse(w.blocked_ns));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_merge_and_split_wall_time() {
        let mut a: CallSummary<&str, u32> = CallSummary {
            calls: 2,
            wall_ns: 10_000,
            blocked_ns: 6_000,
            runnable_ns: 1_000,
            faults: 3,
            ..CallSummary::default()
        };
        a.sleeps.insert(
            "pipe_read",
            SleepSite {
                count: 2,
                blocked_ns: 6_000,
            },
        );
        a.wakers.insert(
            42,
            Wakes {
                count: 2,
                blocked_ns: 6_000,
            },
        );
        let b = a.clone();
        a.merge(&b);
        assert_eq!(
            (a.calls, a.cpu_ns(), a.faults, a.sleeps_total()),
            (4, 6_000, 6, 4)
        );
        assert_eq!(a.sleeps_by_time()[0].1.blocked_ns, 12_000);
        assert_eq!(
            a.wakers_by_time()[0],
            (
                &42,
                &Wakes {
                    count: 4,
                    blocked_ns: 12_000
                }
            )
        );
    }
}
