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
        image: elf_image(&names, &address, TEXT, text_end),
        gmon,
    }
}

/// A minimal 64-bit little-endian ELF executable whose `.symtab` holds one global `STT_FUNC`
/// symbol per name, at `addresses`, in a `.text` section spanning `text..text_end` (which
/// has no bytes in the file: only its addresses matter to a profiler).
fn elf_image(names: &[String], addresses: &[u64], text: u64, text_end: u64) -> Vec<u8> {
    const EHDR: usize = 64;
    const SHDR: usize = 64;
    const SYM: usize = 24;
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; SYM];
    for (name, &address) in names.iter().zip(addresses) {
        let offset = strtab.len() as u32;
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
        symtab.extend_from_slice(&offset.to_le_bytes());
        symtab.push(0x12); // STB_GLOBAL, STT_FUNC
        symtab.push(0);
        symtab.extend_from_slice(&1u16.to_le_bytes()); // .text
        symtab.extend_from_slice(&address.to_le_bytes());
        symtab.extend_from_slice(&16u64.to_le_bytes());
    }
    let shstrtab = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";
    let symtab_at = EHDR;
    let strtab_at = symtab_at + symtab.len();
    let shstrtab_at = strtab_at + strtab.len();
    let sections_at = (shstrtab_at + shstrtab.len()).next_multiple_of(8);

    let mut out = Vec::with_capacity(sections_at + 5 * SHDR);
    out.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    out.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    out.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&text.to_le_bytes()); // e_entry
    out.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
    out.extend_from_slice(&(sections_at as u64).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for v in [EHDR as u16, 56, 0, SHDR as u16, 5, 4] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&symtab);
    out.extend_from_slice(&strtab);
    out.extend_from_slice(shstrtab);
    out.resize(sections_at, 0);
    // name, type, flags, addr, offset, size, link, info, align, entsize
    type SectionHeader = (u32, u32, u64, u64, usize, usize, u32, u32, u64, u64);
    let sections: [SectionHeader; 5] = [
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (1, 8, 6, text, 0, (text_end - text) as usize, 0, 0, 16, 0), // NOBITS, ALLOC|EXEC
        (7, 2, 0, 0, symtab_at, symtab.len(), 3, 1, 8, SYM as u64),
        (15, 3, 0, 0, strtab_at, strtab.len(), 0, 0, 1, 0),
        (23, 3, 0, 0, shstrtab_at, shstrtab.len(), 0, 0, 1, 0),
    ];
    for (name, kind, flags, addr, offset, size, link, info, align, entsize) in sections {
        out.extend_from_slice(&name.to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&addr.to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        out.extend_from_slice(&(size as u64).to_le_bytes());
        out.extend_from_slice(&link.to_le_bytes());
        out.extend_from_slice(&info.to_le_bytes());
        out.extend_from_slice(&align.to_le_bytes());
        out.extend_from_slice(&entsize.to_le_bytes());
    }
    out
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
