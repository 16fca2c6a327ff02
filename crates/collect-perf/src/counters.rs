//! A process's counters in the measurement: the taskstats exit records of its tasks summed and
//! matched to the exits the run saw, `/proc` readings as lower bounds, exact CPU times, and
//! whether its samples account for its CPU time. Portable: everything comes from the
//! [`Recording`] and the [`Aggregate`].

use std::collections::{BTreeSet, HashMap};

use gmon_format::{Comm, CounterSource, ProcessCounters};

use crate::aggregate::Aggregate;
use crate::recording::{ProcCounters, Recording};
use crate::replay::{Process, ProcessKey, Replay};

fn proc_counters(c: &ProcCounters, tick_ns: u64) -> ProcessCounters {
    let mut out = ProcessCounters::default();
    out.user_cpu_ns = Some(c.utime_ticks * tick_ns);
    out.system_cpu_ns = Some(c.stime_ticks * tick_ns);
    out.minor_faults = Some(c.minflt);
    out.major_faults = Some(c.majflt);
    out.voluntary_switches = c.voluntary_ctxt_switches;
    out.involuntary_switches = c.nonvoluntary_ctxt_switches;
    out.read_bytes = c.rchar;
    out.written_bytes = c.wchar;
    out
}

/// Applies `f` to each counter of `a` with the same counter of `b`.
fn each_counter(
    a: &mut ProcessCounters,
    b: &ProcessCounters,
    f: impl Fn(&mut Option<u64>, Option<u64>),
) {
    f(&mut a.user_cpu_ns, b.user_cpu_ns);
    f(&mut a.system_cpu_ns, b.system_cpu_ns);
    f(&mut a.minor_faults, b.minor_faults);
    f(&mut a.major_faults, b.major_faults);
    f(&mut a.voluntary_switches, b.voluntary_switches);
    f(&mut a.involuntary_switches, b.involuntary_switches);
    f(&mut a.read_bytes, b.read_bytes);
    f(&mut a.written_bytes, b.written_bytes);
}

/// Keeps in `a` the larger of each counter of `a` and `b`.
fn max_counters(a: &mut ProcessCounters, b: &ProcessCounters) {
    each_counter(a, b, |x, y| {
        if let Some(y) = y {
            *x = Some(x.map_or(y, |x| x.max(y)));
        }
    });
}

fn add_counters(a: &mut ProcessCounters, b: &ProcessCounters) {
    each_counter(a, b, |x, y| {
        if let Some(y) = y {
            *x = Some(x.unwrap_or(0) + y);
        }
    });
}

/// Sums the taskstats exit records of each process's tasks, and says whether every thread
/// exit the run saw of that process had its record.
///
/// Each record is matched to a thread exit the recording saw: of a process with the record's
/// thread group id (before taskstats version 12, which lacks it, any process that had the
/// record's thread), a thread with the record's thread id that exited before the record came,
/// the earliest not matched yet. A record without such an exit (the EXIT record was lost) goes
/// to a process of that id still alive at the time, if any. Other records, of tasks the run
/// did not follow (a pid reused by an unrelated process), are left out.
///
/// "Before" allows 50 ms: the kernel sends the taskstats record a little before it
/// writes the perf EXIT record (and stamps its time), so a record drained at once can carry
/// an earlier time than its exit.
///
/// Each task's CPU time is its exact runtime split by its tick-sampled user and system times
/// ([`exact_cpu`]) when the record has the runtime.
pub(crate) fn taskstats_counters(rec: &Recording, replay: &Replay) -> HashMap<ProcessKey, Exited> {
    /// How much later than its taskstats record a thread's perf EXIT may be stamped.
    const EXIT_SLACK_NS: u64 = 50_000_000;
    let mut by_pid: HashMap<u32, Vec<&Process>> = HashMap::new();
    let mut by_tid: HashMap<u32, Vec<&Process>> = HashMap::new();
    for p in &replay.processes {
        by_pid.entry(p.key.pid).or_default().push(p);
        for t in &p.threads {
            by_tid.entry(t.tid).or_default().push(p);
        }
    }
    let mut order: Vec<usize> = (0..rec.task_exits.len()).collect();
    order.sort_by_key(|&i| rec.task_exits[i].time);
    let mut matched: BTreeSet<(ProcessKey, u32)> = BTreeSet::new();
    let mut out: HashMap<ProcessKey, (ProcessCounters, bool)> = HashMap::new();
    for i in order {
        let e = &rec.task_exits[i];
        let candidates = match e.tgid {
            Some(tgid) => by_pid.get(&tgid),
            None => by_tid.get(&e.tid),
        };
        let candidates = candidates.map_or(&[][..], Vec::as_slice);
        let exited = candidates
            .iter()
            .filter(|p| !matched.contains(&(p.key, e.tid)))
            .filter_map(|p| {
                let t = p.threads.iter().find(|t| t.tid == e.tid)?;
                let x = t
                    .exit
                    .filter(|&x| x <= e.time.saturating_add(EXIT_SLACK_NS))?;
                Some((x, *p))
            })
            .min_by_key(|&(x, p)| (x, p.key.generation))
            .map(|(_, p)| p);
        if let Some(p) = exited {
            matched.insert((p.key, e.tid));
        }
        let owner = exited.or_else(|| {
            candidates
                .iter()
                .filter(|p| {
                    p.exit.is_none() && p.start.unwrap_or(0) <= e.time.saturating_add(EXIT_SLACK_NS)
                })
                .max_by_key(|p| (p.start.unwrap_or(0), p.key.generation))
                .copied()
        });
        let Some(p) = owner else { continue };
        let mut c = ProcessCounters::default();
        let (user, system) = e.runtime_ns.map_or((e.user_cpu_ns, e.system_cpu_ns), |ns| {
            exact_cpu(e.user_cpu_ns, e.system_cpu_ns, ns)
        });
        c.user_cpu_ns = Some(user);
        c.system_cpu_ns = Some(system);
        c.minor_faults = Some(e.minor_faults);
        c.major_faults = Some(e.major_faults);
        c.voluntary_switches = Some(e.voluntary_switches);
        c.involuntary_switches = Some(e.involuntary_switches);
        c.read_bytes = Some(e.read_bytes);
        c.written_bytes = Some(e.written_bytes);
        match out.get_mut(&p.key) {
            Some((acc, exact)) => {
                add_counters(acc, &c);
                *exact &= e.runtime_ns.is_some();
            }
            None => {
                out.insert(p.key, (c, e.runtime_ns.is_some()));
            }
        }
    }
    // Complete: every thread exit the run saw has its record (none was lost to an overflow).
    replay
        .processes
        .iter()
        .filter_map(|p| {
            let (counters, exact_cpu) = out.remove(&p.key)?;
            let complete = p
                .threads
                .iter()
                .filter(|t| t.exit.is_some())
                .all(|t| matched.contains(&(p.key, t.tid)));
            Some((
                p.key,
                Exited {
                    counters,
                    complete,
                    exact_cpu,
                },
            ))
        })
        .collect()
}

/// The taskstats exit records of one process, summed.
pub(crate) struct Exited {
    counters: ProcessCounters,
    /// Every thread exit the run saw of the process had its record.
    complete: bool,
    /// Every record had the task's exact runtime, so the CPU times sum to it.
    exact_cpu: bool,
}

/// User and system time that sum to a task's exact `runtime`, split in the ratio of its
/// tick-sampled `user` and `system` times, as the kernel scales them for `/proc` (all user
/// time when the ticks saw no system time, all system time when they saw no user time). The
/// ticks (every 4 ms at 250 Hz) give a task that ran 2 ms 0 or 4 ms of CPU time; its runtime
/// is exact.
fn exact_cpu(user: u64, system: u64, runtime: u64) -> (u64, u64) {
    let system = match (user, system) {
        (_, 0) => 0,
        (0, _) => runtime,
        (u, s) => (u128::from(s) * u128::from(runtime) / (u128::from(u) + u128::from(s))) as u64,
    };
    (runtime - system, system)
}

/// The counters of process `p` and where they come from.
///
/// A process that ended, whose tasks' taskstats exit records all came (root), has their sum,
/// over its whole life; a `/proc` reading taken while it lived (for the launched command, the
/// one taken while it was a zombie) is a lower bound of every counter, so it wins where a
/// record fell short. The CPU times are the exception when every record had the exact runtime
/// ([`exact_cpu`]): those stand, as `/proc`'s are whole clock ticks of the same. Without
/// the records, the counters are the launched command's zombie reading or the last periodic
/// `/proc` reading of the process.
pub(crate) fn process_counters(
    rec: &Recording,
    exits: &HashMap<ProcessKey, Exited>,
    p: &Process,
    reading: Option<&crate::recording::ProcReading>,
    tick_ns: u64,
) -> (Option<ProcessCounters>, Option<CounterSource>) {
    let from_child = rec
        .child
        .as_ref()
        .filter(|c| c.pid == p.key.pid && p.key.generation == 0)
        .and_then(|c| c.counters.as_ref());
    let lower = from_child.or(reading.map(|r| &r.counters));
    let exited = exits
        .get(&p.key)
        .filter(|e| e.complete)
        .filter(|_| p.exit.is_some() || from_child.is_some() || reading.is_none());
    match (exited, lower) {
        (Some(e), lower) => {
            let mut c = e.counters.clone();
            if let Some(l) = lower {
                let mut l = proc_counters(l, tick_ns);
                // Exact CPU times stand; /proc's are whole clock ticks (10 ms).
                if e.exact_cpu {
                    (l.user_cpu_ns, l.system_cpu_ns) = (None, None);
                }
                max_counters(&mut c, &l);
            }
            (Some(c), Some(CounterSource::Taskstats))
        }
        (None, Some(l)) => (Some(proc_counters(l, tick_ns)), Some(CounterSource::Proc)),
        (None, None) => (None, None),
    }
}

/// Whether a process's samples account for its CPU time.
pub(crate) enum UnderSampled {
    /// They do, or it cannot be told (an attached process, no counters).
    No,
    /// They do not: the warning says why.
    Warning(String),
    /// It ran too briefly to be judged alone (fewer than 20 sample periods); its CPU time.
    Short { cpu_ns: u64 },
}

/// Whether process `p` used far more CPU time than its samples show, and why.
///
/// The kernel stops profiling a process that execs a set-uid or set-gid program (it is no
/// longer dumpable): nothing of the new image is recorded, not even its mappings, which is how
/// such an exec is told from other causes. Otherwise the time went to tasks (threads, or the
/// process itself) that each ran less than a sample period: an inherited event takes its first
/// sample of a task only after a whole period of that task's CPU time. Only processes born
/// during the run are checked: an attached one's counters cover its whole life.
pub(crate) fn under_sampled(
    rec: &Recording,
    agg: &Aggregate,
    p: &Process,
    since: u64,
    counters: Option<&ProcessCounters>,
    samples: u64,
    comm: &Comm,
) -> UnderSampled {
    let launched = p.key.generation == 0 && agg.launched == Some(p.key.pid);
    let born_here = launched || p.start.is_some();
    let Some(c) = counters.filter(|_| born_here && rec.frequency > 0) else {
        return UnderSampled::No;
    };
    let cpu_ns = c.user_cpu_ns.unwrap_or(0) + c.system_cpu_ns.unwrap_or(0);
    let period_ns = (1_000_000_000 / rec.frequency).max(1);
    let expected = cpu_ns / period_ns;
    if expected < 20 {
        return UnderSampled::Short { cpu_ns };
    }
    if samples * 10 >= expected {
        return UnderSampled::No;
    }
    let pid = gmon_format::process_label(
        p.key.pid,
        agg.replay
            .processes
            .iter()
            .filter(|q| q.key.pid == p.key.pid && q.key.generation < p.key.generation)
            .count() as u32,
    );
    let ms = cpu_ns / 1_000_000;
    let head =
        format!("process {pid} ({comm}) used {ms} ms of CPU time but has only {samples} samples");
    let period = format!("{} us at {} Hz", period_ns / 1000, rec.frequency);
    // An exec after which the kernel reported nothing of the new image.
    let blind_exec = p
        .execs
        .last()
        .is_some_and(|&e| e >= since && !p.mappings.iter().any(|m| m.from >= e));
    let children = agg
        .replay
        .processes
        .iter()
        .filter(|q| q.parent == Some(p.key))
        .count();
    let threads = p.threads.iter().filter(|t| t.tid != p.key.pid).count();
    let lost = rec.lost_samples();
    UnderSampled::Warning(if blind_exec {
        format!(
            "{head}: it exec'd a set-uid or set-gid program, and the kernel stops profiling such \
             a program (nothing of its image was recorded)"
        )
    } else if children >= 10 {
        format!(
            "{head}: it forked {children} processes, and the kernel hardly samples a process \
             while it forks that often, nor any task before it has run a whole sample period \
             ({period}); a higher -F shows more"
        )
    } else if threads >= 10 {
        format!(
            "{head}: its time went to {threads} threads that each ran less than a sample period \
             ({period}), and the kernel samples a task only after a whole period of its CPU \
             time; a higher -F shows more of them"
        )
    } else if lost > 0 {
        format!("{head}: {lost} samples of the run were lost (its ring buffers overflowed)")
    } else {
        format!(
            "{head}: the kernel sampled it less often than its CPU time implies (it samples a \
             task only after a whole period of its CPU time, {period})"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_proc_reading_raises_short_taskstats_counters() {
        let mut a = ProcessCounters::default();
        a.user_cpu_ns = Some(8_000_000);
        a.minor_faults = Some(90);
        let mut b = ProcessCounters::default();
        b.user_cpu_ns = Some(290_000_000);
        b.minor_faults = Some(80);
        b.read_bytes = Some(5);
        max_counters(&mut a, &b);
        assert_eq!(
            (a.user_cpu_ns, a.minor_faults, a.read_bytes, a.system_cpu_ns),
            (Some(290_000_000), Some(90), Some(5), None)
        );
    }

    #[test]
    fn taskstats_cpu_times_sum_to_the_exact_runtime() {
        // 2 ms that no tick saw: all user time, as /proc says.
        assert_eq!(exact_cpu(0, 0, 2_000_000), (2_000_000, 0));
        assert_eq!(exact_cpu(0, 4_000_000, 2_000_000), (0, 2_000_000));
        assert_eq!(
            exact_cpu(4_000_000, 12_000_000, 10_000_000),
            (2_500_000, 7_500_000)
        );
        assert_eq!(
            exact_cpu(u64::MAX / 2, u64::MAX / 2, u64::MAX),
            (u64::MAX - u64::MAX / 2, u64::MAX / 2)
        );
    }

    #[test]
    fn taskstats_records_go_to_the_process_whose_thread_exited() {
        use crate::recording::{SideBand, SideRecord, TaskExit};
        let side = |time, kind| SideRecord { time, cpu: 0, kind };
        // A new process has its parent's pid as ppid; a new thread its own process's.
        let fork = |pid, tid| SideBand::Fork {
            pid,
            ppid: if pid == tid { 10 } else { pid },
            tid,
            ptid: if pid == tid { 10 } else { pid },
        };
        let exit = |pid, tid| SideBand::Exit {
            pid,
            ppid: 10,
            tid,
            ptid: 10,
        };
        // Pid 11 runs a thread 12 and exits at 5; the pid is reused at 6, before the records
        // of the first process's tasks arrive at 8, and again at 30.
        let side_band = vec![
            side(1, fork(11, 11)),
            side(2, fork(11, 12)),
            side(4, exit(11, 12)),
            side(5, exit(11, 11)),
            side(6, fork(11, 11)),
            side(25, exit(11, 11)),
            side(30, fork(11, 11)),
        ];
        let task = |tid, tgid, user_cpu_ns, time| TaskExit {
            time,
            tid,
            tgid,
            user_cpu_ns,
            voluntary_switches: 1,
            ..TaskExit::default()
        };
        let task_exits = vec![
            // The third process's exit, whose EXIT record the run did not see: it was alive.
            task(11, Some(11), 700_000, 40),
            task(12, Some(11), 3_000, 8),
            // A version-11 record without a tgid, found by its thread id.
            task(11, None, 4_000, 8),
            // The second process's, drained just before its EXIT was stamped.
            task(11, Some(11), 50_000, 24),
        ];
        let mut rec = Recording {
            side_band,
            task_exits,
            ..Recording::default()
        };
        let rep = crate::replay(&rec);
        let c = taskstats_counters(&rec, &rep);
        let key = |generation| ProcessKey {
            pid: 11,
            generation,
        };
        assert_eq!(c[&key(0)].counters.user_cpu_ns, Some(7_000));
        assert_eq!(c[&key(0)].counters.voluntary_switches, Some(2));
        assert_eq!(c[&key(1)].counters.user_cpu_ns, Some(50_000));
        assert_eq!(c[&key(2)].counters.user_cpu_ns, Some(700_000));
        assert_eq!(c.len(), 3);
        assert!(c.values().all(|c| c.complete), "complete");
        // Without the record of thread 12 (lost to an overflow), the first process's sum is
        // incomplete.
        let mut lossy = rec.clone();
        lossy.task_exits.retain(|e| e.tid != 12);
        let c = taskstats_counters(&lossy, &crate::replay(&lossy));
        assert!(!c[&key(0)].complete && c[&key(1)].complete);
        // When the run saw the third process exit (at 45, its record at 46), a later record
        // (a process the run did not follow, reusing pid 11) is left out.
        rec.side_band.push(side(45, exit(11, 11)));
        rec.task_exits[0].time = 46;
        rec.task_exits.push(task(11, Some(11), 9, 60));
        let rep = crate::replay(&rec);
        let c = taskstats_counters(&rec, &rep);
        assert_eq!(c[&key(2)].counters.user_cpu_ns, Some(700_000));
        assert_eq!(
            c.values()
                .filter_map(|c| c.counters.user_cpu_ns)
                .sum::<u64>(),
            757_000
        );
    }
}
