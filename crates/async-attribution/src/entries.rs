//! Where a kernel stack entered softirq processing: the cut between the victim's own frames and
//! the asynchronous work below them.

/// The kernel functions that run pending softirqs, by name: `handle_softirqs` (6.8 and later),
/// `__do_softirq` (before). Every way into softirq processing (`irq_exit_rcu`, `do_softirq`
/// from `local_bh_enable`, `run_ksoftirqd`) goes through one of them.
pub const ENTRY_NAMES: [&str; 2] = ["handle_softirqs", "__do_softirq"];

/// The `NET_RX` softirq's action: a frame of it in a stack is network receive work.
pub const NET_RX_NAMES: [&str; 1] = ["net_rx_action"];

/// Address ranges of the softirq entry functions and of the network receive action.
#[derive(Debug, Clone, Default)]
pub struct SoftirqEntries {
    entry: Vec<(u64, u64)>,
    net_rx: Vec<(u64, u64)>,
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
    /// those named in [`ENTRY_NAMES`] and [`NET_RX_NAMES`].
    pub fn from_symbols<'a>(symbols: impl IntoIterator<Item = (&'a str, u64, u64)>) -> Self {
        let mut e = SoftirqEntries::default();
        for (name, start, end) in symbols {
            if ENTRY_NAMES.contains(&name) {
                e.entry.push((start, end));
            } else if NET_RX_NAMES.contains(&name) {
                e.net_rx.push((start, end));
            }
        }
        e
    }

    /// Whether none of the functions was found (kernel addresses hidden, or another kernel).
    pub fn is_empty(&self) -> bool {
        self.entry.is_empty() && self.net_rx.is_empty()
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
}
