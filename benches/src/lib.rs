//! Inputs for the benchmarks, generated rather than committed.

pub mod profiles;

use gmon_format::{AddressSize, Arc, Endian, Header, HistogramHeader, Layout, SECONDS, Writer};

/// A GNU gmon file of about `target_bytes`: `bin_share` of it histogram bins, the rest arcs.
/// Half and half is what a large profile from a big program looks like; all arcs is the
/// slowest case to read, since arcs are small records.
pub fn large_gnu_profile(target_bytes: usize, bin_share: f64) -> Vec<u8> {
    let layout = Layout::gnu(AddressSize::U64, Endian::Little);
    let mut w = Writer::new(Vec::with_capacity(target_bytes + 64), layout);
    w.header(&Header::Gnu {
        version: 1,
        spare: [0; 12],
    })
    .expect("header");
    let bins = ((target_bytes as f64 * bin_share) as usize / 2).max(1);
    let header = HistogramHeader {
        low_pc: 0x1000,
        high_pc: 0x1000 + 4 * bins as u64,
        prof_rate: 100,
        dimension: SECONDS.0,
        dimension_abbrev: SECONDS.1,
    };
    // A deterministic, irregular pattern so nothing is trivially compressible by the branch
    // predictor.
    let mut x: u32 = 0x9e37_79b9;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let values: Vec<u16> = (0..bins).map(|_| (next() % 7) as u16).collect();
    w.histogram(&header, values.into_iter()).expect("histogram");
    let arcs = (target_bytes - 2 * bins) / 21;
    for i in 0..arcs as u64 {
        let r = u64::from(next());
        let arc = Arc {
            from_pc: 0x1000 + (r % (4 * bins as u64)),
            self_pc: 0x1000 + i * 16,
            count: r % 1000,
        };
        w.arc(&arc).expect("arc");
    }
    w.finish().expect("finish")
}

/// A profiled program of `functions` functions as `gcc -pg` would leave it: an ELF image
/// with their symbols and a gmon.out with a histogram over their code and their call arcs.
///
/// The call structure follows `benches/gen-program.py`: a call tree (each function called by
/// a random one among the 64 before it), a random DAG of extra calls (one per function on
/// average) and `functions / 200` back edges to near ancestors, which make small cycles.
/// Sizes, sample counts and call counts are pseudo-random but fixed by `seed`.
#[derive(Debug, Clone)]
pub struct GeneratedProgram {
    /// A 64-bit little-endian ELF image: `.text`, `.symtab`, `.strtab`, `.shstrtab`.
    pub image: Vec<u8>,
    /// A GNU gmon.out for it.
    pub gmon: Vec<u8>,
}

/// Generates a [`GeneratedProgram`] (see there).
pub fn generated_program(functions: usize, seed: u64) -> GeneratedProgram {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if n == 0 { 0 } else { x % n }
    };
    const TEXT: u64 = 0x40_1000;
    let mut address = Vec::with_capacity(functions);
    let mut at = TEXT;
    for _ in 0..functions {
        address.push(at);
        at += 32 + 16 * next(12);
    }
    let text_end = at;

    // Calls: tree edges, DAG edges, back edges; `from_pc` at a few call sites per caller.
    let mut parent = vec![0usize; functions];
    let mut arcs = Vec::new();
    let call = |from: usize, to: usize, count: u64, site: u64| Arc {
        from_pc: address[from] + 8 + 4 * site,
        self_pc: address[to] + 4,
        count,
    };
    for (i, p) in parent.iter_mut().enumerate().skip(1) {
        *p = i - 1 - next(64.min(i as u64)) as usize;
        arcs.push(call(*p, i, 20 + next(3), 0));
    }
    for i in 0..functions.saturating_sub(1) {
        for site in 0..[0, 0, 1, 1, 2, 2][next(6) as usize] {
            let to = i + 1 + next((functions - i - 1) as u64) as usize;
            arcs.push(call(i, to, 1 + next(3), 1 + site));
        }
    }
    for _ in 0..functions / 200 {
        let i = 1 + next(functions as u64 - 1) as usize;
        let mut j = i;
        for _ in 0..1 + next(3) {
            j = parent[j];
        }
        arcs.push(call(i, j, 1 + next(3), 3));
    }

    // Histogram: one bin per 4 bytes of text, as glibc lays it out; each function gets a few
    // samples in a few of its bins.
    let bins = ((text_end - TEXT) / 4) as usize;
    let mut counts = vec![0u16; bins];
    for &a in &address {
        for _ in 0..next(4) {
            let bin = ((a - TEXT) / 4 + next(8)) as usize;
            if let Some(c) = counts.get_mut(bin) {
                *c = c.saturating_add(1 + next(30) as u16);
            }
        }
    }
    let layout = Layout::gnu(AddressSize::U64, Endian::Little);
    let mut w = Writer::new(Vec::new(), layout);
    w.header(&Header::Gnu {
        version: 1,
        spare: [0; 12],
    })
    .expect("header");
    let header = HistogramHeader {
        low_pc: TEXT,
        high_pc: TEXT + 4 * bins as u64,
        prof_rate: 100,
        dimension: SECONDS.0,
        dimension_abbrev: SECONDS.1,
    };
    w.histogram(&header, counts.into_iter()).expect("histogram");
    for arc in &arcs {
        w.arc(arc).expect("arc");
    }
    let gmon = w.finish().expect("finish");
    let names: Vec<String> = (0..functions).map(|i| format!("f{i}")).collect();
    GeneratedProgram {
        image: elf_image(&names, &address, text_end),
        gmon,
    }
}

/// A 64-bit little-endian ELF executable whose `.symtab` holds one global `STT_FUNC` symbol per
/// name, at `addresses`, in a `.text` section ending at `text_end` (which has no bytes in the
/// file: only its addresses matter to a profiler), written by pkgprof's one ELF writer.
fn elf_image(names: &[String], addresses: &[u64], text_end: u64) -> Vec<u8> {
    let symbols = names
        .iter()
        .zip(addresses)
        .map(|(name, &address)| callgraph::RawSymbol {
            name: name.as_bytes().to_vec(),
            address,
            is_function: true,
            is_static: false,
        })
        .collect();
    let table = callgraph::SymbolTable::from_symbols(
        symbols,
        text_end,
        gmon_format::AddressSize::U64,
        gmon_format::Endian::Little,
    );
    let mut image = Vec::new();
    callgraph::write_symbol_image(&mut image, &table).expect("writing to memory");
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated image and profile are what a profiler reads: every function is a
    /// symbol at its address, the profile holds one histogram and the arcs, and the back
    /// edges make cycles.
    #[test]
    fn generated_program_is_readable() {
        let p = generated_program(2000, 3);
        let path = std::path::Path::new("generated");
        let options = callgraph::SymbolOptions::default();
        let table = callgraph::SymbolTable::parse(path, &p.image, &options).expect("image");
        assert_eq!(table.len(), 2000);
        assert_eq!(table.symbols()[0].address, 0x40_1000);
        assert_eq!(table.symbols()[1999].name, b"f1999");
        let profile = gmon_format::Profile::parse(&p.gmon, &table.read_options()).expect("gmon");
        let summary = profile.summary().expect("summary");
        assert_eq!(summary.histograms, 1);
        assert!(summary.arcs >= 1999, "{} arcs", summary.arcs);
        let mut sum = gmon_format::Sum::new();
        sum.add(&profile).expect("sum");
        let analysis = callgraph::Analysis::new(table, &sum);
        let graph = &analysis.graph;
        assert!(graph.nodes.len() > graph.symbol_count, "no cycles");
        assert!(analysis.times.total_time > 0.0);
    }
}
