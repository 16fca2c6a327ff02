//! End-to-end tests: C workloads compiled with `cc`, sampled with perf_event_open.
//!
//! These need perf_event_open with kernel sampling (root here). If it is refused the tests
//! fail with the reason; they never skip.

#![cfg(target_os = "linux")]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use collect_perf::{Config, CopyEnd, Error, Recording, Sampler, StackCopier, StackEnd, replay};

mod common;

use common::*;

fn samples_by_pid(r: &Recording) -> BTreeMap<u32, usize> {
    let mut m = BTreeMap::new();
    for s in &r.samples {
        *m.entry(s.pid).or_default() += 1;
    }
    m
}

#[test]
fn cpu_loop_samples_at_the_requested_rate_without_loss() {
    let _serial = serial();
    let c = config();
    let started = Instant::now();
    let r = record(&args(&[&workload("cpu"), &"500"]), &c);
    let wall = started.elapsed();
    let child = r.child.as_ref().expect("child exit");
    assert_eq!(child.code, Some(0));
    let n = r.samples.iter().filter(|s| s.pid == child.pid).count();
    eprintln!(
        "cpu loop: {} samples in {wall:?}, lost {}, throttled {}",
        r.samples.len(),
        r.lost,
        r.throttled
    );
    // The workload burns 500 ms of its own CPU time; the kernel's accounting must agree.
    let counters = child
        .counters
        .as_ref()
        .expect("counters read from the zombie");
    let hz = 100.0; // USER_HZ, fixed at 100 on Linux
    let cpu_ms = (counters.utime_ticks + counters.stime_ticks) as f64 * 1000.0 / hz;
    assert!(
        (400..=600).contains(&n)
            && (n as f64) >= cpu_ms * 0.85
            && (n as f64) <= cpu_ms * 1.15 + 20.0,
        "{n} samples at 1 kHz for {cpu_ms} ms of cpu time"
    );
    assert_eq!(r.lost_samples(), 0, "lost samples at 1 kHz");
    assert!(
        r.samples
            .iter()
            .all(|s| s.pid == child.pid && s.tid == child.pid)
    );
    assert!(r.samples.iter().all(|s| s.period == 1_000_000));
    let user = r.samples.iter().filter(|s| s.user_mode).count();
    assert!(
        user * 10 >= n * 8,
        "cpu loop mostly in user mode: {user}/{n}"
    );
    let with_stack = r
        .samples
        .iter()
        .filter(|s| s.user_mode && s.regs.is_some() && !r.user_stack(s).is_empty())
        .count();
    assert!(
        with_stack * 10 >= user * 9,
        "user regs and stack copies present"
    );
    for s in r.samples.iter().filter(|s| s.user_mode).take(20) {
        let regs = s.regs.expect("regs");
        assert_eq!(regs.ip, s.ip);
        assert_eq!(r.user_chain(s).first(), Some(&s.ip));
    }
    let counters = child
        .counters
        .as_ref()
        .expect("counters read from the zombie");
    assert!(counters.voluntary_ctxt_switches.is_some());
    let rep = replay(&r);
    let p = rep.by_pid(child.pid).next().expect("process");
    assert_eq!(p.comm(), "cpu");
    assert!(p.exit.is_some());
    let exe = workload("cpu");
    let exe = exe.to_str().expect("utf-8 path");
    let mapped = r
        .samples
        .iter()
        .filter(|s| s.user_mode)
        .filter(|s| {
            p.mapping_at(s.ip, s.time)
                .is_some_and(|m| &*m.filename == exe)
        })
        .count();
    assert!(
        mapped * 10 >= user * 8,
        "user samples map to the executable"
    );
}

#[test]
fn syscall_loop_kernel_chains_show_the_read_path() {
    let _serial = serial();
    let c = config();
    let r = record(&args(&[&workload("syscall"), &"400"]), &c);
    let k = Kallsyms::load();
    let kernel: Vec<_> = r.samples.iter().filter(|s| !s.user_mode).collect();
    assert!(
        kernel.len() * 2 >= r.samples.len(),
        "{} of {} samples in the kernel",
        kernel.len(),
        r.samples.len()
    );
    let read_path = kernel
        .iter()
        .filter(|s| {
            r.kernel_chain(s)
                .iter()
                .any(|&a| matches!(k.name(a), Some("ksys_read" | "vfs_read")))
        })
        .count();
    assert!(
        read_path >= 20,
        "only {read_path} kernel samples in the read path"
    );
    for s in &kernel {
        assert_eq!(r.kernel_chain(s).first(), Some(&s.ip));
        let user = r.user_chain(s);
        assert!(!user.is_empty(), "syscall samples have user frames");
        // The user registers of a kernel sample are those at kernel entry: the leaf fix unwinds
        // the frameless syscall wrapper from them and the stack copy.
        let regs = s.regs.expect("user regs at kernel entry");
        assert_eq!(regs.ip, user[0]);
        assert!(!r.user_stack(s).is_empty());
    }
    let counters = r
        .child
        .as_ref()
        .and_then(|c| c.counters.clone())
        .expect("counters");
    assert!(counters.rchar.unwrap_or(0) > 100 << 20, "{counters:?}");
    assert!(counters.wchar.unwrap_or(0) > 100 << 20, "{counters:?}");
}

#[test]
fn forked_children_are_followed_and_replayed() {
    let _serial = serial();
    let c = config();
    let r = record(&args(&[&workload("forker")]), &c);
    let main = r.child.as_ref().expect("child").pid;
    let rep = replay(&r);
    let by = samples_by_pid(&r);
    let kids: Vec<_> = rep
        .processes
        .iter()
        .filter(|p| p.parent.map(|k| k.pid) == Some(main))
        .collect();
    assert_eq!(kids.len(), 2, "{:#?}", rep.processes);
    for k in &kids {
        assert!(by.get(&k.key.pid).copied().unwrap_or(0) >= 50, "{by:?}");
        assert!(k.exit.is_some());
        assert_eq!(k.comm(), "forker");
        assert!(!k.mappings.is_empty(), "fork copies the parent's maps");
        for &i in &k.samples {
            let s = &r.samples[i];
            assert_eq!(s.tid, k.key.pid);
            if s.user_mode {
                assert!(k.mapping_at(s.ip, s.time).is_some());
            }
        }
    }
    assert!(by.get(&main).copied().unwrap_or(0) >= 50, "{by:?}");
}

#[test]
fn every_thread_is_sampled() {
    let _serial = serial();
    let c = config();
    let r = record(&args(&[&workload("threads")]), &c);
    let main = r.child.as_ref().expect("child").pid;
    let rep = replay(&r);
    assert_eq!(rep.processes.len(), 1);
    let p = &rep.processes[0];
    assert_eq!(p.key.pid, main);
    let sampled: BTreeSet<u32> = p
        .threads
        .iter()
        .filter(|t| t.samples >= 5)
        .map(|t| t.tid)
        .collect();
    assert_eq!(sampled.len(), 5, "{:#?}", p.threads);
    assert!(
        p.threads
            .iter()
            .filter(|t| t.tid != main)
            .all(|t| t.start.is_some() && t.exit.is_some())
    );
    assert!(r.samples.iter().all(|s| s.pid == main));
}

/// Whether a main thread's stack copy ends at its `argc` words of `argv` and their NULL.
fn ends_at_argv(copy: &[u8], argc: u64) -> bool {
    let word = |at: usize| u64::from_ne_bytes(copy[at..at + 8].try_into().expect("a word"));
    let n = copy.len();
    let words = 8 * (argc as usize + 2);
    n >= words && word(n - words) == argc && word(n - 8) == 0
}

/// Of copies (time, cut at argv): the first cut one, in time order, and how many after it are
/// not cut.
fn first_cut(mut cut: Vec<(u64, bool)>) -> (Option<usize>, Option<usize>) {
    cut.sort_unstable();
    let first = cut.iter().position(|&(_, c)| c);
    (
        first,
        first.map(|f| cut[f..].iter().filter(|&&(_, c)| !c).count()),
    )
}

/// Stack copies are kept only where frames can be: a main thread's up to its `argv`'s NULL,
/// from the first /proc reading that says where its stack started on; another thread's up to
/// its glibc descriptor, which lies inside a page (the kernel's copy ends at the mapping's
/// end, a page boundary).
#[test]
fn stack_copies_are_kept_only_where_frames_can_be() {
    copies_kept_only_where_frames_can_be(StackCopier::Kernel);
}

/// The same of the BPF copier's copies, which end there when taken: a thread's at the top of
/// the stack it was created with.
#[test]
fn the_bpf_copier_copies_only_where_frames_can_be() {
    copies_kept_only_where_frames_can_be(StackCopier::Bpf);
}

fn copies_kept_only_where_frames_can_be(copier: StackCopier) {
    let _serial = serial();
    let mut c = config();
    c.stack_copier = copier;
    let r = record(&args(&[&workload("threads")]), &c);
    // The BPF copier's copies (at full size) carry the user frame-pointer chains, walked over
    // them, the kernel not being asked for them: each starts at the user ip and goes on
    // through the workload's frames (it is built with frame pointers).
    assert_eq!(r.user_chains_from_copies, copier == StackCopier::Bpf);
    let with_regs: Vec<_> = r.samples.iter().filter(|s| s.regs.is_some()).collect();
    let chained = (with_regs.iter())
        .filter(|s| {
            let chain = r.user_chain(s);
            s.regs.map(|u| u.ip) == chain.first().copied() && chain.len() > 1
        })
        .count();
    assert!(
        chained * 10 >= with_regs.len() * 9,
        "{chained} of {} user chains start at the ip and go on",
        with_regs.len()
    );
    let mut main = Vec::new();
    let (mut thread, mut thread_cut) = (0, 0);
    let mut thread_ends: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    let mut longest = 0;
    for s in r.samples.iter().filter(|s| s.regs.is_some()) {
        let copy = r.user_stack(s);
        let end = s.regs.expect("user registers").sp + copy.len() as u64;
        if copy.len() < 24 {
            continue;
        }
        if s.tid == s.pid {
            main.push((s.time, ends_at_argv(copy, 1)));
        } else {
            thread += 1;
            thread_cut += usize::from(end.is_multiple_of(64) && !end.is_multiple_of(4096));
            thread_ends.entry(s.tid).or_default().insert(end);
            longest = longest.max(copy.len());
        }
    }
    eprintln!("thread copies end at {thread_ends:x?}; the longest holds {longest} bytes");
    let copies = main.len();
    let (first, uncut_after) = first_cut(main);
    // The reading comes within a poll interval of the start; the main thread spins 250 ms.
    assert!(
        copies >= 100 && first.is_some_and(|f| f * 2 < copies) && uncut_after == Some(0),
        "first cut copy {first:?} of {copies}, {uncut_after:?} whole after it"
    );
    assert!(
        thread >= 400 && thread_cut * 10 >= thread * 9,
        "{thread_cut} of {thread} cut"
    );
    if copier == StackCopier::Bpf {
        // The main thread's too: at its exec the copier noted where its argv ends.
        assert_eq!(
            first,
            Some(0),
            "the first {copies} copies of the main thread"
        );
        // From its first sample on, each thread's copies end at the top of the stack it was
        // created with, below its static TLS and descriptor (the kernel's copies, cut at the
        // descriptor, hold ~2 KiB here; the frames, a few hundred bytes).
        assert!(
            thread_ends.len() == 4 && thread_ends.values().all(|e| e.len() == 1) && longest < 1024,
            "thread copies end at {thread_ends:x?}, the longest {longest} bytes"
        );
    }
}

/// A child of `posix_spawn` starts on a stack of its own, whose top the BPF copier notes; after
/// its exec its main thread runs on a new stack, whose copies end at `argv` as any main
/// thread's.
#[test]
fn a_spawned_childs_copies_end_at_its_argv_after_its_exec() {
    let _serial = serial();
    let mut c = config();
    c.stack_copier = StackCopier::Bpf;
    let r = record(&args(&[&workload("spawner"), &workload("cpu"), &"400"]), &c);
    let parent = r.child.as_ref().expect("child").pid;
    // The child's samples after its exec (before it, it ran the spawner on its spawn stack),
    // with a copy (one taken in the exec before the new stack is in place has none).
    let rep = replay(&r);
    let execs: BTreeMap<u32, u64> = (rep.processes.iter())
        .filter(|p| p.key.pid != parent)
        .filter_map(|p| Some((p.key.pid, *p.execs.last()?)))
        .collect();
    let cut: Vec<_> = (r.samples.iter())
        .filter(|s| s.pid != parent && s.tid == s.pid)
        .filter(|s| execs.get(&s.pid).is_some_and(|&t| s.time >= t))
        .filter(|s| r.user_stack(s).len() >= 24)
        .map(|s| (s.time, ends_at_argv(r.user_stack(s), 2)))
        .collect();
    let copies = cut.len();
    let (first, uncut_after) = first_cut(cut);
    // From the first: at its exec the copier noted where its argv ends.
    assert!(
        copies >= 200 && first == Some(0) && uncut_after == Some(0),
        "first cut copy {first:?} of {copies}, {uncut_after:?} whole after it"
    );
}

#[test]
fn exec_replaces_name_and_maps() {
    let _serial = serial();
    let c = config();
    let cpu = workload("cpu");
    let r = record(&args(&[&workload("execer"), &cpu, &"200"]), &c);
    let main = r.child.as_ref().expect("child").pid;
    let rep = replay(&r);
    let gens: Vec<_> = rep.by_pid(main).collect();
    assert_eq!(gens.len(), 1, "exec keeps the generation");
    let p = gens[0];
    assert_eq!(p.comm(), "cpu");
    let exec_time = *p.execs.last().expect("exec seen");
    let cpu = cpu.to_str().expect("utf-8");
    let (mut before, mut after) = (0, 0);
    for &i in &p.samples {
        let s = &r.samples[i];
        if !s.user_mode {
            continue;
        }
        let m = p.mapping_at(s.ip, s.time).map(|m| &*m.filename);
        // Samples also land in libc and the vDSO (clock_gettime); the executable's own
        // mapping must be the one of the image running at that time.
        let m = m.unwrap_or_else(|| panic!("unmapped user ip {:#x}", s.ip));
        if s.time < exec_time {
            assert_ne!(m, cpu);
            before += usize::from(m.ends_with("/execer"));
        } else {
            assert!(!m.ends_with("/execer"), "{m}");
            after += usize::from(m == cpu);
        }
    }
    assert!(
        before >= 50 && after >= 80,
        "before {before}, after {after}"
    );
}

#[test]
fn short_lived_child_storm_is_followed() {
    let _serial = serial();
    let c = config();
    let r = record(&args(&[&workload("storm")]), &c);
    let main = r.child.as_ref().expect("child").pid;
    let rep = replay(&r);
    let kids: Vec<_> = rep
        .processes
        .iter()
        .filter(|p| p.parent.map(|k| k.pid) == Some(main))
        .collect();
    assert_eq!(kids.len(), 50);
    assert!(kids.iter().all(|k| k.exit.is_some() && k.start.is_some()));
    let sampled = kids.iter().filter(|k| !k.samples.is_empty()).count();
    assert!(sampled >= 25, "only {sampled} of 50 children have samples");
    assert_eq!(r.lost, 0);
}

#[test]
fn stop_flag_ends_the_run_with_a_complete_recording() {
    let _serial = serial();
    let c = config();
    let s = Sampler::launch(&args(&[&workload("cpu"), &"10000"]), &c).expect("launch");
    let pid = s.child_pid().expect("pid");
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let r = std::thread::scope(|sc| {
        sc.spawn(|| {
            std::thread::sleep(Duration::from_millis(400));
            stop.store(true, Ordering::Relaxed);
        });
        s.run(&stop).expect("run")
    });
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(r.stopped);
    let child = r.child.as_ref().expect("child reaped");
    assert_eq!(child.pid, pid);
    assert_eq!(child.signal, Some(15), "ended with SIGTERM");
    // The samples cover the CPU time the command got before the stop (its exact runtime,
    // read while it was a zombie): 400 ms of wall time give far less on a loaded machine.
    let counters = child.counters.as_ref().expect("counters");
    let ran_ms = counters
        .schedstat
        .split_whitespace()
        .next()
        .and_then(|ns| ns.parse::<u64>().ok())
        .expect("the runtime in schedstat")
        / 1_000_000;
    let n = r.samples.len() as u64;
    assert!(
        n >= 1 && n + 20 >= ran_ms * 8 / 10 && n <= ran_ms + 20,
        "{n} samples at 1000 Hz for {ran_ms} ms of CPU time"
    );
    let rep = replay(&r);
    let p = rep.by_pid(pid).next().expect("process");
    assert_eq!(p.comm(), "cpu");
    assert!(p.mappings.iter().any(|m| m.build_id.is_some()));
}

/// A run as root (the kernel's exit records give the counters of every task that ends) wakes
/// for a full ring or a new task only: a lone busy process costs the collector a round a
/// second, not ten.
#[test]
fn a_lone_busy_process_costs_about_a_round_a_second() {
    let _serial = serial();
    let rounds = |c: &Config| {
        let s = Sampler::launch(&args(&[&workload("cpu"), &"2000"]), c).expect("launch");
        let started = Instant::now();
        let mut rounds = 0u32;
        let r = s
            .run_with(&AtomicBool::new(false), |_| rounds += 1)
            .expect("run");
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "quiet rounds {}: {rounds} rounds in {secs:.2} s, {} samples",
            c.quiet_rounds,
            r.samples.len()
        );
        assert_eq!(r.taskstats_refused, None, "needs root");
        assert_eq!(r.lost_samples(), 0);
        (f64::from(rounds), secs)
    };
    let (quiet, secs) = rounds(&config());
    assert!(quiet <= secs * 2.0 + 3.0, "{quiet} rounds in {secs:.2} s");
    // Turned off (a caller that reads a BPF ring at each round), a round every poll interval.
    let mut c = config();
    c.quiet_rounds = false;
    let (busy, secs) = rounds(&c);
    assert!(busy >= secs * 5.0, "{busy} rounds in {secs:.2} s");
}

/// However long the collector sleeps between rounds, each new process wakes it, so a short
/// program run by a shell is read from /proc while it runs: its arguments are known.
#[test]
fn new_processes_are_read_while_they_run() {
    let _serial = serial();
    let cpu = workload("cpu");
    // Programs of 200 ms, and of 30 ms with 30 ms between them (rounds 100 ms apart read
    // about 4 of those 10).
    let long: Vec<String> = (201..=205).map(|ms| ms.to_string()).collect();
    let short: Vec<String> = (1..=10).map(|i| format!("30.{i}")).collect();
    let script = format!(
        "for ms in {}; do {cpu} $ms; done; for ms in {}; do {cpu} $ms; sleep 0.03; done",
        long.join(" "),
        short.join(" "),
        cpu = cpu.display()
    );
    let r = record(&args(&[&"/bin/sh", &"-c", &script]), &config());
    let read: BTreeSet<String> = r
        .proc_readings
        .iter()
        .filter(|p| {
            p.argv.first().map(|a| a.as_slice()) == Some(cpu.as_os_str().as_encoded_bytes())
        })
        .filter_map(|p| Some(String::from_utf8_lossy(p.argv.get(1)?).into_owned()))
        .collect();
    let missed: Vec<&String> = long
        .iter()
        .chain(&short)
        .filter(|a| !read.contains(*a))
        .collect();
    eprintln!("read {} programs' arguments, missed {missed:?}", read.len());
    assert!(long.iter().all(|a| read.contains(a)), "{read:?}");
    assert!(
        short.iter().filter(|a| read.contains(*a)).count() >= 8,
        "of the 30 ms programs read only {read:?}"
    );
}

/// The exact CPU time a (single-threaded) process has run, from the scheduler.
fn runtime_ns(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).expect("schedstat");
    s.split_whitespace()
        .next()
        .and_then(|ns| ns.parse().ok())
        .expect("a runtime in schedstat")
}

#[test]
fn duration_stops_an_attached_process() {
    let _serial = serial();
    let c0 = config();
    let mut child = Command::new(workload("cpu"))
        .arg("3000")
        .spawn()
        .expect("spawn");
    let mut c = c0.clone();
    c.duration = Some(Duration::from_millis(300));
    let before = runtime_ns(child.id());
    let s = Sampler::attach(&[child.id() as i32], &c).expect("attach");
    let r = s.run(&AtomicBool::new(false)).expect("run");
    // The run ended while the workload still had most of its 3 s of CPU work to do.
    let alive = child.try_wait().unwrap().is_none();
    let ran_ms = (runtime_ns(child.id()) - before) / 1_000_000;
    let _ = child.kill();
    let _ = child.wait();
    assert!(r.stopped);
    assert!(alive, "the workload ended before the run");
    // The samples cover the CPU time the workload got while attached (at most what it got
    // between the two readings, a few ms more): on a loaded machine that is far less than
    // 300 ms.
    let n = r.samples.len() as u64;
    let hz = c.frequency.max(1);
    assert!(
        n >= 1 && n * 1000 / hz + 20 >= ran_ms * 8 / 10 && n * 1000 / hz <= ran_ms + 20,
        "{n} samples at {hz} Hz for {ran_ms} ms of CPU time"
    );
    let rep = replay(&r);
    let p = rep.by_pid(child.id()).next().expect("process");
    assert_eq!(p.comm(), "cpu");
    let user = r.samples.iter().filter(|s| s.user_mode).collect::<Vec<_>>();
    assert!(
        user.iter().all(|s| p.mapping_at(s.ip, s.time).is_some()),
        "maps from /proc"
    );
}

#[test]
fn exec_failure_is_reported() {
    let _serial = serial();
    let c = config();
    match Sampler::launch(&["/nonexistent/program".into()], &c) {
        Err(Error::Spawn { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound)
        }
        other => panic!("expected a spawn error, got {other:?}"),
    }
}

/// A run at 10 kHz into a ring of one data page, with copies of `stack_bytes` by `copier`.
fn one_page_ring_at_10_khz(stack_bytes: u32, copier: StackCopier) -> Config {
    let mut c = config();
    c.mmap_pages = 1;
    c.frequency = 10_000;
    c.user_stack_bytes = stack_bytes;
    c.stack_copier = copier;
    c
}

#[test]
fn lost_samples_are_counted() {
    let _serial = serial();
    // One 4 KiB data page holds a single 2 KiB-stack sample; at 10 kHz a drain slower than a
    // sample's interval drops the next (2 to 113 lost a run here, so three tries for one with
    // a LOST record), and the samples kept plus the samples lost must add up to the CPU time
    // at 10 kHz. The LOST records do not have them all: the kernel writes one only once the
    // ring has room again, so the losses since the last are in the events' own lost count (a
    // slow reader, on a loaded machine, left half of them there). The kernel's copy, of the
    // whole 2 KiB: the BPF copier's stop at the frames' end, and several fit
    // (`the_copiers_lost_records_notices_are_read` loses samples with it).
    let c = one_page_ring_at_10_khz(2048, StackCopier::Kernel);
    let r = (0..3)
        .map(|_| record(&args(&[&workload("cpu"), &"300"]), &c))
        .find(|r| r.lost > 0)
        .expect("a LOST record in one of three runs");
    let lost = r.lost_samples();
    eprintln!(
        "tiny ring at 10 kHz: {} samples, {lost} lost ({} in LOST records, {} counted by the events)",
        r.samples.len(),
        r.lost,
        r.lost_reported_by_events
    );
    assert!(
        r.lost > 0 && (2500..=3300).contains(&(lost + r.samples.len() as u64)),
        "lost {lost} ({} in LOST records, {} counted by the events) with {} samples",
        r.lost,
        r.lost_reported_by_events,
        r.samples.len()
    );
    assert!(
        r.side_band
            .iter()
            .any(|s| matches!(s.kind, collect_perf::SideBand::Lost { .. }))
    );
    // Losses are attributed to the CPUs whose rings were full, and add up.
    let by_cpu = r.lost_samples_by_cpu();
    let ncpu = std::thread::available_parallelism().unwrap().get() as u32;
    assert!(
        !by_cpu.is_empty() && by_cpu.keys().all(|&c| c < ncpu.max(64)),
        "{by_cpu:?}"
    );
    assert_eq!(by_cpu.values().sum::<u64>(), r.lost_samples(), "{by_cpu:?}");
    assert!(r.lost_samples() >= r.lost.max(r.lost_reported_by_events));
    // The info file has them too.
    let dir = std::env::temp_dir().join(format!("collect-perf-lost-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut opts = collect_perf::WriteOptions::default();
    opts.dir = dir.clone();
    let agg = collect_perf::aggregate(
        &r,
        &collect_perf::AggregateOptions::default(),
        collect_perf::KernelSymbols::live(),
    );
    collect_perf::write_measurement(&r, &agg, &opts).unwrap();
    let pid = r.child.as_ref().unwrap().pid;
    let info = gmon_format::MeasurementInfo::parse(
        &std::fs::read(dir.join(format!("gmon.out.{pid}.cpu"))).unwrap(),
    )
    .unwrap();
    assert_eq!(info.sampling.lost_samples, Some(r.lost_samples()));
    assert_eq!(info.sampling.lost_samples_by_cpu, by_cpu);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn samples_larger_than_the_ring_are_all_counted_lost() {
    let _serial = serial();
    let mut c = config();
    c.mmap_pages = 1;
    c.user_stack_bytes = 4096;
    // The kernel's copy, in the sample: the BPF copier's records are smaller once it knows
    // where the frames end (see the next test).
    c.stack_copier = StackCopier::Kernel;
    // forker: three processes burning 300 ms of CPU each.
    let r = record(&args(&[&workload("forker")]), &c);
    eprintln!(
        "no sample fits: {} samples, {} lost in LOST records, {} by PERF_FORMAT_LOST",
        r.samples.len(),
        r.lost,
        r.lost_reported_by_events
    );
    assert!(r.samples.is_empty());
    // The events' own counters include inherited children that exited.
    assert!(
        (850..=1000).contains(&r.lost_reported_by_events),
        "{}",
        r.lost_reported_by_events
    );
}

/// The BPF copier writes each copy as a record before its sample: a copy the ring has no room
/// for takes its sample with it, so every sample received has its copy and every sample lost
/// is counted once.
#[test]
fn a_copy_without_room_loses_its_sample_and_is_counted_once() {
    let _serial = serial();
    let mut c = config();
    c.mmap_pages = 2;
    c.user_stack_bytes = 4096;
    c.stack_copier = StackCopier::Bpf;
    let r = record(&args(&[&workload("threads")]), &c);
    let child = r.child.as_ref().expect("child exit");
    let counters = child.counters.as_ref().expect("counters");
    let cpu_ms = (counters.utime_ticks + counters.stime_ticks) as f64 * 10.0;
    let (got, lost) = (r.samples.len() as f64, r.lost_samples() as f64);
    eprintln!("{got} samples, {lost} lost, {cpu_ms} ms of cpu");
    // A two-page ring holds one whole copy of 4 KiB and many cut at their frames (the
    // threads' copies end at the stack tops the copier notes when they start): samples go with
    // their copies only now and then (0 or 1 of 1,250 in four runs here; the next test loses
    // some every run).
    assert!(got > 0.0, "{got} received, {lost} lost");
    assert!(
        got + lost >= cpu_ms * 0.85 && got + lost <= cpu_ms * 1.15 + 20.0,
        "{got} received and {lost} lost at 1 kHz for {cpu_ms} ms of cpu"
    );
    // One in the kernel during the exec has an empty copy (see the next test).
    assert_user_samples_have_their_copies(&r);
}

/// Every user-mode sample kept came after its copy: an empty one only where the copier says
/// the stack pointer's own page was not yet touched (a thread's first instructions, or a
/// function between growing its frame and writing to it), below where its frames end.
fn assert_user_samples_have_their_copies(r: &Recording) {
    let user = r.samples.iter().filter(|s| s.user_mode);
    assert!(user.clone().count() > 0, "no user-mode samples");
    let empty: Vec<_> = (user.filter(|s| r.user_stack(s).is_empty()))
        .map(|s| s.copy_end)
        .collect();
    assert!(
        empty.iter().all(|&e| e == CopyEnd::BelowFrames),
        "samples without their copies: {empty:?}"
    );
}

/// The copier's output event writes the lost-records notice when a copy is the first record
/// with room after a loss, with a trailer of its own (CPU and identifier): such notices are
/// read and counted like the cpu-clock event's. A 3 KiB copy and its sample fill the one-page
/// ring, so at 10 kHz a slow drain loses the next (a drain quick enough every time loses none:
/// three tries).
#[test]
fn the_copiers_lost_records_notices_are_read() {
    let _serial = serial();
    let c = one_page_ring_at_10_khz(3072, StackCopier::Bpf);
    for _ in 0..3 {
        let r = record(&args(&[&workload("widestack"), &"300"]), &c);
        let (got, lost) = (r.samples.len() as u64, r.lost_samples());
        eprintln!("{got} samples, {lost} lost ({} in notices)", r.lost);
        assert_eq!(r.unparsed_records, 0);
        assert!((2500..=3300).contains(&(got + lost)), "{got} + {lost}");
        // Every sample kept came after its copy; one in the kernel during the exec (the user
        // registers still the launcher's, its stack gone) has an empty one, and so may one
        // taken in wide() between its frame's growth and the write that touches its stack
        // pointer's page.
        assert!(r.samples.iter().filter(|s| s.user_mode).count() > 2000);
        assert_user_samples_have_their_copies(&r);
        // The output events' own counts hold every copy lost, told by a notice or not (the
        // cpu-clock events lose none: the program drops a sample whose copy is lost).
        assert!(
            r.lost_reported_by_events >= r.lost,
            "{} lost by the events' counts, {} in notices",
            r.lost_reported_by_events,
            r.lost
        );
        if r.lost > 0 {
            return;
        }
    }
    panic!("no sample lost in three runs");
}

#[test]
fn leaf_fix_finds_the_caller_of_the_read_wrapper() {
    let _serial = serial();
    let c = config();
    let exe = workload("syscall");
    let r = record(&args(&[&exe, &"300"]), &c);
    let rep = replay(&r);
    let stacks = collect_perf::unwind_user_stacks(&r, &rep, 127);
    let k = Kallsyms::load();
    let p = rep.processes.first().expect("process");
    let mut name = namer(p);
    let (mut read_samples, mut fixed, mut fp_right) = (0, 0, 0);
    for &i in &p.samples {
        let s = &r.samples[i];
        if !r
            .kernel_chain(s)
            .iter()
            .any(|&a| k.name(a) == Some("ksys_read"))
        {
            continue;
        }
        read_samples += 1;
        let user = stacks.frames(i);
        let wrapper = name(user[0], s.time).unwrap_or_default();
        assert!(wrapper.contains("read"), "{wrapper} is not libc's read");
        if user.len() > 1 && name(user[1] - 1, s.time).as_deref() == Some("copy_loop") {
            fixed += 1;
        }
        let fp = r.user_chain(s);
        if fp.len() > 1 && name(fp[1] - 1, s.time).as_deref() == Some("copy_loop") {
            fp_right += 1;
        }
    }
    eprintln!(
        "read path: {read_samples} samples; caller copy_loop found in {fixed} with the leaf fix, \
         {fp_right} with frame pointers alone; {:?}",
        stacks.stats
    );
    assert!(read_samples >= 20, "{read_samples} samples in ksys_read");
    assert!(
        fixed * 100 >= read_samples * 95,
        "copy_loop is the caller of read in only {fixed} of {read_samples} samples"
    );
}

/// A frame wider than any copy (widestack.c: wide() holds 96 KiB) leaves main and its callers
/// past every copy: the samples in inner() reach them only by the frame-pointer chain, the
/// kernel's, or with the BPF copier at full size (which asks the kernel for none) the
/// program's walk past the copy. Walked over the copy alone, they stopped at wide().
#[test]
fn the_frame_chain_goes_on_past_a_copy_cut_at_its_size() {
    let _serial = serial();
    let exe = workload("widestack");
    for copier in [StackCopier::Kernel, StackCopier::Bpf] {
        let mut c = config();
        c.stack_copier = copier;
        let r = record(&args(&[&exe, &"300"]), &c);
        let rep = replay(&r);
        let stacks = collect_perf::unwind_user_stacks(&r, &rep, 127);
        let p = rep.processes.first().expect("process");
        let mut name = namer(p);
        let (mut under, mut reached) = (0, 0);
        for &i in &p.samples {
            let t = r.samples[i].time;
            let names: Vec<String> = (stacks.frames(i).iter().enumerate())
                .filter_map(|(k, &a)| name(if k == 0 { a } else { a - 1 }, t))
                .collect();
            if names.iter().any(|n| n == "inner") {
                under += 1;
                reached += usize::from(names.iter().any(|n| n == "main"));
            }
        }
        assert!(
            under >= 100 && reached * 10 >= under * 9,
            "{copier:?}: {reached} of {under} samples under inner() reach main; {:?}",
            stacks.stats
        );
    }
}

/// A copy the kernel stops at a page of the stack the program never touched (below the
/// stack's end: the thread's shallow copies went farther) is said to be that, not a frame
/// without unwind information.
#[test]
fn a_copy_stopped_at_an_untouched_stack_page_is_named_so() {
    let _serial = serial();
    let c = config();
    let exe = workload("untouched");
    let r = record(&args(&[&exe, &"300"]), &c);
    let rep = replay(&r);
    let stacks = collect_perf::unwind_user_stacks(&r, &rep, 127);
    let p = rep.processes.first().expect("process");
    let syms = ElfSyms::load(exe.to_str().expect("utf-8 path"));
    // In buffered() or under it: a sample in buffered() itself between its frame's growth
    // and its first write has an empty copy, cut at that untouched page too.
    let in_buffered = |i: usize| {
        let s = &r.samples[i];
        stacks.frames(i).iter().enumerate().any(|(k, &a)| {
            let at = if k == 0 { a } else { a - 1 };
            p.mapping_at(a, s.time)
                .and_then(|m| syms.name(m, at))
                .is_some_and(|n| n == "buffered")
        })
    };
    let (mut under, mut stopped) = (0u64, 0u64);
    for &i in &p.samples {
        if in_buffered(i) {
            under += 1;
            stopped += u64::from(stacks.end(i) == Some(StackEnd::StackCopy));
        }
    }
    eprintln!(
        "{under} samples in or under buffered(), {stopped} ended by the copy; {:?}",
        stacks.stats
    );
    assert!(under >= 100, "{under} samples in or under buffered()");
    assert_eq!(
        stopped, under,
        "every stack in or under buffered() ends with the copy"
    );
    assert_eq!(stacks.stats.untouched_page, under, "{:?}", stacks.stats);
    assert_eq!(stacks.stats.stack_copy, under, "{:?}", stacks.stats);
    assert_eq!(stacks.stats.unwind_info, 0, "{:?}", stacks.stats);
}

/// The lazy workload (built without frame pointers, bound lazily) run with LD_BIND_NOT=1 and
/// `args`: its recording, replay and user stacks.
fn lazy_run(args_: &[&str]) -> (Recording, collect_perf::Replay, collect_perf::UserStacks) {
    let exe = workload_built("lazy", &["-O2", "-fomit-frame-pointer", "-Wl,-z,lazy"]);
    let mut argv = args(&[&"env", &"LD_BIND_NOT=1", &exe]);
    argv.extend(args_.iter().map(|a| a.into()));
    let r = record(&argv, &config());
    let rep = replay(&r);
    let stacks = collect_perf::unwind_user_stacks(&r, &rep, 127);
    (r, rep, stacks)
}

fn lazy_process(rep: &collect_perf::Replay) -> &collect_perf::Process {
    (rep.processes.iter())
        .find(|p| p.comm().starts_with("lazy"))
        .expect("the workload")
}

/// A sample in the page fault the trampoline's register save area takes (the stack pages
/// below given back before each call) has a copy that stops at that page: its stack is cut
/// by the copy, at a page not yet touched, never counted for want of unwind information
/// (the truth tests' untouched workload had one such stack in about one run of twenty).
#[test]
fn a_trampoline_faulting_in_its_stack_page_is_cut_by_the_copy() {
    let _serial = serial();
    let (r, rep, stacks) = lazy_run(&["400000", "drop"]);
    let p = lazy_process(&rep);
    // The workload's samples in the kernel with an empty copy and the user ip in ld.so: the
    // trampoline's page faults (the user stack pointer in a page given back).
    let faulting: Vec<usize> = (p.samples.iter().copied())
        .filter(|&i| {
            let s = &r.samples[i];
            s.regs.is_some_and(|u| {
                p.mapping_at(u.ip, s.time)
                    .is_some_and(|m| m.filename.contains("ld-linux"))
            }) && !s.user_mode
                && r.user_stack(s).is_empty()
        })
        .collect();
    let ends: BTreeMap<String, usize> = faulting.iter().fold(BTreeMap::new(), |mut m, &i| {
        *m.entry(format!("{:?}", stacks.end(i))).or_default() += 1;
        m
    });
    eprintln!("{ends:?}; {:?}", stacks.stats);
    // All but a very few: before any copy of the thread has shown where its stack ends, a
    // read past an empty copy cannot be told from one outside the stack (one in about 600,
    // at the trampoline's first store).
    let cut = faulting
        .iter()
        .filter(|&&i| stacks.end(i) == Some(StackEnd::StackCopy))
        .count();
    assert!(
        faulting.len() >= 20 && cut * 100 >= faulting.len() * 99,
        "{ends:?}; {:?}",
        stacks.stats
    );
}

/// Frames of ld.so's lazy-binding trampoline, which keeps its frame in rbx: with
/// LD_BIND_NOT=1 every call of strtol goes through it, and the samples in the resolver (most
/// of them) must still reach the caller, resolve_loop, and main. Before, framehop's rbp
/// fallback there cut them (the workload built without frame pointers).
#[test]
fn lazy_binding_trampolines_keep_their_callers() {
    let _serial = serial();
    let (r, rep, stacks) = lazy_run(&["4000000"]);
    let p = lazy_process(&rep);
    let mut name = namer(p);
    let (mut in_resolver, mut whole, mut stuck) = (0, 0, 0);
    for &i in &p.samples {
        let s = &r.samples[i];
        let user = stacks.frames(i);
        let Some(&leaf) = user.first() else { continue };
        if !p
            .mapping_at(leaf, s.time)
            .is_some_and(|m| m.filename.contains("ld-linux"))
        {
            continue;
        }
        in_resolver += 1;
        // A sample with no copy at all (ld.so's start-up faulting in its first stack page,
        // before any copy showed where the stack ends) is the other test's: one in ~600.
        if !r.user_stack(s).is_empty() {
            stuck += usize::from(stacks.end(i) == Some(StackEnd::UnwindInfo));
        }
        let names: Vec<String> = user[1..]
            .iter()
            .filter_map(|&a| name(a - 1, s.time))
            .collect();
        if names.iter().any(|n| n == "resolve_loop")
            && names.iter().any(|n| n == "main")
            && !stacks.truncated(i)
        {
            whole += 1;
        }
    }
    eprintln!(
        "{in_resolver} samples in ld.so, {whole} whole through resolve_loop; {:?}",
        stacks.stats
    );
    assert!(in_resolver >= 100, "{in_resolver} samples in ld.so");
    assert!(
        whole * 100 >= in_resolver * 95,
        "only {whole} of {in_resolver} samples in ld.so reach resolve_loop and main whole"
    );
    // None stops for want of unwind information: 2 to 7 a run did, at the trampoline's
    // second instruction (its CFA still rsp-based, rbx not yet its frame), before such rows
    // were left to framehop; 1 to 3 in about half the runs, in `_dl_fixup`'s epilogue after
    // its `pop rbx` (its entry still names the popped slot, below the copy), before the
    // register was taken from the sample there. (Those not whole now are ld.so's start-up.)
    assert_eq!(stuck, 0, "{:?}", stacks.stats);
}
