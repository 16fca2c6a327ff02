//! Ground truth by construction: workloads (`tests/truth/*.c`, and `rustwork.rs` in Rust) that
//! time each of their functions with `CLOCK_THREAD_CPUTIME_ID` (self time and inclusive time,
//! recursion counted once) are profiled by `pkgmon`, built with and without frame pointers, and
//! every function's self and inclusive percentages in `pkgprof --pid` must be within 2 points
//! of what the program measured, in both inclusive modes (`--inclusive=gprof`, the default, and
//! `--inclusive=stacks`). Truncated stacks are counted exactly.
//!
//! In gprof mode a function of a cycle (mutual recursion) has no inclusive time of its own (gprof
//! gives its members their self time plus what they call outside the cycle): its inclusive time
//! is compared with the cycle's as a whole, which is the time of the outermost call.
//!
//! These need perf_event_open with kernel sampling (root here), `cc` and `rustc`; they fail
//! rather than skip without them. `TRUTH_CFLAGS` (say `-O0`, `-O3`, `-Os`) adds flags to every C
//! workload's build, its shared libraries' too (so not `-static` or `-no-pie`), to try the same
//! truths on code built another way.
//!
//! Over 800 lines because the harness (build, record, parse the program's own timings, compare
//! in both modes) and the workloads' expectations belong together; the workloads themselves are
//! in `tests/truth/`.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

use gmon_format::{MeasurementInfo, Stacks, scan};

const PKGMON: &str = env!("CARGO_BIN_EXE_pkgmon");
const PKGPROF: &str = env!("CARGO_BIN_EXE_pkgprof");

/// Points of total time a figure may be off.
const TOLERANCE: f64 = 2.0;

/// Where this test process writes its measurements; removed with the last of them.
fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| std::env::temp_dir().join(format!("pkgprof-truth-{}", std::process::id())))
}

/// Tests run one at a time: the machine has two CPUs and the workloads count CPU time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    FramePointers,
    NoFramePointers,
    /// Frame pointers and no unwind tables (`.eh_frame` only for the C library's start-up
    /// code, none for the program's functions).
    FramePointersOnly,
}

impl Build {
    /// Its name in directories and messages: its distinctive flag.
    fn flag(self) -> &'static str {
        match self {
            Build::FramePointers => "-fno-omit-frame-pointer",
            Build::NoFramePointers => "-fomit-frame-pointer",
            Build::FramePointersOnly => "-fno-asynchronous-unwind-tables",
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Build::FramePointers => &["-fno-omit-frame-pointer"],
            Build::NoFramePointers => &["-fomit-frame-pointer"],
            Build::FramePointersOnly => {
                &["-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables"]
            }
        }
    }
}

/// Compiles `args` into `out`, through a file of this process's own that replaces `out` at
/// once: another test process may be running the previous build.
fn cc(out: &Path, build: Build, args: &[&dyn AsRef<std::ffi::OsStr>]) {
    let tmp = out.with_extension(format!("{}.tmp", std::process::id()));
    let mut c = Command::new("cc");
    c.arg("-o").arg(&tmp).args(build.flags());
    for a in args {
        c.arg(a);
    }
    c.args(extra_cflags().split_whitespace());
    let st = c.status().unwrap();
    assert!(st.success(), "cc failed: {c:?}");
    std::fs::rename(&tmp, out).unwrap();
}

/// Flags added to every workload's build (`TRUTH_CFLAGS`), none by default.
fn extra_cflags() -> String {
    std::env::var("TRUTH_CFLAGS").unwrap_or_default()
}

/// Builds the workloads with `build`'s flags into a directory of their own under the target
/// directory (not /tmp: nothing is left behind there), once per test process; returns it.
fn built(build: Build) -> PathBuf {
    static DIRS: Mutex<BTreeMap<&'static str, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut dirs = DIRS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = dirs.get(build.flag()) {
        return d.clone();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/truth");
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("truth-workloads")
        .join(
            format!("{}{}", build.flag().trim_start_matches('-'), extra_cflags())
                .replace([' ', '/'], "_"),
        );
    std::fs::create_dir_all(&d).unwrap();
    for name in [
        "recursion",
        "deeprec",
        "bigstack",
        "hugeframe",
        "callback",
        "signal",
        "forks",
    ] {
        cc(
            &d.join(name),
            build,
            &[&"-O2", &src.join(format!("{name}.c"))],
        );
    }
    for (lib, source) in [
        ("libtruthlib.so", "libs-lib.c"),
        ("libtruthdl.so", "libs-dl.c"),
        ("libreloada.so", "reload-a.c"),
        ("libreloadb.so", "reload-b.c"),
    ] {
        cc(
            &d.join(lib),
            build,
            &[&"-O2", &"-fPIC", &"-shared", &src.join(source)],
        );
    }
    cc(
        &d.join("libs"),
        build,
        &[
            &"-O2",
            &"-rdynamic",
            &src.join("libs.c"),
            &"-L",
            &d,
            &"-ltruthlib",
            &"-Wl,-rpath,$ORIGIN",
            &"-ldl",
        ],
    );
    cc(
        &d.join("threads"),
        build,
        &[&"-O2", &"-pthread", &src.join("threads.c")],
    );
    cc(
        &d.join("untouched"),
        build,
        &[&"-O2", &src.join("untouched.c")],
    );
    cc(
        &d.join("reload"),
        build,
        &[&"-O2", &"-rdynamic", &src.join("reload.c"), &"-ldl"],
    );
    rustc(&d.join("rustwork"), build, &src.join("rustwork.rs"));
    dirs.insert(build.flag(), d.clone());
    d
}

/// Compiles the Rust workload `source` into `out` with `build`'s frame pointers (Rust omits
/// them by default, and its standard library is built without them either way), as [`cc`]
/// does (`TRUTH_CFLAGS` are C flags and are not passed).
fn rustc(out: &Path, build: Build, source: &Path) {
    let tmp = out.with_extension(format!("{}.tmp", std::process::id()));
    let mut c = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    c.args(["--edition", "2024", "--crate-name", "rustwork"])
        .args(["-C", "opt-level=2", "-o"])
        .arg(&tmp)
        .arg(source);
    match build {
        Build::FramePointers => c.args(["-C", "force-frame-pointers=yes"]),
        Build::NoFramePointers => c.args(["-C", "force-frame-pointers=no"]),
        // Rust keeps unwind tables for panics: a build without them is not Rust's.
        Build::FramePointersOnly => return,
    };
    let st = c.status().unwrap();
    assert!(st.success(), "rustc failed: {c:?}");
    std::fs::rename(&tmp, out).unwrap();
}

/// What a workload measured of itself: function → (self %, inclusive %) of its CPU time.
type Truth = BTreeMap<String, (f64, f64)>;

fn parse_truth(text: &str) -> Truth {
    let mut total = 0.0;
    let mut out = Truth::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["total", ms] => total = ms.parse().unwrap(),
            [name, s, i] => {
                let (s, i): (f64, f64) = (s.parse().unwrap(), i.parse().unwrap());
                out.insert((*name).to_owned(), (s, i));
            }
            _ => panic!("bad truth line {line:?}"),
        }
    }
    assert!(total > 0.0, "no total in {text}");
    for v in out.values_mut() {
        *v = (v.0 * 100.0 / total, v.1 * 100.0 / total);
    }
    out
}

/// One profiled run of a workload. Its measurement directory (a few MiB: the kernel-symbol
/// snapshot) is removed when the run is dropped, unless the test is failing or the run was
/// found wrong (`keep`).
struct Run {
    dir: PathBuf,
    truth_file: PathBuf,
    pid: u32,
    truth: Truth,
    stderr: String,
    keep: bool,
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.keep || std::thread::panicking() {
            eprintln!("measurement kept in {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
            let _ = std::fs::remove_file(&self.truth_file);
            // Succeeds once no other run's files are in it.
            let _ = std::fs::remove_dir(scratch());
        }
    }
}

/// Runs `pkgmon [extra] -- program args` with the workload's report going to a file.
fn profile(tag: &str, program: &Path, args: &[&str], extra: &[&str]) -> Run {
    let mut runs = profile_all(tag, program, args, extra);
    assert_eq!(runs.len(), 1, "{}", runs[0].stderr);
    runs.pop().unwrap()
}

/// [`profile`] of a workload of one process or of several: one [`Run`] for each process, which
/// reports to `$TRUTH_OUT.<pid>` when there are several.
fn profile_all(tag: &str, program: &Path, args: &[&str], extra: &[&str]) -> Vec<Run> {
    let dir = scratch().join(tag);
    std::fs::create_dir_all(scratch()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let truth_file = scratch().join(format!("{tag}.truth"));
    let o = Command::new(PKGMON)
        .arg("-o")
        .arg(&dir)
        .args(extra)
        .arg("--")
        .arg(program)
        .args(args)
        .env("TRUTH_OUT", &truth_file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let m = scan(&dir).unwrap();
    let one = truth_file.exists();
    if one {
        assert_eq!(m.processes.len(), 1, "{stderr}");
    }
    m.processes
        .iter()
        .map(|p| {
            let truth_file = match one {
                true => truth_file.clone(),
                false => PathBuf::from(format!("{}.{}", truth_file.display(), p.pid)),
            };
            let text = std::fs::read_to_string(&truth_file);
            let text = text.unwrap_or_else(|e| panic!("{}: {e}\n{stderr}", truth_file.display()));
            Run {
                pid: p.pid,
                dir: dir.clone(),
                truth: parse_truth(&text),
                truth_file,
                stderr: stderr.clone(),
                keep: false,
            }
        })
        .collect()
}

/// The figures of one listing: self % from the flat profile, inclusive % from the call graph's
/// primary lines, by function name (labels removed), and each cycle member's cycle.
///
/// A function's self % counts the kernel work done while it ran (its kernel callees in the
/// call graph: interrupts, softirqs run on their way out, preemption), as its thread's CPU
/// clock does: on a loaded machine that is 1-2% of the samples (`handle_softirqs` under the
/// callback workload's comparator, 2,306 involuntary switches in 3 s). It counts the
/// instrumentation it calls too (`truth_enter`, `truth_leave`: truth.h charges the time they
/// take to the functions on its shadow stack, the caller's and the callee's): a 9,000-level
/// recursion makes 54,000 such calls, ~1.2% of its run, which its listing shows apart.
#[derive(Debug, Default)]
struct Listing {
    self_pct: BTreeMap<String, f64>,
    incl_pct: BTreeMap<String, f64>,
    cycle_of: BTreeMap<String, String>,
    cycle_pct: BTreeMap<String, f64>,
    text: String,
}

fn listing(run: &Run, mode: &str) -> Listing {
    let o = Command::new(PKGPROF)
        .args(["-b", "--inclusive", mode, "--pid", &run.pid.to_string()])
        .arg(&run.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let label = format!("{}u:", run.pid);
    let kernel_label = format!("{}k:", run.pid);
    let harness = [format!("{label}truth_enter"), format!("{label}truth_leave")];
    let mut l = Listing::default();
    let mut in_flat = false;
    let mut total_samples = 0;
    // The user function whose call-graph entry is being read, and its kernel callees' samples:
    // each arc's count is the samples whose stacks hold it (its seconds, printed to 10 ms,
    // would drop the few milliseconds a function spends in page faults).
    let mut entry: Option<String> = None;
    let mut kernel_under: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with("Index by function name") {
            break;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        // The header's `samples: N user, M kernel (...)`: the flat profile's seconds are
        // rounded to 10 ms each, too coarse to sum.
        if f.first() == Some(&"samples:") && f.get(2) == Some(&"user,") {
            total_samples = f[1].parse::<u64>().unwrap() + f[3].parse::<u64>().unwrap();
        }
        if line.starts_with(" time   seconds") {
            in_flat = true;
            continue;
        }
        if line.trim().is_empty() {
            in_flat = false;
            continue;
        }
        let name_at = f.iter().position(|t| t.starts_with(&label));
        if in_flat {
            if let Some(i) = name_at {
                let name = f[i][label.len()..].to_owned();
                l.self_pct.insert(name, f[0].parse().unwrap());
            }
            continue;
        }
        if line.starts_with("-----") {
            entry = None;
            continue;
        }
        if !(f.first().is_some_and(|t| t.starts_with('[')) && f.len() > 2) {
            // A callee line of the entry being read: `self children called name [index]`.
            if let Some(e) = &entry
                && f.len() >= 5
                && (f[3].starts_with(&kernel_label) || harness.iter().any(|h| h == f[3]))
                && let Some(Ok(n)) = f[2].split('/').next().map(str::parse::<u64>)
            {
                *kernel_under.entry(e.clone()).or_default() += n;
            }
            continue;
        }
        let pct: f64 = f[1].parse().unwrap();
        if let Some(c) = line.find("<cycle ")
            && line.contains("as a whole>")
        {
            let n = line[c + 7..].split_whitespace().next().unwrap().to_owned();
            l.cycle_pct.insert(n, pct);
            continue;
        }
        let Some(i) = name_at else {
            entry = None;
            continue;
        };
        let name = f[i][label.len()..].to_owned();
        entry = Some(name.clone());
        if f.get(i + 1) == Some(&"<cycle") {
            let n = f[i + 2].trim_end_matches('>').to_owned();
            l.cycle_of.insert(name.clone(), n);
        }
        l.incl_pct.insert(name, pct);
    }
    assert!(
        total_samples > 0,
        "no sample count in the listing's header:\n{text}"
    );
    for (name, samples) in kernel_under {
        if let Some(p) = l.self_pct.get_mut(&name) {
            *p += samples as f64 * 100.0 / total_samples as f64;
        }
    }
    l.text = text;
    l
}

/// Compares every function the workload measured with both `--inclusive` listings; returns
/// the discrepancies, one line each, and the stacks-mode listing (a deep recursion's takes
/// the tests' debug pkgprof seconds to make).
fn compare(run: &Run, what: &str) -> (Vec<String>, Listing) {
    let mut bad = Vec::new();
    let mut stacks = Listing::default();
    for mode in ["gprof", "stacks"] {
        let l = listing(run, mode);
        let mut table = String::new();
        for (name, &(t_self, t_incl)) in &run.truth {
            let got_self = l.self_pct.get(name).copied().unwrap_or(0.0);
            let got_incl = match l.cycle_of.get(name) {
                Some(c) if mode == "gprof" => l.cycle_pct.get(c).copied().unwrap_or(0.0),
                _ => l.incl_pct.get(name).copied().unwrap_or(0.0),
            };
            table.push_str(&format!(
                "  {name:12} self {t_self:5.1} got {got_self:5.1}   inclusive {t_incl:5.1} got {got_incl:5.1}\n"
            ));
            for (kind, want, got) in [("self", t_self, got_self), ("inclusive", t_incl, got_incl)] {
                if (want - got).abs() > TOLERANCE {
                    bad.push(format!(
                        "{what}, --inclusive={mode}: {name} {kind} {got:.1}% but the program measured {want:.1}%"
                    ));
                }
            }
        }
        eprintln!("{what}, --inclusive={mode}:\n{table}");
        if !bad.is_empty() && std::env::var_os("TRUTH_SHOW_LISTING").is_some() {
            eprintln!("{}", l.text);
        }
        stacks = l;
    }
    (bad, stacks)
}

fn info(run: &Run) -> MeasurementInfo {
    let m = scan(&run.dir).unwrap();
    let p = m.processes.iter().find(|p| p.pid == run.pid).unwrap();
    let path = p.info.clone().unwrap();
    MeasurementInfo::parse(&std::fs::read(path).unwrap()).unwrap()
}

fn sampling_field(info: &MeasurementInfo, key: &str) -> u64 {
    let s = &info.sampling;
    match key {
        "truncated-stacks" => s.truncated_stacks,
        "truncated-stack-copy" => s.truncated_stack_copy,
        "truncated-unwind-info" => s.truncated_unwind_info,
        _ => panic!("no typed field for {key}"),
    }
    .unwrap_or_else(|| panic!("no {key} in [sampling]"))
}

/// The samples of a run's stacks file.
fn stack_samples(run: &Run) -> u64 {
    let m = scan(&run.dir).unwrap();
    let p = m.processes.iter().find(|p| p.pid == run.pid).unwrap();
    let data = std::fs::read(p.stacks.as_ref().unwrap()).unwrap();
    Stacks::parse(&data)
        .unwrap()
        .records()
        .map(|r| r.unwrap().1.samples)
        .sum()
}

/// The functions a listing shows called by `[truncated]`: the outermost frames of the
/// truncated stacks.
fn truncated_callees(l: &Listing, pid: u32) -> BTreeSet<String> {
    let label = format!("{pid}u:");
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in l.text.lines() {
        if line.starts_with("Index by function name") {
            break;
        }
        if line.starts_with('[') {
            inside = line.contains(&format!("{label}[truncated] ["));
        } else if line.starts_with("---") {
            inside = false;
        } else if inside && let Some(name) = line.split_whitespace().find(|t| t.starts_with(&label))
        {
            out.insert(name[label.len()..].to_owned());
        }
    }
    out
}

/// The dynamic linker's lazy-binding trampoline (`_dl_runtime_resolve_xsavec` and its
/// siblings), which binds a function at its first call through the PLT: after realigning the
/// stack it keeps its frame base in rbx (its unwind information defines the frame by rbx), a
/// register the samples do not carry (ip, sp and bp). A sample taken while it runs cannot be
/// unwound past it; such a stack is reported truncated for want of unwind information.
/// Whether `name` is ld.so's own: its lazy binding, and (once in ~20 runs of the callback
/// workload) its loading of the libraries before `main` (`_dl_map_object`); or a library's
/// `_init` and `_fini`, which ld.so runs at each dlopen and dlclose (the reload workload runs
/// them 80 times) and which crti.o gives no unwind information (no FDE covers them: one
/// sample in 6 runs of that workload was cut there); or the destructor and constructor
/// helpers crtbeginS.o puts in each library, which ld.so's `_fini` and `_init` call and which
/// have no FDE either (`__do_global_dtors_aux`: one stack in about 5 runs of the reload
/// workload, with `-fomit-frame-pointer`).
fn in_dynamic_linker(name: &str) -> bool {
    const CRT: [&str; 6] = [
        "_init",
        "_fini",
        "__do_global_dtors_aux",
        "frame_dummy",
        "register_tm_clones",
        "deregister_tm_clones",
    ];
    name.starts_with("_dl_") || CRT.contains(&name)
}

/// The stacks pkgmon's summary says ended where the stack copy stopped at a page not yet
/// touched: a sample taken just as a function grew its frame into a new page of the stack (a
/// deep recursion's first descent does, once every ~17 levels) has nothing past it to copy.
fn untouched_pages(stderr: &str) -> u64 {
    const SAID: &str = " ended where the stack copy stopped at a stack page not yet touched";
    stderr
        .find(SAID)
        .and_then(|at| stderr[..at].rsplit([' ', ';']).next()?.parse().ok())
        .unwrap_or(0)
}

/// Profiles workload `name` in both builds and checks every function; also that no stack was
/// reported truncated (they all fit the default stack copy and callchain limit) but those
/// that end in the dynamic linker ([`in_dynamic_linker`]): its lazy binding runs a few
/// microseconds per function bound, so a sample lands there now and then (in 3 runs of 15 of
/// the libs workload at load 9), and those stacks are truncated for what they are; and those
/// whose copy stopped at a page not yet touched ([`untouched_pages`]), fewer than 0.5%; and
/// those cut by the stack copy that end in one of `outgrow_copy`, functions whose frame is
/// larger than the copy.
fn check_workload(
    name: &str,
    extra: &[&str],
    outgrow_copy: &[&str],
    args: impl Fn(&Path) -> Vec<String>,
) -> Vec<usize> {
    let both = [Build::FramePointers, Build::NoFramePointers];
    check_workload_built(&both, name, extra, outgrow_copy, args)
}

/// [`check_workload`] in `builds`. A workload of several processes has each checked against
/// its own report, and the truncated stacks counted over them all (pkgmon says those cut at an
/// untouched page once for the run). Returns how many processes each build's run had.
fn check_workload_built(
    builds: &[Build],
    name: &str,
    extra: &[&str],
    outgrow_copy: &[&str],
    args: impl Fn(&Path) -> Vec<String>,
) -> Vec<usize> {
    let mut bad = Vec::new();
    let mut processes = Vec::new();
    for &build in builds {
        let d = built(build);
        let a = args(&d);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let tag = format!("{name}{}", build.flag());
        let mut runs = profile_all(&tag, &d.join(name), &a, extra);
        processes.push(runs.len());
        let what = format!("{name} {}", build.flag());
        let stderr = runs[0].stderr.clone();
        // Samples lost while pkgmon (a debug build here) fell behind bias the shares: said
        // beside the tables.
        let summary = stderr.lines().find(|l| l.contains(" samples, "));
        eprintln!("{what}: {}", summary.unwrap_or("no summary line"));
        let before = bad.len();
        let untouched = untouched_pages(&stderr);
        let (mut truncated, mut unwind_info, mut stack_copy, mut samples) = (0, 0, 0, 0);
        let mut ends = BTreeSet::new();
        for run in &runs {
            let whose = match runs.len() {
                1 => what.clone(),
                _ => format!("{what}, process {}", run.pid),
            };
            let (differs, stacks) = compare(run, &whose);
            bad.extend(differs);
            let inf = info(run);
            truncated += sampling_field(&inf, "truncated-stacks");
            unwind_info += sampling_field(&inf, "truncated-unwind-info");
            let run_ends = truncated_callees(&stacks, run.pid);
            if run_ends.iter().any(|n| outgrow_copy.contains(&n.as_str())) {
                stack_copy += sampling_field(&inf, "truncated-stack-copy");
            }
            samples += stack_samples(run);
            ends.extend(run_ends);
        }
        if truncated != unwind_info + untouched + stack_copy
            || !(untouched > 0
                || ends
                    .iter()
                    .all(|n| in_dynamic_linker(n) || outgrow_copy.contains(&n.as_str())))
            || truncated * 200 > samples
        {
            bad.push(format!(
                "{what}: {truncated} truncated stacks ({unwind_info} for unwind information) \
                 ending in {ends:?}; only a few in the dynamic linker expected\n{stderr}"
            ));
        }
        let keep = bad.len() > before;
        for run in &mut runs {
            run.keep = keep;
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    processes
}

#[test]
fn recursion_direct_mutual_and_called_shallowly_and_deeply() {
    let _s = serial();
    check_workload("recursion", &[], &[], |_| vec!["3".into()]);
}

#[test]
fn recursion_deeper_than_the_stack_copy() {
    let _s = serial();
    // 1,000 levels of ~240 bytes, ~240 KiB of stack: past the 64 KiB copy, so a sample at
    // the bottom is whole only through the stacks of the samples taken on the way down.
    // Scale 4: ~1.6 s of CPU, ~6,500 samples at 4 kHz, so a share of 25% is known to 0.5
    // points (one sigma); at scale 1 (~1,700 samples) it missed the 2-point tolerance
    // now and then by chance (bottom 23.6% against 25.7%).
    check_workload("deeprec", &["-F", "4000"], &[], |_| {
        vec!["1000".into(), "4".into()]
    });
}

#[test]
fn recursion_deeper_than_the_stack_copy_copied_by_the_kernel() {
    let _s = serial();
    // The same with the kernel's copies (`--stack-copy kernel`; root runs take the BPF
    // copier's otherwise): to the end of the stack's mapping, each cut at 65,528 bytes. At
    // 2 kHz and twice the work, as many samples: at 4 kHz, 256 MB/s of copies, the debug
    // pkgmon of the tests fell behind in a CI run (500 samples lost with frame pointers,
    // bottom 27.5% against 30.4%).
    check_workload(
        "deeprec",
        &["-F", "2000", "--stack-copy", "kernel"],
        &[],
        |_| vec!["1000".into(), "8".into()],
    );
}

#[test]
fn recursion_deeper_than_a_sample_record_holds() {
    let _s = serial();
    // 9,000 levels, asked for whole (--max-stack 10000): a kernel callchain that deep does
    // not fit a sample record (at most 8,169 frames), and the kernel dropped every sample
    // below that depth without counting it (bottom and the deepest levels of descend,
    // a tenth of the run, missing in the build with frame pointers); its walk also cost the
    // workload several times its CPU time. The kernel is now asked for 1,024 frames at most
    // and the rest comes from the thread's earlier samples.
    // At 500 Hz: a debug pkgmon unwinding 9,000-frame stacks 4,000 times a second fell
    // behind (534-2,188 samples lost, each loss cutting the stacks completed after it), and
    // each sample's distinct stack takes ~36 KiB of the stacks file (at 1 kHz 86 MB, and the
    // test took 50 s). The stack is touched first (PREFAULT), so that no sample lands in a
    // fault of its growth.
    // prefault's frame, the whole stack the recursion will use, is larger than the copy.
    check_workload(
        "deeprec",
        &["-F", "500", "--max-stack", "10000"],
        &["prefault"],
        |_| vec!["9000".into(), "1".into(), "1".into()],
    );
}

#[test]
fn frame_pointers_without_unwind_tables() {
    let _s = serial();
    // Built with -fno-asynchronous-unwind-tables, the program's functions have no unwind
    // entry, only frame pointers, while the C library's start-up code has unwind entries and
    // no frame pointer. A sample in main was cut at __libc_start_call_main (every one, 4.5%
    // of the recursion workload's samples, and 14% of all its stacks with those of the
    // deeper functions whose first frame fell to the same guess): the frame-pointer chain
    // now goes on from there by the C library's unwind entries. Threads start in frameless
    // glibc code too (start_thread, clone3).
    let only = [Build::FramePointersOnly];
    check_workload_built(&only, "recursion", &[], &[], |_| vec!["3".into()]);
    check_workload_built(&only, "threads", &["-F", "10000"], &[], |_| {
        vec!["1".into()]
    });
    check_workload_built(&only, "libs", &[], &[], |d| {
        vec![d.to_string_lossy().into_owned(), "2".into()]
    });
}

#[test]
fn callbacks_from_libc() {
    let _s = serial();
    // 4 kHz: a share of 30% is known to 0.5 points (one sigma) from ~9,000 samples, where
    // the default 1 kHz gave ~600 in this 0.6 s run and a sigma of ~1.8, near the tolerance.
    check_workload("callback", &["-F", "4000"], &[], |_| vec!["2".into()]);
}

#[test]
fn signal_handlers() {
    let _s = serial();
    check_workload("signal", &["-F", "4000"], &[], |_| vec!["4".into()]);
}

/// A handler on an alternate stack (sigaltstack): the stack copy taken in it holds the signal
/// frame, not the stack the signal interrupted, so its stacks cannot go past the interrupted
/// instruction and must be reported truncated, never given a caller. With frame pointers the
/// kernel's chain went on from the interrupted code's rbp, past the interrupted function
/// (libc's raise, frameless) and its caller: every handler stack came out whole under `main`,
/// no truncation counted, raiser 12.6% inclusive for 56.4%. Self times must be right either
/// way, and the functions outside the handler keep their inclusive times.
#[test]
fn signal_handlers_on_an_alternate_stack_are_cut_where_the_copy_ends() {
    let _s = serial();
    let mut bad = Vec::new();
    for build in [Build::FramePointers, Build::NoFramePointers] {
        let d = built(build);
        let what = format!("signal on an alternate stack {}", build.flag());
        let mut run = profile(
            &format!("sigalt{}", build.flag()),
            &d.join("signal"),
            &["4", "1"],
            &["-F", "4000"],
        );
        let before = bad.len();
        for mode in ["gprof", "stacks"] {
            let l = listing(&run, mode);
            for (name, &(t_self, t_incl)) in &run.truth {
                let got_self = l.self_pct.get(name).copied().unwrap_or(0.0);
                if (t_self - got_self).abs() > TOLERANCE {
                    bad.push(format!(
                        "{what}, --inclusive={mode}: {name} self {got_self:.1}% but the program \
                         measured {t_self:.1}%"
                    ));
                }
                let got_incl = l.incl_pct.get(name).copied().unwrap_or(0.0);
                if mode == "stacks" && name == "plain" && (t_incl - got_incl).abs() > TOLERANCE {
                    bad.push(format!(
                        "{what}: plain inclusive {got_incl:.1}% but the program measured \
                         {t_incl:.1}%"
                    ));
                }
            }
        }
        // Every stack through the handler is cut, or goes through raiser (whose call of raise
        // the signal interrupted); the cut ones are the truncated stacks counted.
        let folded = Command::new(PKGPROF)
            .args(["--export=folded", "--pid", &run.pid.to_string()])
            .arg(&run.dir)
            .output()
            .unwrap();
        assert!(folded.status.success());
        let text = String::from_utf8_lossy(&folded.stdout);
        let label = format!("{}u:", run.pid);
        let (mut cut, mut made_up) = (0u64, 0u64);
        for line in text.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            let n: u64 = n.parse().unwrap();
            let frames: Vec<&str> = stack.split(';').collect();
            if !frames.contains(&format!("{label}handler").as_str()) {
                continue;
            }
            if frames[0] == format!("{label}[truncated]") {
                cut += n;
            } else if !frames.contains(&format!("{label}raiser").as_str()) {
                made_up += n;
            }
        }
        let truncated = sampling_field(&info(&run), "truncated-stacks");
        eprintln!(
            "{what}: {cut} handler stacks cut, {made_up} with a made-up caller, {truncated} truncated"
        );
        if made_up > 0 || cut == 0 || cut > truncated {
            bad.push(format!(
                "{what}: {made_up} handler stacks given a caller that is not raiser, {cut} cut \
                 ({truncated} truncated stacks counted)\n{}",
                run.stderr
            ));
        }
        run.keep = bad.len() > before;
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Stacks cut where the copy stopped at a page not yet touched (the untouched workload drops
/// its array's pages and touches them again one by one) are counted for that, by both builds,
/// and said so by the summary. With frame pointers the kernel's chain went on to glibc's
/// __libc_start_call_main, which keeps none, and such a stack with no earlier whole one to be
/// completed from (the first call, before any sample of main) was counted for want of unwind
/// information: 22 and 23 of 24 in two runs (the reload workload had one such stack, at
/// main's first touch of its buffers, in one run of ~10). Self times must be right; main's
/// inclusive time is not, without frame pointers (78% of the stacks are cut).
#[test]
fn stacks_cut_at_a_page_not_yet_touched_are_counted_for_the_copy() {
    let _s = serial();
    let mut bad = Vec::new();
    for build in [Build::FramePointers, Build::NoFramePointers] {
        let d = built(build);
        let what = format!("untouched {}", build.flag());
        let mut run = profile(
            &format!("untouched{}", build.flag()),
            &d.join("untouched"),
            &["1"],
            &["-F", "4000"],
        );
        let before = bad.len();
        for mode in ["gprof", "stacks"] {
            let l = listing(&run, mode);
            for (name, &(t_self, _)) in &run.truth {
                let got = l.self_pct.get(name).copied().unwrap_or(0.0);
                if (t_self - got).abs() > TOLERANCE {
                    bad.push(format!(
                        "{what}, --inclusive={mode}: {name} self {got:.1}% but the program \
                         measured {t_self:.1}%"
                    ));
                }
            }
        }
        let inf = info(&run);
        let truncated = sampling_field(&inf, "truncated-stacks");
        let copy = sampling_field(&inf, "truncated-stack-copy");
        let untouched = untouched_pages(&run.stderr);
        eprintln!(
            "{what}: {truncated} truncated, {copy} by the copy, {untouched} at a page not yet touched"
        );
        if truncated == 0 || copy != truncated || untouched != truncated {
            bad.push(format!(
                "{what}: {truncated} truncated stacks, {copy} counted for the stack copy, \
                 {untouched} said to end at a page not yet touched\n{}",
                run.stderr
            ));
        }
        run.keep = bad.len() > before;
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn large_stack_frames() {
    let _s = serial();
    check_workload("bigstack", &[], &[], |_| vec!["2".into()]);
}

/// A parent and the two children it forks, each measuring itself from its start: each
/// process's listing is its own (a child's samples neither in its parent's nor missing from its
/// own), and a child's stacks reach its `main` through the frames it inherited.
#[test]
fn processes_forked_are_each_measured_apart() {
    let _s = serial();
    let processes = check_workload("forks", &["-F", "4000"], &[], |_| vec!["2".into()]);
    assert_eq!(processes, [3, 3], "a parent and two children in each build");
}

/// A Rust program: its own start-up frames between the C library's and `main`, a standard
/// library built without frame pointers beneath a program built with them, a comparator under
/// the standard library's generic sort, mangled names.
#[test]
fn rust_programs() {
    let _s = serial();
    check_workload("rustwork", &["-F", "4000"], &[], |_| vec!["3".into()]);
}

#[test]
fn shared_libraries_through_the_plt_and_dlopen() {
    let _s = serial();
    check_workload("libs", &[], &[], |d| {
        vec![d.to_string_lossy().into_owned(), "2".into()]
    });
}

/// Two libraries loaded and unloaded in turn, each mapped where the other was the round
/// before: the profiles keep addresses, not times, so before the collector wrote the later
/// mapping displaced the samples of one were read as the other's (reload_work 29.2%
/// inclusive for 58.4%, other_work 29.2% for 19.4%, in both modes and both builds).
#[test]
fn libraries_unloaded_and_loaded_in_each_others_place() {
    let _s = serial();
    check_workload("reload", &["-F", "4000"], &[], |d| {
        vec![d.to_string_lossy().into_owned(), "1".into()]
    });
}

/// Threads, one on a 64 KiB stack, and 150 started one after the other: every thread's
/// stacks start at glibc's clone3, which pthread_create calls too, and in gprof's arithmetic
/// the few samples of the spawner in clone3 (its only arcs as a callee) took every thread's
/// time: `main` 99.9% inclusive where it measured 20.3% (21.0% without frame pointers), the
/// spawner 59.9% for 0.6% (78.0% for 1.1%). The collector now counts each stack's root (arcs
/// from `ROOT_FROM_PC`), which the report draws as `[root]`. At 10 kHz, where the spawner is
/// sampled in clone3 (34 to 60 times a run when it started 300; at 4 kHz a thread starting
/// threads so often is hardly sampled: see threads.c).
#[test]
fn threads_whose_first_frame_is_also_called() {
    let _s = serial();
    check_workload("threads", &["-F", "10000"], &[], |_| vec!["1".into()]);
}

/// The (start, end) file addresses of the workload's sections named in `names`.
fn sections(path: &Path, names: &[&str]) -> Vec<(u64, u64)> {
    use object::{Object as _, ObjectSection as _};
    let data = std::fs::read(path).unwrap();
    let f = object::File::parse(&*data).unwrap();
    f.sections()
        .filter(|s| s.name().is_ok_and(|n| names.contains(&n)))
        .map(|s| (s.address(), s.address() + s.size()))
        .collect()
}

/// Function symbols of the workload, by name: (start, end) file addresses.
fn functions(path: &Path) -> BTreeMap<String, (u64, u64)> {
    use object::{Object as _, ObjectSymbol as _};
    let data = std::fs::read(path).unwrap();
    let f = object::File::parse(&*data).unwrap();
    f.symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .map(|s| {
            (
                s.name().unwrap().to_owned(),
                (s.address(), s.address() + s.size()),
            )
        })
        .collect()
}

/// Asserts that every stack of `run` (of `exe`, built without frame pointers) through the
/// functions `ours` is truncated for want of stack copy, and every other one complete but those
/// in code without unwind entries, exactly, by reason: in the stacks file, the info file and
/// pkgmon's summary; and that more than 500 samples went through `ours`.
fn all_through_cut_for_the_copy(run: &Run, exe: &Path, ours: &[&str]) {
    let inf = info(run);
    let exe_path = exe.to_string_lossy().into_owned();
    let mapping = inf
        .mappings
        .iter()
        .find(|m| m.path.as_deref() == Some(exe_path.as_bytes()))
        .expect("the executable's mapping");
    let bias = mapping.load_bias.expect("its load bias");
    let syms = functions(exe);
    let ours: Vec<(u64, u64)> = ours.iter().map(|n| syms[*n]).collect();
    let in_workload = |a: u64| {
        let svma = a.wrapping_sub(bias);
        ours.iter().any(|&(lo, hi)| lo <= svma && svma < hi)
    };
    // The start-up and exit code of `.init` and `.fini` (crti's `_init`, `_fini`) has no
    // unwind entry: a sample there (one run in ~15) rightly ends for want of it.
    let no_entry = sections(exe, &[".init", ".fini"]);
    let in_no_entry = |a: u64| {
        let svma = a.wrapping_sub(bias);
        no_entry.iter().any(|&(lo, hi)| lo <= svma && svma < hi)
    };
    let m = scan(&run.dir).unwrap();
    let p = m.processes.iter().find(|p| p.pid == run.pid).unwrap();
    let data = std::fs::read(p.stacks.as_ref().unwrap()).unwrap();
    let stacks = Stacks::parse(&data).unwrap();
    let (mut expected, mut flagged, mut unwind_info, mut wrong) = (0u64, 0u64, 0u64, Vec::new());
    for r in stacks.records() {
        let r = r.unwrap().1;
        let user: Vec<u64> = r.user.iter().collect();
        // The innermost frame is a pc, the others return addresses.
        let through_main = user
            .iter()
            .enumerate()
            .any(|(i, &a)| in_workload(if i == 0 { a } else { a - 1 }));
        let without_entry = !through_main && user.first().is_some_and(|&pc| in_no_entry(pc));
        expected += if through_main { r.samples } else { 0 };
        unwind_info += if without_entry { r.samples } else { 0 };
        flagged += if r.user_truncated { r.samples } else { 0 };
        if (through_main || without_entry) != r.user_truncated && !user.is_empty() {
            wrong.push(format!(
                "{} samples: truncated {} but through main {through_main}: {user:x?}",
                r.samples, r.user_truncated
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(expected > 500, "{expected} samples through main");
    // Every truncation for want of stack copy, none for another reason: the counts by
    // reason side by side, so that a failure says which reason took the others' stacks.
    let s = &inf.sampling;
    let by_reason = (
        s.truncated_stacks,
        s.truncated_stack_copy,
        s.truncated_callchain_limit.unwrap_or(0),
        s.truncated_unwind_info.unwrap_or(0),
    );
    let all = expected + unwind_info;
    assert_eq!(
        by_reason,
        (Some(all), Some(expected), 0, unwind_info),
        "(all, stack copy, callchain limit, unwind info); kept: {}",
        run.dir.display()
    );
    assert_eq!(flagged, all);
    assert!(
        run.stderr.contains(&format!("{all} truncated stacks")),
        "{}",
        run.stderr
    );
}

/// A frame larger than any copy and than framehop's rules hold (`main`'s 1 MiB, with rbp saved
/// at its top): every stack through `main` ends for want of stack copy, not of unwind
/// information (which framehop's refusal of the entry was taken for, until its return
/// address's place was read from the entry with gimli).
#[test]
fn frames_larger_than_the_unwinders_rules_are_cut_for_the_copy() {
    let _s = serial();
    let d = built(Build::NoFramePointers);
    let exe = d.join("hugeframe");
    let run = profile("hugeframe", &exe, &["1"], &["-F", "2000"]);
    all_through_cut_for_the_copy(&run, &exe, &["main", "spin", "truth_enter", "truth_leave"]);
}

/// With a stack copy smaller than `main`'s frame (16 KiB) and no frame pointers, every stack
/// through `main` must be reported truncated (for want of stack copy), and every other stack
/// (the dynamic loader's start, the exit) complete but those in code without unwind entries:
/// the counts are exact. The copy is 8 KiB, not
/// less: the loader maps libc 5,608 bytes below its entry's stack pointer (gdb, a breakpoint on
/// its mmap), so with a 4 KiB copy a sample there (one run in ten or so) was rightly truncated
/// outside `main`. With frame pointers a 4 KiB copy still gives every function its time.
#[test]
fn truncation_is_counted_exactly() {
    let _s = serial();
    let d = built(Build::NoFramePointers);
    let exe = d.join("bigstack");
    let run = profile("truncated", &exe, &["1"], &["--stack-size", "8192"]);
    // Everything main runs, the instrumentation included (a stack found only up to
    // truth_enter still went through main).
    let ours = [
        "main",
        "mid",
        "chunky",
        "leaf",
        "truth_enter",
        "truth_leave",
    ];
    all_through_cut_for_the_copy(&run, &exe, &ours);

    let d = built(Build::FramePointers);
    let run = profile(
        "small-copy-fp",
        &d.join("bigstack"),
        &["2"],
        &["--stack-size", "4096"],
    );
    let (bad, _) = compare(&run, "bigstack -fno-omit-frame-pointer --stack-size 4096");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
