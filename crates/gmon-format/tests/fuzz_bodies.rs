//! The fuzz bodies of the manifest and of summing several gmon files, run over the fixtures as
//! ordinary tests (a crash fuzzing finds becomes a fixture here).

#![allow(clippy::unwrap_used)]

mod common;

#[path = "../../../fuzz/src/async_moves.rs"]
mod async_moves_target;
#[path = "../../../fuzz/src/continuous_index.rs"]
mod continuous_index;
#[path = "../../../fuzz/src/gmon.rs"]
mod gmon;
#[path = "../../../fuzz/src/manifest.rs"]
mod manifest_target;
#[path = "../../../fuzz/src/sum.rs"]
mod sum_target;

use gmon_format::{Manifest, ManifestEntry};

#[test]
fn summing_any_two_fixtures_ends_in_a_sum_or_an_error() {
    let fixtures = common::gmon_fixtures();
    let files: Vec<_> = fixtures
        .iter()
        .map(|(p, o)| (std::fs::read(p).unwrap(), *o))
        .collect();
    for (a, oa) in &files {
        for (b, _) in files.iter().take(12) {
            sum_target::run_files(*oa, [a.as_slice(), b.as_slice()].into_iter());
            sum_target::run_files(*oa, [a.as_slice(), &b[..b.len() / 2]].into_iter());
        }
        // The fuzz entry itself: a selector byte, then files cut at 0xfe.
        let mut framed = vec![0u8];
        framed.extend_from_slice(a);
        framed.push(0xfe);
        framed.extend_from_slice(a);
        sum_target::run(&framed);
        gmon::run(&framed);
    }
}

#[test]
fn manifests_of_the_fixture_measurement_and_their_cuts() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/labeled/measurement");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let manifest = Manifest {
        files: names
            .iter()
            .map(|n| ManifestEntry::of(n.clone(), &std::fs::read(dir.join(n)).unwrap()))
            .collect(),
    };
    let mut text = Vec::new();
    manifest.write(&mut text).unwrap();
    assert_eq!(Manifest::parse(&text).unwrap(), manifest);
    for cut in 0..=text.len() {
        manifest_target::run(&text[..cut]);
    }
    for i in 0..text.len() {
        let mut damaged = text.clone();
        damaged[i] ^= 0x20;
        manifest_target::run(&damaged);
    }
    manifest_target::run(&Manifest::placeholder());
}

#[test]
fn async_moves_and_their_cuts_and_flips() {
    let text = b"pkgasync 1.0\n\
        kind net-rx held 12 attributed 9 windows 5 objects 6 unconsumed 1\n\
        counted net-rx 7\n\
        residue net-rx no-consumer 1\n\
        residue net-rx window-unseen 2\n\
        move net-rx - - 2 2000000\n\
        move net-rx 100 200 9 9000000\n";
    assert!(gmon_format::AsyncMoves::parse(text).is_ok());
    for cut in 0..=text.len() {
        async_moves_target::run(&text[..cut]);
    }
    for i in 0..text.len() {
        for bit in [0x01, 0x20, 0x80] {
            let mut t = text.to_vec();
            t[i] ^= bit;
            async_moves_target::run(&t);
        }
    }
}

#[test]
fn continuous_indexes_and_their_damaged_forms() {
    let v1 = b"# pkgprof-continuous 1\nhost h\nfrequency 19\n\
window 1 w00000001 10 20 samples=3 lost=0 rss-kib=5\n\
instance 7 sh#0 pid=7 start=9 samples=2 cpu-ns=4 later=x\n\
instance 7_1 a%20b#2 pid=7 samples=1 end=15\nend 1\n";
    let v2 = b"# pkgprof-continuous 2\nhost h\nfrequency 19\n\
window 1 w00000001 10 20 samples=3 lost=0 rss-kib=5 instances=2\nend 1\n";
    let instances = b"# pkgprof-continuous-instances 2 window 1\n\
instance 7 sh#0 pid=7 start=9 samples=2 cpu-ns=4 later=x\n\
instance 7_1 a%20b#2 pid=7 samples=1 end=15\nend 2\n";
    let index = gmon_format::continuous::ContinuousIndex::parse(v2).unwrap();
    let read = index.windows[0].parse_instances(instances).unwrap();
    assert_eq!(
        read,
        gmon_format::continuous::ContinuousIndex::parse(v1)
            .unwrap()
            .windows[0]
            .instances
    );
    // Without a host line (the fuzz target's find: written back with an empty host name).
    let hostless = b"# pkgprof-continuous 2\nend 0\n";
    for text in [&v1[..], &v2[..], &instances[..], &hostless[..]] {
        continuous_index::run(text);
        for cut in 0..text.len() {
            continuous_index::run(&text[..cut]);
            let mut damaged = text.to_vec();
            damaged[cut] ^= 0x41;
            continuous_index::run(&damaged);
        }
    }
}
