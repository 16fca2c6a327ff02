//! Sums that GNU gprof wrote with `-s` (recorded in fixtures/handmade/expected/SUMS), rebuilt
//! byte for byte. Only histogram-only inputs can be checked here: gprof writes arcs mapped to
//! symbol starts, which needs the image's symbols (the callgraph crate's `-s` tests cover those).

#![allow(clippy::unwrap_used)] // test helpers: a failure should stop the test

mod common;

use std::fs;

use gmon_format::{AddressSize, Endian, Profile, ReadOptions, Sum};

fn gprof_sum(inputs: &[&str], expected: &str) {
    let dir = common::fixtures().join("handmade");
    let options = ReadOptions::new(AddressSize::U64, Endian::Little);
    let datas: Vec<Vec<u8>> = inputs
        .iter()
        .map(|f| fs::read(dir.join(f)).unwrap())
        .collect();
    let mut sum = Sum::new();
    for data in &datas {
        sum.add(&Profile::parse(data, &options).unwrap()).unwrap();
    }
    let ours = sum
        .write_gnu(Vec::new(), AddressSize::U64, Endian::Little)
        .unwrap();
    let theirs = fs::read(dir.join("expected").join(expected)).unwrap();
    assert!(
        ours == theirs,
        "{expected}: ours\n{ours:02x?}\ngprof's\n{theirs:02x?}"
    );
}

#[test]
fn wrapped_bins_and_spare_bytes_match_gprof() {
    gprof_sum(
        &["gnu64le-wrap-a.gmon", "gnu64le-wrap-b.gmon"],
        "sum-wrap.gmon",
    );
}

#[test]
fn a_header_only_file_sums_to_a_header() {
    gprof_sum(&["gnu64le-header-only.gmon"], "sum-header-only.gmon");
}
