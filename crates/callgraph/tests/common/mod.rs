//! Shared by the golden test and the differential example: `gprof -b -p IMAGE GMON...` with
//! this crate.

// Each test binary and example that includes this module uses a different part of it.
#![allow(dead_code)]

pub mod diff;

use std::path::Path;

use callgraph::{
    CallCounts, CallGraph, FlatOptions, FlatPrintOptions, FlatProfile, HistogramTimes,
    SymbolOptions, SymbolTable, default_flat_selection, write_flat,
};

/// gprof options that change the flat profile.
#[derive(Debug, Default, Clone, Copy)]
pub struct Flags {
    /// `-z`
    pub display_unused: bool,
    /// `-a`
    pub no_static: bool,
    /// `-D`
    pub ignore_non_functions: bool,
    /// `-T` (full report only)
    pub traditional: bool,
    /// `-c` (full report only)
    pub static_call_graph: bool,
}

/// The image's symbols (with `-a`/`-D` from `flags`) and the sum of the gmon files read by its
/// layout, as gprof loads them; or the error text.
pub fn load(
    image: &Path,
    gmons: &[&Path],
    flags: Flags,
) -> Result<(SymbolTable, gmon_format::Sum), String> {
    let mut symbol_options = SymbolOptions::default();
    symbol_options.no_static = flags.no_static;
    symbol_options.ignore_non_functions = flags.ignore_non_functions;
    let table = SymbolTable::read(image, &symbol_options).map_err(|e| e.to_string())?;
    let mut sum = gmon_format::Sum::new();
    for gmon in gmons {
        let data = std::fs::read(gmon).map_err(|e| format!("{}: {e}", gmon.display()))?;
        let profile =
            gmon_format::Profile::parse(&data, &table.read_options()).map_err(|e| e.to_string())?;
        sum.add(&profile).map_err(|e| e.to_string())?;
    }
    Ok((table, sum))
}

/// Our `gprof -b -p [-z] [-a] [-D] image gmons...` output, or the error text.
pub fn flat_output(image: &Path, gmons: &[&Path], flags: Flags) -> Result<Vec<u8>, String> {
    let (table, sum) = load(image, gmons, flags)?;
    let included = default_flat_selection(&table);
    let times = HistogramTimes::assign(&table, &sum, &included);
    let calls = CallCounts::from_arcs(&table, sum.arcs());
    // The "total per call" column needs the time propagated through the call graph.
    let graph = CallGraph::build(&table, sum.arcs(), &times);
    let mut options = FlatOptions::default();
    options.display_unused = flags.display_unused;
    let flat = FlatProfile::new(
        &table,
        &times,
        &calls,
        &graph.child_times(),
        &included,
        &options,
    );
    let mut out = Vec::new();
    write_flat(&mut out, &flat, &FlatPrintOptions::default()).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Our `gprof -b [-z] [-a] [-D] [-T] image gmons...` output (the full default report), or the
/// error text.
pub fn report_output(image: &Path, gmons: &[&Path], flags: Flags) -> Result<Vec<u8>, String> {
    report_output_with(image, gmons, flags, &[])
}

/// [`report_output`] with symbol specifications, each an option letter (`p P q Q e E f F n N
/// k`) and its argument, as gprof's command line would give them.
pub fn report_output_with(
    image: &Path,
    gmons: &[&Path],
    flags: Flags,
    specs: &[(char, Vec<u8>)],
) -> Result<Vec<u8>, String> {
    use callgraph::SymspecTable as T;
    let (table, sum) = load(image, gmons, flags)?;
    let mut tables = callgraph::Symspecs::default();
    let (mut flat, mut graph) = (None, None);
    for (letter, text) in specs {
        let arcs = text.contains(&b'/');
        let targets: &[T] = match letter {
            'p' => &[T::IncludeFlat],
            'P' => &[T::ExcludeFlat],
            'q' if arcs => &[T::IncludeArcs],
            'q' | 'f' => &[T::IncludeGraph],
            'Q' if arcs => &[T::ExcludeArcs],
            'Q' | 'e' => &[T::ExcludeGraph],
            'E' => &[T::ExcludeTime, T::ExcludeGraph],
            'F' => &[T::IncludeTime, T::IncludeGraph],
            'n' => &[T::IncludeTime],
            'N' => &[T::ExcludeTime],
            'k' => &[T::ExcludeArcs],
            other => return Err(format!("-{other} takes no symspec")),
        };
        for &t in targets {
            tables.add(t, text);
        }
        // With a spec, each of -p -P selects the flat profile and -q -Q the call graph.
        match letter {
            'p' | 'P' => flat = Some(true),
            'q' | 'Q' => graph = Some(true),
            _ => {}
        }
    }
    let static_arcs = static_arcs(image, &table, &sum, flags)?;
    let analysis = callgraph::Analysis::with_static_arcs(table, &sum, &tables, &static_arcs, &[]);
    let mut options = callgraph::ReportOptions::default();
    options.flat_profile = flat;
    options.call_graph = graph;
    options.brief = true;
    options.display_unused = flags.display_unused;
    options.traditional = flags.traditional;
    let mut out = Vec::new();
    callgraph::write_report(&mut out, &analysis, &options).map_err(|e| e.to_string())?;
    Ok(out)
}

/// The `gmon.sum` our `gprof -s [-a] [-D] image gmons...` writes, or the error text.
pub fn sum_output(image: &Path, gmons: &[&Path], flags: Flags) -> Result<Vec<u8>, String> {
    let (table, sum) = load(image, gmons, flags)?;
    let (data, text) = text_section(image)?;
    let lines = callgraph::SourceLines::parse(image, &data).ok().flatten();
    let line_table = callgraph::line_table(&table, &text, lines.as_ref());
    let arcs = callgraph::sum_arcs(&line_table.table, sum.arcs());
    let blocks = callgraph::sum_basic_blocks(&line_table.table, sum.basic_blocks());
    sum.write_gnu_with(
        Vec::new(),
        table.address_size(),
        table.endian(),
        &arcs,
        &blocks,
    )
    .map_err(|e| e.to_string())
}

/// Our `gprof -r [-a] [-D] [-c] image gmons...` output, or the error text.
pub fn ordering_output(image: &Path, gmons: &[&Path], flags: Flags) -> Result<Vec<u8>, String> {
    let (table, sum) = load(image, gmons, flags)?;
    let static_arcs = static_arcs(image, &table, &sum, flags)?;
    let analysis = callgraph::Analysis::with_static_arcs(
        table,
        &sum,
        &callgraph::Symspecs::default(),
        &static_arcs,
        &[],
    );
    let order = callgraph::function_ordering(&analysis.graph)
        .ok_or_else(|| "too many called functions for -r".to_string())?;
    let mut out = Vec::new();
    for s in order {
        out.extend_from_slice(&analysis.table.symbols()[s].name);
        out.push(b'\n');
    }
    Ok(out)
}

/// The image's bytes and its `.text` (empty when it has none).
fn text_section(image: &Path) -> Result<(Vec<u8>, callgraph::TextSection), String> {
    let data = std::fs::read(image).map_err(|e| e.to_string())?;
    let text = callgraph::TextSection::parse(image, &data)
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    Ok((data, text))
}

/// The static call graph's arcs with `-c` (`flags.static_call_graph`), else none.
fn static_arcs(
    image: &Path,
    table: &callgraph::SymbolTable,
    sum: &gmon_format::Sum,
    flags: Flags,
) -> Result<Vec<(usize, usize)>, String> {
    if !flags.static_call_graph {
        return Ok(Vec::new());
    }
    let (_, text) = text_section(image)?;
    Ok(callgraph::static_arcs(table, &text, sum))
}
