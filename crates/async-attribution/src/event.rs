//! The input: what a collector saw on one CPU, besides its samples.

/// The `NET_RX` softirq's vector (`NET_RX_SOFTIRQ` in `include/linux/interrupt.h`, stable since
/// 2.6): `irq:softirq_entry`'s `vec` field.
pub const NET_RX_VECTOR: u32 = 3;

/// The `BLOCK` softirq's vector (`BLOCK_SOFTIRQ` in `include/linux/interrupt.h`, stable since
/// 2.6.28).
pub const BLOCK_VECTOR: u32 = 4;

/// One tracepoint record: where and when it fired, in whose context, and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds, the same clock as the samples'.
    pub time: u64,
    /// The CPU it fired on.
    pub cpu: u32,
    /// The process (thread group id) that was running: the victim of a window, the consumer of
    /// a consume event.
    pub pid: u32,
    /// The thread that was running.
    pub tid: u32,
    /// What it says.
    pub what: What,
}

/// Where a record fired, from its `common_flags`: in a task, in a softirq, or in a hard
/// interrupt (or an NMI).
///
/// It decides whom a work item queued or a timer armed belongs to (the rule at
/// [`Reason::NoOwner`]), and which timer callbacks can hold samples: the CPU-time sampling
/// event is itself a high-resolution timer run in a hard interrupt, whose sample shows the
/// context it interrupted. So every sample sits inside the sampling timer's own callback
/// window, and no sample ever shows a callback that runs in a hard interrupt; the timer work a
/// sample can show is a softirq's (timer lists, soft high-resolution timers), and a record
/// fired in a hard interrupt inside a softirq window is not that window's work.
///
/// [`Reason::NoOwner`]: crate::Reason::NoOwner
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Context {
    /// A task's own context (process or kernel thread).
    Task,
    /// A softirq, in whatever task it interrupted or in `ksoftirqd`.
    Softirq,
    /// A hard interrupt handler or an NMI.
    Hardirq,
}

/// What a record says, by tracepoint. Field names are the tracepoints' own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum What {
    /// `irq:softirq_entry`: a softirq of vector `vec` starts on this CPU.
    SoftirqEntry {
        /// The softirq vector ([`NET_RX_VECTOR`] for network receive).
        vec: u32,
    },
    /// `irq:softirq_exit`: it ends.
    SoftirqExit {
        /// The softirq vector.
        vec: u32,
    },
    /// `irq:irq_handler_entry`: a hard interrupt handler starts (its samples are its own, not
    /// the softirq's it interrupted).
    IrqEntry {
        /// The interrupt number.
        irq: i32,
    },
    /// `irq:irq_handler_exit`: it ends.
    IrqExit {
        /// The interrupt number.
        irq: i32,
    },
    /// `net:netif_receive_skb`: a packet enters the protocol stack; one object served by the
    /// window it fires in, weighing `len` bytes.
    NetReceive {
        /// The `struct sk_buff` address (valid until the packet is freed).
        skb: u64,
        /// Its length in bytes.
        len: u32,
    },
    /// `tcp:tcp_probe`: TCP processed packet `skb` for socket `sk`.
    TcpProbe {
        /// The `struct sk_buff` address.
        skb: u64,
        /// The `struct sock` address.
        sk: u64,
        /// The socket's cookie (a stable id; kept for the record).
        cookie: u64,
    },
    /// `sock:sk_data_ready`: socket `sk` was told data arrived.
    DataReady {
        /// The `struct sock` address.
        sk: u64,
    },
    /// `skb:skb_copy_datagram_iovec`: the running process copies packet `skb` out (a consume
    /// event: it fires in the reader's system call).
    CopyDatagram {
        /// The `struct sk_buff` address.
        skb: u64,
        /// Bytes copied.
        len: i32,
    },
    /// `sock:sock_recv_length`: the running process received `ret` bytes from socket `sk` (a
    /// consume event).
    RecvLength {
        /// The `struct sock` address.
        sk: u64,
        /// Bytes received, or a negative error.
        ret: i32,
    },
    /// `sock:sock_send_length`: the running process sent on socket `sk` (a use of the socket:
    /// the acknowledgements a sender's socket receives serve the sender).
    SendLength {
        /// The `struct sock` address.
        sk: u64,
        /// Bytes sent, or a negative error.
        ret: i32,
    },
    /// `workqueue:workqueue_queue_work`: the running process queued work item `work` (its
    /// owner, unless the record fired inside another window: see [`Reason::NoOwner`]).
    ///
    /// [`Reason::NoOwner`]: crate::Reason::NoOwner
    WorkQueued {
        /// The `struct work_struct` address.
        work: u64,
        /// Where it fired: in an interrupt the running task is a victim, not the owner.
        context: Context,
    },
    /// `workqueue:workqueue_execute_start`: the running kworker starts work item `work` (a
    /// window of that task, which may be preempted and resumed on another CPU).
    WorkStart {
        /// The `struct work_struct` address.
        work: u64,
    },
    /// `workqueue:workqueue_execute_end`: it ends.
    WorkEnd {
        /// The `struct work_struct` address.
        work: u64,
    },
    /// `timer:timer_start` or `timer:hrtimer_start`: the running process armed `timer` (its
    /// owner, with the same exception as [`What::WorkQueued`]).
    TimerArmed {
        /// The `struct timer_list` or `struct hrtimer` address.
        timer: u64,
        /// As in [`What::WorkQueued`].
        context: Context,
    },
    /// `timer:timer_expire_entry` or `timer:hrtimer_expire_entry`: `timer`'s callback starts
    /// on this CPU (in a softirq or a hard interrupt, in whatever task the CPU was running).
    TimerEntry {
        /// The timer's address.
        timer: u64,
        /// Where it fired: a callback run in a hard interrupt ([`Context::Hardirq`]) holds
        /// no CPU sample of its own work, see [`Context`].
        context: Context,
    },
    /// `timer:timer_expire_exit` or `timer:hrtimer_expire_exit`: it ends.
    TimerExit {
        /// The timer's address.
        timer: u64,
    },
    /// `block:block_rq_insert` or `block:block_rq_issue`: a request for `sectors` sectors
    /// at `sector` of device `dev` was queued (insert: in the submitter's context, when it
    /// goes through a scheduler) or handed to the driver (issue). Its owner is found as a work
    /// item's ([`Reason::NoOwner`]) at the first of the two; the issue of an inserted request
    /// is the same request.
    ///
    /// [`Reason::NoOwner`]: crate::Reason::NoOwner
    BlockQueued {
        /// The device (`dev_t`).
        dev: u32,
        /// The first sector.
        sector: u64,
        /// How many sectors.
        sectors: u32,
        /// Whether it is `block_rq_issue` (else `block_rq_insert`).
        issue: bool,
        /// Where it fired.
        context: Context,
    },
    /// `block:block_rq_complete`: `sectors` sectors of the request at `sector` of `dev` are
    /// done (a partial completion leaves the rest of the request pending); one object served
    /// by the `BLOCK` softirq window it fires in, weighing `sectors`.
    BlockComplete {
        /// The device.
        dev: u32,
        /// The first sector completed.
        sector: u64,
        /// Sectors completed.
        sectors: u32,
    },
}
