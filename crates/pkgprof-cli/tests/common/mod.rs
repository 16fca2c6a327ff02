//! What the end-to-end tests of pkgmon share: the collector's C workloads, built once, and a
//! lock that runs the tests one at a time.

#![allow(dead_code, reason = "each test binary uses a part")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub const PKGMON: &str = env!("CARGO_BIN_EXE_pkgmon");
pub const PKGPROF: &str = env!("CARGO_BIN_EXE_pkgprof");

/// TCP's processing of a data segment — queueing it, waking the reader, acknowledging it —
/// which only the reader's socket receives (the sender's gets acknowledgements only), in the
/// softirq (`net_rx_action`: not the owner's draining of its socket's backlog, which is its
/// own work already). A sample is in it when its stack holds a function of each list.
/// `tcp_data_queue` itself is not one: it also frees the pure acknowledgements the sender's
/// socket receives on its slow path (2 to 9 samples a paced run, rightly the sender's).
pub const TCP_DATA: &[&[&str]] = &[
    &[
        "tcp_queue_rcv",
        "tcp_data_queue_ofo",
        "tcp_try_rmem_schedule",
        "kfree_skb_partial",
        "tcp_event_data_recv",
        "tcp_grow_window",
        "tcp_data_ready",
        "sock_def_readable",
        "__tcp_ack_snd_check",
    ],
    &["net_rx_action"],
];

static SCRATCH: OnceLock<PathBuf> = OnceLock::new();
static FAILED: AtomicBool = AtomicBool::new(false);

/// The test binary's scratch directory. It is removed when the binary exits with every test
/// passed (the measurements written there reach gigabytes over a day of runs); a failure
/// keeps it, and says where.
pub fn scratch() -> &'static Path {
    SCRATCH.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("pkgmon-tests-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            FAILED.store(true, Ordering::SeqCst);
            previous(info);
        }));
        // Safety: registering a function with no preconditions, run once at exit.
        unsafe { libc::atexit(remove_scratch) };
        d
    })
}

extern "C" fn remove_scratch() {
    let Some(d) = SCRATCH.get() else { return };
    if FAILED.load(Ordering::SeqCst) {
        eprintln!("kept {} for inspection", d.display());
    } else {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A collector workload, compiled on first use.
pub fn workload(name: &str) -> PathBuf {
    let out = scratch().join(name);
    if !out.exists() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../collect-perf/tests/workloads/{name}.c"));
        compile(&src, name, &["-pthread"]);
    }
    out
}

/// Compiles C source `src` with -O2, frame pointers and `flags` into the scratch directory as
/// `name` (under a temporary name first, so a half-written program is never run).
pub fn compile(src: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let out = scratch().join(name);
    let tmp = scratch().join(format!("{name}.tmp"));
    let st = Command::new("cc")
        .args(["-O2", "-fno-omit-frame-pointer"])
        .args(flags)
        .arg("-o")
        .arg(&tmp)
        .arg(src)
        .status()
        .unwrap();
    assert!(st.success(), "cc failed for {}", src.display());
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// Tests run one at a time: the machine has two CPUs and the workloads count CPU time.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The kernel symbols a measurement saved (its `kallsyms.*` snapshot), sorted by address.
pub struct MeasuredKernel(gmon_format::Kallsyms);

impl MeasuredKernel {
    /// The snapshot of measurement `dir`.
    pub fn of(dir: &Path) -> MeasuredKernel {
        let file = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("kallsyms.")
            })
            .unwrap();
        let mut syms = gmon_format::Kallsyms::parse(
            &std::fs::read(file).unwrap(),
            &gmon_format::KallsymsOptions::entry_code(),
        )
        .unwrap();
        syms.sort_by_key(|s| s.address);
        MeasuredKernel(syms)
    }

    /// Whether `address` is in a function named in `names` (a `.suffix` of the symbol, as
    /// `.isra.0`, ignored).
    pub fn is_in(&self, address: u64, names: &[&str]) -> bool {
        self.0.last_at_or_below(address).is_some_and(|i| {
            let name = String::from_utf8_lossy(self.0.symbol(i).name);
            names.contains(&name.split('.').next().unwrap_or(""))
        })
    }
}

/// The `async.moves` of measurement `dir`, its conservation checked: every held sample was
/// charged once, to a process or to the residue, and the matrix and the moved stacks hold
/// them all.
pub fn conserved_moves(dir: &Path) -> gmon_format::AsyncMoves {
    let data = std::fs::read(dir.join(gmon_format::ASYNC_MOVES_FILE)).unwrap();
    let moves = gmon_format::AsyncMoves::parse(&data).unwrap();
    for k in &moves.kinds {
        assert_eq!(k.held, k.attributed + k.unattributed(), "{k:?}");
        let cells: u64 = moves.moves_of(&k.kind).map(|m| m.samples).sum();
        assert_eq!(cells, k.held, "{k:?}");
        let stacks: u64 = (moves.stacks.iter())
            .filter(|s| s.kind == k.kind)
            .map(|s| s.samples)
            .sum();
        assert_eq!(stacks, k.held, "{k:?}");
    }
    moves
}

/// Checks the view as recorded (`pkgprof --async=victim`) of measurement `dir` against the
/// view charged to the beneficiary, on the whole system: the same kernel samples in all,
/// and for each of `pids` exactly its own plus what it gave less what it received, as the
/// matrix says; no file disagrees with `async.moves`.
pub fn as_recorded_is_exact(dir: &Path, pids: &[u32]) {
    let m = gmon_format::scan(dir).unwrap();
    let build = |as_recorded: bool| {
        let mut o = callgraph::SeamlessOptions::default();
        o.stacks = true;
        o.async_as_recorded = as_recorded;
        callgraph::Seamless::build(&m, &callgraph::ProcessSelection::System, &o).unwrap()
    };
    let (charged, recorded) = (build(false), build(true));
    assert!(
        (recorded.warnings.iter()).all(|w| !w.contains("async")),
        "{:?}",
        recorded.warnings
    );
    // By label: a process that ran two images (an exec) has two entries with its pid.
    let kernel = |s: &callgraph::Seamless| {
        let mut by_label = std::collections::BTreeMap::<String, u64>::new();
        for p in &s.processes {
            *by_label.entry(p.label.clone()).or_default() += p.kernel_samples;
        }
        by_label
    };
    let (charged, recorded) = (kernel(&charged), kernel(&recorded));
    assert_eq!(
        charged.values().sum::<u64>(),
        recorded.values().sum::<u64>(),
        "{charged:?}\n{recorded:?}"
    );
    let moves = conserved_moves(dir);
    for &pid in pids {
        let sum = |f: &dyn Fn(&gmon_format::async_moves::Move) -> bool| -> u64 {
            moves.moves.iter().filter(|m| f(m)).map(|m| m.samples).sum()
        };
        let received = sum(&|m| m.beneficiary == Some(pid));
        let gave = sum(&|m| m.victim == Some(pid));
        let label = pid.to_string();
        assert_eq!(
            recorded[&label] + received,
            charged[&label] + gave,
            "process {pid}: as recorded {}, charged {}, received {received}, gave {gave}",
            recorded[&label],
            charged[&label]
        );
    }
}

/// Standard output of `pkgprof ARGS… DIR`, which must succeed (its stderr in the message if not).
pub fn pkgprof_on(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(PKGPROF).args(args).arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "pkgprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Points the section headers named `sections` of the ELF64 file `path` at one region of
/// `size` bytes of holes appended to it: a file whose own headers claim huge sections that
/// cost nothing on disk (the loader never reads section headers, so a program still runs).
pub fn claim_sections_over_holes(path: &Path, sections: &[&[u8]], size: u64) {
    let mut b = std::fs::read(path).unwrap();
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes(b[at..at + 2].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (shoff, shentsize) = (u64_at(&b, 0x28) as usize, u16_at(&b, 0x3a) as usize);
    let (shnum, shstrndx) = (u16_at(&b, 0x3c) as usize, u16_at(&b, 0x3e) as usize);
    let strtab = u64_at(&b, shoff + shstrndx * shentsize + 0x18) as usize;
    let region = (b.len() as u64).next_multiple_of(4096);
    let mut patched = 0;
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        let name_at = strtab + u32::from_le_bytes(b[h..h + 4].try_into().unwrap()) as usize;
        let name = &b[name_at..name_at + b[name_at..].iter().position(|&c| c == 0).unwrap()];
        if sections.contains(&name) {
            b[h + 0x18..h + 0x20].copy_from_slice(&region.to_le_bytes());
            b[h + 0x20..h + 0x28].copy_from_slice(&size.to_le_bytes());
            patched += 1;
        }
    }
    assert_eq!(
        patched,
        sections.len(),
        "{}: sections missing",
        path.display()
    );
    std::fs::write(path, &b).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(region + size)
        .unwrap();
}
