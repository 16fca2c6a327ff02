//! The synthetic address space: the used symbols of every region laid out one after another,
//! and every sample, arc and stack moved to its symbol's new place (see "How the merge works"
//! in the module docs).

use std::collections::BTreeMap;

use gmon_format::{AddressSize, Endian, Sum, sampled_sum};

use super::state::{Builder, Loc, Region, Side, Table, What};
use crate::symbols::{RawSymbol, SymbolTable};

/// Where the synthetic address space starts.
const SYNTHETIC_BASE: u64 = 0x10000;

/// The largest offset into one symbol the synthetic space keeps; anything further is placed at
/// this offset, so that a damaged object whose symbol spans most of the address space cannot
/// overflow the layout.
const MAX_SYMBOL_SPAN: u64 = 1 << 32;

/// The distinct offsets used inside each symbol, in order. A symbol's samples and arc ends are
/// laid out at their offsets' ranks (one 2-byte bin each), not at the offsets themselves: the
/// listings are per function and only need the offsets apart and in order, and a profile whose
/// bins are spread over a gigabyte of kernel text (1 KiB per bin) would otherwise lay out a
/// gigabyte of synthetic text, and a histogram of half a billion bins for it.
struct OffsetRanks(Vec<(usize, usize, u64)>);

impl OffsetRanks {
    fn new<'a>(locs: impl Iterator<Item = &'a Loc>) -> Self {
        let mut keys: Vec<(usize, usize, u64)> = locs
            .filter_map(|l| Some((l.region, l.symbol?, l.offset.min(MAX_SYMBOL_SPAN))))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        OffsetRanks(keys)
    }

    /// The synthetic offset of `loc` in its symbol: twice the rank of its offset.
    fn offset(&self, loc: &Loc) -> u64 {
        let Some(symbol) = loc.symbol else { return 0 };
        let first = self
            .0
            .partition_point(|k| (k.0, k.1) < (loc.region, symbol));
        let at = self
            .0
            .partition_point(|k| *k < (loc.region, symbol, loc.offset.min(MAX_SYMBOL_SPAN)));
        2 * (at - first) as u64
    }

    /// The largest synthetic offset used in symbol `symbol` of region `region` (0 if none).
    fn span(&self, region: usize, symbol: usize) -> u64 {
        let first = self.0.partition_point(|k| (k.0, k.1) < (region, symbol));
        let end = self.0.partition_point(|k| (k.0, k.1) <= (region, symbol));
        2 * (end - first).saturating_sub(1) as u64
    }
}

impl Builder {
    pub(super) fn table_of(&self, what: &What) -> Option<Table<'_>> {
        match what {
            What::Object(o) => self.objects[*o].as_ref().map(|o| Table::Object(&o.table)),
            What::Kernel(k) => self.kernels[*k].as_ref().map(|(t, _)| Table::Kernel(t)),
            What::Pseudo(_) => None,
        }
    }

    /// Lays the used symbols out and moves every sample, arc and stack to its symbol's place.
    pub(super) fn finish(
        &mut self,
    ) -> (
        SymbolTable,
        Sum,
        Vec<crate::SampledStack>,
        Vec<crate::SampledStack>,
    ) {
        let mut order: Vec<usize> = (0..self.regions.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (&self.regions[a], &self.regions[b]);
            (ra.space, ra.side, ra.first_address, &ra.what).cmp(&(
                rb.space,
                rb.side,
                rb.first_address,
                &rb.what,
            ))
        });
        // Samples sit at their symbol's start; call sites and stack frames keep their place.
        let ranks = OffsetRanks::new(
            self.arcs
                .iter()
                .flat_map(|(f, t, _)| [f, t])
                .chain(self.stacks.iter().flat_map(|(locs, _)| locs))
                .chain(self.off_cpu.iter().flat_map(|(locs, _)| locs)),
        );
        let mut raw = Vec::new();
        let mut cursor = SYNTHETIC_BASE;
        let align = |x: u64, a: u64| x.div_ceil(a) * a;
        for &id in &order {
            let region = &self.regions[id];
            let space = &self.spaces[region.space];
            let prefix = match region.side {
                Side::User => format!("{}u:", space.label),
                Side::Kernel if space.system => format!("{}:", space.label),
                Side::Kernel => format!("{}k:", space.label),
            };
            let label = |name: &[u8], demangle: bool| {
                let mut out = prefix.as_bytes().to_vec();
                match std::str::from_utf8(name) {
                    Ok(text) if demangle => {
                        out.extend_from_slice(demangle::demangle(text).as_bytes())
                    }
                    _ => out.extend_from_slice(name),
                }
                out
            };
            cursor = align(cursor, 0x1000);
            let mut placed = BTreeMap::new();
            let mut pseudo_at = 0;
            if region.pseudo_used || self.options.keep_unused {
                pseudo_at = cursor;
                raw.push(RawSymbol {
                    name: label(&region.pseudo_name, false),
                    address: cursor,
                    is_function: true,
                    is_static: false,
                });
                cursor += 0x10;
            }
            if let Some(table) = self.table_of(&region.what) {
                let mut place = |i: usize, raw: &mut Vec<RawSymbol>| {
                    let span = ranks.span(id, i);
                    let (name, address, is_function) = table.symbol(i);
                    // Keep the symbol's alignment modulo 16, so odd addresses stay odd.
                    let at = align(cursor, 0x10) + (address & 0xf);
                    raw.push(RawSymbol {
                        name: label(name, self.options.demangle),
                        address: at,
                        is_function,
                        // The merged image writes every symbol global (see
                        // write_symbol_image); no listing depends on the binding.
                        is_static: false,
                    });
                    placed.insert(i, at);
                    cursor = at + span + 2;
                };
                if self.options.keep_unused {
                    for i in 0..table.len() {
                        place(i, &mut raw);
                    }
                } else {
                    for &i in region.used.keys() {
                        place(i, &mut raw);
                    }
                }
            }
            let region = &mut self.regions[id];
            region.placed = placed;
            region.pseudo_at = pseudo_at;
        }
        cursor = align(cursor, 0x10);
        raw.push(RawSymbol {
            name: b"[end]".to_vec(),
            address: cursor,
            is_function: false,
            is_static: false,
        });
        let text_end = cursor + 0x10;
        let table = SymbolTable::from_symbols(raw, text_end, AddressSize::U64, Endian::Little);

        let synthetic = |regions: &[Region], loc: &Loc| -> u64 {
            let r = &regions[loc.region];
            match loc.symbol {
                None => r.pseudo_at,
                Some(s) => r.placed.get(&s).copied().unwrap_or(r.pseudo_at) + ranks.offset(loc),
            }
        };
        let hist = std::mem::take(&mut self.hist);
        let mut samples: Vec<(u64, u64)> = hist
            .iter()
            .map(|(&(region, symbol), &count)| {
                let loc = Loc {
                    region,
                    symbol,
                    offset: 0,
                };
                (synthetic(&self.regions, &loc), count)
            })
            .collect();
        drop(hist);
        samples.sort_unstable_by_key(|&(at, _)| at);
        samples.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
        let mut arcs: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for (from, to, count) in &self.arcs {
            let key = (synthetic(&self.regions, from), synthetic(&self.regions, to));
            *arcs.entry(key).or_default() += count;
        }
        let sum = sampled_sum(&samples, arcs, self.unit);
        let placed = |stacks: &[(Vec<Loc>, u64)]| -> Vec<crate::SampledStack> {
            stacks
                .iter()
                .map(|(locs, samples)| crate::SampledStack {
                    frames: locs.iter().map(|l| synthetic(&self.regions, l)).collect(),
                    samples: *samples,
                })
                .collect()
        };
        (table, sum, placed(&self.stacks), placed(&self.off_cpu))
    }
}
