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
//!   address may never be copied); failing that, when every `sk_data_ready` of the window
//!   names one socket, the window's unlinked packets are guessed to be that socket's. The
//!   next process to use the socket after the window — `sock_recv_length` with a positive
//!   length, or `sock_send_length` (acknowledgements arriving at a sender's socket serve the
//!   sender) — consumed the packets linked to it; a guessed link gives way to a later copy of
//!   the packet itself.
//! - **Residue.** An object nobody consumed before the run ended is unattributed
//!   ([`Reason::NoConsumer`](crate::Reason::NoConsumer)).

use std::collections::HashMap;

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
    /// Its socket, and whether the link is a guess.
    sk: Option<(u64, bool)>,
    pub consumer: Option<Consumer>,
}

/// The packets of every window and the links still open.
#[derive(Debug, Default)]
pub(crate) struct NetObjects {
    pub objects: Vec<Object>,
    /// skb address → the newest object received at it, until it is copied.
    live_skb: HashMap<u64, u32>,
    /// Socket → its objects not yet consumed through it.
    waiting_sk: HashMap<u64, Vec<u32>>,
}

impl NetObjects {
    /// A packet received; its id.
    pub fn received(&mut self, skb: u64, len: u32) -> u32 {
        let id = self.objects.len() as u32;
        self.objects.push(Object {
            bytes: u64::from(len),
            sk: None,
            consumer: None,
        });
        self.live_skb.insert(skb, id);
        id
    }

    /// `tcp_probe`: the packet at `skb` is socket `sk`'s.
    pub fn probed(&mut self, skb: u64, sk: u64) {
        if let Some(&o) = self.live_skb.get(&skb) {
            self.link(o, sk, false);
        }
    }

    /// The window's `sk_data_ready` events named one socket: its packets without a socket are
    /// guessed to be that socket's.
    pub fn guess(&mut self, objects: &[u32], sk: u64) {
        for &o in objects {
            if self.objects[o as usize].sk.is_none() {
                self.link(o, sk, true);
            }
        }
    }

    fn link(&mut self, o: u32, sk: u64, guessed: bool) {
        let obj = &mut self.objects[o as usize];
        if obj.sk.is_some_and(|(_, g)| !g) {
            return;
        }
        obj.sk = Some((sk, guessed));
        self.waiting_sk.entry(sk).or_default().push(o);
    }

    /// `skb_copy_datagram_iovec` by `pid`: it consumed the packet at `skb`.
    pub fn copied(&mut self, skb: u64, pid: u32, time: u64) {
        if let Some(o) = self.live_skb.remove(&skb) {
            let obj = &mut self.objects[o as usize];
            if obj.consumer.is_none_or(|c| c.guessed) {
                obj.consumer = Some(Consumer {
                    pid,
                    time,
                    guessed: false,
                });
            }
        }
    }

    /// `sock_recv_length` or `sock_send_length` by `pid`: it consumed the packets waiting on
    /// socket `sk`.
    pub fn used(&mut self, sk: u64, pid: u32, time: u64) {
        let Some(waiting) = self.waiting_sk.remove(&sk) else {
            return;
        };
        for o in waiting {
            let obj = &mut self.objects[o as usize];
            // The link may have moved since (a guess replaced by tcp_probe's socket).
            let Some((linked, guessed)) = obj.sk else {
                continue;
            };
            if linked == sk && obj.consumer.is_none() {
                obj.consumer = Some(Consumer { pid, time, guessed });
            }
        }
    }
}
