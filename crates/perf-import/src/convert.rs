//! perf.data records → collect-perf's records, fed one at a time to its aggregator, then
//! written as a measurement.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use collect_perf::{
    AggregateOptions, Aggregator, CopyEnd, MachineSnapshot, Output, Recording, SideBand,
    SideRecord, UserRegs, WriteOptions, WriteSummary, write_measurement_to,
};
use linux_perf_data::linux_perf_event_reader::constants::PERF_RECORD_MISC_MMAP_BUILD_ID;
use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, Mmap2FileId, PerfEventType, RecordType, SamplingPolicy,
    SoftwareCounterType,
};
use linux_perf_data::{DsoKey, PerfFileReader, PerfFileRecord};
use safe_fs::ReadOptions;

use crate::error::{Error, Result};
use crate::kernel::{self, KernelSymbolsSource};
use collect_perf::KernelSymbols;

/// How [`import_file`] and [`import_reader`] convert.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ImportOptions {
    /// A kallsyms file of the kernel the perf.data was recorded on. Default is `None`: perf's
    /// build-id cache, else the running kernel's when its release is the file's.
    pub kallsyms: Option<PathBuf>,
    /// The pids whose processes (and their children) get file sets; of every other process
    /// only the kernel part of its samples is kept, as pkgmon's system-wide mode does. Default
    /// is `None`: every process gets its files.
    pub system_wide: Option<BTreeSet<u32>>,
    /// perf's build-id cache, where objects no longer at their recorded path (or replaced) are
    /// found by build-id to unwind `--call-graph dwarf` stacks. Default: `$HOME/.debug`
    /// ([`gmon_format::perf_cache::default_dir`]).
    pub build_id_cache: Option<PathBuf>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            kallsyms: None,
            system_wide: None,
            build_id_cache: gmon_format::perf_cache::default_dir(),
        }
    }
}

/// What an import read and wrote.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Imported {
    /// What the measurement writer wrote.
    pub written: WriteSummary,
    /// cpu-clock or task-clock samples read.
    pub samples: u64,
    /// Samples of other events, left out.
    pub other_samples: u64,
    /// Samples perf reported lost.
    pub lost: u64,
    /// Where the kernel symbols came from.
    pub kernel_symbols: KernelSymbolsSource,
    /// Things the user should know, as sentences.
    pub notes: Vec<String>,
}

/// Whether `bytes` (a file's first 8 bytes or more) start like a perf.data file, in file or
/// pipe mode, of either byte order.
pub fn is_perf_data(bytes: &[u8]) -> bool {
    matches!(bytes.get(..8), Some(b"PERFILE2" | b"2ELIFREP"))
}

/// Imports the perf.data file at `path` (file or pipe mode) into `out`.
///
/// Nothing is written unless the whole file converts: a file that fails leaves `out`
/// abandoned (no placeholder manifest), so a measurement is complete or absent.
///
/// Returns an error naming the file if it is not a regular file, is not perf.data or is
/// damaged, holds no cpu-clock or task-clock samples, or if the measurement cannot be written.
pub fn import_file(path: &Path, options: &ImportOptions, out: Output) -> Result<Imported> {
    written_or_abandoned(read_file(path, options), out)
}

/// The bytes of holes allowed in a perf.data file (a sparse file: ranges its size claims that
/// the disk does not store, read as zeros). perf writes its files without any; a section
/// claimed over holes is as large as the claim says, but cost its maker nothing (a 28 KiB
/// perf.data whose feature sections claimed 4 GiB each over holes took the reader to 23 GiB).
const PERF_DATA_MAX_HOLES: u64 = 16 << 20;

/// Reads and converts the file at `path`.
fn read_file(path: &Path, options: &ImportOptions) -> Result<Converted> {
    // No size cap: perf.data files of gigabytes are ordinary, and nothing holds the file. The
    // reader keeps one round of records (perf ends one per ring flush; a file without rounds is
    // held whole, in proportion to its records), the feature sections as far as the file holds
    // them, and the aggregate: memory follows content, not the sizes a header claims
    // (vendor/linux-perf-data/README.pkgprof.md).
    let opts = ReadOptions::default()
        .with_max_bytes(u64::MAX)
        .with_max_holes(PERF_DATA_MAX_HOLES);
    let (file, _) = safe_fs::open(path, &opts)?;
    let mut head = [0u8; 16];
    let pipe = file.read_exact_at(&mut head, 0).is_ok() && is_pipe_mode(&head);
    let reader = BufReader::with_capacity(1 << 16, file);
    let find = |id: Option<&[u8]>, release: Option<&str>| {
        kernel::find(options.kallsyms.as_deref(), id, release)
    };
    read_seekable(reader, pipe, path, options, &find)
}

/// Whether a perf.data file starting with `head` is in pipe mode: its header's size field
/// is 16 (magic and size only), where a seekable file's is 104.
pub(crate) fn is_pipe_mode(head: &[u8]) -> bool {
    head.get(8..16) == Some(&16u64.to_le_bytes()[..])
}

/// Parses and converts a seekable perf.data, in pipe mode when `pipe`.
pub(crate) fn read_seekable<R: Read + Seek>(
    reader: R,
    pipe: bool,
    path: &Path,
    options: &ImportOptions,
    find: FindKernel<'_>,
) -> Result<Converted> {
    if pipe {
        return read_pipe(reader, path, options, find);
    }
    let reader = Tracked::new(reader);
    let at = reader.position();
    let r = PerfFileReader::parse_file(reader).map_err(|source| Error::Parse {
        path: path.to_owned(),
        offset: at.get(),
        source,
    })?;
    read_records(r, path, &at, options, find)
}

/// Parses and converts a perf.data stream in pipe mode.
fn read_pipe<R: Read>(
    reader: R,
    path: &Path,
    options: &ImportOptions,
    find: FindKernel<'_>,
) -> Result<Converted> {
    let reader = Tracked::new(reader);
    let at = reader.position();
    let r = PerfFileReader::parse_pipe(reader).map_err(|source| Error::Parse {
        path: path.to_owned(),
        offset: at.get(),
        source,
    })?;
    read_records(r, path, &at, options, find)
}

/// Imports a perf.data stream in pipe mode (`perf record -o - | …`) into `out`; `name` is
/// what errors call it.
///
/// Returns the errors of [`import_file`], and writes nothing on error as it does.
pub fn import_reader(
    reader: impl Read,
    name: &Path,
    options: &ImportOptions,
    out: Output,
) -> Result<Imported> {
    let find = |id: Option<&[u8]>, release: Option<&str>| {
        kernel::find(options.kallsyms.as_deref(), id, release)
    };
    let reader = BufReader::with_capacity(1 << 16, reader);
    written_or_abandoned(read_pipe(reader, name, options, &find), out)
}

/// A reader that says how far it has been read (or sought), for the byte offsets of errors.
struct Tracked<R> {
    inner: R,
    at: Rc<Cell<u64>>,
}

impl<R> Tracked<R> {
    fn new(inner: R) -> Tracked<R> {
        Tracked {
            inner,
            at: Rc::default(),
        }
    }

    /// The offset, shared: it moves as the reader is read.
    fn position(&self) -> Rc<Cell<u64>> {
        Rc::clone(&self.at)
    }
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.at.set(self.at.get().saturating_add(n as u64));
        Ok(n)
    }
}

impl<R: Seek> Seek for Tracked<R> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let at = self.inner.seek(to)?;
        self.at.set(at);
        Ok(at)
    }
}

/// perf's callchain context markers: the frames after one come from that context.
const CONTEXT_KERNEL: u64 = -128i64 as u64;
const CONTEXT_USER: u64 = -512i64 as u64;
/// Every marker is at or above this.
const CONTEXT_MAX: u64 = -4095i64 as u64;
/// x86_64 register numbers in `sample_regs_user`.
const REG_BX: u64 = 1;
const REG_BP: u64 = 6;
const REG_SP: u64 = 7;
const REG_IP: u64 = 8;
/// `PROT_EXEC`, for MMAP records (which say only whether a mapping is executable).
const PROT_EXEC: u32 = 4;
/// The kernel's callchain depth limit when the event asks for none
/// (`kernel.perf_event_max_stack`'s default).
const DEFAULT_MAX_STACK: u16 = 127;

/// How the kernel symbols of a file are found, from the kernel build-id and release it records.
pub(crate) type FindKernel<'a> =
    &'a dyn Fn(Option<&[u8]>, Option<&str>) -> Result<(KernelSymbols, KernelSymbolsSource)>;

/// What a perf.data file converts to, before anything is written.
pub(crate) struct Converted {
    pub(crate) rec: Recording,
    pub(crate) aggregate: collect_perf::Aggregate,
    pub(crate) other_samples: u64,
    /// MMAP2 records left out because their build-id claims more than 20 bytes.
    pub(crate) damaged_mmaps: u64,
    /// Rounds of records the reader gave out before their end, because they held more than
    /// it keeps for sorting (16 MiB, or 128 times what the round read).
    pub(crate) early_rounds: u64,
    pub(crate) source: KernelSymbolsSource,
    /// The machine the file was recorded on, as far as the file says.
    pub(crate) machine: MachineSnapshot,
}

/// Writes what converted with collect-perf's measurement writer; if the conversion failed,
/// abandons `out` (its placeholder manifest removed) and returns that error.
fn written_or_abandoned(converted: Result<Converted>, out: Output) -> Result<Imported> {
    let c = match converted {
        Ok(c) => c,
        Err(e) => {
            // The conversion's error is the one to tell; a failure to remove the
            // placeholder leaves a measurement pkgprof refuses anyway.
            let _ = out.abandon();
            return Err(e);
        }
    };
    let mut notes = Vec::new();
    if let Some(n) = c.source.note() {
        notes.push(n);
    }
    if c.damaged_mmaps > 0 {
        notes.push(format!(
            "{} MMAP2 records left out: their build-id claims more than 20 bytes (damaged); \
             samples in those mappings are not named",
            c.damaged_mmaps
        ));
    }
    if c.early_rounds > 0 {
        notes.push(format!(
            "{} rounds of records held more than 16 MiB, and 128 times the bytes they were read \
             from, and were sorted in parts (perf's hold a pass over its ring buffers): \
             samples near their edges may be out of time order",
            c.early_rounds
        ));
    }
    if c.other_samples > 0 {
        notes.push(format!(
            "{} samples of events other than cpu-clock and task-clock left out",
            c.other_samples
        ));
    }
    let mut write = WriteOptions::default();
    write.machine = Some(c.machine);
    let written = write_measurement_to(&c.rec, &c.aggregate, &write, out)?;
    Ok(Imported {
        written,
        samples: c.rec.sample_count,
        other_samples: c.other_samples,
        lost: c.rec.lost,
        kernel_symbols: c.source,
        notes,
    })
}

/// Reads every record of `reader` into the collector's aggregator; `find` gives the kernel
/// symbols, `at` how far the file has been read (for errors).
fn read_records<R: Read>(
    reader: PerfFileReader<R>,
    path: &Path,
    at: &Cell<u64>,
    options: &ImportOptions,
    find: FindKernel<'_>,
) -> Result<Converted> {
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = reader;
    let attrs = perf_file.event_attributes().to_vec();
    let cpu_time: Vec<bool> = attrs
        .iter()
        .map(|a| {
            matches!(
                a.attr.type_,
                PerfEventType::Software(
                    SoftwareCounterType::CpuClock | SoftwareCounterType::TaskClock
                )
            ) && !matches!(a.attr.sampling_policy, SamplingPolicy::NoSampling)
        })
        .collect();
    let Some(first) = cpu_time.iter().position(|&c| c) else {
        let events: Vec<String> = attrs
            .iter()
            .map(|a| {
                a.name()
                    .map_or_else(|| format!("{:?}", a.attr.type_), str::to_owned)
            })
            .collect();
        return Err(Error::NoCpuTime {
            path: path.to_owned(),
            events: events.join(", "),
        });
    };
    let attr = &attrs[first].attr;

    let build_ids = perf_file.build_ids().unwrap_or_default();
    let kernel_build_id = build_ids.get(&DsoKey::Kernel).map(|d| d.build_id.clone());
    let release = perf_file.os_release().ok().flatten().map(str::to_owned);
    let (ksyms, source) = find(kernel_build_id.as_deref(), release.as_deref())?;
    // The info file describes the recording machine, not this one: its kernel as the file
    // records it, and its vDSO from perf's build-id cache (perf record keeps a copy).
    let mut machine = MachineSnapshot::default();
    machine.release = release.clone();
    machine.kernel_build_id = kernel_build_id.clone();
    machine.vdso = build_ids
        .get(&DsoKey::Vdso64)
        .and_then(|d| cached_vdso(options.build_id_cache.as_deref()?, &d.build_id));
    // The build-ids perf recorded for the objects samples hit, by path: MMAP2 records carry
    // an inode unless recorded with --buildid-mmap.
    let by_path: HashMap<Vec<u8>, Vec<u8>> = build_ids
        .into_values()
        .filter(|d| !d.build_id.is_empty())
        .map(|d| (d.path, d.build_id))
        .collect();

    let mut rec = Recording::default();
    rec.frequency = match attr.sampling_policy {
        SamplingPolicy::Frequency(f) => f,
        SamplingPolicy::Period(p) => 1_000_000_000 / p.get(),
        SamplingPolicy::NoSampling => 0,
    };
    rec.user_stack_bytes = attr.sample_stack_user;
    rec.max_stack = match attr.sample_max_stack {
        0 => DEFAULT_MAX_STACK,
        n => n,
    };
    let mut aggregate_options = AggregateOptions::default();
    aggregate_options.system_wide = options.system_wide.clone();
    aggregate_options.build_id_cache = options.build_id_cache.clone();
    let mut agg = Aggregator::new(aggregate_options);
    let mut other_samples = 0u64;
    let mut damaged_mmaps = 0u64;
    let mut start = None;
    let mut end = 0u64;
    let damaged = |what: &'static str| {
        move |source| Error::Record {
            path: path.to_owned(),
            offset: at.get(),
            what,
            source,
        }
    };
    loop {
        let record = match record_iter.next_record(&mut perf_file) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(source) => {
                return Err(Error::Parse {
                    path: path.to_owned(),
                    offset: at.get(),
                    source,
                });
            }
        };
        let PerfFileRecord::EventRecord { attr_index, record } = record else {
            continue;
        };
        let time = record.timestamp().unwrap_or(0);
        let cpu = record.common_data().ok().and_then(|c| c.cpu).unwrap_or(0);
        // linux-perf-event-reader asserts, and so panics, on an MMAP2 build-id of more than
        // 20 bytes (its length is the byte after pid, tid, address, length and offset). Such
        // a record is skipped and counted, not fatal: one was seen once in a perf record -z
        // file under load, whose other records read well.
        if record.record_type == RecordType::MMAP2
            && record.misc & PERF_RECORD_MISC_MMAP_BUILD_ID != 0
            && record
                .data
                .get(32..33)
                .is_some_and(|b| b.as_slice()[0] > 20)
        {
            damaged_mmaps += 1;
            continue;
        }
        let kind = match record.parse().map_err(damaged("event"))? {
            EventRecord::Sample(s) => {
                if !cpu_time.get(attr_index).copied().unwrap_or(false) {
                    other_samples += 1;
                    continue;
                }
                start.get_or_insert(time);
                end = end.max(time);
                let (Some(pid), Some(tid)) = (s.pid, s.tid) else {
                    other_samples += 1;
                    continue;
                };
                let ip = s.ip.unwrap_or(0);
                let user_mode = s.cpu_mode == CpuMode::User;
                let mut kernel = Vec::new();
                let mut user = Vec::new();
                match &s.callchain {
                    Some(chain) => {
                        let mut ctx = 0;
                        for i in 0..chain.len() {
                            let Some(a) = chain.get(i) else { break };
                            if a >= CONTEXT_MAX {
                                ctx = a;
                            } else if ctx == CONTEXT_KERNEL {
                                kernel.push(a);
                            } else if ctx == CONTEXT_USER {
                                user.push(a);
                            }
                        }
                    }
                    None if user_mode => user.push(ip),
                    None => kernel.push(ip),
                }
                let regs = s.user_regs.as_ref().and_then(|r| {
                    Some(UserRegs {
                        ip: r.get(REG_IP)?,
                        sp: r.get(REG_SP)?,
                        bp: r.get(REG_BP)?,
                        bx: r.get(REG_BX),
                    })
                });
                // --call-graph dwarf asks the kernel for no user callchain: the user part
                // starts at the user registers' ip and is unwound from the stack copy.
                if user.is_empty()
                    && let Some(r) = regs
                {
                    user.push(r.ip);
                }
                let (stack, full) = match &s.user_stack {
                    Some((data, dynamic)) if !data.is_empty() => {
                        let bytes = data.as_slice();
                        let n = usize::try_from(*dynamic).unwrap_or(usize::MAX);
                        (bytes[..n.min(bytes.len())].to_vec(), n >= bytes.len())
                    }
                    _ => (Vec::new(), false),
                };
                let mut one = Recording::default();
                one.push_sample(
                    time,
                    pid as u32,
                    tid as u32,
                    s.cpu.unwrap_or(cpu),
                    s.period.unwrap_or(0),
                    ip,
                    user_mode,
                    regs,
                    &kernel,
                    &user,
                    &stack,
                );
                if let Some(last) = one.samples.last_mut() {
                    last.copy_end = CopyEnd::sized(full);
                    last.chain_limited = s
                        .callchain
                        .as_ref()
                        .is_some_and(|c| c.len() >= usize::from(rec.max_stack));
                }
                rec.sample_count += 1;
                agg.sample(&one, &one.samples[0]);
                continue;
            }
            EventRecord::Mmap2(m) if m.pid >= 0 => {
                let filename = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                let build_id = match m.file_id {
                    Mmap2FileId::BuildId(id) => Some(id),
                    Mmap2FileId::InodeAndVersion(_) => by_path.get(filename.as_bytes()).cloned(),
                };
                SideBand::Mmap {
                    pid: m.pid as u32,
                    tid: m.tid as u32,
                    addr: m.address,
                    len: m.length,
                    pgoff: m.page_offset,
                    build_id,
                    prot: m.protection,
                    flags: m.flags,
                    filename,
                }
            }
            EventRecord::Mmap(m) if m.pid >= 0 && m.is_executable => {
                let filename = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
                SideBand::Mmap {
                    pid: m.pid as u32,
                    tid: m.tid as u32,
                    addr: m.address,
                    len: m.length,
                    pgoff: m.page_offset,
                    build_id: by_path.get(filename.as_bytes()).cloned(),
                    prot: PROT_EXEC,
                    flags: 0,
                    filename,
                }
            }
            EventRecord::Comm(c) => SideBand::Comm {
                pid: c.pid as u32,
                tid: c.tid as u32,
                comm: String::from_utf8_lossy(&c.name.as_slice()).into_owned(),
                exec: c.is_execve,
            },
            EventRecord::Fork(f) => SideBand::Fork {
                pid: f.pid as u32,
                ppid: f.ppid as u32,
                tid: f.tid as u32,
                ptid: f.ptid as u32,
            },
            EventRecord::Exit(f) => SideBand::Exit {
                pid: f.pid as u32,
                ppid: f.ppid as u32,
                tid: f.tid as u32,
                ptid: f.ptid as u32,
            },
            EventRecord::Lost(l) => {
                rec.lost += l.count;
                *rec.lost_per_cpu.entry(cpu).or_default() += l.count;
                SideBand::Lost { count: l.count }
            }
            EventRecord::Throttle(_) => {
                rec.throttled += 1;
                SideBand::Throttle { unthrottle: false }
            }
            EventRecord::Unthrottle(_) => SideBand::Throttle { unthrottle: true },
            _ => continue,
        };
        end = end.max(time);
        agg.side_band(&SideRecord { time, cpu, kind });
    }
    rec.start_time = start.unwrap_or(0);
    rec.end_time = end;
    // perf's clock counts from boot, as CLOCK_MONOTONIC does; the file's clock data (perf
    // record -k) ties it to the wall clock, else wall-clock times read as since boot.
    rec.start_realtime = match perf_file.clock_data().ok().flatten() {
        Some(c) => rec
            .start_time
            .wrapping_add(c.wall_clock_ns.wrapping_sub(c.clockid_time_ns)),
        None => rec.start_time,
    };
    let aggregate = agg.finish(ksyms);
    Ok(Converted {
        rec,
        aggregate,
        other_samples,
        damaged_mmaps,
        early_rounds: record_iter.early_rounds(),
        source,
        machine,
    })
}

/// Largest vDSO image read from the cache (today's are 8 KiB).
const VDSO_MAX_BYTES: u64 = 1 << 20;

/// The vDSO with `build_id` from perf's build-id cache `cache`, if it holds it.
fn cached_vdso(cache: &Path, build_id: &[u8]) -> Option<Vec<u8>> {
    let path = gmon_format::perf_cache::object_path(cache, Path::new("[vdso]"), build_id)?;
    safe_fs::read(
        &path,
        &ReadOptions::default().with_max_bytes(VDSO_MAX_BYTES),
    )
    .ok()
    .map(safe_fs::Contents::into_vec)
}
