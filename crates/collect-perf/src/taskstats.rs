//! Taskstats exit records over generic netlink: the kernel sends a `struct taskstats` for every
//! task that exits on the registered CPUs, so even a process that lives less than one /proc
//! poll interval gets its CPU time, faults, context switches and I/O bytes. Registering needs
//! `CAP_NET_ADMIN` (root) and the initial network namespace; when refused, the sampler falls
//! back to /proc polling and says so.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::recording::TaskExit;

const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_NEW: u8 = 2;
const TASKSTATS_TYPE_PID: u16 = 1;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const NLMSG_ERROR: u16 = 2;
const NLMSG_HDR: usize = 16;
const GENL_HDR: usize = 4;
/// Nested and byte-order flags of `nla_type`.
const NLA_TYPE_MASK: u16 = 0x3fff;

/// A registered taskstats listener.
#[derive(Debug)]
pub(crate) struct Listener {
    fd: OwnedFd,
    buf: Vec<u8>,
    /// Times the socket buffer overflowed (records lost).
    pub(crate) overflows: u64,
}

fn nl_align(n: usize) -> usize {
    (n + 3) & !3
}

fn push_attr(msg: &mut Vec<u8>, ty: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    msg.extend_from_slice(&(len as u16).to_ne_bytes());
    msg.extend_from_slice(&ty.to_ne_bytes());
    msg.extend_from_slice(payload);
    msg.resize(nl_align(msg.len()), 0);
}

fn message(ty: u16, flags: u16, cmd: u8, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut msg = vec![0u8; NLMSG_HDR];
    msg.extend_from_slice(&[cmd, 1, 0, 0]);
    for (t, p) in attrs {
        push_attr(&mut msg, *t, p);
    }
    let len = msg.len() as u32;
    msg[0..4].copy_from_slice(&len.to_ne_bytes());
    msg[4..6].copy_from_slice(&ty.to_ne_bytes());
    msg[6..8].copy_from_slice(&flags.to_ne_bytes());
    msg[8..12].copy_from_slice(&1u32.to_ne_bytes());
    msg
}

/// The attributes in `b`: (type without flags, payload).
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16::from_ne_bytes(b.get(0..2)?.try_into().ok()?));
        let ty = u16::from_ne_bytes(b.get(2..4)?.try_into().ok()?) & NLA_TYPE_MASK;
        let payload = b.get(4..len)?;
        b = b.get(nl_align(len)..).unwrap_or(&[]);
        Some((ty, payload))
    })
}

/// The netlink messages in one datagram: (type, payload after the netlink header).
fn messages(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = u32::from_ne_bytes(b.get(0..4)?.try_into().ok()?) as usize;
        let ty = u16::from_ne_bytes(b.get(4..6)?.try_into().ok()?);
        let payload = b.get(NLMSG_HDR..len)?;
        b = b.get(nl_align(len)..).unwrap_or(&[]);
        Some((ty, payload))
    })
}

fn u64_at(s: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(s.get(off..off + 8)?.try_into().ok()?))
}

fn u32_at(s: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(s.get(off..off + 4)?.try_into().ok()?))
}

/// Parses a `struct taskstats` (`linux/taskstats.h`) by its version and size: fields are only
/// read when the struct is long enough to hold them and its version has them. Offsets are those
/// of the x86_64 (and every 64-bit) layout, which the kernel keeps stable by only appending.
pub(crate) fn parse_stats(tid: u32, s: &[u8], time: u64) -> Option<TaskExit> {
    let version = u16::from_ne_bytes(s.get(0..2)?.try_into().ok()?);
    // Version 1 ends before the basic accounting fields; I/O characters and context switches
    // came by version 3 and 4; the tgid at version 12.
    if version < 4 {
        return None;
    }
    let comm = s.get(80..112)?;
    let comm_end = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
    Some(TaskExit {
        time,
        tid,
        tgid: if version >= 12 {
            u32_at(s, 368).filter(|&t| t != 0)
        } else {
            None
        },
        ppid: u32_at(s, 132)?,
        comm: String::from_utf8_lossy(&comm[..comm_end]).into_owned(),
        // ac_utime and ac_stime are in microseconds.
        user_cpu_ns: u64_at(s, 152)?.saturating_mul(1000),
        system_cpu_ns: u64_at(s, 160)?.saturating_mul(1000),
        // Zero when the kernel has no delay accounting (a task that ran has a runtime).
        runtime_ns: u64_at(s, 72).filter(|&ns| ns > 0),
        minor_faults: u64_at(s, 168)?,
        major_faults: u64_at(s, 176)?,
        read_bytes: u64_at(s, 216)?,
        written_bytes: u64_at(s, 224)?,
        voluntary_switches: u64_at(s, 272)?,
        involuntary_switches: u64_at(s, 280)?,
    })
}

/// The exit records of one datagram: `TASKSTATS_CMD_NEW` messages holding a per-task
/// `AGGR_PID` attribute (the per-thread-group `AGGR_TGID` one carries only delay totals, so
/// the per-task records are summed instead).
pub(crate) fn parse_datagram(b: &[u8], time: u64, out: &mut Vec<TaskExit>) {
    for (_, payload) in messages(b) {
        if payload.first() != Some(&TASKSTATS_CMD_NEW) {
            continue;
        }
        for (ty, nested) in attrs(payload.get(GENL_HDR..).unwrap_or(&[])) {
            if ty != TASKSTATS_TYPE_AGGR_PID {
                continue;
            }
            let mut tid = None;
            let mut stats = None;
            for (t, p) in attrs(nested) {
                match t {
                    TASKSTATS_TYPE_PID => tid = u32_at(p, 0),
                    TASKSTATS_TYPE_STATS => stats = Some(p),
                    _ => {}
                }
            }
            if let (Some(tid), Some(s)) = (tid, stats)
                && let Some(e) = parse_stats(tid, s, time)
            {
                out.push(e);
            }
        }
    }
}

impl Listener {
    /// Opens a generic-netlink socket and registers for the exit records of `cpus`.
    pub(crate) fn register(cpus: &[i32]) -> io::Result<Listener> {
        // Safety: plain socket creation; the fd is owned right away.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // Safety: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // Safety: a zeroed sockaddr_nl with the family set is a valid address (pid 0: the
        // kernel picks the port).
        let r = unsafe {
            let mut sa: libc::sockaddr_nl = std::mem::zeroed();
            sa.nl_family = libc::AF_NETLINK as u16;
            libc::bind(
                raw,
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // A burst of exits (a child storm) must not overflow the socket; FORCE needs
        // CAP_NET_ADMIN, which registering needs too.
        let size: libc::c_int = 8 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // Safety: `size` is a valid c_int option value.
            let r = unsafe {
                libc::setsockopt(
                    raw,
                    libc::SOL_SOCKET,
                    opt,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as u32,
                )
            };
            if r == 0 {
                break;
            }
        }
        let mut l = Listener {
            fd,
            buf: vec![0; 64 << 10],
            overflows: 0,
        };
        l.send(&message(
            GENL_ID_CTRL,
            libc::NLM_F_REQUEST as u16,
            CTRL_CMD_GETFAMILY,
            &[(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0")],
        ))?;
        let family = l.reply(|payload| {
            attrs(payload.get(GENL_HDR..)?).find_map(|(t, p)| {
                (t == CTRL_ATTR_FAMILY_ID)
                    .then(|| p.get(0..2).map(|v| u16::from_ne_bytes([v[0], v[1]])))
                    .flatten()
            })
        })?;
        let mask = cpu_list(cpus);
        let mut mask_z = mask.into_bytes();
        mask_z.push(0);
        l.send(&message(
            family,
            (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16,
            TASKSTATS_CMD_GET,
            &[(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, &mask_z)],
        ))?;
        // The acknowledgement (an NLMSG_ERROR with error 0) or the refusal.
        l.reply(|_| Some(()))?;
        // Safety: F_SETFL on our own descriptor.
        unsafe {
            let flags = libc::fcntl(raw, libc::F_GETFL);
            libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        Ok(l)
    }

    fn send(&self, msg: &[u8]) -> io::Result<()> {
        // Safety: `msg` is a valid buffer of its length; the socket is bound.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits for the reply to the last request: an error message becomes an error, otherwise
    /// `take` picks the answer from the first other message's payload.
    fn reply<T>(&mut self, take: impl Fn(&[u8]) -> Option<T>) -> io::Result<T> {
        for _ in 0..16 {
            let n = self.recv_blocking()?;
            for (ty, payload) in messages(&self.buf[..n]) {
                if ty == NLMSG_ERROR {
                    let err = u32_at(payload, 0).unwrap_or(0) as i32;
                    if err != 0 {
                        return Err(io::Error::from_raw_os_error(-err));
                    }
                    if let Some(v) = take(&[]) {
                        return Ok(v);
                    }
                } else if let Some(v) = take(payload) {
                    return Ok(v);
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no answer from the taskstats netlink family",
        ))
    }

    fn recv_blocking(&mut self) -> io::Result<usize> {
        // Safety: `buf` is a valid writable buffer of its length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                self.buf.as_mut_ptr().cast(),
                self.buf.len(),
                0,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Reads every exit record queued so far, stamping each datagram with `now()` after it
    /// was received (so no record is stamped before it was sent).
    pub(crate) fn drain(&mut self, now: impl Fn() -> u64, out: &mut Vec<TaskExit>) {
        loop {
            // Safety: `buf` is a valid writable buffer of its length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    Some(libc::ENOBUFS) => {
                        self.overflows += 1;
                        continue;
                    }
                    Some(libc::EINTR) => continue,
                    _ => return,
                }
            }
            if n == 0 {
                return;
            }
            parse_datagram(&self.buf[..n as usize], now(), out);
        }
    }
}

/// A CPU list in the kernel's format: `0-3,6`.
fn cpu_list(cpus: &[i32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `struct taskstats` of `version` and `size` bytes with recognisable fields.
    fn stats(version: u16, size: usize) -> Vec<u8> {
        let mut s = vec![0u8; size];
        s[0..2].copy_from_slice(&version.to_ne_bytes());
        s[80..83].copy_from_slice(b"sh\0");
        let mut put = |off: usize, v: u64| {
            if off + 8 <= size {
                s[off..off + 8].copy_from_slice(&v.to_ne_bytes());
            }
        };
        put(72, 1_900_000); // cpu_run_virtual_total ns
        put(152, 1500); // utime µs
        put(160, 250); // stime µs
        put(168, 70);
        put(176, 1);
        put(216, 4096);
        put(224, 10);
        put(272, 3);
        put(280, 2);
        if size >= 372 {
            s[368..372].copy_from_slice(&41u32.to_ne_bytes());
        }
        s[132..136].copy_from_slice(&7u32.to_ne_bytes());
        s
    }

    fn datagram(tid: u32, s: &[u8]) -> Vec<u8> {
        let mut nested = Vec::new();
        push_attr(&mut nested, TASKSTATS_TYPE_PID, &tid.to_ne_bytes());
        push_attr(&mut nested, TASKSTATS_TYPE_STATS, s);
        message(
            22,
            0,
            TASKSTATS_CMD_NEW,
            &[(TASKSTATS_TYPE_AGGR_PID | 0x8000, &nested)],
        )
    }

    #[test]
    fn exit_records_are_read_by_version_and_size() {
        let mut out = Vec::new();
        parse_datagram(&datagram(42, &stats(13, 416)), 9, &mut out);
        let e = &out[0];
        assert_eq!(
            (e.tid, e.tgid, e.ppid, e.comm.as_str()),
            (42, Some(41), 7, "sh")
        );
        assert_eq!((e.user_cpu_ns, e.system_cpu_ns), (1_500_000, 250_000));
        assert_eq!(e.runtime_ns, Some(1_900_000));
        assert_eq!((e.minor_faults, e.major_faults), (70, 1));
        assert_eq!((e.read_bytes, e.written_bytes), (4096, 10));
        assert_eq!((e.voluntary_switches, e.involuntary_switches), (3, 2));
        // Before version 12 there is no tgid, even if the bytes are there.
        out.clear();
        parse_datagram(&datagram(42, &stats(11, 416)), 9, &mut out);
        assert_eq!(out[0].tgid, None);
        // A struct too short for the fields it claims is skipped, not misread.
        out.clear();
        parse_datagram(&datagram(42, &stats(13, 200)), 9, &mut out);
        assert!(out.is_empty());
        // Version 1 has no accounting fields.
        parse_datagram(&datagram(42, &stats(1, 416)), 9, &mut out);
        assert!(out.is_empty());
        // Truncated datagrams yield nothing and do not panic.
        let d = datagram(42, &stats(13, 416));
        for n in 0..d.len() {
            parse_datagram(&d[..n], 9, &mut out);
        }
        assert!(out.is_empty());
    }

    #[test]
    fn cpu_lists_use_ranges() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(cpu_list(&[1]), "1");
        assert_eq!(cpu_list(&[]), "");
    }
}
