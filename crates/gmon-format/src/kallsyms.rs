//! The kernel's symbol list, `/proc/kallsyms`, as the collector snapshots it into a measurement
//! (`kallsyms.<boot-id>`) and as perf keeps it in its build-id cache: the one parser of that
//! format, used by the collector (to classify how a stack entered the kernel) and by the report
//! (to name kernel addresses).
//!
//! Each line is `ADDRESS TYPE NAME` with an optional `\t[MODULE]`, as the kernel prints it:
//! `ffffffff81000000 T _stext`. The two readers want different symbols, so what is kept is an
//! explicit [`KallsymsOptions`] choice, never a reader's private filter.
//!
//! Memory is bounded by the input: each kept symbol costs 16 bytes plus its name's bytes in one
//! shared buffer, each module name is stored once, and [`Kallsyms::read_from`] reads a block at a
//! time, so a hostile snapshot of millions of lines never costs its text twice.

use std::io::Read;

use crate::error::{Error, ErrorKind, Result};

/// The longest line [`Kallsyms::read_from`] accepts: the kernel's are under 600 bytes (a
/// 512-byte name, its address, type and module).
pub const KALLSYMS_MAX_LINE_BYTES: usize = 64 << 10;

/// The prefix of the kernel's function-padding symbols (`__pfx_NAME` marks the NOPs before
/// `NAME` that call-depth tracking and CFI use).
pub const PADDING_PREFIX: &[u8] = b"__pfx_";

/// Which lines of a snapshot [`Kallsyms::parse`] keeps, and how strict it is.
///
/// The default keeps every symbol and refuses a malformed line: what a report reading an
/// archived snapshot wants (damage is noticed). The collector classifying its own machine's
/// symbols uses [`KallsymsOptions::entry_code`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KallsymsOptions {
    /// Keep only text symbols (types `T`, `t`, `W`, `w`). Default is false.
    pub text_only: bool,
    /// Leave out symbols whose address reads as 0 (hidden by `kernel.kptr_restrict`). Default is
    /// false, so that [`Kallsyms::addresses_hidden`] can tell a restricted snapshot.
    pub skip_hidden: bool,
    /// Leave out the padding symbols ([`PADDING_PREFIX`]), so that an address in a function's
    /// padding belongs to the function before it. Default is false.
    pub skip_padding: bool,
    /// Skip a malformed line instead of failing with its number. Default is false.
    pub skip_malformed: bool,
}

impl KallsymsOptions {
    /// The collector's choice: text symbols with real addresses and no padding symbols, and
    /// malformed lines skipped (the live kernel's file is read as it is).
    pub fn entry_code() -> Self {
        KallsymsOptions {
            text_only: true,
            skip_hidden: true,
            skip_padding: true,
            skip_malformed: true,
        }
    }
}

/// One symbol of a snapshot, borrowed from [`Kallsyms`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KallsymsSymbol<'a> {
    /// Runtime address.
    pub address: u64,
    /// The type letter (`T`, `t`, `D`, …).
    pub kind: u8,
    /// The name, without the module.
    pub name: &'a [u8],
    /// The module it belongs to (`[ext4]` without brackets); `None` for the kernel image.
    pub module: Option<&'a [u8]>,
}

impl KallsymsSymbol<'_> {
    /// Whether the symbol names code (`T`, `t`, `W`, `w`).
    pub fn is_text(&self) -> bool {
        is_text_kind(self.kind)
    }

    /// Whether the symbol is local to its file (a lower-case type letter).
    pub fn is_local(&self) -> bool {
        self.kind.is_ascii_lowercase()
    }
}

/// Whether a kallsyms type letter names code (`T`, `t`, `W`, `w`).
pub fn is_text_kind(kind: u8) -> bool {
    matches!(kind, b'T' | b't' | b'W' | b'w')
}

/// A parsed snapshot, stored compactly (see the module's documentation): the kept symbols in
/// file order until [`Kallsyms::sort_by_key`] reorders them.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
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
    /// Start of the name in `names` (names of at most 4 GiB in all are accepted).
    name_at: u32,
    /// Length of the name: kallsyms names are at most 512 bytes (`KSYM_NAME_LEN`).
    name_len: u16,
    kind: u8,
    /// 0 for the kernel image, else the module's index in `modules` plus one (at most 255
    /// modules keep their own name; more share the last, which only affects the `[module]`
    /// reported, never an address's symbol).
    module: u8,
}

/// Parses a snapshot line by line.
struct Parser {
    out: Kallsyms,
    options: KallsymsOptions,
    /// Lines seen so far.
    lines: usize,
}

impl Parser {
    fn new(options: &KallsymsOptions) -> Self {
        Parser {
            out: Kallsyms::default(),
            options: *options,
            lines: 0,
        }
    }

    fn error(line: usize, message: &str) -> Error {
        Error::new(ErrorKind::Kallsyms {
            line,
            message: message.to_owned(),
        })
    }

    /// Adds one line (without its `\n`).
    fn line(&mut self, line: &[u8]) -> Result<()> {
        self.lines += 1;
        match self.fields(line) {
            Ok(None) => Ok(()),
            Ok(Some((address, kind, name, module))) => self.push(address, kind, name, module),
            Err(_) if self.options.skip_malformed => Ok(()),
            Err(message) => Err(Self::error(self.lines, message)),
        }
    }

    /// The fields of a line; `None` for a blank one.
    #[allow(clippy::type_complexity)]
    fn fields<'l>(
        &self,
        line: &'l [u8],
    ) -> std::result::Result<Option<(u64, u8, &'l [u8], Option<&'l [u8]>)>, &'static str> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let mut fields = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let address = fields.next().ok_or("empty line")?;
        if address.is_empty() || address.len() > 16 || !address.iter().all(u8::is_ascii_hexdigit) {
            return Err("the address is not 1 to 16 hex digits");
        }
        let address = address
            .iter()
            .fold(0u64, |acc, &d| (acc << 4) | u64::from(hex_value(d)));
        let kind = match fields.next() {
            Some([k]) if k.is_ascii_alphabetic() || *k == b'?' => *k,
            Some(_) => return Err("the type is not one letter"),
            None => return Err("no type after the address"),
        };
        let name = fields.next().ok_or("no name after the type")?;
        let module = match fields.next() {
            None => None,
            Some(m) if m.len() > 2 && m.starts_with(b"[") && m.ends_with(b"]") => {
                Some(&m[1..m.len() - 1])
            }
            Some(_) => return Err("text after the name is not a [module]"),
        };
        if fields.next().is_some() {
            return Err("text after the module");
        }
        Ok(Some((address, kind, name, module)))
    }

    fn push(&mut self, address: u64, kind: u8, name: &[u8], module: Option<&[u8]>) -> Result<()> {
        let o = &self.options;
        if (o.text_only && !is_text_kind(kind))
            || (o.skip_hidden && address == 0)
            || (o.skip_padding && name.starts_with(PADDING_PREFIX))
        {
            return Ok(());
        }
        let out = &mut self.out;
        let (Ok(name_at), Ok(name_len)) =
            (u32::try_from(out.names.len()), u16::try_from(name.len()))
        else {
            if o.skip_malformed {
                return Ok(());
            }
            return Err(Self::error(
                self.lines,
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

impl Kallsyms {
    /// Parses snapshot text, keeping what `options` asks for.
    ///
    /// Returns an error of kind [`ErrorKind::Kallsyms`] naming the line (counted from 1) if a
    /// line does not have an address of at most 16 hex digits, a one-letter type and a name, or
    /// has more than a module after the name (unless [`KallsymsOptions::skip_malformed`]).
    pub fn parse(data: &[u8], options: &KallsymsOptions) -> Result<Self> {
        let mut parser = Parser::new(options);
        for line in data.split(|&b| b == b'\n') {
            parser.line(line)?;
        }
        Ok(parser.out)
    }

    /// Reads a snapshot from `reader` a block at a time: only the kept symbols stay in memory,
    /// never the text. Bound the reader (`Read::take`) to bound the work.
    ///
    /// Returns what [`Kallsyms::parse`] returns for the same bytes, or an error of kind
    /// [`ErrorKind::Io`] if reading fails, or of kind [`ErrorKind::Kallsyms`] if a line is
    /// longer than [`KALLSYMS_MAX_LINE_BYTES`] (even with `skip_malformed`: the reader does
    /// not read on through a line it cannot hold).
    pub fn read_from(mut reader: impl Read, options: &KallsymsOptions) -> Result<Self> {
        let mut parser = Parser::new(options);
        let too_long =
            |parser: &Parser| Parser::error(parser.lines + 1, "the line is longer than 64 KiB");
        let mut buf = vec![0u8; 2 * KALLSYMS_MAX_LINE_BYTES];
        let mut filled = 0;
        loop {
            let n = loop {
                match reader.read(&mut buf[filled..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    other => break other?,
                }
            };
            filled += n;
            let eof = n == 0;
            // The complete lines read so far; at the end of the file, the rest too.
            let end = match buf[..filled].iter().rposition(|&b| b == b'\n') {
                _ if eof => filled,
                Some(last) => last + 1,
                None if filled == buf.len() => return Err(too_long(&parser)),
                None => continue,
            };
            if end > 0 {
                let lines = &buf[..end];
                for line in lines
                    .strip_suffix(b"\n")
                    .unwrap_or(lines)
                    .split(|&b| b == b'\n')
                {
                    if line.len() > KALLSYMS_MAX_LINE_BYTES {
                        return Err(too_long(&parser));
                    }
                    parser.line(line)?;
                }
            }
            if eof {
                return Ok(parser.out);
            }
            buf.copy_within(end..filled, 0);
            filled -= end;
        }
    }

    /// How many symbols were kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none were.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Symbol `i`.
    ///
    /// Panics if `i` is not below [`Kallsyms::len`].
    pub fn symbol(&self, i: usize) -> KallsymsSymbol<'_> {
        symbol_of(&self.names, &self.modules, &self.entries[i])
    }

    /// Every kept symbol, in file order (or the order [`Kallsyms::sort_by_key`] made).
    pub fn symbols(&self) -> impl Iterator<Item = KallsymsSymbol<'_>> {
        self.entries
            .iter()
            .map(|e| symbol_of(&self.names, &self.modules, e))
    }

    /// Whether the addresses are hidden: every address reads as 0, as when
    /// `kernel.kptr_restrict` kept them from the process that took the snapshot. (With
    /// [`KallsymsOptions::skip_hidden`], such a snapshot is simply empty.)
    pub fn addresses_hidden(&self) -> bool {
        self.entries.iter().all(|s| s.address == 0)
    }

    /// Keeps only the symbols `keep` accepts, visiting each once in order. The names of the
    /// others stay in the name buffer until the whole is dropped.
    pub fn retain(&mut self, mut keep: impl FnMut(KallsymsSymbol<'_>) -> bool) {
        let (names, modules) = (&self.names, &self.modules);
        self.entries.retain(|e| keep(symbol_of(names, modules, e)));
        self.entries.shrink_to_fit();
    }

    /// Sorts the symbols by `key`, keeping file order among equal keys.
    pub fn sort_by_key<K: Ord>(&mut self, mut key: impl FnMut(KallsymsSymbol<'_>) -> K) {
        let (names, modules) = (&self.names, &self.modules);
        self.entries
            .sort_by_key(|e| key(symbol_of(names, modules, e)));
    }

    /// The index of the last symbol whose address is at or below `address`, when the symbols
    /// are sorted by address (see [`Kallsyms::sort_by_key`]): of several at one address, the
    /// last.
    pub fn last_at_or_below(&self, address: u64) -> Option<usize> {
        self.entries
            .partition_point(|e| e.address <= address)
            .checked_sub(1)
    }
}

fn symbol_of<'a>(names: &'a [u8], modules: &'a [Vec<u8>], e: &Entry) -> KallsymsSymbol<'a> {
    KallsymsSymbol {
        address: e.address,
        kind: e.kind,
        name: &names[e.name_at as usize..e.name_at as usize + usize::from(e.name_len)],
        module: (e.module > 0).then(|| modules[usize::from(e.module) - 1].as_slice()),
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

    fn parse(text: &str, options: &KallsymsOptions) -> Result<Kallsyms> {
        Kallsyms::parse(text.as_bytes(), options)
    }

    const MIXED: &str = "0000000000000000 T hidden\n\
                         ffffffff81001000 T __pfx_entry_SYSCALL_64\n\
                         ffffffff81001010 T entry_SYSCALL_64\n\
                         ffffffff81002000 t asm_sysvec_apic_timer_interrupt\n\
                         ffffffff81003000 d some_data\n\
                         not a line at all\n\
                         ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n\r\n";

    fn names(k: &Kallsyms) -> Vec<String> {
        k.symbols()
            .map(|s| String::from_utf8_lossy(s.name).into_owned())
            .collect()
    }

    #[test]
    fn the_options_name_what_each_reader_keeps() {
        let e = parse(MIXED, &KallsymsOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 6: the address is not 1 to 16 hex digits"
        );
        let lenient = KallsymsOptions {
            skip_malformed: true,
            ..KallsymsOptions::default()
        };
        let all = parse(MIXED, &lenient).unwrap();
        assert_eq!(all.len(), 6);
        assert_eq!(all.symbol(5).module, Some(&b"__builtin__ftrace"[..]));
        assert_eq!(all.symbol(4).kind, b'd');
        assert!(!all.addresses_hidden());
        let entry = parse(MIXED, &KallsymsOptions::entry_code()).unwrap();
        assert_eq!(
            names(&entry),
            [
                "entry_SYSCALL_64",
                "asm_sysvec_apic_timer_interrupt",
                "ftrace_trampoline"
            ]
        );
        for (option, left_out) in [
            (
                KallsymsOptions {
                    text_only: true,
                    ..lenient
                },
                "some_data",
            ),
            (
                KallsymsOptions {
                    skip_hidden: true,
                    ..lenient
                },
                "hidden",
            ),
            (
                KallsymsOptions {
                    skip_padding: true,
                    ..lenient
                },
                "__pfx_entry_SYSCALL_64",
            ),
        ] {
            let k = parse(MIXED, &option).unwrap();
            let mut want = names(&all);
            want.retain(|n| n != left_out);
            assert_eq!(names(&k), want, "{option:?}");
        }
    }

    #[test]
    fn a_symbol_costs_16_bytes_and_its_name() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        let text: String = (0..10_000)
            .map(|i| format!("ffffffff8100{i:04x} t name_{i}\t[mod{}]\n", i % 3))
            .collect();
        let k = parse(&text, &KallsymsOptions::default()).unwrap();
        let bytes = k.entries.len() * 16 + k.names.len();
        assert!(bytes / k.len() <= 32, "{} bytes a symbol", bytes / k.len());
        assert_eq!(k.modules.len(), 3);
        assert_eq!(k.symbol(4).module, Some(&b"mod1"[..]));
    }

    #[test]
    fn sorting_keeps_file_order_and_lookups_take_the_last_at_an_address() {
        let mut k = parse(
            "30 T c\n10 T a1\n20 t b\n10 T a2\n",
            &KallsymsOptions::default(),
        )
        .unwrap();
        k.sort_by_key(|s| s.address);
        assert_eq!(names(&k), ["a1", "a2", "b", "c"]);
        assert_eq!(k.last_at_or_below(0x15), Some(1));
        assert_eq!(k.last_at_or_below(0x30), Some(3));
        assert_eq!(k.last_at_or_below(0x0f), None);
        k.retain(|s| !s.is_local());
        assert_eq!(names(&k), ["a1", "a2", "c"]);
    }

    #[test]
    fn reading_a_block_at_a_time_is_parsing_the_whole() {
        let mut text = Vec::new();
        for i in 0..20_000u64 {
            let name = "n".repeat(1 + (i as usize * 7919) % 500);
            text.extend_from_slice(
                format!("{:016x} T {name}_{i}\n", 0xffffffff81000000 + i * 16).as_bytes(),
            );
        }
        let options = KallsymsOptions::default();
        let read = Kallsyms::read_from(&text[..], &options).unwrap();
        let parsed = Kallsyms::parse(&text, &options).unwrap();
        assert!(read.symbols().eq(parsed.symbols()));
        let mut long = b"1 T a\n2 T ".to_vec();
        long.extend(std::iter::repeat_n(b'x', 200 << 10));
        for options in [options, KallsymsOptions::entry_code()] {
            let e = Kallsyms::read_from(&long[..], &options).unwrap_err();
            assert_eq!(e.to_string(), "line 2: the line is longer than 64 KiB");
        }
    }
}
