//! What `gprof -s` writes: the summed profile as `gmon.sum`, its arcs and basic-block counts
//! resolved to the symbols (or, in line mode, source lines) that hold them.

use std::collections::HashMap;

use gmon_format::{Arc, FormatChoice, Sum};

use crate::symbols::SymbolTable;

/// The bytes of `gmon.sum` as `gprof -s` writes them for `sum` read with the image whose
/// symbols are `table`: GNU format unless `format` asks for BSD (`-O b`, `-O 4`), with
/// [`sum_arcs`] and [`sum_basic_blocks`] in place of the summed ones, in the image's address
/// width and byte order.
///
/// Returns an error if an address does not fit the image's address width.
pub fn write_gmon_sum(
    format: FormatChoice,
    table: &SymbolTable,
    sum: &Sum,
) -> gmon_format::Result<Vec<u8>> {
    let out = Vec::new();
    let arcs = sum_arcs(table, sum.arcs());
    let (size, endian) = (table.address_size(), table.endian());
    match format {
        FormatChoice::Bsd | FormatChoice::Bsd44 => {
            let force_44 = format == FormatChoice::Bsd44;
            sum.write_bsd_with_arcs(out, size, endian, force_44, &arcs)
        }
        _ => {
            let blocks = sum_basic_blocks(table, sum.basic_blocks());
            sum.write_gnu_with(out, size, endian, &arcs, &blocks)
        }
    }
}

/// The arcs of `arcs` as `gprof -s` writes them: resolved to (caller, callee) symbols and
/// summed per pair, then listed by caller in address order and, per caller, newest pair first;
/// `from_pc` is the caller's start (a line symbol's in line mode), `self_pc` the callee's.
///
/// Arcs with an end outside every symbol are left out, as gprof drops them when reading.
pub fn sum_arcs(table: &SymbolTable, arcs: &[Arc]) -> Vec<Arc> {
    let symbols = table.symbols();
    let mut pairs: Vec<(usize, usize, u64)> = Vec::new();
    let mut index: HashMap<(usize, usize), usize> = HashMap::new();
    for arc in arcs {
        let (Some(parent), Some(child)) =
            (table.lookup(arc.from_pc), table.lookup_callee(arc.self_pc))
        else {
            continue;
        };
        let next = pairs.len();
        let i = *index.entry((parent, child)).or_insert(next);
        if i == next {
            pairs.push((parent, child, 0));
        }
        pairs[i].2 = pairs[i].2.wrapping_add(arc.count);
    }
    // Newest first within a caller: reverse creation order, then a stable sort by caller.
    pairs.reverse();
    pairs.sort_by_key(|&(parent, _, _)| parent);
    pairs
        .into_iter()
        .map(|(parent, child, count)| Arc {
            from_pc: symbols[parent].address,
            self_pc: symbols[child].address,
            count,
        })
        .collect()
}

/// How many basic-block counts gprof keeps per symbol; later addresses are dropped.
pub const BASIC_BLOCKS_PER_SYMBOL: usize = 10;

/// The basic-block counts of `blocks` as `gprof -s` writes them: each given to the symbol
/// holding its address (dropped if none), at most [`BASIC_BLOCKS_PER_SYMBOL`] addresses per
/// symbol in order of first appearance, listed symbol by symbol in address order.
pub fn sum_basic_blocks(table: &SymbolTable, blocks: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut per_symbol: Vec<Vec<(u64, u64)>> = vec![Vec::new(); table.len()];
    for &(address, count) in blocks {
        let Some(s) = table.lookup(address) else {
            continue;
        };
        let slots = &mut per_symbol[s];
        if let Some(slot) = slots.iter_mut().find(|(a, _)| *a == address) {
            slot.1 = slot.1.wrapping_add(count);
        } else if slots.len() < BASIC_BLOCKS_PER_SYMBOL {
            slots.push((address, count));
        }
    }
    per_symbol.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Global functions at the given addresses; `.text` ends at `end`.
    fn table(symbols: &[(&str, u64)], end: u64) -> SymbolTable {
        crate::test_util::functions(symbols, end)
    }

    #[test]
    fn summed_arcs_go_by_caller_then_newest_first() {
        let t = table(&[("a", 0x1000), ("b", 0x1010), ("c", 0x1020)], 0x1030);
        let arc = |from_pc, self_pc, count| Arc {
            from_pc,
            self_pc,
            count,
        };
        let arcs = [
            arc(0x1015, 0x1000, 1),
            arc(0x1004, 0x1012, 2),
            arc(0x1008, 0x1024, 3),
            arc(0x1009, 0x1013, 4), // a -> b again: merged into the first a -> b
            arc(0x0fff, 0x1000, 5), // caller outside every symbol: dropped
        ];
        let summed = sum_arcs(&t, &arcs);
        assert_eq!(
            summed,
            [
                arc(0x1000, 0x1020, 3),
                arc(0x1000, 0x1010, 6),
                arc(0x1010, 0x1000, 1)
            ]
        );
    }

    #[test]
    fn basic_blocks_keep_ten_addresses_per_symbol_in_symbol_order() {
        let t = table(&[("a", 0x1000), ("b", 0x1100)], 0x1200);
        let mut blocks: Vec<(u64, u64)> = (0..12).map(|i| (0x1100 + 2 * i, i + 1)).collect();
        blocks.push((0x1004, 7));
        blocks.push((0x0100, 9)); // outside every symbol
        let kept = sum_basic_blocks(&t, &blocks);
        assert_eq!(kept.len(), 11);
        assert_eq!(kept[0], (0x1004, 7));
        assert_eq!(kept[10], (0x1112, 10));
    }
}
