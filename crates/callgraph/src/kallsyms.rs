//! The kernel's symbols, from a snapshot of `/proc/kallsyms` taken when the profile was
//! recorded (the measurement's `kallsyms.<boot-id>` file).
//!
//! Each line is `ADDRESS TYPE NAME` with an optional `\t[MODULE]`, as the kernel prints it:
//! `ffffffff81000000 T _stext`, parsed by gmon-format's one kallsyms parser
//! ([`gmon_format::kallsyms`]) keeping every line. Only text symbols (`T`, `t`, `W`, `w`) name
//! code; the rest are read (so that a damaged file is noticed) but left out of the symbol table.
//! Which name of several at one address is shown, and how far each symbol reaches, are this
//! module's rules (symbolizing is the report's job).

use std::path::Path;

use gmon_format::kallsyms::{Kallsyms, KallsymsOptions};
use gmon_format::{AddressSize, Endian};

use crate::error::{Error, Result};
use crate::symbols::{RawSymbol, SymbolTable};

/// One symbol of the snapshot, borrowed from [`KernelSymbols`].
pub type KernelSymbol<'a> = gmon_format::KallsymsSymbol<'a>;

/// A parsed kallsyms snapshot, every line kept (gmon-format's one kallsyms parser, strict: a
/// damaged snapshot is an error naming the line), stored compactly: a snapshot has over
/// 100,000 lines (and a hostile one millions), so each symbol takes 16 bytes and its name.
#[derive(Debug, Clone, Default)]
pub struct KernelSymbols {
    symbols: Kallsyms,
}

/// How far past the last text symbol its extent reaches: kallsyms gives no sizes, and the
/// kernel's last functions are short.
const LAST_SYMBOL_REACH: u64 = 0x1000;

/// The error of the snapshot at `path` for gmon-format's `error`.
fn error(path: &Path, error: gmon_format::Error) -> Error {
    match error.into_kind() {
        gmon_format::ErrorKind::Kallsyms { line, message } => Error::Kallsyms {
            path: path.to_owned(),
            line,
            message,
        },
        gmon_format::ErrorKind::Io(source) => Error::ReadFile {
            path: path.to_owned(),
            source,
        },
        other => Error::Kallsyms {
            path: path.to_owned(),
            line: 0,
            message: gmon_format::Error::new(other).to_string(),
        },
    }
}

impl KernelSymbols {
    /// Reads the snapshot at `path`, a block at a time: only the parsed symbols stay in
    /// memory, never the file's text (a hostile snapshot of millions of lines would double
    /// the cost).
    ///
    /// Returns an error naming `path` if it cannot be read or a line is malformed or longer
    /// than 64 KiB.
    pub fn read(path: &Path) -> Result<Self> {
        use std::io::Read;
        let io = |source| Error::ReadFile {
            path: path.to_owned(),
            source,
        };
        let opts = safe_fs::ReadOptions::default()
            .with_max_bytes(crate::input::TEXT_MAX_BYTES)
            .with_max_holes(gmon_format::MEASUREMENT_MAX_HOLES);
        let (file, _) = safe_fs::open(path, &opts).map_err(|e| crate::input::error(e, io))?;
        // The size was checked at open; a file that grows meanwhile is read no further.
        let file = file.take(crate::input::TEXT_MAX_BYTES);
        let symbols =
            Kallsyms::read_from(file, &KallsymsOptions::default()).map_err(|e| error(path, e))?;
        Ok(KernelSymbols { symbols })
    }

    /// Parses snapshot text; `path` is only used in error messages.
    ///
    /// Returns an error naming the line (counted from 1) if a line does not have an address
    /// of at most 16 hex digits, a one-letter type and a name, or has more than a module
    /// after the name.
    pub fn parse(path: &Path, data: &[u8]) -> Result<Self> {
        let symbols =
            Kallsyms::parse(data, &KallsymsOptions::default()).map_err(|e| error(path, e))?;
        Ok(KernelSymbols { symbols })
    }

    /// How many symbols the snapshot has.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// Every symbol, in file order.
    pub fn symbols(&self) -> impl Iterator<Item = KernelSymbol<'_>> {
        self.symbols.symbols()
    }

    /// Whether the addresses are hidden: every address reads as 0, as when
    /// `kernel.kptr_restrict` kept them from the process that took the snapshot.
    pub fn addresses_hidden(&self) -> bool {
        self.symbols.addresses_hidden()
    }

    /// The text symbols as a gprof symbol table: global (`T`, `W`) and local (`t`, `w`)
    /// functions, one per address, each reaching up to the next; the last reaches 4 KiB.
    ///
    /// Of several names at one address, the one perf shows is kept: a 64-bit system call's
    /// `__x64_sys_` name rather than its `__ia32_sys_` and `__do_sys_` aliases, and never a
    /// `__pi_` alias (the position-independent copy of a thunk's name); gprof's alias rules
    /// choose among the rest.
    pub fn table(&self) -> SymbolTable {
        Self::table_of(self.raw_text_symbols())
    }

    /// The same table for address lookups, in 16 bytes a symbol plus the names of the
    /// snapshot (a gprof symbol table costs five times that, and a hostile snapshot has
    /// millions of lines): the same symbols, names and extents as [`KernelSymbols::table`].
    pub fn into_lookup(self) -> KernelTable {
        let mut symbols = self.symbols;
        symbols.retain(|s| s.is_text() && s.address != 0);
        // Globals before locals at one address, each in file order (as the table's stable
        // sort leaves them).
        symbols.sort_by_key(|s| (s.address, s.is_local()));
        let mut keep = vec![false; symbols.len()];
        let mut start = 0;
        while start < symbols.len() {
            let address = symbols.symbol(start).address;
            let len = (start..symbols.len())
                .take_while(|&i| symbols.symbol(i).address == address)
                .count();
            let group = start..start + len;
            let rank = group
                .clone()
                .map(|i| alias_rank(symbols.symbol(i).name))
                .max()
                .unwrap_or(0);
            let mut choice: Option<usize> = None;
            for i in group.filter(|&i| alias_rank(symbols.symbol(i).name) == rank) {
                let (e, better) = (symbols.symbol(i), choice);
                let better = better.is_none_or(|k| {
                    let k = symbols.symbol(k);
                    crate::symbols::function_replaces(
                        (e.name, e.is_local()),
                        (k.name, k.is_local()),
                    )
                });
                if better {
                    choice = Some(i);
                }
            }
            if let Some(c) = choice {
                keep[c] = true;
            }
            start += len;
        }
        let mut keep = keep.into_iter();
        symbols.retain(|_| keep.next().unwrap_or(false));
        let end = symbols.len().checked_sub(1).map_or(0, |i| {
            symbols.symbol(i).address.saturating_add(LAST_SYMBOL_REACH)
        });
        KernelTable { symbols, end }
    }

    fn raw_text_symbols(&self) -> Vec<RawSymbol> {
        let text = || self.symbols().filter(|s| s.is_text() && s.address != 0);
        let mut preferred: std::collections::HashMap<u64, u8> = std::collections::HashMap::new();
        for s in text() {
            let p = preferred.entry(s.address).or_default();
            *p = (*p).max(alias_rank(s.name));
        }
        text()
            .filter(|s| alias_rank(s.name) == preferred[&s.address])
            .map(|s| RawSymbol {
                name: s.name.to_vec(),
                address: s.address,
                is_function: true,
                is_static: s.is_local(),
            })
            .collect()
    }

    fn table_of(raw: Vec<RawSymbol>) -> SymbolTable {
        let end = raw
            .iter()
            .map(|s| s.address)
            .max()
            .map_or(0, |a| a.saturating_add(LAST_SYMBOL_REACH));
        SymbolTable::from_symbols(raw, end, AddressSize::U64, Endian::Little)
    }
}

/// The text symbols of a snapshot, sorted by address with one name per address, for address
/// lookups: what [`KernelSymbols::table`] holds, made by [`KernelSymbols::into_lookup`] in 16
/// bytes a symbol plus the names.
#[derive(Debug, Clone, Default)]
pub struct KernelTable {
    /// One per address, ascending.
    symbols: Kallsyms,
    /// The address just past the last symbol's extent.
    end: u64,
}

impl KernelTable {
    /// How many symbols it has.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The address of symbol `i`.
    pub fn address(&self, i: usize) -> u64 {
        self.symbols.symbol(i).address
    }

    /// The name of symbol `i`.
    pub fn name(&self, i: usize) -> &[u8] {
        self.symbols.symbol(i).name
    }

    /// Whether symbol `i` is local (`t`, `w`).
    pub fn is_static(&self, i: usize) -> bool {
        self.symbols.symbol(i).is_local()
    }

    /// The last address symbol `i` owns: the byte before the next symbol; the last reaches
    /// 4 KiB.
    pub fn end_address(&self, i: usize) -> u64 {
        let next = if i + 1 < self.symbols.len() {
            self.symbols.symbol(i + 1).address
        } else {
            self.end
        };
        next.wrapping_sub(1)
    }

    /// The index of the symbol containing `pc`: the last at or below it, if `pc` is not past
    /// its extent.
    pub fn lookup(&self, pc: u64) -> Option<usize> {
        let i = self.symbols.last_at_or_below(pc)?;
        (pc <= self.end_address(i)).then_some(i)
    }
}

/// How much a name is preferred among the names of one address: `__x64_sys_` names above all,
/// `__pi_` aliases below all.
fn alias_rank(name: &[u8]) -> u8 {
    if name.starts_with(b"__x64_") {
        2
    } else if name.starts_with(b"__pi_") {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<KernelSymbols> {
        KernelSymbols::parse(Path::new("kallsyms.1234abcd"), text.as_bytes())
    }

    #[test]
    fn reads_the_kernels_line_format() {
        let k = parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000010 t helper\n\
             ffffffff82000000 D some_data\n\
             ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n\r\n",
        )
        .unwrap();
        assert_eq!(k.len(), 4);
        let symbols: Vec<KernelSymbol<'_>> = k.symbols().collect();
        assert_eq!(symbols[3].module, Some(&b"__builtin__ftrace"[..]));
        assert_eq!(symbols[1].kind, b't');
        assert_eq!(symbols[0].module, None);
        let t = k.table();
        let names: Vec<_> = t.symbols().iter().map(|s| s.name_lossy()).collect();
        assert_eq!(names, ["_stext", "helper", "ftrace_trampoline"]);
        assert_eq!(t.symbols()[1].end_address, 0xffffffffc0200fff);
        assert_eq!(t.symbols()[2].end_address, 0xffffffffc0201fff);
        assert!(t.symbols()[1].is_static && !t.symbols()[0].is_static);
        assert!(!k.addresses_hidden());
    }

    #[test]
    fn bad_lines_are_errors_naming_the_line() {
        for (text, line, what) in [
            (
                "ffffffff81000000 T a\nxyz T b\n",
                2,
                "the address is not 1 to 16 hex digits",
            ),
            ("ffffffff81000000\n", 1, "no type after the address"),
            ("1 T a\n2 TT b\n", 2, "the type is not one letter"),
            ("\n\n1 T\n", 3, "no name after the type"),
            ("1 T a b\n", 1, "text after the name is not a [module]"),
            ("1 T a [m] x\n", 1, "text after the module"),
            (
                "11112222333344445 T a\n",
                1,
                "the address is not 1 to 16 hex digits",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("kallsyms.1234abcd: line {line}: {what}"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn aliases_are_named_as_perf_names_them() {
        let k = parse(
            "ffffffff81377cc0 T __ia32_sys_getpid\n\
             ffffffff81377cc0 T __x64_sys_getpid\n\
             ffffffff8170fc10 t __do_sys_sync\n\
             ffffffff8170fc10 T __ia32_sys_sync\n\
             ffffffff8170fc10 T __x64_sys_sync\n\
             ffffffff82202a40 T __pi___x86_indirect_thunk_rax\n\
             ffffffff82202a40 T __x86_indirect_thunk_rax\n\
             ffffffff82202b00 T __pi_lonely\n",
        )
        .unwrap();
        let t = k.table();
        let names: Vec<_> = t.symbols().iter().map(|s| s.name_lossy()).collect();
        assert_eq!(
            names,
            [
                "__x64_sys_getpid",
                "__x64_sys_sync",
                "__x86_indirect_thunk_rax",
                "__pi_lonely"
            ]
        );
    }

    #[test]
    fn restricted_snapshots_are_noticed() {
        let k = parse("0000000000000000 T _stext\n0000000000000000 t x\n").unwrap();
        assert!(k.addresses_hidden());
        assert!(k.table().is_empty());
    }
}
