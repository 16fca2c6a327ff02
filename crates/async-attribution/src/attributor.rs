//! The attribution's state machine: windows per CPU, held samples, and the decisions made
//! as soon as each is final (or when the run ends).
//!
//! What it keeps is what can still be attributed: a window until its samples are decided
//! (a window that holds no sample, once closed, at once), a packet until it is settled (the
//! rule in the `net` module), a work item queued or a timer armed until it runs or is
//! re-armed, a block request until it completes. Each has a bound, beyond which the oldest
//! is dropped and counted ([`Totals::evicted`], [`Reason::Evicted`]), never silently: see
//! [`MAX_OBJECTS`], [`MAX_WAITING_WINDOWS`], [`MAX_ITEMS`].

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use crate::Kind;
use crate::entries::SoftirqEntries;
use crate::event::{BLOCK_VECTOR, Context, Event, NET_RX_VECTOR, What};
use crate::net::NetObjects;
use crate::split::Splitter;

/// How many packets the attribution keeps waiting for their reader: the oldest beyond that
/// is dropped, consumed by nobody ([`Reason::Evicted`] for its share of its window's
/// samples). A packet is kept only while it can still change hands (the rule in the crate's
/// `net` module): one waiting on a socket nobody reads, which receive buffers bound (on the
/// 6.18 test machine an unread UDP socket queues 256 datagrams of 100 bytes with the default
/// buffer, 10,082 with the largest an unprivileged process may ask, `net.core.rmem_max` 4 MiB);
/// so this is reached only by hundreds of sockets left unread, or a few with forced buffers.
/// A flood with nobody reading keeps about 6,000 (the 4,096 a backlog drain may claim, the
/// queue, what came since the last sweep). About 160 bytes each: 65,536 queued on one socket
/// took 10.2 MiB (release build).
pub const MAX_OBJECTS: usize = 65_536;

/// How many closed windows may wait for their beneficiaries (windows holding samples whose
/// packets are not settled, and windows owned by a packet's reader): beyond that the oldest
/// is decided at once, its packets dropped as in [`MAX_OBJECTS`].
pub const MAX_WAITING_WINDOWS: usize = 4_096;

/// How many work items queued and not started, timers armed, and block requests pending the
/// attribution keeps, each: beyond that the least recently used half is dropped (a work item
/// cancelled, a timer freed, a completion lost), counted in [`Totals::evicted`]; a dropped
/// one that runs after all has no owner known ([`Reason::NoObject`], as one queued before
/// the run).
pub const MAX_ITEMS: usize = 65_536;

/// The most timer callback windows kept open on a CPU (their exits lost, with no softirq
/// traced to close them): beyond that the oldest is closed.
const MAX_OPEN_TIMERS: usize = 64;

/// Attributes asynchronous work; see the crate docs for its use.
#[derive(Debug)]
pub struct Attributor {
    entries: SoftirqEntries,
    /// Whether network receive is attributed (its windows traced).
    net_rx: bool,
    /// Whether block completion is attributed.
    block: bool,
    cpus: Vec<CpuState>,
    /// The windows not retired yet, by id (ids grow with time).
    windows: BTreeMap<u64, Window>,
    next_window: u64,
    /// Closed windows waiting for their beneficiaries.
    waiting: BTreeSet<u64>,
    net: NetObjects,
    /// Packets forgotten that owned a work item, timer or request: their reader as an owner.
    finals: HashMap<u64, Target>,
    /// `finals` oldest first.
    finals_order: VecDeque<u64>,
    /// Work item address → who queued it (and when), until a kworker starts it.
    queued: HashMap<u64, (Owner, u64)>,
    /// Timer address → who armed it last (and when it was last armed or fired: a periodic
    /// timer re-armed by its own callback keeps its owner).
    armed: HashMap<u64, (Owner, u64)>,
    /// Block requests pending, by (device, sector), oldest first (FIFO per key).
    requests: HashMap<(u32, u64), VecDeque<Request>>,
    /// Thread → the work item window it runs (a kworker may be preempted, so its window is
    /// the task's, not the CPU's).
    tasks: HashMap<u32, u64>,
    next_ticket: u32,
    /// Decisions not taken yet.
    decided: Vec<(u32, Decision)>,
    /// Whether [`Attributor::take_decided`] was called.
    taken: bool,
    /// Split by pid or by the reason there is none (credit carries per beneficiary).
    splitter: Splitter<Result<u32, Reason>>,
    totals: BTreeMap<Kind, Totals>,
    /// Records and samples since the last sweep.
    since_sweep: usize,
    /// The fewest records and samples between sweeps.
    sweep_interval: usize,
}

/// Who owns a work item or a timer: known when it was queued or armed, or the reader of the
/// packet a network receive window was processing then, known once that packet is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Known(Target),
    Packet(u64),
}

/// A block request queued or issued and not yet completed.
#[derive(Debug, Clone, Copy)]
struct Request {
    owner: Owner,
    sectors: u32,
    /// Whether its `block_rq_issue` was seen (an inserted request is issued later).
    issued: bool,
    /// When it was queued.
    time: u64,
}

const NO_OWNER: Owner = Owner::Known(Target::Unattributed(Reason::NoOwner));

#[derive(Debug, Clone, Default)]
struct CpuState {
    /// The open `NET_RX` or `BLOCK` softirq window.
    window: Option<u64>,
    /// The open timer callback windows, innermost last (a high-resolution timer's hard
    /// interrupt, the sampling timer's among them, may come inside a softirq's callback).
    timers: Vec<OpenTimer>,
    /// Hard interrupt handlers running (their samples are not the softirq's).
    irq_depth: u32,
}

/// A timer callback window open on a CPU.
#[derive(Debug, Clone, Copy)]
struct OpenTimer {
    window: u64,
    timer: u64,
    /// Run in a hard interrupt: it holds no sample (see [`Context`]), and only records fired
    /// in a hard interrupt are its.
    hard: bool,
}

/// What `sk_data_ready` said in a window: no socket, one, or several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ready {
    None,
    One(u64),
    Many,
}

#[derive(Debug)]
struct Window {
    kind: Kind,
    /// Whether it is still open (it may still take samples).
    open: bool,
    objects: Vec<u64>,
    /// Each of `objects`' beneficiary and bytes, once it is settled.
    settled: Vec<Option<(Target, u64)>>,
    /// How many of `objects` an `sk_data_ready` has claimed.
    claimed: usize,
    ready: Ready,
    /// Tickets of its samples, in time order, with their frames moved.
    samples: Vec<(u32, usize)>,
    /// For a kind whose windows serve one object whose owner is known when the window opens
    /// (a work item, a timer): the beneficiary of all its samples. None for network receive,
    /// whose packets' readers are known only later.
    owner: Option<Owner>,
    /// For network receive: the packet being processed (the last received, or the last TCP
    /// processed), whose reader owns what the window queues or arms; for block completion,
    /// the owner of the request completed last.
    serving: Option<Owner>,
    /// For block completion: the requests completed, with their owners and sectors.
    requests: Vec<(Owner, u32)>,
}

impl Window {
    fn new(kind: Kind, owner: Option<Owner>) -> Window {
        Window {
            kind,
            open: true,
            objects: Vec::new(),
            settled: Vec::new(),
            claimed: 0,
            ready: Ready::None,
            samples: Vec::new(),
            owner,
            serving: None,
            requests: Vec::new(),
        }
    }
}

/// A sample held back: keep it aside under its ticket until its [`Decision`] comes
/// ([`Attributor::take_decided`], or [`Attributor::finish`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// Index of its [`Decision`] in [`Outcome::decisions`].
    pub ticket: u32,
    /// The kind of work it is.
    pub kind: Kind,
    /// How many of its kernel frames, innermost first, are that work ([`SoftirqEntries::cut`]):
    /// they move; the frames outside them and the user frames are the victim's and go.
    pub frames: usize,
}

/// Where a held sample goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The kind of work.
    pub kind: Kind,
    /// As in [`Held::frames`].
    pub frames: usize,
    /// Its beneficiary.
    pub to: Target,
}

/// A held sample's beneficiary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The process that consumed what the work served.
    Process {
        /// Its pid.
        pid: u32,
        /// When it first consumed an object of the sample's window (which of its images,
        /// before or after an exec, benefited).
        time: u64,
    },
    /// Nobody could be found: the residue, shown as `[async unattributed <kind>]`.
    Unattributed(Reason),
}

/// Why a held sample has no beneficiary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Reason {
    /// Its stack is softirq work but no window was recorded on its CPU: the softirq ran in
    /// the idle task, where perf takes no tracepoint samples, or its records were lost.
    WindowUnseen,
    /// Its window served no object the run traced.
    NoObject,
    /// Its share of a window went to objects nobody consumed before the run ended.
    NoConsumer,
    /// Its work item was queued, or its timer armed, by no process: in the idle task, in an
    /// interrupt outside every window, or inside a network receive window whose packets
    /// nobody read.
    ///
    /// The owner rule for work items and timers: the process running when the item was
    /// queued (`workqueue_queue_work`) or the timer armed (`timer_start`, `hrtimer_start`)
    /// owns it — unless that record fired inside another asynchronous window or in an
    /// interrupt: inside a timer callback or a work item the new item inherits that window's
    /// owner (a delayed work's timer queues the work; a work item queues the next; a paced TCP
    /// socket's timer re-arms itself), inside a network receive window it belongs to the
    /// reader of the packet being processed then (the last one received, or the last one TCP
    /// processed; known when the run ends: an acknowledgement arriving at a sender's socket
    /// arms the sender's timers, though the same window goes on to deliver data), and in the
    /// idle task or in an interrupt outside every window (the running task is a victim) it
    /// has none — a timer re-armed there keeps the owner it had (6.18 enqueues a timer its
    /// own callback re-armed after the callback's window closed). Windows count only for
    /// records of their own [`Context`]: a record fired in a hard interrupt belongs to a
    /// callback run in a hard interrupt, never to the softirq window or work item it
    /// interrupted (the sampling timer re-arms itself in every sample's interrupt). A timer
    /// keeps its owner until it is armed again, so a periodic timer re-armed by its own
    /// callback (no record) stays its arming process's.
    /// A work item's or timer's window (`workqueue_execute_start`/`end`,
    /// `*_expire_entry`/`exit`) goes whole to its owner: it served one object. A block
    /// request is owned by the same rule at its first record (`block_rq_insert`, or
    /// `block_rq_issue` when it went through no scheduler: an issue by a kworker of a request
    /// inserted earlier is that request); a `BLOCK` window is split among the owners of the
    /// requests it completed, by sectors (a partial completion completes part of a request;
    /// a request merged at its front after its record is not found: `no-object`).
    ///
    /// [`Context`]: crate::Context
    NoOwner,
    /// Its share of a window went to packets the attribution dropped unconsumed to bound its
    /// memory ([`MAX_OBJECTS`], [`MAX_WAITING_WINDOWS`]): waiting on a socket nobody read, or
    /// behind so many unsettled windows, the packet's reader could have come only later; or
    /// its work item or timer was owned by such a packet's reader.
    Evicted,
}

impl Reason {
    /// Every reason.
    pub const ALL: [Reason; 5] = [
        Reason::WindowUnseen,
        Reason::NoObject,
        Reason::NoConsumer,
        Reason::NoOwner,
        Reason::Evicted,
    ];

    /// Its name in reports and files: `window-unseen`, `no-object`, `no-consumer`,
    /// `no-owner`, `evicted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::WindowUnseen => "window-unseen",
            Reason::NoObject => "no-object",
            Reason::NoConsumer => "no-consumer",
            Reason::NoOwner => "no-owner",
            Reason::Evicted => "evicted",
        }
    }
}

/// The counts of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Totals {
    /// The kind.
    pub kind: Kind,
    /// Samples held back.
    pub held: u64,
    /// Of them, charged to a process.
    pub attributed: u64,
    /// Of them, unattributed, by reason.
    pub residue: BTreeMap<Reason, u64>,
    /// Windows recorded.
    pub windows: u64,
    /// Objects they served (for work items and timers: windows whose queueing or arming
    /// was recorded).
    pub objects: u64,
    /// Of those, consumed by nobody (for work items and timers: owned by no process).
    pub unconsumed: u64,
    /// Objects dropped unconsumed to bound memory ([`MAX_OBJECTS`], [`MAX_WAITING_WINDOWS`]:
    /// packets, also in `unconsumed`; [`MAX_ITEMS`]: work items queued, timers armed and
    /// requests pending never seen to run or complete).
    pub evicted: u64,
}

impl Totals {
    fn new(kind: Kind) -> Totals {
        Totals {
            kind,
            held: 0,
            attributed: 0,
            residue: BTreeMap::new(),
            windows: 0,
            objects: 0,
            unconsumed: 0,
            evicted: 0,
        }
    }

    /// Samples unattributed, all reasons.
    pub fn unattributed(&self) -> u64 {
        self.residue.values().sum()
    }

    /// Conservation: every held sample was charged to a process or to the residue, once.
    pub fn is_conserved(&self) -> bool {
        self.held == self.attributed + self.unattributed()
    }
}

/// What [`Attributor::finish`] decided.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Outcome {
    /// By ticket, every sample's, when none was taken before the end
    /// ([`Attributor::take_decided`]); else empty (see `decided`).
    pub decisions: Vec<Decision>,
    /// When decisions were taken before the end: those not taken, by ticket.
    pub decided: Vec<(u32, Decision)>,
    /// One per kind that held samples or saw windows, in [`Kind`] order.
    pub totals: Vec<Totals>,
}

/// What an [`Attributor`] keeps at a moment (its memory is proportional to these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Kept {
    /// Windows open or waiting for their beneficiaries.
    pub windows: usize,
    /// Of them, closed and waiting (at most [`MAX_WAITING_WINDOWS`] after each sweep).
    pub waiting: usize,
    /// Packets not settled (at most [`MAX_OBJECTS`]).
    pub objects: usize,
    /// Work items queued, timers armed and block requests pending (each at most
    /// [`MAX_ITEMS`]).
    pub items: usize,
    /// Decisions made and not taken yet ([`Attributor::take_decided`]).
    pub decided: usize,
}

impl Attributor {
    /// An attributor that cuts stacks at `entries`. With no entries (kernel addresses hidden)
    /// a sample counts as softirq work by its time alone.
    pub fn new(entries: SoftirqEntries) -> Attributor {
        Attributor {
            entries,
            net_rx: true,
            block: true,
            cpus: Vec::new(),
            windows: BTreeMap::new(),
            next_window: 0,
            waiting: BTreeSet::new(),
            net: NetObjects::default(),
            finals: HashMap::new(),
            finals_order: VecDeque::new(),
            queued: HashMap::new(),
            armed: HashMap::new(),
            requests: HashMap::new(),
            tasks: HashMap::new(),
            next_ticket: 0,
            decided: Vec::new(),
            taken: false,
            splitter: Splitter::default(),
            totals: BTreeMap::new(),
            since_sweep: 0,
            sweep_interval: 1024,
        }
    }

    /// Attributes only `kinds` (their records are the only ones fed): a sample in
    /// `net_rx_action` outside any window is not held as an unseen window's unless network
    /// receive is one of them. [`Attributor::new`] attributes every kind.
    pub fn with_kinds(mut self, kinds: &[Kind]) -> Attributor {
        self.net_rx = kinds.contains(&Kind::NetRx);
        self.block = kinds.contains(&Kind::Block);
        self
    }

    /// Settles what it can and retires what waits for nothing after at least `records`
    /// records and samples (and at least as many as it keeps: the cost per record stays
    /// constant). Default is 1,024; fewer decides sooner at more cost. Who gets what does not
    /// depend on it, unless a bound drops something, but for the split's rounding: windows
    /// are split in the order they are decided ([`split`](crate::split): each beneficiary
    /// stays within one window's worth of its share in any order).
    pub fn with_sweep_interval(mut self, records: usize) -> Attributor {
        self.sweep_interval = records.max(1);
        self
    }

    /// What it keeps now.
    pub fn kept(&self) -> Kept {
        Kept {
            windows: self.windows.len(),
            waiting: self.waiting.len(),
            objects: self.net.objects.len(),
            items: self.queued.len() + self.armed.len() + self.requests.len(),
            decided: self.decided.len(),
        }
    }

    /// The decisions made since the last call, by ticket as they were made: a caller that
    /// places each held sample as soon as its beneficiary is known keeps only the samples
    /// still undecided (the bounds at [`MAX_OBJECTS`] and [`MAX_WAITING_WINDOWS`] limit
    /// those), instead of every held sample until the end. Once called, [`Outcome::decided`]
    /// holds the decisions left at the end, and [`Outcome::decisions`] is empty.
    pub fn take_decided(&mut self) -> Vec<(u32, Decision)> {
        self.taken = true;
        std::mem::take(&mut self.decided)
    }

    /// Whether decisions wait to be taken ([`Attributor::take_decided`]).
    pub fn has_decided(&self) -> bool {
        !self.decided.is_empty()
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuState {
        let i = cpu as usize;
        if self.cpus.len() <= i {
            self.cpus.resize(i + 1, CpuState::default());
        }
        &mut self.cpus[i]
    }

    fn kind_of(&self, w: u64) -> Option<Kind> {
        self.windows.get(&w).map(|w| w.kind)
    }

    fn totals_of(&mut self, kind: Kind) -> &mut Totals {
        self.totals.entry(kind).or_insert_with(|| Totals::new(kind))
    }

    /// Charges held sample `ticket` to `to`.
    fn decide(&mut self, ticket: u32, kind: Kind, frames: usize, to: Target) {
        let t = self.totals_of(kind);
        t.held += 1;
        match to {
            Target::Process { .. } => t.attributed += 1,
            Target::Unattributed(r) => *t.residue.entry(r).or_default() += 1,
        }
        self.decided.push((ticket, Decision { kind, frames, to }));
    }

    /// A CPU sample taken on `cpu` in thread `tid`, its kernel frames innermost first (fed
    /// in time order with the events). Returns its ticket when it is asynchronous work, which
    /// the caller holds back; None when it is the running process's own.
    ///
    /// A sample is held, innermost work first: when a timer callback window run in a softirq
    /// is open on its CPU and its stack passes through a timer runner ([`TIMER_NAMES`]) —
    /// the innermost such window: the sampling timer's own hard-interrupt window is open
    /// around every sample ([`Context`]); when a `NET_RX`
    /// window is open on its CPU, no hard interrupt handler runs inside it, and its stack
    /// passes through a softirq entry (when the entries are known: a stack that does not is
    /// evidence the window's exit was lost), or, with no window open, when its stack passes
    /// through `net_rx_action` (the window was not seen: [`Reason::WindowUnseen`]); when a
    /// `BLOCK` window is open, no hard interrupt handler runs, and its stack passes through
    /// `blk_done_softirq` ([`BLOCK_NAMES`], cut there), or with no window open likewise
    /// (unseen); when its thread runs a work item and its stack passes through
    /// `process_one_work`.
    ///
    /// [`TIMER_NAMES`]: crate::TIMER_NAMES
    /// [`BLOCK_NAMES`]: crate::BLOCK_NAMES
    pub fn sample(&mut self, cpu: u32, tid: u32, kernel: &[u64]) -> Option<Held> {
        if kernel.is_empty() {
            return None;
        }
        let state = self.cpu(cpu).clone();
        let timer = state.timers.iter().rev().find(|t| !t.hard).and_then(|t| {
            Some((
                Kind::Timer,
                self.entries.cut_deferred(false, kernel)?,
                Some(t.window),
            ))
        });
        let softirq = || {
            let open = state.window.and_then(|w| Some((w, self.kind_of(w)?)));
            let block = || match self.entries.is_empty() {
                true => Some(kernel.len()),
                false => self.entries.cut_block(kernel),
            };
            match (open, self.entries.cut(kernel)) {
                (Some(_), _) if state.irq_depth > 0 => None,
                (Some((w, Kind::Block)), _) => Some((Kind::Block, block()?, Some(w))),
                (Some((w, kind)), Some(c)) => Some((kind, c.frames, Some(w))),
                (Some((w, kind)), None) if self.entries.is_empty() => {
                    Some((kind, kernel.len(), Some(w)))
                }
                (None, Some(c)) if c.net_rx && self.net_rx => Some((Kind::NetRx, c.frames, None)),
                (None, _) if self.block => {
                    Some((Kind::Block, self.entries.cut_block(kernel)?, None))
                }
                _ => None,
            }
        };
        let work = || {
            let &w = self.tasks.get(&tid)?;
            Some((
                Kind::Workqueue,
                self.entries.cut_deferred(true, kernel)?,
                Some(w),
            ))
        };
        let (kind, frames, window) = timer.or_else(softirq).or_else(work)?;
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        match window.and_then(|w| self.windows.get_mut(&w)) {
            Some(w) => w.samples.push((ticket, frames)),
            // A sample no window took is one whose window was not seen.
            None => self.decide(
                ticket,
                kind,
                frames,
                Target::Unattributed(Reason::WindowUnseen),
            ),
        }
        self.tick();
        Some(Held {
            ticket,
            kind,
            frames,
        })
    }

    /// The owner of a work item queued or a timer armed by record `e`, fired in `context`
    /// (the rule at [`Reason::NoOwner`]); None when the record says nothing of it (in the
    /// idle task, or in an interrupt outside every window of its own context).
    fn owner_of(&mut self, e: &Event, context: Context) -> Option<Owner> {
        let cpu = self.cpu(e.cpu).clone();
        let hard = context == Context::Hardirq;
        let timer = cpu.timers.iter().rev().find(|t| t.hard == hard);
        let task = self.tasks.get(&e.tid).filter(|_| context == Context::Task);
        if let Some(&w) = timer.map(|t| &t.window).or(task) {
            return self.windows.get(&w).and_then(|w| w.owner);
        }
        match (cpu.window, context) {
            (_, Context::Hardirq) => None,
            (Some(w), _) => {
                let window = self.windows.get(&w)?;
                let serving = window.serving?;
                let Owner::Packet(o) = serving else {
                    return Some(serving);
                };
                // Its reader owns what is queued now: kept after the packet is forgotten.
                if let Some(obj) = self.net.objects.get_mut(&o) {
                    obj.referenced = true;
                    return Some(serving);
                }
                // Settled already (copied out while its window runs): its reader is known.
                let at = window.objects.iter().position(|&x| x == o)?;
                let (to, _) = window.settled.get(at).copied().flatten()?;
                Some(Owner::Known(as_owner(to)))
            }
            (None, Context::Softirq) => None,
            (None, Context::Task) => (e.pid != 0).then_some(Owner::Known(Target::Process {
                pid: e.pid,
                time: e.time,
            })),
        }
    }

    /// Opens a window of a work item or timer callback.
    fn open_owned(&mut self, kind: Kind, owner: Option<Owner>) -> u64 {
        let owner = owner.unwrap_or(Owner::Known(Target::Unattributed(Reason::NoObject)));
        self.open(kind, Some(owner))
    }

    fn open(&mut self, kind: Kind, owner: Option<Owner>) -> u64 {
        let id = self.next_window;
        self.next_window += 1;
        self.windows.insert(id, Window::new(kind, owner));
        id
    }

    /// A tracepoint record (records fed in time order).
    pub fn event(&mut self, e: Event) {
        self.apply(e);
        self.tick();
    }

    fn apply(&mut self, e: Event) {
        let open = self.cpu(e.cpu).window;
        let window = open.filter(|&w| self.kind_of(w) == Some(Kind::NetRx));
        match e.what {
            What::SoftirqEntry { vec } => {
                // Softirqs do not nest on a CPU, and hard interrupts have returned before one
                // starts: whatever was open had its exit lost.
                self.close(e.cpu);
                let state = self.cpu(e.cpu);
                state.irq_depth = 0;
                let timers = std::mem::take(&mut state.timers);
                for t in timers {
                    self.closed(t.window);
                }
                let kind = match vec {
                    NET_RX_VECTOR => Kind::NetRx,
                    BLOCK_VECTOR => Kind::Block,
                    _ => return,
                };
                let id = self.open(kind, None);
                self.cpu(e.cpu).window = Some(id);
            }
            What::SoftirqExit { .. } => self.close(e.cpu),
            What::IrqEntry { .. } => self.cpu(e.cpu).irq_depth += 1,
            What::IrqExit { .. } => {
                let state = self.cpu(e.cpu);
                state.irq_depth = state.irq_depth.saturating_sub(1);
            }
            What::NetReceive { skb, len } => {
                // Outside a window (threaded NAPI, busy polling) the work is the running
                // task's own.
                if let Some(w) = window
                    && let Some(index) = self.windows.get(&w).map(|w| w.objects.len())
                {
                    let o = self.net.received(skb, len, w, index);
                    if let Some(window) = self.windows.get_mut(&w) {
                        window.objects.push(o);
                        window.settled.push(None);
                        window.serving = Some(Owner::Packet(o));
                    }
                    if self.net.objects.len() > MAX_OBJECTS
                        && let Some((&oldest, _)) = self.net.objects.first_key_value()
                    {
                        self.settle(oldest, false);
                    }
                }
            }
            // Also outside a window: a packet for a socket its owner held locked was put on
            // the socket's backlog in the window and reaches TCP (and this event) later, in
            // the owner's context.
            What::TcpProbe { skb, sk, .. } => {
                if let (Some(w), Some(o)) = (window, self.net.object_at(skb))
                    && let Some(window) = self.windows.get_mut(&w)
                {
                    window.serving = Some(Owner::Packet(o));
                }
                self.net.probed(skb, sk, window.is_none());
            }
            What::DataReady { sk } => {
                if let Some(w) = window
                    && let Some(window) = self.windows.get_mut(&w)
                {
                    window.ready = match window.ready {
                        Ready::None => Ready::One(sk),
                        Ready::One(s) if s == sk => Ready::One(s),
                        _ => Ready::Many,
                    };
                    let since = window.claimed;
                    window.claimed = window.objects.len();
                    self.net.guess(&window.objects[since..], sk);
                }
            }
            What::CopyDatagram { skb, .. } => self.net.copied(skb, e.pid, e.time),
            What::RecvLength { sk, ret } if ret > 0 => self.net.used(sk, e.pid, e.time),
            What::SendLength { sk, ret } if ret >= 0 => self.net.used(sk, e.pid, e.time),
            What::RecvLength { .. } | What::SendLength { .. } => {}
            What::WorkQueued { work, context } => {
                let owner = self.owner_of(&e, context).unwrap_or(NO_OWNER);
                self.queued.insert(work, (owner, e.time));
                if self.queued.len() > MAX_ITEMS {
                    let n = trim_oldest(&mut self.queued);
                    self.totals_of(Kind::Workqueue).evicted += n;
                }
            }
            What::WorkStart { work } => {
                let owner = self.queued.remove(&work).map(|(o, _)| o);
                let w = self.open_owned(Kind::Workqueue, owner);
                if let Some(old) = self.tasks.insert(e.tid, w) {
                    self.closed(old);
                }
            }
            What::WorkEnd { .. } => {
                if let Some(w) = self.tasks.remove(&e.tid) {
                    self.closed(w);
                }
            }
            What::TimerArmed { timer, context } => {
                // Re-armed where nothing names an owner, a timer keeps the one it had: on
                // 6.18 a timer its own callback re-arms is enqueued after the callback's
                // window closed, in the interrupt.
                match self.owner_of(&e, context) {
                    Some(owner) => {
                        self.armed.insert(timer, (owner, e.time));
                    }
                    None => {
                        let entry = self.armed.entry(timer).or_insert((NO_OWNER, e.time));
                        entry.1 = e.time;
                    }
                }
                if self.armed.len() > MAX_ITEMS {
                    let n = trim_oldest(&mut self.armed);
                    self.totals_of(Kind::Timer).evicted += n;
                }
            }
            What::TimerEntry { timer, context } => {
                let owner = self.armed.get_mut(&timer).map(|a| {
                    a.1 = e.time;
                    a.0
                });
                let window = self.open_owned(Kind::Timer, owner);
                let timers = &mut self.cpu(e.cpu).timers;
                let dropped = (timers.len() >= MAX_OPEN_TIMERS).then(|| timers.remove(0));
                timers.push(OpenTimer {
                    window,
                    timer,
                    hard: context == Context::Hardirq,
                });
                if let Some(t) = dropped {
                    self.closed(t.window);
                }
            }
            What::BlockQueued {
                dev,
                sector,
                sectors,
                issue,
                context,
            } => {
                let pending = self.requests.entry((dev, sector)).or_default();
                if issue && let Some(r) = pending.iter_mut().find(|r| !r.issued) {
                    r.issued = true;
                    return;
                }
                let owner = self.owner_of(&e, context).unwrap_or(NO_OWNER);
                (self.requests.entry((dev, sector)).or_default()).push_back(Request {
                    owner,
                    sectors,
                    issued: issue,
                    time: e.time,
                });
                if self.requests.len() > MAX_ITEMS {
                    let n = trim_oldest_requests(&mut self.requests);
                    self.totals_of(Kind::Block).evicted += n;
                }
            }
            What::BlockComplete {
                dev,
                sector,
                sectors,
            } => {
                let owner = self.complete(dev, sector, sectors, e.time);
                if let Some(w) = open.filter(|&w| self.kind_of(w) == Some(Kind::Block))
                    && let Some(window) = self.windows.get_mut(&w)
                {
                    window.requests.push((owner, sectors));
                    window.serving = Some(owner);
                }
            }
            // The innermost window of that timer closes, with any opened inside it whose exit
            // was lost.
            What::TimerExit { timer } => {
                let timers = &mut self.cpu(e.cpu).timers;
                if let Some(i) = timers.iter().rposition(|t| t.timer == timer) {
                    let gone: Vec<OpenTimer> = timers.drain(i..).collect();
                    for t in gone {
                        self.closed(t.window);
                    }
                }
            }
        }
    }

    /// Completes `sectors` sectors of the request pending at (`dev`, `sector`), the oldest
    /// there: its owner (a request queued before the run: nobody's). A partial completion
    /// leaves the rest pending where it now starts.
    fn complete(&mut self, dev: u32, sector: u64, sectors: u32, time: u64) -> Owner {
        let Some(pending) = self.requests.get_mut(&(dev, sector)) else {
            return Owner::Known(Target::Unattributed(Reason::NoObject));
        };
        let r = pending.pop_front();
        if pending.is_empty() {
            self.requests.remove(&(dev, sector));
        }
        let Some(r) = r else {
            return Owner::Known(Target::Unattributed(Reason::NoObject));
        };
        if r.sectors > sectors {
            let rest = Request {
                sectors: r.sectors - sectors,
                time,
                ..r
            };
            (self
                .requests
                .entry((dev, sector + u64::from(sectors)))
                .or_default())
            .push_front(rest);
        }
        r.owner
    }

    /// The beneficiary `owner` names, None while it is a packet not settled yet.
    fn resolve(&self, owner: Owner) -> Option<Target> {
        match owner {
            Owner::Known(t) => Some(t),
            Owner::Packet(o) if self.net.objects.contains_key(&o) => None,
            // A packet forgotten before its owner was asked for: dropped by the bounds.
            Owner::Packet(o) => Some(
                (self.finals.get(&o).copied()).unwrap_or(Target::Unattributed(Reason::Evicted)),
            ),
        }
    }

    /// Closes the window open on `cpu`, if any.
    fn close(&mut self, cpu: u32) {
        let Some(w) = self.cpu(cpu).window.take() else {
            return;
        };
        if let Some(window) = self.windows.get(&w)
            && let Ready::One(sk) = window.ready
        {
            let rest = window.objects[window.claimed..].to_vec();
            self.net.guess(&rest, sk);
        }
        self.net.prune_unlinked();
        self.closed(w);
    }

    /// Window `w` closed: retired at once when it can be, else it waits.
    fn closed(&mut self, w: u64) {
        let Some(window) = self.windows.get_mut(&w) else {
            return;
        };
        window.open = false;
        if !self.try_retire(w) {
            self.waiting.insert(w);
        }
    }

    /// Retires closed window `w` if nothing it waits for is left, deciding its samples; true
    /// when it was. A window whose samples are split waits for the next sweep
    /// ([`Attributor::commit`]).
    fn try_retire(&mut self, w: u64) -> bool {
        let Some(window) = self.windows.get(&w) else {
            return true;
        };
        if window.open {
            return false;
        }
        match window.owner {
            Some(owner) => {
                let Some(to) = self.resolve(owner) else {
                    return false;
                };
                let Some(window) = self.windows.remove(&w) else {
                    return true;
                };
                self.waiting.remove(&w);
                let t = self.totals_of(window.kind);
                t.windows += 1;
                if to != Target::Unattributed(Reason::NoObject) {
                    t.objects += 1;
                    t.unconsumed += u64::from(!matches!(to, Target::Process { .. }));
                }
                for (ticket, frames) in window.samples {
                    self.decide(ticket, window.kind, frames, to);
                }
                true
            }
            // A receive window's packets are counted as each is settled: holding no
            // sample, it waits for nothing.
            None if window.samples.is_empty() => {
                if window.kind == Kind::Block && self.served(window).is_none() {
                    return false;
                }
                self.retire_split(w);
                true
            }
            None => false,
        }
    }

    /// The weighted beneficiaries of a window whose samples are split: its packets' readers
    /// (by bytes) or its requests' owners (by sectors); None while one is not known yet.
    fn served(&self, window: &Window) -> Option<Vec<(Target, u64)>> {
        match window.kind {
            Kind::Block => (window.requests.iter())
                .map(|&(o, sectors)| Some((self.resolve(o)?, u64::from(sectors))))
                .collect(),
            _ => window.settled.iter().copied().collect(),
        }
    }

    /// Decides the samples of split window `w`, whose beneficiaries are all known, and
    /// retires it.
    fn retire_split(&mut self, w: u64) {
        let Some(window) = self.windows.remove(&w) else {
            return;
        };
        self.waiting.remove(&w);
        let served = self.served(&window).unwrap_or_default();
        let t = self.totals_of(window.kind);
        t.windows += 1;
        // Network receive counts its packets as each is settled.
        if window.kind == Kind::Block {
            t.objects += served.len() as u64;
            t.unconsumed += (served.iter())
                .filter(|(to, _)| !matches!(to, Target::Process { .. }))
                .count() as u64;
        }
        if window.samples.is_empty() {
            return;
        }
        let mut weights = Vec::new();
        let mut times: Vec<(u32, u64)> = Vec::new();
        for (to, weight) in served {
            match to {
                Target::Process { pid, time } => {
                    weights.push((Ok(pid), weight));
                    if !times.iter().any(|&(p, _)| p == pid) {
                        times.push((pid, time));
                    }
                }
                Target::Unattributed(r) => weights.push((Err(r), weight)),
            }
        }
        let to = self.splitter.split(window.samples.len(), &weights);
        for (i, &(ticket, frames)) in window.samples.iter().enumerate() {
            let to = match to.get(i) {
                None => Target::Unattributed(Reason::NoObject),
                Some(&Err(r)) => Target::Unattributed(r),
                Some(&Ok(pid)) => {
                    let time = times
                        .iter()
                        .find(|&&(p, _)| p == pid)
                        .map_or(0, |&(_, t)| t);
                    Target::Process { pid, time }
                }
            };
            self.decide(ticket, window.kind, frames, to);
        }
    }

    /// Settles packet `o` and forgets it: its reader (or the residue) goes to its window's
    /// share, and to what it owns. `end`: the run ended, so nothing can consume it any more;
    /// otherwise a packet not settled by the rule is dropped by the bounds ([`Reason::Evicted`]).
    fn settle(&mut self, o: u64, end: bool) {
        let Some(w) = self.net.objects.get(&o).map(|obj| obj.window) else {
            return;
        };
        let open = self.windows.get(&w).is_some_and(|w| w.open);
        let settled = end || self.net.is_settled(o, open);
        let Some(obj) = self.net.remove(o) else {
            return;
        };
        let t = self.totals_of(Kind::NetRx);
        t.objects += 1;
        let to = match obj.consumer {
            Some(c) => Target::Process {
                pid: c.pid,
                time: c.time,
            },
            None if settled => {
                t.unconsumed += 1;
                Target::Unattributed(Reason::NoConsumer)
            }
            None => {
                t.unconsumed += 1;
                t.evicted += 1;
                Target::Unattributed(Reason::Evicted)
            }
        };
        if let Some(window) = self.windows.get_mut(&obj.window)
            && let Some(slot) = window.settled.get_mut(obj.index)
        {
            *slot = Some((to, obj.bytes));
        }
        if obj.referenced {
            self.finals.insert(o, as_owner(to));
            self.finals_order.push_back(o);
            if self.finals_order.len() > MAX_OBJECTS
                && let Some(old) = self.finals_order.pop_front()
            {
                self.finals.remove(&old);
            }
        }
    }

    /// Counts a record or sample; every so often ([`Attributor::with_sweep_interval`]),
    /// settles and retires what it can.
    fn tick(&mut self) {
        self.since_sweep += 1;
        let kept = self.net.objects.len() + self.waiting.len();
        if self.since_sweep >= kept.max(self.sweep_interval) {
            self.sweep();
        }
    }

    /// Settles every packet that is settled, retires the windows that wait for nothing, and
    /// applies [`MAX_WAITING_WINDOWS`].
    fn sweep(&mut self) {
        self.since_sweep = 0;
        let settled: Vec<u64> = (self.net.objects.iter())
            .filter(|&(&o, obj)| {
                let open = self.windows.get(&obj.window).is_some_and(|w| w.open);
                self.net.is_settled(o, open)
            })
            .map(|(&o, _)| o)
            .collect();
        for o in settled {
            self.settle(o, false);
        }
        self.net.compact();
        self.commit();
        while self.waiting.len() > MAX_WAITING_WINDOWS {
            let Some(&w) = self.waiting.first() else {
                break;
            };
            self.force(w);
        }
    }

    /// Retires the waiting windows that can be, oldest first. (Those whose samples are split
    /// are decided as soon as their beneficiaries are known, not strictly in the order they
    /// opened: one waiting for a slow reader must not hold the others. The split's carried
    /// credit keeps its guarantee in any order: each beneficiary's samples stay within one
    /// window's worth of its exact share.)
    fn commit(&mut self) {
        let waiting: Vec<u64> = self.waiting.iter().copied().collect();
        for w in waiting {
            let Some(window) = self.windows.get(&w) else {
                self.waiting.remove(&w);
                continue;
            };
            if window.owner.is_some() || window.samples.is_empty() {
                self.try_retire(w);
            } else if self.served(window).is_some() {
                self.retire_split(w);
            }
        }
    }

    /// Decides waiting window `w` now: the packets it waits for are dropped (the bounds).
    fn force(&mut self, w: u64) {
        let Some(window) = self.windows.get(&w) else {
            self.waiting.remove(&w);
            return;
        };
        let mut owners: Vec<Owner> = window.owner.into_iter().collect();
        owners.extend(window.requests.iter().map(|&(o, _)| o));
        let mut packets: Vec<u64> = (owners.iter())
            .filter_map(|o| match *o {
                Owner::Packet(o) => Some(o),
                Owner::Known(_) => None,
            })
            .collect();
        packets.extend(window.objects.iter().copied());
        for o in packets {
            self.settle(o, false);
        }
        if !self.try_retire(w) {
            self.retire_split(w);
        }
    }

    /// Ends the run: the decisions not taken yet, and the totals.
    pub fn finish(mut self) -> Outcome {
        for cpu in 0..self.cpus.len() {
            self.close(cpu as u32);
            let timers = std::mem::take(&mut self.cpus[cpu].timers);
            for t in timers {
                self.closed(t.window);
            }
        }
        let tasks: Vec<u64> = self.tasks.drain().map(|(_, w)| w).collect();
        for w in tasks {
            self.closed(w);
        }
        // Whatever has no consumer now never will.
        let objects: Vec<u64> = self.net.objects.keys().copied().collect();
        for o in objects {
            self.settle(o, true);
        }
        self.commit();
        debug_assert!(self.windows.is_empty() && self.waiting.is_empty());
        let mut decided = std::mem::take(&mut self.decided);
        decided.sort_by_key(|&(ticket, _)| ticket);
        let (decisions, decided) = match self.taken {
            false => (decided.into_iter().map(|(_, d)| d).collect(), Vec::new()),
            true => (Vec::new(), decided),
        };
        Outcome {
            decisions,
            decided,
            totals: self.totals.into_values().collect(),
        }
    }
}

/// A packet's reader as the owner of what was queued while it was processed.
fn as_owner(to: Target) -> Target {
    match to {
        Target::Unattributed(Reason::NoConsumer) => Target::Unattributed(Reason::NoOwner),
        to => to,
    }
}

/// Drops the least recently used half of `items` (at [`MAX_ITEMS`]); how many.
fn trim_oldest<K: std::hash::Hash + Eq>(items: &mut HashMap<K, (Owner, u64)>) -> u64 {
    let mut times: Vec<u64> = items.values().map(|&(_, t)| t).collect();
    let mid = times.len() / 2;
    let (_, &mut median, _) = times.select_nth_unstable(mid);
    let before = items.len();
    items.retain(|_, &mut (_, t)| t > median);
    (before - items.len()) as u64
}

/// Drops the least recently queued half of the pending requests' keys; how many requests.
fn trim_oldest_requests(requests: &mut HashMap<(u32, u64), VecDeque<Request>>) -> u64 {
    let newest = |q: &VecDeque<Request>| q.iter().map(|r| r.time).max().unwrap_or(0);
    let mut times: Vec<u64> = requests.values().map(newest).collect();
    let mid = times.len() / 2;
    let (_, &mut median, _) = times.select_nth_unstable(mid);
    let mut dropped = 0;
    requests.retain(|_, q| {
        let keep = newest(q) > median;
        if !keep {
            dropped += q.len() as u64;
        }
        keep
    });
    dropped
}
