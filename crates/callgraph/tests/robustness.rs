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

/// The largest single allocation made by a thread while it watches (see [`largest_while`]).
mod watched_allocations {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    pub struct Watching;

    thread_local! {
        static LARGEST: Cell<Option<usize>> = const { Cell::new(None) };
    }

    // Safety: every call is passed on to the system allocator unchanged.
    unsafe impl GlobalAlloc for Watching {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            note(layout.size());
            // Safety: the caller's contract is the system allocator's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            note(layout.size());
            // Safety: as above.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            note(new_size);
            // Safety: as above.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // Safety: as above.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    fn note(size: usize) {
        // `try_with`: a thread's own allocations while its locals are torn down are not watched.
        let _ = LARGEST.try_with(|l| {
            if let Some(n) = l.get() {
                l.set(Some(n.max(size)));
            }
        });
    }

    /// Runs `f` and returns the largest allocation this thread asked for meanwhile.
    pub fn largest_while(f: impl FnOnce()) -> usize {
        LARGEST.with(|l| l.set(Some(0)));
        f();
        LARGEST.with(|l| l.take()).unwrap_or(0)
    }
}

#[global_allocator]
static ALLOCATOR: watched_allocations::Watching = watched_allocations::Watching;

/// A compressed debugging section's header says how large it is once decompressed, and
/// decompression reserved that much before reading any data (the image fuzz target found it in
/// a `.debug_loclists`): the 18 KB fixture with its `.debug_line` claiming 8 GiB had 8 GiB
/// reserved. A claim beyond what the data could expand to is refused; the image's lines are
/// then unknown.
#[test]
fn a_compressed_section_claiming_more_than_its_data_can_hold_is_not_reserved() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/programs/out/callsites-g-gz/callsites");
    let image = std::fs::read(&path).unwrap();
    let (flags, data_at) = {
        use object::{Object, ObjectSection, SectionFlags};
        let file = object::File::parse(&*image).unwrap();
        let s = file.section_by_name(".debug_line").unwrap();
        let SectionFlags::Elf { sh_flags, .. } = s.flags() else {
            panic!("the fixture is an ELF image");
        };
        (sh_flags, s.file_range().unwrap().0)
    };
    // The section is zlib-compressed (SHF_COMPRESSED): its data starts with an Elf64_Chdr.
    assert!(
        flags.contains(object::elf::SHF_COMPRESSED),
        "the fixture's .debug_line is compressed"
    );
    let whole = largest_of(&image);
    assert!(whole < 1 << 20, "{whole} bytes for the fixture itself");
    let mut hostile = image.clone();
    let size_at = data_at as usize + 8;
    hostile[size_at..size_at + 8].copy_from_slice(&(8u64 << 30).to_le_bytes());
    let largest = largest_of(&hostile);
    assert!(largest < 1 << 20, "{largest} bytes reserved");
}

/// Loads `image`'s source lines; the largest allocation that took.
fn largest_of(image: &[u8]) -> usize {
    watched_allocations::largest_while(|| {
        let _ = callgraph::SourceLines::parse(Path::new("a.out"), image);
    })
}
