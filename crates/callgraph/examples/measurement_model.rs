//! Builds the profile model of a measurement directory that `pkgmon` recorded, then prints
//! what it holds: its processes, the heaviest sampled stacks, user and kernel frames labelled
//! as the seamless listing labels them, and the symbol table the listing reads from the same
//! model.
//!
//! `cargo run -p callgraph --example measurement_model -- DIR [PID...]`; without arguments it
//! reads the bundled measurement of `fixtures/seamless/` (a reader and a server, pids 137 and
//! 138, with their objects in `fixtures/seamless/objects`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use callgraph::{ProcessSelection, Seamless, SeamlessOptions, measurement_model};
use profile_model::ValueKind;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/seamless");
    let mut options = SeamlessOptions::default();
    // The model keeps the real sampled stacks, from each process's stacks file.
    options.stacks = true;
    let (dir, pids) = match args.split_first() {
        Some((dir, pids)) => (PathBuf::from(dir), pids.to_vec()),
        None => {
            options.object_path = vec![fixtures.join("objects")];
            (fixtures.join("measurement"), Vec::new())
        }
    };

    // 1. The directory's files: which processes it holds, and where their files are.
    let measurement = gmon_format::scan(&dir)?;
    // 2. The processes asked for (all of them, with the kernel's own work, by default),
    //    symbolized through their recorded mappings and the kallsyms snapshot.
    let selection = if pids.is_empty() {
        ProcessSelection::System
    } else {
        let parse = |p: &String| gmon_format::parse_process_label(p).ok_or("not a pid");
        ProcessSelection::Pids(pids.iter().map(parse).collect::<Result<_, _>>()?)
    };
    let seamless = Seamless::build(&measurement, &selection, &options)?;
    for warning in &seamless.warnings {
        eprintln!("warning: {warning}");
    }
    // 3. The model, as exports see it (the histograms the flat profile reads left out).
    let model = measurement_model(&seamless);

    let samples = model
        .find_value_type(ValueKind::SAMPLES)
        .ok_or("no samples type")?;
    for p in &seamless.processes {
        println!(
            "process {}: {} user and {} kernel samples",
            p.label, p.user_samples, p.kernel_samples
        );
    }
    // Samples are per stack of frames (call sites included); summed here per stack of
    // functions.
    let mut by_functions: BTreeMap<String, i64> = BTreeMap::new();
    for s in model.samples() {
        // Innermost frame first, each function with its listing label (`137u`, `137k`).
        let frames: Vec<String> = model
            .stack_frames(s.stack)
            .map(|frame| {
                let f = model.frame(frame).function;
                let label = model.function(f).label.map_or("", |l| model.string(l));
                format!("{label}:{}", model.function_name(f))
            })
            .collect();
        *by_functions.entry(frames.join(" < ")).or_default() += s.values[samples.index()];
    }
    let mut stacks: Vec<(i64, String)> = by_functions.into_iter().map(|(k, n)| (n, k)).collect();
    stacks.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    println!("{} distinct stacks; the heaviest:", stacks.len());
    for (n, stack) in stacks.iter().take(5) {
        println!("{n:>6}  {stack}");
    }
    // 4. The gprof listing's input, read back from the same model: one symbol per function,
    //    at its place in the merged address space.
    let view = seamless.gprof();
    let symbols = view.table.symbols();
    println!("the listing reads {} symbols:", symbols.len());
    for s in symbols.iter().take(5) {
        println!("  {:#8x}  {}", s.address, s.name_lossy());
    }
    Ok(())
}
