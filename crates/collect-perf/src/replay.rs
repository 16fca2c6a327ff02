//! Rebuilds processes, threads, names and memory maps from a [`Recording`] in time order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::recording::{Event, Recording, SideBand};

/// Most mappings one process keeps (the kernel's default `vm.max_map_count` is 65,530 live
/// ones). The kernel reports no munmap, so a program that maps code at ever new places
/// (`MAP_FIXED` in a loop) would otherwise grow the list, and pkgmon with it, for as long as
/// it runs; mappings past this many are counted in [`Process::mappings_dropped`], and the
/// samples in them are left without a mapping (`[unknown]`).
pub const MAX_MAPPINGS: usize = 65_536;

/// Identifies one process: a pid plus a generation that grows each time the pid is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessKey {
    /// The pid.
    pub pid: u32,
    /// 0 for the first process seen with this pid, then 1, 2, … after each reuse.
    pub generation: u32,
}

/// An executable mapping and the time span in which it was valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Start address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Path or pseudo-name, shared by every mapping of the same name.
    pub filename: Arc<str>,
    /// ELF build-id, if known.
    pub build_id: Option<Vec<u8>>,
    /// Time it appeared (mmap, fork or 0 for /proc snapshots).
    pub from: u64,
    /// Time it disappeared (exec, replacement), None if still mapped at the end.
    pub to: Option<u64>,
}

/// One thread of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// Thread id.
    pub tid: u32,
    /// Creation time (FORK), None if it existed before the recording.
    pub start: Option<u64>,
    /// Exit time.
    pub exit: Option<u64>,
    /// Latest name.
    pub comm: String,
    /// Number of samples.
    pub samples: u64,
}

/// Renames kept per process, in its info file: a process renaming itself in a loop (a million
/// times a second, for nothing but CPU time) made the collector keep every name twice, 771 MiB
/// for 2 million, and without bound for a longer loop. The others are counted.
pub const MAX_RENAMES: usize = 1000;

/// One process generation as rebuilt by [`replay`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// Pid and generation.
    pub key: ProcessKey,
    /// The parent, when a FORK record named it.
    pub parent: Option<ProcessKey>,
    /// Creation time (FORK), None if it existed before the first record.
    pub start: Option<u64>,
    /// Exit time of the main thread.
    pub exit: Option<u64>,
    /// Name history: (time, name, caused by exec): the first name, each exec's, and the latest
    /// rename after each of those (earlier renames are in [`Process::renames`]).
    pub comms: Vec<(u64, String, bool)>,
    /// Names a thread gave itself (`prctl(PR_SET_NAME)`, `pthread_setname_np`), not by exec:
    /// (time, tid, new name); the first [`MAX_RENAMES`].
    pub renames: Vec<(u64, u32, String)>,
    /// Renames past the first [`MAX_RENAMES`], counted only.
    pub renames_dropped: u64,
    /// Times of each exec.
    pub execs: Vec<u64>,
    /// Every mapping the process ever had, in order of appearance (the first
    /// [`MAX_MAPPINGS`]; an mmap that repeats a mapping still there adds none).
    pub mappings: Vec<Mapping>,
    /// Mappings past the first [`MAX_MAPPINGS`], counted only.
    pub mappings_dropped: u64,
    /// How many times a mapping was added to or ended in `mappings` by the replay: what a
    /// cache of the live mappings compares to see that it still holds.
    pub mapping_changes: u64,
    /// Its threads, in order of appearance.
    pub threads: Vec<Thread>,
    /// Indices into [`Recording::samples`] of its samples, in time order.
    pub samples: Vec<usize>,
}

impl Process {
    /// The latest name.
    pub fn comm(&self) -> &str {
        self.comms.last().map_or("", |c| c.1.as_str())
    }

    /// The mapping containing `addr` at `time`.
    pub fn mapping_at(&self, addr: u64, time: u64) -> Option<&Mapping> {
        self.mapping_index_at(addr, time).map(|k| &self.mappings[k])
    }

    /// Where in [`Process::mappings`] the mapping containing `addr` at `time` is.
    pub fn mapping_index_at(&self, addr: u64, time: u64) -> Option<usize> {
        self.mappings.iter().rposition(|m| {
            m.start <= addr && addr < m.end && m.from <= time && m.to.is_none_or(|t| time < t)
        })
    }

    fn thread(&mut self, tid: u32) -> &mut Thread {
        if let Some(i) = self.threads.iter().position(|t| t.tid == tid) {
            return &mut self.threads[i];
        }
        let comm = self.comm().to_owned();
        self.threads.push(Thread {
            tid,
            start: None,
            exit: None,
            comm,
            samples: 0,
        });
        let last = self.threads.len() - 1;
        &mut self.threads[last]
    }
}

/// The result of [`replay`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    /// All process generations, in order of first appearance.
    pub processes: Vec<Process>,
}

impl Replay {
    /// The processes with this pid, one per generation.
    pub fn by_pid(&self, pid: u32) -> impl Iterator<Item = &Process> {
        self.processes.iter().filter(move |p| p.key.pid == pid)
    }

    /// The process with this key.
    pub fn get(&self, key: ProcessKey) -> Option<&Process> {
        self.processes.iter().find(|p| p.key == key)
    }
}

/// How long after its EXIT record a process may still be sampled, finishing its exit.
const EXIT_TAIL_NS: u64 = 50_000_000;

/// Rebuilds processes from side-band records and sample owners fed one at a time, in time
/// order: the incremental form of [`replay`], which streaming aggregation drives as records
/// arrive.
#[derive(Debug, Default)]
pub(crate) struct Replayer {
    out: Replay,
    /// pid → index of its current generation.
    live: FxHashMap<u32, usize>,
    /// Per process (by index), its mappings still open, by (start, index). They never
    /// overlap (an mmap closes those it overlaps), so an mmap finds the ones it replaces in
    /// logarithmic time however many the process ever had.
    open: HashMap<usize, BTreeMap<(u64, usize), ()>>,
    /// Every file name seen, stored once.
    names: HashSet<Arc<str>>,
}

impl Replayer {
    fn new_process(&mut self, pid: u32, start: Option<u64>) -> usize {
        let generation = self.out.by_pid(pid).count() as u32;
        self.out.processes.push(Process {
            key: ProcessKey { pid, generation },
            parent: None,
            start,
            exit: None,
            comms: Vec::new(),
            renames: Vec::new(),
            renames_dropped: 0,
            execs: Vec::new(),
            mappings: Vec::new(),
            mappings_dropped: 0,
            mapping_changes: 0,
            threads: Vec::new(),
            samples: Vec::new(),
        });
        let i = self.out.processes.len() - 1;
        self.live.insert(pid, i);
        i
    }

    /// The current generation of `pid`; a pid whose process exited starts a new one.
    fn current(&mut self, pid: u32) -> usize {
        match self.live.get(&pid) {
            Some(&i) if self.out.processes[i].exit.is_none() => i,
            _ => self.new_process(pid, None),
        }
    }

    /// The index of the latest process with this pid (live or exited).
    pub(crate) fn latest(&self, pid: u32) -> Option<usize> {
        self.live.get(&pid).copied()
    }

    /// The processes so far, in order of first appearance.
    pub(crate) fn processes(&self) -> &[Process] {
        &self.out.processes
    }

    /// The index of the process a record of `pid` at `time` (a sample, a counted event)
    /// belongs to. The kernel writes a process's EXIT record in the middle of its exit, so
    /// samples of the rest (tearing down its memory, say) come after it: they still belong to
    /// the process that exited, not to a new one. A reused pid gets a FORK record first, and a
    /// new generation then.
    pub(crate) fn owner(&mut self, pid: u32, time: u64) -> usize {
        match self.live.get(&pid) {
            Some(&i)
                if self.out.processes[i]
                    .exit
                    .is_some_and(|e| time <= e.saturating_add(EXIT_TAIL_NS)) =>
            {
                i
            }
            _ => self.current(pid),
        }
    }

    /// Counts a sample of thread `tid` of `pid` at `time`; returns its process's index.
    pub(crate) fn sample(&mut self, pid: u32, tid: u32, time: u64) -> usize {
        let p = self.owner(pid, time);
        self.out.processes[p].thread(tid).samples += 1;
        p
    }

    /// Applies one side-band record of time `time`.
    pub(crate) fn side_band(&mut self, time: u64, kind: &SideBand) {
        match kind {
            SideBand::Fork {
                pid,
                ppid,
                tid,
                ptid: _,
            } => {
                if pid == ppid {
                    let p = self.current(*pid);
                    let t = self.out.processes[p].thread(*tid);
                    t.start = Some(time);
                    t.exit = None;
                } else {
                    let parent = self.current(*ppid);
                    let child = self.new_process(*pid, Some(time));
                    let (pkey, comms, maps) = {
                        let pp = &self.out.processes[parent];
                        let maps: Vec<Mapping> = pp
                            .mappings
                            .iter()
                            .filter(|m| m.to.is_none())
                            .map(|m| Mapping {
                                from: time,
                                ..m.clone()
                            })
                            .collect();
                        (pp.key, pp.comm().to_owned(), maps)
                    };
                    let open = maps
                        .iter()
                        .enumerate()
                        .map(|(k, m)| ((m.start, k), ()))
                        .collect();
                    self.open.insert(child, open);
                    let c = &mut self.out.processes[child];
                    c.parent = Some(pkey);
                    c.comms.push((time, comms, false));
                    c.mappings = maps;
                    c.mapping_changes += 1;
                    c.thread(*tid).start = Some(time);
                }
            }
            SideBand::Comm {
                pid,
                tid,
                comm,
                exec,
            } => {
                let p = self.current(*pid);
                if *exec {
                    self.close_all(p, time);
                }
                let pr = &mut self.out.processes[p];
                if *exec {
                    pr.execs.push(time);
                } else if time != 0 {
                    // Not an exec, nor a name read from /proc when attaching: a rename.
                    if pr.renames.len() < MAX_RENAMES {
                        pr.renames.push((time, *tid, comm.clone()));
                    } else {
                        pr.renames_dropped += 1;
                    }
                }
                let after_rename = pr.comms.len() > 1 && pr.comms.last().is_some_and(|c| !c.2);
                match pr.comms.last_mut() {
                    // A rename after a rename: only the latest is needed here.
                    Some(last) if !*exec && after_rename => *last = (time, comm.clone(), false),
                    _ => pr.comms.push((time, comm.clone(), *exec)),
                }
                pr.thread(*tid).comm = comm.clone();
            }
            SideBand::Mmap {
                pid,
                addr,
                len,
                pgoff,
                build_id,
                filename,
                ..
            } => {
                let p = self.current(*pid);
                let end = addr.saturating_add(*len);
                self.map(p, time, *addr, end, *pgoff, filename, build_id);
            }
            SideBand::Exit { pid, tid, .. } => {
                let p = self.current(*pid);
                let pr = &mut self.out.processes[p];
                pr.thread(*tid).exit = Some(time);
                if pid == tid {
                    pr.exit = Some(time);
                    self.close_all(p, time);
                }
            }
            SideBand::Lost { .. } | SideBand::Throttle { .. } | SideBand::Switch { .. } => {}
        }
    }

    /// Applies an mmap of `[start, end)` at `pgoff` of `filename` to process `p`: the
    /// mappings it overlaps end at `time`, and it is added, unless it repeats the one mapping
    /// it overlaps (the kernel reports no munmap, so a file mapped, unmapped and mapped again
    /// at the same place is one mapping here), or the process has [`MAX_MAPPINGS`] already.
    #[allow(clippy::too_many_arguments)]
    fn map(
        &mut self,
        p: usize,
        time: u64,
        start: u64,
        end: u64,
        pgoff: u64,
        filename: &str,
        build_id: &Option<Vec<u8>>,
    ) {
        let open = self.open.entry(p).or_default();
        let pr = &mut self.out.processes[p];
        let overlapped: Vec<(u64, usize)> = open
            .range(..(end, 0))
            .rev()
            .map(|(&key, _)| key)
            .take_while(|&(_, k)| pr.mappings[k].end > start)
            .collect();
        if let [(_, k)] = overlapped[..] {
            let m = &pr.mappings[k];
            if m.start == start
                && m.end == end
                && m.pgoff == pgoff
                && *m.filename == *filename
                && m.build_id == *build_id
            {
                return;
            }
        }
        for key in overlapped {
            open.remove(&key);
            pr.mappings[key.1].to = Some(time);
            pr.mapping_changes += 1;
        }
        if pr.mappings.len() >= MAX_MAPPINGS {
            pr.mappings_dropped += 1;
            return;
        }
        let filename = match self.names.get(filename) {
            Some(name) => name.clone(),
            None => {
                let name: Arc<str> = filename.into();
                self.names.insert(name.clone());
                name
            }
        };
        open.insert((start, pr.mappings.len()), ());
        pr.mapping_changes += 1;
        pr.mappings.push(Mapping {
            start,
            end,
            pgoff,
            filename,
            build_id: build_id.clone(),
            from: time,
            to: None,
        });
    }

    /// Ends every mapping of process `p` still open at `time` (an exec, the exit).
    fn close_all(&mut self, p: usize, time: u64) {
        let pr = &mut self.out.processes[p];
        for ((_, k), ()) in self.open.remove(&p).unwrap_or_default() {
            pr.mappings[k].to = Some(time);
            pr.mapping_changes += 1;
        }
    }

    /// The processes rebuilt.
    pub(crate) fn finish(self) -> Replay {
        self.out
    }
}

/// Replays the recording in time order (records from different CPUs are merged by timestamp).
///
/// Rules: FORK of a new process copies the parent's current mappings; FORK of a thread adds a
/// thread; COMM with exec clears the mappings; MMAP replaces overlapping mappings; EXIT of the
/// main thread ends the process. A FORK or record for a pid whose process already exited (or a
/// FORK for a pid still considered live) starts a new generation, except samples just after
/// an EXIT record, which are the end of that exit.
pub fn replay(rec: &Recording) -> Replay {
    let mut r = Replayer::default();
    for (time, event) in rec.in_order() {
        match event {
            Event::Side(i) => r.side_band(time, &rec.side_band[i].kind),
            Event::Sample(i) => {
                let s = &rec.samples[i];
                let p = r.sample(s.pid, s.tid, time);
                r.out.processes[p].samples.push(i);
            }
            Event::Counter(_) | Event::Trace(_) => {}
        }
    }
    r.finish()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::recording::SideRecord;

    /// A side-band record at `time` (the unwinder's tests build recordings with these too).
    pub(crate) fn side(time: u64, kind: SideBand) -> SideRecord {
        SideRecord { time, cpu: 0, kind }
    }

    fn mmap(pid: u32, addr: u64, name: &str) -> SideBand {
        mmap_len(pid, addr, 0x1000, name)
    }

    pub(crate) fn mmap_len(pid: u32, addr: u64, len: u64, name: &str) -> SideBand {
        SideBand::Mmap {
            pid,
            tid: pid,
            addr,
            len,
            pgoff: 0,
            build_id: None,
            prot: 5,
            flags: 2,
            filename: name.into(),
        }
    }

    fn fork(pid: u32, ppid: u32) -> SideBand {
        SideBand::Fork {
            pid,
            ppid,
            tid: pid,
            ptid: ppid,
        }
    }

    fn exit(pid: u32, tid: u32) -> SideBand {
        SideBand::Exit {
            pid,
            ppid: 1,
            tid,
            ptid: 1,
        }
    }

    #[test]
    fn fork_copies_maps_exec_clears_and_pid_reuse_starts_a_generation() {
        // Deliberately out of order, as from two CPU buffers.
        let mut rec = Recording {
            side_band: vec![
                side(50, exit(11, 11)),
                side(10, mmap(10, 0x1000, "/bin/parent")),
                side(20, fork(11, 10)),
                side(
                    30,
                    SideBand::Comm {
                        pid: 11,
                        tid: 11,
                        comm: "child".into(),
                        exec: true,
                    },
                ),
                side(31, mmap(11, 0x5000, "/bin/child")),
                side(60, fork(11, 10)),
                side(25, fork(10, 10)),
            ],
            ..Recording::default()
        };
        rec.push_sample(22, 11, 11, 0, 1, 0x1010, true, None, &[], &[0x1010], &[]);
        rec.push_sample(40, 11, 11, 0, 1, 0x5010, true, None, &[], &[0x5010], &[]);
        rec.push_sample(70, 11, 11, 0, 1, 0x1010, true, None, &[], &[0x1010], &[]);
        let r = replay(&rec);
        let gens: Vec<&Process> = r.by_pid(11).collect();
        assert_eq!(gens.len(), 2);
        let (g0, g1) = (gens[0], gens[1]);
        assert_eq!(g0.key.generation, 0);
        assert_eq!(g0.parent.map(|k| k.pid), Some(10));
        assert_eq!(g0.samples, vec![0, 1]);
        assert_eq!(g0.execs, vec![30]);
        assert_eq!(g0.comm(), "child");
        assert_eq!(g0.exit, Some(50));
        assert_eq!(
            g0.mapping_at(0x1010, 22).map(|m| &*m.filename),
            Some("/bin/parent")
        );
        assert!(g0.mapping_at(0x1010, 40).is_none());
        assert_eq!(
            g0.mapping_at(0x5010, 40).map(|m| &*m.filename),
            Some("/bin/child")
        );
        assert_eq!(g1.key.generation, 1);
        assert_eq!(g1.samples, vec![2]);
        assert_eq!(g1.exit, None);
        assert_eq!(
            g1.mapping_at(0x1010, 70).map(|m| &*m.filename),
            Some("/bin/parent")
        );
        let parent = r.by_pid(10).next().expect("parent");
        assert_eq!(parent.threads.len(), 1);
        assert_eq!(parent.threads[0].start, Some(25));
    }

    #[test]
    fn samples_of_the_rest_of_an_exit_belong_to_the_exited_process() {
        let mut rec = Recording {
            side_band: vec![side(10, fork(11, 10)), side(1_000, exit(11, 11))],
            ..Recording::default()
        };
        rec.push_sample(500, 11, 11, 1, 1, 0x1010, true, None, &[], &[0x1010], &[]);
        // Tearing down its memory after the EXIT record was written.
        rec.push_sample(
            1_200,
            11,
            11,
            1,
            1,
            0xffff_8000_0000_0000,
            false,
            None,
            &[],
            &[],
            &[],
        );
        let r = replay(&rec);
        let gens: Vec<&Process> = r.by_pid(11).collect();
        assert_eq!(gens.len(), 1, "{gens:?}");
        assert_eq!(gens[0].samples, vec![0, 1]);
        // Long after the exit, a sample without a FORK is another process.
        rec.push_sample(
            EXIT_TAIL_NS + 2_000,
            11,
            11,
            1,
            1,
            0x1010,
            true,
            None,
            &[],
            &[0x1010],
            &[],
        );
        assert_eq!(replay(&rec).by_pid(11).count(), 2);
    }

    #[test]
    fn thread_exit_does_not_end_the_process() {
        let mut rec = Recording {
            side_band: vec![
                side(
                    1,
                    SideBand::Fork {
                        pid: 5,
                        ppid: 5,
                        tid: 6,
                        ptid: 5,
                    },
                ),
                side(2, exit(5, 6)),
            ],
            ..Recording::default()
        };
        rec.push_sample(3, 5, 5, 0, 1, 1, true, None, &[], &[], &[]);
        let r = replay(&rec);
        assert_eq!(r.processes.len(), 1);
        let p = &r.processes[0];
        assert_eq!(p.exit, None);
        assert_eq!(
            p.threads.iter().find(|t| t.tid == 6).and_then(|t| t.exit),
            Some(2)
        );
        assert_eq!(p.samples, vec![0]);
    }

    /// What an mmap replaces: the mappings it overlaps, and only those, end at its time; the
    /// index of open mappings gives the same answer the scan of every mapping gave.
    #[test]
    fn an_mmap_ends_exactly_the_mappings_it_overlaps() {
        let mut r = Replayer::default();
        for (t, addr, len, name) in [
            (1, 0x1000, 0x1000, "/a"),
            (2, 0x2000, 0x2000, "/b"),
            (3, 0x5000, 0x1000, "/c"),
            (4, 0x7000, 0x1000, "/d"),
            // Over the end of /b and the start of /c, between them too.
            (5, 0x3000, 0x2800, "/e"),
        ] {
            r.side_band(t, &mmap_len(7, addr, len, name));
        }
        let p = &r.processes()[0];
        let ends: Vec<(&str, Option<u64>)> =
            p.mappings.iter().map(|m| (&*m.filename, m.to)).collect();
        assert_eq!(
            ends,
            [
                ("/a", None),
                ("/b", Some(5)),
                ("/c", Some(5)),
                ("/d", None),
                ("/e", None)
            ]
        );
        r.side_band(6, &exit(7, 7));
        assert!(r.processes()[0].mappings.iter().all(|m| m.to.is_some()));
    }

    /// The kernel reports no munmap: a file mapped, unmapped and mapped again at the same
    /// place, a million times, is one mapping (it was a million, each mmap scanning them all:
    /// a loop of 300,000 made root pkgmon lose 99% of its samples and write a 47 MB info file);
    /// mappings at ever new places stop at MAX_MAPPINGS, the rest counted.
    #[test]
    fn a_mapping_repeated_in_place_is_one_and_new_places_are_bounded() {
        let mut r = Replayer::default();
        for t in 1..=1_000_000 {
            r.side_band(t, &mmap(8, 0x10_000, "/lib/libc.so.6"));
        }
        let p = &r.processes()[0];
        assert_eq!(p.mappings.len(), 1);
        assert_eq!((p.mappings[0].from, p.mappings[0].to), (1, None));
        // Another file in its place ends it; the first back again is a new mapping.
        r.side_band(2_000_000, &mmap(8, 0x10_000, "/lib/other.so"));
        r.side_band(2_000_001, &mmap(8, 0x10_000, "/lib/libc.so.6"));
        let p = &r.processes()[0];
        assert_eq!(p.mappings.len(), 3);
        assert_eq!(p.mappings[0].to, Some(2_000_000));
        assert_eq!(p.mappings[1].to, Some(2_000_001));
        // Every mapping shares its name's one copy.
        assert!(Arc::ptr_eq(
            &p.mappings[0].filename,
            &p.mappings[2].filename
        ));
        let extra = 10;
        for k in 0..(MAX_MAPPINGS as u64 + extra) {
            r.side_band(3_000_000 + k, &mmap(9, 0x100_000 + k * 0x1000, "/x"));
        }
        let q = &r.processes()[1];
        assert_eq!(q.mappings.len(), MAX_MAPPINGS);
        assert_eq!(q.mappings_dropped, extra);
        assert!(q.mappings.iter().all(|m| m.to.is_none()));
    }
}
