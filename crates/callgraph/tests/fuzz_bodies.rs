//! The fuzz bodies of image loading (symbols, DWARF lines, the `-c` scanner) and of the whole
//! measurement-directory reader, run over the fixtures as ordinary tests.

#![allow(clippy::unwrap_used)]

#[path = "../../../fuzz/src/image.rs"]
mod image_target;
#[path = "../../../fuzz/src/measurement.rs"]
mod measurement_target;

use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Every ELF file of the fixture programs and seamless objects.
fn images() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for group in ["programs/out", "seamless"] {
        for entry in walk(&fixtures().join(group)) {
            let data = std::fs::read(&entry).unwrap();
            if data.starts_with(b"\x7fELF") {
                out.push(entry);
            }
        }
    }
    assert!(out.len() >= 20, "{out:?}");
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn every_fixture_image_and_its_damaged_copies_load_or_fail_cleanly() {
    for path in images() {
        let data = std::fs::read(&path).unwrap();
        image_target::run(&data);
        // Cut short at a few places, and with the section headers' bytes flipped.
        for cut in [64, data.len() / 3, data.len() / 2, data.len() - 1] {
            image_target::run(&data[..cut.min(data.len())]);
        }
        let mut damaged = data.clone();
        let n = damaged.len();
        for b in &mut damaged[n.saturating_sub(512)..] {
            *b ^= 0x5a;
        }
        image_target::run(&damaged);
    }
}

#[test]
fn the_fixture_measurement_and_its_damaged_copies_read_cleanly() {
    let dir = fixtures().join("seamless/measurement");
    let files: Vec<(Vec<u8>, Vec<u8>)> = walk(&dir)
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_str().unwrap().as_bytes().to_vec();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    let scratch =
        std::env::temp_dir().join(format!("callgraph-fuzz-bodies-{}", std::process::id()));
    for case in 0..files.len() + 2 {
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).unwrap();
        // Whole, then each file cut in half in turn, then with a file named `..`.
        let mut set = files.clone();
        if case < files.len() {
            let half = set[case].1.len() / 2;
            set[case].1.truncate(half);
        } else if case == files.len() + 1 {
            set.push((b"..".to_vec(), b"x".to_vec()));
        }
        let borrowed = set.iter().map(|(n, c)| (n.as_slice(), c.as_slice()));
        measurement_target::run_files(&scratch, borrowed, case % 2 == 0);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    // The fuzz entry itself, on the files framed as the fuzzer's bytes are.
    let mut framed = vec![1u8, b'\n'];
    for (name, contents) in &files {
        framed.push(0xfe);
        framed.extend_from_slice(name);
        framed.push(b'\n');
        framed.extend_from_slice(contents);
    }
    measurement_target::run(&framed);
}
