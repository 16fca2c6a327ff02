//! gprof's analysis as a library: symbols from an ELF image, histogram samples assigned to
//! functions, the call graph with gprof's cycles and time propagation, and the flat profile,
//! call graph and function index in GNU gprof's exact `-b` layouts.
//!
//! Using it takes three steps:
//!
//! 1. Build the [`SymbolTable`] of the profiled image; it also says how to read the image's
//!    gmon files ([`SymbolTable::read_options`]).
//! 2. Add the gmon files to a [`gmon_format::Sum`] and run the [`Analysis`]: self times
//!    ([`HistogramTimes`]), call counts ([`CallCounts`]), the [`CallGraph`] (its [`Node`]s
//!    are functions and cycles with self/child time, calls, parent and child [`GraphArc`]s
//!    carrying their time shares) and the [`FlatProfile`] that uses the propagated times.
//! 3. Print what gprof prints by default with [`write_report`] (flat profile, call graph,
//!    index), or read the model directly.
//!
//! ```no_run
//! use std::path::Path;
//! use callgraph::{Analysis, ReportOptions, SymbolOptions, SymbolTable, write_report};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let table = SymbolTable::read(Path::new("a.out"), &SymbolOptions::default())?;
//! let data = std::fs::read("gmon.out")?;
//! let mut sum = gmon_format::Sum::new();
//! sum.add(&gmon_format::Profile::parse(&data, &table.read_options())?)?;
//!
//! let analysis = Analysis::new(table, &sum);
//! // The model: every function gprof would print, with its propagated times in ticks.
//! for &node in &analysis.graph.order {
//!     let n = &analysis.graph.nodes[node];
//!     println!("[{}] self {} children {}", n.index, n.prop_self, n.prop_child);
//! }
//! // `gprof -b`:
//! let mut options = ReportOptions::default();
//! options.brief = true;
//! write_report(std::io::stdout().lock(), &analysis, &options)?;
//! # Ok(())
//! # }
//! ```
//!
//! Symbol specifications (`-p NAME`, `-q NAME`, `-k FROM/TO`, `-n`, `-N`, …) go in a
//! [`Symspecs`] given to [`Analysis::with_symspecs`]; they resolve as gprof resolves them (see
//! [`Selection`]). Without `brief`, [`write_report`] adds pkgprof's own explanations in gprof's
//! layout. [`check_profile`] and [`check_samples`] say when a profile does not fit the image
//! (gprof's report is then silently empty or meaningless).
//!
//! Source lines come from DWARF ([`SourceLines`]): line granularity ([`line_table`], gprof's
//! `-l`), name suffixes ([`SourceNames`]), file and line symspecs ([`symbol_sources`] given to
//! [`Analysis::with_static_arcs`]), execution counts and annotated source
//! ([`write_exec_counts`], [`write_annotated_source`]). [`static_arcs`] scans x86 code for
//! calls (`-c`), [`sum_arcs`] gives the arcs `gprof -s` writes and [`function_ordering`] the
//! `-r` suggestion.
//!
//! What it does not do yet: basic-block records in the listings, `-r` with 80 or more called
//! functions, and file ordering (`-R`).
//!
//! # The profile model
//!
//! [`gmon_model`] turns a summed gmon profile and its image's symbols into a
//! [`profile_model::Profile`], the form exports and diffs read: one sample per non-zero
//! histogram bin (a one-frame stack at the bin's address), one arc per gmon arc, functions named
//! as gprof prints them. Its totals are gprof's; it keeps what was measured rather than gprof's
//! reading of it (see the function's docs). `cargo run -p callgraph --example gmon_model`
//! shows it on a bundled profile. A measurement directory's model is made by
//! [`Seamless::build`] (below), with its real sampled stacks and each sample labelled with its
//! process; the seamless listings read it through [`gprof_view`], and [`measurement_model`]
//! gives it as exports and diffs see it:
//!
//! ```no_run
//! use callgraph::{ProcessSelection, Seamless, SeamlessOptions, measurement_model};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let measurement = gmon_format::scan(std::path::Path::new("pkgmon.data"))?;
//! let mut options = SeamlessOptions::default();
//! options.stacks = true; // the real sampled stacks, not only histograms and arcs
//! let pid_4242 = ProcessSelection::Pids(vec![(4242, 0)]);
//! let seamless = Seamless::build(&measurement, &pid_4242, &options)?;
//! let model = measurement_model(&seamless);
//! println!("{} samples in {} stacks", model.samples().len(), model.stacks().len());
//! # Ok(())
//! # }
//! ```
//!
//! `cargo run -p callgraph --example measurement_model` runs the same on the bundled
//! measurement and prints its heaviest stacks.
//!
//! # Seamless profiles of a measurement directory
//!
//! [`Seamless::build`] symbolizes and merges the user and kernel profiles of one or more
//! processes that pkgmon recorded (the pkprof paper's seamless profiling): user addresses
//! through the recorded mappings and the objects' symbol tables (found by path, in
//! [`SeamlessOptions::object_path`] by file name or build-id, build-ids checked), kernel
//! addresses through the kallsyms snapshot ([`KernelSymbols`]). The result is one profile
//! model ([`Seamless::model`]) whose gprof view ([`Seamless::gprof`]) is one [`SymbolTable`]
//! with names labelled `<pid>u:` and `<pid>k:` and one [`gmon_format::Sum`] (made directly,
//! not through a gmon file; [`GprofView::write_gmon`] writes one for `--merge-out`), so
//! `Analysis::new` and [`write_report`] print it like any gprof profile;
//! [`write_process_header`] prints each process's kernel counters first. See the `labeled`
//! module docs (on [`Seamless`]) for the pseudo-functions and how boundary arcs are drawn.
//!
//! # Inclusive times: gprof's propagation and exact stacks
//!
//! gprof computes a function's children time by propagation: each arc carries a share of the
//! callee's total time in proportion to the arc's count, which assumes every call costs the
//! average. A function that is cheap from one caller and expensive from another gets its time
//! split by call counts, not by cost. When the samples' whole stacks are known,
//! [`apply_stacks`] replaces the propagated times by exact ones: a function's inclusive time is
//! the number of samples whose stack holds it (once per sample, however deep the recursion),
//! and an arc's time is the samples whose stack holds that caller directly above that callee.
//! Self times and the layout stay gprof's.

#![deny(missing_docs)]

mod analysis;
mod annotate;
mod calls;
mod diagnose;
mod elf_symbols;
mod error;
mod flat;
mod gmon_sum;
mod gprof_view;
mod graph;
mod histogram;
mod inclusive;
mod input;
mod kallsyms;
mod labeled;
mod latency;
mod line_symbols;
mod lines;
mod measurement_model;
mod model;
mod ordering;
mod report;
mod sort;
mod static_calls;
mod symbols;
mod symspec;
#[cfg(test)]
mod test_util;
mod text;
mod windows;

pub use analysis::{Analysis, ReportError, ReportOptions, SourceNames, write_report};
pub use annotate::{
    AnnotateOptions, select_symbols, source_file_order, write_annotated_source, write_exec_counts,
};
pub use calls::CallCounts;
pub use diagnose::{Warning, check_line_mode_blocks, check_profile, check_samples};
pub use error::{Error, Result};
pub use flat::{FlatOptions, FlatProfile, FlatRow};
pub use gmon_sum::{BASIC_BLOCKS_PER_SYMBOL, sum_arcs, sum_basic_blocks, write_gmon_sum};
pub use gprof_view::{GprofView, HISTOGRAM, NANOSECONDS, gprof_view, gprof_view_of};
pub use graph::{CallGraph, GraphArc, Node};
pub use histogram::{HistogramTimes, MCOUNT_NAMES, default_flat_selection};
pub use inclusive::{SampledStack, apply_stacks};
pub use input::{
    IMAGE_MAX_BYTES, PROFILE_MAX_BYTES, TEXT_MAX_BYTES, image_layout, read_image, read_input,
};
pub use kallsyms::{KernelSymbol, KernelSymbols, KernelTable};
pub use labeled::{
    AddressNames, BoundaryKind, Instruction, ObjectCache, ObjectFile, ProcessLabels,
    ProcessSelection, ProcessSummary, Seamless, SeamlessOptions, StrippedObject, add_sources,
    relabel_symspecs, stripped_warnings, write_async_matrix, write_process_header,
    write_symbol_image,
};
pub use latency::{
    LatencyOptions, latency_diff_plot, latency_plot, write_blocking_report, write_latency_diff,
    write_latency_report,
};
pub use line_symbols::{LineTable, line_table, name_suffix};
pub use lines::{NearestLine, SourceInfo, SourceLines, symbol_sources};
pub use measurement_model::{export_view, measurement_model};
pub use model::{ModelOptions, UNKNOWN_FUNCTION, gmon_model};
pub use ordering::{ORDERING_HUB_THRESHOLD, function_ordering};
pub use report::flat::{FlatPrintOptions, write_flat};
pub use static_calls::static_arcs;
pub use symbols::{ImageFacts, RawSymbol, Symbol, SymbolOptions, SymbolTable};
pub use symspec::{
    ArcSpec, FileTarget, Selection, SourcePosition, Symspec, SymspecTable, Symspecs, Toggle,
};
pub use text::TextSection;
pub use windows::sum_seamless_models;
