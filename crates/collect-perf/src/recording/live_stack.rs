//! What of a sample's user stack copy can hold frames. The kernel copies from the stack
//! pointer to the end of the stack's mapping (or further, into a readable mapping above it),
//! and above every stack's outermost frame lie kilobytes no frame uses: over a main thread's
//! `argc` and `argv`, where exec started its stack, the environment's pointers, the auxiliary
//! vector and the strings; over a glibc thread's frames and static TLS, its thread descriptor
//! (`struct pthread`, ~2.3 KiB). Storing them was most of the collector's copying, so they are
//! dropped where the words there say what they are; a copy that does not say so is kept whole.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use super::{Recording, UserRegs};

/// Where a process's main thread began its stack ([`super::ProcReading::start_stack`]), as
/// read at `since`: true of samples from then on until the process execs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StackStart {
    pub start: u64,
    pub since: u64,
}

/// What each thread's copies said of its descriptor.
pub(crate) type ThreadDescriptors = FxHashMap<u32, Searched>;

/// What a thread's copies said of its descriptor: where it is, or that none lay in a copy
/// reaching up to an address (not a glibc thread), so that later copies are searched again
/// only if they reach higher. A copy can stop short of the stack's end, at a page not yet
/// touched, or hold nothing, when its stack pointer's own page is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Searched {
    At(Descriptor),
    NoneUpTo(u64),
}

/// A glibc thread descriptor: at `at`, pointing to itself at offsets 0 and 16 (its TCB
/// header's `tcb` and `self`), with the thread's id at `at + tid_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Descriptor {
    at: u64,
    tid_offset: usize,
}

/// A copy record's header: the stack pointer the copy starts at, its length, its end code.
pub(crate) const COPY_HEADER: usize = 16;

/// Why a copy of the stack-copying BPF program ([`crate::bpf`]'s `LiveCopy`) ends where it
/// does: its record's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CopierEnd {
    /// At the copy size: the stack may go on beyond it.
    #[default]
    AtSize = 0,
    /// At the first page it could not read (the mapping's end, or a page never touched).
    Unreadable = 1,
    /// At the end of the thread's frames, as user space said: nothing of the stack is left.
    AtFrames = 2,
    /// At a page it could not read below where the thread's frames end (a page not yet
    /// touched: a function that just grew its frame): the stack goes on beyond it.
    BelowFrames = 4,
}

/// The code of that program's other record: for a copy cut at its size, written just after
/// it, the user frame-pointer chain it walked as the kernel walks it (the user ip, then a
/// return address a frame), which goes on past the copy.
pub(crate) const CHAIN_RECORD: u32 = 3;

/// A flag of a copy record's code: the record is its sample, whole. The program wrote the
/// sample's fields after the copy ([`SAMPLE_TRAILER`]) and the kernel wrote no sample.
pub(crate) const WHOLE_SAMPLE: u32 = 0x100;

/// The length of a whole sample's trailer: its ip, pid and tid (the helper's word, pid
/// above), time, period, bx and bp, a word each.
pub(crate) const SAMPLE_TRAILER: usize = 48;

/// The fields of a sample the program wrote whole, taken in user mode: its ip is the user
/// ip, its user registers those it was taken with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WholeSample {
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub period: u64,
    pub bx: u64,
    pub bp: u64,
}

impl WholeSample {
    fn parse(t: &[u8]) -> Option<WholeSample> {
        let word = |i: u64| word_at(t, 0, 8 * i);
        let pid_tid = word(1)?;
        Some(WholeSample {
            ip: word(0)?,
            pid: (pid_tid >> 32) as u32,
            tid: pid_tid as u32,
            time: word(2)?,
            period: word(3)?,
            bx: word(4)?,
            bp: word(5)?,
        })
    }
}

/// One record of that program: the copy of the stack from `sp`, why it ends there, and the
/// sample itself if the record is one whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CopyRecord<'a> {
    pub sp: u64,
    pub ended: CopierEnd,
    pub bytes: &'a [u8],
    pub whole: Option<WholeSample>,
}

/// A record's raw data as its header lays it out: stack pointer, code, and the bytes its
/// length says (perf pads the data to 8 bytes); None if it is shorter than it says.
fn copier_record(raw: &[u8]) -> Option<(u64, u32, &[u8])> {
    let word = |at: usize| Some(u32::from_ne_bytes(raw.get(at..at + 4)?.try_into().ok()?));
    let sp = u64::from_ne_bytes(raw.get(..8)?.try_into().ok()?);
    let (len, code) = (word(8)? as usize, word(12)?);
    Some((
        sp,
        code,
        raw.get(COPY_HEADER..COPY_HEADER.checked_add(len)?)?,
    ))
}

/// Reads a copy record; None if it is shorter than it says or its end code is unknown (a
/// chain record among them).
pub(crate) fn parse_copy(raw: &[u8]) -> Option<CopyRecord<'_>> {
    let (sp, code, bytes) = copier_record(raw)?;
    let ended = match code & !WHOLE_SAMPLE {
        0 => CopierEnd::AtSize,
        1 => CopierEnd::Unreadable,
        2 => CopierEnd::AtFrames,
        4 => CopierEnd::BelowFrames,
        _ => return None,
    };
    let whole = if code & WHOLE_SAMPLE != 0 {
        let trailer = raw.get(COPY_HEADER + bytes.len()..)?;
        Some(WholeSample::parse(trailer)?)
    } else {
        None
    };
    Some(CopyRecord {
        sp,
        ended,
        bytes,
        whole,
    })
}

/// Reads a chain record ([`CHAIN_RECORD`]): its stack pointer and the bytes of its
/// addresses; None if it is not one or is shorter than it says.
pub(crate) fn parse_chain(raw: &[u8]) -> Option<(u64, &[u8])> {
    let (sp, code, addrs) = copier_record(raw)?;
    (code == CHAIN_RECORD).then_some((sp, addrs))
}

/// One CPU's stack copy from the BPF program ([`crate::bpf::LiveCopy`]), waiting for the
/// sample written after it: taken by the next sample of that CPU if it is at the same stack
/// pointer. The program lets a sample be written only after its copy (a copy without room
/// drops its sample), so a sample with user registers always follows its own copy; the stack
/// pointer confirms it. Not the thread: the kernel adds none to the program's records (each
/// thread id cost a sample ~0.1 us), and the program's would be the initial pid namespace's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PendingCopy {
    pub waiting: bool,
    pub sp: u64,
    pub ended: CopierEnd,
    /// Kept between copies, so a copy costs no allocation.
    pub bytes: Vec<u8>,
    /// The chain walked past a copy cut at its size, if its record came (else empty).
    pub chain: Vec<u64>,
}

/// Where threads' frames end, as found in their copies, to tell the BPF program that copies
/// the stacks (when it does: `active`) so that it copies no further: `changes` since the
/// sampler last passed them on, and what it was told, by thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FrameEnds {
    pub active: bool,
    pub told: HashMap<u32, u64>,
    pub changes: Vec<(u32, Option<u64>)>,
}

impl FrameEnds {
    /// Thread `tid`'s frames end at `end` (the copy was trimmed there).
    fn found(&mut self, tid: u32, end: u64) {
        if self.active && self.told.insert(tid, end) != Some(end) {
            self.changes.push((tid, Some(end)));
        }
    }

    /// Thread `tid` exited: its end no longer holds.
    pub(crate) fn forget(&mut self, tid: u32) {
        if self.told.remove(&tid).is_some() {
            self.changes.push((tid, None));
        }
    }

    /// Process `pid` exec'd: its main thread's end no longer holds, and the copier's exec
    /// program has put the new image's in its place, which no change of the old one (not yet
    /// passed on) or deletion may undo.
    pub(crate) fn exec(&mut self, pid: u32) {
        self.told.remove(&pid);
        self.changes.retain(|&(tid, _)| tid != pid);
    }
}

/// A thread descriptor is aligned to 64 bytes and lies in the top pages of its stack mapping;
/// the copy is searched this far below its end for one.
const DESCRIPTOR_SEARCH: usize = 16 * 1024;
/// Its thread id lies within this many bytes of its start (720 in glibc 2.36).
const TID_SEARCH: usize = 2048;

/// The part of a sample's stack copy that can hold frames, and whether the stack may go on
/// beyond it. A main thread's copy ends at its `argc` and `argv` when the reading that said
/// where they are is no newer than the sample and the words there are still an `argc` and
/// its `argv` (an image before an exec had its stack elsewhere); another thread's ends below
/// its descriptor.
pub(super) fn live_stack<'a>(
    r: &mut Recording,
    (pid, tid, time): (u32, u32, u64),
    regs: Option<UserRegs>,
    (stack, full): (&'a [u8], bool),
) -> (&'a [u8], bool) {
    let Some(regs) = regs else {
        return (stack, full);
    };
    let end = if pid == tid {
        let start = r.stack_starts.get(&pid).filter(|s| time >= s.since);
        start.and_then(|s| argv_end(stack, regs.sp, s.start))
    } else {
        descriptor_start(&mut r.thread_descriptors, tid, stack, regs.sp, full)
    };
    match end {
        Some(end) => {
            r.frame_ends.found(tid, regs.sp.wrapping_add(end as u64));
            (&stack[..end], false)
        }
        None => (stack, full),
    }
}

/// The user callchain the kernel's frame-pointer walk would give, walked over the stack copy
/// instead, into `frames`: the user ip, then the return address above each saved rbp from the
/// sample's rbp on, while both words lie in the copy, at most `room` entries; returns how many.
/// With the BPF copier at full size the kernel is not asked for this walk: it cost the
/// workload ~1.2 us a sample at 10 kHz, about what the copy costs, and the copy holds every
/// frame it would read but those past a copy cut at its size, for which the program walks the
/// chain itself ([`CHAIN_RECORD`]).
pub(super) fn frame_pointer_chain(
    frames: &mut Vec<u64>,
    regs: UserRegs,
    stack: &[u8],
    room: usize,
) -> usize {
    if room == 0 {
        return 0;
    }
    frames.push(regs.ip);
    let mut n = 1;
    let mut bp = regs.bp;
    while n < room {
        let next = word_at(stack, regs.sp, bp);
        let ra = word_at(stack, regs.sp, bp.wrapping_add(8));
        let (Some(next), Some(ra)) = (next, ra) else {
            break;
        };
        frames.push(ra);
        n += 1;
        bp = next;
    }
    n
}

/// The `N` bytes at `addr` of a stack copy whose bytes start at `base`; None outside it.
fn bytes_at<const N: usize>(stack: &[u8], base: u64, addr: u64) -> Option<[u8; N]> {
    let off = usize::try_from(addr.checked_sub(base)?).ok()?;
    stack.get(off..off.checked_add(N)?)?.try_into().ok()
}

/// The word at `addr` of a stack copy whose bytes start at `base`; None outside the copy.
pub(crate) fn word_at(stack: &[u8], base: u64, addr: u64) -> Option<u64> {
    bytes_at(stack, base, addr).map(u64::from_ne_bytes)
}

/// The length of `stack` (copied from `sp`) up to and with the `argc` at `start` and its
/// `argv`, if the copy holds them, `argv` ends in NULL and its first pointer points above.
/// (`argv` is kept: a dynamic linker older than glibc 2.36, run as the command, skipped its
/// own arguments by starting the program's stack among those pointers.)
fn argv_end(stack: &[u8], sp: u64, start: u64) -> Option<usize> {
    let arg = |i: u64| word_at(stack, sp, start.checked_add(i.checked_mul(8)?)?);
    let argc = arg(0)?;
    let argv_ends = arg(argc.checked_add(1)?)? == 0;
    let first_above = argc == 0 || arg(1)?.checked_sub(start).is_some_and(|d| d > 8);
    let end = start.checked_add(8 * (argc + 2))? - sp;
    (argv_ends && first_above).then_some(end as usize)
}

/// The length of `stack` (copied from `sp`) below thread `tid`'s descriptor: the one found
/// before, if the copy still holds it, else one searched for from the copy's top down (its
/// top being the stack's end or beyond, where only a copy not cut by its size reaches) unless
/// an earlier copy reaching as high held none.
fn descriptor_start(
    known: &mut ThreadDescriptors,
    tid: u32,
    stack: &[u8],
    sp: u64,
    full: bool,
) -> Option<usize> {
    let end = sp.saturating_add(stack.len() as u64);
    match known.get(&tid) {
        Some(Searched::At(d)) if is_descriptor(stack, sp, d.at, tid, d.tid_offset) => {
            return Some((d.at - sp) as usize);
        }
        Some(&Searched::NoneUpTo(top)) if end <= top => return None,
        _ if full => return None,
        _ => {}
    }
    let found = find_descriptor(stack, sp, tid);
    known.insert(tid, found.map_or(Searched::NoneUpTo(end), Searched::At));
    found.map(|d| (d.at - sp) as usize)
}

/// Whether `stack` holds at `at` a descriptor pointing to itself, with `tid` at `tid_offset`.
fn is_descriptor(stack: &[u8], sp: u64, at: u64, tid: u32, tid_offset: usize) -> bool {
    let tid_at = at.checked_add(tid_offset as u64);
    word_at(stack, sp, at) == Some(at)
        && word_at(stack, sp, at.wrapping_add(16)) == Some(at)
        && tid_at.and_then(|a| tid_in(stack, sp, a)) == Some(tid)
}

/// The 32-bit word of `stack` (copied from `sp`) at `addr`.
fn tid_in(stack: &[u8], sp: u64, addr: u64) -> Option<u32> {
    bytes_at(stack, sp, addr).map(u32::from_ne_bytes)
}

/// The highest descriptor of thread `tid` in the top [`DESCRIPTOR_SEARCH`] bytes of `stack`.
fn find_descriptor(stack: &[u8], sp: u64, tid: u32) -> Option<Descriptor> {
    let end = sp.checked_add(stack.len() as u64)?;
    let lowest = end.saturating_sub(DESCRIPTOR_SEARCH as u64).max(sp);
    let mut at = end.checked_sub(24)? & !63;
    while at >= lowest {
        if word_at(stack, sp, at) == Some(at) && word_at(stack, sp, at + 16) == Some(at) {
            let tid_offset = (24..TID_SEARCH)
                .step_by(4)
                .find(|&o| tid_in(stack, sp, at + o as u64) == Some(tid));
            if let Some(tid_offset) = tid_offset {
                return Some(Descriptor { at, tid_offset });
            }
        }
        at = at.checked_sub(64)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of thread `tid`'s stack from `sp`: frames and TLS, then at `sp + 0x800` its
    /// descriptor (the tid at offset 720), to the mapping's end at `sp + 0x1000`.
    fn thread_copy(sp: u64, tid: u32) -> Vec<u8> {
        let mut stack = vec![0x11u8; 0x1000];
        let pd = sp + 0x800;
        stack[0x800..0x808].copy_from_slice(&pd.to_ne_bytes());
        stack[0x808..0x810].copy_from_slice(&0x5555_0000u64.to_ne_bytes());
        stack[0x810..0x818].copy_from_slice(&pd.to_ne_bytes());
        stack[0x800 + 720..0x800 + 724].copy_from_slice(&tid.to_ne_bytes());
        stack
    }

    #[test]
    fn a_record_says_where_its_copy_ends_and_why() {
        let mut raw = Vec::new();
        raw.extend_from_slice(&0x7ffe_1000u64.to_ne_bytes());
        raw.extend_from_slice(&5u32.to_ne_bytes());
        raw.extend_from_slice(&2u32.to_ne_bytes());
        raw.extend_from_slice(&[1, 2, 3, 4, 5, 0, 0, 0]);
        let r = parse_copy(&raw).map(|r| (r.sp, r.ended, r.bytes.to_vec()));
        assert_eq!(
            r,
            Some((0x7ffe_1000, CopierEnd::AtFrames, vec![1, 2, 3, 4, 5]))
        );
        // Longer than the record, an unknown end, a short header: refused.
        raw[8] = 9;
        assert_eq!(parse_copy(&raw), None);
        raw[8] = 5;
        raw[12] = 3;
        assert_eq!(parse_copy(&raw), None);
        assert_eq!(parse_copy(&raw[..15]), None);
    }

    /// An exit takes a thread's end out of the copier's map; an exec leaves the map to the
    /// copier's exec program, which has put the new image's end there, and drops the old
    /// image's end if it was not yet passed on.
    #[test]
    fn an_exec_leaves_the_new_images_end_to_the_copier() {
        let mut ends = FrameEnds {
            active: true,
            ..FrameEnds::default()
        };
        ends.found(7, 0x7ffe_1000);
        ends.found(8, 0x7f00_2000);
        ends.exec(7);
        assert_eq!(ends.changes, [(8, Some(0x7f00_2000))]);
        ends.changes.clear();
        ends.found(7, 0x7ffd_1000);
        ends.exec(7);
        ends.forget(8);
        assert_eq!(ends.changes, [(8, None)]);
        assert!(ends.told.is_empty());
    }

    #[test]
    fn a_threads_copy_ends_below_its_descriptor() {
        let sp = 0x7f00_0000u64;
        let stack = thread_copy(sp, 42);
        let mut known = ThreadDescriptors::default();
        assert_eq!(
            descriptor_start(&mut known, 42, &stack, sp, false),
            Some(0x800)
        );
        let found = Descriptor {
            at: sp + 0x800,
            tid_offset: 720,
        };
        assert_eq!(known[&42], Searched::At(found));
        // Found once, then checked: a copy from deeper down, cut by its size, ends there too.
        let deeper = [vec![0u8; 0x100], stack.clone()].concat();
        let at = descriptor_start(&mut known, 42, &deeper, sp - 0x100, true);
        assert_eq!(at, Some(0x900));
        // The tid later another thread's, on another stack: searched for again.
        let sp2 = 0x7e00_0000u64;
        let other = thread_copy(sp2, 42);
        assert_eq!(
            descriptor_start(&mut known, 42, &other, sp2, false),
            Some(0x800)
        );
        assert_eq!(
            known[&42],
            Searched::At(Descriptor {
                at: sp2 + 0x800,
                tid_offset: 720
            })
        );
        // Another thread's id there: not its descriptor, and none is searched for again in a
        // copy reaching no higher.
        let mut known = ThreadDescriptors::default();
        assert_eq!(descriptor_start(&mut known, 43, &stack, sp, false), None);
        assert_eq!(known[&43], Searched::NoneUpTo(sp + 0x1000));
        let ours = thread_copy(sp, 43);
        assert_eq!(descriptor_start(&mut known, 43, &ours, sp, false), None);
        // A copy that held nothing (its stack pointer's page not yet touched when the thread
        // was first sampled), then one stopped short of the descriptor at such a page: the
        // next reaching higher is searched.
        let mut known = ThreadDescriptors::default();
        assert_eq!(
            descriptor_start(&mut known, 42, &[], sp + 0x40, false),
            None
        );
        assert_eq!(
            descriptor_start(&mut known, 42, &stack[..0x400], sp, false),
            None
        );
        assert_eq!(known[&42], Searched::NoneUpTo(sp + 0x400));
        assert_eq!(
            descriptor_start(&mut known, 42, &stack, sp, false),
            Some(0x800)
        );
        // A copy cut by its size is not searched (the descriptor may lie beyond it).
        let mut known = ThreadDescriptors::default();
        assert_eq!(descriptor_start(&mut known, 42, &stack, sp, true), None);
        assert!(known.is_empty());
        // Not pointing to itself at 16: no descriptor.
        let mut broken = stack.clone();
        broken[0x810] ^= 1;
        let mut known = ThreadDescriptors::default();
        assert_eq!(descriptor_start(&mut known, 42, &broken, sp, false), None);
    }
}
