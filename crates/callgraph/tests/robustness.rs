//! Damaged images and profiles must give errors or odd numbers, never panics.

use std::path::Path;

use gmon_format::{AddressSize, Endian};

use callgraph::{
    Analysis, CallCounts, FlatOptions, FlatPrintOptions, FlatProfile, HistogramTimes, RawSymbol,
    ReportError, ReportOptions, SymbolOptions, SymbolTable, default_flat_selection, write_flat,
    write_report,
};

fn pipeline(image: &[u8], gmon: &[u8]) {
    let Ok(table) = SymbolTable::parse(Path::new("img"), image, &SymbolOptions::default()) else {
        return;
    };
    let mut sum = gmon_format::Sum::new();
    let Ok(profile) = gmon_format::Profile::parse(gmon, &table.read_options()) else {
        return;
    };
    // A damaged record stops the sum; what was added before it is still analysed.
    let _ = sum.add(&profile);
    let included = default_flat_selection(&table);
    let times = HistogramTimes::assign(&table, &sum, &included);
    let calls = CallCounts::from_arcs(&table, sum.arcs());
    let mut options = FlatOptions::default();
    options.display_unused = true;
    let flat = FlatProfile::new(&table, &times, &calls, &[], &included, &options);
    write_flat(std::io::sink(), &flat, &FlatPrintOptions::default()).expect("sink");
    full_reports(table, &sum);
}

/// The whole analysis and every report layout; only missing-data errors are acceptable.
fn full_reports(table: SymbolTable, sum: &gmon_format::Sum) {
    let analysis = Analysis::new(table, sum);
    for (z, t) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut options = ReportOptions::default();
        options.brief = true;
        options.display_unused = z;
        options.traditional = t;
        match write_report(std::io::sink(), &analysis, &options) {
            Ok(()) | Err(ReportError::Analysis(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
}

/// Thousands of random arcs between random text addresses: dense cycles, self calls, zero and
/// huge counts, and a long chain that a recursive depth-first search would overflow on.
#[test]
fn dense_random_call_graphs_do_not_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cases/leaves-pie");
    let image = std::fs::read(dir.join("leaves")).expect("image");
    let gmon = std::fs::read(dir.join("gmon.out")).expect("gmon");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..20 {
        let table =
            SymbolTable::parse(Path::new("img"), &image, &SymbolOptions::default()).expect("image");
        let (low, high) = (
            table.symbols().first().map_or(0, |s| s.address),
            table.symbols().last().map_or(0, |s| s.address),
        );
        let mut sum = gmon_format::Sum::new();
        let profile = gmon_format::Profile::parse(&gmon, &table.read_options()).expect("gmon");
        sum.add(&profile).expect("gmon");
        let span = (high - low).max(1) + 64;
        for _ in 0..(round * 100) {
            let count = match next() % 4 {
                0 => 0,
                1 => u64::from(u32::MAX),
                _ => next() % 1000,
            };
            let from_pc = low + next() % span;
            let self_pc = if next() % 10 == 0 {
                from_pc
            } else {
                low + next() % span
            };
            sum.add_arc(gmon_format::Arc {
                from_pc,
                self_pc,
                count,
            });
        }
        full_reports(table, &sum);
    }
}

/// A call chain 50,000 functions deep (a recursive depth-first search would overflow the
/// stack), with a 1,000-member cycle at its end.
#[test]
fn deep_chains_and_big_cycles_do_not_overflow() {
    const N: u64 = 50_000;
    let raw = (0..N)
        .map(|i| RawSymbol {
            name: format!("f{i}").into_bytes(),
            address: 0x1000 + 0x10 * i,
            is_function: true,
            is_static: false,
        })
        .collect();
    let table = SymbolTable::from_symbols(raw, 0x1000 + 0x10 * N, AddressSize::U64, Endian::Little);
    let mut sum = gmon_format::Sum::new();
    for i in 0..N - 1 {
        sum.add_arc(gmon_format::Arc {
            from_pc: 0x1000 + 0x10 * i + 4,
            self_pc: 0x1000 + 0x10 * (i + 1) + 4,
            count: i % 7,
        });
    }
    sum.add_arc(gmon_format::Arc {
        from_pc: 0x1000 + 0x10 * (N - 1) + 4,
        self_pc: 0x1000 + 0x10 * (N - 1_000) + 4,
        count: 3,
    });
    full_reports(table, &sum);
}

#[test]
fn corrupted_inputs_do_not_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cases/leaves-pie");
    let image = std::fs::read(dir.join("leaves")).expect("image");
    let gmon = std::fs::read(dir.join("gmon.out")).expect("gmon");
    pipeline(&image, &gmon);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..400 {
        let mut img = image.clone();
        let mut gm = gmon.clone();
        for _ in 0..(next() % 8 + 1) {
            // Mostly the headers and tables at either end of the image, where damage matters.
            let len = img.len() as u64;
            let at = if next() % 2 == 0 {
                next() % 512
            } else {
                len - 1 - next() % 4096.min(len)
            };
            img[at as usize] = next() as u8;
            let at = (next() % gm.len() as u64) as usize;
            gm[at] = next() as u8;
        }
        if next() % 4 == 0 {
            let cut = (next() % img.len() as u64) as usize;
            img.truncate(cut);
        }
        pipeline(&img, &gm);
        pipeline(&image, &gm);
    }
}
