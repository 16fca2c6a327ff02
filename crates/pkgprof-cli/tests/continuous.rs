//! `pkgmon --continuous -a` end to end: a soak inside a pid namespace (short processes by the
//! hundred, a pid reused on purpose, a prctl rename, an exec chain), instances read back from
//! the index and from `pkgprof --apps`/`--app`; ground truth for the shares; windows complete
//! after SIGINT, SIGTERM and SIGKILL, and a restart that continues the numbering.
//!
//! These need root (system-wide sampling, `unshare --pid`); if perf_event_open is refused they
//! fail with pkgmon's message, they never skip.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use gmon_format::continuous::{ContinuousIndex, INSTANCES_NAME, IndexInstance};

mod common;

use common::{PKGMON, PKGPROF, scratch, serial};

/// The workload, and a copy under another name (the exec chain's second program).
fn workload() -> &'static (PathBuf, PathBuf) {
    static BIN: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/instances.c");
        let out = common::compile(&src, "instances", &["-g"]);
        let chain = scratch().join("chained");
        std::fs::copy(&out, &chain).unwrap();
        (out, chain)
    })
}

/// The index of `dir` with every window's instances.
fn index(dir: &Path) -> ContinuousIndex {
    let mut index = ContinuousIndex::parse(&std::fs::read(dir.join("index")).unwrap()).unwrap();
    for w in &mut index.windows {
        w.read_instances(dir).unwrap();
    }
    index
}

/// Rewrites the index of `dir` as pkgmon wrote it before version 2: each window's instance
/// lines in the index, no instances files.
fn downgrade_to_version_1(dir: &Path) {
    let index = index(dir);
    let mut text = format!(
        "# pkgprof-continuous 1\nhost {}\nfrequency {}\n",
        index.host, index.frequency
    );
    for w in &index.windows {
        let line = w.to_line();
        let line = line.rsplit_once(" instances=").unwrap().0;
        text += &format!("{line}\n");
        let inst = w.instances_text();
        for l in inst.lines().filter(|l| l.starts_with("instance ")) {
            text += &format!("{l}\n");
        }
        std::fs::remove_file(dir.join(&w.dir).join(INSTANCES_NAME)).unwrap();
    }
    text += &format!("end {}\n", index.windows.len());
    std::fs::write(dir.join("index"), text).unwrap();
    let v1 = ContinuousIndex::parse(&std::fs::read(dir.join("index")).unwrap()).unwrap();
    assert_eq!((v1.version, &v1.windows), (1, &index.windows));
}

/// Every instance of the index by appid, with its samples summed over the windows.
fn instances(index: &ContinuousIndex) -> BTreeMap<String, (Vec<&IndexInstance>, u64)> {
    let mut out: BTreeMap<String, (Vec<&IndexInstance>, u64)> = BTreeMap::new();
    for w in &index.windows {
        for i in &w.instances {
            let e = out.entry(i.appid()).or_default();
            e.0.push(i);
            e.1 += i.samples;
        }
    }
    out
}

/// "PID CPU_NS" lines a workload appended to `path`.
fn own(path: &Path) -> Vec<(u32, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let (p, c) = l.split_once(' ').unwrap();
            (p.parse().unwrap(), c.parse().unwrap())
        })
        .collect()
}

/// Every window the index lists is a complete measurement, and nothing else but the index
/// and (after a SIGKILL) one `.partial` window is in the directory.
fn check_complete(dir: &Path) {
    let index = index(dir);
    let listed: Vec<&str> = index.windows.iter().map(|w| w.dir.as_str()).collect();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            name == "index" || listed.contains(&name.as_str()) || name.ends_with(".partial"),
            "{name} in {}",
            dir.display()
        );
    }
    for w in &index.windows {
        let m = gmon_format::scan(dir.join(&w.dir)).unwrap();
        assert!(
            matches!(m.verify().unwrap(), gmon_format::Verification::Complete),
            "window {} is not complete",
            w.dir
        );
    }
}

fn pkgprof(args: &[&str]) -> String {
    let out = Command::new(PKGPROF).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "pkgprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Starts pkgmon --continuous in `dir` with `extra` arguments and waits for it to be sampling.
fn start(dir: &Path, extra: &[&str]) -> Child {
    let child = Command::new(PKGMON)
        .args(["--continuous", "-a", "-o"])
        .arg(dir)
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    child
}

fn signal(child: &Child, sig: libc::c_int) {
    // Safety: signalling our own unreaped child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

fn finish(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "pkgmon failed: {err}");
    err
}

/// The soak. Inside a new pid namespace (so that pkgmon sees its pids, and the test may
/// reuse one by setting `ns_last_pid`), at the default rate: 150 processes shorter than a
/// sample period, one pid used twice, a program that renames itself, one that execs another
/// program. Each must be its own instance exactly once, none lost, the windows complete
/// after SIGINT, and the collector's memory flat across the windows.
#[test]
fn a_soak_keeps_every_instance_once_through_reuse_renames_and_execs() {
    let _serial = serial();
    let (bin, chained) = workload();
    let dir = scratch().join("soak");
    let out = scratch().join("soak-out");
    let script = format!(
        r#"set -e
D={dir} BIN={bin} CHAIN={chained} OUT={out}
{pkgmon} --continuous -a -o $D --window 3s 2>$OUT.err &
M=$!
S=$(date +%s)
sleep 1.5
i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done
$BIN spin 0.3 $OUT.reuse
P=$(tail -1 $OUT.reuse | cut -d' ' -f1)
echo $((P-1)) > /proc/sys/kernel/ns_last_pid
$BIN spin 0.3 $OUT.reuse
$BIN rename 0.5 $OUT.rename
$BIN exec $CHAIN 0.5 $OUT.chain
i=0; while [ $i -lt 4 ]; do $BIN spin 0.2 $OUT.more; sleep 1; i=$((i+1)); done
# At least four whole windows, however fast the work above went (on a quiet machine it
# takes about 8 s: three windows).
while [ $(($(date +%s) - S)) -lt 13 ]; do sleep 0.5; done
kill -INT $M
wait $M
"#,
        dir = dir.display(),
        bin = bin.display(),
        chained = chained.display(),
        out = out.display(),
        pkgmon = PKGMON,
    );
    let st = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", &script])
        .status()
        .unwrap();
    let err = std::fs::read_to_string(out.with_extension("err")).unwrap_or_default();
    assert!(st.success(), "the soak failed: {err}");
    assert!(err.contains(" 0 lost;"), "{err}");
    check_complete(&dir);
    let index = index(&dir);
    assert_eq!(index.frequency, 19, "the default rate");
    assert!(index.windows.len() >= 4, "{} windows", index.windows.len());
    let all = instances(&index);
    let count = |app: &str| {
        all.keys()
            .filter(|k| k.starts_with(&format!("{app}#")))
            .count()
    };

    // 150 short processes: 150 instances, each in exactly one window.
    assert_eq!(count("true"), 150, "{:?}", all.keys().collect::<Vec<_>>());
    assert!(
        all.iter()
            .filter(|(k, _)| k.starts_with("true#"))
            .all(|(_, v)| v.0.len() == 1)
    );

    // The reused pid: two processes, two instances.
    let reuse = own(&out.with_extension("reuse"));
    assert_eq!(reuse.len(), 2);
    assert_eq!(reuse[0].0, reuse[1].0, "the pid was not reused");
    let with_pid = |pid: u32| -> Vec<String> {
        all.iter()
            .filter(|(_, v)| v.0.iter().any(|i| i.pid == pid))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let reused: Vec<String> = with_pid(reuse[0].0)
        .into_iter()
        .filter(|k| k.starts_with("instances#"))
        .collect();
    assert!(
        reused.len() >= 2,
        "one instance for a reused pid: {reused:?}"
    );

    // The rename: still the program's instance, never one of the new name.
    let renamed = own(&out.with_extension("rename"))[0].0;
    assert_eq!(count("renamed"), 0);
    assert!(
        with_pid(renamed)
            .iter()
            .any(|k| k.starts_with("instances#"))
    );

    // The exec chain: the pid is an instance of each program.
    let chain = own(&out.with_extension("chain"))[0].0;
    let names = with_pid(chain);
    assert!(
        names.iter().any(|k| k.starts_with("chained#"))
            && names.iter().any(|k| k.starts_with("instances#")),
        "{names:?}"
    );
    let chained_instance = &all[names.iter().find(|k| k.starts_with("chained#")).unwrap()];
    assert!(chained_instance.1 > 0, "the exec'd program has no samples");

    // Memory: flat across windows (the first ones hold the start-up's reading of /proc).
    let rss: Vec<u64> = index.windows.iter().map(|w| w.rss_kib).collect();
    let first = rss[0].max(rss[1]);
    assert!(
        rss.iter().all(|&r| r > 0 && r <= first + first / 2 + 8192),
        "resident memory grew: {rss:?} KiB"
    );

    // The report lists them, and one instance's listing is its own.
    let apps = pkgprof(&["--apps", dir.to_str().unwrap()]);
    assert!(apps.contains("true (150 instances)"), "{apps}");
    let listing = pkgprof(&[
        "-b",
        "-p",
        "--app",
        names.iter().find(|k| k.starts_with("chained#")).unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert!(
        listing.contains("chained/u:spin_for") || listing.contains("chained/u:burn"),
        "{listing}"
    );
    assert!(!listing.contains("instances/u:"), "{listing}");
}

/// Ground truth: two instances of one program doing 2 and 6 s of CPU work at once, a third
/// of three threads and a fork without exec (parent and child) stay apart, five instances,
/// and their shares match their /proc CPU times within 2 points (at 499 Hz
/// per CPU, about 4000 samples, whose share varies by ±0.7 points by chance; at 19 Hz, 8 s of
/// CPU are 152 samples, ±3.5 points). The workload has frame pointers: no stack copies.
/// Their listings, and a pprof export of one, read the windows summed.
#[test]
fn instances_of_one_program_stay_apart_with_their_cpu_shares() {
    let _serial = serial();
    let (bin, _) = workload();
    let dir = scratch().join("truth");
    let out = scratch().join("truth-out");
    let m = start(&dir, &["-F", "499", "--stack-size", "0", "--window", "2s"]);
    let spin = |secs: &str| {
        Command::new(bin)
            .args(["spin", secs])
            .arg(&out)
            .spawn()
            .unwrap()
    };
    let (a, b) = (spin("2"), spin("6"));
    // Three threads of one process: one instance. A fork without exec: two.
    let threads = Command::new(bin)
        .args(["threads", "3", "0.6"])
        .arg(&out)
        .spawn()
        .unwrap();
    let forked = Command::new(bin)
        .args(["fork", "0.8"])
        .arg(&out)
        .spawn()
        .unwrap();
    let (a_pid, b_pid, t_pid, f_pid) = (a.id(), b.id(), threads.id(), forked.id());
    for mut c in [a, b, threads, forked] {
        assert!(c.wait().unwrap().success());
    }
    std::thread::sleep(Duration::from_millis(500));
    signal(&m, libc::SIGTERM);
    finish(m);
    check_complete(&dir);
    let index = index(&dir);
    assert!(index.windows.len() >= 3, "{} windows", index.windows.len());
    // On a loaded machine the collector may drop a few: they must stay few.
    let (samples, lost) =
        (index.windows.iter()).fold((0, 0), |(s, l), w| (s + w.samples, l + w.lost));
    assert!(lost * 50 <= samples, "{lost} lost of {samples}");
    let all = instances(&index);
    // The workload's instance of a pid (a process started by this test may have a sample
    // as the test binary, between its fork and its exec: another instance, of that name).
    let of = |pid: u32| {
        let (k, v) = (all.iter())
            .filter(|(k, _)| k.starts_with("instances#"))
            .find(|(_, v)| v.0.iter().any(|i| i.pid == pid))
            .unwrap_or_else(|| panic!("no instance of pid {pid}"));
        assert!(v.0.iter().all(|i| i.pid == pid), "{k} mixes pids");
        (k.clone(), v.1)
    };
    let truth: BTreeMap<u32, u64> = own(&out).into_iter().collect();
    let child = *(truth.keys())
        .find(|&&p| ![a_pid, b_pid, t_pid, f_pid].contains(&p))
        .expect("the forked child's line");
    let pids = [a_pid, b_pid, t_pid, f_pid, child];
    let seen: Vec<(String, u64)> = pids.iter().map(|&p| of(p)).collect();
    let keys: std::collections::BTreeSet<&String> = seen.iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys.len(),
        pids.len(),
        "five processes, five instances: {seen:?}"
    );
    // Each instance's share of the samples is its share of the /proc CPU time (all its
    // threads'), within 2 points.
    let samples: u64 = seen.iter().map(|(_, n)| n).sum();
    let cpu: u64 = pids.iter().map(|p| truth[p]).sum();
    for ((key, n), pid) in seen.iter().zip(pids) {
        let share = 100.0 * *n as f64 / samples as f64;
        let expected = 100.0 * truth[&pid] as f64 / cpu as f64;
        assert!(
            (share - expected).abs() <= 2.0,
            "{key}: {n} samples, share {share:.1}% vs {expected:.1}% of /proc CPU time: {seen:?}"
        );
    }
    let (kb, sb) = seen[1].clone();
    // The listing of one instance over the windows holds its samples, no more.
    let listing = pkgprof(&["-b", "-p", "--app", &kb, dir.to_str().unwrap()]);
    let spin = listing
        .lines()
        .find(|l| l.contains("instances/u:burn"))
        .unwrap_or_else(|| panic!("{listing}"));
    let calls: u64 = spin.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert!(
        calls * 10 >= sb * 9 && calls <= sb,
        "{calls} of {sb}: {listing}"
    );
    // Two instances, loaded at other addresses (PIE), meet at the file's addresses. (Not the
    // application as a whole: other sessions' tests may run it at the same time.)
    let one = eip_view(&dir, &kb, sb);
    let other = eip_view(&dir, &seen[0].0, seen[0].1);
    assert!(
        one.iter().any(|a| other.contains(a)),
        "{one:x?} and {other:x?}"
    );
    // An export of the application (both instances summed) is gzip pprof.
    let pprof = scratch().join("truth.pb.gz");
    pkgprof(&[
        "--export=pprof",
        "--app=instances",
        &format!("--output={}", pprof.display()),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        &std::fs::read(&pprof).unwrap()[..2],
        b"\x1f\x8b",
        "not gzip"
    );
    // One pprof per instance per window, labelled, as go tool pprof reads it.
    let each = scratch().join("truth-pprof");
    std::fs::create_dir_all(&each).unwrap();
    let listed = pkgprof(&[
        "--apps",
        &format!("--app={kb}"),
        "--export=pprof",
        &format!("--output={}", each.display()),
        dir.to_str().unwrap(),
    ]);
    let mine: Vec<&str> = listed
        .lines()
        .filter(|l| l.ends_with(&format!(".{kb}.pb.gz")))
        .collect();
    let windows_of_b = index
        .windows
        .iter()
        .filter(|w| w.instances.iter().any(|i| i.appid() == kb))
        .count();
    assert_eq!(mine.len(), windows_of_b, "{listed}");
    assert_eq!(listed.lines().count(), mine.len(), "--app picks: {listed}");
    let raw = Command::new("go")
        .args(["tool", "pprof", "-raw", mine[0]])
        .output()
        .expect("go tool pprof (installed by .ci/run)");
    let raw = String::from_utf8_lossy(&raw.stdout);
    assert!(
        raw.contains(&format!("instance:[{kb}]"))
            && raw.contains("host:[")
            && raw.contains("instances/u:burn"),
        "{raw}"
    );
    // The instance's cgroup: the id of this test's cgroup v2 (the children stay in it), in
    // the index while it ran and as a label of its profiles.
    let cgroup = own_cgroup_id();
    let ids: Vec<Option<u64>> = (index.windows.iter())
        .flat_map(|w| &w.instances)
        .filter(|i| i.pid == b_pid)
        .map(|i| i.cgroup_id)
        .collect();
    assert!(ids.contains(&Some(cgroup)), "{ids:?} vs {cgroup}");
    assert!(ids.iter().flatten().all(|&id| id == cgroup), "{ids:?}");
    assert!(
        (mine.iter()).any(|f| {
            let raw = Command::new("go")
                .args(["tool", "pprof", "-raw", f])
                .output()
                .expect("go tool pprof");
            String::from_utf8_lossy(&raw.stdout).contains(&format!("cgroup_id:[{cgroup}]"))
        }),
        "no profile of {kb} labelled cgroup_id {cgroup}"
    );
}

/// `-l --app NAME[#N]` (SLEEPY's EIP view) of the workload with `samples` in the index:
/// every sample at the instruction it was taken at, nearly all its user samples in burn, at
/// instructions of the file (as `objdump -d` lists them), and nearly all on the loop's source
/// line; returns burn's addresses.
fn eip_view(dir: &Path, app: &str, samples: u64) -> Vec<u64> {
    let listing = pkgprof(&["-l", "--app", app, dir.to_str().unwrap()]);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/instances.c");
    let text = std::fs::read_to_string(&src).unwrap();
    let loop_line = 1 + text.lines().position(|l| l.contains("sink += i")).unwrap();
    let dump = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&workload().0)
        .output()
        .unwrap();
    let starts: Vec<u64> = String::from_utf8_lossy(&dump.stdout)
        .lines()
        .filter_map(|l| u64::from_str_radix(l.trim_start().split_once(":\t")?.0, 16).ok())
        .collect();
    assert!(
        starts.len() > 20,
        "objdump -d listed {} instructions",
        starts.len()
    );
    let rows: Vec<Vec<&str>> = (listing.lines())
        .skip_while(|l| !l.trim_start().starts_with("samples"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let count = |r: &Vec<&str>| r[0].parse::<u64>().unwrap();
    let total: u64 = rows.iter().map(count).sum();
    assert_eq!(total, samples, "{listing}");
    let burn: Vec<&Vec<&str>> = (rows.iter())
        .filter(|r| r[6].starts_with("instances/u:burn"))
        .collect();
    let in_burn: u64 = burn.iter().map(|r| count(r)).sum();
    // Its kernel samples are the kernel's work while it ran (interrupts, softirqs): as many
    // as the machine's other load brings.
    let user: u64 = (rows.iter())
        .filter(|r| r[4] != "[kernel]")
        .map(count)
        .sum();
    assert!(
        in_burn * 10 >= user * 9,
        "{in_burn} of {user} user samples in burn: {listing}"
    );
    let mut addresses = Vec::new();
    for r in &burn {
        let at = u64::from_str_radix(r[3].trim_start_matches("0x"), 16).unwrap();
        addresses.push(at);
        assert!(
            starts.contains(&at),
            "{at:#x} is no instruction of the file: {listing}"
        );
        assert!(r[4] == "instances", "{listing}");
    }
    let on_loop: u64 = (burn.iter())
        .filter(|r| r[5] == format!("instances.c:{loop_line}"))
        .map(|r| count(r))
        .sum();
    assert!(
        on_loop * 10 >= in_burn * 9,
        "{on_loop} of {in_burn} on line {loop_line}: {listing}"
    );
    addresses
}

/// The id of this process's cgroup v2: the inode number of its directory under the cgroup2
/// mount (what `PERF_SAMPLE_CGROUP` reports).
fn own_cgroup_id() -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let root = mounts
        .lines()
        .find(|l| {
            l.split(" - ")
                .nth(1)
                .is_some_and(|f| f.starts_with("cgroup2 "))
        })
        .and_then(|l| l.split(' ').nth(4))
        .expect("a cgroup2 mount");
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let path = own.lines().find_map(|l| l.strip_prefix("0::")).unwrap();
    std::fs::metadata(format!("{root}{}", path.trim_end_matches('/')))
        .unwrap()
        .ino()
}

/// A SIGKILLed collector leaves only complete windows listed; the next run removes the
/// half-written one and continues the window and instance numbering, also over an index of
/// version 1 (instances in the index), whose instances it moves to their windows.
#[test]
fn a_killed_collector_leaves_complete_windows_and_the_next_run_continues() {
    let _serial = serial();
    let (bin, _) = workload();
    let dir = scratch().join("killed");
    let out = scratch().join("killed-out");
    let m = start(&dir, &["--window", "1s"]);
    let t0 = Instant::now();
    while index_windows(&dir) < 2 && t0.elapsed() < Duration::from_secs(20) {
        let st = Command::new(bin)
            .arg("spin")
            .arg("0.1")
            .arg(&out)
            .status()
            .unwrap();
        assert!(st.success());
    }
    std::thread::sleep(Duration::from_millis(500));
    signal(&m, libc::SIGKILL);
    let _ = m.wait_with_output();
    check_complete(&dir);
    let before = index(&dir);
    assert!(before.windows.len() >= 2);
    let numbers_before = instances(&before)
        .values()
        .flat_map(|v| v.0.iter())
        .filter(|i| i.app == b"instances")
        .map(|i| i.number)
        .max()
        .unwrap();
    downgrade_to_version_1(&dir);

    let m = start(&dir, &["--window", "1s"]);
    let st = Command::new(bin)
        .arg("spin")
        .arg("0.2")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    std::thread::sleep(Duration::from_millis(300));
    signal(&m, libc::SIGINT);
    finish(m);
    check_complete(&dir);
    let after = index(&dir);
    assert!(
        !std::fs::read_dir(&dir).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".partial")),
        "a half-written window stayed"
    );
    assert!(after.windows.len() > before.windows.len());
    assert_eq!(after.windows[..before.windows.len()], before.windows[..]);
    let text = std::fs::read_to_string(dir.join("index")).unwrap();
    assert!(
        text.starts_with("# pkgprof-continuous 2\n") && !text.contains("\ninstance "),
        "{text}"
    );
    let last = own(&out).last().unwrap().0;
    let new = instances(&after)
        .values()
        .flat_map(|v| v.0.iter())
        .filter(|i| i.pid == last && i.app == b"instances")
        .map(|i| i.number)
        .max()
        .unwrap();
    assert!(
        new > numbers_before,
        "instance numbers restarted: {new} <= {numbers_before}"
    );
}

fn index_windows(dir: &Path) -> usize {
    std::fs::read(dir.join("index"))
        .ok()
        .and_then(|d| ContinuousIndex::parse(&d).ok())
        .map_or(0, |i| i.windows.len())
}
