//! Parse, write and sum throughput of gmon-format on ~100 MB GNU profiles.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gmon_format::{AddressSize, Endian, Profile, ReadOptions, Record, Sum, write_profile};
use pkgprof_benches::large_gnu_profile;

fn parse_and_write(c: &mut Criterion) {
    for (name, bin_share) in [("gmon-mixed", 0.5), ("gmon-arcs", 0.0)] {
        bench_profile(c, name, &large_gnu_profile(100 << 20, bin_share));
    }
}

fn bench_profile(c: &mut Criterion, name: &str, data: &[u8]) {
    let options = ReadOptions::new(AddressSize::U64, Endian::Little);
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);

    // Reading means visiting every value, not just borrowing: bins are summed, arcs folded.
    group.bench_function("parse", |b| {
        b.iter(|| {
            let profile = Profile::parse(black_box(data), &options).expect("parse");
            let (mut samples, mut calls) = (0u64, 0u64);
            for record in profile.records() {
                match record.expect("record").1 {
                    Record::Histogram(h) => samples += h.bins.iter().map(u64::from).sum::<u64>(),
                    Record::Arc(a) => calls += a.count ^ a.from_pc ^ a.self_pc,
                    Record::BasicBlocks(bb) => calls += bb.len() as u64,
                }
            }
            black_box((samples, calls))
        })
    });
    group.bench_function("write", |b| {
        let profile = Profile::parse(data, &options).expect("parse");
        let mut out = Vec::with_capacity(data.len());
        b.iter(|| {
            out.clear();
            black_box(write_profile(&mut out, &profile).expect("write"));
        })
    });
    group.bench_function("sum", |b| {
        let profile = Profile::parse(data, &options).expect("parse");
        b.iter(|| {
            let mut sum = Sum::new();
            sum.add(&profile).expect("sum");
            black_box(sum.arcs().len())
        })
    });
    group.finish();
}

criterion_group!(benches, parse_and_write);
criterion_main!(benches);
