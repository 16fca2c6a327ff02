//! Helpers shared by the end-to-end tests: C workloads compiled on first use, a serial lock,
//! kernel and ELF symbol lookups.

#![allow(clippy::unwrap_used, dead_code)]

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use collect_perf::{Config, Recording, Sampler, preflight};

/// Compiles workload `name` once per test process into the target directory (not /tmp: no
/// test leaves anything there), through a file of this process's own that replaces the
/// previous build at once, since another test process may be running it.
pub fn workload(name: &str) -> PathBuf {
    workload_built(name, &["-O2", "-fno-omit-frame-pointer", "-pthread"])
}

/// [`workload`] compiled with `flags` instead (a build of its own, named after them).
pub fn workload_built(name: &str, flags: &[&str]) -> PathBuf {
    static BUILT: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("collect-perf-workloads");
    let file = match flags {
        ["-O2", "-fno-omit-frame-pointer", "-pthread"] => name.to_owned(),
        _ => format!("{name}{}", flags.concat()).replace(|c: char| !c.is_alphanumeric(), "_"),
    };
    let out = dir.join(&file);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.insert(file.clone()) {
        std::fs::create_dir_all(&dir).expect("create the workload dir");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/workloads/{name}.c"));
        let tmp = dir.join(format!("{file}.{}.tmp", std::process::id()));
        let st = Command::new("cc")
            .args(flags)
            .arg("-o")
            .arg(&tmp)
            .arg(&src)
            .status()
            .expect("run cc");
        assert!(st.success(), "cc failed for {}", src.display());
        std::fs::rename(&tmp, &out).expect("rename workload");
    }
    out
}

/// The machine has 2 CPUs: tests run one at a time so CPU-bound workloads get their CPU time.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn config() -> Config {
    let c = Config::default();
    if let Err(e) = preflight(&c) {
        panic!("perf_event_open is not usable here: {e}");
    }
    c
}

pub fn record(argv: &[OsString], c: &Config) -> Recording {
    let s = match Sampler::launch(argv, c) {
        Ok(s) => s,
        Err(e) => panic!("launch failed: {e} ({:?})", std::error::Error::source(&e)),
    };
    s.run(&AtomicBool::new(false)).expect("run")
}

pub fn args(v: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    v.iter().map(|a| a.as_ref().to_owned()).collect()
}

/// Tiny /proc/kallsyms lookup: address → symbol name.
pub struct Kallsyms(Vec<(u64, String)>);

impl Kallsyms {
    pub fn load() -> Kallsyms {
        let text = std::fs::read_to_string("/proc/kallsyms").expect("read /proc/kallsyms");
        let mut v: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let a = u64::from_str_radix(f.next()?, 16).ok()?;
                let t = f.next()?;
                if !matches!(t, "t" | "T" | "w" | "W") {
                    return None;
                }
                Some((a, f.next()?.to_owned()))
            })
            .collect();
        v.sort();
        assert!(
            v.last().is_some_and(|l| l.0 != 0),
            "kallsyms addresses hidden"
        );
        Kallsyms(v)
    }

    pub fn name(&self, addr: u64) -> Option<&str> {
        let i = self.0.partition_point(|(a, _)| *a <= addr);
        (i > 0).then(|| self.0[i - 1].1.as_str())
    }
}

/// Function symbols of an ELF file (`.symtab` and `.dynsym`), looked up by file address.
/// The function of process `p` containing an address at a time, by the symbols of the file
/// mapped there (each file read once; None in a mapping of no file, such as the vDSO).
pub fn namer(p: &collect_perf::Process) -> impl FnMut(u64, u64) -> Option<String> + '_ {
    let mut files: std::collections::BTreeMap<String, ElfSyms> = Default::default();
    move |a, t| {
        let m = p.mapping_at(a, t).filter(|m| m.filename.starts_with('/'))?;
        let syms = files
            .entry(m.filename.to_string())
            .or_insert_with(|| ElfSyms::load(&m.filename));
        syms.name(m, a).map(str::to_owned)
    }
}

pub struct ElfSyms {
    syms: Vec<(u64, u64, String)>,
    segments: Vec<(u64, u64, u64)>,
}

impl ElfSyms {
    pub fn load(path: &str) -> ElfSyms {
        use object::read::elf::{ElfFile64, ProgramHeader as _};
        use object::{Object as _, ObjectSymbol as _};
        let data = std::fs::read(path).expect("read ELF");
        let f = ElfFile64::<object::Endianness>::parse(&*data).expect("parse ELF");
        let e = f.endian();
        let segments = f
            .elf_program_headers()
            .iter()
            .filter(|p| p.p_type(e) == object::elf::PT_LOAD)
            .map(|p| (p.p_offset(e), p.p_vaddr(e), p.p_filesz(e)))
            .collect();
        let mut syms: Vec<_> = f
            .symbols()
            .chain(f.dynamic_symbols())
            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
            .map(|s| (s.address(), s.size(), s.name().unwrap_or("").to_owned()))
            .collect();
        syms.sort();
        ElfSyms { syms, segments }
    }

    /// The function holding runtime address `a` of a mapping at `start` of offset `pgoff`.
    pub fn name(&self, m: &collect_perf::Mapping, a: u64) -> Option<&str> {
        let off = a.checked_sub(m.start)? + m.pgoff;
        let &(o, v, _) = self
            .segments
            .iter()
            .find(|(o, _, sz)| *o & !4095 <= off && off < o + sz)?;
        // Within the segment's first page but before its bytes: none of its functions.
        let svma = v + off.checked_sub(o)?;
        let i = self.syms.partition_point(|s| s.0 <= svma);
        let (start, size, name) = self.syms.get(i.checked_sub(1)?)?;
        (svma < start + size.max(&1)).then_some(name.as_str())
    }
}

impl ElfSyms {
    /// The function holding file address `svma`.
    pub fn name_at(&self, svma: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= svma);
        let (start, size, name) = self.syms.get(i.checked_sub(1)?)?;
        (svma < start + size.max(&1)).then_some(name.as_str())
    }
}

/// The histogram total and the arcs of the gmon file at `path` (64-bit little-endian).
pub fn gmon(path: &Path) -> (u64, Vec<(u64, u64, u64)>) {
    let data = std::fs::read(path).unwrap();
    let p = gmon_format::Profile::parse(
        &data,
        &gmon_format::ReadOptions::new(gmon_format::AddressSize::U64, gmon_format::Endian::Little),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut total, mut arcs) = (0, Vec::new());
    for r in p.records() {
        match r.unwrap().1 {
            gmon_format::Record::Histogram(h) => total += h.bins.iter().map(u64::from).sum::<u64>(),
            gmon_format::Record::Arc(a) => arcs.push((a.from_pc, a.self_pc, a.count)),
            gmon_format::Record::BasicBlocks(_) => panic!("basic blocks"),
        }
    }
    (total, arcs)
}
