//! Inputs for the benchmarks, generated rather than committed.

use gmon_format::{AddressSize, Arc, Endian, Header, HistogramHeader, Layout, SECONDS, Writer};

/// A GNU gmon file of about `target_bytes`: `bin_share` of it histogram bins, the rest arcs.
/// Half and half is what a large profile from a big program looks like; all arcs is the
/// slowest case to read, since arcs are small records.
pub fn large_gnu_profile(target_bytes: usize, bin_share: f64) -> Vec<u8> {
    let layout = Layout::gnu(AddressSize::U64, Endian::Little);
    let mut w = Writer::new(Vec::with_capacity(target_bytes + 64), layout);
    w.header(&Header::Gnu {
        version: 1,
        spare: [0; 12],
    })
    .expect("header");
    let bins = ((target_bytes as f64 * bin_share) as usize / 2).max(1);
    let header = HistogramHeader {
        low_pc: 0x1000,
        high_pc: 0x1000 + 4 * bins as u64,
        prof_rate: 100,
        dimension: SECONDS.0,
        dimension_abbrev: SECONDS.1,
    };
    // A deterministic, irregular pattern so nothing is trivially compressible by the branch
    // predictor.
    let mut x: u32 = 0x9e37_79b9;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let values: Vec<u16> = (0..bins).map(|_| (next() % 7) as u16).collect();
    w.histogram(&header, values.into_iter()).expect("histogram");
    let arcs = (target_bytes - 2 * bins) / 21;
    for i in 0..arcs as u64 {
        let r = u64::from(next());
        let arc = Arc {
            from_pc: 0x1000 + (r % (4 * bins as u64)),
            self_pc: 0x1000 + i * 16,
            count: r % 1000,
        };
        w.arc(&arc).expect("arc");
    }
    w.finish().expect("finish")
}
