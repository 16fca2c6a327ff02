//! `pkgmon --latency/--blocking` on workloads of known latency (tests/workloads/latency.c),
//! each checked against what the program measured itself: the buckets, the peaks, the sleep
//! sites, the wakers and the page faults; then `pkgprof --latency`, `--blocking` and
//! `--latency-diff` on the same measurements.
//!
//! These need root (tracepoints with raw data); if perf_event_open is refused they fail with
//! pkgmon's message, they never skip.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use callgraph::{AddressNames, SeamlessOptions};
use gmon_format::latency::{LatencyFile, Operation, syscall_name};
use latency::{Histogram, PeakOptions, Resolution, peaks};

mod common;

use common::{PKGMON, PKGPROF, scratch, serial};

/// The workload, compiled once with frame pointers and debug information.
fn workload() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/latency.c");
        common::compile(&src, "latency-workload", &["-g"])
    })
}

/// What the program measured itself.
#[derive(Debug, Default)]
struct Own {
    calls: u64,
    total: u64,
    faults: u64,
    peer: i64,
    sleeps: Option<u64>,
    buckets: BTreeMap<u32, u64>,
}

impl Own {
    fn read(path: &Path) -> Own {
        let mut o = Own::default();
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let w: Vec<&str> = line.split(' ').collect();
            match w[0] {
                "calls" => o.calls = w[1].parse().unwrap(),
                "total" => o.total = w[1].parse().unwrap(),
                "faults" => o.faults = w[1].parse().unwrap(),
                "peer" => o.peer = w[1].parse().unwrap(),
                "sleeps" => o.sleeps = Some(w[1].parse().unwrap()),
                "bucket" => {
                    o.buckets
                        .insert(w[1].parse().unwrap(), w[2].parse().unwrap());
                }
                _ => panic!("unknown line {line}"),
            }
        }
        o
    }

    fn mode(&self) -> u32 {
        *self.buckets.iter().max_by_key(|(_, n)| **n).unwrap().0
    }
}

/// One process's latency file with its addresses named.
struct Proc {
    pid: u32,
    file: LatencyFile,
    names: AddressNames,
}

struct Run {
    dir: PathBuf,
    own: Own,
    procs: Vec<Proc>,
    /// pkgmon's messages.
    stderr: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `pkgmon -o DIR --latency|--blocking -- workload ARGS... OUT` to the end.
fn record(tag: &str, blocking: bool, args: &[&str]) -> Run {
    record_via(tag, if blocking { "--blocking" } else { "--latency" }, args)
}

/// How `--latency` counts: in the kernel (BPF) or through the perf rings.
const LATENCY_PATHS: [&str; 2] = ["--latency-path=bpf", "--latency-path=ring"];

/// How `--blocking` counts: in the kernel (the default) or through the perf rings.
const BLOCKING_PATHS: [&str; 2] = ["--blocking", "--blocking --latency-path=ring"];

/// `pkgmon -o DIR --latency|--blocking [OPTIONS] -- workload ARGS... OUT`, `how` being
/// `--blocking` or `--latency` then options, or options alone (with `--latency`), separated
/// by spaces.
fn record_via(tag: &str, how: &str, args: &[&str]) -> Run {
    let dir = scratch().join(format!("latency-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    let own_path = scratch().join(format!("latency-{tag}.own"));
    let mut opts: Vec<&str> = how.split(' ').collect();
    if !["--latency", "--blocking"].contains(&opts[0]) {
        opts.insert(0, "--latency");
    }
    let out = Command::new(PKGMON)
        .arg("-o")
        .arg(&dir)
        .args(opts)
        .arg("--")
        .arg(workload())
        .args(args)
        .arg(&own_path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "pkgmon failed: {stderr}");
    assert!(
        !stderr.contains("warning: raw_syscalls"),
        "checksums did not match at default settings: {stderr}"
    );
    let own = Own::read(&own_path);
    let _ = std::fs::remove_file(&own_path);
    let m = gmon_format::scan(&dir).unwrap();
    let mut procs = Vec::new();
    for pf in &m.processes {
        let Some(path) = &pf.latency else { continue };
        let file = LatencyFile::parse(&std::fs::read(path).unwrap()).unwrap();
        let names = AddressNames::new(&m, pf, &SeamlessOptions::default()).unwrap();
        procs.push(Proc {
            pid: pf.pid,
            file,
            names,
        });
    }
    assert!(!procs.is_empty(), "no latency file in {}", dir.display());
    Run {
        dir,
        own,
        procs,
        stderr: stderr.into_owned(),
    }
}

impl Proc {
    /// The operations of system call `name` whose call site passes through `function`.
    fn ops(&mut self, name: &str, function: &str) -> Vec<Operation> {
        let arch = self.file.arch.clone();
        let mut out = Vec::new();
        for op in self.file.operations.clone() {
            if syscall_name(&arch, op.syscall) != Some(name) {
                continue;
            }
            if op.site.iter().any(|&a| self.names.user(a) == function) {
                out.push(op);
            }
        }
        out
    }

    fn histogram(&self, ops: &[Operation]) -> Histogram {
        let mut h = Histogram::new(Resolution::new(self.file.resolution).unwrap());
        for op in ops {
            for b in &op.buckets {
                h.add_bucket(b.bucket, b.count, b.total_ns);
            }
        }
        h
    }

    /// Sleep sites named by their first frame outside the scheduler, with counts.
    fn sleep_sites(&mut self, ops: &[Operation]) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for op in ops {
            for s in &op.blocking.as_ref().unwrap().sites {
                let names: Vec<String> = s.frames.iter().map(|&a| self.names.kernel(a)).collect();
                let site = names
                    .iter()
                    .find(|n| {
                        !(n.as_str() == "schedule"
                            || n.starts_with("__schedule")
                            || n.starts_with("schedule_")
                            || n.starts_with("io_schedule"))
                    })
                    .cloned()
                    .unwrap_or_default();
                *out.entry(site).or_default() += s.count;
            }
        }
        out
    }
}

fn sum(ops: &[Operation], f: impl Fn(&Operation) -> u64) -> u64 {
    ops.iter().map(f).sum()
}

/// The sleeps pkgmon said it could not count ("N of M times off the CPU in a call were not
/// counted": their switch back in was not seen). Rare alone; a second blocking run on the
/// machine at the same time made a few of 300 (the cause is not known; it is reported).
fn uncounted_sleeps(stderr: &str) -> u64 {
    (stderr.lines())
        .filter(|l| l.contains("times off the CPU in a call were not counted"))
        .filter_map(|l| {
            l.split("warning: ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

fn pkgprof(args: &[&str], dir: &Path) -> String {
    let out = Command::new(PKGPROF).args(args).arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "pkgprof {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn nanosleep_of_1ms_peaks_in_the_2_20_bucket_and_sleeps_in_do_nanosleep() {
    for how in BLOCKING_PATHS {
        nanosleep_via(how);
    }
}

fn nanosleep_via(how: &str) {
    let _g = serial();
    let mut run = record_via("sleep", how, &["sleep", "300"]);
    let own = &run.own;
    let p = &mut run.procs[0];
    let ops = p.ops("clock_nanosleep", "nap");
    assert_eq!(sum(&ops, |o| o.calls), 300);
    assert_eq!(own.calls, 300);
    let h = p.histogram(&ops);
    let pk = peaks(&h, &PeakOptions::default());
    // One path: sleeping ~1 ms (plus timer slack) lands in [2^20, 2^21) ns.
    let main = pk.iter().max_by_key(|p| p.count).unwrap();
    assert_eq!(main.mode, 20, "{pk:?}");
    assert_eq!(own.mode(), 20, "{own:?}");
    assert!(main.count * 10 >= 9 * 300, "{pk:?}");
    // The kernel's interval lies inside the program's own.
    assert!(
        h.total_ns() <= own.total,
        "{} > {}",
        h.total_ns(),
        own.total
    );
    assert!(h.total_ns() * 10 >= own.total * 9);
    let blocked = sum(&ops, |o| o.blocking.as_ref().unwrap().blocked_ns);
    let sleeps = sum(&ops, |o| o.blocking.as_ref().unwrap().sleeps);
    let uncounted = uncounted_sleeps(&run.stderr);
    assert!(
        sleeps + uncounted >= 297,
        "{how}: {sleeps} sleeps for 300 calls, {uncounted} said uncounted"
    );
    assert!(
        blocked * 10 >= h.total_ns() * 8,
        "{blocked} of {}",
        h.total_ns()
    );
    let sites = p.sleep_sites(&ops);
    let top = sites.iter().max_by_key(|(_, n)| **n).unwrap();
    assert_eq!(top.0, "do_nanosleep", "{how}: {sites:?}");
    // Every sleep has its waker, the timer's interrupt, with its frames: also when it fired
    // on an idle CPU (pid 0), which perf does not sample but the BPF programs see (on the
    // ring path such a waker is inferred, without frames).
    let wakers: Vec<_> = ops
        .iter()
        .flat_map(|o| &o.blocking.as_ref().unwrap().wakers)
        .collect();
    let report = pkgprof(&["--blocking"], &run.dir);
    let woken: u64 = wakers.iter().map(|w| w.count).sum();
    // The kernel now and then does not run the waking program for a wake-up it counts (1 in
    // 300 under load: collect-perf bpf/wakers.rs): such a sleep is listed as "waker not seen",
    // never dropped, so every sleep is either woken or said to be unseen.
    assert!(
        woken + 3 >= sleeps && woken <= sleeps,
        "{how}: {woken} of {sleeps}\n{report}"
    );
    if woken < sleeps {
        let unseen = format!("{} x  waker not seen", sleeps - woken);
        assert!(report.contains(&unseen), "{unseen}?\n{report}");
    }
    assert!(report.contains("slept in do_nanosleep"), "{report}");
    if how == "--blocking" {
        // A waker's stack can collide with another in the in-kernel stack map (about K²/2N
        // of K distinct stacks in N buckets; under load the timer's interrupts come with
        // hundreds of distinct interrupted stacks): such wake-ups keep no frames, and pkgmon
        // counts and says so. Every other one has its frames.
        let frameless: u64 = wakers
            .iter()
            .filter(|w| w.frames.is_empty())
            .map(|w| w.count)
            .sum();
        if frameless > 0 {
            let said = run
                .stderr
                .lines()
                .find_map(|l| {
                    l.strip_prefix("pkgmon: warning: ")?
                        .strip_suffix(
                            " sleep sites or wakers have no frames: their stacks collided with \
                             others in the in-kernel stack map (or it was full)",
                        )?
                        .parse::<u64>()
                        .ok()
                })
                .unwrap_or(0);
            assert!(
                said >= frameless,
                "{frameless} wakers without frames, {said} said\n{}",
                run.stderr
            );
        }
        assert!(report.contains("hrtimer_wakeup (interrupt)"), "{report}");
    }
    let report = pkgprof(&["--latency"], &run.dir);
    assert!(report.contains("clock_nanosleep: 300 calls"), "{report}");
    assert!(report.contains("nap > "), "{report}");
    // The plot of the operation with the most latency: the sleeps, one peak mark at ~1 ms.
    let svg_path = run.dir.join("plot.svg");
    let png_path = run.dir.join("plot.png");
    for path in [&svg_path, &png_path] {
        let arg = format!("--plot={}", path.display());
        pkgprof(&["--latency", &arg], &run.dir);
    }
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(
        svg.contains(">clock_nanosleep: 300 calls, mean 1."),
        "{svg}"
    );
    // One peak holds most sleeps, at ~1 ms; a loaded machine may wake some late enough to
    // make a small peak of their own further right (seen at load 6), which is right to show.
    let share = |mark: &str| -> u32 {
        let pct = &mark[mark.rfind('(').unwrap() + 1..mark.rfind("%)").unwrap()];
        pct.parse().unwrap()
    };
    let marks: Vec<&str> = svg.lines().filter(|l| l.contains("l-5 -8h10z")).collect();
    let main = marks.iter().max_by_key(|m| share(m)).unwrap();
    assert!(
        main.contains(">1.") && main.contains("ms (") && share(main) >= 70,
        "{svg}"
    );
    let png = std::fs::read(&png_path).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 4_000);
}

#[test]
fn getpid_has_one_peak_where_the_program_measured_it() {
    for how in LATENCY_PATHS {
        getpid_via(how);
    }
}

fn getpid_via(how: &str) {
    let _g = serial();
    let mut run = record_via("getpid", how, &["getpid", "20000"]);
    let own = run.own.mode();
    let p = &mut run.procs[0];
    let ops = p.ops("getpid", "ask_pid");
    assert_eq!(sum(&ops, |o| o.calls), 20000);
    let h = p.histogram(&ops);
    let pk = peaks(&h, &PeakOptions::default());
    assert_eq!(pk.len(), 1, "{pk:?}");
    // The kernel's interval is inside the program's, which adds the clock reads and the
    // tracing's own cost (~0.5 us a call, more on a loaded machine: the program's mode was 8
    // while the kernel's was 6 in a CI run at load 4): never above the program's mode, and
    // below 1 us (bucket 10 starts at 1,024 ns), where a getpid is. On the ring path the
    // kernel's interval also holds the writing of the entry record (its time is taken before
    // its callchain and stack copy go into the ring), which at load 7-10 put the mode in
    // [1, 2) us, the program's in [2, 4), and in a fresh-clone CI run alone on the machine
    // both in [2, 4): there the bound is 4 us, beside the program's mode.
    let below = if how.ends_with("ring") { 12 } else { 10 };
    assert!(
        pk[0].mode <= own && pk[0].mode < below,
        "{how}: {pk:?} vs {own}"
    );
    assert!(h.total_ns() <= run.own.total, "{how}: {} ns", h.total_ns());
    assert!(ops.iter().all(|o| o.blocking.is_none()));
    assert_eq!(p.file.dropped, 0);
}

/// A getpid storm under `--blocking` at default settings: through the rings it lost up to
/// 286,717 records of a million calls (each entry record carries a stack copy, and the
/// reader falls behind); counted in the kernel, nothing is lost. Every call the program made
/// is in the file, every entry and exit counted is in a bucket or said to be unpaired, and
/// with `--latency-checksums` the counts match counting-mode events on the same tasks.
#[test]
fn a_getpid_storm_under_blocking_loses_nothing() {
    const N: u64 = 1_000_000;
    for how in ["--blocking", "--blocking --latency-checksums"] {
        let _g = serial();
        let mut run = record_via("storm", how, &["getpid", &N.to_string()]);
        assert_eq!(run.own.calls, N);
        // No record lost, no checksum mismatch, nothing left out of a map.
        assert!(!run.stderr.contains("warning"), "{how}: {}", run.stderr);
        let p = &mut run.procs[0];
        let f = &p.file;
        assert_eq!((f.lost, f.dropped), (0, 0), "{how}");
        let calls: u64 = f.operations.iter().map(|o| o.calls).sum();
        let check = |event: &str| {
            let c =
                (f.checks.iter().find(|c| c.event == event)).unwrap_or_else(|| panic!("{event}"));
            if how.contains("checksums") {
                assert_eq!(c.counted, Some(c.received), "{how}: {c:?}");
            }
            c.received
        };
        let (enters, exits) = (
            check("raw_syscalls:sys_enter"),
            check("raw_syscalls:sys_exit"),
        );
        // The exit_group never returns, the execve's exit has no entry: nothing else.
        assert!(
            f.unpaired_enters <= 1 && f.unpaired_exits <= 1,
            "{how}: {f:?}"
        );
        assert_eq!(enters, calls + f.unpaired_enters, "{how}");
        assert_eq!(exits, calls + f.unpaired_exits, "{how}");
        let ops = p.ops("getpid", "ask_pid");
        assert_eq!(sum(&ops, |o| o.calls), N, "{how}");
        assert!(ops.iter().all(|o| o.blocking.is_some()), "{how}");
    }
}

#[test]
fn latency_checksums_count_every_call_a_second_time_and_match() {
    let _g = serial();
    let run = record_via("checksums", "--latency-checksums", &["getpid", "20000"]);
    let checks = &run.procs[0].file.checks;
    let events: Vec<&str> = checks.iter().map(|c| c.event.as_str()).collect();
    assert_eq!(
        events,
        ["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"],
        "{checks:?}"
    );
    for c in checks {
        assert!(c.received >= 20000, "{c:?}");
        assert_eq!(c.counted, Some(c.received), "{c:?}");
    }
}

#[test]
fn pipe_reads_block_in_pipe_read_and_are_woken_by_the_writer() {
    for how in BLOCKING_PATHS {
        pipe_reads_via(how);
    }
}

fn pipe_reads_via(how: &str) {
    let _g = serial();
    let mut run = record_via("pipe", how, &["pipe", "100"]);
    let writer = u32::try_from(run.own.peer).unwrap();
    let own_mode = run.own.mode();
    let reader = run
        .procs
        .iter()
        .position(|p| p.pid != writer)
        .expect("the reader's file");
    let p = &mut run.procs[reader];
    let ops = p.ops("read", "reader");
    assert_eq!(sum(&ops, |o| o.calls), 100);
    let h = p.histogram(&ops);
    let pk = peaks(&h, &PeakOptions::default());
    let main = pk.iter().max_by_key(|p| p.count).unwrap();
    assert_eq!(main.mode, own_mode, "{pk:?}");
    let sites = p.sleep_sites(&ops);
    // `pipe_read`, `anon_pipe_read` since Linux 6.14.
    let in_pipe_read: u64 = sites
        .iter()
        .filter(|(k, _)| k.ends_with("pipe_read"))
        .map(|(_, n)| n)
        .sum();
    assert!(in_pipe_read >= 90, "{sites:?}");
    let woken_by_writer: u64 = ops
        .iter()
        .flat_map(|o| &o.blocking.as_ref().unwrap().wakers)
        .filter(|w| w.pid == writer)
        .map(|w| w.count)
        .sum();
    assert!(
        woken_by_writer >= 90,
        "{woken_by_writer} wake-ups by the writer {writer}"
    );
    let report = pkgprof(&["--blocking"], &run.dir);
    assert!(report.contains("pipe_read\n"), "{report}");
    assert!(
        report.contains(&format!("woken by pid {writer} in ")),
        "{report}"
    );
    // The blocked time as the off-CPU value of the exports: the reader's stacks through
    // `reader` into the pipe read path carry exactly the time its reads blocked there.
    let blocked_in_pipe_read: u64 = ops
        .iter()
        .flat_map(|o| &o.blocking.as_ref().unwrap().sites)
        .filter(|s| {
            s.frames
                .iter()
                .any(|&a| p.names.kernel(a).ends_with("pipe_read"))
        })
        .map(|s| s.blocked_ns)
        .sum();
    let pid = p.pid.to_string();
    let folded = pkgprof(
        &["--export=folded", "--value=off-cpu", "--pid", &pid],
        &run.dir,
    );
    let exported: u64 = folded
        .lines()
        .filter(|l| l.contains(&format!("{pid}u:reader;")) && l.contains("pipe_read;"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(exported, blocked_in_pipe_read, "{folded}");
    assert!(exported >= 90 * 4_000_000, "{folded}");
    // And as the value the listing counts, in seconds: the call graph charges the time slept
    // in the pipe read path to it, and to `reader` above it.
    let listing = pkgprof(&["--value=off-cpu", "-b", "--pid", &pid], &run.dir);
    let want = blocked_in_pipe_read as f64 / 1e9;
    let inclusive = |name: &str| -> f64 {
        let line = (listing.lines())
            .find(|l| l.starts_with('[') && l.contains(name))
            .unwrap_or_else(|| panic!("no {name}\n{listing}"));
        let f: Vec<f64> = (line.split_whitespace().skip(2).take(2))
            .map(|x| x.parse().unwrap())
            .collect();
        f[0] + f[1]
    };
    let in_pipe_read = inclusive("pipe_read [");
    assert!((in_pipe_read - want).abs() < 0.015, "{want} s\n{listing}");
    let reader = inclusive(&format!("{pid}u:reader ["));
    assert!(reader >= want - 0.015, "{want} s\n{listing}");
}

/// glibc's `fcntl64` keeps a frame before its `syscall` instruction, so the word at the user
/// stack pointer is data: the call site comes from unwinding a stack copy, on the ring path
/// at every call, in the kernel once per histogram entry. Both name `take_lock` and
/// `drop_lock`, each with every call it made.
#[test]
fn call_sites_behind_a_wrapper_with_a_frame_are_unwound_on_both_paths() {
    for how in LATENCY_PATHS {
        let _g = serial();
        let mut run = record_via("sites", how, &["lock", "20", "1"]);
        let p = &mut run.procs[0];
        for function in ["take_lock", "drop_lock"] {
            let ops = p.ops("fcntl", function);
            assert_eq!(sum(&ops, |o| o.calls), 20, "{how}: {function}");
        }
    }
}

#[test]
fn page_faults_of_each_call_are_counted_exactly() {
    for how in LATENCY_PATHS {
        faults_via(how);
    }
}

fn faults_via(how: &str) {
    let _g = serial();
    let (n, pages) = (20u64, 64u64);
    let mut run = record_via("fault", how, &["fault", "20", "64"]);
    let own = run.own.faults;
    let p = &mut run.procs[0];
    let ops = p.ops("read", "fill");
    assert_eq!(sum(&ops, |o| o.calls), n);
    // One fault per fresh page the kernel writes into, no more.
    assert_eq!(sum(&ops, |o| o.faults), n * pages, "{how}");
    // The program's count (getrusage around each call) also holds the faults of its own
    // stack and data touched while measuring.
    assert!((n * pages..=n * pages + 4).contains(&own), "{own}");
}

#[test]
fn a_contended_fcntl_lock_has_a_second_peak_that_goes_when_one_process_runs_alone() {
    let _g = serial();
    let mut two = record("lock2", true, &["lock", "200", "2"]);
    let mut one = record("lock1", true, &["lock", "200", "1"]);
    /// What a run's take_lock calls show.
    #[derive(Debug)]
    struct Calls {
        calls: u64,
        /// Calls in peaks whose mean is 100 us or more.
        in_slow_peaks: u64,
        /// Calls of 64 us or more (a bucket's lower bound), each.
        long: u64,
        /// Time runnable but not running inside the calls.
        runnable_ns: u64,
        /// Times the calls blocked, with a sleep site or not (its stack lost).
        sleeps: u64,
        sites: BTreeMap<String, u64>,
    }
    let of = |run: &mut Run| -> Calls {
        let mut c = Calls {
            calls: 0,
            in_slow_peaks: 0,
            long: 0,
            runnable_ns: 0,
            sleeps: 0,
            sites: BTreeMap::new(),
        };
        for p in &mut run.procs {
            let ops = p.ops("fcntl", "take_lock");
            let h = p.histogram(&ops);
            c.calls += h.count();
            c.in_slow_peaks += peaks(&h, &PeakOptions::default())
                .iter()
                .filter(|pk| pk.mean_ns() >= 100_000)
                .map(|pk| pk.count)
                .sum::<u64>();
            c.long += (h.buckets())
                .filter(|&(b, _)| h.resolution().lower_bound(b) >= 65_536)
                .map(|(b, _)| h.count_in(b))
                .sum::<u64>();
            c.runnable_ns += sum(&ops, |o| o.blocking.as_ref().unwrap().runnable_ns);
            c.sleeps += sum(&ops, |o| o.blocking.as_ref().unwrap().sleeps);
            for (k, v) in p.sleep_sites(&ops) {
                *c.sites.entry(k).or_default() += v;
            }
        }
        c
    };
    let two_calls = of(&mut two);
    let one_calls = of(&mut one);
    assert_eq!((two_calls.calls, one_calls.calls), (400, 200));
    // Contention: a peak of calls that waited for the other process's 2 ms hold.
    assert!(
        two_calls.in_slow_peaks * 20 >= two_calls.calls,
        "{two_calls:?}"
    );
    // Every call of 64 us or more slept at the lock (or pkgmon said which sleeps it could
    // not count), or waited that long for a CPU (a call of fcntl takes a few us of CPU).
    // Not every call in a slow peak: with a second test run beside this one a peak took in
    // a fast call or two (395 sleeps for more calls in slow peaks, twice).
    let waits: u64 = two_calls.sites.values().sum();
    // fcntl_setlk here (do_lock_file_wait inlined); a lock function by any name elsewhere.
    let at_lock: u64 = (two_calls.sites.iter())
        .filter(|(site, _)| site.contains("setlk") || site.contains("lock"))
        .map(|(_, n)| n)
        .sum();
    assert!(
        two_calls.sleeps + uncounted_sleeps(&two.stderr) + two_calls.runnable_ns / 50_000
            >= two_calls.long
            && at_lock * 10 >= waits * 9,
        "{two_calls:?}\n{}",
        two.stderr
    );
    // Alone: no such peak, and no waiting for the lock.
    assert_eq!(
        one_calls.in_slow_peaks,
        0,
        "{one_calls:?}\n{}\n{}",
        one.stderr,
        pkgprof(&["--blocking"], &one.dir)
    );
    let report = pkgprof(&["--latency-diff", &one.dir.to_string_lossy()], &two.dir);
    // The first pair rated by EMD (operations made in one run only, such as the parent's
    // wait4 when it returned before the end, come first unrated, by design).
    let first = report
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("EMD"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .find(|l| !l.trim_start().starts_with('-'))
        .unwrap_or("");
    assert!(first.contains("fcntl"), "{report}");
    // Its plot draws the system call that changed most, A filled and B outlined.
    let plot = two.dir.join("diff.svg");
    let arg = format!("--plot={}", plot.display());
    pkgprof(
        &["--latency-diff", &arg, &one.dir.to_string_lossy()],
        &two.dir,
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains(">fcntl: A "), "{svg}");
    assert!(svg.contains("stroke-width=\"2\""), "{svg}");
}

/// A 16 MiB file of random bytes on a disk (the target directory, not /tmp, which may be a
/// tmpfs), written through to the device.
fn disk_file() -> PathBuf {
    use std::io::Write as _;
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("latency-direct.data");
    let mut f = std::fs::File::create(&path).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..16 {
        for b in block.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b.copy_from_slice(&x.to_ne_bytes());
        }
        f.write_all(&block).unwrap();
    }
    f.sync_all().unwrap();
    path
}

#[test]
fn direct_reads_from_a_disk_sleep_and_are_woken_by_its_interrupt() {
    let _g = serial();
    let file = disk_file();
    for how in ["--blocking", "--blocking --latency-path=ring"] {
        direct_reads_via(how, &file);
    }
    let _ = std::fs::remove_file(&file);
}

/// The disk's interrupt wakes each read; with the wakers in BPF (the default) each has its
/// frames, on the ring path those fired on an idle CPU are inferred, without frames.
fn direct_reads_via(how: &str, file: &Path) {
    // A virtual disk's host may complete a read before the task gets to sleep (here, from
    // one run to the next, 11 to 200 of the 200 reads slept without a profiler): the run
    // is repeated until most of its reads slept, as the workload counted them.
    let mut run = record_via("direct", how, &["direct", "200", &file.to_string_lossy()]);
    for _ in 0..10 {
        if run.own.sleeps.unwrap() >= 150 {
            break;
        }
        eprintln!("{how}: {:?} of 200 reads slept; again", run.own.sleeps);
        // Its directory goes with it: the same one the next run writes.
        drop(run);
        run = record_via("direct", how, &["direct", "200", &file.to_string_lossy()]);
    }
    let own_mode = run.own.mode();
    let p = &mut run.procs[0];
    let ops = p.ops("pread64", "read_block");
    assert_eq!(sum(&ops, |o| o.calls), 200);
    let h = p.histogram(&ops);
    let main = peaks(&h, &PeakOptions::default())
        .into_iter()
        .max_by_key(|p| p.count)
        .unwrap();
    assert!(
        main.mode == own_mode || main.mode + 1 == own_mode,
        "{main:?} vs {own_mode}"
    );
    let sleeps = sum(&ops, |o| o.blocking.as_ref().unwrap().sleeps);
    let own_sleeps = run.own.sleeps.unwrap();
    assert!(
        own_sleeps >= 150,
        "the disk's reads did not sleep: {own_sleeps} of 200"
    );
    // Every sleep the workload counted (its voluntary switches during the reads).
    assert_eq!(sleeps, own_sleeps, "sleeps in 200 reads from the disk");
    // Every sleep has its waker: sampled when the disk's interrupt came while some task ran,
    // counted only when it came to an idle CPU (the kernel samples no tracepoint there).
    let woken: u64 = ops
        .iter()
        .flat_map(|o| &o.blocking.as_ref().unwrap().wakers)
        .map(|w| w.count)
        .sum();
    let report = pkgprof(&["--blocking"], &run.dir);
    assert_eq!(woken, sleeps, "{how}\n{report}");
    assert!(report.contains("(interrupt)"), "{report}");
    assert!(!report.contains("waker not seen"), "{report}");
    if how == "--blocking" {
        let wakers: Vec<_> = ops
            .iter()
            .flat_map(|o| &o.blocking.as_ref().unwrap().wakers)
            .collect();
        assert!(wakers.iter().all(|w| !w.frames.is_empty()), "{wakers:?}");
        assert!(!report.contains("frames not sampled"), "{report}");
    }
}
