//! `pkgprof --pid`: the synthetic measurement of fixtures/seamless/ (generated here), archived
//! re-analysis, missing and changed objects, and GNU gprof reading `--merge-out`'s files.
//!
//! The measurement directory fixtures/seamless/measurement/ is written by this file from the
//! objects built by fixtures/seamless/build.sh: run with `PKGPROF_BLESS=1` to rewrite it after a
//! deliberate change; otherwise the test checks the committed files are what it would write.
//! The listings themselves are golden cases (fixtures/cases/seamless-*).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use callgraph::{SymbolOptions, SymbolTable};
use gmon_format::{
    ArcCounts, BoundaryKind, Comm, Endian, HistogramUnit, Mapping, MeasurementInfo, SECONDS,
    SampleRate, Stack, StacksWriter, write_sampled_profile,
};
use object::{Object, ObjectSegment};

fn seamless_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/seamless")
}

fn bless() -> bool {
    std::env::var_os("PKGPROF_BLESS").is_some_and(|v| v == "1")
}

const HZ: u32 = 1000;
const READER_BASE: u64 = 0x5555_5555_4000;
const LIBFAKE_BASE: u64 = 0x7f00_0000_0000;
const VDSO: u64 = 0x7fff_f7fc_1000;
const ANON: u64 = 0x7f10_0000_0000;
/// Where the recorded objects were: nowhere on this machine, as after archiving.
const RECORDED_DIR: &str = "/opt/pkgprof-fixture/bin";

const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81000100 T entry_SYSCALL_64
ffffffff81000400 T do_syscall_64
ffffffff81000800 T ksys_read
ffffffff81000a00 T ksys_write
ffffffff81000c00 T vfs_read
ffffffff81000e00 T vfs_write
ffffffff81001000 t copy_user_generic
ffffffff81001400 T asm_exc_page_fault
ffffffff81001500 T exc_page_fault
ffffffff81001600 T handle_mm_fault
ffffffff81001800 T asm_sysvec_apic_timer_interrupt
ffffffff81001900 T sysvec_apic_timer_interrupt
ffffffff81001a00 T scheduler_tick
ffffffff81001c00 T schedule
ffffffff81001e00 T do_idle
ffffffff81002000 T _etext
ffffffff82000000 D jiffies
ffffffffc0001000 t fake_mod_poll\t[fakemod]
";

struct Objects {
    reader: SymbolTable,
    libfake: SymbolTable,
    reader_id: Vec<u8>,
    libfake_id: Vec<u8>,
}

fn build_id(path: &Path) -> Vec<u8> {
    let data = fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    // The generator relies on the layout build.sh gives: code in the second segment,
    // file offset equal to the ELF address.
    let code = file.segments().nth(1).unwrap();
    assert_eq!(code.address(), 0x1000, "{}", path.display());
    assert_eq!(code.file_range().0, 0x1000, "{}", path.display());
    file.build_id().unwrap().unwrap().to_vec()
}

fn objects() -> Objects {
    let dir = seamless_dir().join("objects");
    let o = SymbolOptions::default();
    Objects {
        reader: SymbolTable::read(&dir.join("reader"), &o).unwrap(),
        libfake: SymbolTable::read(&dir.join("libfake.so"), &o).unwrap(),
        reader_id: build_id(&dir.join("reader")),
        libfake_id: build_id(&dir.join("libfake.so")),
    }
}

fn address(t: &SymbolTable, name: &str) -> u64 {
    t.symbols()
        .iter()
        .find(|s| s.name == name.as_bytes())
        .unwrap_or_else(|| panic!("no symbol {name}"))
        .address
}

fn kernel(name: &str) -> u64 {
    let line = KALLSYMS
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some(name))
        .unwrap();
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

/// Samples and arcs of one gmon file, built up by address.
#[derive(Default)]
struct Gmon {
    bins: BTreeMap<u64, u64>,
    arcs: BTreeMap<(u64, u64), u64>,
}

/// Distinct stacks: (kernel frames, user frames, boundary) → samples.
type StackMap = BTreeMap<(Vec<u64>, Vec<u64>, Option<BoundaryKind>), u64>;

/// `count` samples with these frames (innermost first), spread over the sampled pc and the
/// next bin as [`Gmon::samples`] spreads them.
fn stack(s: &mut StackMap, kernel: &[u64], user: &[u64], kind: Option<BoundaryKind>, count: u64) {
    for i in 0..count {
        let mut k = kernel.to_vec();
        let mut u = user.to_vec();
        let first = if k.is_empty() { &mut u[0] } else { &mut k[0] };
        *first = (*first & !1) + 2 * (i % 2);
        *s.entry((k, u, kind)).or_default() += 1;
    }
}

fn stacks_bytes(s: &StackMap) -> Vec<u8> {
    let mut w = StacksWriter::new(Vec::new(), s.len() as u64).unwrap();
    for ((kernel, user, boundary), &samples) in s {
        w.stack(&Stack {
            samples,
            nanoseconds: samples * 1_000_000,
            boundary: *boundary,
            user_truncated: false,
            kernel,
            user,
        })
        .unwrap();
    }
    w.finish().unwrap()
}

impl Gmon {
    /// `count` samples spread over the first bins from `at`.
    fn samples(&mut self, at: u64, count: u64) {
        for i in 0..count {
            *self.bins.entry((at & !1) + 2 * (i % 2)).or_default() += 1;
        }
    }
    fn arc(&mut self, from: u64, to: u64, count: u64) {
        *self.arcs.entry((from, to)).or_default() += count;
    }
    /// The contract's layout (see [`gmon_format::write_sampled_profile`]).
    fn bytes(&self) -> Vec<u8> {
        let samples: Vec<(u64, u64)> = self.bins.iter().map(|(&a, &n)| (a, n)).collect();
        let arcs = self.arcs.iter().map(|(&k, &n)| (k, n));
        let unit = HistogramUnit {
            prof_rate: HZ,
            dimension: SECONDS.0,
            dimension_abbrev: SECONDS.1,
        };
        write_sampled_profile(Endian::Little, &samples, arcs, Some(unit)).unwrap()
    }
}

fn info(pid: u32, comm: &str, argv: &[&str], o: &Objects) -> MeasurementInfo {
    let mut info = MeasurementInfo::default();
    let p = &mut info.process;
    p.pid = pid;
    p.ppid = Some(1);
    p.comm = Some(Comm::new(comm).unwrap());
    p.argv = Some(argv.iter().map(|a| a.as_bytes().to_vec()).collect());
    p.exe = Some(format!("{RECORDED_DIR}/reader").into_bytes());
    p.exe_build_id = Some(o.reader_id.clone());
    let s = &mut info.sampling;
    s.event = Some("cpu-clock".into());
    s.rate = Some(SampleRate::Frequency(u64::from(HZ)));
    s.period_unit = Some("ns".into());
    s.arcs = Some(ArcCounts::SampledEdges);
    s.lost_samples = Some(2);
    s.throttled = Some(0);
    info.kernel.release = Some("6.1.0-fixture".into());
    info.kernel.symbols_file = Some("kallsyms.0badc0de".into());
    let c = &mut info.counters;
    c.user_cpu_ns = Some(331_000_000);
    c.system_cpu_ns = Some(203_000_000);
    c.minor_faults = Some(57);
    c.major_faults = Some(1);
    c.voluntary_switches = Some(12);
    c.involuntary_switches = Some(3);
    c.read_bytes = Some(6400);
    c.written_bytes = Some(0);
    let mut exe = Mapping::new(READER_BASE + 0x1000, READER_BASE + 0x2000);
    exe.file_offset = Some(0x1000);
    exe.load_bias = Some(READER_BASE);
    exe.path = Some(format!("{RECORDED_DIR}/reader").into_bytes());
    exe.build_id = Some(o.reader_id.clone());
    // No bias: the report works it out from libfake.so's program headers.
    let mut lib = Mapping::new(LIBFAKE_BASE + 0x1000, LIBFAKE_BASE + 0x2000);
    lib.file_offset = Some(0x1000);
    lib.path = Some(format!("{RECORDED_DIR}/libfake.so").into_bytes());
    lib.build_id = Some(o.libfake_id.clone());
    let mut vdso = Mapping::new(VDSO, VDSO + 0x2000);
    vdso.path = Some(b"[vdso]".to_vec());
    let anon = Mapping::new(ANON, ANON + 0x10000);
    info.mappings = vec![exe, lib, vdso, anon];
    info
}

/// The collector's `[boundary]` section: samples per kind of kernel entry.
fn boundary(counts: [u64; 4], stacks: &str) -> gmon_format::BoundaryCounts {
    let mut b = gmon_format::BoundaryCounts::default();
    b.entries = BoundaryKind::ALL.into_iter().zip(counts).collect();
    b.stacks_file = Some(stacks.into());
    b
}

/// The files of the measurement, by name.
fn measurement() -> BTreeMap<String, Vec<u8>> {
    let o = objects();
    let r = |name| READER_BASE + address(&o.reader, name);
    let l = |name| LIBFAKE_BASE + address(&o.libfake, name);
    let k = kernel;
    let mut files = BTreeMap::new();
    files.insert("kallsyms.0badc0de".to_owned(), KALLSYMS.as_bytes().to_vec());

    // Process 137, "reader": compute burns user time and takes page faults and timer
    // interrupts; read_input calls libfake's read, which enters the kernel by system call.
    let (mut u, mut kg, mut st) = (Gmon::default(), Gmon::default(), StackMap::new());
    let main_to_compute = r("main") + 0x10;
    let main_to_read_input = r("main") + 0x20;
    let main_to_read = r("main") + 0x30;
    let read_input_to_read = r("read_input") + 0x8;
    let in_compute = [r("compute") + 0x8, main_to_compute];
    let in_read = [l("read"), read_input_to_read, main_to_read_input];
    let user = |u: &mut Gmon, st: &mut StackMap, frames: &[u64], n| {
        u.samples(frames[0], n);
        stack(st, &[], frames, None, n);
    };
    user(&mut u, &mut st, &in_compute, 300);
    user(
        &mut u,
        &mut st,
        &[r("read_input") + 0x4, main_to_read_input],
        4,
    );
    user(&mut u, &mut st, &[r("main") + 0x4], 2);
    user(&mut u, &mut st, &in_read, 3);
    // main also calls read directly, for reads that end at once: cheap calls, all user time.
    user(&mut u, &mut st, &[l("read"), main_to_read], 40);
    user(&mut u, &mut st, &[VDSO + 0x40], 2);
    user(&mut u, &mut st, &[ANON + 0x100], 1);
    // Kernel time under read: 175 samples; under compute: 10 faults, 8 interrupts.
    let syscall = [
        ("entry_SYSCALL_64", 5),
        ("do_syscall_64", 10),
        ("ksys_read", 20),
        ("vfs_read", 40),
        ("copy_user_generic", 100),
    ];
    let syscall_user = [l("read") + 2, read_input_to_read, main_to_read_input];
    for (depth, (name, n)) in syscall.iter().enumerate() {
        kg.samples(k(name) + 0x10, *n);
        let mut frames = vec![k(name) + 0x10];
        frames.extend(
            syscall[..depth]
                .iter()
                .rev()
                .map(|(caller, _)| k(caller) + 0x20),
        );
        stack(
            &mut st,
            &frames,
            &syscall_user,
            Some(BoundaryKind::Syscall),
            *n,
        );
    }
    kg.samples(k("handle_mm_fault") + 0x10, 10);
    let fault = [
        k("handle_mm_fault") + 0x10,
        k("exc_page_fault") + 0x20,
        k("asm_exc_page_fault") + 0x20,
    ];
    stack(&mut st, &fault, &in_compute, Some(BoundaryKind::Fault), 10);
    kg.samples(k("scheduler_tick") + 0x10, 8);
    let tick = [
        k("scheduler_tick") + 0x10,
        k("sysvec_apic_timer_interrupt") + 0x20,
        k("asm_sysvec_apic_timer_interrupt") + 0x20,
    ];
    stack(
        &mut st,
        &tick,
        &in_compute,
        Some(BoundaryKind::Interrupt),
        8,
    );
    // User edges of every sample's user stack (user and kernel samples alike).
    u.arc(main_to_compute, r("compute") + 0x8, 300 + 18);
    u.arc(main_to_read_input, r("read_input") + 0x4, 4 + 3 + 175);
    u.arc(read_input_to_read, l("read"), 3 + 175);
    u.arc(main_to_read, l("read"), 40);
    // Boundary arcs: the innermost user pc to the outermost kernel frame.
    kg.arc(l("read") + 2, k("entry_SYSCALL_64") + 0x10, 175);
    kg.arc(r("compute") + 0x8, k("asm_exc_page_fault") + 0x10, 10);
    kg.arc(
        r("compute") + 0x8,
        k("asm_sysvec_apic_timer_interrupt") + 0x10,
        8,
    );
    kg.arc(k("entry_SYSCALL_64") + 0x20, k("do_syscall_64") + 0x10, 170);
    kg.arc(k("do_syscall_64") + 0x20, k("ksys_read") + 0x10, 160);
    kg.arc(k("ksys_read") + 0x20, k("vfs_read") + 0x10, 140);
    kg.arc(k("vfs_read") + 0x20, k("copy_user_generic") + 0x10, 100);
    kg.arc(
        k("asm_exc_page_fault") + 0x20,
        k("exc_page_fault") + 0x10,
        10,
    );
    kg.arc(k("exc_page_fault") + 0x20, k("handle_mm_fault") + 0x10, 10);
    kg.arc(
        k("asm_sysvec_apic_timer_interrupt") + 0x20,
        k("sysvec_apic_timer_interrupt") + 0x10,
        8,
    );
    kg.arc(
        k("sysvec_apic_timer_interrupt") + 0x20,
        k("scheduler_tick") + 0x10,
        8,
    );
    files.insert("gmon.out.137s.reader".into(), stacks_bytes(&st));
    files.insert("gmon.out.137u.reader".into(), u.bytes());
    files.insert("gmon.out.137k.reader".into(), kg.bytes());
    let mut text = Vec::new();
    let mut reader = info(137, "reader", &["reader", "-n", "100"], &o);
    reader.boundary = boundary([175, 10, 8, 0], "gmon.out.137s.reader");
    reader.write(&mut text).unwrap();
    files.insert("gmon.out.137.reader".into(), text);

    // Process 138, "server": the same program, writing through libfake's write.
    let (mut u, mut kg, mut st) = (Gmon::default(), Gmon::default(), StackMap::new());
    u.samples(r("compute") + 0x8, 50);
    stack(&mut st, &[], &in_compute, None, 50);
    u.samples(l("write"), 1);
    stack(&mut st, &[], &[l("write"), main_to_read_input], None, 1);
    u.arc(main_to_compute, r("compute") + 0x8, 50);
    u.arc(main_to_read_input, l("write"), 1 + 30);
    kg.samples(k("vfs_write") + 0x10, 30);
    let write_path = [
        k("vfs_write") + 0x10,
        k("ksys_write") + 0x20,
        k("do_syscall_64") + 0x20,
        k("entry_SYSCALL_64") + 0x20,
    ];
    let write_user = [l("write") + 2, main_to_read_input];
    stack(
        &mut st,
        &write_path,
        &write_user,
        Some(BoundaryKind::Syscall),
        30,
    );
    kg.arc(l("write") + 2, k("entry_SYSCALL_64") + 0x10, 30);
    kg.arc(k("entry_SYSCALL_64") + 0x20, k("do_syscall_64") + 0x10, 30);
    kg.arc(k("do_syscall_64") + 0x20, k("ksys_write") + 0x10, 30);
    kg.arc(k("ksys_write") + 0x20, k("vfs_write") + 0x10, 30);
    files.insert("gmon.out.138s.server".into(), stacks_bytes(&st));
    files.insert("gmon.out.138u.server".into(), u.bytes());
    files.insert("gmon.out.138k.server".into(), kg.bytes());
    let mut text = Vec::new();
    let mut server = info(138, "server", &["server", "--port", "7"], &o);
    server.process.ppid = Some(137);
    server.counters.perf_context_switches = Some(15);
    server.boundary = boundary([30, 0, 0, 0], "gmon.out.138s.server");
    server.write(&mut text).unwrap();
    files.insert("gmon.out.138.server".into(), text);

    // System-wide: idle and a module's poll for no process, and work for other processes.
    let mut kk = Gmon::default();
    kk.samples(k("do_idle") + 0x10, 40);
    kk.samples(k("fake_mod_poll") + 0x4, 6);
    kk.arc(k("do_idle") + 0x20, k("schedule") + 0x10, 3);
    files.insert("gmon.out.-k.kernel".into(), kk.bytes());
    let mut ko = Gmon::default();
    ko.samples(k("vfs_read") + 0x10, 7);
    ko.arc(0x4000_1234, k("entry_SYSCALL_64") + 0x10, 7);
    ko.arc(k("entry_SYSCALL_64") + 0x20, k("vfs_read") + 0x10, 7);
    files.insert("gmon.out.-k.other".into(), ko.bytes());
    files
}

#[test]
fn the_committed_measurement_is_what_the_generator_writes() {
    let dir = seamless_dir().join("measurement");
    let files = measurement();
    if bless() {
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        for (name, data) in &files {
            fs::write(dir.join(name), data).unwrap();
        }
        return;
    }
    let mut committed: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    committed.sort();
    assert_eq!(
        committed,
        files.keys().cloned().collect::<Vec<_>>(),
        "fixtures/seamless/measurement differs from the generator; \
         rerun with PKGPROF_BLESS=1 if that is intended"
    );
    for (name, data) in &files {
        assert!(
            fs::read(dir.join(name)).unwrap() == *data,
            "{name} differs from the generator; rerun with PKGPROF_BLESS=1 if intended"
        );
    }
}

fn pkgprof(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// The Figure 2.2 chain, in a `-b -q` listing: who is whose parent.
fn parents_of<'a>(listing: &'a str, name: &str) -> Vec<&'a str> {
    // An entry starts with its parents, then the `[n]` line of the function itself.
    let mut parents = Vec::new();
    for line in listing.lines() {
        if line.starts_with('[') {
            let is_it = line.split_whitespace().any(|w| w == name);
            if is_it {
                return parents;
            }
            parents.clear();
        } else if line.starts_with("----") {
            parents.clear();
        } else if let Some(last) = line.split_whitespace().rev().nth(1) {
            parents.push(last);
        }
    }
    panic!("{name} not in the listing:\n{listing}");
}

#[test]
fn an_archived_measurement_reports_from_anywhere() {
    let root = scratch("archived");
    copy_dir(&seamless_dir().join("measurement"), &root.join("m"));
    copy_dir(&seamless_dir().join("objects"), &root.join("bins"));
    let (stdout, stderr, status) = pkgprof(
        &root,
        &["-b", "-q", "--pid", "137", "--object-path", "bins", "m"],
    );
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(parents_of(&stdout, "137k:entry_SYSCALL_64"), ["137u:read"]);
    assert_eq!(
        parents_of(&stdout, "137u:read"),
        ["137u:main", "137u:read_input"]
    );
    assert_eq!(parents_of(&stdout, "137u:read_input"), ["137u:main"]);
    // Interrupts are not calls from the user function: they hang below it through
    // `[interrupt]`, so its inclusive time holds them.
    assert_eq!(
        parents_of(&stdout, "137k:asm_sysvec_apic_timer_interrupt"),
        ["137k:[interrupt]"]
    );
    assert_eq!(parents_of(&stdout, "137k:[interrupt]"), ["137u:compute"]);
    assert_eq!(
        parents_of(&stdout, "137k:asm_exc_page_fault"),
        ["137u:compute"]
    );

    // The same by build-id only, in a debug-file layout.
    let ids = root.join("ids");
    for (file, id) in [
        ("reader", &objects().reader_id),
        ("libfake.so", &objects().libfake_id),
    ] {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let sub = ids.join(".build-id").join(&hex[..2]);
        fs::create_dir_all(&sub).unwrap();
        fs::copy(
            root.join("bins").join(file),
            sub.join(format!("{}.debug", &hex[2..])),
        )
        .unwrap();
    }
    let (by_id, stderr, _) = pkgprof(
        &root,
        &["-b", "-q", "--pid", "137", "--object-path", "ids", "m"],
    );
    assert_eq!(stderr, "");
    assert_eq!(by_id, stdout);
}

#[test]
fn a_missing_or_changed_object_is_named_and_the_report_goes_on() {
    let root = scratch("changed");
    copy_dir(&seamless_dir().join("objects-other"), &root.join("other"));
    let m = seamless_dir().join("measurement");
    let (stdout, stderr, status) = pkgprof(
        &root,
        &[
            "-b",
            "-p",
            "--pid=137",
            "--object-path=other",
            m.to_str().unwrap(),
        ],
    );
    assert_eq!(status, 0);
    let reader_id: String = objects()
        .reader_id
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let line = stderr
        .lines()
        .find(|l| l.contains("/reader"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.starts_with(&format!(
            "pkgprof: warning: process 137: cannot use {RECORDED_DIR}/reader (build-id {reader_id}): \
             {RECORDED_DIR}/reader: not found; other/reader: build-id "
        )),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            " differs from the recorded {reader_id}; other/.build-id/"
        )),
        "{line}"
    );
    assert!(
        line.ends_with("; its samples are reported as 137u:[reader]"),
        "{line}"
    );
    assert!(stdout.contains("137u:[reader]"), "{stdout}");
    assert!(stderr.contains("libfake.so"), "{stderr}");
}

#[test]
fn gprof_reads_the_merged_profile_to_the_same_listing() {
    if Command::new("gprof").arg("--version").output().is_err() {
        panic!("GNU gprof is not installed; this test compares pkgprof with it");
    }
    let root = scratch("merge-out");
    let m = seamless_dir().join("measurement");
    let objects = seamless_dir().join("objects");
    for args in [&["-b"][..], &["-b", "-z"], &["-b", "-T"], &["-b", "-p"]] {
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--system",
            "--object-path",
            objects.to_str().unwrap(),
            "--merge-out",
            "merged.out",
            m.to_str().unwrap(),
        ]);
        let (ours, stderr, status) = pkgprof(&root, &all);
        assert_eq!((status, stderr.as_str()), (0, ""));
        let listing_starts = ours.find("\x0c\n").unwrap() + 2;
        let gprof = Command::new("gprof")
            .args(args)
            .args(["merged.out.elf", "merged.out"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(gprof.status.success(), "{gprof:?}");
        assert_eq!(
            &ours[listing_starts..],
            String::from_utf8(gprof.stdout).unwrap(),
            "pkgprof {args:?} --merge-out and gprof {args:?} differ"
        );
    }
}

/// `-l --pid`: every sample at the instruction it was taken at (its stack's innermost frame),
/// at the object file's address (function + offset), all of the header's samples; a
/// measurement without sampled stacks is refused with the reason.
#[test]
fn the_instruction_view_lists_each_stack_at_its_innermost_frame() {
    let root = scratch("instructions");
    copy_dir(&seamless_dir().join("measurement"), &root.join("m"));
    copy_dir(&seamless_dir().join("objects"), &root.join("bins"));
    let (stdout, stderr, status) =
        pkgprof(&root, &["-l", "--pid", "137", "--object-path", "bins", "m"]);
    assert_eq!((status, stderr.as_str()), (0, ""), "{stdout}");
    let header = (stdout.lines())
        .find(|l| l.trim_start().starts_with("samples:"))
        .unwrap();
    let words: Vec<&str> = header.split_whitespace().collect();
    let recorded: u64 = words[1].parse::<u64>().unwrap() + words[3].parse::<u64>().unwrap();
    let rows: Vec<Vec<&str>> = (stdout.lines())
        .skip_while(|l| !l.ends_with("function+offset"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let listed: u64 = rows.iter().map(|r| r[0].parse::<u64>().unwrap()).sum();
    assert_eq!(listed, recorded, "{stdout}");
    let o = objects();
    let mut checked = 0;
    for r in rows.iter().filter(|r| r[4] == "reader") {
        let place = r[6].strip_prefix("137u:").unwrap();
        let (name, offset) = place.split_once("+0x").unwrap_or((place, "0"));
        let want = address(&o.reader, name) + u64::from_str_radix(offset, 16).unwrap();
        assert_eq!(r[3], format!("{want:#x}"), "{stdout}");
        checked += 1;
    }
    assert!(checked >= 4, "{stdout}");
    assert!(rows[0][6].starts_with("137u:compute"), "{stdout}");

    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/labeled/measurement");
    let (_, stderr, status) = pkgprof(&root, &["-l", "--pid", "137", old.to_str().unwrap()]);
    assert_eq!(status, 1);
    assert!(
        stderr.contains(
            "-l lists the instructions the samples were taken at, which only the \
             sampled-stacks files hold"
        ) && stderr.contains("no sampled-stacks file (gmon.out.137s.<comm>)"),
        "{stderr}"
    );
    let _ = fs::remove_dir_all(&root);
}
