//! Seamless profiles (pkprof paper, §2 and Figure 2.2): the user and kernel profiles of one or
//! more processes of a measurement directory, symbolized and merged into one symbol table and
//! one gmon sum, so that gprof's analysis and listings show user functions calling into the
//! kernel, with names labelled `<pid>u:name` and `<pid>k:name`.
//!
//! # How the merge works
//!
//! Every address of the input is resolved where it was recorded:
//!
//! * a user address through the process's recorded mappings to an ELF object, relocated by the
//!   mapping's load bias (from the info file, or from the object's program headers when absent),
//!   and looked up in the object's gprof symbol table (`.symtab`; a separate debug file with the
//!   same build-id; or `.dynsym` for stripped libraries). The object must have the recorded
//!   build-id.
//! * a kernel address in the kallsyms snapshot named by the info file.
//!
//! The symbols that received samples or arcs (all symbols with `keep_unused`, gprof's `-z`)
//! are then laid out one after another in a synthetic 64-bit address space, each process and
//! side (user, kernel) in its own region, and every histogram bin and arc is moved into its
//! symbol's new place, the offsets used in a symbol kept apart and in order (one 2-byte bin
//! each), so the synthetic text is proportional to what was sampled, not to the span of the
//! original addresses. Histograms keep 2-byte bins, so every record has the same
//! scale and gprof's arithmetic holds. The result is an ordinary [`SymbolTable`] and
//! [`Sum`] for [`crate::Analysis::new`]; the merged profile can also be written out as one
//! gmon.out ([`Seamless::gmon`]) with an ELF image of the table ([`write_symbol_image`]) that GNU
//! gprof reads to the same listing.
//!
//! # Processes that exec
//!
//! A process that `exec`s has one file set per image (per command name), all with its pid. The
//! file set of its last image (the one whose info file says it ended last) is labelled
//! `<pid>u:` and `<pid>k:` as usual, so `<pid>` always names what the process became; each
//! earlier image is labelled with its command name in parentheses, as `ps` and `/proc/PID/stat`
//! write a process: `4242(execer)u:spin`, `4242(execer)k:do_syscall_64`. A later process that
//! reused a pid during the measurement has file sets of its own, labelled with its instance
//! number: `4242_1u:main` (and `--pid 4242_1` selects it). The labels only depend on the info
//! files, so the listing is the same at every run.
//!
//! # Pseudo-functions
//!
//! Addresses that no symbol covers get one pseudo-function per object and side:
//! `<pid>u:[libc.so.6]` (in a known object but outside its symbols, or the object could not be
//! found or had another build-id), `<pid>u:[vdso]` (when the measurement has no `vdso.<build-id>`
//! image of it; with one, the vDSO's own symbols such as `__vdso_clock_gettime`) and other
//! bracketed mappings by their name,
//! `<pid>u:[unknown]` (anonymous memory such as JIT code, or no mapping at all),
//! `<pid>k:[kernel]` (kernel symbols unavailable or no symbol). A last symbol `[end]` bounds the
//! table, since gprof gives the last symbol of a table no samples.
//!
//! `<pid>u:[truncated]` stands above the outermost frame found of every user stack the
//! collector could not unwind to its root (arcs from address 0 in the user profile, the
//! truncation flag in the stacks file), so that frame is not taken for a root: its inclusive
//! time is the time of the stacks cut short, and the header says why they were.
//!
//! # Boundary arcs
//!
//! The kernel profile's arcs from a user address into the kernel connect the user function
//! (say libc's `read`) to the kernel entry function, by kind of entry (see [`BoundaryKind`]).
//! System calls, faults and others are drawn as calls. Interrupts are not: the user function
//! did not ask for them, so their arcs go from the interrupted function to the pseudo-function
//! `<pid>k:[interrupt]`, and from it to the interrupt entries. `[interrupt]` thus is the parent
//! of every interrupt entry, its child time the process's interrupt time, and that time counts
//! in the inclusive time of the function it interrupted (so `main` sums to 100%), never as a
//! call that function made.
//!
//! Arc counts are counts of sampled edges (how many samples had that caller above that
//! callee), not calls, when the info file says `arcs = sampled-edges`.

mod elf_out;
mod header;
mod objects;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gmon_format::{
    AddressSize, Arc, Endian, HistogramUnit, Measurement, MeasurementInfo, ProcessFiles, Profile,
    ReadOptions, Record, Sum, write_sampled_profile,
};

use crate::error::{Error, Result};
use crate::kallsyms::{KernelSymbols, KernelTable};
use crate::symbols::{RawSymbol, SymbolTable};

pub use elf_out::write_symbol_image;
pub use header::write_process_header;

use objects::{LoadedObject, path_of};

/// The pseudo-function above the outermost frame found of a user stack cut short.
const TRUNCATED: &[u8] = b"[truncated]";

/// User addresses lie below this, kernel addresses at or above (x86-64, arm64 and others).
const KERNEL_SPACE_START: u64 = 0x8000_0000_0000_0000;

/// Where the synthetic address space starts.
const SYNTHETIC_BASE: u64 = 0x10000;

/// The largest offset into one symbol the synthetic space keeps; anything further is placed at
/// this offset, so that a damaged object whose symbol spans most of the address space cannot
/// overflow the layout.
const MAX_SYMBOL_SPAN: u64 = 1 << 32;

pub use gmon_format::BoundaryKind;

/// Which processes to merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessSelection {
    /// These processes (a client and its server, say), in the order given, each as (pid,
    /// instance): instance 0 is the first process with that pid, 1, 2, … the later ones that
    /// reused it (see [`ProfileName`](gmon_format::ProfileName#reused-pids-the-instance-number)).
    Pids(Vec<(u32, u32)>),
    /// Every process of the measurement, plus the kernel's own work (`gmon.out.-k.kernel`,
    /// labelled `kernel:`) and work for processes not profiled (`gmon.out.-k.other`,
    /// labelled `other:`).
    System,
}

/// How to build a seamless profile.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SeamlessOptions {
    /// Include the user-level profiles. Default is true.
    pub user: bool,
    /// Include the kernel-level profiles. Default is true.
    pub kernel: bool,
    /// Directories to look for objects in when they are not at their recorded path (by file
    /// name, and by build-id in the `.build-id/xx/rest.debug` layout). Default is empty.
    pub object_path: Vec<PathBuf>,
    /// Keep every symbol of every object hit, not only those with samples or arcs, as gprof's
    /// `-z` needs. Default is false.
    pub keep_unused: bool,
    /// Read each process's sampled-stacks file into [`Seamless::stacks`] (for exact inclusive
    /// times); a process without one is an error. Default is false.
    pub stacks: bool,
    /// Demangle C++ and Rust names before labelling them (the label would hide a mangled name
    /// from the listings' demangler). Default is true.
    pub demangle: bool,
}

impl Default for SeamlessOptions {
    fn default() -> Self {
        SeamlessOptions {
            user: true,
            kernel: true,
            object_path: Vec::new(),
            keep_unused: false,
            stacks: false,
            demangle: true,
        }
    }
}

/// One process of a seamless profile, for the header.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProcessSummary {
    /// `<pid>` or `kernel` / `other`.
    pub label: String,
    /// Its files.
    pub files: Option<ProcessFiles>,
    /// Its measurement-info file, if there was one.
    pub info: Option<MeasurementInfo>,
    /// Histogram samples in its user profile.
    pub user_samples: u64,
    /// Histogram samples in its kernel profile.
    pub kernel_samples: u64,
    /// Boundary arc counts by kind of kernel entry.
    pub entries: BTreeMap<BoundaryKind, u64>,
}

/// A merged profile, ready for [`crate::Analysis::new`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Seamless {
    /// The merged, labelled symbol table.
    pub table: SymbolTable,
    /// The merged histograms and arcs, in the table's address space.
    pub sum: Sum,
    /// The same as a GNU gmon.out file (64-bit, little-endian).
    pub gmon: Vec<u8>,
    /// The processes merged, in order.
    pub processes: Vec<ProcessSummary>,
    /// The sampled stacks of the processes' stacks files, in the table's address space, for
    /// [`crate::apply_stacks`]; empty when the measurement has none.
    pub stacks: Vec<crate::SampledStack>,
    /// Where the processes' system calls slept, from their latency files recorded with
    /// `pkgmon --blocking` (read with [`SeamlessOptions::stacks`]): kernel frames of the
    /// sleep site above the user frames of the call site, innermost first, `samples` being
    /// the nanoseconds blocked there. Empty when no file has blocking data.
    pub off_cpu: Vec<crate::SampledStack>,
    /// Problems that did not stop the merge (missing objects, missing kernel symbols), one
    /// sentence each.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    User,
    Kernel,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum What {
    Object(usize),
    Kernel(usize),
    Pseudo(Vec<u8>),
}

/// A symbol table (or none) placed for one space and side.
#[derive(Debug)]
struct Region {
    space: usize,
    side: Side,
    what: What,
    /// Lowest runtime address seen, which orders the regions of a space.
    first_address: u64,
    pseudo_name: Vec<u8>,
    pseudo_used: bool,
    /// The symbols used (with samples or arcs).
    used: BTreeMap<usize, ()>,
    /// Synthetic address of the pseudo-function and of each placed symbol.
    pseudo_at: u64,
    placed: BTreeMap<usize, u64>,
}

/// A resolved address: a region, a symbol of its table (or its pseudo-function) and an offset.
#[derive(Debug, Clone, Copy)]
struct Loc {
    region: usize,
    symbol: Option<usize>,
    offset: u64,
}

/// The symbols of a region: an object's gprof table, or the kernel's compact one.
#[derive(Clone, Copy)]
enum Table<'a> {
    Object(&'a SymbolTable),
    Kernel(&'a KernelTable),
}

impl<'a> Table<'a> {
    fn len(self) -> usize {
        match self {
            Table::Object(t) => t.len(),
            Table::Kernel(t) => t.len(),
        }
    }

    /// The name, address and function-ness of symbol `i`.
    fn symbol(self, i: usize) -> (&'a [u8], u64, bool) {
        match self {
            Table::Object(t) => {
                let s = &t.symbols()[i];
                (&s.name, s.address, s.is_function)
            }
            Table::Kernel(t) => (t.name(i), t.address(i), true),
        }
    }
}

#[derive(Debug)]
enum Target {
    Unresolved,
    Object { object: usize, bias: u64 },
    Pseudo(Vec<u8>),
}

#[derive(Debug)]
struct MappedRange {
    start: u64,
    end: u64,
    target: Target,
    index: usize,
}

/// One address space: a process's user side and kernel side.
#[derive(Debug)]
struct Space {
    label: String,
    /// Whether this is system-wide kernel work (`kernel:`, `other:`), not a process.
    system: bool,
    mappings: Vec<MappedRange>,
    info: Option<MeasurementInfo>,
    kernel: Option<usize>,
    /// The region of `kernel`, once made.
    kernel_region: Option<usize>,
    last_hit: usize,
}

#[derive(Debug, Default)]
struct Builder {
    options: SeamlessOptions,
    dir: PathBuf,
    objects: Vec<Option<LoadedObject>>,
    object_index: BTreeMap<(Vec<u8>, Option<Vec<u8>>), usize>,
    kernels: Vec<Option<(KernelTable, PathBuf)>>,
    kernel_index: BTreeMap<String, usize>,
    regions: Vec<Region>,
    region_index: BTreeMap<(usize, Side, What), usize>,
    spaces: Vec<Space>,
    /// Samples per symbol (region and symbol, or the region's pseudo-function): a listing
    /// needs no finer place, and a million sampled bins in a few functions cost a few entries.
    hist: BTreeMap<(usize, Option<usize>), u64>,
    arcs: Vec<(Loc, Loc, u64)>,
    stacks: Vec<(Vec<Loc>, u64)>,
    /// Sleep stacks and the nanoseconds blocked in them (see [`Seamless::off_cpu`]).
    off_cpu: Vec<(Vec<Loc>, u64)>,
    unit: Option<HistogramUnit>,
    warnings: Vec<String>,
}

impl Seamless {
    /// Merges the processes `selection` picks from `measurement`.
    ///
    /// Returns an error if a pid asked for has no files, a file cannot be read, or a gmon,
    /// info or kallsyms file is damaged. Objects that cannot be found, or whose build-id
    /// differs, only give warnings (their samples go to a pseudo-function).
    pub fn build(
        measurement: &Measurement,
        selection: &ProcessSelection,
        options: &SeamlessOptions,
    ) -> Result<Seamless> {
        let mut b = Builder {
            options: options.clone(),
            dir: measurement.dir.clone(),
            ..Builder::default()
        };
        // A profile's name on something that is not a regular file (a FIFO, a device, a
        // link to one) is never read; say so rather than report the process without it.
        for skipped in &measurement.skipped {
            if !matches!(
                skipped.error.kind(),
                gmon_format::ErrorKind::InvalidFileName { .. }
            ) {
                b.warnings.push(format!(
                    "{}: not read: {}",
                    skipped.path.display(),
                    skipped.error
                ));
            }
        }
        let mut processes = Vec::new();
        let files: Vec<&ProcessFiles> = match selection {
            ProcessSelection::Pids(pids) => {
                let mut out = Vec::new();
                let mut seen = std::collections::BTreeSet::new();
                for &(pid, instance) in pids.iter().filter(|&&p| seen.insert(p)) {
                    let before = out.len();
                    out.extend(measurement.instance(pid, instance));
                    if out.len() == before {
                        return Err(Error::NoSuchProcess {
                            label: gmon_format::process_label(pid, instance),
                            dir: measurement.dir.clone(),
                        });
                    }
                }
                out
            }
            ProcessSelection::System => measurement.processes.iter().collect(),
        };
        let labels = image_labels(&files)?;
        for (f, label) in files.into_iter().zip(labels) {
            processes.push(b.add_process(f, label)?);
        }
        if *selection == ProcessSelection::System {
            for (label, path) in [
                ("kernel", &measurement.kernel_system),
                ("other", &measurement.kernel_other),
            ] {
                if let Some(path) = path {
                    processes.push(b.add_system_kernel(label, path)?);
                }
            }
        }
        if processes.is_empty() {
            return Err(Error::EmptyMeasurement {
                dir: measurement.dir.clone(),
            });
        }
        b.warn_stripped_objects();
        let (table, gmon, stacks, off_cpu) = b.finish()?;
        let mut sum = Sum::new();
        let read = ReadOptions::new(AddressSize::U64, Endian::Little);
        sum.add(&Profile::parse(&gmon, &read)?)?;
        Ok(Seamless {
            table,
            sum,
            gmon,
            processes,
            stacks,
            off_cpu,
            warnings: b.warnings,
        })
    }
}

/// The names of one process's runtime addresses, user and kernel, found as the seamless
/// listing finds them (the info file's mappings, the objects by build-id, the kernel-symbol
/// snapshot), without its labels: for reports that carry addresses of their own, such as the
/// latency file's call sites, sleep sites and wakers.
#[derive(Debug)]
pub struct AddressNames {
    b: Builder,
    space: usize,
}

impl AddressNames {
    /// Reads what naming `files`' addresses takes: its info file, then objects and kernel
    /// symbols as addresses ask for them.
    ///
    /// Returns an error if the info file cannot be read or is damaged.
    pub fn new(
        measurement: &Measurement,
        files: &ProcessFiles,
        options: &SeamlessOptions,
    ) -> Result<AddressNames> {
        let mut b = Builder {
            options: options.clone(),
            dir: measurement.dir.clone(),
            ..Builder::default()
        };
        let (space, _) =
            b.add_space(files, gmon_format::process_label(files.pid, files.instance))?;
        b.spaces[space].kernel = b.kernel_symbols(space);
        Ok(AddressNames { b, space })
    }

    fn name(&self, loc: Loc) -> String {
        let region = &self.b.regions[loc.region];
        let raw = match (self.b.table_of(&region.what), loc.symbol) {
            (Some(t), Some(s)) => t.symbol(s).0.to_vec(),
            _ => region.pseudo_name.clone(),
        };
        let text = String::from_utf8_lossy(&raw);
        if self.b.options.demangle {
            demangle::demangle(&text).into_owned()
        } else {
            text.into_owned()
        }
    }

    /// The function holding user address `at` (a return address or a pc), or the object's
    /// pseudo-name (`[libc.so.6]`) when it has no symbol there, or `[unknown]`.
    pub fn user(&mut self, at: u64) -> String {
        let loc = self.b.user_loc(self.space, at, false);
        self.name(loc)
    }

    /// The kernel function holding `at`, or `[kernel]` without kernel symbols.
    pub fn kernel(&mut self, at: u64) -> String {
        let loc = self.b.kernel_loc(self.space, at);
        self.name(loc)
    }

    /// Problems met while naming (objects not found, kernel symbols hidden), one sentence
    /// each.
    pub fn warnings(&self) -> &[String] {
        &self.b.warnings
    }
}

/// The label of each file set (see "Processes that exec" in the module docs): the process's
/// label (`<pid>`, or `<pid>_<instance>` for a later process that reused the pid), followed by
/// `(<comm>)` for a file set of a process that has a later one.
fn image_labels(files: &[&ProcessFiles]) -> Result<Vec<String>> {
    let same = |f: &ProcessFiles, g: &ProcessFiles| f.pid == g.pid && f.instance == g.instance;
    let mut ends = Vec::with_capacity(files.len());
    for f in files {
        let end = match &f.info {
            Some(path) if files.iter().filter(|g| same(f, g)).count() > 1 => {
                let data = read_file(path, crate::input::TEXT_MAX_BYTES)?;
                let info = MeasurementInfo::parse(&data).map_err(|e| e.with_path(path))?;
                info.process
                    .end_monotonic_ns
                    .or(info.process.start_monotonic_ns)
            }
            _ => None,
        };
        ends.push(end);
    }
    let key = |i: usize| (ends[i], files[i].comm.as_bytes().to_vec());
    Ok((0..files.len())
        .map(|i| {
            let f = files[i];
            let label = gmon_format::process_label(f.pid, f.instance);
            let later = (0..files.len()).any(|j| j != i && same(files[j], f) && key(j) > key(i));
            if later {
                format!("{label}({})", String::from_utf8_lossy(f.comm.as_bytes()))
            } else {
                label
            }
        })
        .collect())
}

/// Reads a file of the measurement, at most `limit` bytes (see [`crate::input`]).
fn read_file(path: &Path, limit: u64) -> Result<safe_fs::Contents> {
    crate::input::read_input(path, limit).map_err(|e| {
        crate::input::error(e, |source| Error::ReadFile {
            path: path.to_owned(),
            source,
        })
    })
}

/// The histogram bins (address of each bin, count) and arcs of one gmon file.
type Contents = (Vec<(u64, u64)>, Vec<Arc>);

/// The distinct offsets used inside each symbol, in order. A symbol's samples and arc ends are
/// laid out at their offsets' ranks (one 2-byte bin each), not at the offsets themselves: the
/// listings are per function and only need the offsets apart and in order, and a profile whose
/// bins are spread over a gigabyte of kernel text (1 KiB per bin) would otherwise lay out a
/// gigabyte of synthetic text, and a histogram of half a billion bins for it.
struct OffsetRanks(Vec<(usize, usize, u64)>);

impl OffsetRanks {
    fn new<'a>(locs: impl Iterator<Item = &'a Loc>) -> Self {
        let mut keys: Vec<(usize, usize, u64)> = locs
            .filter_map(|l| Some((l.region, l.symbol?, l.offset.min(MAX_SYMBOL_SPAN))))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        OffsetRanks(keys)
    }

    /// The synthetic offset of `loc` in its symbol: twice the rank of its offset.
    fn offset(&self, loc: &Loc) -> u64 {
        let Some(symbol) = loc.symbol else { return 0 };
        let first = self
            .0
            .partition_point(|k| (k.0, k.1) < (loc.region, symbol));
        let at = self
            .0
            .partition_point(|k| *k < (loc.region, symbol, loc.offset.min(MAX_SYMBOL_SPAN)));
        2 * (at - first) as u64
    }

    /// The largest synthetic offset used in symbol `symbol` of region `region` (0 if none).
    fn span(&self, region: usize, symbol: usize) -> u64 {
        let first = self.0.partition_point(|k| (k.0, k.1) < (region, symbol));
        let end = self.0.partition_point(|k| (k.0, k.1) <= (region, symbol));
        2 * (end - first).saturating_sub(1) as u64
    }
}

impl Builder {
    fn read_gmon(&mut self, path: &Path) -> Result<Contents> {
        let data = read_file(path, crate::input::PROFILE_MAX_BYTES)?;
        let read = ReadOptions::new(AddressSize::U64, Endian::Little);
        let located = |e: gmon_format::Error| Error::from(e.with_path(path));
        let profile = Profile::parse(&data, &read).map_err(located)?;
        let mut bins = Vec::new();
        let mut arcs = Vec::new();
        for record in profile.records() {
            let (_, record) = record.map_err(located)?;
            match record {
                Record::Histogram(h) => {
                    let hh = &h.header;
                    let unit = HistogramUnit {
                        prof_rate: hh.prof_rate,
                        dimension: hh.dimension,
                        dimension_abbrev: hh.dimension_abbrev,
                    };
                    match self.unit {
                        None => self.unit = Some(unit),
                        Some(first) if first.prof_rate != unit.prof_rate => {
                            let w = format!(
                                "{}: sampled at {} Hz, the first profile at {} Hz; times use {} Hz",
                                path.display(),
                                unit.prof_rate,
                                first.prof_rate,
                                first.prof_rate
                            );
                            if !self.warnings.contains(&w) {
                                self.warnings.push(w);
                            }
                        }
                        Some(_) => {}
                    }
                    let n = h.bins.len() as u128;
                    let span = u128::from(hh.high_pc.wrapping_sub(hh.low_pc));
                    for (i, count) in h.bins.iter().enumerate() {
                        if count == 0 {
                            continue;
                        }
                        let at = hh.low_pc.wrapping_add((i as u128 * span / n) as u64);
                        bins.push((at, u64::from(count)));
                    }
                }
                Record::Arc(a) => arcs.push(a),
                Record::BasicBlocks(_) => {}
            }
        }
        Ok((bins, arcs))
    }

    /// Reads a process's info file and adds its address space (its mappings); returns the
    /// space and the info.
    fn add_space(
        &mut self,
        files: &ProcessFiles,
        label: String,
    ) -> Result<(usize, Option<MeasurementInfo>)> {
        let info = match &files.info {
            Some(path) => {
                let data = read_file(path, crate::input::TEXT_MAX_BYTES)?;
                Some(MeasurementInfo::parse(&data).map_err(|e| e.with_path(path))?)
            }
            None => {
                self.warnings.push(format!(
                    "process {}: no measurement-info file; its addresses cannot be symbolized",
                    files.pid
                ));
                None
            }
        };
        let space = self.spaces.len();
        let mappings = info
            .as_ref()
            .map(|i| {
                i.mappings
                    .iter()
                    .enumerate()
                    .map(|(index, m)| MappedRange {
                        start: m.start,
                        end: m.end,
                        target: Target::Unresolved,
                        index,
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.spaces.push(Space {
            label,
            system: false,
            mappings,
            info: info.clone(),
            kernel: None,
            kernel_region: None,
            last_hit: usize::MAX,
        });
        Ok((space, info))
    }

    fn add_process(&mut self, files: &ProcessFiles, label: String) -> Result<ProcessSummary> {
        let (space, info) = self.add_space(files, label.clone())?;
        let mut summary = ProcessSummary {
            label,
            files: Some(files.clone()),
            info,
            user_samples: 0,
            kernel_samples: 0,
            entries: BTreeMap::new(),
        };
        if let (true, Some(path)) = (self.options.user, &files.user) {
            let (bins, arcs) = self.read_gmon(path)?;
            for (at, count) in bins {
                summary.user_samples += count;
                let loc = self.user_loc(space, at, false);
                self.hit(loc, count);
            }
            for a in arcs {
                // From 0: the outermost frame found of stacks that were cut short.
                let from = match a.from_pc {
                    0 => self.pseudo_loc(space, Side::User, TRUNCATED, 0),
                    pc => self.user_loc(space, pc, false),
                };
                let to = self.user_loc(space, a.self_pc, true);
                self.arc(from, to, a.count);
            }
        }
        if let (true, Some(path)) = (self.options.kernel, &files.kernel) {
            self.spaces[space].kernel = self.kernel_symbols(space);
            self.add_kernel_profile(space, path, &mut summary)?;
        }
        // The header shows both sides' samples whatever the listing shows.
        for (shown, file, total) in [
            (self.options.user, &files.user, &mut summary.user_samples),
            (
                self.options.kernel,
                &files.kernel,
                &mut summary.kernel_samples,
            ),
        ] {
            if let (false, Some(path)) = (shown, file) {
                *total = self.read_gmon(path)?.0.iter().map(|&(_, n)| n).sum();
            }
        }
        // The collector's own count of entries by kind, when it wrote one, is the full one
        // (boundary arcs are not read with --user).
        let recorded = summary
            .info
            .as_ref()
            .and_then(|i| i.extra_sections.iter().find(|s| s.name == "boundary"));
        if let Some(section) = recorded {
            let mut entries = BTreeMap::new();
            for kind in BoundaryKind::ALL {
                let value = section.fields.iter().find(|f| f.key == kind.as_str());
                if let Some(n) = value.and_then(|f| f.value.parse::<u64>().ok()) {
                    entries.insert(kind, n);
                }
            }
            summary.entries = entries;
        }
        if self.options.stacks {
            let Some(path) = &files.stacks else {
                return Err(Error::NoStacks {
                    label: gmon_format::process_label(files.pid, files.instance),
                    dir: self.dir.clone(),
                });
            };
            if self.spaces[space].kernel.is_none() && self.options.kernel {
                self.spaces[space].kernel = self.kernel_symbols(space);
            }
            let data = read_file(path, crate::input::PROFILE_MAX_BYTES)?;
            let located = |e: gmon_format::Error| Error::from(e.with_path(path));
            let stacks = gmon_format::Stacks::parse(&data).map_err(located)?;
            for record in stacks.records() {
                let (_, r) = record.map_err(located)?;
                let (kernel, user) = (r.kernel.to_vec(), r.user.to_vec());
                self.add_stack(
                    space,
                    r.boundary,
                    r.user_truncated,
                    &kernel,
                    &user,
                    r.samples,
                );
            }
            if let Some(path) = &files.latency {
                self.add_sleeps(space, path)?;
            }
        }
        Ok(summary)
    }

    fn add_system_kernel(&mut self, label: &str, path: &Path) -> Result<ProcessSummary> {
        let space = self.spaces.len();
        self.spaces.push(Space {
            label: label.to_owned(),
            system: true,
            mappings: Vec::new(),
            info: None,
            kernel: None,
            kernel_region: None,
            last_hit: usize::MAX,
        });
        let mut summary = ProcessSummary {
            label: label.to_owned(),
            files: None,
            info: None,
            user_samples: 0,
            kernel_samples: 0,
            entries: BTreeMap::new(),
        };
        // Any process's snapshot will do: one measurement is one boot.
        let first = (0..space).find_map(|s| self.spaces[s].kernel);
        self.spaces[space].kernel = match first {
            Some(k) => Some(k),
            None => self.lone_snapshot(),
        };
        if self.options.kernel {
            self.add_kernel_profile(space, path, &mut summary)?;
        }
        Ok(summary)
    }

    /// The only `kallsyms.*` file of the directory, for system-wide files without processes.
    fn lone_snapshot(&mut self) -> Option<usize> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .ok()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("kallsyms."))
            .collect();
        names.sort();
        let name = names.first()?.clone();
        self.load_kernel(&name)
    }

    fn add_kernel_profile(
        &mut self,
        space: usize,
        path: &Path,
        summary: &mut ProcessSummary,
    ) -> Result<()> {
        let (bins, arcs) = self.read_gmon(path)?;
        for (at, count) in bins {
            summary.kernel_samples += count;
            let loc = self.kernel_loc(space, at);
            self.hit(loc, count);
        }
        for a in arcs {
            let to = self.kernel_loc(space, a.self_pc);
            if a.from_pc >= KERNEL_SPACE_START {
                let from = self.kernel_loc(space, a.from_pc);
                self.arc(from, to, a.count);
                continue;
            }
            let name = self.symbol_name(to);
            let kind = BoundaryKind::from_entry_symbol(&String::from_utf8_lossy(&name));
            *summary.entries.entry(kind).or_default() += a.count;
            let user = self.options.user && !self.spaces[space].mappings.is_empty();
            if kind == BoundaryKind::Interrupt {
                let pseudo = self.pseudo_loc(space, Side::Kernel, b"[interrupt]", u64::MAX);
                self.arc(pseudo, to, a.count);
                if user {
                    let from = self.user_loc(space, a.from_pc, false);
                    self.arc(from, pseudo, a.count);
                }
            } else if user {
                let from = self.user_loc(space, a.from_pc, false);
                self.arc(from, to, a.count);
            }
            // Without the user side (or for work of no known process) the entry function
            // (or `[interrupt]`) keeps no caller, and gprof lists it as <spontaneous>.
        }
        Ok(())
    }

    fn symbol_name(&self, loc: Loc) -> Vec<u8> {
        let region = &self.regions[loc.region];
        match (&region.what, loc.symbol) {
            (What::Kernel(k), Some(s)) => self.kernels[*k]
                .as_ref()
                .map(|(t, _)| t.name(s).to_vec())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The kernel symbols the info file of `space` names.
    fn kernel_symbols(&mut self, space: usize) -> Option<usize> {
        let label = self.spaces[space].label.clone();
        let name = self.spaces[space]
            .info
            .as_ref()
            .and_then(|i| i.kernel.symbols_file.clone());
        let Some(name) = name else {
            self.warnings.push(format!(
                "process {label}: no kernel symbols-file in its info file; kernel samples are \
                 reported as {label}k:[kernel]"
            ));
            return None;
        };
        self.load_kernel(&name)
    }

    fn load_kernel(&mut self, name: &str) -> Option<usize> {
        if let Some(&k) = self.kernel_index.get(name) {
            return self.kernels[k].is_some().then_some(k);
        }
        let k = self.kernels.len();
        self.kernel_index.insert(name.to_owned(), k);
        // The name must stay inside the measurement directory.
        let path = self.dir.join(name);
        let loaded = if name.contains('/') || name == ".." {
            self.warnings.push(format!(
                "kernel symbols-file {name:?} is not a file name in the measurement directory"
            ));
            None
        } else {
            match KernelSymbols::read(&path) {
                Ok(k) if k.addresses_hidden() => {
                    self.warnings.push(format!(
                        "{}: every address is 0 (kernel.kptr_restrict hid them when it was \
                         taken); kernel symbols are unavailable",
                        path.display()
                    ));
                    None
                }
                Ok(k) => Some((k.into_lookup(), path)),
                Err(e) => {
                    self.warnings
                        .push(format!("{e}; kernel symbols are unavailable"));
                    None
                }
            }
        };
        let ok = loaded.is_some();
        self.kernels.push(loaded);
        ok.then_some(k)
    }

    fn region(&mut self, space: usize, side: Side, what: What, pseudo: &[u8], at: u64) -> usize {
        let key = (space, side, what);
        let id = match self.region_index.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.regions.len();
                self.regions.push(Region {
                    space,
                    side,
                    what: key.2.clone(),
                    first_address: at,
                    pseudo_name: pseudo.to_vec(),
                    pseudo_used: false,
                    used: BTreeMap::new(),
                    pseudo_at: 0,
                    placed: BTreeMap::new(),
                });
                self.region_index.insert(key, id);
                id
            }
        };
        let r = &mut self.regions[id];
        r.first_address = r.first_address.min(at);
        id
    }

    fn pseudo_loc(&mut self, space: usize, side: Side, name: &[u8], at: u64) -> Loc {
        let region = self.region(space, side, What::Pseudo(name.to_vec()), name, at);
        Loc {
            region,
            symbol: None,
            offset: 0,
        }
    }

    fn kernel_loc(&mut self, space: usize, at: u64) -> Loc {
        let Some(k) = self.spaces[space].kernel else {
            return self.pseudo_loc(space, Side::Kernel, b"[kernel]", at);
        };
        let region = match self.spaces[space].kernel_region {
            Some(r) => r,
            None => {
                let r = self.region(space, Side::Kernel, What::Kernel(k), b"[kernel]", 0);
                self.spaces[space].kernel_region = Some(r);
                r
            }
        };
        let table = self.kernels[k].as_ref().map(|(t, _)| t);
        let found = table.and_then(|t| t.lookup(at).map(|i| (i, t.address(i))));
        match found {
            Some((i, start)) => Loc {
                region,
                symbol: Some(i),
                offset: at - start,
            },
            None => Loc {
                region,
                symbol: None,
                offset: 0,
            },
        }
    }

    /// Resolves a user address of `space`; `callee` applies gprof's rule that an arc into a
    /// label counts for the function before it.
    fn user_loc(&mut self, space: usize, at: u64, callee: bool) -> Loc {
        let Some(m) = self.mapping_of(space, at) else {
            return self.pseudo_loc(space, Side::User, b"[unknown]", at);
        };
        if matches!(self.spaces[space].mappings[m].target, Target::Unresolved) {
            let target = self.resolve(space, m);
            self.spaces[space].mappings[m].target = target;
        }
        let start = self.spaces[space].mappings[m].start;
        match &self.spaces[space].mappings[m].target {
            Target::Object { object, bias } => {
                let (object, bias) = (*object, *bias);
                let region = self.region(space, Side::User, What::Object(object), &[], start);
                if self.regions[region].pseudo_name.is_empty() {
                    self.regions[region].pseudo_name = self.pseudo_name_of(object);
                }
                let Some(loaded) = &self.objects[object] else {
                    return Loc {
                        region,
                        symbol: None,
                        offset: 0,
                    };
                };
                let link = at.wrapping_sub(bias);
                let t = &loaded.table;
                let i = if callee {
                    t.lookup_callee(link)
                } else {
                    t.lookup(link)
                };
                match i {
                    Some(i) => Loc {
                        region,
                        symbol: Some(i),
                        offset: link.wrapping_sub(t.symbols()[i].address),
                    },
                    None => Loc {
                        region,
                        symbol: None,
                        offset: 0,
                    },
                }
            }
            Target::Pseudo(name) => {
                let name = name.clone();
                self.pseudo_loc(space, Side::User, &name, start)
            }
            Target::Unresolved => self.pseudo_loc(space, Side::User, b"[unknown]", at),
        }
    }

    fn pseudo_name_of(&self, object: usize) -> Vec<u8> {
        let path = self
            .object_index
            .iter()
            .find(|&(_, &i)| i == object)
            .map(|((p, _), _)| p.clone())
            .unwrap_or_default();
        if path.starts_with(b"[") {
            // A pseudo-path such as `[vdso]` is its own name.
            return path;
        }
        let file = path.rsplit(|&b| b == b'/').next().unwrap_or(&path);
        let mut name = b"[".to_vec();
        name.extend_from_slice(file);
        name.push(b']');
        name
    }

    /// The mapping holding `at`, the latest recorded if several did over time.
    fn mapping_of(&mut self, space: usize, at: u64) -> Option<usize> {
        let s = &mut self.spaces[space];
        let hit = |m: &MappedRange| m.start <= at && at < m.end;
        if s.mappings.get(s.last_hit).is_some_and(hit) {
            return Some(s.last_hit);
        }
        let found = s.mappings.iter().rposition(hit)?;
        s.last_hit = found;
        Some(found)
    }

    fn resolve(&mut self, space: usize, m: usize) -> Target {
        let label = self.spaces[space].label.clone();
        let index = self.spaces[space].mappings[m].index;
        let Some(mapping) = self.spaces[space]
            .info
            .as_ref()
            .and_then(|i| i.mappings.get(index))
            .cloned()
        else {
            return Target::Pseudo(b"[unknown]".to_vec());
        };
        let path = match &mapping.path {
            None => return Target::Pseudo(b"[unknown]".to_vec()),
            Some(p) if p.is_empty() || p.starts_with(b"//anon") => {
                return Target::Pseudo(b"[unknown]".to_vec());
            }
            Some(p) if p.as_slice() == b"[vdso]" => {
                // The collector saves the vDSO image as `vdso.<build-id>`; without it (or a
                // build-id) the vDSO stays a pseudo-function.
                let saved = mapping
                    .build_id
                    .as_deref()
                    .map(|id| self.dir.join(gmon_format::vdso_file_name(id)))
                    .filter(|f| f.is_file());
                if saved.is_none() {
                    return Target::Pseudo(p.clone());
                }
                p.clone()
            }
            Some(p) if p.starts_with(b"[") => return Target::Pseudo(p.clone()),
            Some(p) => p.clone(),
        };
        let key = (path.clone(), mapping.build_id.clone());
        let object = match self.object_index.get(&key) {
            Some(&o) => o,
            None => {
                let o = self.objects.len();
                self.object_index.insert(key, o);
                let found = match &mapping.build_id {
                    Some(id) if path.as_slice() == b"[vdso]" => objects::find(
                        &self.dir.join(gmon_format::vdso_file_name(id)),
                        Some(id),
                        &[],
                    ),
                    _ => match objects::refused_recorded(path_of(&path)) {
                        Some(refused) => Err(refused),
                        // A relative recorded path is relative to the measurement, never to
                        // the current directory.
                        None => objects::find(
                            &self.dir.join(path_of(&path)),
                            mapping.build_id.as_deref(),
                            &self.options.object_path,
                        ),
                    },
                };
                match found {
                    Ok(obj) => self.objects.push(Some(obj)),
                    Err(why) => {
                        let id = mapping
                            .build_id
                            .as_deref()
                            .map(|id| format!(" (build-id {})", objects::hex(id)))
                            .unwrap_or_default();
                        let file = path.rsplit(|&b| b == b'/').next().unwrap_or(&path);
                        self.warnings.push(format!(
                            "process {label}: cannot use {}{id}: {}; its samples are reported \
                             as {label}u:[{}]",
                            path_of(&path).display(),
                            why.describe(),
                            String::from_utf8_lossy(file)
                        ));
                        self.objects.push(None);
                    }
                }
                o
            }
        };
        let bias = match (&self.objects[object], mapping.load_bias) {
            (_, Some(b)) => b,
            (Some(obj), None) => {
                match obj.bias_for(mapping.start, mapping.file_offset.unwrap_or(0)) {
                    Some(b) => b,
                    None => {
                        self.warnings.push(format!(
                            "process {label}: no segment of {} holds offset {:#x}; its mapping \
                             at {:#x} is taken as unrelocated",
                            obj.path.display(),
                            mapping.file_offset.unwrap_or(0),
                            mapping.start
                        ));
                        0
                    }
                }
            }
            (None, None) => 0,
        };
        Target::Object { object, bias }
    }

    /// Adds one record of a stacks file: kernel frames then user frames, each innermost
    /// first, with `[interrupt]` between them for an interrupt, as its arcs have it, and
    /// `[truncated]` beyond the user frames of a stack cut short, so that its outermost frame
    /// found is not taken for a root.
    #[allow(clippy::too_many_arguments)]
    fn add_stack(
        &mut self,
        space: usize,
        boundary: Option<BoundaryKind>,
        truncated: bool,
        kernel: &[u64],
        user: &[u64],
        samples: u64,
    ) {
        let locs = self.stack_locs(space, boundary, truncated, kernel, user);
        if !locs.is_empty() {
            self.stacks.push((locs, samples));
        }
    }

    /// Adds the sleeps of a latency file recorded with `--blocking`: per operation and sleep
    /// site, the site's kernel frames above the call site's user frames, with the time
    /// blocked there.
    fn add_sleeps(&mut self, space: usize, path: &Path) -> Result<()> {
        let data = read_file(path, crate::TEXT_MAX_BYTES)?;
        let file = gmon_format::latency::LatencyFile::parse(&data)
            .map_err(|e| Error::from(e.with_path(path)))?;
        for op in &file.operations {
            for site in op.blocking.iter().flat_map(|b| &b.sites) {
                let locs = self.stack_locs(space, None, false, &site.frames, &op.site);
                if !locs.is_empty() && site.blocked_ns > 0 {
                    self.off_cpu.push((locs, site.blocked_ns));
                }
            }
        }
        Ok(())
    }

    /// The places of a stack's frames, kernel then user, each innermost first, marked as
    /// used (see [`Builder::add_stack`]).
    fn stack_locs(
        &mut self,
        space: usize,
        boundary: Option<BoundaryKind>,
        truncated: bool,
        kernel: &[u64],
        user: &[u64],
    ) -> Vec<Loc> {
        let mut locs = Vec::with_capacity(kernel.len() + user.len());
        if self.options.kernel {
            for &a in kernel {
                locs.push(self.kernel_loc(space, a));
            }
        }
        if boundary == Some(BoundaryKind::Interrupt) && !kernel.is_empty() && self.options.kernel {
            locs.push(self.pseudo_loc(space, Side::Kernel, b"[interrupt]", u64::MAX));
        }
        if self.options.user {
            for &a in user {
                locs.push(self.user_loc(space, a, false));
            }
            if truncated && !user.is_empty() {
                locs.push(self.pseudo_loc(space, Side::User, TRUNCATED, 0));
            }
        }
        for &l in &locs {
            self.mark(l);
        }
        locs
    }

    /// Warns about each object that received samples but could only be symbolized from its
    /// exported symbols (`.dynsym`): a stripped binary credits the time of its internal
    /// functions to `[file]` or to whatever exported function precedes them (a stripped
    /// `-pg` program gives it to `__gmon_start__`), which looks like an answer and is not.
    fn warn_stripped_objects(&mut self) {
        // Per (space, object): samples in all, outside every symbol, and per symbol.
        type Tally = (u64, u64, BTreeMap<usize, u64>);
        let mut tally: BTreeMap<(usize, usize), Tally> = BTreeMap::new();
        for (&(region, symbol), &count) in &self.hist {
            let loc = Loc {
                region,
                symbol,
                offset: 0,
            };
            let region = &self.regions[loc.region];
            let What::Object(o) = region.what else {
                continue;
            };
            if !self.objects[o].as_ref().is_some_and(|l| l.dynamic_only) {
                continue;
            }
            let t = tally.entry((region.space, o)).or_default();
            t.0 += count;
            match loc.symbol {
                None => t.1 += count,
                Some(sym) => *t.2.entry(sym).or_default() += count,
            }
        }
        for ((space, o), (total, outside, by_symbol)) in tally {
            let Some(loaded) = &self.objects[o] else {
                continue;
            };
            // The vDSO has no other symbols than the ones it exports.
            if self
                .object_index
                .iter()
                .any(|((path, _), &i)| i == o && path.as_slice() == b"[vdso]")
            {
                continue;
            }
            let label = &self.spaces[space].label;
            let file = loaded
                .path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let id = self
                .object_index
                .iter()
                .find(|&(_, &i)| i == o)
                .and_then(|((_, id), _)| id.as_deref())
                .map(|id| format!(" {}", objects::hex(id)))
                .unwrap_or_default();
            let mut m = format!(
                "process {label}: {} has no symbol table (stripped) and no debug file with its \
                 build-id{id} was found: of its {total} samples, {outside} show as \
                 {label}u:[{file}]",
                loaded.path.display()
            );
            if let Some((&sym, &n)) = by_symbol.iter().max_by_key(|&(_, &n)| n) {
                let name = String::from_utf8_lossy(&loaded.table.symbols()[sym].name);
                m.push_str(&format!(
                    " and {} under the {} exported functions they fall after ({n} under \
                     {name}, which also takes the time of any internal function after it)",
                    total - outside,
                    by_symbol.len()
                ));
            }
            m.push_str(
                "; install its debug symbols (on Debian the package's -dbgsym, which fills \
                 /usr/lib/debug/.build-id), or give --object-path DIR with the unstripped \
                 file or DIR/.build-id/xx/rest.debug",
            );
            self.warnings.push(m);
        }
    }

    fn hit(&mut self, loc: Loc, count: u64) {
        self.mark(loc);
        *self.hist.entry((loc.region, loc.symbol)).or_default() += count;
    }

    fn arc(&mut self, from: Loc, to: Loc, count: u64) {
        self.mark(from);
        self.mark(to);
        self.arcs.push((from, to, count));
    }

    fn mark(&mut self, loc: Loc) {
        let r = &mut self.regions[loc.region];
        match loc.symbol {
            None => r.pseudo_used = true,
            Some(s) => {
                r.used.insert(s, ());
            }
        }
    }

    fn table_of(&self, what: &What) -> Option<Table<'_>> {
        match what {
            What::Object(o) => self.objects[*o].as_ref().map(|o| Table::Object(&o.table)),
            What::Kernel(k) => self.kernels[*k].as_ref().map(|(t, _)| Table::Kernel(t)),
            What::Pseudo(_) => None,
        }
    }

    /// Lays the used symbols out, then writes the merged gmon file.
    #[allow(clippy::type_complexity)]
    fn finish(
        &mut self,
    ) -> Result<(
        SymbolTable,
        Vec<u8>,
        Vec<crate::SampledStack>,
        Vec<crate::SampledStack>,
    )> {
        let mut order: Vec<usize> = (0..self.regions.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (&self.regions[a], &self.regions[b]);
            (ra.space, ra.side, ra.first_address, &ra.what).cmp(&(
                rb.space,
                rb.side,
                rb.first_address,
                &rb.what,
            ))
        });
        // Samples sit at their symbol's start; call sites and stack frames keep their place.
        let ranks = OffsetRanks::new(
            self.arcs
                .iter()
                .flat_map(|(f, t, _)| [f, t])
                .chain(self.stacks.iter().flat_map(|(locs, _)| locs))
                .chain(self.off_cpu.iter().flat_map(|(locs, _)| locs)),
        );
        let mut raw = Vec::new();
        let mut cursor = SYNTHETIC_BASE;
        let align = |x: u64, a: u64| x.div_ceil(a) * a;
        for &id in &order {
            let region = &self.regions[id];
            let space = &self.spaces[region.space];
            let prefix = match region.side {
                Side::User => format!("{}u:", space.label),
                Side::Kernel if space.system => format!("{}:", space.label),
                Side::Kernel => format!("{}k:", space.label),
            };
            let label = |name: &[u8], demangle: bool| {
                let mut out = prefix.as_bytes().to_vec();
                match std::str::from_utf8(name) {
                    Ok(text) if demangle => {
                        out.extend_from_slice(demangle::demangle(text).as_bytes())
                    }
                    _ => out.extend_from_slice(name),
                }
                out
            };
            cursor = align(cursor, 0x1000);
            let mut placed = BTreeMap::new();
            let mut pseudo_at = 0;
            if region.pseudo_used || self.options.keep_unused {
                pseudo_at = cursor;
                raw.push(RawSymbol {
                    name: label(&region.pseudo_name, false),
                    address: cursor,
                    is_function: true,
                    is_static: false,
                });
                cursor += 0x10;
            }
            if let Some(table) = self.table_of(&region.what) {
                let mut place = |i: usize, raw: &mut Vec<RawSymbol>| {
                    let span = ranks.span(id, i);
                    let (name, address, is_function) = table.symbol(i);
                    // Keep the symbol's alignment modulo 16, so odd addresses stay odd.
                    let at = align(cursor, 0x10) + (address & 0xf);
                    raw.push(RawSymbol {
                        name: label(name, self.options.demangle),
                        address: at,
                        is_function,
                        // The merged image writes every symbol global (see
                        // write_symbol_image); no listing depends on the binding.
                        is_static: false,
                    });
                    placed.insert(i, at);
                    cursor = at + span + 2;
                };
                if self.options.keep_unused {
                    for i in 0..table.len() {
                        place(i, &mut raw);
                    }
                } else {
                    for &i in region.used.keys() {
                        place(i, &mut raw);
                    }
                }
            }
            let region = &mut self.regions[id];
            region.placed = placed;
            region.pseudo_at = pseudo_at;
        }
        cursor = align(cursor, 0x10);
        raw.push(RawSymbol {
            name: b"[end]".to_vec(),
            address: cursor,
            is_function: false,
            is_static: false,
        });
        let text_end = cursor + 0x10;
        let table = SymbolTable::from_symbols(raw, text_end, AddressSize::U64, Endian::Little);

        let synthetic = |regions: &[Region], loc: &Loc| -> u64 {
            let r = &regions[loc.region];
            match loc.symbol {
                None => r.pseudo_at,
                Some(s) => r.placed.get(&s).copied().unwrap_or(r.pseudo_at) + ranks.offset(loc),
            }
        };
        let hist = std::mem::take(&mut self.hist);
        let mut samples: Vec<(u64, u64)> = hist
            .iter()
            .map(|(&(region, symbol), &count)| {
                let loc = Loc {
                    region,
                    symbol,
                    offset: 0,
                };
                (synthetic(&self.regions, &loc), count)
            })
            .collect();
        drop(hist);
        samples.sort_unstable_by_key(|&(at, _)| at);
        samples.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
        let mut arcs: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for (from, to, count) in &self.arcs {
            let key = (synthetic(&self.regions, from), synthetic(&self.regions, to));
            *arcs.entry(key).or_default() += count;
        }
        let gmon = write_sampled_profile(Endian::Little, &samples, arcs, self.unit)?;
        let placed = |stacks: &[(Vec<Loc>, u64)]| -> Vec<crate::SampledStack> {
            stacks
                .iter()
                .map(|(locs, samples)| crate::SampledStack {
                    frames: locs.iter().map(|l| synthetic(&self.regions, l)).collect(),
                    samples: *samples,
                })
                .collect()
        };
        Ok((table, gmon, placed(&self.stacks), placed(&self.off_cpu)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gmon_format::{Comm, Header, HistogramHeader, Layout, Mapping, SECONDS, Writer};

    fn fixtures() -> PathBuf {
        // Canonical: a recorded path with `..` in it is not read.
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/seamless/objects")
            .canonicalize()
            .unwrap()
    }

    fn gmon(bins: &[(u64, u16)], arcs: &[(u64, u64, u64)]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new(), Layout::gnu(AddressSize::U64, Endian::Little));
        w.header(&Header::Gnu {
            version: 1,
            spare: [0; 12],
        })
        .unwrap();
        for &(at, count) in bins {
            let low = at & !0xfff;
            let header = HistogramHeader {
                low_pc: low,
                high_pc: low + 0x1000,
                prof_rate: 100,
                dimension: SECONDS.0,
                dimension_abbrev: SECONDS.1,
            };
            let mut v = vec![0u16; 2048];
            v[((at - low) / 2) as usize] = count;
            w.histogram(&header, v.into_iter()).unwrap();
        }
        for &(from_pc, self_pc, count) in arcs {
            w.arc(&Arc {
                from_pc,
                self_pc,
                count,
            })
            .unwrap();
        }
        w.finish().unwrap()
    }

    fn names(s: &Seamless) -> Vec<String> {
        s.table
            .symbols()
            .iter()
            .map(|s| s.name_lossy().into_owned())
            .collect()
    }

    /// One process whose address 0x7000_1000 held `reader`'s code, then (after it was
    /// unmapped) `libfake.so`'s; a hidden kallsyms snapshot.
    fn measurement(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        let mut info = MeasurementInfo::default();
        info.process.pid = 7;
        info.process.comm = Some(Comm::new("x").unwrap());
        info.kernel.symbols_file = Some("kallsyms.00000000".into());
        let mut old = Mapping::new(0x7000_1000, 0x7000_2000);
        old.file_offset = Some(0x1000);
        old.path = Some(
            fixtures()
                .join("reader")
                .to_string_lossy()
                .as_bytes()
                .to_vec(),
        );
        old.unmapped_ns = Some(5);
        let mut new = Mapping::new(0x7000_1000, 0x7000_2000);
        new.file_offset = Some(0x1000);
        new.path = Some(
            fixtures()
                .join("libfake.so")
                .to_string_lossy()
                .as_bytes()
                .to_vec(),
        );
        info.mappings = vec![old, new];
        let mut text = Vec::new();
        info.write(&mut text).unwrap();
        std::fs::write(dir.join("gmon.out.7.x"), text).unwrap();
        // 0x7000_1004 is `write` in libfake.so (and would be `compute` in reader).
        std::fs::write(dir.join("gmon.out.7u.x"), gmon(&[(0x7000_1004, 3)], &[])).unwrap();
        let kernel = 0xffff_ffff_8100_0010;
        std::fs::write(
            dir.join("gmon.out.7k.x"),
            gmon(
                &[(kernel, 2)],
                &[(0x7000_1000, kernel, 1), (0x7000_1000, kernel + 0x100, 1)],
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("kallsyms.00000000"),
            "0000000000000000 T _stext\n0000000000000000 T entry_SYSCALL_64\n",
        )
        .unwrap();
    }

    #[test]
    fn earlier_file_sets_of_a_pid_carry_their_command_name() {
        let dir = std::env::temp_dir().join(format!("pkgprof-labels-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let write = |pid: u32, comm: &str, end: Option<u64>| {
            let mut info = MeasurementInfo::default();
            info.process.pid = pid;
            info.process.end_monotonic_ns = end;
            let mut text = Vec::new();
            info.write(&mut text).expect("info");
            std::fs::write(dir.join(format!("gmon.out.{pid}.{comm}")), text).expect("write");
        };
        // Pid 7 ran `sh`, then exec'd `job` (which ended last, though its name sorts first);
        // pid 8 ran one command; pid 9's two sets have no end times: the names decide. Pid 8
        // was reused by a second process, which exec'd too: its labels carry `_1`.
        write(7, "sh", Some(100));
        write(7, "job", Some(200));
        write(8, "cat", Some(50));
        write(9, "a", None);
        write(9, "b", None);
        let mut text = Vec::new();
        let mut info = MeasurementInfo::default();
        info.process.pid = 8;
        info.process.end_monotonic_ns = Some(300);
        info.write(&mut text).expect("info");
        std::fs::write(dir.join("gmon.out.8_1.sh"), &text).expect("write");
        info.process.end_monotonic_ns = Some(400);
        text.clear();
        info.write(&mut text).expect("info");
        std::fs::write(dir.join("gmon.out.8_1.ls"), &text).expect("write");
        let m = gmon_format::scan(&dir).expect("scan");
        let files: Vec<&ProcessFiles> = m.processes.iter().collect();
        let labels = image_labels(&files).expect("labels");
        let got: Vec<(String, String)> = files
            .iter()
            .zip(labels)
            .map(|(f, l)| (f.comm.to_string(), l))
            .collect();
        let want = [
            ("job", "7"),
            ("sh", "7(sh)"),
            ("cat", "8"),
            ("ls", "8_1"),
            ("sh", "8_1(sh)"),
            ("a", "9(a)"),
            ("b", "9"),
        ];
        assert_eq!(
            got,
            want.map(|(c, l)| (c.to_owned(), l.to_owned())).to_vec()
        );
        // Selecting by pid takes the first process; by label, the later one.
        let picked = |sel: ProcessSelection| match sel {
            ProcessSelection::Pids(list) => list
                .iter()
                .flat_map(|&(p, i)| m.instance(p, i).map(|f| f.comm.to_string()))
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        assert_eq!(picked(ProcessSelection::Pids(vec![(8, 0)])), ["cat"]);
        assert_eq!(picked(ProcessSelection::Pids(vec![(8, 1)])), ["ls", "sh"]);
        let err = Seamless::build(
            &m,
            &ProcessSelection::Pids(vec![(8, 2)]),
            &SeamlessOptions::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("no profile of process 8_2 in "),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_latest_mapping_wins_and_hidden_kernel_symbols_are_reported() {
        let dir = std::env::temp_dir().join(format!("pkgprof-labeled-{}", std::process::id()));
        measurement(&dir);
        let m = gmon_format::scan(&dir).unwrap();
        let s = Seamless::build(
            &m,
            &ProcessSelection::Pids(vec![(7, 0)]),
            &SeamlessOptions::default(),
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let s = s.unwrap();
        assert_eq!(names(&s), ["7u:read", "7u:write", "7k:[kernel]", "[end]"]);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(
            s.warnings[0].ends_with(
                "kallsyms.00000000: every address is 0 (kernel.kptr_restrict \
                 hid them when it was taken); kernel symbols are unavailable"
            ),
            "{}",
            s.warnings[0]
        );
        assert_eq!(s.processes[0].user_samples, 3);
        assert_eq!(s.processes[0].kernel_samples, 2);
        // Without names, the entries cannot be classified.
        assert_eq!(s.processes[0].entries.get(&BoundaryKind::Other), Some(&2));
    }

    #[test]
    fn entries_are_classified_by_name() {
        for (name, kind) in [
            ("entry_SYSCALL_64_after_hwframe", BoundaryKind::Syscall),
            ("do_syscall_64", BoundaryKind::Syscall),
            ("asm_exc_page_fault", BoundaryKind::Fault),
            ("asm_sysvec_apic_timer_interrupt", BoundaryKind::Interrupt),
            ("asm_common_interrupt", BoundaryKind::Interrupt),
            ("ret_from_fork_asm", BoundaryKind::Other),
        ] {
            assert_eq!(BoundaryKind::from_entry_symbol(name), kind, "{name}");
        }
    }
}
