//! Fuzz body for kallsyms snapshots: any bytes parse or fail with the line at fault, and what
//! parses gives a symbol table of its text symbols in address order, which the compact lookup
//! table pkgprof uses repeats symbol for symbol, extent for extent.

use std::path::Path;

use callgraph::KernelSymbols;

/// Parses `data` as a kallsyms snapshot and checks what it reads.
pub fn run(data: &[u8]) {
    let symbols = match KernelSymbols::parse(Path::new("kallsyms"), data) {
        Ok(s) => s,
        Err(e) => {
            let text = e.to_string();
            assert!(text.starts_with("kallsyms: line "), "{text}");
            return;
        }
    };
    let texts = symbols
        .symbols()
        .filter(|s| s.is_text() && s.address != 0)
        .count();
    let table = symbols.table();
    let lookup = symbols.clone().into_lookup();
    assert_eq!(lookup.len(), table.len());
    for (i, s) in table.symbols().iter().enumerate() {
        assert_eq!(
            (lookup.name(i), lookup.address(i), lookup.end_address(i)),
            (&s.name[..], s.address, s.end_address),
            "symbol {i}"
        );
        assert_eq!(lookup.is_static(i), s.is_static);
        for pc in [s.address, s.end_address, s.end_address.wrapping_add(1)] {
            assert_eq!(lookup.lookup(pc), table.lookup(pc), "{pc:#x}");
        }
    }
    assert!(table.len() <= texts);
    assert!(
        table
            .symbols()
            .windows(2)
            .all(|w| w[0].address < w[1].address)
    );
    if let Some(first) = table.symbols().first() {
        assert_eq!(table.lookup(first.address), Some(0));
    }
}
