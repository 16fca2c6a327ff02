//! gprof's line granularity (`-l`, implied by `-s`): line symbols made by walking `.text`
//! (each change of function, file and line starts one), the symbol table finalised again with
//! them, and the `(file:line)` suffixes names take in line mode.

use crate::lines::{NearestLine, SourceInfo, SourceLines};
use crate::symbols::{Origin, RawSymbol, SymbolTable};
use crate::text::TextSection;

/// A symbol table at line granularity and the source position of each of its symbols.
#[derive(Debug, Clone)]
pub struct LineTable {
    /// Function symbols and line symbols, finalised together.
    pub table: SymbolTable,
    /// Source position per symbol of `table`.
    pub sources: Vec<Option<SourceInfo>>,
    /// The line symbols as made, in address order, before the function symbols take the
    /// addresses they share: gprof's debugging trace (`-d128`) lists the same.
    pub line_symbols: Vec<RawSymbol>,
}

/// Builds gprof's line-granularity table from the function table `table`.
///
/// Every byte of `.text` is looked up; whenever (function, file, line) differs from the last
/// line symbol made, a new one starts there, named after the function, not a function itself,
/// and static if the symbol containing it is. The function symbols keep the extents of the first
/// pass, and any whose extent ended before its start (such as `data_start` beyond `.text`) is
/// dropped; at equal addresses the function symbol wins.
pub fn line_table(
    table: &SymbolTable,
    text: &TextSection,
    lines: Option<&SourceLines>,
) -> LineTable {
    let mut made: Vec<(RawSymbol, SourceInfo)> = Vec::new();
    if let Some(lines) = lines {
        let mut last: Option<NearestLine> = None;
        // Only addresses inside line-table sequences can have a line, and only bytes the image
        // holds are walked, so damaged headers cannot make the walk endless.
        let end = text
            .address
            .saturating_add(text.size.min(text.bytes.len() as u64));
        // gprof looks up each symbol's source, then walks `.text` once to count: the lookups
        // that settle names happen before the walk that makes the line symbols.
        for &address in table.read_order() {
            lines.nearest(address);
        }
        lines.settle_names(text.address, end);
        let addresses = lines
            .covered(text.address, end)
            .into_iter()
            .flat_map(|(lo, hi)| lo..hi);
        for address in addresses {
            let Some(p) = lines.nearest(address) else {
                continue;
            };
            if last
                .as_ref()
                .is_some_and(|l| l.line == p.line && l.function == p.function && l.file == p.file)
            {
                continue;
            }
            let is_static = table
                .lookup(address)
                .is_some_and(|i| table.symbols()[i].is_static);
            made.push((
                RawSymbol {
                    name: p.function.clone(),
                    address,
                    is_function: false,
                    is_static,
                },
                SourceInfo {
                    file: p.file.clone(),
                    line: p.line,
                },
            ));
            last = Some(p);
        }
    }
    let text_end = text.address.wrapping_add(text.size);
    let line_symbols: Vec<RawSymbol> = made.iter().map(|(s, _)| s.clone()).collect();
    let (table, origin) = table.refinalise(line_symbols.clone(), text_end);
    let function_sources = symbol_sources_of(lines, &table, &origin);
    let sources = origin
        .iter()
        .zip(function_sources)
        .map(|(o, f)| match o {
            Origin::Line(i) => Some(made[*i].1.clone()),
            Origin::Function => f,
        })
        .collect();
    LineTable {
        table,
        sources,
        line_symbols,
    }
}

fn symbol_sources_of(
    lines: Option<&SourceLines>,
    table: &SymbolTable,
    origin: &[Origin],
) -> Vec<Option<SourceInfo>> {
    table
        .symbols()
        .iter()
        .zip(origin)
        .map(|(s, o)| {
            if matches!(o, Origin::Line(_)) {
                return None;
            }
            let p = lines?.nearest(s.address)?;
            Some(SourceInfo {
                file: p.file,
                line: p.line,
            })
        })
        .collect()
}

/// The ` (FILE:LINE @ ADDR)` suffix gprof appends to names in line mode, or the
/// ` (FILE:LINE)` of `--inline-file-names`; nothing for a symbol without source position.
pub fn name_suffix(
    source: Option<&SourceInfo>,
    address: u64,
    line_mode: bool,
    full_path: bool,
) -> Vec<u8> {
    let Some(s) = source else {
        return Vec::new();
    };
    let mut out = b" (".to_vec();
    out.extend_from_slice(s.file_name(full_path));
    out.extend_from_slice(format!(":{}", s.line).as_bytes());
    if line_mode {
        out.extend_from_slice(format!(" @ {address:x}").as_bytes());
    }
    out.push(b')');
    out
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use gmon_format::{AddressSize, Endian};

    use super::*;

    fn raw(name: &str, address: u64, is_function: bool) -> RawSymbol {
        RawSymbol {
            name: name.as_bytes().to_vec(),
            address,
            is_function,
            is_static: false,
        }
    }

    #[test]
    fn suffixes_name_the_base_name_unless_full_paths_are_asked_for() {
        let s = SourceInfo {
            file: Rc::from(&b"/src/dir/a.c"[..]),
            line: 12,
        };
        assert_eq!(
            name_suffix(Some(&s), 0x11da, true, false),
            b" (a.c:12 @ 11da)"
        );
        assert_eq!(
            name_suffix(Some(&s), 0x11da, false, true),
            b" (/src/dir/a.c:12)"
        );
        assert_eq!(name_suffix(None, 0x11da, true, false), b"");
    }

    #[test]
    fn refinalising_keeps_functions_first_and_drops_symbols_past_text() {
        let t = SymbolTable::from_symbols(
            vec![
                raw("f", 0x100, true),
                raw("g", 0x120, true),
                raw("data_start", 0x900, false),
            ],
            0x140,
            AddressSize::U64,
            Endian::Little,
        );
        // Line symbols: one at f's start (the function wins), two inside f, one inside g.
        let lines = vec![
            raw("f", 0x100, false),
            raw("f", 0x108, false),
            raw("f", 0x110, false),
            raw("g", 0x130, false),
        ];
        let (lt, origin) = t.refinalise(lines, 0x140);
        let names: Vec<(u64, bool)> = lt
            .symbols()
            .iter()
            .map(|s| (s.address, s.is_function))
            .collect();
        assert_eq!(
            names,
            [
                (0x100, true),
                (0x108, false),
                (0x110, false),
                (0x120, true),
                (0x130, false)
            ]
        );
        assert_eq!(
            origin,
            [
                Origin::Function,
                Origin::Line(1),
                Origin::Line(2),
                Origin::Function,
                Origin::Line(3)
            ]
        );
        // An arc's caller inside f is now a line symbol; the function keeps its old extent.
        assert_eq!(lt.lookup(0x112), Some(2));
        assert_eq!(lt.symbols()[0].end_address, 0x11f);
        assert_eq!(lt.symbols()[4].end_address, 0x13f);
    }
}
