//! Images gprof refuses, with the reason in gprof's words (the `gprof: ` prefix is the CLI's).

use std::path::Path;

use callgraph::{Error, SymbolOptions, SymbolTable};

fn error_for(file: &str) -> Error {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/errors")
        .join(file);
    let data = std::fs::read(&path).expect("test image");
    SymbolTable::parse(Path::new(file), &data, &SymbolOptions::default())
        .expect_err("the image should be refused")
}

#[test]
fn no_text_section() {
    // gprof checks for `.text` first; this image has symbols but keeps its code in `.code`.
    let e = error_for("notext");
    assert!(matches!(e, Error::NoTextSection { .. }));
    assert_eq!(e.to_string(), "can't find .text section in notext");
}

#[test]
fn stripped_image() {
    let e = error_for("stripped");
    assert!(matches!(e, Error::NoSymbols { .. }));
    assert_eq!(
        e.to_string(),
        "file `stripped' has no symbols: it was stripped (by `strip`, `install -s` or `gcc -s`); \
         report with the unstripped build, or rebuild it without stripping"
    );
}

#[test]
fn not_an_executable() {
    let e = SymbolTable::parse(
        Path::new("notes.txt"),
        b"hello\n",
        &SymbolOptions::default(),
    )
    .expect_err("text is not an image");
    assert_eq!(e.to_string(), "notes.txt: not in executable format");
    // Truncated ELF headers are reported the same way.
    let e = SymbolTable::parse(
        Path::new("short"),
        b"\x7fELF\x02\x01\x01",
        &SymbolOptions::default(),
    )
    .expect_err("truncated");
    assert_eq!(e.to_string(), "short: not in executable format");
}
