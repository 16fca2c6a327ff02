//! `pkgprof -b` stage by stage on generated programs of 20,000 and 60,000 functions: reading
//! the symbol table, assigning the histogram, building the call graph (arcs, cycles,
//! propagation, printed order), and printing the report. Throughput is in functions per
//! second (printing: bytes of report per second).

use std::hint::black_box;
use std::path::Path;

use callgraph::{
    Analysis, CallGraph, HistogramTimes, ReportOptions, SymbolOptions, SymbolTable,
    default_flat_selection, write_report,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gmon_format::{Profile, Sum};
use pkgprof_benches::generated_program;

const SIZES: [usize; 2] = [20_000, 60_000];

fn stages(c: &mut Criterion) {
    let mut group = c.benchmark_group("report");
    group.sample_size(10);
    for n in SIZES {
        let program = generated_program(n, 1);
        let path = Path::new("generated");
        let options = SymbolOptions::default();
        let table = SymbolTable::parse(path, &program.image, &options).expect("image");
        let profile = Profile::parse(&program.gmon, &table.read_options()).expect("gmon");
        let mut sum = Sum::new();
        sum.add(&profile).expect("sum");
        let included = default_flat_selection(&table);
        let times = HistogramTimes::assign(&table, &sum, &included);

        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("symbols", n), &n, |b, _| {
            b.iter(|| SymbolTable::parse(path, black_box(&program.image), &options))
        });
        group.bench_with_input(BenchmarkId::new("histogram", n), &n, |b, _| {
            b.iter(|| HistogramTimes::assign(&table, black_box(&sum), &included))
        });
        group.bench_with_input(BenchmarkId::new("graph+propagation", n), &n, |b, _| {
            b.iter(|| CallGraph::build(&table, black_box(sum.arcs()), &times))
        });
        group.bench_with_input(BenchmarkId::new("analysis", n), &n, |b, _| {
            b.iter(|| Analysis::new(table.clone(), black_box(&sum)))
        });

        let analysis = Analysis::new(table.clone(), &sum);
        let mut report = ReportOptions::default();
        report.brief = true;
        let mut out = Vec::new();
        write_report(&mut out, &analysis, &report).expect("report");
        group.throughput(Throughput::Bytes(out.len() as u64));
        group.bench_with_input(BenchmarkId::new("print", n), &n, |b, _| {
            b.iter(|| {
                out.clear();
                write_report(&mut out, black_box(&analysis), &report).expect("report");
            })
        });
    }
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
