//! The kallsyms fuzz body over the snapshots in the fixtures, every truncation of them and
//! single-bit flips, plus line-numbered errors.

#![allow(clippy::unwrap_used)]

#[path = "../../../fuzz/src/kallsyms.rs"]
mod kallsyms_target;

use std::path::Path;

use callgraph::KernelSymbols;

fn snapshot() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/seamless/measurement/kallsyms.0badc0de");
    std::fs::read(path).unwrap()
}

#[test]
fn the_fuzz_body_holds_on_every_truncation_and_bit_flip() {
    let data = snapshot();
    kallsyms_target::run(&data);
    for end in 0..data.len() {
        kallsyms_target::run(&data[..end]);
    }
    for i in 0..data.len().min(400) {
        for bit in 0..8 {
            let mut d = data.clone();
            d[i] ^= 1 << bit;
            kallsyms_target::run(&d);
        }
    }
}

#[test]
fn the_fixture_snapshot_reads_and_a_damaged_line_is_named() {
    let data = snapshot();
    let k = KernelSymbols::parse(Path::new("k"), &data).unwrap();
    assert_eq!(k.len(), 19);
    assert_eq!(k.table().len(), 18, "D jiffies is not text");
    let mut bad = data.clone();
    let third = bad
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .nth(1)
        .unwrap()
        .0;
    bad[third + 1] = b'z';
    let e = KernelSymbols::parse(Path::new("k"), &bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        "k: line 3: the address is not 1 to 16 hex digits"
    );
}
