//! Fuzz body for kallsyms snapshots: any bytes parse or fail with the line at fault, and what
//! parses gives a symbol table of its text symbols in address order.

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
