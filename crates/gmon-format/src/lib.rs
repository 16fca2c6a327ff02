//! Read and write gmon.out profiles, and the process-labeled profile sets of pkgprof.
//!
//! gmon.out is what `gcc -pg` programs and profiling kernels write and what `gprof` reads: a PC
//! histogram, call-graph arcs and (rarely) basic-block counts. This crate reads and writes its
//! three layouts — the GNU tagged format, the 4.4BSD `gmonhdr` and the old BSD header — with
//! either address width and byte order, byte for byte: reading a file and writing its records
//! back gives the same bytes.
//!
//! Using it takes three steps:
//!
//! 1. Learn the address width and byte order from the profiled image (gprof takes them from the
//!    ELF header; a gmon file does not record them) and put them in [`ReadOptions`].
//! 2. [`Profile::parse`] the bytes. This reads only the header and borrows the input.
//! 3. Iterate [`Profile::records`]: histograms (with bins borrowed, not copied), arcs and
//!    basic-block counts, each with its byte offset. Or add profiles into a [`Sum`] with gprof's
//!    rules, and write results with a [`Writer`].
//!
//! ```
//! use gmon_format::{AddressSize, Endian, Profile, ReadOptions, Record};
//!
//! # fn main() -> gmon_format::Result<()> {
//! // A GNU header followed by one arc: 0x1220 called 0x11d7 twenty times.
//! let mut data = b"gmon\x01\0\0\0".to_vec();
//! data.extend([0; 12]);
//! data.push(1);
//! data.extend(0x1220u64.to_le_bytes());
//! data.extend(0x11d7u64.to_le_bytes());
//! data.extend(20u32.to_le_bytes());
//!
//! let profile = Profile::parse(&data, &ReadOptions::new(AddressSize::U64, Endian::Little))?;
//! for record in profile.records() {
//!     if let (_offset, Record::Arc(arc)) = record? {
//!         assert_eq!((arc.from_pc, arc.self_pc, arc.count), (0x1220, 0x11d7, 20));
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Errors name the byte offset of the problem; [`Error::with_path`] adds the file name. No input
//! makes the reader panic or allocate more than the input backs.
//!
//! It also handles pkgprof's process-labeled profile sets (after the pkprof paper): a directory
//! holding, per process, a user-level and a kernel-level gmon file and a measurement-info file,
//! named by [`ProfileName`], plus two system-wide kernel profiles. [`scan`] lists such a
//! directory, and [`MeasurementInfo`] reads and writes the info file, whose format is specified
//! in [`measurement_info`]; [`Stacks`] and [`StacksWriter`] read and write the sampled-stacks
//! file ([`stacks`]). The contract between the collector and the report is in [`labeled`].
//!
//! **Byte order.** Every multi-byte field is read and written through [`Endian`]'s methods
//! (std's `from_le_bytes`/`from_be_bytes` and `to_*_bytes`), the order chosen once per file at
//! run time; the hot loop, summing histogram bins ([`Bins::add_to`]), is monomorphised per
//! order. The `byteorder` crate was weighed (issue 9) and not taken: its `ByteOrder` reads
//! are the same std calls on a slice (`u16::from_be_bytes(buf[..2].try_into().unwrap())` in
//! 1.5.0), so it would add a dependency and a panicking path and remove no code, since the
//! order is still chosen at run time from the image. Timed side by side (both versions of the
//! bin-summing and arc-reading loops over 100 MiB, alternating, best of 15; 2026-11-24, load
//! 10-12), the ratio scattered from 0.4 to 3.3 either way between runs: no difference the
//! machine could resolve.
//!
//! What this crate does not do: map addresses to symbols, build call graphs or print gprof's
//! reports (that is the `callgraph` crate), or collect profiles (`collect-perf`).

#![deny(missing_docs)]

pub mod bias;
mod dump;
mod error;
pub mod kallsyms;
pub mod labeled;
mod layout;
pub mod perf_cache;
mod read;
mod sum;
mod write;

#[cfg(test)]
mod test_util;

pub use bias::{LoadSegment, load_bias};
pub use dump::{Summary, dump};
pub use error::{Error, ErrorKind, Result};
pub use kallsyms::{Kallsyms, KallsymsOptions, KallsymsSymbol};
pub use labeled::{
    ASYNC_MOVES_FILE, ArcCounts, AsyncMoves, BoundaryCounts, BoundaryKind, Comm, CounterSource,
    DISPLACED_MAPPING_SLOT, DISPLACED_MAPPINGS_START, ENTRY_FRAMES, Field, FileKind, Frames,
    INFO_MAGIC, INFO_MAJOR, INFO_MINOR, INSTANCE_SEPARATOR, KernelInfo, MANIFEST_NAME,
    MEASUREMENT_MAX_HOLES, Manifest, ManifestEntry, Mapping, Measurement, MeasurementInfo,
    MeasurementWriter, NAME_PREFIX, ProcessCounters, ProcessFiles, ProcessInfo, ProfileName,
    ROOT_FROM_PC, Rename, STACKS_MAGIC, STACKS_MAJOR, STACKS_MINOR, SampleRate, SamplingInfo,
    Section, Skipped, Stack, StackRecord, StackRecords, Stacks, StacksHeader, StacksWriter,
    Verification, acts_on_terminal, async_moves, continuous, info as measurement_info,
    is_measurement_file, latency, manifest, parse_process_label, printable, process_label,
    sampled_sum, scan, stacks, vdso_file_name, write_sampled_profile,
};
pub use layout::{
    AddressSize, BSD44_VERSION, DIMENSION_LEN, Endian, Format, FormatChoice, GNU_HEADER_SIZE,
    GNU_MAGIC, Layout, ReadOptions, TAG_ARC, TAG_BASIC_BLOCKS, TAG_HISTOGRAM,
};
pub use read::{
    Arc, BasicBlocks, Bins, Header, Histogram, HistogramHeader, OLD_BSD_PROF_RATE, Profile, Record,
    Records, SECONDS,
};
pub use sum::{HistogramUnit, Sum, SumHistogram};
pub use write::{Writer, write_profile};
