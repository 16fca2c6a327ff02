//! Hand-made symbol tables for the unit tests: global functions at chosen addresses in a
//! 64-bit little-endian image.

use gmon_format::{AddressSize, Endian};

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
