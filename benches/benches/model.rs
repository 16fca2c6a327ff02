//! The profile model on a million samples: building (every sample's stack interned from its
//! frames, as a reader does), aggregating, per-function totals and the call graph view.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use profile_model::{ProfileBuilder, ValueKind};

use pkgprof_benches::profiles::{SAMPLES, build, workload};

fn model(c: &mut Criterion) {
    let (paths, samples) = workload();
    let mut group = c.benchmark_group("model-1M-samples");
    group.throughput(Throughput::Elements(SAMPLES as u64));
    group.sample_size(10);
    group.bench_function("build", |b| {
        b.iter(|| black_box(build(&paths, &samples).sample_count()))
    });
    let profile = build(&paths, &samples);
    let cpu = profile
        .find_value_type(ValueKind::CPU_TIME)
        .expect("declared");
    group.bench_function("aggregate", |b| {
        b.iter_batched(
            || ProfileBuilder::from_profile(profile.clone()),
            |mut builder| {
                builder.aggregate();
                black_box(builder.sample_count())
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("function-totals", |b| {
        b.iter(|| black_box(profile.function_totals(cpu)))
    });
    group.bench_function("call-graph", |b| {
        b.iter(|| black_box(profile.call_graph(Some(cpu)).cycles().len()))
    });
    group.finish();
}

criterion_group!(benches, model);
criterion_main!(benches);
