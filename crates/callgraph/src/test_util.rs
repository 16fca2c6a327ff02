//! Hand-made inputs for the unit tests: symbol tables of global functions at chosen addresses
//! in a 64-bit little-endian image, and self times as the histogram would give them.

use gmon_format::{AddressSize, Endian};

use crate::histogram::HistogramTimes;
use crate::symbols::{RawSymbol, SymbolTable};

/// Global functions named and placed as given; the text ends at `end`.
pub(crate) fn functions(symbols: &[(&str, u64)], end: u64) -> SymbolTable {
    let raw = symbols
        .iter()
        .map(|&(name, address)| RawSymbol {
            name: name.as_bytes().to_vec(),
            address,
            is_function: true,
            is_static: false,
        })
        .collect();
    SymbolTable::from_symbols(raw, end, AddressSize::U64, Endian::Little)
}

/// `names` placed `step` bytes apart from 0x1000, in the order given.
pub(crate) fn spaced<'a>(names: &[&'a str], step: u64) -> Vec<(&'a str, u64)> {
    names
        .iter()
        .enumerate()
        .map(|(i, &name)| (name, 0x1000 + step * i as u64))
        .collect()
}

/// The names of `t`'s symbols, in table order.
pub(crate) fn names(t: &SymbolTable) -> Vec<String> {
    t.symbols()
        .iter()
        .map(|s| s.name_lossy().into_owned())
        .collect()
}

/// Global functions `f0`, `f1`, … `f{n-1}`, 0x100 bytes apart from 0x1000; the text ends after
/// the last.
pub(crate) fn numbered(n: usize) -> SymbolTable {
    let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    functions(&spaced(&names, 0x100), 0x1000 + 0x100 * n as u64)
}

/// Self times `time` (in ticks, one per symbol) out of `total_time`, at `hz` samples per
/// second in seconds, with 2-byte bins.
pub(crate) fn times(time: Vec<f64>, total_time: f64, hz: u32) -> HistogramTimes {
    HistogramTimes {
        time,
        total_time,
        hz,
        dimension: b"seconds".to_vec(),
        dimension_abbrev: b's',
        scale: 2.0,
        has_histogram: true,
    }
}
