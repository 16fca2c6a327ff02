//! gprof's symbol table: which ELF symbols count as functions, which alias wins, and how far
//! each symbol reaches.

use gmon_format::{AddressSize, Endian, ReadOptions};

use crate::sort::glibc_qsort;

/// Which symbols to leave out of the table, mirroring gprof's `-a` and `-D`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SymbolOptions {
    /// Drop every local (static) text symbol, so that its addresses fall to the preceding
    /// kept symbol (`-a`, `--no-static`). Default is false.
    pub no_static: bool,
    /// Drop local text symbols that are not `STT_FUNC`, such as assembler labels
    /// (`-D`, `--ignore-non-functions`). Global labels stay. Default is false.
    pub ignore_non_functions: bool,
    /// Keep the local functions gprof drops as fragments (`f.isra.0`, `f.part.0`, `f.cold`),
    /// each under its own name, as perf names them. gprof gives their addresses to the
    /// preceding symbol, which for a clone placed after an unrelated function (an `.isra`
    /// clone of a C++ template, a `.cold` part in `.text.unlikely`) is another function:
    /// right for reproducing gprof on gmon files, wrong for listings of sampled programs.
    /// Default is false (gprof's table).
    pub keep_fragments: bool,
}

/// One entry of gprof's symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The name as stored in the image (mangled), which is what every sort compares.
    pub name: Vec<u8>,
    /// First address (`st_value`; PIE images are not relocated, as gmon files hold link-time
    /// addresses).
    pub address: u64,
    /// Last address the symbol owns, inclusive: the byte before the next symbol, or the last
    /// byte of `.text` for the last symbol (which can lie below `address`). `st_size` plays no
    /// part.
    pub end_address: u64,
    /// Whether the ELF type is `STT_FUNC`. Labels and objects in code are in the table too;
    /// they receive histogram time but arcs into them are moved to the preceding function.
    pub is_function: bool,
    /// Whether the symbol is local (`t` in `nm`); weak symbols count as global.
    pub is_static: bool,
}

impl Symbol {
    /// The name as text, with invalid UTF-8 replaced; printing uses the raw bytes instead.
    pub fn name_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.name)
    }

    /// The histogram address: gprof works in 2-byte units, so odd addresses round down.
    pub(crate) fn unit_address(&self) -> u64 {
        self.address / 2
    }
}

/// A symbol as read from the image, before sorting and alias resolution.
///
/// Use it with [`SymbolTable::from_symbols`] to build tables for images this crate does not
/// parse itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSymbol {
    /// Name as stored.
    pub name: Vec<u8>,
    /// Address (`st_value`).
    pub address: u64,
    /// Whether the ELF type is `STT_FUNC`.
    pub is_function: bool,
    /// Whether the symbol is local.
    pub is_static: bool,
}

/// The symbols gprof attributes time and calls to, sorted by address, one per address.
#[derive(Debug, Clone)]
pub struct SymbolTable {
    symbols: Vec<Symbol>,
    index: AddressIndex,
    address_size: AddressSize,
    endian: Endian,
    /// Addresses of the symbols read, in `.symtab` order before sorting: gprof looks up their
    /// source files in this order, which orders its annotated-source listing.
    read_order: Vec<u64>,
    /// What the image says about its code, for diagnostics; unknown for built tables.
    pub(crate) image: Option<ImageFacts>,
}

/// Facts about the image that explain a profile that does not fit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageFacts {
    /// `.text`: first address and the address just past it.
    pub text: (u64, u64),
    /// Whether the image is position independent (`ET_DYN`), so a profile taken with
    /// run-time addresses would not match its link-time symbol values.
    pub position_independent: bool,
}

impl SymbolTable {
    /// Builds a table from symbols already read, as gprof finishes its own: sort, keep one
    /// symbol per address, and set each symbol's extent. `text_end` is the address just past
    /// `.text`, which bounds the last symbol.
    pub fn from_symbols(
        raw: Vec<RawSymbol>,
        text_end: u64,
        address_size: AddressSize,
        endian: Endian,
    ) -> Self {
        let entries = raw
            .iter()
            .map(|r| Entry {
                name: &r.name,
                address: r.address,
                is_function: r.is_function,
                is_static: r.is_static,
            })
            .collect();
        Self::from_entries(entries, text_end, address_size, endian)
    }

    pub(crate) fn from_entries(
        entries: Vec<Entry<'_>>,
        text_end: u64,
        address_size: AddressSize,
        endian: Endian,
    ) -> Self {
        let read_order = entries.iter().map(|s| s.address).collect();
        let symbols = finish(entries, text_end);
        SymbolTable {
            index: AddressIndex::new(&symbols),
            symbols,
            address_size,
            endian,
            read_order,
            image: None,
        }
    }

    /// The image's `.text` range and type, when the table was read from an image.
    pub fn image_facts(&self) -> Option<ImageFacts> {
        self.image
    }

    /// The symbols in ascending address order.
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    /// Addresses of the symbols as read from the image, in `.symtab` order (before sorting
    /// and alias resolution).
    pub fn read_order(&self) -> &[u64] {
        &self.read_order
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// Address width of the image, which is also the width of gmon address fields.
    pub fn address_size(&self) -> AddressSize {
        self.address_size
    }

    /// Byte order of the image, which is also the byte order of its gmon files.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// How to read this image's gmon files: its address width and byte order.
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions::new(self.address_size, self.endian)
    }

    /// The index of the symbol containing `pc`, as gprof resolves arc ends.
    ///
    /// That is the last symbol starting at or below `pc`, provided `pc` is not past its
    /// `end_address`; so addresses before the first symbol, and past the end of a last symbol
    /// that lies beyond `.text`, belong to nothing.
    pub fn lookup(&self, pc: u64) -> Option<usize> {
        let i = self.index.last_at_or_below(pc)?;
        (pc <= self.symbols[i].end_address).then_some(i)
    }

    /// The function an arc into `pc` counts for: the containing symbol, or if that is not a
    /// function (a label or an object in code) the nearest function before it.
    pub fn lookup_callee(&self, pc: u64) -> Option<usize> {
        let i = self.lookup(pc)?;
        let f = self.index.function_at_or_before[i];
        (f != NO_FUNCTION).then_some(f as usize)
    }

    /// Indices of the symbols with any of `names`, in address order.
    pub fn indices_named<'a>(&'a self, names: &'a [&[u8]]) -> impl Iterator<Item = usize> + 'a {
        self.symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| names.contains(&s.name.as_slice()))
            .map(|(i, _)| i)
    }
}

/// A symbol while the table is being built, with its name borrowed from the image (or from a
/// [`RawSymbol`]), so only the symbols that are kept get a name of their own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub(crate) name: &'a [u8],
    pub(crate) address: u64,
    pub(crate) is_function: bool,
    pub(crate) is_static: bool,
}

impl<'a> Entry<'a> {
    fn of(s: &'a Symbol) -> Self {
        Entry {
            name: &s.name,
            address: s.address,
            is_function: s.is_function,
            is_static: s.is_static,
        }
    }
}

/// Marks symbols with no function at or before them in [`AddressIndex::function_at_or_before`].
const NO_FUNCTION: u32 = u32::MAX;

/// Address lookups in O(1) for the arcs: big profiles resolve two addresses per arc, and a
/// binary search over the 48-byte symbols misses the cache at every step.
///
/// The address range of the table is cut into about as many equal buckets as there are
/// symbols; `bucket_start[k]` is the number of symbols below bucket `k`, so the search for an
/// address only looks at the symbols of its own bucket.
#[derive(Debug, Clone, Default)]
struct AddressIndex {
    /// Symbol addresses, in table order.
    addresses: Vec<u64>,
    /// Lowest symbol address.
    base: u64,
    /// log2 of the bucket width in bytes.
    shift: u32,
    /// Symbols below each bucket; one more entry than there are buckets.
    bucket_start: Vec<u32>,
    /// Per symbol: the nearest `STT_FUNC` symbol at or before it, or [`NO_FUNCTION`].
    function_at_or_before: Vec<u32>,
}

impl AddressIndex {
    fn new(symbols: &[Symbol]) -> Self {
        let addresses: Vec<u64> = symbols.iter().map(|s| s.address).collect();
        let mut last = NO_FUNCTION;
        let function_at_or_before = symbols
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if s.is_function {
                    last = u32::try_from(i).unwrap_or(NO_FUNCTION);
                }
                last
            })
            .collect();
        let (Some(&base), Some(&top)) = (addresses.first(), addresses.last()) else {
            return AddressIndex::default();
        };
        // Tables beyond 2^32 symbols fall back to one bucket: a plain binary search.
        let buckets = if u32::try_from(addresses.len()).is_ok() {
            addresses.len().next_power_of_two() as u64
        } else {
            1
        };
        let span = top - base;
        let mut shift = 0;
        while shift < 63 && (span >> shift) >= buckets {
            shift += 1;
        }
        let count = ((span >> shift) + 1) as usize;
        let mut bucket_start = Vec::with_capacity(count + 1);
        let mut i = 0usize;
        for k in 0..count as u64 {
            let start = base + (k << shift);
            while i < addresses.len() && addresses[i] < start {
                i += 1;
            }
            bucket_start.push(i as u32);
        }
        // The last bucket reaches `top`: past it lie no symbols.
        bucket_start.push(addresses.len() as u32);
        AddressIndex {
            addresses,
            base,
            shift,
            bucket_start,
            function_at_or_before,
        }
    }

    /// The last symbol whose address is at or below `pc`.
    fn last_at_or_below(&self, pc: u64) -> Option<usize> {
        if pc < self.base || self.addresses.is_empty() {
            return None;
        }
        // Past the last bucket every symbol is below `pc`.
        let buckets = self.bucket_start.len() - 1;
        let k = usize::try_from((pc - self.base) >> self.shift).map_or(buckets, |k| k.min(buckets));
        let lo = self.bucket_start[k] as usize;
        let hi = self
            .bucket_start
            .get(k + 1)
            .map_or(self.addresses.len(), |&x| x as usize);
        let within = self.addresses[lo..hi].partition_point(|&a| a <= pc);
        (lo + within).checked_sub(1)
    }
}

/// Sorts raw symbols and resolves aliases and extents, as gprof finalises its table.
///
/// gprof sorts with glibc's merge sort and this comparator (address, then functions first,
/// then globals first) is consistent, so a stable sort gives its order.
fn finish(mut raw: Vec<Entry<'_>>, text_end: u64) -> Vec<Symbol> {
    raw.sort_by_key(|e| (e.address, !e.is_function, e.is_static));
    let mut kept: Vec<Entry<'_>> = Vec::with_capacity(raw.len());
    for s in raw {
        if let Some(k) = kept.last_mut()
            && k.address == s.address
        {
            if replaces(&s, k) {
                *k = s;
            }
            continue;
        }
        kept.push(s);
    }
    let mut out: Vec<Symbol> = Vec::with_capacity(kept.len());
    for (i, s) in kept.iter().enumerate() {
        let end_address = match kept.get(i + 1) {
            Some(next) => next.address.wrapping_sub(1),
            None => text_end.wrapping_sub(1),
        };
        out.push(Symbol {
            name: s.name.to_vec(),
            address: s.address,
            end_address,
            is_function: s.is_function,
            is_static: s.is_static,
        });
    }
    out
}

/// Where a symbol of a re-finalised table came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A symbol of the function table.
    Function,
    /// The line symbol with this index in the list given.
    Line(usize),
}

impl SymbolTable {
    /// Finalises this table again with `lines` added, as gprof does in line mode; returns the
    /// new table and where each of its symbols came from.
    ///
    /// The symbols of this table keep their extents, so one whose extent ended before its start
    /// is dropped; the others, line symbols included, follow the rules of the first pass.
    pub(crate) fn refinalise(
        &self,
        lines: Vec<RawSymbol>,
        text_end: u64,
    ) -> (SymbolTable, Vec<Origin>) {
        let mut all: Vec<(Symbol, Origin)> = self
            .symbols
            .iter()
            .map(|s| (s.clone(), Origin::Function))
            .collect();
        all.extend(lines.into_iter().enumerate().map(|(i, s)| {
            (
                Symbol {
                    name: s.name,
                    address: s.address,
                    end_address: 0,
                    is_function: s.is_function,
                    is_static: s.is_static,
                },
                Origin::Line(i),
            )
        }));
        glibc_qsort(&mut all, |(a, _), (b, _)| {
            a.address
                .cmp(&b.address)
                .then(b.is_function.cmp(&a.is_function))
                .then(a.is_static.cmp(&b.is_static))
        });
        let mut out: Vec<Symbol> = Vec::with_capacity(all.len());
        let mut origin: Vec<Origin> = Vec::with_capacity(all.len());
        for (s, o) in all {
            if let Some(kept) = out.last_mut()
                && kept.address == s.address
            {
                if replaces(&Entry::of(&s), &Entry::of(kept)) {
                    *kept = s;
                    if let Some(last) = origin.last_mut() {
                        *last = o;
                    }
                }
                continue;
            }
            if s.end_address != 0 && s.end_address < s.address {
                continue;
            }
            if let Some(prev) = out.last_mut()
                && prev.end_address == 0
            {
                prev.end_address = s.address.wrapping_sub(1);
            }
            out.push(s);
            origin.push(o);
        }
        if let Some(last) = out.last_mut() {
            last.end_address = text_end.wrapping_sub(1);
        }
        (
            SymbolTable {
                index: AddressIndex::new(&out),
                symbols: out,
                address_size: self.address_size,
                endian: self.endian,
                read_order: self.read_order.clone(),
                image: self.image,
            },
            origin,
        )
    }
}

/// [`replaces`] for two functions at one address, each a name and whether it is local (the
/// kernel's symbols, which are all functions).
pub(crate) fn function_replaces(new: (&[u8], bool), kept: (&[u8], bool)) -> bool {
    let entry = |(name, is_static)| Entry {
        name,
        address: 0,
        is_function: true,
        is_static,
    };
    replaces(&entry(new), &entry(kept))
}

/// Whether `new` displaces `kept`, a symbol at the same address seen earlier in sorted order.
fn replaces(new: &Entry<'_>, kept: &Entry<'_>) -> bool {
    if !new.is_static && kept.is_static {
        return true;
    }
    if new.is_static != kept.is_static {
        return false;
    }
    if new.is_function != kept.is_function {
        return new.is_function;
    }
    let (n, k) = (new.name, kept.name);
    let n0 = n.first() == Some(&b'_');
    let k0 = k.first() == Some(&b'_');
    if !n0 && k0 {
        return true;
    }
    n0 && k0 && n.get(1) != Some(&b'_') && k.get(1) == Some(&b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::names;

    fn raw(name: &str, address: u64, is_function: bool, is_static: bool) -> RawSymbol {
        RawSymbol {
            name: name.as_bytes().to_vec(),
            address,
            is_function,
            is_static,
        }
    }

    #[test]
    fn aliases_resolve_like_gprof() {
        let t = SymbolTable::from_symbols(
            vec![
                raw("fa_alias", 0x10, true, false),
                raw("fa", 0x10, true, false),
                raw("stat_al", 0x20, true, true),
                raw("glob_al", 0x20, false, false),
                raw("__us2", 0x30, true, false),
                raw("_us", 0x30, true, false),
                raw("fx", 0x40, true, false),
                raw("_fx", 0x40, true, false),
                raw("lab", 0x50, false, false),
                raw("fn", 0x50, true, false),
                raw("_start", 0x0, true, false),
            ],
            0x60,
            AddressSize::U64,
            Endian::Little,
        );
        assert_eq!(
            names(&t),
            ["_start", "fa_alias", "glob_al", "_us", "fx", "fn"]
        );
        // A global label beats a static function, and is then not a function.
        assert!(!t.symbols()[2].is_function);
        let ends: Vec<u64> = t.symbols().iter().map(|s| s.end_address).collect();
        assert_eq!(ends, [0xf, 0x1f, 0x2f, 0x3f, 0x4f, 0x5f]);
    }

    /// The bucketed index finds what a binary search over all symbols finds, for dense
    /// tables, tables with far outliers (address 0, the top of the address space) and every
    /// address around each symbol.
    #[test]
    fn address_index_agrees_with_binary_search() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..60 {
            let n = (next() % 300) as usize;
            let mut raw: Vec<RawSymbol> = (0..n)
                .map(|i| {
                    let address = match (case % 3, next() % 50) {
                        (0, 0) => 0,
                        (1, 0) => u64::MAX - next() % 16,
                        (2, _) => next(),
                        _ => 0x40_0000 + next() % (64 * n as u64 + 1),
                    };
                    raw(&format!("s{i}"), address, next() % 4 != 0, false)
                })
                .collect();
            raw.push(raw_sym_at(0x40_0000));
            let t = SymbolTable::from_symbols(raw, 0x50_0000, AddressSize::U64, Endian::Little);
            let addresses: Vec<u64> = t.symbols().iter().map(|s| s.address).collect();
            let mut probes = vec![0, 1, u64::MAX, u64::MAX - 1];
            for &a in &addresses {
                probes.extend([a.wrapping_sub(1), a, a.wrapping_add(1), a.wrapping_add(7)]);
                probes.push(next());
            }
            for pc in probes {
                let expected = addresses.partition_point(|&a| a <= pc).checked_sub(1);
                assert_eq!(
                    t.index.last_at_or_below(pc),
                    expected,
                    "case {case}, pc {pc:#x}"
                );
                let callee = t
                    .lookup(pc)
                    .and_then(|i| t.symbols()[..=i].iter().rposition(|s| s.is_function));
                assert_eq!(t.lookup_callee(pc), callee, "case {case}, pc {pc:#x}");
            }
        }
    }

    fn raw_sym_at(address: u64) -> RawSymbol {
        raw("anchor", address, true, false)
    }

    #[test]
    fn lookups_follow_extents_and_move_arcs_off_labels() {
        let t = SymbolTable::from_symbols(
            vec![
                raw("f", 0x100, true, false),
                raw("lab", 0x110, false, true),
                raw("data_start", 0x900, false, false),
            ],
            0x120,
            AddressSize::U64,
            Endian::Little,
        );
        assert_eq!(t.lookup(0xff), None);
        assert_eq!(t.lookup(0x100), Some(0));
        assert_eq!(t.lookup(0x115), Some(1));
        assert_eq!(t.lookup(0x8ff), Some(1));
        // The last symbol ends with .text, below its own address: nothing maps to it.
        assert_eq!(t.symbols()[2].end_address, 0x11f);
        assert_eq!(t.lookup(0x900), None);
        assert_eq!(t.lookup_callee(0x115), Some(0));
        assert_eq!(t.lookup_callee(0x105), Some(0));
    }
}
