//! Record decoding: raw perf records, as this crate's events lay them out in the rings (header
//! first), parsed into the [`Recording`]'s compact layout. Portable: it reads bytes, never the
//! machine, so recorded or fuzzed records decode anywhere.

use super::{CounterEvent, Recording, Sample, SideBand, SideRecord, TraceSample, UserRegs};

pub(super) mod parse {
    use super::parse_fields::{callchain, place, regs_user, stack_user};
    use super::{Recording, SideBand, SideRecord, UserRegs};
    use crate::recording::CopyEnd;
    use crate::recording::live_stack::{
        CopierEnd, frame_pointer_chain, live_stack, parse_chain, parse_copy,
    };
    use crate::sys::*;

    pub(super) struct Cur<'a> {
        pub(super) b: &'a [u8],
        pub(super) pos: usize,
    }

    impl<'a> Cur<'a> {
        pub(super) fn u64(&mut self) -> Option<u64> {
            let v = self.b.get(self.pos..self.pos + 8)?;
            self.pos += 8;
            Some(u64::from_ne_bytes(v.try_into().ok()?))
        }
        pub(super) fn u32(&mut self) -> Option<u32> {
            let v = self.b.get(self.pos..self.pos + 4)?;
            self.pos += 4;
            Some(u32::from_ne_bytes(v.try_into().ok()?))
        }
        pub(super) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
            let v = self.b.get(self.pos..self.pos.checked_add(n)?)?;
            self.pos += n;
            Some(v)
        }
    }

    fn cstr(b: &[u8]) -> String {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    }

    /// Parses the `sample_id_all` trailer: returns (pid, tid), time, cpu and the body end. Its
    /// layout is its event's, told by the identifier it ends with: the stack copier's output
    /// event (whose only such records are lost-records notices) has the CPU alone before it,
    /// and no time: the latest before it stands in.
    fn trailer(r: &Recording, rec: &[u8]) -> Option<((u32, u32), u64, u32, usize)> {
        let id_at = rec.len().checked_sub(8)?;
        let id = u64::from_ne_bytes(rec[id_at..].try_into().ok()?);
        if r.copy_ids.contains(&id) {
            let end = rec.len().checked_sub(OUTPUT_ID_LEN)?;
            let cpu = Cur { b: rec, pos: end }.u32()?;
            return Some(((0, 0), r.last_time, cpu, end));
        }
        let end = rec.len().checked_sub(SAMPLE_ID_LEN)?;
        let mut c = Cur { b: rec, pos: end };
        let pid_tid = (c.u32()?, c.u32()?);
        let time = c.u64()?;
        let cpu = c.u32()?;
        Some((pid_tid, time, cpu, end))
    }

    pub(in crate::recording) fn record(r: &mut Recording, rec: &[u8]) -> Option<()> {
        let ty = u32::from_ne_bytes(rec.get(0..4)?.try_into().ok()?);
        let misc = u16::from_ne_bytes(rec.get(4..6)?.try_into().ok()?);
        let mut c = Cur { b: rec, pos: 8 };
        if ty == RECORD_SAMPLE {
            let (f, st, raw) = (r.frames.len(), r.stacks.len(), r.raw.len());
            let parsed = sample(r, misc, &mut c);
            if parsed.is_none() {
                // Drop the frames of a truncated sample.
                r.frames.truncate(f);
                r.stacks.truncate(st);
                r.raw.truncate(raw);
            }
            return parsed;
        }
        let ((tpid, ttid), time, cpu, end) = trailer(r, rec)?;
        r.last_time = time;
        let mut c = Cur {
            b: &rec[..end],
            pos: 8,
        };
        let kind = match ty {
            RECORD_MMAP2 => {
                let pid = c.u32()?;
                let tid = c.u32()?;
                let addr = c.u64()?;
                let len = c.u64()?;
                let pgoff = c.u64()?;
                let id = c.bytes(24)?;
                let asked = r.mmap_build_ids;
                let build_id = (asked && misc & MISC_MMAP_BUILD_ID != 0).then(|| {
                    let n = usize::from(id[0]).min(20);
                    id[4..4 + n].to_vec()
                });
                let prot = c.u32()?;
                let flags = c.u32()?;
                let filename = cstr(&c.b[c.pos..]);
                SideBand::Mmap {
                    pid,
                    tid,
                    addr,
                    len,
                    pgoff,
                    build_id,
                    prot,
                    flags,
                    filename,
                }
            }
            RECORD_COMM => {
                let (pid, tid) = (c.u32()?, c.u32()?);
                let exec = misc & MISC_COMM_EXEC != 0;
                if exec {
                    // The new image's stack starts elsewhere; the next /proc reading says where.
                    r.stack_starts.remove(&pid);
                    r.frame_ends.exec(pid);
                }
                SideBand::Comm {
                    pid,
                    tid,
                    comm: cstr(&c.b[c.pos..]),
                    exec,
                }
            }
            RECORD_FORK | RECORD_EXIT => {
                let (pid, ppid, tid, ptid) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
                if ty == RECORD_FORK {
                    SideBand::Fork {
                        pid,
                        ppid,
                        tid,
                        ptid,
                    }
                } else {
                    r.thread_descriptors.remove(&tid);
                    r.frame_ends.forget(tid);
                    SideBand::Exit {
                        pid,
                        ppid,
                        tid,
                        ptid,
                    }
                }
            }
            RECORD_LOST => {
                let _id = c.u64()?;
                let count = c.u64()?;
                r.lost += count;
                *r.lost_per_cpu.entry(cpu).or_default() += count;
                SideBand::Lost { count }
            }
            RECORD_SWITCH => SideBand::Switch {
                pid: tpid,
                tid: ttid,
                out: misc & MISC_SWITCH_OUT != 0,
                preempted: misc & MISC_SWITCH_OUT_PREEMPT != 0,
            },
            RECORD_THROTTLE | RECORD_UNTHROTTLE => {
                if ty == RECORD_THROTTLE {
                    r.throttled += 1;
                }
                SideBand::Throttle {
                    unthrottle: ty == RECORD_UNTHROTTLE,
                }
            }
            _ => return None,
        };
        r.side_band.push(SideRecord { time, cpu, kind });
        Some(())
    }

    /// A tracepoint record, laid out by its event's sample_type (after the identifier).
    fn trace(r: &mut Recording, event: u32, c: &mut Cur<'_>) -> Option<()> {
        let st = r.tracepoints.get(event as usize)?.sample_type;
        let pid = c.u32()?;
        let tid = c.u32()?;
        let time = c.u64()?;
        r.last_time = time;
        let cpu = c.u32()?;
        let _res = c.u32()?;
        let k0 = r.frames.len();
        let chain = if st & SAMPLE_CALLCHAIN != 0 {
            callchain(r, c)?
        } else {
            (0, k0, k0)
        };
        let size = c.u32()? as usize;
        let raw = c.bytes(size)?;
        let mut regs = None;
        let (mut stack, mut full) = (&[][..], false);
        if st & SAMPLE_REGS_USER != 0 {
            regs = regs_user(c)?;
        }
        if st & SAMPLE_STACK_USER != 0 {
            (stack, full) = live_stack(r, (pid, tid, time), regs, stack_user(c)?);
        }
        let placed = place(r, chain, stack);
        let r0 = r.raw.len() as u32;
        r.raw.extend_from_slice(raw);
        let info = &mut r.tracepoints[event as usize];
        info.received += 1;
        let sample = super::Sample {
            time,
            pid,
            tid,
            cpu,
            period: 1,
            ip: 0,
            user_mode: false,
            regs,
            copy_end: CopyEnd::sized(full),
            chain_limited: placed.chain_limited,
            kernel: placed.kernel,
            user: placed.user,
            stack: placed.stack,
        };
        r.traces.push(super::TraceSample {
            event,
            sample,
            raw: r0..r.raw.len() as u32,
        });
        Some(())
    }

    /// A stack copy of the BPF program that copies them (`bpf::LiveCopy`): kept for the
    /// sample its CPU writes next.
    fn copy(r: &mut Recording, c: &mut Cur<'_>) -> Option<()> {
        let cpu = c.u32()?;
        let _res = c.u32()?;
        let size = c.u32()? as usize;
        let raw = c.bytes(size)?;
        // The chain walked past the copy just before it, for the same sample.
        if let Some((sp, addrs)) = parse_chain(raw) {
            let p = r.pending_copies.entry(cpu).or_default();
            if p.waiting && p.sp == sp {
                p.chain.clear();
                (p.chain).extend(
                    addrs
                        .chunks_exact(8)
                        .map(|w| u64::from_ne_bytes(w.try_into().expect("chunks of 8 bytes"))),
                );
            }
            return Some(());
        }
        let copy = parse_copy(raw)?;
        if let Some(w) = copy.whole {
            r.last_time = w.time;
            let regs = Some(UserRegs {
                ip: w.ip,
                sp: copy.sp,
                bp: w.bp,
                bx: Some(w.bx),
            });
            let stack = copied(r, (w.pid, w.tid, w.time), regs, copy.ended, copy.bytes);
            let k0 = r.frames.len();
            let head = Head {
                ip: w.ip,
                pid: w.pid,
                tid: w.tid,
                time: w.time,
                cpu,
                period: w.period,
                user_mode: true,
            };
            push(r, head, (0, k0, k0), regs, stack, &[]);
            return Some(());
        }
        let p = r.pending_copies.entry(cpu).or_default();
        p.waiting = true;
        (p.sp, p.ended) = (copy.sp, copy.ended);
        p.bytes.clear();
        p.bytes.extend_from_slice(copy.bytes);
        p.chain.clear();
        Some(())
    }

    fn sample(r: &mut Recording, misc: u16, c: &mut Cur<'_>) -> Option<()> {
        let identifier = c.u64()?;
        if let Some(&(_, kind)) = r.counter_ids.iter().find(|(id, _)| *id == identifier) {
            let pid = c.u32()?;
            let tid = c.u32()?;
            let time = c.u64()?;
            r.last_time = time;
            r.counter_events.push(super::CounterEvent {
                time,
                pid,
                tid,
                kind,
            });
            return Some(());
        }
        if let Some(&(_, event)) = r.trace_ids.iter().find(|(id, _)| *id == identifier) {
            return trace(r, event, c);
        }
        if r.copy_ids.contains(&identifier) {
            return copy(r, c);
        }
        let ip = c.u64()?;
        let pid = c.u32()?;
        let tid = c.u32()?;
        let time = c.u64()?;
        r.last_time = time;
        let cpu = c.u32()?;
        let _res = c.u32()?;
        let period = c.u64()?;
        let chain = callchain(r, c)?;
        let regs = regs_user(c)?;
        let own_copy = c.pos < c.b.len();
        // The BPF copier's record for this sample, looked for only when the kernel copied none.
        let mut bpf_copy = (!own_copy && !r.copy_ids.is_empty())
            .then(|| r.pending_copies.get_mut(&cpu))
            .flatten()
            .filter(|p| p.waiting)
            .map(|p| {
                p.waiting = false;
                let taken = (std::mem::take(&mut p.bytes), std::mem::take(&mut p.chain));
                (p.sp, p.ended, taken)
            });
        // It is this sample's if taken at the same stack pointer (see `PendingCopy`).
        let paired = match (&bpf_copy, regs) {
            (Some((sp, ended, (bytes, walked))), Some(u)) if *sp == u.sp => {
                Some((*ended, &bytes[..], &walked[..]))
            }
            _ => None,
        };
        let sample = (pid, tid, time);
        let stack = if own_copy {
            Kept::of(live_stack(r, sample, regs, stack_user(c)?))
        } else {
            match paired {
                Some((ended, bytes, _)) => copied(r, sample, regs, ended, bytes),
                None => Kept::of((&[][..], false)),
            }
        };
        let walked = paired.map_or(&[][..], |(_, _, walked)| walked);
        let head = Head {
            ip,
            pid,
            tid,
            time,
            cpu,
            period,
            user_mode: misc & MISC_CPUMODE_MASK == MISC_USER,
        };
        push(r, head, chain, regs, stack, walked);
        if let Some((.., (bytes, walked))) = bpf_copy.take() {
            // Back to its CPU's slot, whose capacity the next copy reuses.
            if let Some(p) = r.pending_copies.get_mut(&cpu) {
                (p.bytes, p.chain) = (bytes, walked);
                p.bytes.clear();
                p.chain.clear();
            }
        }
        Some(())
    }

    /// A sample's stack copy as kept: the bytes that can hold frames, and where it ended.
    #[derive(Clone, Copy)]
    struct Kept<'a> {
        bytes: &'a [u8],
        end: CopyEnd,
    }

    impl<'a> Kept<'a> {
        /// A copy as [`live_stack`] keeps it (whether it is cut at its size), with nothing
        /// known of where the frames end.
        fn of((bytes, full): (&'a [u8], bool)) -> Kept<'a> {
            Kept {
                bytes,
                end: CopyEnd::sized(full),
            }
        }
    }

    /// The part of a BPF copy that holds frames, by why it ends where it does.
    fn copied<'a>(
        r: &mut Recording,
        sample: (u32, u32, u64),
        regs: Option<UserRegs>,
        ended: CopierEnd,
        bytes: &'a [u8],
    ) -> Kept<'a> {
        match ended {
            CopierEnd::AtFrames => Kept::of((bytes, false)),
            CopierEnd::BelowFrames => Kept {
                bytes,
                end: CopyEnd::BelowFrames,
            },
            CopierEnd::AtSize => Kept::of(live_stack(r, sample, regs, (bytes, true))),
            CopierEnd::Unreadable => Kept::of(live_stack(r, sample, regs, (bytes, false))),
        }
    }

    /// What a CPU sample says of itself besides its chain, registers and copy: from the
    /// kernel's record or from the program's whole sample.
    struct Head {
        ip: u64,
        pid: u32,
        tid: u32,
        time: u64,
        cpu: u32,
        period: u64,
        user_mode: bool,
    }

    /// Completes a CPU sample and keeps it: the user part of its chain from the copy when the
    /// kernel was not asked for it (`walked`: the program's walk past a copy cut at its
    /// size), its frames and copy placed in the arenas.
    fn push(
        r: &mut Recording,
        head: Head,
        mut chain: (usize, usize, usize),
        regs: Option<UserRegs>,
        copy: Kept<'_>,
        walked: &[u64],
    ) {
        let stack = copy.bytes;
        if r.user_chains_from_copies
            && chain.2 == r.frames.len()
            && let Some(u) = regs
        {
            let limit = match r.max_stack {
                0 => usize::from(crate::preflight::MAX_KERNEL_CHAIN),
                m => usize::from(m),
            };
            // The kernel counts its context markers against the limit, the user one too.
            let room = limit.saturating_sub(chain.0 + 1);
            let walked = if walked.is_empty() {
                frame_pointer_chain(&mut r.frames, u, stack, room)
            } else {
                let n = walked.len().min(room);
                r.frames.extend_from_slice(&walked[..n]);
                n
            };
            chain.0 += 1 + walked;
        }
        let placed = place(r, chain, stack);
        r.sample_count += 1;
        r.samples.push(super::Sample {
            time: head.time,
            pid: head.pid,
            tid: head.tid,
            cpu: head.cpu,
            period: head.period,
            ip: head.ip,
            user_mode: head.user_mode,
            regs,
            copy_end: copy.end,
            chain_limited: placed.chain_limited,
            kernel: placed.kernel,
            user: placed.user,
            stack: placed.stack,
        });
    }
}

mod parse_fields {
    use std::ops::Range;

    use super::parse::Cur;
    use super::{Recording, UserRegs};
    use crate::sys::*;

    /// Reads a callchain into the frame arena, kernel part then user part; returns the number
    /// of entries, where the kernel part starts and where it ends (the user part follows).
    pub(super) fn callchain(r: &mut Recording, c: &mut Cur<'_>) -> Option<(usize, usize, usize)> {
        let nr = c.u64()? as usize;
        let chain = c.bytes(nr.checked_mul(8)?)?;
        let mut kernel_end = 0;
        // Two passes over the chain push the kernel and then the user part straight into the
        // frame arena, so parsing a sample allocates nothing.
        let k0 = r.frames.len();
        for want in [CONTEXT_KERNEL, CONTEXT_USER] {
            let mut ctx = 0u64;
            for w in chain.chunks_exact(8) {
                let a = u64::from_ne_bytes(w.try_into().ok()?);
                if a >= CONTEXT_MAX {
                    ctx = a;
                } else if ctx == want {
                    r.frames.push(a);
                }
            }
            if want == CONTEXT_KERNEL {
                kernel_end = r.frames.len();
            }
        }
        Some((nr, k0, kernel_end))
    }

    /// Where one sample's frames and stack copy lie in the recording's arenas, and whether the
    /// kernel cut its chain: shared by CPU samples and tracepoint records.
    pub(super) struct Placed {
        pub chain_limited: bool,
        pub kernel: Range<u32>,
        pub user: Range<u32>,
        pub stack: Range<u32>,
    }

    /// Stores a sample's user stack copy after its callchain (`chain` as `callchain` returned
    /// it, the user frames last in the frame arena) and says where both lie.
    pub(super) fn place(
        r: &mut Recording,
        (nr, k0, kernel_end): (usize, usize, usize),
        stack: &[u8],
    ) -> Placed {
        let s0 = r.stacks.len() as u32;
        r.stacks.extend_from_slice(stack);
        Placed {
            // The kernel stops storing frames once the chain, context markers included, holds
            // `sample_max_stack` entries.
            chain_limited: r.max_stack > 0 && nr >= usize::from(r.max_stack),
            kernel: k0 as u32..kernel_end as u32,
            user: kernel_end as u32..r.frames.len() as u32,
            stack: s0..r.stacks.len() as u32,
        }
    }

    /// Reads `PERF_SAMPLE_REGS_USER` for our register mask.
    pub(super) fn regs_user(c: &mut Cur<'_>) -> Option<Option<UserRegs>> {
        let abi = c.u64()?;
        Some(if abi != 0 {
            // Ascending register number: bx (1), bp (6), sp (7), ip (8).
            let bx = c.u64()?;
            let bp = c.u64()?;
            let sp = c.u64()?;
            let ip = c.u64()?;
            Some(UserRegs {
                ip,
                sp,
                bp,
                bx: Some(bx),
            })
        } else {
            None
        })
    }

    /// Reads `PERF_SAMPLE_STACK_USER`: the valid part of the copy, and whether it was full.
    pub(super) fn stack_user<'a>(c: &mut Cur<'a>) -> Option<(&'a [u8], bool)> {
        let size = c.u64()? as usize;
        if size == 0 {
            return Some((&[], false));
        }
        let data = c.bytes(size)?;
        let dyn_size = c.u64()? as usize;
        Some((&data[..dyn_size.min(size)], dyn_size >= size))
    }
}
