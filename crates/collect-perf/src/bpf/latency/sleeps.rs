//! The reading side of `--blocking`: the sleeps the programs of `blocking.rs` summed in the
//! kernel, with their sleep sites' and wakers' frames, put under each call's operation.

use std::collections::{HashMap, HashSet};

use super::counts::{LatencyCounts, OffCpu, hist_key};
use super::{SyscallLatency, blocking, site};
use crate::bpf::insn::MapSlot;
use crate::bpf::map::{Map, u32_at, u64_at};
use crate::bpf::prog::Program;

impl SyscallLatency {
    /// The sleep programs' map in `slot`, if they were loaded (blocking).
    pub(super) fn sleep_map(&self, slot: MapSlot) -> Option<&Map> {
        self.sleep_maps
            .get(slot.0.checked_sub(blocking::THREADS.0)?)
    }

    /// Puts the sleeps counted in the kernel into `out`, each under its operation, with
    /// their frames from the stack map, and their checksums and what did not fit in notes:
    /// switch-outs in a call (`totals[OUTS]`) each ended at a switch-in (`INS`) or are still
    /// off now. Sleeps of an operation no call of which returned (calls that never did) are
    /// left out, said in a note. The sleep programs must be detached.
    pub(super) fn sleeps_to(
        &self,
        stacks: &Map,
        threads: &Map,
        out: &mut LatencyCounts,
        totals: &[u64],
    ) {
        let mut frames_of: HashMap<u32, Vec<u64>> = HashMap::new();
        let mut frames = |id: u32| -> Vec<u64> {
            if id == blocking::NO_STACK as u32 {
                return Vec::new();
            }
            frames_of
                .entry(id)
                .or_insert_with(|| {
                    let v = stacks.lookup(&id.to_ne_bytes()).ok().flatten();
                    v.unwrap_or_default()
                        .chunks_exact(8)
                        .map(|c| u64_at(c, 0))
                        .take_while(|&a| a != 0)
                        .take(self.kernel_frames)
                        .collect()
                })
                .clone()
        };
        let returned: HashSet<(u32, u32, u32, [u64; 3])> = (self.closed.keys())
            .chain(self.live.keys())
            .map(|k| {
                let (tgid, generation, nr, _, _, frames) = hist_key(k);
                (tgid, generation, nr, frames)
            })
            .collect();
        let (mut orphans, mut orphan_ns) = (0, 0u64);
        for (k, &(n, ns)) in &self.sleeps {
            let (tgid, generation, nr) = (u32_at(k, 0), u32_at(k, 4), u32_at(k, 8));
            let (stack, waker_pid, waker_stack) = (u32_at(k, 12), u32_at(k, 16), u32_at(k, 20));
            let site3 = [u64_at(k, 24), u64_at(k, 32), u64_at(k, 40)];
            if !returned.contains(&(tgid, generation, nr, site3)) {
                orphans += n;
                orphan_ns = orphan_ns.saturating_add(ns);
                continue;
            }
            let off = if stack == blocking::RUNNABLE as u32 {
                OffCpu::Runnable
            } else {
                OffCpu::Blocked(frames(stack))
            };
            let waker =
                (waker_pid != blocking::NO_WAKER as u32).then(|| (waker_pid, frames(waker_stack)));
            let img = out.images.entry((tgid, generation)).or_default();
            let e = img
                .sleeps
                .entry((u64::from(nr), site(site3), off, waker))
                .or_default();
            e.0 += n;
            e.1 = e.1.saturating_add(ns);
        }
        let still_off = (threads.keys().unwrap_or_default().iter())
            .filter_map(|k| threads.lookup(k).ok().flatten())
            .filter(|v| u64_at(v, blocking::T_OFF as usize) != 0)
            .count() as u64;
        let (outs, ins, unseen) = (
            totals[blocking::OUTS as usize],
            totals[blocking::INS as usize],
            totals[blocking::INS_UNSEEN as usize],
        );
        if outs != ins + still_off + unseen {
            out.notes.push(format!(
                "checksum mismatch in the kernel's sleep counts: {outs} switch-outs in a call \
                 counted, {ins} switched back in, {still_off} still off the CPU and {unseen} \
                 whose switch back in was not seen"
            ));
        }
        if unseen > 0 {
            out.notes.push(format!(
                "{unseen} of {outs} times off the CPU in a call were not counted: the \
                 context-switch program did not see the thread's switch back in"
            ));
        }
        if still_off > 0 {
            out.notes.push(format!(
                "{still_off} threads were off the CPU in a call at the end: that time is not counted"
            ));
        }
        if orphans > 0 {
            out.notes.push(format!(
                "{orphans} times off the CPU ({:.3} ms) were in calls that never returned \
                 (no call of their operation did): they are not in the files",
                orphan_ns as f64 / 1e6
            ));
        }
        let missed: u64 = self.sleep_programs.iter().map(Program::misses).sum();
        if missed > 0 {
            out.remarks.push(format!(
                "the kernel skipped the context-switch and wake-up programs {missed} times, for \
                 any task (a wake-up in an interrupt of another BPF program): a profiled \
                 sleep among them shows its waker as not seen"
            ));
        }
        for (i, what) in [
            (
                blocking::SLEEPS_FULL,
                "times off the CPU were left out: the in-kernel map of sleeps was full",
            ),
            (
                blocking::THREADS_FULL,
                "threads had no entry for their sleeps (the in-kernel map of threads was full): their sleeps are not counted",
            ),
            (
                blocking::STACKS_FULL,
                "sleep sites or wakers have no frames: their stacks collided with others in the in-kernel stack map (or it was full)",
            ),
        ] {
            let n = totals[i as usize];
            if n > 0 {
                out.notes.push(format!("{n} {what}"));
            }
        }
    }
}
