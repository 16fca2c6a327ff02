//! What the command line asks of the listings, in the libraries' terms: symbol
//! specifications, report options, the file format, and the options refused as not built. Both
//! the gprof-style report ([`crate::pkgprof`]) and the seamless one ([`crate::seamless`]) read
//! them.

use anyhow::{Result, bail};
use callgraph::{ReportOptions, SymspecTable as Table, Symspecs};
use gmon_format::FormatChoice;

use crate::options::{Options, Style, SymspecTable};

/// The specs of the command line in callgraph's tables. The annotation and execution-count
/// tables (`-A`, `-J`, `-C`, `-Z` with a spec) only matter to those listings.
pub(crate) fn symspecs(o: &Options) -> Symspecs {
    let mut specs = Symspecs::default();
    for (table, text) in &o.symspecs {
        let table = match table {
            SymspecTable::IncludeFlat => Table::IncludeFlat,
            SymspecTable::ExcludeFlat => Table::ExcludeFlat,
            SymspecTable::IncludeGraph => Table::IncludeGraph,
            SymspecTable::ExcludeGraph => Table::ExcludeGraph,
            SymspecTable::IncludeArcs => Table::IncludeArcs,
            SymspecTable::ExcludeArcs => Table::ExcludeArcs,
            SymspecTable::IncludeTime => Table::IncludeTime,
            SymspecTable::ExcludeTime => Table::ExcludeTime,
            SymspecTable::IncludeAnnotation
            | SymspecTable::ExcludeAnnotation
            | SymspecTable::IncludeExec
            | SymspecTable::ExcludeExec => continue,
        };
        specs.add(table, text);
    }
    specs
}

/// gprof's style rules: with any style selected, exactly those print; with none, the flat
/// profile if there is a histogram and the call graph if there are arcs, less any the user
/// turned off.
pub(crate) fn report_options(o: &Options) -> ReportOptions {
    let mut report = ReportOptions::default();
    let choice = |style: Style| {
        if o.styles != 0 {
            Some(o.has(style))
        } else if o.user_styles & style as u32 != 0 {
            Some(false)
        } else {
            None
        }
    };
    report.flat_profile = choice(Style::Flat);
    report.call_graph = choice(Style::Graph);
    report.brief = o.brief;
    report.display_unused = o.display_unused;
    report.traditional = o.traditional;
    report.no_demangle = !o.demangle;
    report.width = o.width;
    report
}

/// Options whose reports are not built yet are refused by name, rather than silently printing
/// something other than what gprof would.
pub(crate) fn refuse_unbuilt(o: &Options) -> Result<()> {
    let mut missing = Vec::new();
    let styles = [(Style::FileOrdering, "-R (file ordering)")];
    missing.extend(
        styles
            .iter()
            .filter(|(s, _)| o.has(*s))
            .map(|(_, name)| *name),
    );
    let flags = [(o.external_symbols.is_some(), "-S (external symbol table)")];
    missing.extend(flags.iter().filter(|(on, _)| *on).map(|(_, name)| *name));
    if !missing.is_empty() {
        bail!("not implemented yet: {}", missing.join(", "));
    }
    Ok(())
}

/// `-O`: only the first letter counts, as in gprof.
pub(crate) fn file_format(o: &Options) -> Result<FormatChoice> {
    Ok(match o.file_format.as_deref() {
        None => FormatChoice::Auto,
        Some(f) => match f.chars().next() {
            Some('a') => FormatChoice::Auto,
            Some('m') => FormatChoice::Gnu,
            Some('b') => FormatChoice::Bsd,
            Some('4') => FormatChoice::Bsd44,
            Some('p') => bail!("sorry, file format `prof' is not yet supported"),
            _ => bail!("{f}: unknown file format"),
        },
    })
}
