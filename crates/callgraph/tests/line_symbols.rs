//! Line symbols against GNU gprof's own list of them: for each program fixture with a
//! `gprof-l-d128.trace` (gprof 2.40's `-l -d128` trace, which names every line symbol its second
//! pass makes), the line table must make the same symbols, in the same order. This holds even
//! where gprof then stops with "somebody miscounted" (`unlinked-g-o2`: C++ functions whose name
//! BFD settles on first use), so pkgprof's line-mode report there is the one gprof would print.

use std::path::Path;

#[test]
fn line_symbols_are_the_ones_gprof_makes() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/programs/out");
    let mut checked = 0;
    for dir in std::fs::read_dir(&out).expect("fixtures/programs/out") {
        let dir = dir.expect("directory entry").path();
        let trace = dir.join("gprof-l-d128.trace");
        let Ok(expected) = std::fs::read_to_string(&trace) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let program = name.rsplit_once('-').map_or(name.as_str(), |(p, _)| p);
        let program = program.strip_suffix("-g").unwrap_or(program);
        let image = dir.join(program);
        let data = std::fs::read(&image).expect("image");
        let table = callgraph::SymbolTable::parse(&image, &data, &Default::default()).unwrap();
        let text = callgraph::TextSection::parse(&image, &data)
            .unwrap()
            .unwrap();
        let lines = callgraph::SourceLines::parse(&image, &data).unwrap();
        let line_table = callgraph::line_table(&table, &text, lines.as_ref());
        let ours: String = line_table
            .line_symbols
            .iter()
            .enumerate()
            .map(|(i, s)| {
                format!(
                    "[core_create_line_syms] {i} {} 0x{:x}\n",
                    String::from_utf8_lossy(&s.name),
                    s.address
                )
            })
            .collect();
        assert_eq!(ours, expected, "{name}: line symbols differ from {trace:?}");
        checked += 1;
    }
    assert!(checked >= 2, "no gprof traces found under {out:?}");
}
