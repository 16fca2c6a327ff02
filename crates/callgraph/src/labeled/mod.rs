//! Seamless profiles (pkprof paper, §2 and Figure 2.2): the user and kernel profiles of one or
//! more processes of a measurement directory, symbolized and merged into one profile model,
//! which gprof's analysis and listings read (through its gprof view) to show user functions
//! calling into the kernel, with names labelled `<pid>u:name` and `<pid>k:name`, and which
//! the exports and diffs read too.
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
//! original addresses. The result is a [`Profile`] ([`Seamless::model`]): each placed symbol a
//! function at its synthetic address with its label (`137u`) and side, histogram hits,
//! sampled stacks and arcs at the synthetic addresses of their frames, samples labelled with
//! their process. [`Seamless::gprof`] reads it back as an ordinary symbol table and sum for
//! [`crate::Analysis::new`] ([`crate::gprof_view`]; histograms keep 2-byte bins, so every
//! record has the same scale and gprof's arithmetic holds), made directly (no gmon file is
//! encoded to be read back); that view can also be written out as one gmon.out
//! ([`GprofView::write_gmon`]) with an ELF image of the table ([`write_symbol_image`]) that
//! GNU gprof reads to the same listing.
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
//! `<pid>u:[root]` stands above a function that is the root of complete stacks and is called
//! as well (glibc's `clone3`: every new thread's stacks start there, and `pthread_create`
//! calls it), with the count of those stacks (the user profile's arcs from
//! [`gmon_format::ROOT_FROM_PC`]), so that gprof's arithmetic does not give every thread's
//! time to the caller of `pthread_create`. A function that is only a root (`_start`) keeps
//! no caller.
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
//!
//! # Where each stage lives
//!
//! [`Seamless::build`] (here) picks the file sets and labels them; `merge` reads each
//! process's gmon and stacks files into resolved locations, which `resolve` finds (mappings,
//! objects, kallsyms, pseudo-functions); `stripped` notes the objects only their exported
//! symbols could name, for one warning per object however many processes ran it; `layout`
//! places the used symbols in the synthetic address space and makes the model there;
//! `recorded` rebuilds the view of asynchronous work as recorded. `objects` finds and reads
//! the recorded objects, `header` prints the listing's process header and `elf_out` writes
//! the merged table as an ELF image for `--merge-out`.
//!
//! Longer than 800 lines only by its unit tests (the last 390 lines), which write small
//! measurement directories byte by byte; the code is about 500 lines.
//!
//! Over 800 lines only with its unit tests (the code is about 510 lines): they build
//! measurements in memory and check the merge through private helpers.

mod elf_out;
mod header;
mod instructions;
mod layout;
mod merge;
mod objects;
mod recorded;
mod resolve;
mod state;
mod stripped;
mod symspecs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gmon_format::{HistogramUnit, Measurement, MeasurementInfo, ProcessFiles};
use profile_model::Profile;

use crate::error::{Error, Result};
use crate::gprof_view::{GprofView, gprof_view};

pub use elf_out::write_symbol_image;
pub use header::{write_async_matrix, write_process_header};
pub use instructions::{Instruction, ObjectFile, add_sources};
pub use objects::ObjectCache;
pub use stripped::{StrippedObject, stripped_warnings};
pub use symspecs::relabel_symspecs;

use state::{Builder, Loc, Recorded};

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

impl ProcessSelection {
    /// The file sets of `measurement` this selection picks, in its order (each pid once, all
    /// the file sets of a process that exec'd).
    ///
    /// Returns [`Error::NoSuchProcess`] for a pid asked for that has no files.
    pub fn files<'m>(&self, measurement: &'m Measurement) -> Result<Vec<&'m ProcessFiles>> {
        match self {
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
                Ok(out)
            }
            ProcessSelection::System => Ok(measurement.processes.iter().collect()),
        }
    }
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
    /// Read each process's sampled-stacks file into [`Seamless::model`] (for exact inclusive
    /// times and for exports); a process without one is an error. Default is false.
    pub stacks: bool,
    /// Demangle C++ and Rust names before labelling them (the label would hide a mangled name
    /// from the listings' demangler). Default is true.
    pub demangle: bool,
    /// How the model labels each process's functions. Default is [`ProcessLabels::Pid`], the
    /// listings' labels; the others are for diffs across runs.
    pub labels: ProcessLabels,
    /// For a measurement made with `pkgmon --async`: show its asynchronous work in the
    /// process it ran in (the victim), as recorded, rather than in the one it was charged to
    /// (`pkgprof --async=victim`). The work's frames outside its cut (the system call or
    /// interrupt it ran inside) were not kept: it hangs under the kind's pseudo-function
    /// (`[async net-rx]`) in a process, under no caller in a system-wide profile. Default is
    /// false.
    pub async_as_recorded: bool,
    /// Fill [`Seamless::instructions`] (with [`SeamlessOptions::stacks`]): the samples per
    /// instruction, SLEEPY's EIP view ([`add_sources`] gives their source lines). Default is
    /// false.
    pub instructions: bool,
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
            labels: ProcessLabels::Pid,
            async_as_recorded: false,
            instructions: false,
        }
    }
}

/// How [`Seamless::build`] labels the functions of a process in its model
/// ([`SeamlessOptions::labels`]). The system-wide kernel profiles keep `kernel` and
/// `other` in every style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProcessLabels {
    /// As the listings label them: `137u`, `137k`. The default.
    #[default]
    Pid,
    /// By side alone: `u`, `k` — for comparing one process with one of another run, whose pid
    /// differs.
    Side,
    /// By command name and side: `prog/u`, `prog/k` — for comparing whole systems across
    /// runs, where processes get other pids but keep their names.
    Comm,
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

/// A merged measurement: its profile model, which the listings ([`Seamless::gprof`]),
/// exports and diffs ([`crate::measurement_model`]) all read, and what its header shows.
#[derive(Debug)]
#[non_exhaustive]
pub struct Seamless {
    /// The merged profile. Its functions are the used symbols (every symbol of every object
    /// hit with [`SeamlessOptions::keep_unused`]), labelled by process and side and placed
    /// in a synthetic address space, region after region (`Function::address`); samples are
    /// labelled with their process's pid and command name. Value types: `samples`, the
    /// histograms as one-frame samples, when no sampled stacks were read; with stacks,
    /// `samples` are the stacks (kernel frames above the user frames that entered the
    /// kernel, `[interrupt]` between them for an interrupt, `[truncated]` beyond a stack cut
    /// short), `off-cpu` the nanoseconds the system calls slept at each sleep site (latency
    /// files recorded with `pkgmon --blocking`; absent without them) and
    /// [`crate::HISTOGRAM`] the histograms. Arcs are the profiles' arcs.
    pub model: Profile,
    /// The histograms' unit (rate and dimension, as their files had it), which the listings
    /// print and the model's period (nanoseconds per sample) cannot hold exactly; `None` when
    /// no histogram was read.
    pub unit: Option<HistogramUnit>,
    /// The processes merged, in order.
    pub processes: Vec<ProcessSummary>,
    /// The asynchronous-event attribution's moves (`async.moves`), when the measurement was
    /// made with `pkgmon --async`: its files hold the work charged to the beneficiaries, and
    /// this says from whom it came.
    pub async_moves: Option<gmon_format::AsyncMoves>,
    /// Problems that did not stop the merge (missing objects, missing kernel symbols), one
    /// sentence each.
    pub warnings: Vec<String>,
    /// The objects its processes ran that are symbolized from their exported symbols only
    /// (stripped, no debug file found): [`stripped_warnings`] says so, once per object of
    /// however many processes and merges.
    pub stripped: Vec<StrippedObject>,
    /// The sampled instructions, with [`SeamlessOptions::instructions`]: each stack's
    /// innermost frame, where its samples were taken; empty otherwise.
    pub instructions: Vec<Instruction>,
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
        Self::build_sharing(measurement, selection, options, None)
    }

    /// [`Seamless::build`] for one of several measurements of a run (the windows of a
    /// continuous directory, merged in parallel): the objects found are read once into
    /// `cache` and shared by the merges, rather than read again by each.
    ///
    /// Returns the errors of [`Seamless::build`].
    pub fn build_sharing(
        measurement: &Measurement,
        selection: &ProcessSelection,
        options: &SeamlessOptions,
        cache: Option<&std::sync::Arc<ObjectCache>>,
    ) -> Result<Seamless> {
        let mut b = Builder {
            options: options.clone(),
            dir: measurement.dir.clone(),
            cache: cache.cloned(),
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
        let async_moves = read_async_moves(&measurement.dir)?;
        if let (true, Some(moves)) = (options.async_as_recorded, &async_moves) {
            let recorded = Recorded::new(moves, &measurement.dir)?;
            if recorded.homeless > 0 && *selection == ProcessSelection::System {
                b.warnings.push(format!(
                    "{} samples of asynchronous work ran in processes that have no files (all \
                     their samples were moved); the view as recorded leaves them out",
                    recorded.homeless
                ));
            }
            b.recorded = Some(recorded);
        }
        let mut processes = Vec::new();
        let files = selection.files(measurement)?;
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
        let stripped = b.find_stripped_objects();
        let instructions = b.instructions();
        let model = b.finish();
        Ok(Seamless {
            model,
            unit: b.unit,
            processes,
            async_moves,
            warnings: b.warnings,
            stripped,
            instructions,
        })
    }

    /// What the gprof listings read (symbol table, histogram and arcs, sampled stacks), made
    /// from [`Seamless::model`]; `--merge-out` writes it ([`GprofView::write_gmon`],
    /// [`crate::write_symbol_image`]) for GNU gprof, which reads it to the same listing.
    pub fn gprof(&self) -> GprofView {
        gprof_view(&self.model, self.unit)
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
                format!("{label}({})", f.comm)
            } else {
                label
            }
        })
        .collect())
}

/// The measurement's `async.moves`, if it has one.
///
/// Returns an error if it cannot be read or is damaged.
fn read_async_moves(dir: &Path) -> Result<Option<gmon_format::AsyncMoves>> {
    let path = dir.join(gmon_format::ASYNC_MOVES_FILE);
    if path.symlink_metadata().is_err() {
        return Ok(None);
    }
    let data = read_file(&path, crate::input::TEXT_MAX_BYTES)?;
    let moves =
        gmon_format::AsyncMoves::parse(&data).map_err(|e| Error::from(e.with_path(&path)))?;
    Ok(Some(moves))
}

/// Reads a file of the measurement, at most `limit` bytes (see [`crate::input`]).
fn read_file(path: &Path, limit: u64) -> Result<safe_fs::Contents> {
    crate::input::read_measurement_file(path, limit).map_err(|e| {
        crate::input::error(e, |source| Error::ReadFile {
            path: path.to_owned(),
            source,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gmon_format::{
        AddressSize, Arc, Comm, Endian, Header, HistogramHeader, Layout, Mapping, SECONDS, Writer,
    };

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
        s.gprof()
            .table
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
    fn merges_sharing_a_cache_read_each_object_once_and_give_the_same_model() {
        let dir = std::env::temp_dir().join(format!("pkgprof-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        measurement(&dir);
        // The object the samples are in (the latest mapping's) copied to where the process
        // had it, so that it can go away.
        let copy = dir.join("libfake.so");
        std::fs::copy(fixtures().join("libfake.so"), &copy).unwrap();
        let info_path = dir.join("gmon.out.7.x");
        let mut info = MeasurementInfo::parse(&std::fs::read(&info_path).unwrap()).unwrap();
        info.mappings[1].path = Some(copy.to_string_lossy().as_bytes().to_vec());
        let mut text = Vec::new();
        info.write(&mut text).unwrap();
        std::fs::write(&info_path, text).unwrap();
        let m = gmon_format::scan(&dir).unwrap();
        let pick = ProcessSelection::Pids(vec![(7, 0)]);
        let options = SeamlessOptions::default();
        let cache = std::sync::Arc::new(ObjectCache::default());
        let alone = Seamless::build(&m, &pick, &options);
        let first = Seamless::build_sharing(&m, &pick, &options, Some(&cache));
        // Read once: the second merge finds it in the cache, not on the disk.
        std::fs::remove_file(&copy).unwrap();
        let second = Seamless::build_sharing(&m, &pick, &options, Some(&cache));
        let gone = Seamless::build(&m, &pick, &options);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(cache.len(), 1);
        let (alone, first, second) = (alone.unwrap(), first.unwrap(), second.unwrap());
        assert_eq!(names(&first), names(&alone));
        let model = |s: &Seamless| format!("{:?}", s.model);
        assert_eq!(model(&first), model(&alone));
        assert_eq!(model(&second), model(&alone));
        // Without the cache, the object gone is a pseudo-function.
        assert_ne!(names(&gone.unwrap()), names(&alone));
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
        // The model the listing read: functions by label and side at their places, samples
        // labelled with the process.
        let m = &s.model;
        let functions: Vec<(String, Option<String>, Option<u64>)> = (m.functions())
            .map(|(f, function)| {
                let label = function.label.map(|l| m.string(l).to_owned());
                (m.function_name(f).to_owned(), label, function.address)
            })
            .collect();
        let at = |name: &str| {
            s.gprof()
                .table
                .symbols()
                .iter()
                .find(|s| s.name_lossy() == name)
                .map(|s| s.address)
        };
        assert_eq!(
            functions,
            [
                ("read".into(), Some("7u".into()), at("7u:read")),
                ("write".into(), Some("7u".into()), at("7u:write")),
                ("[kernel]".into(), Some("7k".into()), at("7k:[kernel]")),
            ]
        );
        let pid = profile_model::Label::number(profile_model::LabelKey::Pid, 7);
        assert!(
            m.samples()
                .all(|sample| m.labels(sample.labels).contains(&pid))
        );
        assert_eq!(s.processes[0].user_samples, 3);
        assert_eq!(s.processes[0].kernel_samples, 2);
        // Without names, the entries cannot be classified.
        assert_eq!(s.processes[0].entries.get(&BoundaryKind::Other), Some(&2));
    }

    /// The collector's `[boundary]` counts and counter notes reach the header, every kind
    /// with its own count: a kind left out of the merge or the header fails here.
    #[test]
    fn every_recorded_boundary_kind_is_in_the_header() {
        let dir = std::env::temp_dir().join(format!("pkgprof-header-{}", std::process::id()));
        measurement(&dir);
        let info_path = dir.join("gmon.out.7.x");
        let mut info = MeasurementInfo::parse(&std::fs::read(&info_path).unwrap()).unwrap();
        for (i, kind) in BoundaryKind::ALL.into_iter().enumerate() {
            info.boundary.entries.insert(kind, 11 + i as u64);
        }
        info.counters.source = Some(gmon_format::CounterSource::Proc);
        info.counters.taskstats_refused = true;
        info.sampling.truncated_stacks = Some(3);
        info.sampling.truncated_unwind_info = Some(3);
        let mut text = Vec::new();
        info.write(&mut text).unwrap();
        std::fs::write(&info_path, text).unwrap();
        let m = gmon_format::scan(&dir).unwrap();
        let s = Seamless::build(
            &m,
            &ProcessSelection::Pids(vec![(7, 0)]),
            &SeamlessOptions::default(),
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let mut out = Vec::new();
        crate::write_process_header(&mut out, &s.unwrap().processes, None).unwrap();
        let out = String::from_utf8(out).unwrap();
        let entries: Vec<String> = BoundaryKind::ALL
            .into_iter()
            .enumerate()
            .map(|(i, k)| format!("{} {}", 11 + i, k.as_str()))
            .collect();
        assert!(
            out.contains(&format!("    kernel entries:   {}\n", entries.join(", "))),
            "{out}"
        );
        assert!(
            out.contains("    counters from:    proc (taskstats refused)\n"),
            "{out}"
        );
        assert!(
            out.contains("3 truncated stacks (3 unwind info)\n"),
            "{out}"
        );
    }

    /// The view as recorded takes what `async.moves` says moved out of the beneficiary's
    /// kernel profile (histogram, arcs, boundary arc) and puts it into the victim's, under the
    /// kind's pseudo-function; a file written before the moved stacks were listed is refused,
    /// and a profile that does not hold what moved in is said to make the view inexact.
    #[test]
    fn the_view_as_recorded_puts_moved_work_back_into_its_victim() {
        let dir = std::env::temp_dir().join(format!("pkgprof-recorded-{}", std::process::id()));
        measurement(&dir);
        // Process 8 received 3 samples from process 7: inner frame K1, outer K2.
        let (k1, k2) = (0xffff_ffff_8100_2200_u64, 0xffff_ffff_8100_3300_u64);
        let info = std::fs::read_to_string(dir.join("gmon.out.7.x")).unwrap();
        std::fs::write(dir.join("gmon.out.8.x"), info.replace("pid 7", "pid 8")).unwrap();
        let own = 0xffff_ffff_8100_0010;
        std::fs::write(
            dir.join("gmon.out.8k.x"),
            gmon(
                &[(own, 2), (k1, 5)],
                &[(0x7000_1000, own, 2), (k2, k1, 4), (0, k2, 3)],
            ),
        )
        .unwrap();
        std::fs::write(dir.join("gmon.out.8u.x"), gmon(&[(0x7000_1004, 1)], &[])).unwrap();
        let moves = |samples: u64, version: &str| {
            let stack =
                format!("stack net-rx gmon.out.7k.x gmon.out.8k.x {samples} 1 {k1:x},{k2:x}\n");
            let text = format!(
                "pkgasync {version}\nkind net-rx held 3 attributed 3 windows 1 objects 1 unconsumed 0\n\
                 move net-rx 7 8 3 3\n{}",
                if version == "1.0" { "" } else { &stack }
            );
            std::fs::write(dir.join("async.moves"), text).unwrap();
            let m = gmon_format::scan(&dir).unwrap();
            let o = SeamlessOptions {
                async_as_recorded: true,
                ..SeamlessOptions::default()
            };
            Seamless::build(&m, &ProcessSelection::Pids(vec![(7, 0), (8, 0)]), &o)
        };
        let s = moves(3, "1.1").unwrap();
        let samples: Vec<u64> = s.processes.iter().map(|p| p.kernel_samples).collect();
        assert_eq!(samples, [2 + 3, 2 + 5 - 3], "{:?}", s.warnings);
        assert!(
            s.warnings.iter().all(|w| !w.contains("not exact")),
            "{:?}",
            s.warnings
        );
        let net = BoundaryKind::AsyncNetRx;
        let entries: Vec<Option<u64>> = (s.processes.iter())
            .map(|p| p.entries.get(&net).copied())
            .collect();
        assert_eq!(entries, [Some(3), None]);
        assert!(
            names(&s).contains(&"7k:[async net-rx]".to_string()),
            "{:?}",
            names(&s)
        );
        let short = moves(9, "1.1").unwrap();
        assert!(
            short.warnings.iter().any(|w| w.contains("not exact")),
            "{:?}",
            short.warnings
        );
        let old = moves(3, "1.0");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(old, Err(Error::NoMovedStacks { .. })), "{old:?}");
    }
}
