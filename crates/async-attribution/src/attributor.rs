//! The attribution's state machine: windows per CPU, held samples, and the decisions made
//! when the run ends.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::Kind;
use crate::entries::SoftirqEntries;
use crate::event::{BLOCK_VECTOR, Context, Event, NET_RX_VECTOR, What};
use crate::net::NetObjects;
use crate::split::Splitter;

/// Attributes asynchronous work; see the crate docs for its use.
#[derive(Debug)]
pub struct Attributor {
    entries: SoftirqEntries,
    /// Whether network receive is attributed (its windows traced).
    net_rx: bool,
    /// Whether block completion is attributed.
    block: bool,
    cpus: Vec<CpuState>,
    windows: Vec<Window>,
    net: NetObjects,
    /// Work item address → who queued it, until a kworker starts it.
    queued: HashMap<u64, Owner>,
    /// Timer address → who armed it last (a periodic timer re-armed by its own callback
    /// keeps its owner).
    armed: HashMap<u64, Owner>,
    /// Block requests pending, by (device, sector), oldest first (FIFO per key).
    requests: HashMap<(u32, u64), VecDeque<Request>>,
    /// Thread → the work item window it runs (a kworker may be preempted, so its window is
    /// the task's, not the CPU's).
    tasks: HashMap<u32, u32>,
    /// By ticket.
    held: Vec<HeldSample>,
}

/// Who owns a work item or a timer: known when it was queued or armed, or the reader of the
/// packet a network receive window was processing then, known when the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Known(Target),
    Packet(u32),
}

/// A block request queued or issued and not yet completed.
#[derive(Debug, Clone, Copy)]
struct Request {
    owner: Owner,
    sectors: u32,
    /// Whether its `block_rq_issue` was seen (an inserted request is issued later).
    issued: bool,
}

const NO_OWNER: Owner = Owner::Known(Target::Unattributed(Reason::NoOwner));

#[derive(Debug, Clone, Default)]
struct CpuState {
    /// The open `NET_RX` or `BLOCK` softirq window.
    window: Option<u32>,
    /// The open timer callback windows, innermost last (a high-resolution timer's hard
    /// interrupt, the sampling timer's among them, may come inside a softirq's callback).
    timers: Vec<OpenTimer>,
    /// Hard interrupt handlers running (their samples are not the softirq's).
    irq_depth: u32,
}

/// A timer callback window open on a CPU.
#[derive(Debug, Clone, Copy)]
struct OpenTimer {
    window: u32,
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
    objects: Vec<u32>,
    /// How many of `objects` an `sk_data_ready` has claimed.
    claimed: usize,
    ready: Ready,
    /// Tickets of its samples, in time order.
    samples: Vec<u32>,
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
            objects: Vec::new(),
            claimed: 0,
            ready: Ready::None,
            samples: Vec::new(),
            owner,
            serving: None,
            requests: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct HeldSample {
    kind: Kind,
    frames: usize,
}

/// A sample held back: keep it aside under its ticket until [`Attributor::finish`].
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
}

impl Reason {
    /// Every reason.
    pub const ALL: [Reason; 4] = [
        Reason::WindowUnseen,
        Reason::NoObject,
        Reason::NoConsumer,
        Reason::NoOwner,
    ];

    /// Its name in reports and files: `window-unseen`, `no-object`, `no-consumer`,
    /// `no-owner`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::WindowUnseen => "window-unseen",
            Reason::NoObject => "no-object",
            Reason::NoConsumer => "no-consumer",
            Reason::NoOwner => "no-owner",
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
    /// By ticket.
    pub decisions: Vec<Decision>,
    /// One per kind that held samples or saw windows, in [`Kind`] order.
    pub totals: Vec<Totals>,
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
            windows: Vec::new(),
            net: NetObjects::default(),
            queued: HashMap::new(),
            armed: HashMap::new(),
            requests: HashMap::new(),
            tasks: HashMap::new(),
            held: Vec::new(),
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

    fn cpu(&mut self, cpu: u32) -> &mut CpuState {
        let i = cpu as usize;
        if self.cpus.len() <= i {
            self.cpus.resize(i + 1, CpuState::default());
        }
        &mut self.cpus[i]
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
            let open = state.window.map(|w| (w, self.windows[w as usize].kind));
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
        let ticket = self.held.len() as u32;
        self.held.push(HeldSample { kind, frames });
        if let Some(w) = window {
            self.windows[w as usize].samples.push(ticket);
        }
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
            return self.windows[w as usize].owner;
        }
        match (cpu.window, context) {
            (_, Context::Hardirq) => None,
            (Some(w), _) => self.windows[w as usize].serving,
            (None, Context::Softirq) => None,
            (None, Context::Task) => (e.pid != 0).then_some(Owner::Known(Target::Process {
                pid: e.pid,
                time: e.time,
            })),
        }
    }

    /// Opens a window of a work item or timer callback.
    fn open_owned(&mut self, kind: Kind, owner: Option<Owner>) -> u32 {
        let id = self.windows.len() as u32;
        let owner = owner.unwrap_or(Owner::Known(Target::Unattributed(Reason::NoObject)));
        self.windows.push(Window::new(kind, Some(owner)));
        id
    }

    /// The reader of packet `o` as an owner.
    fn reader_of(&self, o: u32) -> Target {
        match self.net.objects[o as usize].consumer {
            Some(c) => Target::Process {
                pid: c.pid,
                time: c.time,
            },
            None => Target::Unattributed(Reason::NoOwner),
        }
    }

    /// Each window's owner resolved, None for network receive windows.
    fn owners(&self) -> Vec<Option<Target>> {
        (self.windows.iter())
            .map(|w| Some(self.resolve(w.owner?)))
            .collect()
    }

    /// A tracepoint record (records fed in time order).
    pub fn event(&mut self, e: Event) {
        let open = self.cpu(e.cpu).window;
        let window = open.filter(|&w| self.windows[w as usize].kind == Kind::NetRx);
        match e.what {
            What::SoftirqEntry { vec } => {
                // Softirqs do not nest on a CPU, and hard interrupts have returned before one
                // starts: whatever was open had its exit lost.
                self.close(e.cpu);
                let state = self.cpu(e.cpu);
                state.irq_depth = 0;
                state.timers.clear();
                let kind = match vec {
                    NET_RX_VECTOR => Kind::NetRx,
                    BLOCK_VECTOR => Kind::Block,
                    _ => return,
                };
                let id = self.windows.len() as u32;
                self.windows.push(Window::new(kind, None));
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
                if let Some(w) = window {
                    let o = self.net.received(skb, len);
                    self.windows[w as usize].objects.push(o);
                    self.windows[w as usize].serving = Some(Owner::Packet(o));
                }
            }
            // Also outside a window: a packet for a socket its owner held locked was put on
            // the socket's backlog in the window and reaches TCP (and this event) later, in
            // the owner's context.
            What::TcpProbe { skb, sk, .. } => {
                if let (Some(w), Some(o)) = (window, self.net.object_at(skb)) {
                    self.windows[w as usize].serving = Some(Owner::Packet(o));
                }
                self.net.probed(skb, sk, window.is_none());
            }
            What::DataReady { sk } => {
                if let Some(w) = window {
                    let window = &mut self.windows[w as usize];
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
                self.queued.insert(work, owner);
            }
            What::WorkStart { work } => {
                let owner = self.queued.remove(&work);
                let w = self.open_owned(Kind::Workqueue, owner);
                self.tasks.insert(e.tid, w);
            }
            What::WorkEnd { .. } => {
                self.tasks.remove(&e.tid);
            }
            What::TimerArmed { timer, context } => {
                // Re-armed where nothing names an owner, a timer keeps the one it had: on
                // 6.18 a timer its own callback re-arms is enqueued after the callback's
                // window closed, in the interrupt.
                match self.owner_of(&e, context) {
                    Some(owner) => {
                        self.armed.insert(timer, owner);
                    }
                    None => {
                        self.armed.entry(timer).or_insert(NO_OWNER);
                    }
                }
            }
            What::TimerEntry { timer, context } => {
                let owner = self.armed.get(&timer).copied();
                let window = self.open_owned(Kind::Timer, owner);
                self.cpu(e.cpu).timers.push(OpenTimer {
                    window,
                    timer,
                    hard: context == Context::Hardirq,
                });
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
                });
            }
            What::BlockComplete {
                dev,
                sector,
                sectors,
            } => {
                let owner = self.complete(dev, sector, sectors);
                if let Some(w) = open.filter(|&w| self.windows[w as usize].kind == Kind::Block) {
                    let window = &mut self.windows[w as usize];
                    window.requests.push((owner, sectors));
                    window.serving = Some(owner);
                }
            }
            // The innermost window of that timer closes, with any opened inside it whose exit
            // was lost.
            What::TimerExit { timer } => {
                let timers = &mut self.cpu(e.cpu).timers;
                if let Some(i) = timers.iter().rposition(|t| t.timer == timer) {
                    timers.truncate(i);
                }
            }
        }
    }

    /// Completes `sectors` sectors of the request pending at (`dev`, `sector`), the oldest
    /// there: its owner (a request queued before the run: nobody's). A partial completion
    /// leaves the rest pending where it now starts.
    fn complete(&mut self, dev: u32, sector: u64, sectors: u32) -> Owner {
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

    /// The beneficiary `owner` names, as known at the end.
    fn resolve(&self, owner: Owner) -> Target {
        match owner {
            Owner::Known(t) => t,
            Owner::Packet(o) => self.reader_of(o),
        }
    }

    /// The weighted beneficiaries of a window whose samples are split: its packets' readers
    /// (by bytes) or its requests' owners (by sectors).
    fn served(&self, window: &Window) -> Vec<(Target, u64)> {
        match window.kind {
            Kind::Block => (window.requests.iter())
                .map(|&(o, sectors)| (self.resolve(o), u64::from(sectors)))
                .collect(),
            _ => (window.objects.iter())
                .map(|&o| {
                    let obj = &self.net.objects[o as usize];
                    let to = match obj.consumer {
                        Some(c) => Target::Process {
                            pid: c.pid,
                            time: c.time,
                        },
                        None => Target::Unattributed(Reason::NoConsumer),
                    };
                    (to, obj.bytes)
                })
                .collect(),
        }
    }

    /// Closes the window open on `cpu`, if any.
    fn close(&mut self, cpu: u32) {
        let Some(w) = self.cpu(cpu).window.take() else {
            return;
        };
        let window = &self.windows[w as usize];
        if let Ready::One(sk) = window.ready {
            self.net.guess(&window.objects[window.claimed..], sk);
        }
        self.net.prune_unlinked();
    }

    /// Ends the run: every held sample's decision, and the totals.
    pub fn finish(mut self) -> Outcome {
        for cpu in 0..self.cpus.len() {
            self.close(cpu as u32);
        }
        // A sample no window took is one whose window was not seen.
        let mut decisions: Vec<Decision> = self
            .held
            .iter()
            .map(|h| Decision {
                kind: h.kind,
                frames: h.frames,
                to: Target::Unattributed(Reason::WindowUnseen),
            })
            .collect();
        let owners = self.owners();
        // Split by pid or by the reason there is none (credit carries per beneficiary).
        let mut splitter = Splitter::<Result<u32, Reason>>::default();
        let mut weights = Vec::new();
        let mut times: Vec<(u32, u64)> = Vec::new();
        for (window, owner) in self.windows.iter().zip(&owners) {
            if let &Some(owner) = owner {
                for &ticket in &window.samples {
                    decisions[ticket as usize].to = owner;
                }
                continue;
            }
            weights.clear();
            times.clear();
            for (to, weight) in self.served(window) {
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
            let to = splitter.split(window.samples.len(), &weights);
            for (i, &ticket) in window.samples.iter().enumerate() {
                decisions[ticket as usize].to = match to.get(i) {
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
            }
        }
        let totals = self.totals(&decisions, &owners);
        Outcome { decisions, totals }
    }

    fn totals(&self, decisions: &[Decision], owners: &[Option<Target>]) -> Vec<Totals> {
        let mut by_kind: BTreeMap<Kind, Totals> = BTreeMap::new();
        for (w, owner) in self.windows.iter().zip(owners) {
            let t = by_kind.entry(w.kind).or_insert_with(|| Totals::new(w.kind));
            t.windows += 1;
            match *owner {
                Some(Target::Unattributed(Reason::NoObject)) => continue,
                Some(o) => {
                    t.objects += 1;
                    t.unconsumed += u64::from(o == Target::Unattributed(Reason::NoOwner));
                    continue;
                }
                None => {}
            }
            let served = self.served(w);
            t.objects += served.len() as u64;
            t.unconsumed += served
                .iter()
                .filter(|(to, _)| !matches!(to, Target::Process { .. }))
                .count() as u64;
        }
        for d in decisions {
            let t = by_kind.entry(d.kind).or_insert_with(|| Totals::new(d.kind));
            t.held += 1;
            match d.to {
                Target::Process { .. } => t.attributed += 1,
                Target::Unattributed(r) => *t.residue.entry(r).or_default() += 1,
            }
        }
        by_kind.into_values().collect()
    }
}
