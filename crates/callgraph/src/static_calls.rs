//! gprof's static call graph (`-c`) for x86 code, and the arcs `gprof -s` writes.

use std::collections::HashMap;

use gmon_format::{Arc, Sum};

use crate::lines::TextSection;
use crate::symbols::SymbolTable;

/// The count-0 arcs gprof's `-c` adds, as (caller, callee) symbol indices: one per `call rel32`
/// (opcode `E8`) whose target is the start of a symbol inside a histogram range, from the
/// symbol holding the call, in the order gprof creates them.
///
/// Each symbol's bytes, from its start to the next symbol's, are scanned where they overlap a
/// histogram record (a symbol spanning two records is scanned in both parts), and every byte
/// position is tried as an opcode (operand bytes too, as gprof does not decode instructions).
/// The displacement is read as an *unsigned* 32-bit
/// number, so calls to lower addresses land 4 GiB too high and are never found. The callee is
/// the symbol starting at the target even if it is a label.
pub fn static_arcs(table: &SymbolTable, text: &TextSection, sum: &Sum) -> Vec<(usize, usize)> {
    let symbols = table.symbols();
    let histograms = sum.histograms();
    let in_histogram = |pc: u64| histograms.iter().any(|h| h.low_pc <= pc && pc < h.high_pc);
    let mut arcs = Vec::new();
    for (i, s) in symbols.iter().enumerate() {
        let end = match symbols.get(i + 1) {
            Some(next) => next.address,
            None => s.end_address.wrapping_add(1),
        };
        for h in histograms
            .iter()
            .filter(|h| s.address < h.high_pc && h.low_pc < end)
        {
            let (low, high) = (s.address.max(h.low_pc), end.min(h.high_pc));
            for pc in low..high {
                if text.byte(pc) != Some(0xe8) {
                    continue;
                }
                let mut displacement = [0u8; 4];
                let mut complete = true;
                for (k, b) in displacement.iter_mut().enumerate() {
                    match text.byte(pc + 1 + k as u64) {
                        Some(v) => *b = v,
                        None => complete = false,
                    }
                }
                if !complete {
                    continue;
                }
                let target = pc
                    .wrapping_add(5)
                    .wrapping_add(u64::from(u32::from_le_bytes(displacement)));
                if !in_histogram(target) {
                    continue;
                }
                if let Some(t) = table.lookup(target)
                    && symbols[t].address == target
                {
                    arcs.push((i, t));
                }
            }
        }
    }
    arcs
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
