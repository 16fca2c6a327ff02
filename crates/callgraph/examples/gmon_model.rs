//! Builds the profile model of a gmon.out and its image, then prints what it holds: each
//! function's samples and calls, and the cycles of its call graph.
//!
//! `cargo run -p callgraph --example gmon_model -- IMAGE [GMON...]`; without arguments it reads
//! the bundled profile of `fixtures/programs/src/cycle.c`.

use std::path::{Path, PathBuf};

use callgraph::{ModelOptions, SymbolOptions, SymbolTable, gmon_model};
use profile_model::ValueKind;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/programs/out/cycle-pie");
    let (image, gmons) = match args.split_first() {
        Some((image, gmons)) if !gmons.is_empty() => (image.clone(), gmons.to_vec()),
        Some((image, _)) => (image.clone(), vec![PathBuf::from("gmon.out")]),
        None => (fixture.join("cycle"), vec![fixture.join("gmon.out")]),
    };

    // 1. The image's symbols, which also say how to read its gmon files.
    let table = SymbolTable::read(&image, &SymbolOptions::default())?;
    // 2. The gmon files, summed as gprof sums them.
    let mut sum = gmon_format::Sum::new();
    for gmon in &gmons {
        // Read as pkgprof reads its inputs: regular files only, bounded.
        let data = callgraph::read_input(gmon, callgraph::PROFILE_MAX_BYTES)?;
        let profile = gmon_format::Profile::parse(&data, &table.read_options())
            .map_err(|e| e.with_path(gmon))?;
        sum.add(&profile)?;
    }
    // 3. The model.
    let mut options = ModelOptions::default();
    options.image = Some(image.display().to_string());
    let model = gmon_model(&table, &sum, &options);

    let samples = model
        .find_value_type(ValueKind::SAMPLES)
        .ok_or("no samples type")?;
    let ms = model.period().map_or(0, |p| p.value) / 1_000_000;
    println!(
        "{} samples ({ms} ms each), {} functions, {} arcs",
        model.total(samples),
        model.functions().len(),
        model.arcs().len()
    );
    let totals = model.function_totals(samples);
    let graph = model.call_graph(None);
    println!("{:>8} {:>8}  function", "samples", "calls");
    for (f, own, _) in totals.iter() {
        let calls: i64 = graph.callers(f).iter().map(|(_, edge)| edge.calls).sum();
        println!("{own:>8} {calls:>8}  {}", model.function_name(f));
    }
    for cycle in graph.cycles() {
        let names: Vec<&str> = cycle.iter().map(|&f| model.function_name(f)).collect();
        println!("cycle: {}", names.join(" "));
    }
    Ok(())
}
