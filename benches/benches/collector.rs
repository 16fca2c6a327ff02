//! The collector's stages after the rings on a synthetic recording of 200,000 samples (4
//! processes, 8 kernel and 10 user frames each): replay, aggregation (what a streaming run does
//! per sample: unwinding, histograms, arcs, interned stacks) and writing the measurement
//! directory (info files, the kallsyms snapshot). Sampling itself is measured by
//! benches/compare-perf.sh against `perf record`.

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;

    use collect_perf::{
        AggregateOptions, KernelSymbols, Recording, SideBand, SideRecord, WriteOptions, aggregate,
        replay, write_measurement,
    };
    use criterion::{Criterion, Throughput};

    const SAMPLES: u64 = 200_000;

    fn recording() -> Recording {
        let mut rec = Recording::default();
        rec.frequency = 1000;
        let exe = std::env::current_exe()
            .expect("own path")
            .to_string_lossy()
            .into_owned();
        for pid in 100..104u32 {
            rec.side_band.push(SideRecord {
                time: 1,
                cpu: 0,
                kind: SideBand::Comm {
                    pid,
                    tid: pid,
                    comm: format!("proc{pid}"),
                    exec: true,
                },
            });
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut kernel = [0u64; 8];
        let mut user = [0u64; 10];
        for i in 0..SAMPLES {
            let pid = 100 + (i % 4) as u32;
            // A few hundred distinct functions per side, so arcs and stacks repeat as in real
            // profiles.
            for (k, f) in kernel.iter_mut().enumerate() {
                *f = 0xffff_ffff_8100_0000 + (next() % 512) * 0x400 + k as u64;
            }
            for (k, f) in user.iter_mut().enumerate() {
                *f = 0x5555_5555_0000 + (next() % 256) * 0x200 + k as u64;
            }
            let in_kernel = i % 3 == 0;
            rec.push_sample(
                10 + i * 1000,
                pid,
                pid,
                (i % 2) as u32,
                1_000_000,
                if in_kernel { kernel[0] } else { user[0] },
                !in_kernel,
                None,
                if in_kernel { &kernel } else { &[] },
                &user,
                &[],
            );
        }
        rec.side_band.push(SideRecord {
            time: 2,
            cpu: 0,
            kind: SideBand::Mmap {
                pid: 100,
                tid: 100,
                addr: 0x5555_5555_0000,
                len: 0x10_0000,
                pgoff: 0,
                build_id: None,
                prot: 5,
                flags: 2,
                filename: exe,
            },
        });
        rec.end_time = 10 + SAMPLES * 1000;
        rec
    }

    pub fn collector(c: &mut Criterion) {
        let rec = recording();
        let dir = std::env::temp_dir().join(format!("pkgprof-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut group = c.benchmark_group("collector");
        group.throughput(Throughput::Elements(SAMPLES));
        group.sample_size(10);
        group.bench_function("replay", |b| b.iter(|| black_box(replay(black_box(&rec)))));
        let ksyms = KernelSymbols::live();
        let opts = AggregateOptions::default();
        group.bench_function("aggregate", |b| {
            b.iter(|| black_box(aggregate(black_box(&rec), &opts, ksyms.clone())))
        });
        let agg = aggregate(&rec, &opts, ksyms);
        let mut run = 0u64;
        group.bench_function("write_measurement", |b| {
            b.iter_batched(
                || {
                    // Each measurement needs a directory of its own (files are never replaced).
                    run += 1;
                    let mut opts = WriteOptions::default();
                    opts.dir = dir.join(run.to_string());
                    opts
                },
                |opts| black_box(write_measurement(&rec, &agg, &opts).expect("write")),
                criterion::BatchSize::PerIteration,
            )
        });
        group.finish();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(target_os = "linux")]
criterion::criterion_group!(benches, linux::collector);
#[cfg(target_os = "linux")]
criterion::criterion_main!(benches);

#[cfg(not(target_os = "linux"))]
fn main() {}
