//! End-to-end tests of the measurement writer: workloads recorded, written as a measurement
//! directory, and read back with gmon-format.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use collect_perf::{
    Aggregate, AggregateOptions, KernelSymbols, Recording, WriteOptions, WriteSummary, aggregate,
    write_measurement,
};
use gmon_format::{BoundaryKind, CounterSource, MeasurementInfo, Stacks, scan};

mod common;

use common::*;

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("collect-perf-measure-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Measured {
    dir: PathBuf,
    rec: Recording,
    agg: Aggregate,
    summary: WriteSummary,
}

/// The measurement directory (a few MiB: the kernel-symbol snapshot) goes with the test,
/// unless it fails.
impl Drop for Measured {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn measure(tag: &str, argv: &[&dyn AsRef<std::ffi::OsStr>]) -> Measured {
    let argv = args(argv);
    let rec = record(&argv, &config());
    let agg = aggregate(&rec, &AggregateOptions::default(), KernelSymbols::live());
    let dir = temp_dir(tag);
    let mut opts = WriteOptions::default();
    opts.dir = dir.clone();
    opts.argv = Some(argv);
    let summary = write_measurement(&rec, &agg, &opts).unwrap();
    Measured {
        dir,
        rec,
        agg,
        summary,
    }
}

/// Histogram sample total and arcs of a gmon file.
fn info(path: &Path) -> MeasurementInfo {
    MeasurementInfo::parse(&std::fs::read(path).unwrap()).unwrap()
}

/// The names of the files in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn syscall_workload_files_show_the_read_caller_and_the_time_split() {
    let _serial = serial();
    let exe = workload("syscall");
    let m = measure("syscall", &[&exe, &"800"]);
    let pid = m.rec.child.as_ref().unwrap().pid;
    let files = names(&m.dir);
    let boot = files
        .iter()
        .find(|n| n.starts_with("kallsyms."))
        .expect("kallsyms snapshot");
    assert_eq!(boot.len(), "kallsyms.".len() + 8);
    let ms = scan(&m.dir).unwrap();
    assert_eq!(ms.processes.len(), 1);
    let pf = &ms.processes[0];
    let inf = info(pf.info.as_ref().unwrap());
    // The vDSO image, named by the build-id of the process's [vdso] mapping.
    let vdso_id = inf
        .mappings
        .iter()
        .find(|m| m.path.as_deref() == Some(b"[vdso]".as_slice()))
        .and_then(|m| m.build_id.as_deref())
        .expect("the [vdso] mapping's build-id");
    assert_eq!(
        files,
        [
            format!("gmon.out.{pid}.syscall"),
            format!("gmon.out.{pid}k.syscall"),
            format!("gmon.out.{pid}s.syscall"),
            format!("gmon.out.{pid}u.syscall"),
            boot.clone(),
            gmon_format::MANIFEST_NAME.to_owned(),
            gmon_format::vdso_file_name(vdso_id),
        ]
    );
    // Complete: the manifest lists every file with its size and checksum.
    assert_eq!(ms.verify().unwrap(), gmon_format::Verification::Complete);
    // Private: the directory's files are 0600, the snapshot included.
    for name in &files {
        use std::os::unix::fs::MetadataExt;
        let mode = std::fs::metadata(m.dir.join(name)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
    }
    assert_eq!(inf.process.pid, pid);
    assert_eq!(
        inf.process.argv.as_ref().unwrap()[1],
        b"800".to_vec(),
        "argv of the launched command"
    );
    assert_eq!(
        inf.process.exe.as_deref(),
        Some(exe.to_str().unwrap().as_bytes())
    );
    assert!(inf.process.exe_build_id.is_some());
    assert_eq!(inf.kernel.symbols_file.as_deref(), Some(boot.as_str()));
    assert!(
        inf.mappings
            .iter()
            .any(|mp| mp.path.as_deref() == Some(b"[vdso]".as_slice()))
    );
    let (user_samples, user_arcs) = gmon(pf.user.as_ref().unwrap());
    let (kernel_samples, kernel_arcs) = gmon(pf.kernel.as_ref().unwrap());
    assert_eq!(
        user_samples + kernel_samples,
        m.summary.samples,
        "every sample is in one histogram"
    );
    assert!(!user_arcs.is_empty());

    // Boundary arcs: user pc inside libc's read wrapper → the syscall entry.
    let k = Kallsyms::load();
    let libc = inf
        .mappings
        .iter()
        .find(|mp| {
            mp.path
                .as_deref()
                .is_some_and(|p| String::from_utf8_lossy(p).contains("libc.so"))
        })
        .expect("libc mapping");
    let libc_syms = ElfSyms::load(&String::from_utf8_lossy(libc.path.as_deref().unwrap()));
    let bias = libc.load_bias.expect("libc bias from its program headers");
    let boundary_reads: u64 = kernel_arcs
        .iter()
        .filter(|(from, to, _)| {
            *from >= libc.start
                && *from < libc.end
                && libc_syms
                    .name_at(from - bias)
                    .is_some_and(|n| n.contains("read"))
                && k.name(*to)
                    .is_some_and(|n| n.starts_with("entry_SYSCALL_64"))
        })
        .map(|a| a.2)
        .sum();
    assert!(boundary_reads >= 50, "{boundary_reads} read boundary arcs");

    // In the stacks file, read-path samples have copy_loop as the caller of read.
    let exe_map = inf
        .mappings
        .iter()
        .find(|mp| mp.path.as_deref() == inf.process.exe.as_deref())
        .unwrap();
    let exe_syms = ElfSyms::load(exe.to_str().unwrap());
    let exe_bias = exe_map.load_bias.expect("exe bias");
    let data = std::fs::read(pf.stacks.as_ref().unwrap()).unwrap();
    let stacks = Stacks::parse(&data).unwrap();
    let (mut reads, mut callers, mut total, mut ns) = (0, 0, 0, 0);
    let mut kinds: BTreeMap<Option<BoundaryKind>, u64> = BTreeMap::new();
    for r in stacks.records() {
        let r = r.unwrap().1;
        total += r.samples;
        ns += r.nanoseconds;
        *kinds.entry(r.boundary).or_default() += r.samples;
        if !r.kernel.iter().any(|a| k.name(a) == Some("ksys_read")) {
            continue;
        }
        reads += r.samples;
        let caller = r.user.get(1).unwrap_or(0);
        if exe_syms.name_at(caller.wrapping_sub(1).wrapping_sub(exe_bias)) == Some("copy_loop") {
            callers += r.samples;
        }
    }
    assert_eq!(total, m.summary.samples);
    assert_eq!(ns, total * 1_000_000, "cpu-clock period at 1000 Hz");
    assert!(
        reads >= 50 && callers * 100 >= reads * 95,
        "{callers} of {reads}"
    );
    let syscall = kinds
        .get(&Some(BoundaryKind::Syscall))
        .copied()
        .unwrap_or(0);
    assert!(
        syscall * 10 >= kernel_samples * 9,
        "{kinds:?} for {kernel_samples} kernel samples"
    );
    assert_eq!(
        inf.boundary.entries.get(&BoundaryKind::Syscall).copied(),
        Some(syscall)
    );

    // The samples account for the exact CPU time the kernel measured (the run's taskstats
    // record: every sample is a millisecond of it), and their user/kernel split agrees with
    // the kernel's. The kernel's split is not exact: it charges each clock tick (at least
    // every 10 ms, CONFIG_HZ >= 100) to the mode the task was in, so its user share is a
    // binomial estimate from runtime / 10 ms ticks or more, like the samples' own from their
    // count. With a 2% user share that is 0 to 5% from run to run on a loaded machine (seen:
    // 0 user ticks in 3 runs of 10 at load 9, samples 1.5 to 2.5%), so the shares must agree
    // within three standard deviations of the two estimates, not a fixed 3 points.
    let utime = inf.counters.user_cpu_ns.unwrap() as f64;
    let stime = inf.counters.system_cpu_ns.unwrap() as f64;
    let samples = (user_samples + kernel_samples) as f64;
    let runtime_ms = (utime + stime) / 1e6;
    assert!(
        (samples - runtime_ms).abs() <= runtime_ms * 0.03 + 5.0,
        "{samples} samples at 1000 Hz for {runtime_ms:.1} ms of CPU time"
    );
    let proc_user = utime / (utime + stime);
    let sampled_user = user_samples as f64 / samples;
    let p = ((proc_user + sampled_user) / 2.0).max(0.01);
    let ticks = runtime_ms / 10.0;
    let sd = (p * (1.0 - p) * (1.0 / ticks + 1.0 / samples)).sqrt();
    eprintln!(
        "user share: samples {:.1}% ({user_samples}/{samples}), kernel {:.1}% (utime {utime} ns, stime {stime} ns), sd {:.1} points; boundary {kinds:?}; {:?}",
        sampled_user * 100.0,
        proc_user * 100.0,
        sd * 100.0,
        m.summary.unwind
    );
    assert!(
        (sampled_user - proc_user).abs() <= 3.0 * sd,
        "sampled user share {sampled_user:.3} vs the kernel's {proc_user:.3} (sd {sd:.3})"
    );
    // A sample can land where the unwinder cannot go on (rarely: 1 in 800 seen); the info
    // file reports exactly what the summary counted, and it stays rare.
    let truncated = m.summary.unwind.truncated();
    assert_eq!(inf.sampling.truncated_stacks, Some(truncated));
    assert!(
        truncated * 100 <= m.summary.unwind.user_samples,
        "{truncated} truncated stacks of {}",
        m.summary.unwind.user_samples
    );
    let _ = &m.agg;
}

/// Every file set of a measurement: (pid, comm) → samples in its two histograms, with every
/// file parsed.
fn file_sets(dir: &Path) -> BTreeMap<(u32, String), u64> {
    let ms = scan(dir).unwrap();
    assert!(ms.skipped.is_empty(), "{:?}", ms.skipped);
    let mut out = BTreeMap::new();
    for pf in &ms.processes {
        let (u, _) = gmon(pf.user.as_ref().expect("user file"));
        let (k, _) = gmon(pf.kernel.as_ref().expect("kernel file"));
        let inf = info(pf.info.as_ref().expect("info file"));
        assert_eq!(inf.process.pid, pf.pid);
        let data = std::fs::read(pf.stacks.as_ref().expect("stacks file")).unwrap();
        let stacks: u64 = Stacks::parse(&data)
            .unwrap()
            .records()
            .map(|r| r.unwrap().1.samples)
            .sum();
        assert_eq!(stacks, u + k, "{}: stacks vs histograms", pf.pid);
        out.insert((pf.pid, pf.comm.to_string()), u + k);
    }
    out
}

#[test]
fn forked_children_and_threads_get_their_files() {
    let _serial = serial();
    let m = measure("forker", &[&workload("forker")]);
    let main = m.rec.child.as_ref().unwrap().pid;
    let sets = file_sets(&m.dir);
    assert_eq!(sets.len(), 3, "{sets:?}");
    for ((pid, comm), n) in &sets {
        assert_eq!(comm, "forker");
        assert!(*n >= 200, "{pid}: {n} samples");
    }
    // The children's counters come from the periodic /proc reads while they lived.
    let ms = scan(&m.dir).unwrap();
    for pf in &ms.processes {
        let inf = info(pf.info.as_ref().unwrap());
        let cpu = inf.counters.user_cpu_ns.unwrap_or(0) + inf.counters.system_cpu_ns.unwrap_or(0);
        assert!(cpu >= 100_000_000, "{}: {cpu} ns of cpu", pf.pid);
        if pf.pid != main {
            assert_eq!(inf.process.ppid, Some(main));
        }
    }

    let m = measure("threads", &[&workload("threads")]);
    let sets = file_sets(&m.dir);
    assert_eq!(sets.len(), 1, "all threads in one file set: {sets:?}");
    let n = *sets.values().next().unwrap();
    assert!(n >= 1100, "{n} samples of five threads spinning 250 ms");
    // The launched command's counters come from its threads' taskstats exit records, as
    // every process's do, each raised to its /proc reading taken while it was a zombie: CPU
    // time scaled to the scheduler's exact runtime (the per-thread taskstats times are
    // tick-sampled and under load missed a quarter of it).
    let ms = scan(&m.dir).unwrap();
    let inf = info(ms.processes[0].info.as_ref().unwrap());
    assert_eq!(inf.counters.source, Some(CounterSource::Taskstats));
    let cpu = inf.counters.user_cpu_ns.unwrap() + inf.counters.system_cpu_ns.unwrap();
    assert!(
        (1_100_000_000..2_500_000_000).contains(&cpu),
        "five threads spinning 250 ms: {cpu} ns"
    );
}

#[test]
fn exec_gives_a_new_file_set_and_storm_children_all_appear() {
    let _serial = serial();
    let cpu = workload("cpu");
    let m = measure("execer", &[&workload("execer"), &cpu, &"200"]);
    let main = m.rec.child.as_ref().unwrap().pid;
    let sets = file_sets(&m.dir);
    let keys: Vec<_> = sets.keys().cloned().collect();
    assert_eq!(
        keys,
        [(main, "cpu".to_string()), (main, "execer".to_string())]
    );
    assert!(sets[&(main, "execer".into())] >= 100, "{sets:?}");
    assert!(sets[&(main, "cpu".into())] >= 150, "{sets:?}");
    let inf = info(&m.dir.join(format!("gmon.out.{main}.cpu")));
    assert_eq!(
        inf.process.exe.as_deref(),
        Some(cpu.to_str().unwrap().as_bytes())
    );

    let m = measure("storm", &[&workload("storm")]);
    let sets = file_sets(&m.dir);
    assert_eq!(sets.len(), 51, "parent and 50 children: {sets:?}");
    assert_eq!(m.summary.processes, 51);
    // Every child lived about 2 ms, less than one /proc poll: its counters come from its
    // taskstats exit record, its CPU time from the exact runtime the record carries (the
    // tick-sampled times alone gave 0 or 4 ms a child, and 12 to 36 ms for the fifty on a
    // loaded machine). A child that ran without being preempted has no context switch; their
    // sum is checked.
    assert_eq!(m.rec.taskstats_refused, None, "tests run as root");
    let ours: Vec<_> = m
        .rec
        .task_exits
        .iter()
        .filter(|e| sets.keys().any(|(pid, _)| e.tgid == Some(*pid)))
        .map(|e| (e.tid, e.runtime_ns))
        .collect();
    assert!(
        ours.len() == 51 && ours.iter().all(|e| e.1.is_some()),
        "taskstats records without the runtime: {ours:?}"
    );
    let main = m.rec.child.as_ref().unwrap().pid;
    let (mut cpu, mut switches) = (0, 0);
    for (pid, comm) in sets.keys() {
        let inf = info(&m.dir.join(format!("gmon.out.{pid}.{comm}")));
        let c = &inf.counters;
        // The launched parent's too (raised to its /proc reading taken as a zombie).
        assert_eq!(inf.counters.source, Some(CounterSource::Taskstats), "{pid}");
        let own = c.user_cpu_ns.unwrap() + c.system_cpu_ns.unwrap();
        assert!(own < 2_000_000_000, "{pid}: {own} ns");
        assert!(c.minor_faults.unwrap() >= 1, "{pid}: {c:?}");
        assert!(c.read_bytes.is_some() && c.written_bytes.is_some(), "{pid}");
        if *pid != main {
            // spin(2) runs until the thread's CPU clock (the same runtime) has advanced 2 ms.
            assert!(own >= 2_000_000, "{pid}: {own} ns, spun 2 ms");
            cpu += own;
            switches += c.voluntary_switches.unwrap() + c.involuntary_switches.unwrap();
        } else {
            // The parent waited for its 50 children.
            assert!(c.voluntary_switches.unwrap() >= 1, "{c:?}");
        }
    }
    assert!(
        (100_000_000..1_000_000_000).contains(&cpu),
        "50 children spinning 2 ms each: {cpu} ns"
    );
    assert!(switches >= 25, "50 children: {switches} context switches");
}

#[test]
fn output_is_deterministic() {
    let _serial = serial();
    let m = measure("det1", &[&workload("forker")]);
    let again = temp_dir("det2");
    let mut opts = WriteOptions::default();
    opts.dir = again.clone();
    opts.argv = Some(args(&[&workload("forker")]));
    write_measurement(&m.rec, &m.agg, &opts).unwrap();
    let files = names(&m.dir);
    assert_eq!(files, names(&again));
    for f in files {
        assert!(!f.ends_with(".tmp"), "temporary file left: {f}");
        let same = std::fs::read(m.dir.join(&f)).unwrap() == std::fs::read(again.join(&f)).unwrap();
        assert!(same, "{f} differs between two writes");
    }
    let _ = std::fs::remove_dir_all(&again);
}
