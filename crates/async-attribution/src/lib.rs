//! Asynchronous kernel work charged to the process it serves, as pkprof did (Nishioka et al.,
//! USENIX 1996, §4.3–4.6): work done in a softirq "in the context of a randomly chosen victim"
//! is held back, tagged by the data objects it served, and moved to the process that later
//! consumes them.
//!
//! This crate is the attribution itself, a post-processor over what a collector saw on each
//! CPU, in time order: CPU samples (with their kernel frames), the windows in which a softirq
//! ran (`irq:softirq_entry`/`exit`, with `irq:irq_handler_entry`/`exit` for hard interrupts
//! nested in them), the tag events inside a window (`net:netif_receive_skb`, `tcp:tcp_probe`,
//! `sock:sk_data_ready`) and the consume events in the consumer's own context
//! (`skb:skb_copy_datagram_iovec`, `sock:sock_recv_length`). Deferred work is simpler: a
//! kworker's work item (`workqueue:workqueue_execute_start`/`end`) is charged whole to the
//! process that queued it (`workqueue_queue_work`), a timer callback
//! (`timer:timer_expire_entry`/`exit`, `hrtimer_expire_entry`/`exit`) to the process that
//! armed the timer (`timer_start`, `hrtimer_start`): see [`Kind`] and the `owned` rules at
//! [`Reason::NoOwner`]. Block I/O completion (the `BLOCK` softirq's windows) is split among
//! the processes whose requests it completed (`block:block_rq_complete`), by sectors; a
//! request's owner is found at its `block_rq_insert` or, with no scheduler, its
//! `block_rq_issue`, by the same rule, and requests are matched FIFO per (device, sector). It knows no perf, no tracefs and no file format, so it is tested on
//! hand-made timelines (`tests/replay.rs`).
//!
//! Use it in three steps:
//!
//! 1. Make [`SoftirqEntries`] from the kernel's symbols: they say where a sample's kernel stack
//!    entered softirq processing (the loopback cut: see [`SoftirqEntries::cut`]).
//! 2. Feed an [`Attributor`] every sample ([`Attributor::sample`]: those it holds back get a
//!    [`Held`] ticket; keep them aside) and every [`Event`] ([`Attributor::event`]), in time order.
//! 3. [`Attributor::finish`] gives each held sample its [`Decision`] (a process, or the residue
//!    with its [`Reason`]) and the [`Totals`] per [`Kind`]. A long run takes decisions as they
//!    are made instead ([`Attributor::take_decided`]): the attributor keeps only what can still
//!    be attributed (see [`MAX_OBJECTS`] and its neighbours for the bounds), so a caller that
//!    places each held sample as soon as it is decided keeps memory bounded too.
//!
//! ```
//! use async_attribution::{Attributor, Event, SoftirqEntries, Target, What};
//!
//! // handle_softirqs at 0x1000, net_rx_action at 0x2000, udp_rcv at 0x3000.
//! let entries = SoftirqEntries::from_symbols([
//!     ("handle_softirqs", 0x1000, 0x1800),
//!     ("net_rx_action", 0x2000, 0x2800),
//! ]);
//! let mut a = Attributor::new(entries);
//! let at = |time, pid, what| Event { time, cpu: 0, pid, tid: pid, what };
//! // The sender (pid 10) runs the receive softirq inside its sendmsg.
//! a.event(at(1, 10, What::SoftirqEntry { vec: 3 }));
//! a.event(at(2, 10, What::NetReceive { skb: 0xa0, len: 100 }));
//! let held = a.sample(0, 10, &[0x3000, 0x2000, 0x1000, 0x9000]).expect("held");
//! assert_eq!(held.frames, 3); // udp_rcv, net_rx_action, handle_softirqs move; 0x9000 stays
//! a.event(at(4, 10, What::SoftirqExit { vec: 3 }));
//! // The receiver (pid 20) copies the datagram out.
//! a.event(at(5, 20, What::CopyDatagram { skb: 0xa0, len: 100 }));
//! let out = a.finish();
//! assert_eq!(out.decisions[held.ticket as usize].to, Target::Process { pid: 20, time: 5 });
//! assert!(out.totals.iter().all(|t| t.is_conserved()));
//! ```
//!
//! The rules (one place each): which frames move, [`SoftirqEntries::cut`]; which objects a
//! window served and who consumed them, the `net` module's docs (reproduced at [`Reason`]);
//! how a window's samples are divided among several consumers, [`split`].
//!
//! What it does not do: read the live machine or decode tracepoint records (collect-perf does),
//! see what perf cannot sample (a tracepoint fired in the idle task is not sampled, so a
//! softirq window on an idle CPU is never seen: its samples are residue with
//! [`Reason::WindowUnseen`]; a timer that fires in the idle task, or a block completion on an
//! idle CPU, likewise: programs in the kernel, which see those records, are the way).

#![deny(missing_docs)]

mod attributor;
mod entries;
mod event;
mod net;
pub mod split;

pub use attributor::{
    Attributor, Decision, Held, Kept, MAX_ITEMS, MAX_OBJECTS, MAX_WAITING_WINDOWS, Outcome, Reason,
    Target, Totals,
};
pub use entries::{
    BLOCK_NAMES, Cut, ENTRY_NAMES, NET_RX_NAMES, SoftirqEntries, TIMER_NAMES, WORK_NAMES,
};
pub use event::{BLOCK_VECTOR, Context, Event, NET_RX_VECTOR, What};

/// A kind of asynchronous work: what a window served and how its beneficiary is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Kind {
    /// Network receive processing: the `NET_RX` softirq (`net_rx_action` and what it calls),
    /// charged to the process that reads the packets it delivered.
    NetRx,
    /// A work item run by a kworker (`process_one_work` and the work function below it),
    /// charged to the process that queued it (`workqueue:workqueue_queue_work`).
    Workqueue,
    /// A timer's callback (`call_timer_fn` for a timer list, `__run_hrtimer` for a
    /// high-resolution timer, and the function below it), charged to the process that armed
    /// the timer (`timer:timer_start`, `timer:hrtimer_start`).
    Timer,
    /// Block I/O completion: the `BLOCK` softirq (`blk_done_softirq` and what it calls, down
    /// to the waking of the reader), charged to the processes whose requests it completed
    /// (`block:block_rq_insert`/`issue`, `block:block_rq_complete`), split by sectors.
    Block,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 4] = [Kind::NetRx, Kind::Workqueue, Kind::Timer, Kind::Block];

    /// Its name in reports and files: `net-rx`, `workqueue`, `timer`, `block`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NetRx => "net-rx",
            Kind::Workqueue => "workqueue",
            Kind::Timer => "timer",
            Kind::Block => "block",
        }
    }
}
