//! perf.data import: a `perf record -g` file becomes a pkgmon measurement directory, so that
//! `pkgprof --pid N` gives its seamless listing and every export and diff reads it.
//!
//! The records go through the collector's own machinery, not a second copy of it: each one
//! read from the file (in time order, round by round, with linux-perf-data) is handed to
//! collect-perf's streaming [`Aggregator`](collect_perf::Aggregator) — which rebuilds the
//! processes, unwinds user stacks (from perf's frame-pointer callchains, or from the registers
//! and stack copies of `--call-graph dwarf`) and interns them — and the result is written by
//! collect-perf's [`Output`](collect_perf::Output), the writer pkgmon itself uses.
//!
//! Use it in three steps:
//!
//! 1. Open the measurement directory with [`collect_perf::Output::begin`] (or `create`).
//! 2. Pick [`ImportOptions`] (kernel symbols, which processes).
//! 3. Call [`import_file`] (a regular file, file or pipe mode) or [`import_reader`] (a pipe).
//!
//! ```no_run
//! # #[cfg(target_os = "linux")]
//! # fn main() -> Result<(), perf_import::Error> {
//! use perf_import::{ImportOptions, import_file};
//!
//! let out = collect_perf::Output::create("pkgmon.data")?;
//! let imported = import_file("perf.data".as_ref(), &ImportOptions::default(), out)?;
//! println!("{} samples of {} processes", imported.samples, imported.written.processes);
//! # Ok(())
//! # }
//! # #[cfg(not(target_os = "linux"))]
//! # fn main() {}
//! ```
//!
//! What it reads: cpu-clock and task-clock samples (perf's fallback for `cycles` where there
//! are no hardware counters, and what pkgmon samples), with or without callchains; MMAP,
//! MMAP2, COMM, FORK, EXIT, LOST and THROTTLE records; perf 6.x files, zstd-compressed
//! (`perf record -z`) or not, and pipe mode (`perf record -o -`). Samples of other events are
//! counted and left out (the measurement's times are CPU time), records it does not need are
//! skipped.
//!
//! What it does not do: symbolize (the report does, from the mappings and the kernel-symbol
//! snapshot the measurement keeps), or find object files elsewhere than at their recorded
//! paths (user stacks of `--call-graph dwarf` are unwound from the files on this machine,
//! checked against the recorded build-ids).

#![deny(missing_docs)]

#[cfg(target_os = "linux")]
mod convert;
mod error;
#[cfg(target_os = "linux")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(target_os = "linux")]
mod kernel;

pub use error::{Error, Result};

#[cfg(target_os = "linux")]
pub use convert::{ImportOptions, Imported, import_file, import_reader, is_perf_data};
#[cfg(target_os = "linux")]
pub use kernel::KernelSymbolsSource;
