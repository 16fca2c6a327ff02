//! The whole analysis in one value, and the default `gprof -b` report sequence.

use std::borrow::Cow;
use std::io::{self, Write};

use gmon_format::{Arc, Sum};
use rayon::prelude::*;

use crate::calls::CallCounts;
use crate::error::Error;
use crate::flat::{FlatOptions, FlatProfile};
use crate::graph::CallGraph;
use crate::histogram::HistogramTimes;
use crate::report::explain;
use crate::report::flat::{FlatPrintOptions, write_flat_named};
use crate::report::flat_bsd::{BsdFlat, write_flat_bsd};
use crate::report::graph::{GraphPrint, write_graph};
use crate::report::index::write_index;
use crate::symbols::SymbolTable;
use crate::symspec::{Selection, Symspecs};

/// Everything gprof computes before printing: self times, call counts, the call graph with
/// propagated times, and the flat profile that uses them.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Histogram self time per symbol.
    pub times: HistogramTimes,
    /// Call counts per symbol (self-recursive calls apart).
    pub calls: CallCounts,
    /// The call graph after cycle detection and time propagation.
    pub graph: CallGraph,
    /// The flat profile, with child times from the graph.
    pub flat: FlatProfile,
    /// Whether the input had arc records (gprof then selects the call graph by default).
    pub has_arcs: bool,
    /// The symbol table the analysis was made from.
    pub table: SymbolTable,
    /// Flat-profile selection per symbol (see [`Selection::flat`]).
    pub(crate) included: Vec<bool>,
    /// Source-line additions to the names (see [`Analysis::set_sources`]).
    pub sources: SourceNames,
}

/// What the listings add to names from the debugging information (see [`crate::name_suffix`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceNames {
    /// Appended to a symbol's name everywhere: ` (FILE:LINE @ ADDR)` in line mode, ` (FILE:LINE)`
    /// with `--inline-file-names`. Empty means nothing is appended.
    pub everywhere: Vec<Vec<u8>>,
    /// Appended in the index only: ` (FILE)` for static functions. Empty means nothing.
    pub index: Vec<Vec<u8>>,
    /// Line granularity: the call graph prints entries for functions only.
    pub line_mode: bool,
}

impl Analysis {
    /// Runs gprof's analysis of `sum` against `table`: histogram self times, call counts, the
    /// call graph with cycles and propagated times, and the flat profile (without `-z`).
    pub fn new(table: SymbolTable, sum: &Sum) -> Self {
        Self::with_symspecs(table, sum, &Symspecs::default())
    }

    /// [`Analysis::new`] with symbol specifications: `-p`/`-P` decide who gets flat-profile
    /// time, `-q`/`-Q`/`-e`/`-f` what the call graph prints, `-n`/`-N`/`-E`/`-F` what
    /// propagates time, and `-k` and `-q FROM/TO` which arcs are read at all.
    pub fn with_symspecs(table: SymbolTable, sum: &Sum, specs: &Symspecs) -> Self {
        Self::with_static_arcs(table, sum, specs, &[], &[])
    }

    /// [`Analysis::with_symspecs`] with the count-0 arcs of a static call graph (`-c`, see
    /// [`crate::static_arcs`]) added after the arcs of `sum`, as (caller, callee) symbol pairs.
    /// Like gprof, arc specs do not filter them: they are made after the arcs are read.
    /// `sources` (see [`crate::symbol_sources`]) let file and line specs match; empty when the
    /// image has no debugging information.
    pub fn with_static_arcs(
        table: SymbolTable,
        sum: &Sum,
        specs: &Symspecs,
        static_arcs: &[(usize, usize)],
        sources: &[Option<crate::SourceInfo>],
    ) -> Self {
        let (selection, times, arcs) = Self::self_times(&table, sum, specs, sources);
        Self::with_times(
            table,
            times,
            &arcs,
            !sum.arcs().is_empty(),
            static_arcs,
            &selection,
        )
    }

    /// [`Analysis::with_static_arcs`] taking the sum by value, to free it early: the summed
    /// histograms (8 bytes per bin) and the sum's arc index go as soon as the self times are
    /// known, before the call graph is built. This is what keeps big profiles within gprof's
    /// memory.
    pub fn from_sum(
        table: SymbolTable,
        sum: Sum,
        specs: &Symspecs,
        static_arcs: &[(usize, usize)],
        sources: &[Option<crate::SourceInfo>],
    ) -> Self {
        let (selection, times, arcs) = Self::self_times(&table, &sum, specs, sources);
        let arcs = arcs.into_owned();
        let has_arcs = !sum.arcs().is_empty();
        drop(sum);
        Self::with_times(table, times, &arcs, has_arcs, static_arcs, &selection)
    }

    /// The selection that `specs` make, the self times it lets the histogram give, and the
    /// arcs it keeps.
    fn self_times<'s>(
        table: &SymbolTable,
        sum: &'s Sum,
        specs: &Symspecs,
        sources: &[Option<crate::SourceInfo>],
    ) -> (Selection, HistogramTimes, Cow<'s, [Arc]>) {
        let selection = Selection::with_sources(table, specs, sources);
        let times = HistogramTimes::assign(table, sum, &selection.flat);
        let arcs = filter_arcs(table, sum.arcs(), &selection);
        (selection, times, arcs)
    }

    /// The rest of the analysis once the self times are known; `arcs` are already filtered
    /// by the selection's arc specs, `has_arcs` says whether the input had any.
    fn with_times(
        table: SymbolTable,
        times: HistogramTimes,
        arcs: &[Arc],
        has_arcs: bool,
        static_arcs: &[(usize, usize)],
        selection: &Selection,
    ) -> Self {
        let included = selection.flat.clone();
        let graph = CallGraph::build_with_static(&table, arcs, static_arcs, &times, selection);
        let calls = CallCounts::from_graph(&graph);
        let flat = Self::flat_profile(&table, &times, &calls, &graph, &included, false);
        Analysis {
            times,
            calls,
            graph,
            flat,
            has_arcs,
            table,
            included,
            sources: SourceNames::default(),
        }
    }

    /// Sets what the listings append to names (line mode, `--inline-file-names`, the index's
    /// `(file)` of static functions).
    pub fn set_sources(&mut self, sources: SourceNames) {
        self.sources = sources;
    }

    pub(crate) fn flat_profile(
        table: &SymbolTable,
        times: &HistogramTimes,
        calls: &CallCounts,
        graph: &CallGraph,
        included: &[bool],
        display_unused: bool,
    ) -> FlatProfile {
        let options = FlatOptions { display_unused };
        FlatProfile::new(
            table,
            times,
            calls,
            &graph.child_times(),
            included,
            &options,
        )
    }

    /// The stored (mangled) name of symbol `i`, as the table holds it; empty past the end.
    pub fn name(&self, i: usize) -> &[u8] {
        self.table.symbols().get(i).map_or(&[], |s| &s.name)
    }

    /// Whether a histogram was read (gprof then selects the flat profile by default).
    pub fn has_histogram(&self) -> bool {
        self.times.has_histogram
    }
}

impl SourceNames {
    /// What gprof appends to the names of `table`'s symbols, whose source positions are
    /// `sources`: in line mode (`line_mode`) ` (FILE:LINE @ ADDR)` everywhere, else with
    /// `inline_file_names` ` (FILE:LINE)` everywhere and in any case ` (FILE)` after static
    /// functions in the index. FILE is the base name unless `full_path` (`-L`).
    pub fn new(
        table: &SymbolTable,
        sources: &[Option<crate::SourceInfo>],
        line_mode: bool,
        inline_file_names: bool,
        full_path: bool,
    ) -> Self {
        let mut names = SourceNames::default();
        let symbols = table.symbols();
        if line_mode || inline_file_names {
            names.everywhere = symbols
                .iter()
                .zip(sources)
                .map(|(s, src)| crate::name_suffix(src.as_ref(), s.address, line_mode, full_path))
                .collect();
        }
        if !line_mode {
            names.index = symbols
                .iter()
                .zip(sources)
                .map(|(s, src)| match src {
                    Some(src) if s.is_static => {
                        let mut suffix = b" (".to_vec();
                        suffix.extend_from_slice(src.file_name(full_path));
                        suffix.push(b')');
                        suffix
                    }
                    _ => Vec::new(),
                })
                .collect();
        }
        names.line_mode = line_mode;
        names
    }
}

/// The arcs gprof reads: all of them, unless arc specs drop some. An arc whose ends resolve to
/// no symbol is kept here; the graph drops it anyway.
fn filter_arcs<'a>(table: &SymbolTable, arcs: &'a [Arc], selection: &Selection) -> Cow<'a, [Arc]> {
    if !selection.filters_arcs() {
        return Cow::Borrowed(arcs);
    }
    let kept = arcs.iter().filter(|arc| {
        let ends = table
            .lookup(arc.from_pc)
            .zip(table.lookup_callee(arc.self_pc));
        ends.is_none_or(|(caller, callee)| selection.keeps_arc(table, caller, callee))
    });
    Cow::Owned(kept.copied().collect())
}

/// Which listings [`write_report`] prints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReportOptions {
    /// Print the flat profile: `Some(true)` as `-p`, `Some(false)` as `-P`. Default is `None`:
    /// gprof's choice, the flat profile if a histogram was read.
    pub flat_profile: Option<bool>,
    /// Print the call graph and the index: `Some(true)` as `-q`, `Some(false)` as `-Q`.
    /// Default is `None`: gprof's choice, if arcs were read.
    pub call_graph: Option<bool>,
    /// Leave out the explanatory texts (`-b`). Without it each listing comes with
    /// pkgprof's own explanation, placed where gprof puts its texts (same blank lines, form
    /// feeds and titles), so only the explanations differ from gprof's output. Default is
    /// false.
    pub brief: bool,
    /// List functions that were neither called nor sampled (`-z`) in every listing. Default
    /// is false.
    pub display_unused: bool,
    /// BSD ("traditional", `-T`) layouts: the call graph first, then the flat profile with
    /// decorated names and `ms/call`, then a fixed-width index. Default is false.
    pub traditional: bool,
    /// Print names as they are mangled (`--no-demangle`). GNU layouts demangle by default as
    /// gprof does (see [`demangle::demangle`]); BSD layouts never demangle. Sorting always uses
    /// the mangled names. Default is false.
    pub no_demangle: bool,
    /// Something (such as `-i`'s file summaries) was printed before the report, so its first
    /// listing opens with a form feed, as every later one does. Default is false.
    pub after_other_output: bool,
    /// Width of the index's lines (`-w`): the column width is (width − 1) / 3. Default is
    /// `None`, gprof's 80.
    pub width: Option<i64>,
    /// Arc counts are sampled caller→callee edges (a pkgmon measurement), not calls: the
    /// explanations printed without `brief` say so. Default is false.
    pub sampled_arcs: bool,
}

/// Why [`write_report`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The selected listings need data the input lacks, or an option is not supported.
    #[error(transparent)]
    Analysis(#[from] Error),
    /// Writing the report failed.
    #[error("cannot write the report")]
    Write(#[source] io::Error),
}

/// Writes gprof's report: the flat profile, then the call graph, then the index by function
/// name (with `traditional`, the call graph first), each selected as gprof selects them (see
/// [`ReportOptions`]), with explanations unless `brief`.
///
/// When nothing at all is selected (no histogram and no arcs) nothing is printed, as gprof
/// then prints the (empty) execution counts.
///
/// Returns an error if a listing explicitly asked for lacks its data (gprof's "gmon.out file
/// is missing histogram" / "... call-graph data"), or if writing fails.
pub fn write_report<W: Write>(
    mut out: W,
    analysis: &Analysis,
    options: &ReportOptions,
) -> Result<(), ReportError> {
    let explained = !options.brief;
    let any_explicit = options.flat_profile == Some(true) || options.call_graph == Some(true);
    let (flat, graph) = if any_explicit {
        (
            options.flat_profile == Some(true),
            options.call_graph == Some(true),
        )
    } else {
        (
            options.flat_profile.is_none() && analysis.has_histogram(),
            options.call_graph.is_none() && analysis.has_arcs,
        )
    };
    if flat && !analysis.has_histogram() {
        return Err(Error::MissingHistogram.into());
    }
    if graph && !analysis.has_arcs {
        return Err(Error::MissingCallGraph.into());
    }
    let symbols = analysis.table.symbols();
    let mangled: Vec<Cow<'_, [u8]>> = symbols.iter().map(|s| Cow::Borrowed(&s.name[..])).collect();
    // Demangling is the costly part of printing a C++ program's names, so it runs on all
    // cores; when no name changes (a C program) the copy is dropped.
    let demangled: Option<Vec<Cow<'_, [u8]>>> = if options.no_demangle || options.traditional {
        None
    } else {
        let all: Vec<Cow<'_, [u8]>> = symbols
            .par_iter()
            .map(|s| demangle_bytes(&s.name))
            .collect();
        all.iter()
            .any(|n| matches!(n, Cow::Owned(_)))
            .then_some(all)
    };
    let names: &[Cow<'_, [u8]>] = demangled.as_deref().unwrap_or(&mangled);
    let suffixed: Vec<Cow<'_, [u8]>>;
    let names: &[Cow<'_, [u8]>] = if analysis.sources.everywhere.is_empty() {
        names
    } else {
        suffixed = append(names, &analysis.sources.everywhere);
        &suffixed
    };
    let functions: Vec<bool>;
    let line_functions = if analysis.sources.line_mode {
        functions = analysis
            .table
            .symbols()
            .iter()
            .map(|s| s.is_function)
            .collect();
        Some(functions.as_slice())
    } else {
        None
    };
    let mut first = !options.after_other_output;
    let graph_print = |after_other_output: bool| GraphPrint {
        graph: &analysis.graph,
        names,
        hz: f64::from(analysis.times.hz),
        granularity: analysis.times.granularity_bytes(),
        display_unused: options.display_unused,
        after_other_output,
        bsd: options.traditional,
        line_functions,
        explained,
    };
    let write = |out: &mut W, text: &[u8]| out.write_all(text).map_err(ReportError::Write);
    // BSD style prints the call graph before the flat profile, its explanation first of all.
    if graph && options.traditional {
        if explained {
            write(
                &mut out,
                explain::bsd_call_graph(options.sampled_arcs).as_bytes(),
            )?;
        }
        write_graph(&mut out, &graph_print(!first)).map_err(ReportError::Write)?;
        first = false;
    }
    if flat {
        let a = analysis;
        let unused;
        let profile = if options.display_unused {
            unused =
                Analysis::flat_profile(&a.table, &a.times, &a.calls, &a.graph, &a.included, true);
            &unused
        } else {
            &a.flat
        };
        if options.traditional {
            if explained {
                if !first {
                    write(&mut out, b"\x0c\n")?;
                }
                write(&mut out, explain::bsd_flat(options.sampled_arcs).as_bytes())?;
            }
            let bsd = BsdFlat {
                flat: profile,
                times: &a.times,
                graph: &a.graph,
                names,
                decorate: a.has_arcs,
                after_other_output: !first && !explained,
            };
            write_flat_bsd(&mut out, &bsd).map_err(ReportError::Write)?;
        } else {
            let o = FlatPrintOptions {
                after_other_output: !first,
            };
            let name = |row: usize| match profile.rows.get(row).and_then(|r| names.get(r.symbol)) {
                Some(n) => &n[..],
                None => &profile.names[row][..],
            };
            write_flat_named(&mut out, profile, &o, name).map_err(ReportError::Write)?;
            if explained {
                write(&mut out, explain::gnu_flat(options.sampled_arcs).as_bytes())?;
            }
        }
        first = false;
    }
    if graph {
        if !options.traditional {
            write_graph(&mut out, &graph_print(!first)).map_err(ReportError::Write)?;
            if explained {
                write(
                    &mut out,
                    explain::gnu_call_graph(options.sampled_arcs).as_bytes(),
                )?;
            }
        }
        let index_names: Vec<Cow<'_, [u8]>>;
        let index_names = if analysis.sources.index.is_empty() {
            names
        } else {
            index_names = append(names, &analysis.sources.index);
            &index_names
        };
        write_index(
            &mut out,
            &analysis.graph,
            index_names,
            &mangled,
            &analysis.times.time,
            options.display_unused,
            options.traditional,
            options.width.unwrap_or(80),
        )
        .map_err(ReportError::Write)?;
    }
    Ok(())
}

/// Each name with its suffix appended.
fn append<'a>(names: &[Cow<'a, [u8]>], suffixes: &[Vec<u8>]) -> Vec<Cow<'a, [u8]>> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| match suffixes.get(i).filter(|x| !x.is_empty()) {
            Some(suffix) => Cow::Owned([&n[..], &suffix[..]].concat()),
            None => n.clone(),
        })
        .collect()
}

/// [`demangle::demangle`] for names that are UTF-8; anything else is printed as it is.
fn demangle_bytes(name: &[u8]) -> Cow<'_, [u8]> {
    match std::str::from_utf8(name).map(demangle::demangle) {
        Ok(Cow::Owned(text)) => Cow::Owned(text.into_bytes()),
        Ok(Cow::Borrowed(_)) | Err(_) => Cow::Borrowed(name),
    }
}
