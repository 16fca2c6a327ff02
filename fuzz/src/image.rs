//! Fuzz body for what pkgprof reads of an image: the ELF symbol table with gprof's rules, the
//! DWARF line tables (`-l`, `-A`), `.text`, and the `-c` scanner of `call rel32` instructions.
//! Any bytes load or fail with an error; what loads gives a table sorted by address whose
//! lookups land in range.

use std::path::Path;

use callgraph::{SourceLines, SymbolOptions, SymbolTable, TextSection, static_arcs};
use gmon_format::Sum;

/// Loads `data` as an image with each of gprof's symbol options.
pub fn run(data: &[u8]) {
    let path = Path::new("a.out");
    for (no_static, ignore_non_functions) in [(false, false), (true, true)] {
        let mut options = SymbolOptions::default();
        options.no_static = no_static;
        options.ignore_non_functions = ignore_non_functions;
        let Ok(table) = SymbolTable::parse(path, data, &options) else {
            continue;
        };
        let symbols = table.symbols();
        assert!(symbols.windows(2).all(|w| w[0].address < w[1].address));
        for s in symbols.iter().take(64) {
            if let Some(i) = table.lookup(s.address) {
                assert!(i < symbols.len());
            }
        }
        if let Ok(Some(text)) = TextSection::parse(path, data) {
            // The -c scanner over the text, with an empty profile: every arc it finds is
            // between symbols of the table.
            for (from, to) in static_arcs(&table, &text, &Sum::new()) {
                assert!(from < symbols.len() && to < symbols.len());
            }
        }
    }
    if let Ok(Some(lines)) = SourceLines::parse(path, data) {
        let _ = format!("{lines:?}").len();
    }
}
