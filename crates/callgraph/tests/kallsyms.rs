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

/// Reading a block at a time gives what parsing the whole text gives, line numbers included,
/// across block boundaries (lines of every length up to the limit, CRLF and blank lines).
#[test]
fn read_a_block_at_a_time_is_parse_of_the_whole() {
    let dir = std::env::temp_dir().join(format!("callgraph-kallsyms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kallsyms.00000001");
    let mut text = Vec::new();
    for i in 0..40_000u64 {
        let name = "n".repeat(1 + (i as usize * 7919) % 500);
        text.extend_from_slice(
            format!(
                "{:016x} {} {name}_{i}\n",
                0xffffffff81000000 + i * 16,
                if i % 3 == 0 { 't' } else { 'T' }
            )
            .as_bytes(),
        );
        if i % 1000 == 0 {
            text.extend_from_slice(b"\r\n\n");
        }
    }
    text.extend_from_slice(b"ffffffff9000000 T last_without_newline");
    std::fs::write(&path, &text).unwrap();
    let read = KernelSymbols::read(&path).unwrap();
    let parsed = KernelSymbols::parse(&path, &text).unwrap();
    assert_eq!(read.len(), parsed.len());
    assert!(read.symbols().eq(parsed.symbols()));
    // A damaged line far into the file is named by the same number both ways.
    let at = text.len() - 20_000;
    let line_start = text[..at].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    text[line_start] = b'z';
    std::fs::write(&path, &text).unwrap();
    let (a, b) = (
        KernelSymbols::read(&path).unwrap_err().to_string(),
        KernelSymbols::parse(&path, &text).unwrap_err().to_string(),
    );
    assert_eq!(a, b);
    assert!(a.contains("the address is not 1 to 16 hex digits"), "{a}");
    // A line longer than 64 KiB is refused by number, not read on and on.
    let mut long = b"ffffffff81000000 T a\nffffffff81000010 T ".to_vec();
    long.extend(std::iter::repeat_n(b'x', 200 << 10));
    std::fs::write(&path, &long).unwrap();
    let e = KernelSymbols::read(&path).unwrap_err().to_string();
    assert!(e.ends_with("line 2: the line is longer than 64 KiB"), "{e}");
    // Special files are refused by name, without blocking.
    let e = KernelSymbols::read(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/dev/zero"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
