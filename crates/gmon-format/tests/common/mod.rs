//! The committed fixtures, with the options each must be read with.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use gmon_format::{AddressSize, Endian, ReadOptions};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Hand-made files that GNU gprof refuses but we read, on purpose: gprof reads the count of a
/// basic-block record in its host's byte order, so it cannot read a big-endian one.
pub const READ_DESPITE_GPROF: &[&str] = &["gnu64be-bb.gmon"];

/// Every gmon file under fixtures/ that GNU gprof reads: the real programs' (64-bit
/// little-endian) and the hand-made ones listed in fixtures/handmade/MANIFEST with their layout.
pub fn gmon_fixtures() -> Vec<(PathBuf, ReadOptions)> {
    all_gmon_fixtures()
        .into_iter()
        .filter(|(_, _, rejected)| !rejected)
        .map(|(p, o, _)| (p, o))
        .collect()
}

/// Every gmon file under fixtures/, with whether GNU gprof refuses it (its recorded `-i` run
/// exited non-zero), less the files in [`READ_DESPITE_GPROF`].
pub fn all_gmon_fixtures() -> Vec<(PathBuf, ReadOptions, bool)> {
    let mut out = Vec::new();
    let programs = fixtures().join("programs/out");
    let mut dirs: Vec<_> = fs::read_dir(&programs)
        .expect("fixtures/programs/out exists")
        .map(|e| e.expect("readable fixtures dir").path())
        .filter(|p| p.join("gmon.out").exists())
        .collect();
    dirs.sort();
    for dir in dirs {
        out.push((
            dir.join("gmon.out"),
            ReadOptions::new(AddressSize::U64, Endian::Little),
            false,
        ));
    }
    let handmade = fixtures().join("handmade");
    let manifest =
        fs::read_to_string(handmade.join("MANIFEST")).expect("fixtures/handmade/MANIFEST");
    for line in manifest
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [file, _format, size, endian] = fields[..] else {
            panic!("bad MANIFEST line: {line}")
        };
        let size = match size {
            "4" | "32" => AddressSize::U32,
            "64" | "8" => AddressSize::U64,
            other => panic!("bad address size {other} in MANIFEST"),
        };
        let endian = match endian {
            "le" | "little" => Endian::Little,
            "be" | "big" => Endian::Big,
            other => panic!("bad endian {other} in MANIFEST"),
        };
        let status = handmade.join("expected").join(format!("{file}.i.status"));
        let rejected = status.exists() && !READ_DESPITE_GPROF.contains(&file);
        out.push((
            handmade.join(file),
            ReadOptions::new(size, endian),
            rejected,
        ));
    }
    assert!(
        out.len() >= 20,
        "expected the full fixture set, found {}",
        out.len()
    );
    out
}

/// xorshift64*: deterministic, so a failure names a case that can be replayed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Generators of the measurement-directory tests: chances, optional values, and bytes biased
/// towards the ones escaping is about.
impl Rng {
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    /// Bytes biased towards the ones escaping is about.
    pub fn bytes(&mut self, max_len: u64) -> Vec<u8> {
        const SPECIAL: &[u8] = b"/%. \0\t\n\r\"\\,[]#=\x7f\x80\xc3\xa9\xff-ku0123456789";
        let len = self.below(max_len + 1);
        (0..len)
            .map(|_| match self.below(3) {
                0 => SPECIAL[self.below(SPECIAL.len() as u64) as usize],
                1 => b'a' + self.below(26) as u8,
                _ => self.next() as u8,
            })
            .collect()
    }
    pub fn maybe<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        if self.chance(3) { None } else { Some(f(self)) }
    }
}
