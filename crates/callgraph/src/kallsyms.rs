//! The kernel's symbols, from a snapshot of `/proc/kallsyms` taken when the profile was
//! recorded (the measurement's `kallsyms.<boot-id>` file).
//!
//! Each line is `ADDRESS TYPE NAME` with an optional `\t[MODULE]`, as the kernel prints it:
//! `ffffffff81000000 T _stext`. Only text symbols (`T`, `t`, `W`, `w`) name code; the rest are
//! read (so that a damaged file is noticed) but left out of the symbol table.

use std::path::Path;

use gmon_format::{AddressSize, Endian};

use crate::error::{Error, Result};
use crate::symbols::{RawSymbol, SymbolTable};

/// One symbol of the snapshot, borrowed from [`KernelSymbols`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSymbol<'a> {
    /// Runtime address.
    pub address: u64,
    /// The type letter (`T`, `t`, `D`, …).
    pub kind: u8,
    /// The name, without the module.
    pub name: &'a [u8],
    /// The module it belongs to (`[ext4]` without brackets); `None` for the kernel image.
    pub module: Option<&'a [u8]>,
}

impl KernelSymbol<'_> {
    /// Whether the symbol names code (`T`, `t`, `W`, `w`).
    pub fn is_text(&self) -> bool {
        is_text(self.kind)
    }
}

/// A parsed kallsyms snapshot, stored compactly: a snapshot has over 100,000 lines (and a
/// hostile one millions), so each symbol takes 16 bytes and its name's bytes in one shared
/// buffer, and each module name is stored once.
#[derive(Debug, Clone, Default)]
pub struct KernelSymbols {
    /// Every symbol, in file order.
    entries: Vec<Entry>,
    /// The names, one after another.
    names: Vec<u8>,
    /// The modules' names, each once; `Entry::module` is an index into it plus one.
    modules: Vec<Vec<u8>>,
}

/// One symbol: its address and where its name is.
#[derive(Debug, Clone, Copy)]
struct Entry {
    address: u64,
    /// Start of the name in `names` (a snapshot is at most [`crate::TEXT_MAX_BYTES`]).
    name_at: u32,
    /// Length of the name: kallsyms names are at most 512 bytes (`KSYM_NAME_LEN`).
    name_len: u16,
    kind: u8,
    /// 0 for the kernel image, else the module's index in `modules` plus one (at most 255
    /// modules keep their own name; more share the last, which only affects the `[module]`
    /// reported, never the symbol table).
    module: u8,
}

/// How far past the last text symbol its extent reaches: kallsyms gives no sizes, and the
/// kernel's last functions are short.
const LAST_SYMBOL_REACH: u64 = 0x1000;

/// The longest line [`KernelSymbols::read`] accepts: the kernel's are under 600 bytes (a
/// 512-byte name, its address, type and module).
const MAX_LINE_BYTES: usize = 64 << 10;

/// Parses a snapshot line by line into [`KernelSymbols`].
#[derive(Default)]
struct Parser {
    out: KernelSymbols,
    /// Lines seen so far.
    lines: usize,
}

impl Parser {
    /// The error for the next line, which is too long to be read.
    fn too_long(&self, path: &Path) -> Error {
        Error::Kallsyms {
            path: path.to_owned(),
            line: self.lines + 1,
            message: "the line is longer than 64 KiB".to_owned(),
        }
    }

    /// Adds one line (without its `\n`).
    fn line(&mut self, path: &Path, line: &[u8]) -> Result<()> {
        self.lines += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let at_line = self.lines;
        let bad = |message: &str| Error::Kallsyms {
            path: path.to_owned(),
            line: at_line,
            message: message.to_owned(),
        };
        let mut fields = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let address = fields.next().ok_or_else(|| bad("empty line"))?;
        if address.is_empty() || address.len() > 16 || !address.iter().all(u8::is_ascii_hexdigit) {
            return Err(bad("the address is not 1 to 16 hex digits"));
        }
        let address = address
            .iter()
            .fold(0u64, |acc, &d| (acc << 4) | u64::from(hex_value(d)));
        let kind = match fields.next() {
            Some([k]) if k.is_ascii_alphabetic() || *k == b'?' => *k,
            Some(_) => return Err(bad("the type is not one letter")),
            None => return Err(bad("no type after the address")),
        };
        let name = fields.next().ok_or_else(|| bad("no name after the type"))?;
        let module = match fields.next() {
            None => None,
            Some(m) if m.len() > 2 && m.starts_with(b"[") && m.ends_with(b"]") => {
                Some(&m[1..m.len() - 1])
            }
            Some(_) => return Err(bad("text after the name is not a [module]")),
        };
        if fields.next().is_some() {
            return Err(bad("text after the module"));
        }
        let out = &mut self.out;
        let (Ok(name_at), Ok(name_len)) =
            (u32::try_from(out.names.len()), u16::try_from(name.len()))
        else {
            return Err(bad(
                "the name is longer than 65535 bytes, or the file than 4 GiB",
            ));
        };
        out.names.extend_from_slice(name);
        let module = match module {
            None => 0,
            Some(m) => match out.modules.iter().position(|k| k == m) {
                Some(i) => (i + 1).min(255) as u8,
                None if out.modules.len() < 255 => {
                    out.modules.push(m.to_vec());
                    out.modules.len() as u8
                }
                None => 255,
            },
        };
        out.entries.push(Entry {
            address,
            name_at,
            name_len,
            kind,
            module,
        });
        Ok(())
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
        let opts = safe_fs::ReadOptions::default().with_max_bytes(crate::input::TEXT_MAX_BYTES);
        let (file, _) = safe_fs::open(path, &opts).map_err(|e| crate::input::error(e, io))?;
        // The size was checked at open; a file that grows meanwhile is read no further.
        let mut file = file.take(crate::input::TEXT_MAX_BYTES);
        let mut parser = Parser::default();
        let mut buf = vec![0u8; 2 * MAX_LINE_BYTES];
        let mut filled = 0;
        loop {
            let n = loop {
                match file.read(&mut buf[filled..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    other => break other.map_err(io)?,
                }
            };
            filled += n;
            let eof = n == 0;
            // The complete lines read so far; at the end of the file, the rest too.
            let end = match buf[..filled].iter().rposition(|&b| b == b'\n') {
                _ if eof => filled,
                Some(last) => last + 1,
                None if filled == buf.len() => {
                    return Err(parser.too_long(path));
                }
                None => continue,
            };
            if end > 0 {
                let lines = &buf[..end];
                for line in lines
                    .strip_suffix(b"\n")
                    .unwrap_or(lines)
                    .split(|&b| b == b'\n')
                {
                    if line.len() > MAX_LINE_BYTES {
                        return Err(parser.too_long(path));
                    }
                    parser.line(path, line)?;
                }
            }
            if eof {
                return Ok(parser.out);
            }
            buf.copy_within(end..filled, 0);
            filled -= end;
        }
    }

    /// Parses snapshot text; `path` is only used in error messages.
    ///
    /// Returns an error naming the line (counted from 1) if a line does not have an address
    /// of at most 16 hex digits, a one-letter type and a name, or has more than a module
    /// after the name.
    pub fn parse(path: &Path, data: &[u8]) -> Result<Self> {
        let mut parser = Parser::default();
        for line in data.split(|&b| b == b'\n') {
            parser.line(path, line)?;
        }
        Ok(parser.out)
    }

    /// How many symbols the snapshot has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every symbol, in file order.
    pub fn symbols(&self) -> impl Iterator<Item = KernelSymbol<'_>> {
        self.entries.iter().map(|e| KernelSymbol {
            address: e.address,
            kind: e.kind,
            name: &self.names[e.name_at as usize..e.name_at as usize + usize::from(e.name_len)],
            module: (e.module > 0).then(|| self.modules[usize::from(e.module) - 1].as_slice()),
        })
    }

    /// Whether the addresses are hidden: every address reads as 0, as when
    /// `kernel.kptr_restrict` kept them from the process that took the snapshot.
    pub fn addresses_hidden(&self) -> bool {
        self.entries.iter().all(|s| s.address == 0)
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
        let KernelSymbols {
            mut entries, names, ..
        } = self;
        let name =
            |e: &Entry| &names[e.name_at as usize..e.name_at as usize + usize::from(e.name_len)];
        entries.retain(|e| is_text(e.kind) && e.address != 0);
        // Globals before locals at one address, each in file order (as the table's stable
        // sort leaves them; `name_at` grows with the line).
        entries.sort_unstable_by_key(|e| (e.address, e.kind.is_ascii_lowercase(), e.name_at));
        let mut kept = 0;
        let mut start = 0;
        while start < entries.len() {
            let address = entries[start].address;
            let len = entries[start..].partition_point(|e| e.address == address);
            let group = &entries[start..start + len];
            let rank = group.iter().map(|e| alias_rank(name(e))).max().unwrap_or(0);
            let mut choice: Option<Entry> = None;
            for e in group.iter().filter(|e| alias_rank(name(e)) == rank) {
                let better = choice.is_none_or(|k| {
                    crate::symbols::function_replaces(
                        (name(e), e.kind.is_ascii_lowercase()),
                        (name(&k), k.kind.is_ascii_lowercase()),
                    )
                });
                if better {
                    choice = Some(*e);
                }
            }
            if let Some(c) = choice {
                entries[kept] = c;
                kept += 1;
            }
            start += len;
        }
        entries.truncate(kept);
        entries.shrink_to_fit();
        let end = entries
            .last()
            .map_or(0, |e| e.address.saturating_add(LAST_SYMBOL_REACH));
        KernelTable {
            entries,
            names,
            end,
        }
    }

    fn raw_text_symbols(&self) -> Vec<RawSymbol> {
        let text = || self.symbols().filter(|s| is_text(s.kind) && s.address != 0);
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
                is_static: s.kind.is_ascii_lowercase(),
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
    entries: Vec<Entry>,
    /// The names of the snapshot (of the kept symbols and of the aliases left out).
    names: Vec<u8>,
    /// The address just past the last symbol's extent.
    end: u64,
}

impl KernelTable {
    /// How many symbols it has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The address of symbol `i`.
    pub fn address(&self, i: usize) -> u64 {
        self.entries[i].address
    }

    /// The name of symbol `i`.
    pub fn name(&self, i: usize) -> &[u8] {
        let e = &self.entries[i];
        &self.names[e.name_at as usize..e.name_at as usize + usize::from(e.name_len)]
    }

    /// Whether symbol `i` is local (`t`, `w`).
    pub fn is_static(&self, i: usize) -> bool {
        self.entries[i].kind.is_ascii_lowercase()
    }

    /// The last address symbol `i` owns: the byte before the next symbol; the last reaches
    /// 4 KiB.
    pub fn end_address(&self, i: usize) -> u64 {
        self.entries
            .get(i + 1)
            .map_or(self.end, |next| next.address)
            .wrapping_sub(1)
    }

    /// The index of the symbol containing `pc`: the last at or below it, if `pc` is not past
    /// its extent.
    pub fn lookup(&self, pc: u64) -> Option<usize> {
        let i = self
            .entries
            .partition_point(|e| e.address <= pc)
            .checked_sub(1)?;
        (pc <= self.end_address(i)).then_some(i)
    }
}

/// Whether a symbol type names code (`T`, `t`, `W`, `w`).
fn is_text(kind: u8) -> bool {
    matches!(kind, b'T' | b't' | b'W' | b'w')
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

fn hex_value(d: u8) -> u8 {
    match d {
        b'0'..=b'9' => d - b'0',
        b'a'..=b'f' => d - b'a' + 10,
        _ => d - b'A' + 10,
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
    fn a_symbol_costs_16_bytes_and_its_name() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        let text: String = (0..10_000)
            .map(|i| format!("ffffffff8100{i:04x} t name_{i}\t[mod{}]\n", i % 3))
            .collect();
        let k = parse(&text).unwrap();
        let bytes = k.entries.len() * 16 + k.names.len();
        assert!(bytes / k.len() <= 32, "{} bytes a symbol", bytes / k.len());
        assert_eq!(k.modules.len(), 3);
        assert_eq!(k.symbols().nth(4).unwrap().module, Some(&b"mod1"[..]));
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
