//! End-to-end tests of `pkgmon`: the binary run on the collector's C workloads.
//!
//! These need perf_event_open with kernel sampling (root here); if it is refused they fail
//! with pkgmon's message, they never skip.
//!
//! Longer than 800 lines because its 14 tests share the workloads and the run-and-read
//! helpers below; other collector tests have files named after what they check (`truth.rs`,
//! `sampler.rs`, `latency.rs`, ...).

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use gmon_format::{AddressSize, Endian, MeasurementInfo, Profile, ReadOptions, Stacks, scan};

mod common;

use common::{PKGMON, scratch, serial, workload};

fn out_dir(tag: &str) -> PathBuf {
    let d = scratch().join(tag);
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs `pkgmon -o DIR -- PROGRAM ARGS...` to the end.
fn record(dir: &Path, program: &Path, args: &[&str]) -> Output {
    Command::new(PKGMON)
        .arg("-o")
        .arg(dir)
        .arg("--")
        .arg(program)
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Checks every file of a measurement directory parses; returns (pid, comm, samples) per
/// file set.
fn check_measurement(dir: &Path) -> Vec<(u32, String, u64)> {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| !n.ends_with(".tmp")),
        "temporary files left: {names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with("kallsyms.")));
    let m = scan(dir).unwrap();
    assert!(m.skipped.is_empty(), "{:?}", m.skipped);
    let opts = ReadOptions::new(AddressSize::U64, Endian::Little);
    let mut out = Vec::new();
    for pf in &m.processes {
        let mut samples = 0;
        for p in [&pf.user, &pf.kernel] {
            let data = std::fs::read(p.as_ref().expect("gmon file")).unwrap();
            let prof = Profile::parse(&data, &opts).unwrap();
            for r in prof.records() {
                if let gmon_format::Record::Histogram(h) = r.unwrap().1 {
                    samples += h.bins.iter().map(u64::from).sum::<u64>();
                }
            }
        }
        let data = std::fs::read(pf.stacks.as_ref().expect("stacks file")).unwrap();
        let stacks = Stacks::parse(&data).unwrap();
        let in_stacks: u64 = stacks.records().map(|r| r.unwrap().1.samples).sum();
        assert_eq!(in_stacks, samples);
        let info = MeasurementInfo::parse(&std::fs::read(pf.info.as_ref().expect("info")).unwrap())
            .unwrap();
        assert_eq!(info.process.pid, pf.pid);
        out.push((pf.pid, pf.comm.to_string(), samples));
    }
    out
}

#[test]
fn profiles_a_command_and_passes_its_status_through() {
    let _s = serial();
    let dir = out_dir("run");
    let o = record(&dir, &workload("forker"), &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let sets = check_measurement(&dir);
    assert_eq!(sets.len(), 3, "{sets:?}\n{err}");
    for (pid, comm, samples) in &sets {
        assert_eq!(comm, "forker");
        assert!(*samples >= 200, "{pid}: {samples}");
        assert!(
            err.contains(&format!("pkgmon: pid {pid} (forker)")),
            "pid {pid} not announced:\n{err}"
        );
    }
    assert!(err.contains("pkgmon: 3 processes, "), "{err}");
    assert!(err.contains(" 0 lost, 0 throttled, "), "{err}");
    // Four per process, the kernel symbols and the vDSO image.
    // 4 per process, the kernel symbols, the vDSO and the manifest.
    assert!(err.contains("pkgmon: wrote 15 files ("), "{err}");
    // The files are listed only with -v; the command to run next names the command's pid
    // and the directory (not pkgmon.data, which pkgprof reads by default).
    assert!(err.contains(" (-v lists them)\n"), "{err}");
    assert!(!err.contains("  gmon.out."), "{err}");
    let next = err
        .lines()
        .find_map(|l| l.strip_prefix("pkgmon: report with: pkgprof -b --pid "))
        .unwrap_or_else(|| panic!("no next command:\n{err}"));
    let (pid, shown_dir) = next.split_once(' ').expect("pid and directory");
    assert!(
        sets.iter().any(|(p, _, _)| p.to_string() == pid),
        "{pid} is not one of {sets:?}"
    );
    assert_eq!(shown_dir, dir.to_str().unwrap());
    let listing = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(["-b", "-p", "--pid", pid, shown_dir])
        .output()
        .unwrap();
    assert_eq!(listing.status.code(), Some(0), "{}", stderr(&listing));
    let verbose = Command::new(PKGMON)
        .arg("-v")
        .arg("-o")
        .arg(out_dir("verbose"))
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    let err = stderr(&verbose);
    assert!(err.contains("  manifest.sha256 "), "{err}");
    assert!(
        !err.contains('\r'),
        "no progress line when stderr is not a terminal"
    );

    let o = Command::new(PKGMON)
        .arg("-o")
        .arg(out_dir("status"))
        .args(["--", "/bin/sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = Command::new(PKGMON)
        .arg("-o")
        .arg(out_dir("status"))
        .args(["--", "/bin/sh", "-c", "kill -TERM $$"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(128 + 15), "{}", stderr(&o));
    // Without -o, into pkgmon.data; a command that cannot run leaves no measurement there.
    let cwd = out_dir("default-dir");
    std::fs::create_dir_all(&cwd).unwrap();
    let o = Command::new(PKGMON)
        .args(["--", "/nonexistent/program"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127));
    assert!(
        stderr(&o).starts_with("pkgmon: cannot run /nonexistent/program: "),
        "{}",
        stderr(&o)
    );
    let left: Vec<_> = std::fs::read_dir(cwd.join("pkgmon.data"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Nothing to profile is a usage error, like any other (--help's "2 for a usage error").
    let o = Command::new(PKGMON).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing to profile"), "{}", stderr(&o));
}

#[test]
fn sigint_mid_run_still_writes_complete_files() {
    let _s = serial();
    let dir = out_dir("interrupted");
    let child = Command::new(PKGMON)
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(workload("cpu"))
        .arg("20000")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(600));
    // Safety: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    assert!(err.contains("interrupted; writing the files"), "{err}");
    // The command was stopped by pkgmon (SIGTERM): 128 + 15.
    assert_eq!(o.status.code(), Some(143), "{err}");
    let sets = check_measurement(&dir);
    assert_eq!(sets.len(), 1, "{sets:?}");
    // How much CPU the workload got in 0.6 s depends on the machine's load; it got some.
    assert!(sets[0].2 >= 10, "{sets:?}");
}

#[test]
fn attaches_to_a_running_process_for_a_duration() {
    let _s = serial();
    let mut target = Command::new(workload("cpu")).arg("5000").spawn().unwrap();
    let dir = out_dir("attach");
    let o = Command::new(PKGMON)
        .arg("-o")
        .arg(&dir)
        .args(["--duration", "0.5", "-p"])
        .arg(target.id().to_string())
        .output()
        .unwrap();
    let _ = target.kill();
    let _ = target.wait();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let sets = check_measurement(&dir);
    assert_eq!(sets.len(), 1, "{sets:?}\n{err}");
    let (pid, comm, samples) = &sets[0];
    assert_eq!((*pid, comm.as_str()), (target.id(), "cpu"));
    // At most 0.5 s of one thread's CPU time at 1000 Hz, and some of it (load varies).
    assert!((10..=600).contains(samples), "{samples} samples in 0.5 s");
}

#[test]
fn refusal_is_explained() {
    let _s = serial();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // As an unprivileged user (nobody), kernel sampling needs paranoid <= 1.
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", PKGMON])
        .args(["-o", "/nonexistent-dir", "--", "/bin/true"])
        .output()
        .unwrap();
    let err = stderr(&o);
    if paranoid >= 2 {
        assert_eq!(o.status.code(), Some(125), "{err}");
        assert!(
            err.starts_with(&format!(
                "pkgmon: perf_event_open was refused (perf_event_paranoid={paranoid}): run as root or set kernel.perf_event_paranoid to 1 or lower"
            )),
            "{err}"
        );
    } else {
        assert!(err.contains("cannot create /nonexistent-dir"), "{err}");
    }
}

/// Histogram samples of a gmon file.
fn gmon_samples(path: &Path) -> u64 {
    let data = std::fs::read(path).unwrap();
    let prof = Profile::parse(&data, &ReadOptions::new(AddressSize::U64, Endian::Little)).unwrap();
    let mut n = 0;
    for r in prof.records() {
        match r.unwrap().1 {
            gmon_format::Record::Histogram(h) => n += h.bins.iter().map(u64::from).sum::<u64>(),
            gmon_format::Record::Arc(a) => assert!(
                a.from_pc >= 0x8000_0000_0000_0000,
                "only kernel arcs in a system-wide kernel file"
            ),
            gmon_format::Record::BasicBlocks(_) => panic!("basic blocks"),
        }
    }
    n
}

/// System CPU time of `pid` so far, in ns, from `/proc/PID/stat` (clock ticks of 10 ms).
fn system_cpu_ns(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    // `rest` starts at field 3 (state); stime is field 15.
    let ticks: u64 = rest
        .split_whitespace()
        .nth(15 - 3)
        .unwrap()
        .parse()
        .unwrap();
    // Safety: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ticks * 1_000_000_000 / hz
}

#[test]
fn system_wide_puts_other_kernel_work_in_the_k_files() {
    let _s = serial();
    // A process not asked for, busy in the kernel. Under load it may get little CPU while
    // pkgmon runs, so its system time is read around each run and the samples expected from
    // it scale with what it got; a run in which it got less than 20 ms is repeated.
    let mut other = Command::new(workload("syscall"))
        .arg("60000")
        .spawn()
        .unwrap();
    let pid = other.id();
    let t0 = Instant::now();
    while system_cpu_ns(pid) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the other process never ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut runs = Vec::new();
    let (o, dir, got_ns, wall_ns) = loop {
        // A fresh directory each time: a repeated run must not see the last one's files.
        let dir = out_dir("system");
        let before = system_cpu_ns(pid);
        let t = Instant::now();
        let o = Command::new(PKGMON)
            .arg("-a")
            .arg("-o")
            .arg(&dir)
            .arg("--")
            .arg(workload("cpu"))
            .arg("300")
            .output()
            .unwrap();
        let got_ns = system_cpu_ns(pid) - before;
        let wall_ns = t.elapsed().as_nanos() as u64;
        runs.push(got_ns);
        if got_ns >= 20_000_000 || runs.len() == 5 {
            break (o, dir, got_ns, wall_ns);
        }
    };
    let _ = other.kill();
    let _ = other.wait();
    assert!(
        got_ns >= 20_000_000,
        "the other process got too little system time in every run (ns): {runs:?}"
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let sets = check_measurement(&dir);
    assert_eq!(sets.len(), 1, "only the command gets files: {sets:?}");
    assert_eq!(sets[0].1, "cpu");
    assert!(sets[0].2 >= 10, "{sets:?}");
    let m = scan(&dir).unwrap();
    let other_samples = gmon_samples(m.kernel_other.as_ref().expect("gmon.out.-k.other"));
    let system_samples = gmon_samples(m.kernel_system.as_ref().expect("gmon.out.-k.kernel"));
    assert!(
        err.contains(&format!(
            "pkgmon: kernel samples for no process: {system_samples}, for other processes: {other_samples}"
        )),
        "{err}"
    );
    // pkgmon sampled only while the command ran (its info file's start and end), a part of
    // the measured run (which includes starting and writing): expect the other process's
    // system time at its average rate over the run for that part, at 1000 samples per second,
    // and allow a third of it (the rate varies under load; /proc counts whole ticks).
    let info = m.processes[0].info.as_ref().unwrap();
    let info = MeasurementInfo::parse(&std::fs::read(info).unwrap()).unwrap();
    let sampled_ns =
        info.process.end_monotonic_ns.unwrap() - info.process.start_monotonic_ns.unwrap();
    let expected = (got_ns as f64 * sampled_ns as f64 / wall_ns as f64 / 1e6) as u64;
    assert!(
        other_samples >= 10 && other_samples * 3 >= expected,
        "the other process's kernel time: {other_samples} samples, {expected} expected from \
         {got_ns} ns of system time in {wall_ns} ns, {sampled_ns} ns of them sampled"
    );
    assert!(
        !err.contains(&format!("pkgmon: pid {pid} ")),
        "a process not asked for was announced:\n{err}"
    );
}

#[test]
fn a_set_uid_command_is_reported_unprofiled() {
    use std::os::unix::fs::PermissionsExt;
    let _s = serial();
    // A copy of the CPU loop owned by nobody, set-uid: the kernel detaches perf events when
    // root execs it, so its CPU time has no samples.
    let exe = scratch().join("cpu_suid");
    std::fs::copy(workload("cpu"), &exe).unwrap();
    std::os::unix::fs::chown(&exe, Some(65534), None).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let o = record(&out_dir("suid"), &exe, &["300"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("(cpu_suid) used ") && err.contains("exec'd a set-uid or set-gid program"),
        "{err}"
    );
    // An ordinary command gets no such warning.
    let o = record(&out_dir("suid"), &workload("cpu"), &["300"]);
    assert!(!stderr(&o).contains("set-uid"), "{}", stderr(&o));
    // Nor does one whose time went to threads shorter than a sample period, each of which
    // the kernel never samples: the warning says that instead.
    let o = record(&out_dir("suid"), &workload("threadstorm"), &["400"]);
    let err = stderr(&o);
    assert!(
        err.contains("(threadstorm) used ")
            && err.contains("threads that each ran less than a sample period")
            && !err.contains("set-uid"),
        "{err}"
    );
}

/// Names of a `-b -p` flat profile.
fn flat_names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| l.split_whitespace().last().map(str::to_owned))
        .collect()
}

#[test]
fn the_images_of_a_process_that_execs_are_labelled_apart() {
    let _s = serial();
    let dir = out_dir("exec");
    let o = record(
        &dir,
        &workload("execer"),
        &[workload("cpu").to_str().unwrap(), "200"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let sets = check_measurement(&dir);
    let pid = sets[0].0;
    let comms: Vec<&str> = sets.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(comms, ["cpu", "execer"], "{sets:?}");
    let r = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(["-b", "-p", "--pid", &pid.to_string()])
        .arg(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let names = flat_names(&out);
    // Both programs have a `spin`: the exec'd one (the process's last image) keeps the plain
    // label, the one it replaced carries its command name.
    // (gcc may specialise the execer's copy: `spin.constprop.0`.)
    assert!(names.contains(&format!("{pid}u:spin")), "{out}");
    let old = names
        .iter()
        .find(|n| n.starts_with(&format!("{pid}(execer)u:spin")))
        .unwrap_or_else(|| panic!("{out}"))
        .clone();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a name appears twice:\n{out}");
    assert!(
        out.contains(&format!(
            "Process {pid} (execer): {}",
            workload("execer").display()
        )) && out.contains(&format!(
            "    labels:           {pid}(execer)u: and {pid}(execer)k: (process {pid} ran another command after this one)"
        )),
        "{out}"
    );
    // A symbol specification with such a label names the function.
    let r = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(["-b", "-Q", &format!("-p{old}"), "--pid", &pid.to_string()])
        .arg(&dir)
        .output()
        .unwrap();
    let only = flat_names(&String::from_utf8_lossy(&r.stdout));
    assert_eq!(only, [old], "{}", String::from_utf8_lossy(&r.stderr));
}

/// `(name, self seconds)` of the lines of a `-b -p` flat profile.
fn flat_self_seconds(listing: &str) -> Vec<(String, f64)> {
    listing
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((w.last()?.to_string(), w.get(2)?.parse().ok()?))
        })
        .collect()
}

#[test]
fn the_vdso_is_saved_and_symbolized() {
    let _s = serial();
    let dir = out_dir("vdso");
    let o = record(&dir, &workload("clock"), &["300"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let sets = check_measurement(&dir);
    let pid = sets[0].0;
    let info =
        MeasurementInfo::parse(&std::fs::read(dir.join(format!("gmon.out.{pid}.clock"))).unwrap())
            .unwrap();
    let vdso = info
        .mappings
        .iter()
        .find(|m| m.path.as_deref() == Some(b"[vdso]".as_slice()))
        .expect("a [vdso] mapping");
    let id = vdso.build_id.as_deref().expect("the vdso's build-id");
    let saved = dir.join(gmon_format::vdso_file_name(id));
    assert!(saved.is_file(), "{} missing:\n{err}", saved.display());
    let report = |force: &[&str]| {
        let r = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
            .args(["-b", "-p", "--pid", &pid.to_string()])
            .args(force)
            .arg(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&r.stderr).into_owned();
        assert!(r.status.success(), "{err}");
        (String::from_utf8_lossy(&r.stdout).into_owned(), err)
    };
    let (out, _) = report(&[]);
    let flat = flat_self_seconds(&out);
    // The vDSO's clock_gettime (an alias of __vdso_clock_gettime) has most of the time;
    // libc's wrapper is `clock_gettime@@GLIBC_2.17`.
    let in_vdso: f64 = flat
        .iter()
        .filter(|(n, _)| {
            n == &format!("{pid}u:clock_gettime") || n == &format!("{pid}u:__vdso_clock_gettime")
        })
        .map(|(_, s)| s)
        .sum();
    assert!(in_vdso >= 0.1, "{out}");
    assert!(!out.contains(&format!("{pid}u:[vdso]")), "{out}");
    // Without the saved image the measurement is incomplete; forced, the vDSO is a
    // pseudo-function again.
    std::fs::remove_file(&saved).unwrap();
    let (out, err) = report(&["--force"]);
    assert!(out.contains(&format!("{pid}u:[vdso]")), "{out}");
    assert!(err.contains("is NOT a complete measurement"), "{err}");
}

#[test]
fn without_taskstats_counters_come_from_proc_and_pkgmon_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let _s = serial();
    // As nobody, user-space sampling of one's own processes is allowed
    // (perf_event_paranoid <= 2) but taskstats registration (CAP_NET_ADMIN) is not.
    let dir = out_dir("no-taskstats");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The directory must be nobody's own: pkgmon refuses to write into another user's.
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", PKGMON])
        .arg("-u")
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(workload("storm"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("pkgmon: warning: taskstats exit records refused (")
            && err.contains("missing for processes that lived less than one poll interval"),
        "{err}"
    );
    let m = scan(&dir).unwrap();
    assert_eq!(m.processes.len(), 51, "{err}");
    let mut from_proc = 0;
    for pf in &m.processes {
        let info =
            MeasurementInfo::parse(&std::fs::read(pf.info.as_ref().unwrap()).unwrap()).unwrap();
        assert!(info.counters.taskstats_refused);
        match info.counters.source {
            Some(gmon_format::CounterSource::Proc) => from_proc += 1,
            None => assert_eq!(info.counters.user_cpu_ns, None),
            other => panic!("source {other:?}"),
        }
    }
    // The launched command's counters are read while it is a zombie.
    assert!(from_proc >= 1);
}

/// A pid reused during the measurement (in a pid namespace of the run's own, where the
/// workload sets `ns_last_pid`): each process has its own file set and label, `--pid N` and
/// `--pid N_1` report them apart, and the second one's rename (`prctl`) is recorded.
#[test]
fn a_reused_pid_gets_a_file_set_and_a_label_of_its_own() {
    let _s = serial();
    let dir = out_dir("reused-pid");
    let o = Command::new("unshare")
        .args(["--fork", "--pid", "--mount-proc"])
        .arg(PKGMON)
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(workload("reuse"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let pid: u32 = err
        .lines()
        .find_map(|l| l.strip_prefix("reused "))
        .unwrap_or_else(|| panic!("the workload did not reuse its pid:\n{err}"))
        .parse()
        .unwrap();
    let sets = check_measurement(&dir);
    let m = scan(&dir).unwrap();
    let instances: Vec<(u32, u32)> = m
        .processes
        .iter()
        .filter(|p| p.pid == pid)
        .map(|p| (p.pid, p.instance))
        .collect();
    assert_eq!(instances, [(pid, 0), (pid, 1)], "{sets:?}");
    for p in m.processes.iter().filter(|p| p.pid == pid) {
        assert!(
            p.user
                .as_ref()
                .unwrap()
                .to_string_lossy()
                .ends_with(&format!(
                    "gmon.out.{}u.reuse",
                    gmon_format::process_label(pid, p.instance)
                )),
            "{:?}",
            p.user
        );
        let info =
            MeasurementInfo::parse(&std::fs::read(p.info.as_ref().unwrap()).unwrap()).unwrap();
        let renames: Vec<&[u8]> = info.renames.iter().map(|r| r.comm.as_bytes()).collect();
        let want: &[&[u8]] = if p.instance == 1 { &[b"renamed"] } else { &[] };
        assert_eq!(renames, want, "instance {}", p.instance);
    }
    for (label, samples_at_least) in [(pid.to_string(), 100), (format!("{pid}_1"), 100)] {
        let r = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
            .args(["-b", "-p", "--pid", &label])
            .arg(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&r.stdout);
        assert!(r.status.success(), "{}", stderr(&r));
        assert!(
            text.starts_with(&format!("Process {label} (reuse)")),
            "{text}"
        );
        let names = flat_names(&text);
        assert!(
            names
                .iter()
                .all(|n| n.starts_with(&format!("{label}u:"))
                    || n.starts_with(&format!("{label}k:"))),
            "{names:?}"
        );
        let own: u64 = sets
            .iter()
            .filter(|s| s.0 == pid)
            .map(|s| s.2)
            .min()
            .unwrap();
        assert!(own >= samples_at_least, "{sets:?}");
    }
}

/// Bad arguments are usage errors (status 2) that say what would be accepted; none needs
/// perf_event_open.
#[test]
fn bad_arguments_say_what_is_accepted() {
    let run = |args: &[&str]| {
        let o = Command::new(PKGMON).args(args).output().unwrap();
        (o.status.code(), stderr(&o))
    };
    let limit = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .unwrap()
        .trim()
        .to_string();
    for hz in ["-5", "0", "99999999999"] {
        let (status, err) = run(&["-F", hz, "--", "/bin/true"]);
        assert_eq!(status, Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "{hz} is out of range; give 1 to {limit} samples per second"
            )),
            "{err}"
        );
        assert!(
            !err.contains("-- -5"),
            "no advice to pass -5 as the command: {err}"
        );
    }
    let (status, err) = run(&["-p", "999999999"]);
    assert_eq!(status, Some(2), "{err}");
    assert!(err.contains("no process has pid 999999999"), "{err}");
    assert!(!err.contains("exited"), "{err}");
}

/// Names as perf prints them: a PLT stub is `strlen@plt` (never the `_init` before the PLT),
/// a 64-bit system call `__x64_sys_getppid` (not its `__ia32_sys_` alias), the vDSO's code
/// `__vdso_clock_gettime`, called by libc's `clock_gettime`, a compiler's clone
/// `scaled.isra.0` under its own name.
#[test]
fn names_are_the_ones_perf_prints() {
    let _s = serial();
    let dir = out_dir("names-run");
    let o = Command::new(PKGMON)
        .args(["-F", "10000", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(workload("names"))
        .arg("1.5")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pid = check_measurement(&dir)[0].0;
    let r = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(["-b", "--pid", &pid.to_string()])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    let names = flat_names(&text);
    let has = |n: &str| names.iter().any(|x| x == &format!("{pid}{n}"));
    assert!(
        has("u:strlen@plt") || has("u:getppid@plt"),
        "no PLT stub named: {names:?}"
    );
    assert!(!has("u:_init"), "{names:?}");
    assert!(has("k:__x64_sys_getppid"), "{names:?}");
    assert!(names.iter().all(|n| !n.contains("__ia32_sys")), "{names:?}");
    assert!(has("u:__vdso_clock_gettime"), "{names:?}");
    assert!(
        text.contains(&format!("{pid}u:clock_gettime")) && !has("u:[vdso]"),
        "{text}"
    );
    // A clone is charged to itself (gprof's table would drop the local `.isra.0` name and
    // give its quarter of the run to whatever function precedes it in the file).
    let flat = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(["-b", "-p", "--pid", &pid.to_string()])
        .arg(&dir)
        .output()
        .unwrap();
    let flat = String::from_utf8_lossy(&flat.stdout);
    let self_share = flat_self_seconds(&flat);
    let total: f64 = self_share.iter().map(|(_, s)| s).sum();
    let clone: f64 = self_share
        .iter()
        .filter(|(n, _)| n == &format!("{pid}u:scaled.isra.0"))
        .map(|(_, s)| s)
        .sum();
    assert!(clone > 0.15 * total, "{clone} of {total} s\n{flat}");
}

/// A stripped program is named as such, with what to do: once per process with `--pid`, once
/// for all its processes with `--system` (not once per process: a fork-heavy program or a
/// continuous directory would repeat it hundreds of times).
#[test]
fn a_stripped_program_is_said_once_with_what_to_do() {
    let _s = serial();
    let stripped = scratch().join("forker-stripped");
    let st = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(workload("forker"))
        .status()
        .unwrap();
    assert!(st.success());
    let dir = out_dir("stripped");
    let o = record(&dir, &stripped, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sets = check_measurement(&dir);
    let pids: Vec<u32> = sets.iter().map(|s| s.0).collect();
    assert_eq!(pids.len(), 3, "{sets:?}");
    let warnings = |args: &[&str]| -> Vec<String> {
        let r = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
            .args(["-b", "-p"])
            .args(args)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        String::from_utf8_lossy(&r.stderr)
            .lines()
            .filter(|l| l.contains("forker-stripped has no symbol table"))
            .map(str::to_owned)
            .collect()
    };
    // Warned of are the processes with samples in the program's own code. The two spinners
    // always have hundreds; the reading child spends ~97% in the kernel and its few user
    // samples mostly in libc and the vDSO: in some runs none is in the program.
    let mut named = Vec::new();
    for p in &pids {
        let one = warnings(&["--pid", &p.to_string()]);
        assert!(one.len() <= 1, "{one:?}");
        let Some(one) = one.first() else { continue };
        assert!(
            one.starts_with(&format!(
                "pkgprof: warning: process {p}: {} has no symbol table (stripped)",
                stripped.display()
            )) && one.contains("--object-path DIR"),
            "{one}"
        );
        named.push(*p);
    }
    named.sort_unstable();
    assert!(named.len() >= 2, "{named:?}");
    let all = warnings(&["--system"]);
    assert_eq!(all.len(), 1, "{all:?}");
    let named: Vec<String> = named.iter().map(u32::to_string).collect();
    assert!(
        all[0].starts_with(&format!(
            "pkgprof: warning: {} processes ({}): {} has no symbol table",
            named.len(),
            named.join(", "),
            stripped.display()
        )),
        "{}",
        all[0]
    );
}

/// `--max-stack N` lets user stacks be unwound N frames deep, not only the kernel's chains: a
/// 1,500-level recursion without frame pointers (24 KiB of stack, inside the copy) was cut at
/// 1,024 frames whatever was asked, and the summary said to raise --max-stack.
#[test]
fn max_stack_sets_how_deep_user_stacks_are_unwound() {
    let _s = serial();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../collect-perf/tests/workloads/deep.c");
    let deep = common::compile(&src, "deep-nofp", &["-fomit-frame-pointer"]);
    let truncated = |tag: &str, extra: &[&str]| -> (u64, u64, String) {
        let dir = out_dir(tag);
        let o = Command::new(PKGMON)
            .args(["-o", dir.to_str().unwrap(), "-F", "2000"])
            .args(extra)
            .arg("--")
            .arg(&deep)
            .args(["1500", "100"])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        let m = scan(&dir).unwrap();
        let info = m.processes[0].info.clone().unwrap();
        let s = MeasurementInfo::parse(&std::fs::read(info).unwrap())
            .unwrap()
            .sampling;
        (
            s.truncated_stacks.unwrap(),
            s.truncated_callchain_limit.unwrap(),
            err,
        )
    };
    let (cut, at_limit, err) = truncated("deep-1024", &[]);
    assert!(cut > 0 && cut == at_limit, "{err}");
    assert!(err.contains("--max-stack"), "{err}");
    let (cut, _, err) = truncated("deep-2000", &["--max-stack", "2000"]);
    assert_eq!(cut, 0, "{err}");
}
