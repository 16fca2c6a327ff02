//! gprof's static call graph (`-c`) for x86 code.

use gmon_format::Sum;

use crate::symbols::SymbolTable;
use crate::text::TextSection;

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

#[cfg(test)]
mod tests {
    use super::*;

    use gmon_format::{AddressSize, Endian, Profile, ReadOptions};

    /// Global functions at the given addresses; `.text` ends at `end`.
    fn table(symbols: &[(&str, u64)], end: u64) -> SymbolTable {
        crate::test_util::functions(symbols, end)
    }

    /// A GNU gmon file (64-bit little endian) with one all-zero histogram over [low, high).
    fn sum_with_histogram(low: u64, high: u64) -> Sum {
        let mut data = b"gmon".to_vec();
        data.extend_from_slice(&1u32.to_le_bytes());
        data.extend_from_slice(&[0; 12]);
        data.push(0);
        data.extend_from_slice(&low.to_le_bytes());
        data.extend_from_slice(&high.to_le_bytes());
        let bins = ((high - low) / 4) as u32;
        data.extend_from_slice(&bins.to_le_bytes());
        data.extend_from_slice(&100u32.to_le_bytes());
        data.extend_from_slice(b"seconds\0\0\0\0\0\0\0\0s");
        data.extend(std::iter::repeat_n(0u8, 2 * bins as usize));
        let options = ReadOptions::new(AddressSize::U64, Endian::Little);
        let mut sum = Sum::new();
        sum.add(&Profile::parse(&data, &options).unwrap()).unwrap();
        sum
    }

    fn call(at: u64, target: u64) -> [u8; 5] {
        let d = target.wrapping_sub(at + 5) as u32;
        let mut b = [0xe8, 0, 0, 0, 0];
        b[1..].copy_from_slice(&d.to_le_bytes());
        b
    }

    #[test]
    fn only_forward_calls_to_symbol_starts_inside_the_histogram() {
        let t = table(
            &[("a", 0x1000), ("b", 0x1010), ("c", 0x1020), ("d", 0x1030)],
            0x1040,
        );
        let mut bytes = vec![0x90u8; 0x40];
        // a calls c and d (forward: found), b calls a (backward: the unsigned displacement
        // misses), c calls one byte into d (not a symbol start).
        bytes[0x00..0x05].copy_from_slice(&call(0x1000, 0x1020));
        bytes[0x08..0x0d].copy_from_slice(&call(0x1008, 0x1030));
        bytes[0x10..0x15].copy_from_slice(&call(0x1010, 0x1000));
        bytes[0x20..0x25].copy_from_slice(&call(0x1020, 0x1031));
        let text = TextSection {
            address: 0x1000,
            bytes,
            size: 0x40,
        };
        let arcs = static_arcs(&t, &text, &sum_with_histogram(0x1000, 0x1040));
        assert_eq!(arcs, [(0, 2), (0, 3)]);
        // A histogram that stops before d: the call to d is not an arc any more.
        let arcs = static_arcs(&t, &text, &sum_with_histogram(0x1000, 0x1030));
        assert_eq!(arcs, [(0, 2)]);
    }

    #[test]
    fn operand_bytes_are_scanned_too() {
        let t = table(&[("a", 0x1000), ("b", 0x1010), ("c", 0x1020)], 0x1030);
        let mut bytes = vec![0x90u8; 0x30];
        // E8 E8 ..: the second E8 (an operand byte of the first call) is a call to c.
        bytes[0x01..0x06].copy_from_slice(&call(0x1001, 0x1020));
        bytes[0x00] = 0xe8;
        let text = TextSection {
            address: 0x1000,
            bytes,
            size: 0x30,
        };
        let arcs = static_arcs(&t, &text, &sum_with_histogram(0x1000, 0x1030));
        assert!(arcs.contains(&(0, 2)), "{arcs:?}");
    }
}
