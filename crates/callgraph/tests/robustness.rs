//! Damaged images and profiles must give errors or odd numbers, never panics.

use std::path::Path;

use callgraph::{
    CallCounts, FlatOptions, FlatPrintOptions, FlatProfile, HistogramTimes, SymbolOptions,
    SymbolTable, default_flat_selection, write_flat,
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
