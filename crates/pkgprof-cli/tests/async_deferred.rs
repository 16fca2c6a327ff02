//! `pkgmon --async=workqueue,timer,block` on workloads whose kernel work is deferred
//! (tests/workloads/deferred.c): a writer whose dirty pages a kworker writes back (syncfs
//! queues the flusher's work item), a TCP sender whose bursts its socket's pacing timer
//! sends from the timer's callback, in whatever task runs (a spinning victim on the same
//! CPU), and a reader of a loop device made by the test, whose requests complete in the
//! BLOCK softirq in ksoftirqd. Ground truth by construction: the functions counted below
//! (`wb_workfn`, `tcp_pace_kick`) run only for work items and timers of those processes
//! during the run, in a kworker or in the victim, never in the owner's own context; the
//! loop device's completions run in ksoftirqd and are all the reader's (other sessions'
//! disk completions run mostly at interrupt exit in whatever task was running). Samples are
//! counted only in the processes the test started, plus the kernel threads' share left in
//! the system-wide files.
//!
//! These need root, as tests/async_net.rs; they never skip.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use gmon_format::{BoundaryKind, Stacks};

mod common;

use common::{MeasuredKernel, PKGMON, TCP_DATA, conserved_moves, scratch, serial};

fn deferred() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/deferred.c");
        common::compile(&src, "deferred", &[])
    })
}

/// One run: the measurement, the pids by role, pkgmon's standard error.
struct Run {
    dir: PathBuf,
    pids: Vec<(String, u32)>,
    stderr: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn run(mode: &str, asynchronous: Option<&str>) -> Run {
    let name = format!("{mode}-{}", asynchronous.unwrap_or("plain"));
    let dir = scratch().join(&name);
    let pidfile = scratch().join(format!("{name}.pids"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = Command::new(PKGMON);
    match asynchronous {
        Some(kinds) => cmd.arg(format!("--async={kinds}")),
        None => cmd.arg("-a"),
    };
    cmd.args(["-F", "4000", "--stack-size", "512", "-o"])
        .arg(&dir)
        .arg("--");
    // On CPU 0, its completions sent back to CPU 0 (`rq_affinity` 2): there while it waits
    // for them, in the idle task when nothing else runs.
    let idle = mode == "direct-idle";
    let mode = if idle { "direct" } else { mode };
    cmd.arg(deferred())
        // The pacing and completion work is a few percent of a CPU: longer, for enough
        // samples.
        .args([mode, if mode == "writeback" { "1.5" } else { "2.5" }])
        .arg(&pidfile);
    let file = scratch().join(format!("{name}.dirty"));
    let device =
        (mode == "direct").then(|| LoopDevice::new(&scratch().join(format!("{name}.img")), idle));
    match &device {
        Some(d) if idle => cmd.arg(&d.path).arg("0"),
        Some(d) => cmd.arg(&d.path),
        None if mode == "writeback" => cmd.arg(&file),
        None => &mut cmd,
    };
    let out = cmd.output().unwrap();
    drop(device);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "pkgmon failed: {stderr}");
    let pids = std::fs::read_to_string(&pidfile)
        .unwrap()
        .lines()
        .map(|l| {
            let (what, pid) = l.split_once(' ').unwrap();
            (what.to_string(), pid.parse().unwrap())
        })
        .collect();
    std::fs::remove_file(&pidfile).unwrap();
    Run { dir, pids, stderr }
}

/// A loop device over a sparse 16 MiB file (its reads come from the page cache, never the
/// disk), detached and removed when dropped; with `same_cpu`, its requests complete on the
/// CPU that issued them (`rq_affinity` 2: the loop worker sends the completion there).
struct LoopDevice {
    path: PathBuf,
    file: PathBuf,
}

impl LoopDevice {
    fn new(file: &Path, same_cpu: bool) -> LoopDevice {
        std::fs::File::create(file)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        if same_cpu {
            let name = path.file_name().unwrap().to_str().unwrap();
            std::fs::write(format!("/sys/block/{name}/queue/rq_affinity"), "2").unwrap();
        }
        LoopDevice {
            path,
            file: file.to_path_buf(),
        }
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The pids of the kernel's softirq threads (`ksoftirqd/N`).
fn ksoftirqd_pids() -> Vec<u32> {
    (std::fs::read_dir("/proc").unwrap().flatten())
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            comm.starts_with("ksoftirqd/").then_some(pid)
        })
        .collect()
}

impl Run {
    fn pid(&self, role: &str) -> u32 {
        self.pids.iter().find(|p| p.0 == role).unwrap().1
    }

    /// Per process started by the test: samples whose kernel stack holds `function`, and of
    /// them those recorded as moved asynchronous work of `kind`.
    fn samples_in(&self, function: &str, kind: BoundaryKind) -> Vec<(u32, u64, u64)> {
        self.samples_in_all(&[&[function]], kind)
    }

    /// As [`Run::samples_in`], for stacks holding a function of each list of `functions`.
    fn samples_in_all(&self, functions: &[&[&str]], kind: BoundaryKind) -> Vec<(u32, u64, u64)> {
        let m = gmon_format::scan(&self.dir).unwrap();
        let syms = MeasuredKernel::of(&self.dir);
        let mut out = Vec::new();
        for f in &m.processes {
            if !self.pids.iter().any(|p| p.1 == f.pid) {
                continue;
            }
            let data = std::fs::read(f.stacks.as_ref().unwrap()).unwrap();
            let stacks = Stacks::parse(&data).unwrap();
            let (mut all, mut moved) = (0, 0);
            for r in stacks.records() {
                let (_, r) = r.unwrap();
                let kernel = r.kernel.to_vec();
                if (functions.iter()).all(|f| kernel.iter().any(|&a| syms.is_in(a, f))) {
                    all += r.samples;
                    if r.boundary == Some(kind) {
                        moved += r.samples;
                    }
                }
            }
            out.push((f.pid, all, moved));
        }
        out
    }

    /// Samples holding `function` left in the system-wide files (kernel threads' own work, and
    /// the residue): the arcs into it, each counted once per sample.
    fn left_in_system(&self, function: &str) -> u64 {
        let m = gmon_format::scan(&self.dir).unwrap();
        let syms = MeasuredKernel::of(&self.dir);
        let is = |a: u64| syms.is_in(a, &[function]);
        let mut n = 0;
        for f in [&m.kernel_system, &m.kernel_other].into_iter().flatten() {
            let data = std::fs::read(f).unwrap();
            let p =
                gmon_format::Profile::parse(&data, &gmon_format::ReadOptions::default()).unwrap();
            for r in p.records() {
                if let (_, gmon_format::Record::Arc(a)) = r.unwrap()
                    && is(a.self_pc)
                    && !is(a.from_pc)
                {
                    n += a.count;
                }
            }
        }
        n
    }

    fn pkgprof(&self, args: &[&str]) -> String {
        common::pkgprof_on(&self.dir, args)
    }
}

/// The owner's listing shows `OWNERk:[async <kind>]` calling the work's runner, and its
/// header the kind's line, received from someone else.
fn listing_shows(run: &Run, kind: &str, runners: &[&str]) {
    let owner = run.pid("owner").to_string();
    let listing = run.pkgprof(&["-b", "--pid", &owner]);
    let pseudo = format!("{owner}k:[async {kind}]");
    let entry = listing
        .lines()
        .position(|l| l.starts_with('[') && l.contains(&pseudo))
        .unwrap_or_else(|| panic!("no entry for {pseudo}: {listing}"));
    let child = listing.lines().nth(entry + 1).unwrap();
    assert!(
        runners
            .iter()
            .any(|r| child.contains(&format!("{owner}k:{r}"))),
        "{pseudo} calls no {runners:?}: {child}"
    );
    let line = listing
        .lines()
        .find(|l| l.starts_with(&format!("    async {kind}:")))
        .unwrap_or_else(|| panic!("no async {kind} line: {listing}"));
    assert!(line.contains(" from "), "{line}");
}

#[test]
fn a_writer_gets_the_kworkers_writeback_of_its_pages() {
    let _g = serial();
    let plain = run("writeback", None);
    let owner = plain.pid("owner");
    let before = plain.samples_in("wb_workfn", BoundaryKind::AsyncWorkqueue);
    let own: u64 = before.iter().filter(|r| r.0 == owner).map(|r| r.1).sum();
    let elsewhere = plain.left_in_system("wb_workfn");
    assert!(
        elsewhere >= 50 && own == 0,
        "without attribution the writeback should be the kworkers' ({elsewhere}), not the \
         writer's ({own})\n{}",
        plain.stderr
    );

    let run = run("writeback", Some("workqueue,timer"));
    let owner = run.pid("owner");
    let moves = conserved_moves(&run.dir);
    // As recorded, the writeback is the kworkers' again (in `-k.kernel`).
    common::as_recorded_is_exact(&run.dir, &[owner]);
    let got = run.samples_in("wb_workfn", BoundaryKind::AsyncWorkqueue);
    let (all, moved): (u64, u64) = got
        .iter()
        .filter(|r| r.0 == owner)
        .fold((0, 0), |a, r| (a.0 + r.1, a.1 + r.2));
    let left = run.left_in_system("wb_workfn");
    let report = format!(
        "writer {moved} of {all}, left in the system files {left}\n{}",
        run.stderr
    );
    eprintln!("writeback: writer {moved} of {all}, left in the system files {left}");
    assert!(moved >= 50, "too few: {report}");
    assert_eq!(moved, all, "{report}");
    assert!(
        moved * 10 >= (moved + left) * 9,
        "the writer got less than 90%: {report}"
    );
    assert!(
        run.stderr.contains("pkgmon: async workqueue: "),
        "{}",
        run.stderr
    );
    // The moves say from whom: kworkers (no process of the test) gave it.
    let received: u64 = moves
        .moves_of("workqueue")
        .filter(|m| m.beneficiary == Some(owner) && m.victim != Some(owner))
        .map(|m| m.samples)
        .sum();
    assert!(received >= moved, "{received} < {moved}: {report}");
    listing_shows(&run, "workqueue", &["process_one_work"]);
}

#[test]
fn a_paced_sender_gets_its_timers_callbacks_from_the_task_they_interrupted() {
    let _g = serial();
    let plain = run("pacing", None);
    let before = plain.samples_in("tcp_pace_kick", BoundaryKind::AsyncTimer);
    let owner = plain.pid("owner");
    let own: u64 = before.iter().filter(|r| r.0 == owner).map(|r| r.1).sum();
    let all: u64 = before.iter().map(|r| r.1).sum();
    assert!(
        all >= 40 && own * 2 <= all,
        "without attribution the sender should not have most of the pacing work: {before:?}\n{}",
        plain.stderr
    );

    // Timers alone: the acknowledgements that re-arm the pacing timer arrive in a receive
    // softirq, which says nothing of its owner (the timer keeps the sender, who armed it
    // first from its send).
    let run = run("pacing", Some("timer"));
    let owner = run.pid("owner");
    let victim = run.pid("victim");
    conserved_moves(&run.dir);
    let got = run.samples_in("tcp_pace_kick", BoundaryKind::AsyncTimer);
    let all: u64 = got.iter().map(|r| r.1).sum();
    let moved: u64 = got.iter().filter(|r| r.0 == owner).map(|r| r.2).sum();
    let kept: u64 = got.iter().filter(|r| r.0 == victim).map(|r| r.1).sum();
    let left = run.left_in_system("tcp_pace_kick");
    let total = all + left;
    let report = format!(
        "sender {moved}, victim kept {kept}, others {}, left in the system files {left}: {got:?}\n{}",
        all - moved - kept,
        run.stderr
    );
    eprintln!("pacing: sender {moved} of {total}, victim kept {kept}, system files {left}");
    assert!(total >= 40, "too few: {report}");
    assert!(
        moved * 10 >= total * 9,
        "the sender got less than 90%: {report}"
    );
    assert!(kept * 20 <= total, "the victim kept more than 5%: {report}");
    assert!(
        run.stderr.contains("pkgmon: async timer: "),
        "{}",
        run.stderr
    );
    listing_shows(
        &run,
        "timer",
        &["__run_hrtimer", "__hrtimer_run_queues", "call_timer_fn"],
    );
}

/// Shares of the paced stream's work in one run: of the pacing timer's callbacks
/// (`tcp_pace_kick`, in the test's processes and the system files), those moved to the
/// sender; of the receive softirq's work on data segments (in the test's processes), that
/// moved to the reader. Each (moved, all).
fn pacing_shares(run: &Run) -> ((u64, u64), (u64, u64)) {
    let (owner, reader) = (run.pid("owner"), run.pid("reader"));
    let timer = run.samples_in("tcp_pace_kick", BoundaryKind::AsyncTimer);
    let net = run.samples_in_all(TCP_DATA, BoundaryKind::AsyncNetRx);
    let moved_to =
        |rows: &[(u32, u64, u64)], pid| rows.iter().filter(|r| r.0 == pid).map(|r| r.2).sum();
    let all = |rows: &[(u32, u64, u64)]| rows.iter().map(|r| r.1).sum::<u64>();
    (
        (
            moved_to(&timer, owner),
            all(&timer) + run.left_in_system("tcp_pace_kick"),
        ),
        (moved_to(&net, reader), all(&net)),
    )
}

#[test]
fn receive_work_and_timers_attributed_together_go_where_each_goes_alone() {
    let _g = serial();
    let share = |(moved, all): (u64, u64)| moved as f64 / all.max(1) as f64;
    // Two shares agree within sampling noise: 3 standard deviations of the difference of two
    // binomial proportions (the pooled share), and never closer than 5 points are asked for.
    let close = |a: (u64, u64), b: (u64, u64)| {
        let p = (a.0 + b.0) as f64 / (a.1 + b.1).max(1) as f64;
        let n = 1.0 / a.1.max(1) as f64 + 1.0 / b.1.max(1) as f64;
        (share(a) - share(b)).abs() <= (3.0 * (p * (1.0 - p) * n).sqrt()).max(0.05)
    };
    // The paced stream's share of receive work varies from run to run (32 to 187 samples
    // here): a trio whose combined run has too few to compare is run again.
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.clear();
        for kinds in ["timer", "net", "net,timer"] {
            let run = run("pacing", Some(kinds));
            conserved_moves(&run.dir);
            let (timer, net) = pacing_shares(&run);
            eprintln!(
                "pacing --async={kinds}: timer {timer:?} to the sender, net {net:?} to the reader"
            );
            runs.push((kinds, timer, net, run.stderr.clone()));
        }
        let (_, timer, net, _) = &runs[2];
        if timer.1 >= 40 && net.1 >= 40 {
            break;
        }
    }
    let report = format!("{runs:#?}");
    let (_, timer_alone, _, _) = &runs[0];
    let (_, _, net_alone, _) = &runs[1];
    let (_, timer, net, _) = &runs[2];
    assert!(timer.1 >= 40 && net.1 >= 40, "too few: {report}");
    assert!(
        close(*timer, *timer_alone),
        "the sender's share of its timer's work moved beside receive work: {report}"
    );
    assert!(
        close(*net, *net_alone),
        "the reader's share of its receive work moved beside timers: {report}"
    );
    assert!(share(*timer) >= 0.9 && share(*net) >= 0.9, "{report}");
}

#[test]
fn a_direct_reader_gets_the_completions_of_its_requests() {
    let _g = serial();
    let plain = run("direct", None);
    let owner = plain.pid("owner");
    let before = plain.samples_in("blk_done_softirq", BoundaryKind::AsyncBlock);
    let own: u64 = before.iter().filter(|r| r.0 == owner).map(|r| r.1).sum();
    let elsewhere = plain.left_in_system("blk_done_softirq");
    assert!(
        elsewhere >= 20 && own * 4 <= elsewhere,
        "without attribution the completions should be ksoftirqd's ({elsewhere}), not the \
         reader's ({own})\n{}",
        plain.stderr
    );

    let run = run("direct", Some("block"));
    let owner = run.pid("owner");
    let moves = conserved_moves(&run.dir);
    common::as_recorded_is_exact(&run.dir, &[owner]);
    let got = run.samples_in("blk_done_softirq", BoundaryKind::AsyncBlock);
    let (all, moved): (u64, u64) = got
        .iter()
        .filter(|r| r.0 == owner)
        .fold((0, 0), |a, r| (a.0 + r.1, a.1 + r.2));
    // The completions ksoftirqd ran: where each went (the residue is `None`).
    let ksoftirqd = ksoftirqd_pids();
    let in_ksoftirqd: Vec<_> = moves
        .moves_of("block")
        .filter(|m| m.victim.is_some_and(|v| ksoftirqd.contains(&v)))
        .collect();
    let total: u64 = in_ksoftirqd.iter().map(|m| m.samples).sum();
    let to_reader: u64 = (in_ksoftirqd.iter())
        .filter(|m| m.beneficiary == Some(owner))
        .map(|m| m.samples)
        .sum();
    let report = format!(
        "reader {moved} of {all}; of ksoftirqd's {total}, {to_reader} to the reader\n{}",
        run.stderr
    );
    eprintln!("direct: {report}");
    assert!(moved >= 20, "too few: {report}");
    assert_eq!(moved, all, "{report}");
    assert!(
        to_reader * 10 >= total * 9,
        "the reader got less than 90% of ksoftirqd's completions: {report}"
    );
    assert!(run.stderr.contains("pkgmon: async block: "), "{report}");
    listing_shows(&run, "block", &["blk_done_softirq"]);
}

/// CPU 0's idle time so far, in clock ticks (`/proc/stat`).
fn cpu0_idle_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let line = stat.lines().find(|l| l.starts_with("cpu0 ")).unwrap();
    line.split_whitespace().nth(4).unwrap().parse().unwrap()
}

/// The `BLOCK` softirq runs in the idle task when the reader's CPU has nothing else to run:
/// perf misses some of its tracepoint hits there (a few hundred windows in 70,000 at load 3),
/// the BPF programs record them all, so every window is seen and its samples go to the
/// reader. On a busy machine CPU 0 is seldom idle:
/// the idle task's samples are required only when CPU 0 was idle a tenth of the run.
#[test]
fn completions_in_the_idle_task_go_to_the_reader() {
    let _g = serial();
    let before = cpu0_idle_ticks();
    let run = run("direct-idle", Some("block"));
    let idle_ticks = cpu0_idle_ticks() - before;
    let owner = run.pid("owner");
    let moves = conserved_moves(&run.dir);
    common::as_recorded_is_exact(&run.dir, &[owner]);
    let block = moves.kinds.iter().find(|k| k.kind == "block").unwrap();
    let cells: Vec<_> = moves.moves_of("block").collect();
    let sum = |f: &dyn Fn(&&gmon_format::async_moves::Move) -> bool| -> u64 {
        cells.iter().filter(|m| f(m)).map(|m| m.samples).sum()
    };
    let to_reader = sum(&|m| m.beneficiary == Some(owner));
    let idle = sum(&|m| m.victim.is_none());
    let idle_to_reader = sum(&|m| m.victim.is_none() && m.beneficiary == Some(owner));
    let report = format!(
        "{block:?}: {to_reader} samples to the reader, {idle_to_reader} of the idle task's \
         {idle}, CPU 0 idle {idle_ticks} ticks\n{}",
        run.stderr
    );
    eprintln!("direct-idle: {report}");
    // Every window the kernel ran was seen: none of its samples is unattributed for want of
    // its window.
    assert_eq!(block.counted, Some(block.windows), "{report}");
    assert!(block.windows > 0, "{report}");
    assert!(
        !block.residue.iter().any(|(r, _)| r == "window-unseen"),
        "{report}"
    );
    assert!(
        (run.stderr).contains("windows and completions recorded by BPF programs"),
        "{report}"
    );
    assert!(to_reader >= 20, "too few: {report}");
    // 2.5 s are 250 ticks at the usual 100 Hz.
    if idle_ticks >= 25 {
        assert!(idle_to_reader >= 5, "too few from the idle task: {report}");
    }
    assert!(
        idle_to_reader * 10 >= idle * 9,
        "the reader got less than 90% of the idle task's completions: {report}"
    );
    listing_shows(&run, "block", &["blk_done_softirq"]);
}
