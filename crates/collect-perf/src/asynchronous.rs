//! Asynchronous-event attribution while aggregating (`pkgmon --async`): the tracepoints it
//! needs, their records decoded into [`async_attribution`] events by field name, and the
//! samples it holds back until the run ends. The attribution itself (windows, objects,
//! consumers, the split and the residue) is the `async-attribution` crate's; this module
//! only feeds it and keeps what a held sample will need once its beneficiary is known (its
//! cut kernel frames and its period: the user frames are the victim's and never move), until
//! the attribution decides it: the [`crate::Aggregator`] places each as soon as it is decided,
//! so what is kept is what can still be attributed, not every held sample of the run.

use std::collections::{HashMap, VecDeque};

use async_attribution::{Attributor, Context, Decision, Event, Kind, SoftirqEntries, Totals, What};

use crate::config::TracepointRequest;
use crate::recording::{Recording, Sample, TraceSample};

mod bpf;

pub use bpf::BlockPrograms;

/// What `pkgmon --async` attributes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AsyncOptions {
    /// Where kernel stacks enter softirq processing, from the kernel's symbols
    /// ([`KernelSymbols::softirq_entries`](crate::KernelSymbols::softirq_entries)). Default
    /// is empty: samples count as softirq work by their time alone (and work items and
    /// timer callbacks are not found: they need their runners' addresses).
    pub entries: SoftirqEntries,
    /// The kinds of work attributed: their tracepoints are traced. Default is network
    /// receive alone.
    pub kinds: Vec<Kind>,
    /// Whether block windows, hard interrupts and completions come from BPF programs
    /// ([`BlockPrograms`], handed to [`crate::Aggregator::kernel_block`]), which see them in
    /// the idle task too: their perf tracepoints are then not opened. Default false.
    pub kernel_block: bool,
}

impl Default for AsyncOptions {
    fn default() -> Self {
        AsyncOptions {
            entries: SoftirqEntries::default(),
            kinds: vec![Kind::NetRx],
            kernel_block: false,
        }
    }
}

/// A tracepoint: system, name, kernel-side filter.
type Traced = (&'static str, &'static str, Option<&'static str>);

/// The tracepoints of network-receive attribution, each with its kernel-side filter (records
/// that do not match are never written: at tens of thousands of packets a second every
/// record costs), decoded by field name from the format read at run time: the `NET_RX`
/// window (vector 3 only, counted by a twin, so windows run in the idle task, which perf
/// does not sample, are known by number), hard interrupts inside it, the tag events and the
/// consume events. UDP reads a linear packet without `skb_copy_datagram_iovec`, so its
/// packets are linked to their socket by `sock:sk_data_ready` in the window; sending is a use
/// of the socket only for TCP (its acknowledgements), so `sock_send_length` is TCP's only.
const NET: [Traced; 10] = [
    ("irq", "softirq_entry", Some("vec == 3")),
    ("irq", "softirq_exit", Some("vec == 3")),
    ("irq", "irq_handler_entry", None),
    ("irq", "irq_handler_exit", None),
    ("net", "netif_receive_skb", None),
    ("tcp", "tcp_probe", None),
    ("sock", "sk_data_ready", None),
    ("skb", "skb_copy_datagram_iovec", None),
    ("sock", "sock_recv_length", Some("ret > 0")),
    (
        "sock",
        "sock_send_length",
        Some("protocol == 6 && ret >= 0"),
    ),
];

/// The tracepoints of work items: who queued each, and the kworker's window around it.
const WORKQUEUE: [Traced; 3] = [
    ("workqueue", "workqueue_queue_work", None),
    ("workqueue", "workqueue_execute_start", None),
    ("workqueue", "workqueue_execute_end", None),
];

/// The tracepoints of timers, lists and high-resolution: who armed each, and the window
/// around its callback. Arming in the idle task (the tick, every time a CPU goes idle) is
/// filtered out in the kernel: it would only say "no owner", at thousands of records a
/// second (a timer the idle task re-arms keeps its previous owner: timers the idle task
/// arms are the kernel's own, which no process arms).
const TIMER: [Traced; 6] = [
    ("timer", "timer_start", Some("common_pid != 0")),
    ("timer", "timer_expire_entry", None),
    ("timer", "timer_expire_exit", None),
    ("timer", "hrtimer_start", Some("common_pid != 0")),
    ("timer", "hrtimer_expire_entry", None),
    ("timer", "hrtimer_expire_exit", None),
];

/// The tracepoints of block I/O completion: the `BLOCK` window (vector 4 only, counted by its
/// own twin, as network receive's), hard interrupts inside it, who queued each request (at
/// its insertion into a scheduler, or its issue to the driver when it went through none) and
/// its completion.
const BLOCK: [Traced; 7] = [
    ("irq", "softirq_entry", Some("vec == 4")),
    ("irq", "softirq_exit", Some("vec == 4")),
    ("irq", "irq_handler_entry", None),
    ("irq", "irq_handler_exit", None),
    ("block", "block_rq_insert", None),
    ("block", "block_rq_issue", None),
    ("block", "block_rq_complete", None),
];

/// The tracepoints a kind needs.
fn traced(kind: Kind) -> &'static [Traced] {
    match kind {
        Kind::NetRx => &NET,
        Kind::Workqueue => &WORKQUEUE,
        Kind::Timer => &TIMER,
        Kind::Block => &BLOCK,
        _ => &[],
    }
}

/// The window tracepoint whose counting twins count every window of a softirq kind (one
/// event per kind, each filtered to its vector: [`window_kind`] tells them apart).
pub(crate) const WINDOW_EVENT: &str = AsyncOptions::WINDOW_EVENT;

/// The kind whose windows a [`WINDOW_EVENT`] with `filter` records.
pub(crate) fn window_kind(filter: Option<&str>) -> Option<Kind> {
    [Kind::NetRx, Kind::Block]
        .into_iter()
        .find(|&k| traced(k)[0].2 == filter)
}

impl AsyncOptions {
    /// The tracepoint whose counting twins count the windows the kernel ran: the attribution
    /// reports those it did not see, and why (`async.moves`' `counted` lines).
    pub const WINDOW_EVENT: &str = "irq:softirq_entry";

    /// Every tracepoint of the kinds perf records, once (kinds share the hard-interrupt
    /// ones), without those the block programs replace.
    fn traced(&self) -> Vec<&'static Traced> {
        let replaced = |t: &Traced| self.kernel_block && bpf::REPLACED.contains(t);
        let mut out: Vec<&'static Traced> = Vec::new();
        for t in self.kinds.iter().flat_map(|&k| traced(k)) {
            if !out.contains(&t) && !replaced(t) {
                out.push(t);
            }
        }
        out
    }

    /// The tracepoint requests for the sampler: every task on every CPU (the window runs in
    /// whatever task the CPU was running; the consumer is another process), no callchains.
    pub fn tracepoints(&self) -> Vec<TracepointRequest> {
        self.traced()
            .into_iter()
            .map(|&(system, name, filter)| {
                let mut r = TracepointRequest::new(system, name);
                r.all_tasks = true;
                r.filter = filter.map(str::to_owned);
                r.count = format!("{system}:{name}") == WINDOW_EVENT;
                r
            })
            .collect()
    }
}

/// `common_flags` bits of a record fired in a hard interrupt or an NMI, and in a softirq
/// (`TRACE_FLAG_HARDIRQ`, `TRACE_FLAG_NMI`, `TRACE_FLAG_SOFTIRQ` in
/// `include/linux/trace_events.h`, stable since 2.6.30).
const IN_HARDIRQ: u64 = 0x08 | 0x40;
const IN_SOFTIRQ: u64 = 0x10;

/// Decodes a record of tracepoint `name` (`system:name`) into an attribution event.
fn decode(name: &str, raw: &crate::tracepoint::RawEvent<'_>) -> Option<What> {
    let u = |f: &str| raw.u64(f);
    let context = || match raw.u64("common_flags").unwrap_or(0) {
        f if f & IN_HARDIRQ != 0 => Context::Hardirq,
        f if f & IN_SOFTIRQ != 0 => Context::Softirq,
        _ => Context::Task,
    };
    let i = |f: &str| raw.i64(f).map(|v| v as i32);
    Some(match name {
        "irq:softirq_entry" => What::SoftirqEntry {
            vec: u("vec")? as u32,
        },
        "irq:softirq_exit" => What::SoftirqExit {
            vec: u("vec")? as u32,
        },
        "irq:irq_handler_entry" => What::IrqEntry { irq: i("irq")? },
        "irq:irq_handler_exit" => What::IrqExit { irq: i("irq")? },
        "net:netif_receive_skb" => What::NetReceive {
            skb: u("skbaddr")?,
            len: u("len")? as u32,
        },
        "tcp:tcp_probe" => What::TcpProbe {
            skb: u("skbaddr")?,
            sk: u("skaddr")?,
            cookie: u("sock_cookie").unwrap_or(0),
        },
        "sock:sk_data_ready" => What::DataReady { sk: u("skaddr")? },
        "skb:skb_copy_datagram_iovec" => What::CopyDatagram {
            skb: u("skbaddr")?,
            len: i("len")?,
        },
        "sock:sock_recv_length" => What::RecvLength {
            sk: u("sk")?,
            ret: i("ret")?,
        },
        "sock:sock_send_length" => What::SendLength {
            sk: u("sk")?,
            ret: i("ret")?,
        },
        "workqueue:workqueue_queue_work" => What::WorkQueued {
            work: u("work")?,
            context: context(),
        },
        "workqueue:workqueue_execute_start" => What::WorkStart { work: u("work")? },
        "workqueue:workqueue_execute_end" => What::WorkEnd { work: u("work")? },
        "timer:timer_start" => What::TimerArmed {
            timer: u("timer")?,
            context: context(),
        },
        "timer:timer_expire_entry" => What::TimerEntry {
            timer: u("timer")?,
            context: context(),
        },
        "timer:timer_expire_exit" => What::TimerExit { timer: u("timer")? },
        "timer:hrtimer_start" => What::TimerArmed {
            timer: u("hrtimer")?,
            context: context(),
        },
        "timer:hrtimer_expire_entry" => What::TimerEntry {
            timer: u("hrtimer")?,
            context: context(),
        },
        "timer:hrtimer_expire_exit" => What::TimerExit {
            timer: u("hrtimer")?,
        },
        "block:block_rq_insert" | "block:block_rq_issue" => What::BlockQueued {
            dev: u("dev")? as u32,
            sector: u("sector")?,
            sectors: u("nr_sector")? as u32,
            issue: name == "block:block_rq_issue",
            context: context(),
        },
        "block:block_rq_complete" => What::BlockComplete {
            dev: u("dev")? as u32,
            sector: u("sector")?,
            sectors: u("nr_sector")? as u32,
        },
        _ => return None,
    })
}

/// A held sample: what it will give its beneficiary.
#[derive(Debug, Clone)]
pub(crate) struct HeldSample {
    /// The process it was taken in (its victim), None for the idle task.
    pub victim: Option<u32>,
    /// Where its counts would have gone unmoved: the victim's process (by replay index) and
    /// time, or the system-wide kernel profile (the idle task, a kernel thread).
    pub taken: (usize, u64, bool),
    /// Its kernel frames from the softirq entry in, innermost first.
    pub kernel: Vec<u64>,
    /// The CPU time it stands for.
    pub period: u64,
}

/// The attribution being fed.
#[derive(Debug)]
pub(crate) struct AsyncCollector {
    attributor: Attributor,
    opts: AsyncOptions,
    /// By tracepoint index: whether it is one of ours (decided when first seen).
    ours: Vec<bool>,
    /// By ticket, the held samples not decided yet.
    held: HashMap<u32, HeldSample>,
    /// Tag records whose fields could not be read (a format without them).
    pub undecodable: u64,
    /// The block programs, and their events read but not fed yet (by time).
    kernel: Option<BlockPrograms>,
    pending: VecDeque<Event>,
}

/// What the block programs ([`BlockPrograms`]) saw during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelBlock {
    /// `BLOCK` softirqs the kernel ran.
    pub windows: u64,
    /// Records written.
    pub records: u64,
    /// Records lost.
    pub lost: u64,
}

impl AsyncCollector {
    pub fn new(opts: &AsyncOptions) -> AsyncCollector {
        AsyncCollector {
            attributor: Attributor::new(opts.entries.clone()).with_kinds(&opts.kinds),
            opts: opts.clone(),
            ours: Vec::new(),
            held: HashMap::new(),
            undecodable: 0,
            kernel: None,
            pending: VecDeque::new(),
        }
    }

    /// Takes the block programs' events: read at each batch ([`AsyncCollector::read_kernel`]),
    /// fed among the perf records by time.
    pub fn kernel_block(&mut self, programs: BlockPrograms) {
        self.kernel = Some(programs);
    }

    /// Reads the block programs' events written since the last call (before the next batch of
    /// perf records: those of the batch are older than the read, so every event older than
    /// a record is read by the time the record is fed).
    pub fn read_kernel(&mut self) {
        let Some(k) = &mut self.kernel else { return };
        let mut read = Vec::new();
        k.read(|e| read.push(e));
        self.queue(read);
    }

    /// Queues events to feed by time among the perf records (they come in order on each CPU,
    /// not across CPUs).
    fn queue(&mut self, events: Vec<Event>) {
        if !events.is_empty() {
            self.pending.extend(events);
            self.pending.make_contiguous().sort_by_key(|e| e.time);
        }
    }

    /// Feeds the block programs' events up to `time` (the next perf record's).
    fn catch_up(&mut self, time: u64) {
        while self.pending.front().is_some_and(|e| e.time <= time) {
            if let Some(e) = self.pending.pop_front() {
                self.attributor.event(e);
            }
        }
    }

    /// Offers a sample of process `pi` (by replay index); true when it was held back (the
    /// caller must not count it).
    pub fn sample(&mut self, s: &Sample, pi: usize, kernel: &[u64]) -> bool {
        self.catch_up(s.time);
        if s.user_mode {
            return false;
        }
        let Some(h) = self.attributor.sample(s.cpu, s.tid, kernel) else {
            return false;
        };
        self.held.insert(
            h.ticket,
            HeldSample {
                victim: (s.pid != 0).then_some(s.pid),
                taken: (pi, s.time, s.is_system_side()),
                kernel: kernel[..h.frames].to_vec(),
                period: s.period,
            },
        );
        true
    }

    /// The held samples decided since the last call, with their decisions (for the caller
    /// to place now).
    pub fn take_decided(&mut self) -> Vec<(Decision, HeldSample)> {
        if !self.attributor.has_decided() {
            return Vec::new();
        }
        let decided = self.attributor.take_decided();
        (decided.into_iter())
            .filter_map(|(ticket, d)| Some((d, self.held.remove(&ticket)?)))
            .collect()
    }

    /// Offers a tracepoint record; true when it was one of the attribution's.
    pub fn trace(&mut self, rec: &Recording, t: &TraceSample) -> bool {
        let event = t.event as usize;
        while self.ours.len() < rec.tracepoints.len() {
            let name = &rec.tracepoints[self.ours.len()].format.name;
            let ours = (self.opts.traced().iter()).any(|(s, n, _)| *name == format!("{s}:{n}"));
            self.ours.push(ours);
        }
        if !self.ours.get(event).copied().unwrap_or(false) {
            return false;
        }
        self.catch_up(t.sample.time);
        let info = &rec.tracepoints[event];
        let raw = info.format.decode(rec.raw(t));
        match decode(&info.format.name, &raw) {
            Some(what) => self.attributor.event(Event {
                time: t.sample.time,
                cpu: t.sample.cpu,
                pid: t.sample.pid,
                tid: t.sample.tid,
                what,
            }),
            None => self.undecodable += 1,
        }
        true
    }

    /// Ends the attribution: the held samples not decided yet with their decisions, the
    /// totals, and what the block programs saw if they ran.
    pub fn finish(
        &mut self,
    ) -> (
        Vec<(Decision, HeldSample)>,
        Vec<Totals>,
        Option<KernelBlock>,
    ) {
        // Stopped first, so that the counts and the records read agree.
        if let Some(k) = &mut self.kernel {
            k.stop();
        }
        self.read_kernel();
        self.catch_up(u64::MAX);
        let kernel = self.kernel.as_ref().map(|k| KernelBlock {
            windows: k.windows(),
            records: k.records(),
            lost: k.lost(),
        });
        let attributor = std::mem::replace(
            &mut self.attributor,
            Attributor::new(SoftirqEntries::default()),
        );
        let out = attributor.finish();
        // By ticket when none was decided before the end.
        let rest: Vec<(u32, Decision)> = match out.decisions.is_empty() {
            true => out.decided,
            false => (out.decisions.into_iter().enumerate())
                .map(|(ticket, d)| (ticket as u32, d))
                .collect(),
        };
        let rest = (rest.into_iter())
            .filter_map(|(ticket, d)| Some((d, self.held.remove(&ticket)?)))
            .collect();
        (rest, out.totals, kernel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block programs' events reach the attribution before the perf records stamped
    /// after them, whatever order they were read in: a sample inside a window they opened is
    /// held, one after the window closed is not.
    #[test]
    fn kernel_events_are_fed_in_time_order_among_the_samples() {
        let opts = AsyncOptions {
            kinds: vec![Kind::Block],
            kernel_block: true,
            ..AsyncOptions::default()
        };
        let mut a = AsyncCollector::new(&opts);
        let event = |time, what| Event {
            time,
            cpu: 1,
            pid: 0,
            tid: 0,
            what,
        };
        a.queue(vec![
            event(30, What::SoftirqExit { vec: 4 }),
            event(10, What::SoftirqEntry { vec: 4 }),
        ]);
        let mut rec = Recording::default();
        let kernel = [0xffff_ffff_8100_0000];
        for time in [5, 20, 40] {
            rec.push_sample(
                time,
                0,
                0,
                1,
                250_000,
                kernel[0],
                false,
                None,
                &kernel,
                &[],
                &[],
            );
        }
        let held: Vec<bool> = (rec.samples.iter())
            .map(|s| a.sample(s, 0, &kernel))
            .collect();
        assert_eq!(held, [false, true, false]);
        let (samples, totals, _) = a.finish();
        assert_eq!(samples.len(), 1);
        assert_eq!(totals[0].windows, 1);
    }
}
