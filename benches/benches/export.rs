//! Exports of the million-sample profile of the model bench: folded stacks and pprof (the two
//! formats the issue sets a one-second budget for), and the others for comparison. Each writes
//! into memory, so the figure is the exporter's own work.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use profile_export::{ExportOptions, Format, export};

use pkgprof_benches::profiles::{SAMPLES, build, workload};

fn exports(c: &mut Criterion) {
    let (paths, samples) = workload();
    let profile = build(&paths, &samples);
    let mut group = c.benchmark_group("export-1M-samples");
    group.throughput(Throughput::Elements(SAMPLES as u64));
    group.sample_size(10);
    for format in [
        Format::Folded,
        Format::Pprof,
        Format::FlameGraph,
        Format::Speedscope,
        Format::Dot,
    ] {
        group.bench_function(format.name(), |b| {
            b.iter(|| {
                let mut out = Vec::new();
                export(&profile, format, &ExportOptions::default(), &mut out)
                    .expect("exports into memory");
                black_box(out.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, exports);
criterion_main!(benches);
