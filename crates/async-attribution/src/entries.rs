//! Where a kernel stack entered softirq processing: the cut between the victim's own frames and
//! the asynchronous work below them.

/// The kernel functions that run pending softirqs, by name: `handle_softirqs` (6.8 and later),
/// `__do_softirq` (before). Every way into softirq processing (`irq_exit_rcu`, `do_softirq`
/// from `local_bh_enable`, `run_ksoftirqd`) goes through one of them.
pub const ENTRY_NAMES: [&str; 2] = ["handle_softirqs", "__do_softirq"];

/// The `NET_RX` softirq's action: a frame of it in a stack is network receive work.
pub const NET_RX_NAMES: [&str; 1] = ["net_rx_action"];

/// The `BLOCK` softirq's action: a frame of it in a stack is block I/O completion work.
pub const BLOCK_NAMES: [&str; 1] = ["blk_done_softirq"];

/// The function a kworker runs each work item in: its frame and those inside it are the work.
pub const WORK_NAMES: [&str; 1] = ["process_one_work"];

/// The functions that call a timer's callback: `call_timer_fn` (timer lists, in the `TIMER`
/// softirq) and `__run_hrtimer` (high-resolution timers, in a hard interrupt or the `HRTIMER`
/// softirq), or `__hrtimer_run_queues` where `__run_hrtimer` is inlined into it (6.18 on
/// x86-64). Their frames and those inside them are the timer's work.
pub const TIMER_NAMES: [&str; 3] = ["call_timer_fn", "__run_hrtimer", "__hrtimer_run_queues"];

/// Address ranges of the softirq entry functions, of the network receive action, and of the
/// functions that run work items and timer callbacks.
#[derive(Debug, Clone, Default)]
pub struct SoftirqEntries {
    entry: Vec<(u64, u64)>,
    net_rx: Vec<(u64, u64)>,
    block: Vec<(u64, u64)>,
    work: Vec<(u64, u64)>,
    timer: Vec<(u64, u64)>,
}

/// Where a stack is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// How many kernel frames, innermost first, are the asynchronous work (the entry frame
    /// included).
    pub frames: usize,
    /// Whether those frames hold `net_rx_action`.
    pub net_rx: bool,
}

impl SoftirqEntries {
    /// From kernel text symbols as (name, start, end) — end the next symbol's start — keeping
    /// those named in [`ENTRY_NAMES`], [`NET_RX_NAMES`], [`BLOCK_NAMES`], [`WORK_NAMES`] and
    /// [`TIMER_NAMES`].
    pub fn from_symbols<'a>(symbols: impl IntoIterator<Item = (&'a str, u64, u64)>) -> Self {
        let mut e = SoftirqEntries::default();
        for (name, start, end) in symbols {
            let list = if ENTRY_NAMES.contains(&name) {
                &mut e.entry
            } else if NET_RX_NAMES.contains(&name) {
                &mut e.net_rx
            } else if BLOCK_NAMES.contains(&name) {
                &mut e.block
            } else if WORK_NAMES.contains(&name) {
                &mut e.work
            } else if TIMER_NAMES.contains(&name) {
                &mut e.timer
            } else {
                continue;
            };
            list.push((start, end));
        }
        e
    }

    /// Whether none of the softirq functions was found (kernel addresses hidden, or another
    /// kernel).
    pub fn is_empty(&self) -> bool {
        self.entry.is_empty() && self.net_rx.is_empty()
    }

    /// Where `kernel` (frames innermost first) entered the work of a work item or timer
    /// callback: the number of frames from the innermost out to the outermost frame in
    /// [`WORK_NAMES`] (`workqueue`) or [`TIMER_NAMES`] (otherwise). None when the stack
    /// passes through none of them: such a sample is not that work, whatever window is open
    /// (these kinds have no fallback on time alone: the sampling timer's own expiry is a
    /// window around every sample).
    pub fn cut_deferred(&self, workqueue: bool, kernel: &[u64]) -> Option<usize> {
        let ranges = if workqueue { &self.work } else { &self.timer };
        kernel
            .iter()
            .rposition(|&a| ranges.iter().any(|&(s, e)| s <= a && a < e))
            .map(|i| i + 1)
    }

    /// Where `kernel` (frames innermost first) entered block I/O completion: the number of
    /// frames from the innermost out to the outermost frame in [`BLOCK_NAMES`]. The `BLOCK`
    /// softirq's work is cut there, not at the softirq entry, so that a moved stack names its
    /// kind by its outermost frame (a network receive stack starts at the entry). None when
    /// the stack does not pass through it: such a sample in a `BLOCK` window is the softirq
    /// loop's own, or another vector's, and stays with its victim.
    pub fn cut_block(&self, kernel: &[u64]) -> Option<usize> {
        kernel
            .iter()
            .rposition(|&a| self.block.iter().any(|&(s, e)| s <= a && a < e))
            .map(|i| i + 1)
    }

    /// Where `kernel` (frames innermost first) entered softirq processing: the outermost frame
    /// in a softirq entry function, or failing one the outermost `net_rx_action` frame. The
    /// frames from there in are the softirq's work; the frames outside are the victim's own
    /// (for loopback, the sender's `sendmsg` down to `local_bh_enable`). None when the stack
    /// passes through neither.
    ///
    /// This is the one rule for cutting: a sample in a softirq window whose stack has no
    /// entry frame moves whole.
    pub fn cut(&self, kernel: &[u64]) -> Option<Cut> {
        let within = |ranges: &[(u64, u64)], a: u64| ranges.iter().any(|&(s, e)| s <= a && a < e);
        let entry = kernel.iter().rposition(|&a| within(&self.entry, a));
        let net = kernel.iter().rposition(|&a| within(&self.net_rx, a));
        match (entry, net) {
            (Some(e), net) => Some(Cut {
                frames: e + 1,
                net_rx: net.is_some_and(|n| n < e),
            }),
            (None, Some(n)) => Some(Cut {
                frames: n + 1,
                net_rx: true,
            }),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_the_outermost_entry() {
        let e = SoftirqEntries::from_symbols([
            ("handle_softirqs", 0x100, 0x200),
            ("__do_softirq", 0x300, 0x400),
            ("net_rx_action", 0x500, 0x600),
            ("udp_rcv", 0x700, 0x800),
        ]);
        // udp_rcv, net_rx_action, handle_softirqs, do_softirq's caller, the system call.
        assert_eq!(
            e.cut(&[0x700, 0x510, 0x110, 0x900, 0x910]),
            Some(Cut {
                frames: 3,
                net_rx: true
            })
        );
        // A timer softirq: cut, but not network work.
        assert_eq!(
            e.cut(&[0x950, 0x110, 0x900]),
            Some(Cut {
                frames: 2,
                net_rx: false
            })
        );
        // No entry frame (stack cut short): net_rx_action marks it.
        assert_eq!(
            e.cut(&[0x700, 0x510]),
            Some(Cut {
                frames: 2,
                net_rx: true
            })
        );
        assert_eq!(e.cut(&[0x700, 0x900]), None);
        assert_eq!(e.cut(&[]), None);
        // An end address is outside.
        assert_eq!(e.cut(&[0x200]), None);
        assert!(SoftirqEntries::from_symbols([("x", 1, 2)]).is_empty());
    }

    #[test]
    fn cuts_work_and_timers_at_their_runners() {
        let e = SoftirqEntries::from_symbols([
            ("process_one_work", 0x100, 0x200),
            ("call_timer_fn", 0x300, 0x400),
            ("__run_hrtimer", 0x500, 0x600),
        ]);
        // wb_workfn inside process_one_work inside worker_thread.
        assert_eq!(e.cut_deferred(true, &[0x900, 0x110, 0x950]), Some(2));
        assert_eq!(e.cut_deferred(false, &[0x900, 0x110, 0x950]), None);
        // A high-resolution timer's callback inside a hard interrupt.
        assert_eq!(
            e.cut_deferred(false, &[0x900, 0x510, 0x950, 0x960]),
            Some(2)
        );
        assert_eq!(e.cut_deferred(false, &[0x900, 0x310]), Some(2));
        assert!(e.is_empty());
    }
}
