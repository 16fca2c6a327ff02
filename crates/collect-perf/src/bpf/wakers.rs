//! Who woke a blocked thread, seen in the kernel (`pkgmon --blocking`'s wakers): a wake-up
//! fired in the idle task (an interrupt on an idle CPU: a disk's completion, a timer) reaches
//! BPF programs but no sampled perf event (Linux 6.18 takes no tracepoint sample there), so
//! through perf its waker is only known by inference and its frames are lost.
//!
//! Two programs and three maps:
//! - a program on the followed tasks' context-switch software events (per task, inherited by
//!   their threads and children, like the sampling events) puts the thread leaving the CPU in
//!   `followed` unless it is there ([`Wakers::follow`] puts the threads it starts with there
//!   too; the collector takes a thread out at its exit record, [`Wakers::forget`]). A plain
//!   hash, not an LRU one: an LRU hash frees its nodes in per-CPU batches and may evict a
//!   live thread's entry long before it is full; here an entry the map has no room for is
//!   counted (`lost`), never silently missing;
//! - a program on `sched:sched_waking` (every task's wake-ups) writes one record to the ring
//!   buffer for each wake-up of a thread in `followed`: the time, the woken thread, the
//!   waker's thread and process (0 in the idle task) and the waker's kernel frames
//!   (`bpf_get_stack`, the frames a perf sample of the tracepoint would carry).
//!
//! The kernel fires `sched_waking` only for a task in a sleeping state, so a preempted thread
//! has none. A wake-up may come before the sleeper's switch-out event: the sleeper is off
//! its run queue but still on its CPU when an interrupt on another CPU wakes it (a fast
//! disk); so the record does not wait for the switch-out, and the reader takes the last
//! wake-up before the thread's switch back in. A thread's wake-up before its first switch-out
//! (a thread started later, woken in that window) is not seen. Records the ring had no room
//! for, and threads `followed` had no room for, are counted (`lost`); the sleep they belonged
//! to then has no waker, as on the perf path.
//!
//! Not counted: on Linux 6.18 under load the kernel now and then does not run the waking
//! program for a wake-up that a counting perf event on `sched_waking` does count (1 of ~300
//! timer wake-ups of one sleeping thread in about one run in five, with two busy loops on the
//! two CPUs; the program's `recursion_misses` stays 0 and its `followed` lookups never
//! failed). That sleep shows its waker as not seen.

use std::os::fd::OwnedFd;

use super::insn::{Alu, Asm, Code, Cond, Helper, MapSlot, Reg, Size};
use super::map::{Map, MapKind, u32_at, u64_at};
use super::prog::{Attachment, Program};
use super::ringbuf::{CountedOutput, RingBuf};
use crate::tracefs::Tracefs;
use crate::{Error, Result};

const FOLLOWED: MapSlot = MapSlot(0);
const COUNTS: MapSlot = MapSlot(1);
const RING: MapSlot = MapSlot(2);

/// Entries of the counters map.
const RECORDS: i32 = 0;
const LOST: i32 = 1;
/// Threads the switch program could not put in `followed` (full).
const UNFOLLOWED: i32 = 2;
const N_COUNTS: u32 = 3;

/// `BPF_NOEXIST`.
const NOEXIST: i32 = 1;

/// The most kernel frames a record carries (the record is built on the program's 512-byte
/// stack).
pub const MAX_FRAMES: usize = 32;

/// A record's header: time, woken tid, waker tid, waker pid, bytes of frames.
const HEADER: usize = 24;

// The waking program's stack frame (offsets from R10).
const KEY: i16 = -4;
const CKEY: i16 = -8;

/// One wake-up of a followed thread that had left its CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wakeup {
    /// When, ns on CLOCK_MONOTONIC (the perf records' clock).
    pub time: u64,
    /// The thread woken.
    pub tid: u32,
    /// The waker's process: 0 when the wake-up fired in the idle task (an interrupt).
    pub waker_pid: u32,
    /// The waker's kernel frames, innermost first.
    pub frames: Vec<u64>,
}

/// The in-kernel waker collection: programs attached, the ring read at each round.
#[derive(Debug)]
pub struct Wakers {
    maps: Vec<Map>,
    ring: RingBuf,
    switch: Program,
    waking: Program,
    _attachment: Attachment,
    /// The context-switch events running `switch` on the followed tasks.
    switch_events: Vec<OwnedFd>,
    frames: usize,
}

impl Wakers {
    /// Creates the maps and the ring, loads the programs (records carry up to `frames` kernel
    /// frames, at most [`MAX_FRAMES`]) and attaches the waking one; no thread is reported
    /// until its process is followed ([`Wakers::follow`]).
    ///
    /// Returns an error if BPF is not permitted, a program is refused (with the verifier's
    /// words), or `sched_waking` is missing.
    pub fn load(frames: usize) -> Result<Wakers> {
        let frames = frames.clamp(1, MAX_FRAMES);
        let waking = Tracefs::find_or_mount()?.event("sched", "sched_waking")?;
        let pid_off = super::latency::field(&waking, "pid", 4)?;
        let maps = vec![
            Map::create(MapKind::Hash, "pkg_followed", 4, 8, 65536)?,
            Map::create(MapKind::PercpuArray, "pkg_wcounts", 4, 8, N_COUNTS)?,
        ];
        let ring = RingBuf::create("pkg_wakers", 1 << 22)?;
        let refs = [&maps[0], &maps[1], ring.map()];
        let switch = Program::load_perf_event("pkg_switch", &switch_program(), &refs)?;
        let waking_prog =
            Program::load_tracepoint("pkg_waking", &waking_program(pid_off, frames), &refs)?;
        let attachment = waking_prog.attach(&waking)?;
        Ok(Wakers {
            maps,
            ring,
            switch,
            waking: waking_prog,
            _attachment: attachment,
            switch_events: Vec::new(),
            frames,
        })
    }

    /// Follows process `pid` and the threads and processes it starts: from now if `now` (a
    /// running process, each of its threads), else from its next exec (a launched command,
    /// held before its exec).
    ///
    /// Returns an error if a context-switch event cannot be opened or take the program.
    pub fn follow(&mut self, pid: u32, now: bool) -> Result<()> {
        let tids = if now {
            crate::procfs::threads(pid as i32)
                .map_err(|_| Error::NoSuchProcess { pid: pid as i32 })?
        } else {
            vec![pid as i32]
        };
        for tid in tids {
            self.maps[FOLLOWED.0]
                .update(&(tid as u32).to_ne_bytes(), &0u64.to_ne_bytes())
                .map_err(|e| Error::io(format!("cannot follow thread {tid} in the BPF map"), e))?;
            let fd = self.switch.run_on_task_event(
                crate::sys::PERF_COUNT_SW_CONTEXT_SWITCHES,
                "context switches",
                tid,
                now,
            )?;
            self.switch_events.push(fd);
        }
        Ok(())
    }

    /// Stops following thread `tid` (it exited): its entry in `followed` is freed for the
    /// threads to come. A thread id the kernel reuses for a thread of another process is
    /// then not reported as followed.
    pub fn forget(&self, tid: u32) {
        // A failure leaves a stale entry: that thread id's wake-ups would be recorded and
        // never asked for, which costs ring space only.
        let _ = self.maps[FOLLOWED.0].delete(&tid.to_ne_bytes());
    }

    /// Hands every wake-up recorded since the last call to `f`, in the order written.
    pub fn read(&mut self, mut f: impl FnMut(Wakeup)) {
        let frames = self.frames;
        self.ring.read(|r| {
            if let Some(w) = parse(r, frames) {
                f(w);
            }
        });
    }

    /// Wake-ups lost so far: those the ring had no room for, those the kernel did not run
    /// the waking program for (it skips a tracepoint's program inside another BPF program),
    /// and one for each thread `followed` had no room for (all its wake-ups are lost).
    pub fn lost(&self) -> u64 {
        self.count(LOST) + self.count(UNFOLLOWED) + self.waking.misses()
    }

    /// Wake-ups written to the ring, so far.
    pub fn recorded(&self) -> u64 {
        self.count(RECORDS)
    }

    fn count(&self, i: i32) -> u64 {
        let counts = &self.maps[COUNTS.0];
        match counts.lookup(&i.to_ne_bytes()) {
            Ok(Some(v)) => v.chunks(counts.value_stride()).map(|c| u64_at(c, 0)).sum(),
            _ => 0,
        }
    }
}

/// A record's fields, or None if it is shorter than its header says.
fn parse(r: &[u8], keep: usize) -> Option<Wakeup> {
    if r.len() < HEADER {
        return None;
    }
    let bytes = (u32_at(r, 20) as usize).min(r.len() - HEADER);
    let frames = r[HEADER..HEADER + bytes]
        .chunks_exact(8)
        .map(|c| u64_at(c, 0))
        .take_while(|&a| a != 0)
        .take(keep)
        .collect();
    Some(Wakeup {
        time: u64_at(r, 0),
        tid: u32_at(r, 8),
        waker_pid: u32_at(r, 16),
        frames,
    })
}

/// The context-switch event's program: the thread leaving the CPU goes into `followed` if it
/// is not there (a lookup, cheaper than an update at every switch); a full map is counted.
/// Returns 0: the event writes no sample.
fn switch_program() -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.call(Helper::GetCurrentPidTgid)
        .store(Size::W, Reg::R10, KEY, Reg::R0)
        .ld_map(Reg::R1, FOLLOWED);
    a.frame_ptr(Reg::R2, KEY);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Ne, Reg::R0, 0, out)
        .store_imm(Size::DW, Reg::R10, -16, 0)
        .update_elem(FOLLOWED, KEY, -16, NOEXIST)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .store_imm(Size::W, Reg::R10, CKEY, UNFOLLOWED)
        .count_at(COUNTS, CKEY, out)
        .bind(out)
        .mov_imm(Reg::R0, 0)
        .exit();
    a.finish()
}

/// `sched:sched_waking`: the wake-up of a thread found in `followed` is written to the ring, with `frames` kernel frames of the waker. Returns 1 (no one's perf
/// events lose the hit).
fn waking_program(pid_off: i16, frames: usize) -> Code {
    let rec = -((HEADER + frames * 8) as i16) - 8;
    let stack_bytes = (frames * 8) as i32;
    let mut a = Asm::new();
    let out = a.label();
    let fits = a.label();
    a.mov(Reg::R6, Reg::R1)
        .load(Size::W, Reg::R0, Reg::R6, pid_off)
        .store(Size::W, Reg::R10, KEY, Reg::R0)
        .ld_map(Reg::R1, FOLLOWED);
    a.frame_ptr(Reg::R2, KEY);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R10, rec, Reg::R0)
        .load(Size::W, Reg::R0, Reg::R10, KEY)
        .store(Size::W, Reg::R10, rec + 8, Reg::R0)
        .call(Helper::GetCurrentPidTgid)
        .store(Size::W, Reg::R10, rec + 12, Reg::R0)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .store(Size::W, Reg::R10, rec + 16, Reg::R0)
        .mov(Reg::R1, Reg::R6);
    a.frame_ptr(Reg::R2, rec + HEADER as i16);
    a.mov_imm(Reg::R3, stack_bytes)
        .mov_imm(Reg::R4, 0)
        .call(Helper::GetStack)
        .jmp_imm(Cond::SGe, Reg::R0, 0, fits)
        .mov_imm(Reg::R0, 0)
        .bind(fits)
        .store(Size::W, Reg::R10, rec + 20, Reg::R0);
    let output = CountedOutput {
        ring: RING,
        record: rec,
        len: HEADER as i32 + stack_bytes,
        counts: COUNTS,
        key: CKEY,
        written: RECORDS,
        lost: LOST,
    };
    output.emit(&mut a, out);
    a.bind(out).mov_imm(Reg::R0, 1).exit();
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_are_the_same_bytes_on_every_build() {
        let got = [
            switch_program().digest(),
            waking_program(8, 8).digest(),
            waking_program(8, MAX_FRAMES).digest(),
        ];
        let want = [
            "30 insns d17c78a8a05e4ff8",
            "47 insns d0faead7ae9952d1",
            "47 insns db048056c4da930a",
        ];
        assert_eq!(got, want.map(String::from), "{got:#?}");
    }

    #[test]
    fn a_record_gives_its_fields_and_frames_up_to_the_first_zero() {
        let mut r = Vec::new();
        r.extend(1234u64.to_ne_bytes());
        r.extend(7u32.to_ne_bytes());
        r.extend(8u32.to_ne_bytes());
        r.extend(0u32.to_ne_bytes());
        r.extend(24u32.to_ne_bytes());
        for a in [0xffff_1000u64, 0xffff_2000, 0, 0xffff_3000] {
            r.extend(a.to_ne_bytes());
        }
        let w = parse(&r, 8).unwrap();
        assert_eq!(
            w,
            Wakeup {
                time: 1234,
                tid: 7,
                waker_pid: 0,
                frames: vec![0xffff_1000, 0xffff_2000],
            }
        );
        assert_eq!(parse(&r, 1).unwrap().frames, vec![0xffff_1000]);
        // A header claiming more bytes than the record has reads what is there.
        r[20..24].copy_from_slice(&400u32.to_ne_bytes());
        assert_eq!(parse(&r, 8).unwrap().frames.len(), 2);
        assert_eq!(parse(&r[..20], 8), None);
    }
}
