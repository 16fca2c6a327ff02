//! The profile model of a gmon.out and its image (`callgraph::gmon_model`) holds what gprof's
//! analysis holds: on every fixture program, its samples add up to gprof's histogram total,
//! each function's samples to gprof's self time wherever no bin straddles two symbols, and the
//! arcs into each function to gprof's call counts.

#![allow(clippy::unwrap_used)] // test helpers: a failure should stop the test

mod common;

use std::collections::HashMap;
use std::path::Path;

use callgraph::{
    Analysis, HistogramTimes, ModelOptions, SymbolTable, UNKNOWN_FUNCTION, gmon_model,
};
use profile_model::{Profile, ValueKind};

/// Every fixture program: (directory name, image, gmon.out).
fn programs() -> Vec<(String, std::path::PathBuf, std::path::PathBuf)> {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/programs/out");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&out).expect("fixtures/programs/out") {
        let dir = entry.expect("readable").path();
        let gmon = dir.join("gmon.out");
        if !gmon.exists() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        // The image is the directory's one executable that is not a stripped copy.
        let image = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                !n.contains('.') && !n.ends_with("-stripped") && n != "gmon"
            })
            .unwrap_or_else(|| panic!("{name}: no image"));
        found.push((name, image, gmon));
    }
    found.sort();
    assert!(found.len() >= 10, "fixture programs: {found:?}");
    found
}

/// The symbol each model function came from, by the name gprof's table stores: the system
/// name, or the name when it was not demangled; with the label (an address) when names repeat.
fn symbol_of(p: &Profile, table: &SymbolTable, f: profile_model::FunctionId) -> Option<usize> {
    let function = p.function(f);
    let raw = p.string(function.system_name.unwrap_or(function.name));
    let address = function
        .label
        .map(|l| u64::from_str_radix(p.string(l).trim_start_matches("0x"), 16).unwrap());
    table
        .symbols()
        .iter()
        .position(|s| s.name == raw.as_bytes() && address.is_none_or(|a| a == s.address))
}

#[test]
fn model_totals_equal_gprof_totals_on_every_fixture_program() {
    for (name, image, gmon) in programs() {
        let (table, sum) = common::load(&image, &[&gmon], common::Flags::default()).unwrap();
        let options = ModelOptions::default();
        let model = gmon_model(&table, &sum, &options);
        let samples = model.find_value_type(ValueKind::SAMPLES).unwrap();

        // Samples: every histogram count, wherever it fell.
        let everything = HistogramTimes::assign(&table, &sum, &vec![true; table.len()]);
        let bins: u64 = sum.histograms().iter().flat_map(|h| &h.bins).sum();
        assert_eq!(model.total(samples) as u64, bins, "{name}");
        let analysis = Analysis::new(table.clone(), &sum);
        let hz = analysis.times.hz;
        assert_eq!(
            model.period().map(|p| p.value),
            (hz > 0).then(|| 1_000_000_000 / i64::from(hz)),
            "{name}"
        );

        // Self samples per symbol. gprof credits a bin of `count` samples `count × w / scale`
        // where `w` is the bin's width in 2-byte units, truncated (`floor(scale)` or
        // `ceil(scale)`), so where no bin straddles two symbols, its self time lies within
        // those factors of the model's samples, and equals them when the scale is integral.
        let scale = analysis.times.scale;
        let straddling = straddling_bins(&table, &sum, scale);
        let totals = model.function_totals(samples);
        let mut unknown = 0;
        let mut model_self = vec![0i64; table.len()];
        for (f, own, _) in totals.iter() {
            match symbol_of(&model, &table, f) {
                Some(i) => model_self[i] += own,
                None => {
                    assert_eq!(model.function_name(f), UNKNOWN_FUNCTION, "{name}");
                    unknown += own;
                }
            }
        }
        let credited: f64 = everything.time.iter().sum();
        if straddling == 0 {
            let (low, high) = (scale.floor() / scale, scale.ceil() / scale);
            // gprof gives the last symbol nothing; the model gives it its bins.
            for (i, s) in table.symbols().iter().enumerate().take(table.len() - 1) {
                let (ours, gprof) = (model_self[i] as f64, everything.time[i]);
                assert!(
                    ours * low - 1e-9 <= gprof && gprof <= ours * high + 1e-9,
                    "{name}: {} has {ours} samples in the model, {gprof} in gprof (scale {scale})",
                    s.name_lossy()
                );
            }
            if scale.fract() == 0.0 {
                assert_eq!(
                    bins as f64 - credited,
                    (unknown + model_self[table.len() - 1]) as f64
                );
            }
        }

        // Calls: the arcs into each function, gprof's calls plus its self calls.
        let mut calls: HashMap<usize, (i64, i64)> = HashMap::new();
        for arc in model.arcs() {
            let caller = symbol_of(&model, &table, model.frame(arc.caller).function);
            let callee = symbol_of(&model, &table, model.frame(arc.callee).function);
            if let (Some(caller), Some(callee)) = (caller, callee) {
                let entry = calls.entry(callee).or_default();
                if caller == callee {
                    entry.1 += arc.count;
                } else {
                    entry.0 += arc.count;
                }
            }
        }
        for (i, s) in table.symbols().iter().enumerate() {
            let (ours, own) = calls.get(&i).copied().unwrap_or_default();
            assert_eq!(
                (ours as u64, own as u64),
                (analysis.calls.calls[i], analysis.calls.self_calls[i]),
                "{name}: calls of {}",
                s.name_lossy()
            );
        }
        eprintln!(
            "{name}: {} samples, {} functions, {} arcs, {straddling} straddling bins",
            model.total(samples),
            model.functions().len(),
            model.arcs().len()
        );
    }
}

/// Non-zero bins whose range crosses the start of a symbol, in bytes (the model's view) or in
/// gprof's truncated 2-byte units.
fn straddling_bins(table: &SymbolTable, sum: &gmon_format::Sum, scale: f64) -> usize {
    let starts: Vec<u64> = table.symbols().iter().map(|s| s.address).collect();
    let crosses =
        |lo: u64, hi: u64, unit: u64| starts.iter().any(|&s| lo < s / unit && s / unit < hi);
    let mut n = 0;
    for h in sum.histograms() {
        let (bins, span) = (h.bins.len() as u128, u128::from(h.high_pc - h.low_pc));
        for (i, &count) in h.bins.iter().enumerate() {
            let lo = h.low_pc + (span * i as u128 / bins) as u64;
            let hi = h.low_pc + (span * (i as u128 + 1) / bins) as u64;
            let lo_unit = h.low_pc / 2 + (scale * i as f64) as u64;
            let hi_unit = h.low_pc / 2 + (scale * (i + 1) as f64) as u64;
            if count > 0 && (crosses(lo, hi, 1) || crosses(lo_unit, hi_unit, 2)) {
                n += 1;
            }
        }
    }
    n
}
