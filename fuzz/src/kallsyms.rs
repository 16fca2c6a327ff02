//! Fuzz body for kallsyms snapshots (gmon-format's one parser and both of its readers): any
//! bytes parse or fail with the line at fault; reading a block at a time is parsing the whole;
//! each option leaves out exactly the symbols it names; and what the report parses gives a
//! symbol table of its text symbols in address order, which the compact lookup table pkgprof
//! uses repeats symbol for symbol, extent for extent.

use std::path::Path;

use callgraph::KernelSymbols;
use gmon_format::kallsyms::{Kallsyms, KallsymsOptions, PADDING_PREFIX};

/// Parses `data` as a kallsyms snapshot and checks what it reads.
pub fn run(data: &[u8]) {
    run_options(data);
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

/// The parser's options: the collector's choice keeps exactly the lenient parse's text
/// symbols with real addresses and no padding, and block reading agrees with parsing.
fn run_options(data: &[u8]) {
    let mut lenient = KallsymsOptions::default();
    lenient.skip_malformed = true;
    let all = Kallsyms::parse(data, &lenient).expect("a lenient parse never fails");
    let entry =
        Kallsyms::parse(data, &KallsymsOptions::entry_code()).expect("a lenient parse never fails");
    let want = all
        .symbols()
        .filter(|s| s.is_text() && s.address != 0 && !s.name.starts_with(PADDING_PREFIX));
    assert!(entry.symbols().eq(want));
    let strict = Kallsyms::parse(data, &KallsymsOptions::default());
    match (
        &strict,
        Kallsyms::read_from(data, &KallsymsOptions::default()),
    ) {
        (Ok(a), Ok(b)) => {
            assert!(a.symbols().eq(b.symbols()));
            assert!(a.symbols().eq(all.symbols()));
        }
        (Err(a), Err(b)) => assert!(
            a.to_string() == b.to_string() || b.to_string().contains("longer than 64 KiB"),
            "{a} / {b}"
        ),
        // Only block reading refuses lines longer than 64 KiB.
        (Ok(_), Err(b)) => assert!(b.to_string().contains("longer than 64 KiB"), "{b}"),
        (Err(a), Ok(_)) => panic!("parse fails ({a}) where reading succeeds"),
    }
}
