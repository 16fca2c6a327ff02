//! Network receive: which objects a window served, and who consumed each.
//!
//! The rule:
//!
//! - **Objects.** Each `netif_receive_skb` inside a `NET_RX` window is one object of that
//!   window, weighing its `len` in bytes. An skb address names the object until the address
//!   is received again (the only end of life the run sees without tracing every free): a
//!   later consume event of the address refers to the newest object received at it.
//! - **Consumer by the packet.** The first process to copy the packet out
//!   (`skb_copy_datagram_iovec` with its address, in the reader's system call) consumed it.
//!   This is exact, and wins over every other link (UDP takes this path).
//! - **Consumer by the socket.** `tcp_probe` in the window links the packet to its socket
//!   exactly (TCP may coalesce the packet into another before it is copied, so its own
//!   address may never be copied). Failing that, an `sk_data_ready` claims the packets
//!   received in its window since the previous one (a guess: exact when each packet's
//!   protocol work runs before the next packet is received, as on loopback and without GRO
//!   batching; UDP reads linear packets without `skb_copy_datagram_iovec`, so this is its
//!   usual link), and packets after the window's last `sk_data_ready` are guessed to be its
//!   socket's when every `sk_data_ready` of the window named that one. A TCP packet that
//!   arrives while its socket's owner holds the socket waits on the socket's backlog, where
//!   TCP may merge it into the packet before it, leaving no event of its own; the owner
//!   drains the backlog, and that packet's `tcp_probe` comes outside any window: the
//!   packets still unlinked then are guessed to be that socket's. The
//!   next process to use the socket after the window — `sock_recv_length` with a positive
//!   length, or `sock_send_length` (acknowledgements arriving at a sender's socket serve the
//!   sender) — consumed the packets linked to it; a guessed link gives way to a later copy of
//!   the packet itself.
//! - **Residue.** An object nobody consumed before the run ended is unattributed
//!   ([`Reason::NoConsumer`](crate::Reason::NoConsumer)).
//! - **Memory.** An object is kept only while it can still change hands. It is *settled*, and
//!   handed to its window (the attributor then forgets it), once nothing the rules above can
//!   see may change its consumer any more: consumed by its own copy or through an exact
//!   link; consumed through a guessed link, and its address received again (no copy of it
//!   can come); or consumed by nobody, linked to no socket, its address received again or
//!   copied, no backlog drain able to claim it, and its window closed (a packet the kernel
//!   dropped for a full receive buffer: no `sk_data_ready`, so no socket). What stays is a
//!   packet waiting on a socket nobody reads, at most what receive buffers hold; beyond
//!   [`MAX_OBJECTS`](crate::MAX_OBJECTS) of them the oldest is dropped from the
//!   attribution, consumed by nobody ([`Reason::Evicted`](crate::Reason::Evicted)).

use std::collections::{BTreeMap, HashMap, VecDeque};

/// The process an object was charged to, and when it showed itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Consumer {
    pub pid: u32,
    pub time: u64,
    /// Found through a guessed link (may give way to an exact one).
    pub guessed: bool,
}

/// One packet served by a window.
#[derive(Debug, Clone)]
pub(crate) struct Object {
    pub bytes: u64,
    /// Its address.
    skb: u64,
    /// Its socket, and whether the link is a guess.
    sk: Option<(u64, bool)>,
    pub consumer: Option<Consumer>,
    /// Its window, and its place among the window's objects.
    pub window: u64,
    pub index: usize,
    /// Whether it is in `unlinked` (a backlog drain may still claim it).
    in_unlinked: bool,
    /// Whether a work item, timer or request was queued while it was processed: its reader
    /// owns them, so its reader is kept after the object is forgotten.
    pub referenced: bool,
}

/// The packets still unsettled (see the module docs) and the links still open.
#[derive(Debug, Default)]
pub(crate) struct NetObjects {
    /// By id; ids grow with time, so the first is the oldest.
    pub objects: BTreeMap<u64, Object>,
    next: u64,
    /// skb address → the newest object received at it, until it is copied.
    live_skb: HashMap<u64, u64>,
    /// Socket → its objects not yet consumed through it (forgotten ones are skipped, and
    /// removed at [`NetObjects::compact`]).
    waiting_sk: HashMap<u64, Vec<u64>>,
    /// Objects received with no link yet, oldest first (at most [`UNLINKED_KEPT`]).
    unlinked: VecDeque<u64>,
    /// Whether one of `unlinked` was linked since it was last pruned.
    linked_unlinked: bool,
}

/// How many unlinked objects a backlog drain may claim: a packet unlinked for longer than
/// that many later ones is left to the residue.
const UNLINKED_KEPT: usize = 4096;

impl NetObjects {
    /// A packet received in window `window`, at `index` among its objects; its id.
    pub fn received(&mut self, skb: u64, len: u32, window: u64, index: usize) -> u64 {
        let id = self.next;
        self.next += 1;
        self.objects.insert(
            id,
            Object {
                bytes: u64::from(len),
                skb,
                sk: None,
                consumer: None,
                window,
                index,
                in_unlinked: true,
                referenced: false,
            },
        );
        self.live_skb.insert(skb, id);
        if self.unlinked.len() == UNLINKED_KEPT
            && let Some(old) = self.unlinked.pop_front()
            && let Some(obj) = self.objects.get_mut(&old)
        {
            obj.in_unlinked = false;
        }
        self.unlinked.push_back(id);
        id
    }

    /// The newest packet received at `skb`, while it is not copied out.
    pub fn object_at(&self, skb: u64) -> Option<u64> {
        self.live_skb.get(&skb).copied()
    }

    /// `tcp_probe`: the packet at `skb` is socket `sk`'s; `drained` when it came outside a
    /// window (the socket's backlog being drained by its owner), which claims the packets
    /// still unlinked.
    pub fn probed(&mut self, skb: u64, sk: u64, drained: bool) {
        if let Some(&o) = self.live_skb.get(&skb) {
            self.link(o, sk, false);
        }
        if drained {
            let unlinked: Vec<u64> = self.unlinked.drain(..).collect();
            for o in unlinked {
                let Some(obj) = self.objects.get_mut(&o) else {
                    continue;
                };
                obj.in_unlinked = false;
                if obj.sk.is_none() {
                    self.link(o, sk, true);
                }
            }
        }
    }

    /// Forgets the unlinked objects that were linked since (keeps the list short).
    pub fn prune_unlinked(&mut self) {
        if !std::mem::take(&mut self.linked_unlinked) {
            return;
        }
        let objects = &mut self.objects;
        self.unlinked.retain(|&o| match objects.get_mut(&o) {
            Some(obj) if obj.sk.is_none() => true,
            Some(obj) => {
                obj.in_unlinked = false;
                false
            }
            None => false,
        });
    }

    /// The window's `sk_data_ready` events named one socket: its packets without a socket are
    /// guessed to be that socket's.
    pub fn guess(&mut self, objects: &[u64], sk: u64) {
        for &o in objects {
            if self.objects.get(&o).is_some_and(|obj| obj.sk.is_none()) {
                self.link(o, sk, true);
            }
        }
    }

    fn link(&mut self, o: u64, sk: u64, guessed: bool) {
        let Some(obj) = self.objects.get_mut(&o) else {
            return;
        };
        if obj.sk.is_some_and(|(_, g)| !g) {
            return;
        }
        obj.sk = Some((sk, guessed));
        self.linked_unlinked |= obj.in_unlinked;
        self.waiting_sk.entry(sk).or_default().push(o);
    }

    /// `skb_copy_datagram_iovec` by `pid`: it consumed the packet at `skb`.
    pub fn copied(&mut self, skb: u64, pid: u32, time: u64) {
        if let Some(o) = self.live_skb.remove(&skb)
            && let Some(obj) = self.objects.get_mut(&o)
            && obj.consumer.is_none_or(|c| c.guessed)
        {
            obj.consumer = Some(Consumer {
                pid,
                time,
                guessed: false,
            });
        }
    }

    /// `sock_recv_length` or `sock_send_length` by `pid`: it consumed the packets waiting on
    /// socket `sk`.
    pub fn used(&mut self, sk: u64, pid: u32, time: u64) {
        let Some(waiting) = self.waiting_sk.remove(&sk) else {
            return;
        };
        for o in waiting {
            let Some(obj) = self.objects.get_mut(&o) else {
                continue;
            };
            // The link may have moved since (a guess replaced by tcp_probe's socket).
            let Some((linked, guessed)) = obj.sk else {
                continue;
            };
            if linked == sk && obj.consumer.is_none() {
                obj.consumer = Some(Consumer { pid, time, guessed });
            }
        }
    }

    /// Whether object `o` is settled (the rule in the module docs): nothing the run can
    /// still see may change its consumer. `window_open`: whether its window is still open.
    pub fn is_settled(&self, o: u64, window_open: bool) -> bool {
        let Some(obj) = self.objects.get(&o) else {
            return true;
        };
        let live = self.live_skb.get(&obj.skb) == Some(&o);
        match obj.consumer {
            Some(c) if !c.guessed => true,
            Some(_) => !live,
            None => !live && obj.sk.is_none() && !obj.in_unlinked && !window_open,
        }
    }

    /// Forgets object `o`; what it was.
    pub fn remove(&mut self, o: u64) -> Option<Object> {
        let obj = self.objects.remove(&o)?;
        if self.live_skb.get(&obj.skb) == Some(&o) {
            self.live_skb.remove(&obj.skb);
        }
        Some(obj)
    }

    /// Drops the forgotten objects from the sockets' lists, and the sockets left with none.
    pub fn compact(&mut self) {
        let objects = &self.objects;
        self.waiting_sk.retain(|_, v| {
            v.retain(|o| objects.contains_key(o));
            !v.is_empty()
        });
        self.unlinked.retain(|o| objects.contains_key(o));
    }
}
