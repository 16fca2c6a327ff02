//! Every committed fixture round-trips byte for byte, and no damaged copy of one makes the reader
//! panic or report an error without a position.

mod common;

#[path = "../../../fuzz/src/gmon.rs"]
mod gmon_target;

use std::fs;

use gmon_format::{ErrorKind, Format, Profile, ReadOptions, write_profile};

fn read(path: &std::path::Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_fixture_round_trips_byte_for_byte() {
    let mut formats = std::collections::BTreeSet::new();
    for (path, options) in common::gmon_fixtures() {
        let data = read(&path);
        let profile =
            Profile::parse(&data, &options).unwrap_or_else(|e| panic!("{}", e.with_path(&path)));
        profile
            .validate()
            .unwrap_or_else(|e| panic!("{}", e.with_path(&path)));
        let written = write_profile(Vec::new(), &profile).expect("write");
        assert!(
            written == data,
            "{} changed in the round trip",
            path.display()
        );
        formats.insert(format!("{:?}", profile.layout()));
    }
    // Every format in both widths and both byte orders is covered by some fixture.
    for f in ["Gnu", "Bsd44", "OldBsd"] {
        assert!(
            formats.iter().any(|l| l.contains(&format!("format: {f},"))),
            "no {f} fixture"
        );
    }
    for w in ["U32", "U64"] {
        for e in ["Little", "Big"] {
            assert!(
                formats.iter().any(|l| l.contains(w) && l.contains(e)),
                "no {w} {e} fixture among {formats:?}"
            );
        }
    }
}

/// Files gprof refuses are refused with a position too.
#[test]
fn files_gprof_refuses_are_refused() {
    let rejected: Vec<_> = common::all_gmon_fixtures()
        .into_iter()
        .filter(|f| f.2)
        .collect();
    assert!(!rejected.is_empty());
    for (path, options, _) in rejected {
        let data = read(&path);
        let e = Profile::parse(&data, &options)
            .and_then(|p| p.validate())
            .unwrap_err();
        assert!(e.offset().is_some(), "{}: {e}", path.display());
    }
}

/// The fuzz body, run as an ordinary test on every fixture under all option sets.
#[test]
fn fuzz_body_accepts_every_fixture() {
    for (path, _) in common::gmon_fixtures() {
        let data = read(&path);
        for selector in 0..16u8 {
            let mut input = vec![selector];
            input.extend_from_slice(&data);
            gmon_target::run(&input);
        }
    }
}

/// Every truncation either is itself a complete profile (a GNU file cut at a record boundary, a
/// BSD file cut inside its arcs, which gprof reads up to the last whole arc) or fails with a
/// position inside the file.
#[test]
fn every_truncation_fails_cleanly_with_an_offset() {
    let mut failures = 0;
    for (path, options) in common::gmon_fixtures() {
        let data = read(&path);
        for len in 0..data.len() {
            let cut = &data[..len];
            gmon_target::run_with(options, cut);
            match Profile::parse(cut, &options).and_then(|p| p.validate().map(|()| p)) {
                Ok(p) if p.layout().format == Format::Gnu => {
                    assert!(p.trailing_bytes().is_empty());
                }
                Ok(p) => assert!(p.trailing_bytes().len() < p.layout().arc_size()),
                Err(e) => {
                    failures += 1;
                    let offset = e.offset().expect("a parse error has an offset");
                    assert!(
                        offset <= len as u64,
                        "{}: offset {offset} past the end {len}",
                        path.display()
                    );
                }
            }
        }
    }
    assert!(failures > 1000, "only {failures} truncations failed");
}

/// Flipping any single bit of a file's first 64 bytes, and every 97th bit after, never panics.
#[test]
fn bit_flips_never_panic() {
    for (path, options) in common::gmon_fixtures() {
        let data = read(&path);
        let bits = (0..data.len() * 8).filter(|&b| b < 64 * 8 || b % 97 == 0);
        for bit in bits {
            let mut damaged = data.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            gmon_target::run_with(options, &damaged);
        }
    }
}

/// Headers that claim far more data than the file holds are errors, found before allocating.
#[test]
fn absurd_counts_are_refused() {
    let o = ReadOptions::default();
    let mut gnu = b"gmon\x01\0\0\0".to_vec();
    gnu.extend([0; 12]);
    let mut hist = gnu.clone();
    hist.push(0);
    hist.extend([0; 16]);
    hist.extend(u32::MAX.to_le_bytes());
    hist.extend([0; 20]);
    let e = Profile::parse(&hist, &o)
        .and_then(|p| p.validate())
        .unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::TooManyBins {
                claimed: 4294967295,
                remaining: 0
            }
        ),
        "{e}"
    );
    let mut bb = gnu.clone();
    bb.push(2);
    bb.extend(u32::MAX.to_le_bytes());
    let e = Profile::parse(&bb, &o)
        .and_then(|p| p.validate())
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
    let mut bsd = vec![0u8; 8];
    bsd.extend(16u64.to_le_bytes());
    bsd.extend(u32::MAX.to_le_bytes());
    let e = Profile::parse(&bsd, &o)
        .and_then(|p| p.validate())
        .unwrap_err();
    assert!(e.offset().is_some(), "{e}");
}
