//! Random valid profiles in every layout survive write -> read -> write unchanged.

#![allow(clippy::unwrap_used)] // test helpers: a failure should stop the test

use gmon_format::{
    AddressSize, Arc, Endian, Format, Header, HistogramHeader, Layout, Profile, ReadOptions,
    Record, Writer,
};

mod common;

use common::Rng;

/// What was written, to compare with what is read back.
#[derive(Debug, PartialEq)]
enum Expected {
    Histogram(HistogramHeader, Vec<u16>),
    Arc(Arc),
    Blocks(Vec<(u64, u64)>),
}

fn random_case(rng: &mut Rng) -> (Layout, Vec<u8>, Vec<Expected>) {
    let address_size = if rng.below(2) == 0 {
        AddressSize::U32
    } else {
        AddressSize::U64
    };
    let endian = if rng.below(2) == 0 {
        Endian::Little
    } else {
        Endian::Big
    };
    let format = [Format::Gnu, Format::Gnu, Format::Bsd44, Format::OldBsd][rng.below(4) as usize];
    let layout = Layout {
        format,
        address_size,
        endian,
    };
    let max = address_size.max();
    let addr = |rng: &mut Rng| rng.next() & max;
    let mut w = Writer::new(Vec::new(), layout);
    let mut spare = [0u8; 12];
    spare.iter_mut().for_each(|b| *b = rng.below(256) as u8);
    let header = match format {
        Format::Gnu => Header::Gnu {
            version: rng.below(2) as u32,
            spare,
        },
        Format::Bsd44 => Header::Bsd44 { spare },
        Format::OldBsd => Header::OldBsd,
    };
    w.header(&header).unwrap();
    let mut expected = Vec::new();
    let histogram = |rng: &mut Rng, w: &mut Writer<Vec<u8>>| {
        let low = addr(rng);
        let high = low.max(addr(rng));
        // BSD files must reach gprof's 20-byte minimum, so give them a few bins.
        let n = rng.below(40) as usize + if format == Format::Gnu { 0 } else { 4 };
        let bins: Vec<u16> = (0..n).map(|_| rng.next() as u16).collect();
        let mut dimension = [0u8; 15];
        dimension.iter_mut().for_each(|b| *b = rng.below(256) as u8);
        let mut h = HistogramHeader {
            low_pc: low,
            high_pc: high,
            prof_rate: rng.next() as u32,
            dimension,
            dimension_abbrev: rng.next() as u8,
        };
        if format != Format::Gnu {
            (h.dimension, h.dimension_abbrev) = gmon_format::SECONDS;
        }
        if format == Format::OldBsd {
            h.prof_rate = gmon_format::OLD_BSD_PROF_RATE;
        }
        w.histogram(&h, bins.iter().copied()).unwrap();
        Expected::Histogram(h, bins)
    };
    if format != Format::Gnu {
        expected.push(histogram(rng, &mut w));
    }
    for _ in 0..rng.below(12) {
        // Version 0 files laid out basic-block records differently; we write only version 1's.
        let kind = match header {
            Header::Gnu { version: 1, .. } => rng.below(3),
            Header::Gnu { .. } => rng.below(2),
            _ => 1,
        };
        match kind {
            0 => expected.push(histogram(rng, &mut w)),
            1 => {
                let count = if format == Format::Gnu {
                    rng.next() & 0xffff_ffff
                } else {
                    addr(rng)
                };
                let arc = Arc {
                    from_pc: addr(rng),
                    self_pc: addr(rng),
                    count,
                };
                w.arc(&arc).unwrap();
                expected.push(Expected::Arc(arc));
            }
            _ => {
                let pairs: Vec<(u64, u64)> =
                    (0..rng.below(5)).map(|_| (addr(rng), addr(rng))).collect();
                w.basic_blocks(pairs.iter().copied()).unwrap();
                expected.push(Expected::Blocks(pairs));
            }
        }
    }
    (layout, w.finish().unwrap(), expected)
}

#[test]
fn ten_thousand_random_profiles_round_trip() {
    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    let mut redetected = 0;
    for case in 0..10_000 {
        let (layout, bytes, expected) = random_case(&mut rng);
        let mut options = ReadOptions::new(layout.address_size, layout.endian);
        if layout.format != Format::Gnu {
            // A BSD file's low_pc may happen to spell "gmon"; gprof's -O b is how to insist.
            options = options.with_format(gmon_format::FormatChoice::Bsd);
        }
        let profile = Profile::parse(&bytes, &options)
            .unwrap_or_else(|e| panic!("case {case} ({layout:?}): {e}"));
        let read: Vec<Expected> = profile
            .records()
            .map(
                |r| match r.unwrap_or_else(|e| panic!("case {case}: {e}")).1 {
                    Record::Histogram(h) => Expected::Histogram(h.header, h.bins.iter().collect()),
                    Record::Arc(a) => Expected::Arc(a),
                    Record::BasicBlocks(bb) => Expected::Blocks(bb.iter().collect()),
                },
            )
            .collect();
        // An old BSD file whose first bins happen to spell the 4.4BSD version word is read as
        // 4.4BSD, as gprof would; only then can the records differ from what was written.
        if profile.layout().format == layout.format {
            assert_eq!(read, expected, "case {case} ({layout:?})");
        } else {
            redetected += 1;
        }
        let again = gmon_format::write_profile(Vec::new(), &profile).unwrap();
        assert!(again == bytes, "case {case} ({layout:?}): bytes changed");
    }
    assert!(
        redetected < 10,
        "{redetected} cases were read in another format"
    );
}
