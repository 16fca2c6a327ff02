//! Replays of hand-made per-CPU timelines: each test builds what the kernel would have emitted
//! for a known situation and checks where every held sample went, and that each kind's
//! samples are conserved.
//!
//! Longer than 800 lines because its 24 tests are written in one small timeline language (the
//! `Timelines` builder below), each a page of events; split, every file would repeat it.

use async_attribution::{
    Attributor, BLOCK_VECTOR, Context, Decision, Event, Kind, MAX_ITEMS, MAX_OBJECTS,
    MAX_WAITING_WINDOWS, NET_RX_VECTOR, Reason, SoftirqEntries, Target, What,
};

// A fake kernel: each function one 0x100-byte range.
const SYSCALL: u64 = 0x1000; // entry_SYSCALL_64 … the sender's sendmsg path
const BH_ENABLE: u64 = 0x1100; // __local_bh_enable_ip → do_softirq
const HANDLE_SOFTIRQS: u64 = 0x2000;
const NET_RX_ACTION: u64 = 0x2100;
const UDP_RCV: u64 = 0x2200;
const TCP_V4_RCV: u64 = 0x2300;
const IRQ_HANDLER: u64 = 0x3000;
const RUN_KSOFTIRQD: u64 = 0x4000;
const WORKER_THREAD: u64 = 0x5000;
const PROCESS_ONE_WORK: u64 = 0x5100;
const WB_WORKFN: u64 = 0x5200;
const RUN_HRTIMER: u64 = 0x6100;
const TCP_PACE_KICK: u64 = 0x6200;
const CALL_TIMER_FN: u64 = 0x6300;
const DELAYED_WORK_TIMER_FN: u64 = 0x6400;
const BLK_DONE_SOFTIRQ: u64 = 0x7000;
const BLK_MQ_END_REQUEST: u64 = 0x7100;

fn entries() -> SoftirqEntries {
    SoftirqEntries::from_symbols([
        ("handle_softirqs", HANDLE_SOFTIRQS, HANDLE_SOFTIRQS + 0x100),
        ("net_rx_action", NET_RX_ACTION, NET_RX_ACTION + 0x100),
        (
            "process_one_work",
            PROCESS_ONE_WORK,
            PROCESS_ONE_WORK + 0x100,
        ),
        ("__run_hrtimer", RUN_HRTIMER, RUN_HRTIMER + 0x100),
        ("call_timer_fn", CALL_TIMER_FN, CALL_TIMER_FN + 0x100),
        (
            "blk_done_softirq",
            BLK_DONE_SOFTIRQ,
            BLK_DONE_SOFTIRQ + 0x100,
        ),
    ])
}

/// A stack of the loopback path: receive work below the softirq entry, inside a send.
fn loopback(leaf: u64) -> Vec<u64> {
    vec![
        leaf + 8,
        NET_RX_ACTION + 8,
        HANDLE_SOFTIRQS + 8,
        BH_ENABLE + 8,
        SYSCALL + 8,
    ]
}

enum Rec {
    Sample { pid: u32, kernel: Vec<u64> },
    Event { pid: u32, what: What },
}

/// Per-CPU timelines of (time, record).
#[derive(Default)]
struct Timelines(Vec<Vec<(u64, Rec)>>);

impl Timelines {
    fn on(&mut self, cpu: usize, time: u64, rec: Rec) -> &mut Self {
        if self.0.len() <= cpu {
            self.0.resize_with(cpu + 1, Vec::new);
        }
        self.0[cpu].push((time, rec));
        self
    }
    fn ev(&mut self, cpu: usize, time: u64, pid: u32, what: What) -> &mut Self {
        self.on(cpu, time, Rec::Event { pid, what })
    }
    fn sample(&mut self, cpu: usize, time: u64, pid: u32, kernel: Vec<u64>) -> &mut Self {
        self.on(cpu, time, Rec::Sample { pid, kernel })
    }
    /// A NET_RX window on `cpu` from `t` in `victim`'s context: `inside` are its records (at
    /// t+1, t+2, …), then its exit.
    fn window(&mut self, cpu: usize, t: u64, victim: u32, inside: Vec<Rec>) -> &mut Self {
        self.ev(cpu, t, victim, What::SoftirqEntry { vec: NET_RX_VECTOR });
        let n = inside.len() as u64;
        for (i, r) in inside.into_iter().enumerate() {
            self.on(cpu, t + 1 + i as u64, r);
        }
        self.ev(
            cpu,
            t + 1 + n,
            victim,
            What::SoftirqExit { vec: NET_RX_VECTOR },
        )
    }

    /// Feeds every CPU's records merged in time order (ties by CPU); the decisions of the
    /// samples, in the order they were fed (None: not held), and the totals, whose
    /// conservation is checked here for every test. Each timeline is also fed to an
    /// attributor that settles after every record and whose decisions are taken as they are
    /// made: they must be the same.
    fn run(&mut self) -> (Vec<(u32, Option<Decision>)>, Vec<async_attribution::Totals>) {
        let (decided, totals) = self.run_with(Attributor::new(entries()), false);
        let eager = Attributor::new(entries()).with_sweep_interval(1);
        let (eagerly, eager_totals) = self.run_with(eager, true);
        assert_eq!(decided, eagerly, "decided as the run goes");
        assert_eq!(totals, eager_totals, "decided as the run goes");
        (decided, totals)
    }

    /// [`Timelines::run`] with `a`, taking its decisions after every record when `take`.
    fn run_with(
        &mut self,
        mut a: Attributor,
        take: bool,
    ) -> (Vec<(u32, Option<Decision>)>, Vec<async_attribution::Totals>) {
        let mut all: Vec<(u64, usize, usize)> = Vec::new();
        for (cpu, t) in self.0.iter().enumerate() {
            for (i, (time, _)) in t.iter().enumerate() {
                all.push((*time, cpu, i));
            }
        }
        all.sort();
        let mut taken = std::collections::BTreeMap::new();
        let mut tickets = Vec::new();
        for (time, cpu, i) in all {
            match &self.0[cpu][i].1 {
                Rec::Sample { pid, kernel } => {
                    let held = a.sample(cpu as u32, *pid, kernel);
                    if let Some(h) = held {
                        assert!(h.frames <= kernel.len());
                    }
                    tickets.push((*pid, held));
                }
                Rec::Event { pid, what } => a.event(Event {
                    time,
                    cpu: cpu as u32,
                    pid: *pid,
                    tid: *pid,
                    what: *what,
                }),
            }
            if take {
                for (ticket, d) in a.take_decided() {
                    assert!(taken.insert(ticket, d).is_none(), "ticket {ticket} twice");
                }
            }
        }
        let mut out = a.finish();
        if take {
            assert!(out.decisions.is_empty());
            for (ticket, d) in std::mem::take(&mut out.decided) {
                assert!(taken.insert(ticket, d).is_none(), "ticket {ticket} twice");
            }
            out.decisions = taken.into_values().collect();
        }
        let held = tickets.iter().filter(|t| t.1.is_some()).count() as u64;
        assert_eq!(out.decisions.len() as u64, held);
        for t in &out.totals {
            assert!(t.is_conserved(), "{t:?}");
        }
        assert_eq!(out.totals.iter().map(|t| t.held).sum::<u64>(), held);
        let decided = tickets
            .into_iter()
            .map(|(pid, h)| {
                let d = h.map(|h| {
                    let d = out.decisions[h.ticket as usize];
                    assert_eq!((d.kind, d.frames), (h.kind, h.frames));
                    d
                });
                (pid, d)
            })
            .collect();
        (decided, out.totals)
    }
}

fn s(pid: u32, kernel: Vec<u64>) -> Rec {
    Rec::Sample { pid, kernel }
}
fn e(pid: u32, what: What) -> Rec {
    Rec::Event { pid, what }
}
fn rx(skb: u64, len: u32) -> What {
    What::NetReceive { skb, len }
}

/// Samples charged to each target.
fn charged(d: &[(u32, Option<Decision>)], to: impl Fn(Target) -> bool) -> usize {
    d.iter()
        .filter(|(_, d)| d.is_some_and(|d| to(d.to)))
        .count()
}
fn to_pid(pid: u32) -> impl Fn(Target) -> bool {
    move |t| matches!(t, Target::Process { pid: p, .. } if p == pid)
}
fn residue(r: Reason) -> impl Fn(Target) -> bool {
    move |t| t == Target::Unattributed(r)
}

const SENDER: u32 = 100;
const RECEIVER: u32 = 200;
const OTHER: u32 = 300;

#[test]
fn udp_loopback_moves_the_receive_work_from_the_sender_to_the_reader() {
    let mut t = Timelines::default();
    for k in 0..20u64 {
        let at = k * 100;
        let skb = 0xa000 + (k % 3) * 0x100; // addresses reused, each after its copy
        // The sender's own work, then its send runs the softirq.
        t.sample(0, at, SENDER, vec![SYSCALL + 0x10]);
        t.window(
            0,
            at + 10,
            SENDER,
            vec![
                e(SENDER, rx(skb, 1000)),
                s(SENDER, loopback(UDP_RCV)),
                s(SENDER, loopback(UDP_RCV)),
                e(SENDER, What::DataReady { sk: 0x5000 }),
            ],
        );
        // The reader, on the other CPU, copies it out.
        t.ev(1, at + 50, RECEIVER, What::CopyDatagram { skb, len: 1000 });
        t.ev(
            1,
            at + 51,
            RECEIVER,
            What::RecvLength {
                sk: 0x5000,
                ret: 1000,
            },
        );
    }
    let (d, totals) = t.run();
    assert_eq!(charged(&d, to_pid(RECEIVER)), 40);
    assert_eq!(charged(&d, |_| true), 40);
    // The sender's own samples stay: not held.
    assert_eq!(d.iter().filter(|(_, d)| d.is_none()).count(), 20);
    // Cut below the send: udp_rcv, net_rx_action, handle_softirqs.
    assert!(
        d.iter()
            .flat_map(|x| x.1)
            .all(|d| d.frames == 3 && d.kind == Kind::NetRx)
    );
    assert_eq!(
        (totals[0].windows, totals[0].objects, totals[0].unconsumed),
        (20, 20, 0)
    );
}

#[test]
fn a_gro_batch_is_split_by_bytes_not_by_event_order() {
    // Each window: four packets received first (GRO list receive), then the TCP work of all
    // of them; socket A's packets carry 1000 bytes, socket B's 3000. The samples all come
    // after the receives, so slicing by time would give everything to the last packet.
    let mut t = Timelines::default();
    for k in 0..50u64 {
        let at = k * 100;
        let (a1, a2, b1, b2) = (
            0x100 + k * 16,
            0x200 + k * 16,
            0x300 + k * 16,
            0x400 + k * 16,
        );
        let mut inside = vec![
            e(0, rx(a1, 500)),
            e(0, rx(b1, 1500)),
            e(0, rx(a2, 500)),
            e(0, rx(b2, 1500)),
        ];
        for (skb, sk) in [(a1, 0xa), (b1, 0xb), (a2, 0xa), (b2, 0xb)] {
            inside.push(e(
                0,
                What::TcpProbe {
                    skb,
                    sk,
                    cookie: sk,
                },
            ));
        }
        inside.extend((0..4).map(|_| {
            s(
                OTHER,
                vec![
                    TCP_V4_RCV + 4,
                    NET_RX_ACTION + 4,
                    HANDLE_SOFTIRQS + 4,
                    RUN_KSOFTIRQD,
                ],
            )
        }));
        t.window(0, at, OTHER, inside);
        t.ev(
            1,
            at + 60,
            RECEIVER,
            What::RecvLength { sk: 0xa, ret: 1000 },
        );
        t.ev(
            1,
            at + 61,
            RECEIVER + 1,
            What::RecvLength { sk: 0xb, ret: 3000 },
        );
    }
    let (d, _) = t.run();
    let (a, b) = (
        charged(&d, to_pid(RECEIVER)),
        charged(&d, to_pid(RECEIVER + 1)),
    );
    assert_eq!((a, b), (50, 150));
}

#[test]
fn a_reused_skb_address_is_a_new_packet() {
    let mut t = Timelines::default();
    // The first packet at 0xab is dropped (never copied); the address comes back for a packet
    // the reader copies. The first window's work is not the reader's.
    t.window(
        0,
        10,
        SENDER,
        vec![e(SENDER, rx(0xab, 100)), s(SENDER, loopback(UDP_RCV))],
    );
    t.window(
        0,
        20,
        SENDER,
        vec![e(SENDER, rx(0xab, 100)), s(SENDER, loopback(UDP_RCV))],
    );
    t.ev(
        1,
        30,
        RECEIVER,
        What::CopyDatagram {
            skb: 0xab,
            len: 100,
        },
    );
    let (d, totals) = t.run();
    assert_eq!(
        d[0].1.map(|d| d.to),
        Some(Target::Unattributed(Reason::NoConsumer))
    );
    assert_eq!(
        d[1].1.map(|d| d.to),
        Some(Target::Process {
            pid: RECEIVER,
            time: 30
        })
    );
    assert_eq!(totals[0].unconsumed, 1);
}

#[test]
fn rps_runs_the_window_on_another_cpu() {
    // The sender enqueues on CPU 0; RPS steers the packet to CPU 1, whose softirq runs in
    // whatever task was there; the reader runs on CPU 0.
    let mut t = Timelines::default();
    t.sample(0, 5, SENDER, vec![SYSCALL]);
    t.window(
        1,
        10,
        OTHER,
        vec![e(OTHER, rx(0x77, 64)), s(OTHER, loopback(UDP_RCV))],
    );
    t.sample(0, 12, SENDER, vec![SYSCALL]);
    t.ev(0, 40, RECEIVER, What::CopyDatagram { skb: 0x77, len: 64 });
    let (d, _) = t.run();
    assert_eq!(d.iter().filter(|x| x.1.is_some()).count(), 1);
    assert_eq!(charged(&d, to_pid(RECEIVER)), 1);
}

#[test]
fn a_consumer_that_never_reads_leaves_residue_not_loss() {
    let mut t = Timelines::default();
    for k in 0..5u64 {
        t.window(
            0,
            k * 10,
            SENDER,
            vec![e(SENDER, rx(0x10 + k, 100)), s(SENDER, loopback(UDP_RCV))],
        );
    }
    // One window with no traced packet at all (its tag records were lost).
    t.window(0, 100, SENDER, vec![s(SENDER, loopback(UDP_RCV))]);
    let (d, totals) = t.run();
    assert_eq!(charged(&d, residue(Reason::NoConsumer)), 5);
    assert_eq!(charged(&d, residue(Reason::NoObject)), 1);
    let t = &totals[0];
    assert_eq!((t.held, t.attributed, t.unattributed()), (6, 0, 6));
}

#[test]
fn softirq_work_without_a_recorded_window_is_residue() {
    // The idle task ran the softirq: perf sampled the CPU but no tracepoint.
    let mut t = Timelines::default();
    t.sample(
        0,
        10,
        0,
        vec![UDP_RCV, NET_RX_ACTION, HANDLE_SOFTIRQS, 0x9000],
    );
    // A timer softirq's stack is not network work.
    t.sample(0, 11, 0, vec![0x9100, HANDLE_SOFTIRQS, 0x9000]);
    let (d, totals) = t.run();
    assert_eq!(
        d[0].1.map(|d| (d.to, d.frames)),
        Some((Target::Unattributed(Reason::WindowUnseen), 3))
    );
    assert_eq!(d[1].1, None);
    assert_eq!(totals[0].residue.get(&Reason::WindowUnseen), Some(&1));
}

#[test]
fn hard_interrupts_and_lost_exits_are_not_the_softirq() {
    let mut t = Timelines::default();
    t.window(
        0,
        10,
        SENDER,
        vec![
            e(SENDER, rx(0x1, 100)),
            e(SENDER, What::IrqEntry { irq: 24 }),
            s(SENDER, vec![IRQ_HANDLER, HANDLE_SOFTIRQS + 8, SYSCALL]),
            e(SENDER, What::IrqExit { irq: 24 }),
            s(SENDER, loopback(UDP_RCV)),
        ],
    );
    // A window whose exit was lost: the sender's later system-call samples are its own.
    t.ev(0, 30, SENDER, What::SoftirqEntry { vec: NET_RX_VECTOR });
    t.ev(0, 31, SENDER, rx(0x2, 100));
    t.sample(0, 32, SENDER, loopback(UDP_RCV));
    t.sample(0, 40, SENDER, vec![SYSCALL + 0x20, SYSCALL]);
    t.ev(1, 50, RECEIVER, What::CopyDatagram { skb: 0x1, len: 100 });
    t.ev(1, 51, RECEIVER, What::CopyDatagram { skb: 0x2, len: 100 });
    let (d, _) = t.run();
    let held: Vec<bool> = d.iter().map(|x| x.1.is_some()).collect();
    assert_eq!(held, [false, true, true, false]);
    assert_eq!(charged(&d, to_pid(RECEIVER)), 2);
}

#[test]
fn tcp_coalescing_and_acknowledgements_follow_the_socket() {
    let mut t = Timelines::default();
    // Data packet 0xd2 is coalesced into 0xd1 on the receiver's socket: only 0xd1 is
    // copied. The acknowledgement 0xac arrives at the sender's socket, which the sender
    // uses next by sending.
    t.window(
        0,
        10,
        SENDER,
        vec![
            e(SENDER, rx(0xd1, 3000)),
            e(
                SENDER,
                What::TcpProbe {
                    skb: 0xd1,
                    sk: 0xbeef,
                    cookie: 1,
                },
            ),
            e(SENDER, rx(0xd2, 3000)),
            e(
                SENDER,
                What::TcpProbe {
                    skb: 0xd2,
                    sk: 0xbeef,
                    cookie: 1,
                },
            ),
            e(SENDER, rx(0xac, 0)),
            e(
                SENDER,
                What::TcpProbe {
                    skb: 0xac,
                    sk: 0x5e,
                    cookie: 2,
                },
            ),
            s(SENDER, loopback(TCP_V4_RCV)),
            s(SENDER, loopback(TCP_V4_RCV)),
            s(SENDER, loopback(TCP_V4_RCV)),
        ],
    );
    t.ev(
        0,
        30,
        SENDER,
        What::SendLength {
            sk: 0x5e,
            ret: 6000,
        },
    );
    t.ev(
        1,
        40,
        RECEIVER,
        What::CopyDatagram {
            skb: 0xd1,
            len: 6000,
        },
    );
    t.ev(
        1,
        41,
        RECEIVER,
        What::RecvLength {
            sk: 0xbeef,
            ret: 6000,
        },
    );
    let (d, totals) = t.run();
    // 6000 bytes to the reader, 1 (an empty packet counts as one) to the sender.
    assert_eq!(charged(&d, to_pid(RECEIVER)), 3);
    assert_eq!(totals[0].unconsumed, 0);
    // A failed receive is no use of the socket.
    let mut t = Timelines::default();
    t.window(
        0,
        10,
        SENDER,
        vec![
            e(SENDER, rx(0xd1, 10)),
            e(
                SENDER,
                What::TcpProbe {
                    skb: 0xd1,
                    sk: 0xbeef,
                    cookie: 1,
                },
            ),
            s(SENDER, loopback(TCP_V4_RCV)),
        ],
    );
    t.ev(
        1,
        40,
        OTHER,
        What::RecvLength {
            sk: 0xbeef,
            ret: -11,
        },
    );
    t.ev(
        1,
        41,
        RECEIVER,
        What::RecvLength {
            sk: 0xbeef,
            ret: 10,
        },
    );
    assert_eq!(charged(&t.run().0, to_pid(RECEIVER)), 1);
}

#[test]
fn a_guessed_socket_gives_way_to_the_copy_of_the_packet() {
    let mut t = Timelines::default();
    // The window told one socket (0xa) of data, but packet 0x2 was another socket's whose
    // queue was not empty (UDP skips sk_data_ready then). 0xa's reader reads first.
    t.window(
        0,
        10,
        SENDER,
        vec![
            e(SENDER, rx(0x1, 100)),
            e(SENDER, rx(0x2, 100)),
            e(SENDER, What::DataReady { sk: 0xa }),
            s(SENDER, loopback(UDP_RCV)),
            s(SENDER, loopback(UDP_RCV)),
        ],
    );
    t.ev(1, 30, RECEIVER, What::RecvLength { sk: 0xa, ret: 100 });
    t.ev(1, 31, OTHER, What::CopyDatagram { skb: 0x2, len: 100 });
    let (d, _) = t.run();
    assert_eq!(
        (charged(&d, to_pid(RECEIVER)), charged(&d, to_pid(OTHER))),
        (1, 1)
    );
    // Alone, the guess stands: a packet nobody copied goes by its socket.
    let mut t = Timelines::default();
    t.window(
        0,
        10,
        SENDER,
        vec![
            e(SENDER, rx(0x1, 100)),
            e(SENDER, What::DataReady { sk: 0xa }),
            s(SENDER, loopback(UDP_RCV)),
        ],
    );
    t.ev(1, 30, RECEIVER, What::RecvLength { sk: 0xa, ret: 100 });
    assert_eq!(charged(&t.run().0, to_pid(RECEIVER)), 1);
}

#[test]
fn two_readers_fed_one_to_three_share_the_work_one_to_three() {
    // One window per send; the sends alternate A, B, B, B with equal sizes, the windows
    // hold 1 to 3 samples each.
    let mut t = Timelines::default();
    let mut next = 0u64;
    for k in 0..400u64 {
        let skb = 0x1000 + k;
        let (reader, len) = if k % 4 == 0 {
            (RECEIVER, 500)
        } else {
            (RECEIVER + 1, 500)
        };
        let n = 1 + (k * 7 % 3) as usize;
        let mut inside = vec![e(SENDER, rx(skb, len))];
        inside.extend((0..n).map(|_| s(SENDER, loopback(UDP_RCV))));
        t.window(0, next, SENDER, inside);
        next += 20;
        t.ev(
            1,
            next,
            reader,
            What::CopyDatagram {
                skb,
                len: len as i32,
            },
        );
    }
    let (d, _) = t.run();
    let (a, b) = (
        charged(&d, to_pid(RECEIVER)),
        charged(&d, to_pid(RECEIVER + 1)),
    );
    let share = a as f64 / (a + b) as f64;
    assert!((share - 0.25).abs() < 0.05, "{a} {b}");
}

#[test]
fn a_packet_merged_on_a_held_sockets_backlog_goes_with_the_backlog() {
    // The reader holds its socket (inside recv) when two segments arrive: the second is
    // merged into the first on the socket's backlog and has no event of its own; the reader
    // drains the backlog on release, where the first's tcp_probe fires, outside any window.
    let mut t = Timelines::default();
    t.window(
        0,
        10,
        SENDER,
        vec![e(SENDER, rx(0xd1, 1000)), s(SENDER, loopback(TCP_V4_RCV))],
    );
    t.window(
        0,
        20,
        SENDER,
        vec![e(SENDER, rx(0xd2, 1000)), s(SENDER, loopback(TCP_V4_RCV))],
    );
    t.ev(
        1,
        30,
        RECEIVER,
        What::TcpProbe {
            skb: 0xd1,
            sk: 0xbeef,
            cookie: 1,
        },
    );
    t.ev(
        1,
        31,
        RECEIVER,
        What::RecvLength {
            sk: 0xbeef,
            ret: 2000,
        },
    );
    let (d, totals) = t.run();
    assert_eq!(charged(&d, to_pid(RECEIVER)), 2);
    assert_eq!(totals[0].unconsumed, 0);
}

#[test]
fn each_data_ready_claims_the_packets_received_before_it() {
    // Loopback: each packet's protocol work (ending in sk_data_ready) runs before the next
    // packet is received, so in one window A's packet, then B's, each claimed by its own.
    let mut t = Timelines::default();
    for k in 0..4u64 {
        t.window(
            0,
            k * 20,
            SENDER,
            vec![
                e(SENDER, rx(0x100 + k, 100)),
                s(SENDER, loopback(UDP_RCV)),
                e(SENDER, What::DataReady { sk: 0xa }),
                e(SENDER, rx(0x200 + k, 300)),
                s(SENDER, loopback(UDP_RCV)),
                s(SENDER, loopback(UDP_RCV)),
                s(SENDER, loopback(UDP_RCV)),
                e(SENDER, What::DataReady { sk: 0xb }),
            ],
        );
        t.ev(
            1,
            k * 20 + 15,
            RECEIVER,
            What::RecvLength { sk: 0xa, ret: 100 },
        );
        t.ev(
            1,
            k * 20 + 16,
            OTHER,
            What::RecvLength { sk: 0xb, ret: 300 },
        );
    }
    let (d, _) = t.run();
    assert_eq!(
        (charged(&d, to_pid(RECEIVER)), charged(&d, to_pid(OTHER))),
        (4, 12)
    );
}

/// A kworker's stack in work item function `f`.
fn in_work(f: u64) -> Vec<u64> {
    vec![f + 8, PROCESS_ONE_WORK + 8, WORKER_THREAD + 8]
}

/// A stack in high-resolution timer callback `f`, run in the `HRTIMER` softirq inside a
/// system call (a callback run in a hard interrupt is never sampled: see [`Context`]).
fn in_soft_hrtimer(f: u64) -> Vec<u64> {
    vec![f + 8, RUN_HRTIMER + 8, HANDLE_SOFTIRQS + 8, SYSCALL + 8]
}

const WRITER: u32 = 400;
const KWORKER: u32 = 5;
const IDLE: u32 = 0;

#[test]
fn a_work_item_goes_whole_to_the_process_that_queued_it() {
    let mut t = Timelines::default();
    let work = 0xffff_0000_0000_1000;
    t.ev(0, 1, WRITER, work_queued(work, Context::Task))
        .ev(1, 2, KWORKER, What::WorkStart { work })
        .sample(1, 3, KWORKER, in_work(WB_WORKFN))
        .sample(1, 4, KWORKER, in_work(WB_WORKFN))
        // The kworker is preempted: the other task's sample on that CPU is its own.
        .sample(1, 5, OTHER, vec![SYSCALL + 8])
        // It resumes on CPU 0: its window is the task's, not the CPU's.
        .sample(0, 6, KWORKER, in_work(WB_WORKFN))
        .ev(0, 7, KWORKER, What::WorkEnd { work })
        // Between items the kworker's own.
        .sample(0, 8, KWORKER, vec![WORKER_THREAD + 8]);
    let (d, totals) = t.run();
    assert_eq!(charged(&d, to_pid(WRITER)), 3);
    assert_eq!(d.iter().filter(|x| x.1.is_some()).count(), 3);
    // The moved stack is the work from process_one_work in; worker_thread stays.
    assert!(
        d.iter()
            .filter_map(|x| x.1)
            .all(|x| x.kind == Kind::Workqueue && x.frames == 2)
    );
    let w = totals.iter().find(|t| t.kind == Kind::Workqueue).unwrap();
    assert_eq!((w.windows, w.objects, w.unconsumed), (1, 1, 0));
}

#[test]
fn work_queued_by_nobody_or_before_the_run_is_residue_and_chains_keep_their_owner() {
    let mut t = Timelines::default();
    let (a, b, c, d2) = (0x1000, 0x2000, 0x3000, 0x4000);
    // Started without its queueing seen (queued before the run began).
    t.ev(0, 1, KWORKER, What::WorkStart { work: a })
        .sample(0, 2, KWORKER, in_work(WB_WORKFN))
        .ev(0, 3, KWORKER, What::WorkEnd { work: a })
        // Queued in the idle task (an interrupt on an idle CPU).
        .ev(1, 4, IDLE, work_queued(b, Context::Task))
        .ev(0, 5, KWORKER, What::WorkStart { work: b })
        .sample(0, 6, KWORKER, in_work(WB_WORKFN))
        .ev(0, 7, KWORKER, What::WorkEnd { work: b })
        // The writer's item queues another from inside it: the second is the writer's too.
        .ev(1, 8, WRITER, work_queued(c, Context::Task))
        .ev(0, 9, KWORKER, What::WorkStart { work: c })
        .ev(0, 10, KWORKER, work_queued(d2, Context::Task))
        .ev(0, 11, KWORKER, What::WorkEnd { work: c })
        .ev(0, 12, KWORKER, What::WorkStart { work: d2 })
        .sample(0, 13, KWORKER, in_work(WB_WORKFN))
        .ev(0, 14, KWORKER, What::WorkEnd { work: d2 });
    let (d, totals) = t.run();
    let decided: Vec<Target> = d.iter().filter_map(|x| x.1).map(|x| x.to).collect();
    assert_eq!(decided.len(), 3);
    assert_eq!(decided[0], Target::Unattributed(Reason::NoObject));
    assert_eq!(decided[1], Target::Unattributed(Reason::NoOwner));
    assert_eq!(
        decided[2],
        Target::Process {
            pid: WRITER,
            time: 8
        }
    );
    let w = totals.iter().find(|t| t.kind == Kind::Workqueue).unwrap();
    // Four windows; three of them with their queueing seen, one of those owned by nobody.
    assert_eq!((w.windows, w.objects, w.unconsumed), (4, 3, 1));
}

/// A timer armed or fired in `context`.
fn work_queued(work: u64, context: Context) -> What {
    What::WorkQueued { work, context }
}
fn armed(timer: u64, context: Context) -> What {
    What::TimerArmed { timer, context }
}
fn fires(timer: u64, context: Context) -> What {
    What::TimerEntry { timer, context }
}
fn ends(timer: u64) -> What {
    What::TimerExit { timer }
}

#[test]
fn a_timer_callback_goes_to_the_process_that_armed_it_whoever_it_interrupts() {
    let mut t = Timelines::default();
    let (timer, tick, list) = (0x7000, 0x7100, 0x7200);
    t.ev(0, 1, WRITER, armed(timer, Context::Task))
        // The sampling timer, armed in the idle task: owned by nobody.
        .ev(1, 2, IDLE, armed(tick, Context::Task))
        // It fires on CPU 1 in the HRTIMER softirq inside another process's system call.
        .ev(1, 10, OTHER, fires(timer, Context::Softirq))
        .sample(1, 11, OTHER, in_soft_hrtimer(TCP_PACE_KICK))
        .ev(1, 12, OTHER, ends(timer))
        // The sampling timer's own expiry is a hard-interrupt window around every sample:
        // it holds no sample, whatever the stack shows.
        .ev(1, 13, OTHER, fires(tick, Context::Hardirq))
        .sample(1, 14, OTHER, vec![SYSCALL + 8])
        .sample(1, 15, OTHER, in_soft_hrtimer(TCP_PACE_KICK))
        .ev(1, 16, OTHER, ends(tick))
        // Periodic: its callback re-armed it (no record); it is still the writer's.
        .ev(0, 20, OTHER, fires(timer, Context::Softirq))
        // The sampling timer's window inside the callback's: the sample is the callback's.
        .ev(0, 21, OTHER, fires(tick, Context::Hardirq))
        .sample(0, 22, OTHER, in_soft_hrtimer(TCP_PACE_KICK))
        .ev(0, 23, OTHER, ends(tick))
        // Re-armed in its interrupt, inside the callback's window: not the callback's.
        .ev(0, 24, OTHER, armed(tick, Context::Hardirq))
        .ev(0, 25, OTHER, ends(timer))
        // A timer-list callback (TIMER softirq) queues a delayed work: the writer armed the
        // timer, so the work is the writer's too.
        .ev(1, 30, WRITER, armed(list, Context::Task))
        .ev(0, 31, OTHER, fires(list, Context::Softirq))
        .sample(
            0,
            32,
            OTHER,
            vec![
                DELAYED_WORK_TIMER_FN + 8,
                CALL_TIMER_FN + 8,
                HANDLE_SOFTIRQS + 8,
                SYSCALL + 8,
            ],
        )
        .ev(0, 33, OTHER, work_queued(0x9000, Context::Softirq))
        .ev(0, 34, OTHER, ends(list))
        .ev(1, 35, KWORKER, What::WorkStart { work: 0x9000 })
        .sample(1, 36, KWORKER, in_work(WB_WORKFN))
        .ev(1, 37, KWORKER, What::WorkEnd { work: 0x9000 })
        // The sampling timer again, around a soft callback it has no part in.
        .ev(1, 40, OTHER, fires(timer, Context::Softirq))
        .ev(1, 41, OTHER, fires(tick, Context::Hardirq))
        .sample(1, 42, OTHER, in_soft_hrtimer(TCP_PACE_KICK))
        .ev(1, 43, OTHER, ends(tick))
        .ev(1, 44, OTHER, ends(timer));
    let (d, totals) = t.run();
    let decided: Vec<(Kind, usize, Target)> = d
        .iter()
        .filter_map(|x| x.1)
        .map(|x| (x.kind, x.frames, x.to))
        .collect();
    let writer = |time| Target::Process { pid: WRITER, time };
    assert_eq!(
        decided,
        vec![
            (Kind::Timer, 2, writer(1)),
            (Kind::Timer, 2, writer(1)),
            (Kind::Timer, 2, writer(30)),
            (Kind::Workqueue, 2, writer(30)),
            (Kind::Timer, 2, writer(1)),
        ]
    );
    // The sample at 15 (a callback's stack in no callback's window) stays its victim's.
    assert_eq!(d[2], (OTHER, None));
    let timers = totals.iter().find(|t| t.kind == Kind::Timer).unwrap();
    // Seven windows, three of them the sampling timer's, owned by nobody.
    assert_eq!(
        (timers.windows, timers.objects, timers.unconsumed),
        (7, 7, 3)
    );
}

#[test]
fn a_timer_inside_a_receive_window_takes_only_its_own_samples() {
    let mut t = Timelines::default();
    let (tick, timer) = (0x7100, 0x7200);
    // The sampling timer, said to be the writer's so that its owner shows.
    t.ev(0, 1, WRITER, armed(tick, Context::Task));
    // The sampling timer's interrupt comes inside the sender's NET_RX window and re-arms
    // itself there: not the window's work. A timer the receive work arms belongs to the
    // window's reader, known at the end.
    t.window(
        0,
        10,
        SENDER,
        vec![
            e(SENDER, rx(0xa0, 100)),
            s(SENDER, loopback(UDP_RCV)),
            e(SENDER, fires(tick, Context::Hardirq)),
            s(SENDER, loopback(UDP_RCV)),
            e(SENDER, ends(tick)),
            e(SENDER, armed(tick, Context::Hardirq)),
            e(SENDER, armed(timer, Context::Softirq)),
            s(SENDER, loopback(UDP_RCV)),
        ],
    );
    t.ev(
        1,
        30,
        RECEIVER,
        What::CopyDatagram {
            skb: 0xa0,
            len: 100,
        },
    )
    .ev(1, 31, OTHER, fires(timer, Context::Softirq))
    .ev(1, 32, OTHER, fires(tick, Context::Hardirq))
    .sample(1, 33, OTHER, in_soft_hrtimer(TCP_PACE_KICK))
    .ev(1, 34, OTHER, ends(tick))
    .ev(1, 35, OTHER, ends(timer))
    // A hard-interrupt callback of the sampling timer queues work: its owner's, the writer's
    // still (it was re-armed in an interrupt outside every window of its context).
    .ev(1, 36, OTHER, fires(tick, Context::Hardirq))
    .ev(1, 37, OTHER, work_queued(0x9000, Context::Hardirq))
    .ev(1, 38, OTHER, ends(tick))
    .ev(0, 40, KWORKER, What::WorkStart { work: 0x9000 })
    .sample(0, 41, KWORKER, in_work(WB_WORKFN))
    .ev(0, 42, KWORKER, What::WorkEnd { work: 0x9000 });
    let (d, _) = t.run();
    let decided: Vec<(Kind, Target)> = d
        .iter()
        .filter_map(|x| x.1)
        .map(|x| (x.kind, x.to))
        .collect();
    let reader = Target::Process {
        pid: RECEIVER,
        time: 30,
    };
    assert_eq!(
        decided,
        vec![
            (Kind::NetRx, reader),
            (Kind::NetRx, reader),
            (Kind::NetRx, reader),
            (Kind::Timer, reader),
            (
                Kind::Workqueue,
                Target::Process {
                    pid: WRITER,
                    time: 1
                }
            ),
        ]
    );
}

#[test]
fn a_timer_armed_in_an_interrupt_outside_every_window_has_no_owner() {
    let mut t = Timelines::default();
    // Armed in a softirq (not one this run traces) that interrupted the writer, and in a
    // hard interrupt.
    t.ev(0, 1, WRITER, armed(0x7000, Context::Softirq))
        .ev(0, 2, WRITER, armed(0x7100, Context::Hardirq))
        .ev(1, 3, OTHER, fires(0x7000, Context::Softirq))
        .sample(1, 4, OTHER, in_soft_hrtimer(TCP_PACE_KICK))
        .ev(1, 5, OTHER, ends(0x7000))
        .ev(1, 6, OTHER, fires(0x7100, Context::Softirq))
        .sample(1, 7, OTHER, in_soft_hrtimer(TCP_PACE_KICK))
        .ev(1, 8, OTHER, ends(0x7100));
    let (d, _) = t.run();
    assert_eq!(charged(&d, residue(Reason::NoOwner)), 2);
}

#[test]
fn receive_work_is_not_held_when_network_receive_is_not_attributed() {
    let mut a = Attributor::new(entries()).with_kinds(&[Kind::Timer]);
    assert_eq!(a.sample(0, SENDER, &loopback(UDP_RCV)), None);
    let mut a = Attributor::new(entries());
    assert!(a.sample(0, SENDER, &loopback(UDP_RCV)).is_some());
}

const DEV: u32 = (7 << 20) | 1;

/// A block request for `sectors` at `sector` queued (`issue`: handed to the driver) in a
/// task.
fn queued(sector: u64, sectors: u32, issue: bool) -> What {
    What::BlockQueued {
        dev: DEV,
        sector,
        sectors,
        issue,
        context: Context::Task,
    }
}
fn completed(sector: u64, sectors: u32) -> What {
    What::BlockComplete {
        dev: DEV,
        sector,
        sectors,
    }
}

/// A stack in the `BLOCK` softirq run by ksoftirqd: the completion's frames end at
/// `blk_done_softirq`, the softirq loop and the thread stay.
fn in_block_softirq() -> Vec<u64> {
    vec![
        BLK_MQ_END_REQUEST + 8,
        BLK_DONE_SOFTIRQ + 8,
        HANDLE_SOFTIRQS + 8,
        RUN_KSOFTIRQD + 8,
    ]
}

/// A `BLOCK` softirq window on `cpu` from `t` in `victim`: `inside` at t+1, t+2, …
fn block_window(t: &mut Timelines, cpu: usize, at: u64, victim: u32, inside: Vec<Rec>) {
    t.ev(cpu, at, victim, What::SoftirqEntry { vec: BLOCK_VECTOR });
    let n = inside.len() as u64;
    for (i, r) in inside.into_iter().enumerate() {
        t.on(cpu, at + 1 + i as u64, r);
    }
    t.ev(
        cpu,
        at + 1 + n,
        victim,
        What::SoftirqExit { vec: BLOCK_VECTOR },
    );
}

const KSOFTIRQD: u32 = 14;

#[test]
fn block_completions_go_to_the_requests_issuers_by_sectors() {
    let mut t = Timelines::default();
    // Two readers issue requests of 8 and 24 sectors; one window completes both, another
    // only the first reader's next request.
    t.ev(0, 1, SENDER, queued(100, 8, true))
        .ev(1, 2, RECEIVER, queued(500, 24, true));
    block_window(
        &mut t,
        1,
        10,
        KSOFTIRQD,
        vec![
            e(KSOFTIRQD, completed(100, 8)),
            e(KSOFTIRQD, completed(500, 24)),
            s(KSOFTIRQD, in_block_softirq()),
            s(KSOFTIRQD, in_block_softirq()),
            s(KSOFTIRQD, in_block_softirq()),
            s(KSOFTIRQD, in_block_softirq()),
            // The softirq loop's own frames: not completion work, the victim's.
            s(KSOFTIRQD, vec![HANDLE_SOFTIRQS + 8, RUN_KSOFTIRQD + 8]),
        ],
    );
    t.ev(0, 30, SENDER, queued(100, 8, true));
    block_window(
        &mut t,
        0,
        40,
        OTHER,
        vec![e(OTHER, completed(100, 8)), s(OTHER, in_block_softirq())],
    );
    let (d, totals) = t.run();
    assert_eq!(charged(&d, to_pid(SENDER)), 2);
    assert_eq!(charged(&d, to_pid(RECEIVER)), 3);
    assert_eq!(d.iter().filter(|x| x.1.is_some()).count(), 5);
    // Cut at blk_done_softirq: the softirq entry and ksoftirqd stay.
    assert!(
        d.iter()
            .filter_map(|x| x.1)
            .all(|x| x.kind == Kind::Block && x.frames == 2)
    );
    let b = totals.iter().find(|t| t.kind == Kind::Block).unwrap();
    assert_eq!((b.windows, b.objects, b.unconsumed), (2, 3, 0));
}

#[test]
fn an_inserted_request_is_its_inserters_and_a_partial_completion_leaves_the_rest() {
    let mut t = Timelines::default();
    // Inserted by the reader (through a scheduler), issued later by a kworker: the issue
    // is the same request. 64 sectors complete in two parts of 32.
    t.ev(0, 1, RECEIVER, queued(1000, 64, false))
        .ev(1, 2, KWORKER, queued(1000, 64, true));
    block_window(
        &mut t,
        1,
        10,
        IDLE,
        vec![e(IDLE, completed(1000, 32)), s(IDLE, in_block_softirq())],
    );
    block_window(
        &mut t,
        1,
        20,
        OTHER,
        vec![e(OTHER, completed(1032, 32)), s(OTHER, in_block_softirq())],
    );
    // Queued before the run: completed with no request known.
    block_window(
        &mut t,
        0,
        30,
        OTHER,
        vec![e(OTHER, completed(7000, 8)), s(OTHER, in_block_softirq())],
    );
    // A completion's samples on a CPU whose window was not recorded (the idle task).
    t.sample(0, 40, IDLE, in_block_softirq());
    let (d, totals) = t.run();
    let decided: Vec<Target> = d.iter().filter_map(|x| x.1).map(|x| x.to).collect();
    let reader = Target::Process {
        pid: RECEIVER,
        time: 1,
    };
    assert_eq!(
        decided,
        [
            reader,
            reader,
            Target::Unattributed(Reason::NoObject),
            Target::Unattributed(Reason::WindowUnseen)
        ]
    );
    let b = totals.iter().find(|t| t.kind == Kind::Block).unwrap();
    assert_eq!((b.windows, b.objects, b.unconsumed), (3, 3, 1));
}

#[test]
fn block_work_is_not_held_when_block_is_not_attributed() {
    let mut a = Attributor::new(entries()).with_kinds(&[Kind::NetRx]);
    assert_eq!(a.sample(0, KSOFTIRQD, &in_block_softirq()), None);
    let mut a = Attributor::new(entries());
    assert!(a.sample(0, KSOFTIRQD, &in_block_softirq()).is_some());
}

/// A datagram of a UDP flood on CPU 0, in its own window in the sender's send: `queued`
/// when it reached its socket's queue (`sk_data_ready`), else dropped by the kernel for a
/// full receive buffer; a sample in the window when `sampled`. The skb addresses cycle over
/// 1,024, as the allocator reuses them.
fn flood_packet(a: &mut Attributor, i: u64, queued: bool, sampled: bool) -> Option<u32> {
    let at = |time, pid, what| Event {
        time,
        cpu: 0,
        pid,
        tid: pid,
        what,
    };
    let t = 100 + i * 10;
    a.event(at(t, SENDER, What::SoftirqEntry { vec: NET_RX_VECTOR }));
    a.event(at(t + 1, SENDER, rx(0x1_0000 + (i % 1024) * 0x100, 100)));
    if queued {
        a.event(at(t + 2, SENDER, What::DataReady { sk: 0x5000 }));
    }
    let held = sampled.then(|| a.sample(0, SENDER, &loopback(UDP_RCV)));
    a.event(at(t + 3, SENDER, What::SoftirqExit { vec: NET_RX_VECTOR }));
    held.flatten().map(|h| h.ticket)
}

/// The reader of `flood_packet`'s socket reads it at last, at 20 ms.
fn reader_reads_at_last(a: &mut Attributor) {
    a.event(Event {
        time: 20_000_000,
        cpu: 1,
        pid: RECEIVER,
        tid: RECEIVER,
        what: What::RecvLength {
            sk: 0x5000,
            ret: 100,
        },
    });
}

#[test]
fn a_flood_nobody_reads_keeps_memory_bounded_and_charges_the_residue_as_it_goes() {
    // A million datagrams: the first 256 fill the socket's queue, the kernel drops the rest
    // (no sk_data_ready); a sample in every hundredth window. The reader reads the queue
    // only at the end. What the attribution keeps must not grow with the flood: a dropped
    // packet is settled once its address is reused and no backlog drain can claim it, and
    // a window holding no sample goes when it closes.
    let mut a = Attributor::new(entries());
    let mut held = Vec::new();
    let mut decided = std::collections::BTreeMap::new();
    let mut most = (0, 0);
    for i in 0..1_000_000u64 {
        held.extend(flood_packet(&mut a, i, i < 256, i % 100 == 0));
        if i % 1000 == 999 {
            let k = a.kept();
            most = (most.0.max(k.windows), most.1.max(k.objects));
            decided.extend(a.take_decided());
        }
    }
    // At most the 4,096 unlinked packets a backlog drain may claim, the 256 queued, and
    // what came since the last sweep; the windows of the samples waiting for those.
    assert!(most.1 < 8_000, "kept {} packets", most.1);
    assert!(most.0 < 200, "kept {} windows", most.0);
    // Decided as the flood went: all but the samples of the last few thousand packets.
    assert!(
        decided.len() > held.len() - 100,
        "{} of {}",
        decided.len(),
        held.len()
    );
    let at_end = decided.len();
    reader_reads_at_last(&mut a);
    let out = a.finish();
    decided.extend(out.decided);
    assert_eq!(decided.len(), held.len());
    let to = |t: Target| decided.values().filter(|d| d.to == t).count();
    // The queued packets' windows (0, 100, 200) are the reader's: a flood's samples wait for
    // the packets still queued, which the reader may read, and only for them.
    assert!(at_end < held.len(), "the queued packets' samples waited");
    assert_eq!(
        to(Target::Process {
            pid: RECEIVER,
            time: 20_000_000
        }),
        3
    );
    assert_eq!(to(Target::Unattributed(Reason::NoConsumer)), held.len() - 3);
    let t = &out.totals[0];
    assert!(t.is_conserved());
    assert_eq!(
        (t.windows, t.objects, t.unconsumed),
        (1_000_000, 1_000_000, 999_744)
    );
    assert_eq!(t.evicted, 0);
}

#[test]
fn packets_queued_beyond_the_bound_are_dropped_and_counted() {
    // A socket whose receive buffer holds everything (SO_RCVBUFFORCE), never read until the
    // end: every packet stays unsettled and every window waits. The bounds drop the oldest,
    // counted: packets as evicted, their samples as evicted residue; conservation holds.
    let mut a = Attributor::new(entries());
    let mut held = 0;
    let mut decided = std::collections::BTreeMap::new();
    let mut most = (0, 0, 0);
    for i in 0..200_000u64 {
        held += usize::from(flood_packet(&mut a, i, true, true).is_some());
        let k = a.kept();
        most = (
            most.0.max(k.windows),
            most.1.max(k.objects),
            most.2.max(k.waiting),
        );
        decided.extend(a.take_decided());
    }
    assert!(most.1 <= MAX_OBJECTS, "kept {} packets", most.1);
    // After each sweep at most MAX_WAITING_WINDOWS wait; sweeps come after as many records
    // as it keeps (four a window here).
    let slack = (MAX_WAITING_WINDOWS + MAX_OBJECTS) / 4 + 1;
    assert!(most.2 <= MAX_WAITING_WINDOWS + slack, "{} waiting", most.2);
    assert!(
        most.0 <= MAX_WAITING_WINDOWS + slack + 1,
        "{} windows",
        most.0
    );
    reader_reads_at_last(&mut a);
    let out = a.finish();
    decided.extend(out.decided);
    assert_eq!(decided.len(), held);
    let to = |t: Target| decided.values().filter(|d| d.to == t).count();
    let read = to(Target::Process {
        pid: RECEIVER,
        time: 20_000_000,
    });
    let evicted = to(Target::Unattributed(Reason::Evicted));
    assert_eq!(read + evicted, held);
    assert!(
        read > 0 && read <= MAX_WAITING_WINDOWS + slack,
        "{read} read"
    );
    let t = &out.totals[0];
    assert!(t.is_conserved());
    assert_eq!(t.residue.get(&Reason::Evicted), Some(&(evicted as u64)));
    assert_eq!(t.objects, 200_000);
    assert_eq!(t.evicted, 200_000 - read as u64);
    assert_eq!(t.unconsumed, t.evicted);
}

#[test]
fn timers_armed_and_work_queued_that_never_run_are_bounded_and_counted() {
    // 300,000 timers armed and work items queued at distinct addresses, none run: each kept
    // at most MAX_ITEMS, the least recently used dropped and counted. The last timer armed
    // still goes to its owner.
    let mut a = Attributor::new(entries());
    let at = |time, pid, what| Event {
        time,
        cpu: 0,
        pid,
        tid: pid,
        what,
    };
    let mut most = 0;
    for i in 0..300_000u64 {
        a.event(at(10 + i, SENDER, armed(0x10_0000 + i * 64, Context::Task)));
        a.event(at(
            10 + i,
            SENDER,
            work_queued(0x90_0000 + i * 64, Context::Task),
        ));
        most = most.max(a.kept().items);
    }
    assert!(most <= 2 * MAX_ITEMS, "kept {most} items");
    let last = 0x10_0000 + 299_999 * 64;
    a.event(at(400_000, OTHER, fires(last, Context::Softirq)));
    let h = a
        .sample(0, OTHER, &in_soft_hrtimer(TCP_PACE_KICK))
        .expect("held");
    a.event(at(400_002, OTHER, ends(last)));
    let out = a.finish();
    assert_eq!(
        out.decisions[h.ticket as usize].to,
        Target::Process {
            pid: SENDER,
            time: 300_009
        }
    );
    let kind = |k| out.totals.iter().find(|t| t.kind == k).unwrap();
    assert!(kind(Kind::Timer).evicted >= 300_000 - MAX_ITEMS as u64);
    assert!(kind(Kind::Workqueue).evicted >= 300_000 - MAX_ITEMS as u64);
    assert!(kind(Kind::Timer).is_conserved());
}
