//! gprof's analysis as a library: symbols from an ELF image, histogram samples assigned to
//! functions, call counts, and the flat profile in GNU gprof's exact layout.
//!
//! Using it takes three steps:
//!
//! 1. Build the [`SymbolTable`] of the profiled image; it also says how to read the image's
//!    gmon files ([`SymbolTable::read_options`]).
//! 2. Add the gmon files to a [`gmon_format::Sum`], then spread its histograms over the
//!    symbols with [`HistogramTimes::assign`] and count calls with [`CallCounts::from_arcs`].
//! 3. Compute the [`FlatProfile`] and print it with [`write_flat`].
//!
//! ```no_run
//! use std::path::Path;
//! use callgraph::{
//!     CallCounts, FlatOptions, FlatPrintOptions, FlatProfile, HistogramTimes, SymbolOptions,
//!     SymbolTable, default_flat_selection, write_flat,
//! };
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let table = SymbolTable::read(Path::new("a.out"), &SymbolOptions::default())?;
//! let data = std::fs::read("gmon.out")?;
//! let mut sum = gmon_format::Sum::new();
//! sum.add(&gmon_format::Profile::parse(&data, &table.read_options())?)?;
//!
//! let included = default_flat_selection(&table);
//! let times = HistogramTimes::assign(&table, &sum, &included);
//! let calls = CallCounts::from_arcs(&table, sum.arcs());
//! let flat = FlatProfile::new(&table, &times, &calls, &[], &included, &FlatOptions::default());
//! write_flat(std::io::stdout().lock(), &flat, &FlatPrintOptions::default())?;
//! # Ok(())
//! # }
//! ```
//!
//! What it does not do yet: the call graph (cycles, time propagation — so the flat profile's
//! "total per call" column only counts self time unless the caller supplies child times),
//! demangling, symspecs, line-level (`-l`) tables, DWARF, and the BSD (`-T`) layouts.

#![deny(missing_docs)]

mod calls;
mod error;
mod flat;
mod histogram;
mod report;
mod sort;
mod symbols;

pub use calls::CallCounts;
pub use error::{Error, Result};
pub use flat::{FlatOptions, FlatProfile, FlatRow};
pub use histogram::{HistogramTimes, MCOUNT_NAMES, default_flat_selection};
pub use report::flat::{FlatPrintOptions, write_flat};
pub use symbols::{RawSymbol, Symbol, SymbolOptions, SymbolTable};
