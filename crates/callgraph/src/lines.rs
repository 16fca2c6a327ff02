//! Source lines from DWARF, looked up as gprof's BFD does.
//!
//! gprof asks BFD for the "nearest line" of addresses: the source file, line and function of
//! each symbol's start (for the `(file)` and `(file:line)` name suffixes), and of every byte of
//! `.text` in line mode, where each change of (function, file, line) starts a *line symbol*
//! (made in [`crate::line_symbols`]). This module reads the DWARF line tables and function
//! names and answers those lookups with BFD's quirks.

use std::borrow::Cow;
use std::path::Path;
use std::rc::Rc;

use gimli::Reader as _;
use object::{Object, ObjectSection, ObjectSymbol};

use crate::error::{Error, Result};
use crate::symbols::SymbolTable;

type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// The most a compressed debugging section may claim to grow: deflate's own limit (about
/// 1,032 times); DWARF compresses to a fraction of that.
const MAX_EXPANSION: u64 = 1032;

/// A debugging section's bytes, decompressed if it is compressed; `None` when it cannot be
/// read. Decompression allocates the size the section's header claims before reading a byte
/// of the data, so a claim the data could not fill (an 8 GiB `.debug_line` in an 18 KB file)
/// is refused rather than reserved.
fn decompressed<'d>(section: &object::Section<'d, '_>) -> Option<Cow<'d, [u8]>> {
    // An uncompressed section's size is its data's, always within the bound.
    let c = section.compressed_data().ok()?;
    if c.uncompressed_size > (c.data.len() as u64).saturating_mul(MAX_EXPANSION) {
        return None;
    }
    c.decompress().ok()
}

/// Where an address comes from in the source, as BFD's nearest-line lookup reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearestLine {
    /// The function's name in the debugging information (the innermost inlined one).
    pub function: Vec<u8>,
    /// The full path of the source file, as the line table builds it.
    pub file: Rc<[u8]>,
    /// The line number, never 0.
    pub line: u64,
}

/// The DWARF line tables and functions of an image.
pub struct SourceLines {
    context: addr2line::Context<Reader>,
    /// Line-table sequences, sorted by start address.
    sequences: Vec<Sequence>,
    /// File paths handed out so far, so equal paths share one allocation.
    files: std::cell::RefCell<Vec<Rc<[u8]>>>,
    /// The ELF symbols that can name a function where DWARF has a line but no function.
    elf_functions: ElfFunctions,
    /// DWARF functions of C++ (and other mangling languages') units that have no linkage name.
    unlinked: UnlinkedFunctions,
    /// Addresses BFD's table of units misses, where every lookup fails.
    lost: LostBlockEnds,
}

impl std::fmt::Debug for SourceLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceLines").finish_non_exhaustive()
    }
}

impl SourceLines {
    /// Loads the DWARF sections of the ELF image `data`; `path` only names it in errors.
    ///
    /// Returns `None` if the image has no line information, and an error if the image or its
    /// DWARF cannot be parsed.
    pub fn parse(path: &Path, data: &[u8]) -> Result<Option<Self>> {
        let file = object::File::parse(data).map_err(|e| Error::not_executable(path, e))?;
        if file.section_by_name(".debug_line").is_none() {
            return Ok(None);
        }
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        // Debugging sections may be compressed (`gcc -gz`, `objcopy --compress-debug-sections`:
        // zlib or zstd in SHF_COMPRESSED sections, or GNU's `.zdebug_*`, which `object` finds
        // under the `.debug_*` name); BFD reads them all, so gprof's lines and files are there.
        let load = |id: gimli::SectionId| -> std::result::Result<Reader, gimli::Error> {
            let bytes: Cow<'_, [u8]> = file
                .section_by_name(id.name())
                .and_then(|s| decompressed(&s))
                .unwrap_or_default();
            Ok(gimli::EndianRcSlice::new(Rc::from(&*bytes), endian))
        };
        let dwarf_error = |source| Error::Dwarf {
            path: path.to_owned(),
            source,
        };
        let dwarf = gimli::Dwarf::load(load).map_err(dwarf_error)?;
        let mut files = Vec::new();
        let mut sequences = read_line_tables(&dwarf, &mut files).map_err(dwarf_error)?;
        sequences.sort_by_key(|s| s.start);
        let unlinked = UnlinkedFunctions::read(&dwarf).map_err(dwarf_error)?;
        let lost = LostBlockEnds::read(&dwarf);
        let context = addr2line::Context::from_dwarf(dwarf).map_err(dwarf_error)?;
        Ok(Some(SourceLines {
            context,
            sequences,
            files: std::cell::RefCell::new(files),
            elf_functions: ElfFunctions::new(&file),
            unlinked,
            lost,
        }))
    }

    /// The source position of `address`: its line-table row, and the function containing it.
    ///
    /// The function is the innermost DWARF subprogram or inlined subroutine covering the
    /// address. Where there is none but the line table has a row — a function GCC described
    /// only by a declaration, or the alignment padding after a function — BFD names the
    /// nearest ELF symbol at or below the address instead (from `.symtab`), and so does
    /// this.
    ///
    /// Returns `None` when the address has no line, no file or no function, or its line is 0,
    /// as gprof then records nothing; also where BFD 2.40 finds no unit for the address
    /// although one covers it: the last byte of a 256-byte block that more than 16 unit
    /// ranges reach into.
    pub fn nearest(&self, address: u64) -> Option<NearestLine> {
        if self.lost.contains(address) {
            // BFD then names the ELF symbol below the address, with no line: gprof records
            // nothing, but the symbol lookup is remembered as any other.
            self.elf_functions.nearest(address);
            return None;
        }
        // BFD looks the function up (settling its name) even where there is no line.
        let unlinked = self.unlinked.name_at(address, &self.elf_functions);
        let (file, line) = self.line_of(address)?;
        let function = match unlinked {
            Some(name) => name?,
            None => self.function_at(address)?,
        };
        Some(NearestLine {
            function,
            file,
            line,
        })
    }

    /// Settles the names of the functions [`UnlinkedFunctions`] describes as gprof's first
    /// line-mode pass does, visiting `.text` in address order, so that later lookups give
    /// the names of its second pass, the one that makes the line symbols.
    pub(crate) fn settle_names(&self, low: u64, high: u64) {
        self.unlinked
            .settle(low, high, &self.elf_functions, &self.lost);
    }

    /// The innermost DWARF function at `address`, else the ELF symbol BFD names instead.
    fn function_at(&self, address: u64) -> Option<Vec<u8>> {
        let mut function = None;
        if let Ok(mut frames) = self.context.find_frames(address).skip_all_loads() {
            while let Ok(Some(frame)) = frames.next() {
                if let Some(f) = frame.function {
                    function = f.raw_name().ok().map(|n| n.into_owned().into_bytes());
                    break;
                }
            }
        }
        match function {
            Some(f) => Some(f),
            None => Some(self.elf_functions.containing(address)?.to_vec()),
        }
    }

    /// The parts of [`low`, `high`) that line-table sequences cover, in address order and
    /// without overlaps.
    pub(crate) fn covered(&self, low: u64, high: u64) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for s in &self.sequences {
            let (lo, hi) = (s.start.max(low), s.end.min(high));
            if lo >= hi {
                continue;
            }
            match out.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        out
    }

    /// The file and line of the row covering `address`: in the sequence holding it, the last
    /// row at or below it.
    fn line_of(&self, address: u64) -> Option<(Rc<[u8]>, u64)> {
        let i = self.sequences.partition_point(|s| s.start <= address);
        let below = &self.sequences[..i];
        let j = below.iter().rposition(|s| address < s.end)?;
        // Code that several units describe (a COMDAT function whose discarded copies' line
        // programs the linker pointed at the kept one) is read from the first such unit, as
        // BFD takes the first unit that holds the address.
        let first = below[..j]
            .iter()
            .rposition(|s| s.start != below[j].start)
            .map_or(0, |k| k + 1);
        let seq = below[first..=j]
            .iter()
            .find(|s| address < s.end)
            .unwrap_or(&below[j]);
        let r = seq.rows.partition_point(|r| r.address <= address);
        let row = seq.rows.get(r.checked_sub(1)?)?;
        if row.line == 0 {
            return None;
        }
        let files = self.files.borrow();
        Some((files.get(row.file)?.clone(), row.line))
    }
}

/// The ELF symbols BFD names a function after when DWARF knows none at an address.
///
/// BFD considers every `.symtab` symbol defined in `.text` except section, file, object and
/// thread-local symbols and hidden local untyped symbols of size 0 (annotation markers), each
/// reaching `st_size` bytes (at least 1). The answer for an address is the symbol starting
/// closest at or below it, the larger one where two start at the same address, the first in
/// `.symtab` order where they also have the same size. BFD keeps its last answer and gives it
/// again, without looking, for any address inside that symbol's size — which matters only where
/// symbols nest; the cache here does the same.
#[derive(Debug, Default)]
struct ElfFunctions {
    /// One candidate per start address (the one BFD would pick there), sorted by address.
    starts: Vec<ElfFunction>,
    /// The last answer: index into `starts`.
    last: std::cell::Cell<Option<usize>>,
}

#[derive(Debug)]
struct ElfFunction {
    address: u64,
    size: u64,
    name: Vec<u8>,
}

impl ElfFunctions {
    fn new(file: &object::File<'_>) -> Self {
        let Some(text) = file.section_by_name(".text").map(|s| s.index()) else {
            return Self::default();
        };
        let mut starts: Vec<ElfFunction> = Vec::new();
        for sym in file.symbols() {
            if sym.section_index() != Some(text) {
                continue;
            }
            let object::SymbolFlags::Elf { st_info, st_other } = sym.flags() else {
                continue;
            };
            let st_type = st_info.st_type();
            if matches!(
                st_type,
                object::elf::STT_SECTION
                    | object::elf::STT_FILE
                    | object::elf::STT_OBJECT
                    | object::elf::STT_COMMON
                    | object::elf::STT_TLS
            ) {
                continue;
            }
            let local = st_info.st_bind() == object::elf::STB_LOCAL;
            let hidden = st_other.visibility() == object::elf::STV_HIDDEN;
            if sym.size() == 0 && local && hidden && st_type == object::elf::STT_NOTYPE {
                continue;
            }
            starts.push(ElfFunction {
                address: sym.address(),
                size: sym.size().max(1),
                name: sym.name_bytes().unwrap_or_default().to_vec(),
            });
        }
        Self::from_candidates(starts)
    }

    /// Keeps, per start address, the candidate BFD would pick there (`starts` in `.symtab`
    /// order).
    fn from_candidates(mut starts: Vec<ElfFunction>) -> Self {
        // Stable: among equal addresses and sizes the first in `.symtab` order stays first.
        starts.sort_by(|a, b| a.address.cmp(&b.address).then(b.size.cmp(&a.size)));
        starts.dedup_by_key(|f| f.address);
        ElfFunctions {
            starts,
            last: std::cell::Cell::new(None),
        }
    }

    /// The name BFD gives the function at `address`, if any symbol starts at or below it.
    fn containing(&self, address: u64) -> Option<&[u8]> {
        self.nearest(address).map(|f| f.name.as_slice())
    }

    /// The symbol BFD finds for `address`, if any starts at or below it.
    fn nearest(&self, address: u64) -> Option<&ElfFunction> {
        if let Some(i) = self.last.get() {
            let f = &self.starts[i];
            if address >= f.address && address - f.address < f.size {
                return Some(f);
            }
        }
        let i = self.starts.partition_point(|f| f.address <= address);
        let i = i.checked_sub(1)?;
        self.last.set(Some(i));
        Some(&self.starts[i])
    }
}

/// DWARF functions in units of languages that mangle names (C++, Rust, ...) that have no
/// linkage name — `main`, `extern "C"` functions, functions in anonymous namespaces — and whose
/// name BFD therefore settles on the first lookup that finds one.
///
/// That first lookup returns the name of the ELF symbol at or below the address (see
/// [`ElfFunctions`]), and if that symbol starts where the function's first range does, the
/// function takes the symbol's (mangled) name for good; otherwise it keeps its DWARF name. gprof
/// walks `.text` twice in line mode, counting line symbols and then making them, so where a
/// first lookup gave a transient name the two passes disagree and gprof stops ("somebody
/// miscounted"); the line symbols here are the ones its second pass makes.
///
/// Functions of C units (and of the other languages BFD knows not to mangle) have their
/// DWARF name as linkage name from the start; they are not kept here.
#[derive(Debug, Default)]
struct UnlinkedFunctions {
    /// Disjoint address ranges, each with the function (index into `functions`) that fits it
    /// best: the smallest range containing it, the later DIE among equals, as BFD chooses.
    segments: std::collections::BTreeMap<u64, (u64, usize)>,
    functions: Vec<DwarfFunction>,
    /// Per function, the name settled on its first lookup.
    settled: std::cell::RefCell<Vec<Option<Option<Vec<u8>>>>>,
}

#[derive(Debug)]
struct DwarfFunction {
    /// Start of the function's first non-empty range.
    low: u64,
    /// The DWARF name, if it has one.
    name: Option<Vec<u8>>,
    /// Whether the name is a linkage name (then the lookup is addr2line's, as for C).
    linkage: bool,
}

impl UnlinkedFunctions {
    fn read(dwarf: &gimli::Dwarf<Reader>) -> gimli::Result<Self> {
        let mut functions = Vec::new();
        // (start, end, function, DIE order) of every range.
        let mut ranges: Vec<(u64, u64, usize, usize)> = Vec::new();
        let mut headers = dwarf.units();
        let mut unit_index = 0;
        while let Some(header) = headers.next()? {
            unit_index += 1;
            let unit = dwarf.unit(header)?;
            let mut entries = unit.entries();
            let Some(root) = entries.next_dfs()? else {
                continue;
            };
            let language = match root.attr_value(gimli::DW_AT_language) {
                Some(gimli::AttributeValue::Language(l)) => Some(l),
                _ => None,
            };
            if language.is_none_or(names_are_not_mangled) {
                continue;
            }
            while let Some(entry) = entries.next_dfs()? {
                if !matches!(
                    entry.tag(),
                    gimli::DW_TAG_subprogram
                        | gimli::DW_TAG_inlined_subroutine
                        | gimli::DW_TAG_entry_point
                ) {
                    continue;
                }
                let mut own: Vec<(u64, u64)> = Vec::new();
                let mut iter = dwarf.die_ranges(&unit, entry)?;
                while let Some(r) = iter.next()? {
                    if r.begin < r.end {
                        own.push((r.begin, r.end));
                    }
                }
                let Some(&(low, _)) = own.first() else {
                    continue;
                };
                let (name, linkage) = function_name(dwarf, &unit, entry, 0);
                let index = functions.len();
                functions.push(DwarfFunction { low, name, linkage });
                ranges.extend(own.into_iter().map(|(b, e)| (b, e, index, unit_index)));
            }
        }
        // Paint the largest ranges first, so that smaller ones end up on top; among equals
        // the first unit's and, within it, the later DIE.
        ranges.sort_by(|a, b| {
            (b.1 - b.0)
                .cmp(&(a.1 - a.0))
                .then(b.3.cmp(&a.3))
                .then(a.2.cmp(&b.2))
        });
        let mut segments = std::collections::BTreeMap::new();
        for (begin, end, f, _) in ranges {
            paint(&mut segments, begin, end, f);
        }
        let settled = std::cell::RefCell::new(vec![None; functions.len()]);
        Ok(UnlinkedFunctions {
            segments,
            functions,
            settled,
        })
    }

    /// The best-fitting function at `address`, if it is one without a linkage name: then
    /// the name BFD reports for it now (`Some(None)`: no name at all).
    fn name_at(&self, address: u64, elf: &ElfFunctions) -> Option<Option<Vec<u8>>> {
        let (_, &(end, f)) = self.segments.range(..=address).next_back()?;
        if address >= end || self.functions[f].linkage {
            return None;
        }
        Some(self.lookup(f, address, elf))
    }

    fn lookup(&self, f: usize, address: u64, elf: &ElfFunctions) -> Option<Vec<u8>> {
        let function = &self.functions[f];
        if let Some(name) = &self.settled.borrow()[f] {
            return name.clone();
        }
        let symbol = elf.nearest(address);
        let settled = match symbol {
            Some(s) if s.address == function.low => Some(s.name.clone()),
            _ => function.name.clone(),
        };
        self.settled.borrow_mut()[f] = Some(settled.clone());
        match symbol {
            Some(s) => Some(s.name.clone()),
            None => settled,
        }
    }

    /// Looks up every function without a linkage name once, at the first address of
    /// [`low`, `high`) where it fits best, in address order (skipping an address BFD loses,
    /// where the lookup finds no function).
    fn settle(&self, low: u64, high: u64, elf: &ElfFunctions, lost: &LostBlockEnds) {
        if self.functions.iter().all(|f| f.linkage) {
            return;
        }
        let first = self
            .segments
            .range(..=low)
            .next_back()
            .map_or(low, |(&start, _)| start);
        for (&start, &(end, f)) in self.segments.range(first..high) {
            if end <= low || self.functions[f].linkage || self.settled.borrow()[f].is_some() {
                continue;
            }
            let mut first = start.max(low);
            if lost.contains(first) {
                first += 1;
                if first >= end.min(high) {
                    continue;
                }
            }
            self.lookup(f, first, elf);
        }
    }
}

/// The addresses where BFD 2.40 finds no unit although one covers them: the last byte of each
/// 256-byte block that more than 16 unit ranges reach into.
///
/// BFD files the units' address ranges (each unit's `DW_AT_ranges` or `low_pc`/`high_pc`,
/// a range that starts where an earlier one of the unit ends, or ends where one starts, being
/// merged into it) in a trie keyed by address bytes, whose leaves hold 16 ranges. A leaf for a
/// 256-byte block that gets more is split into one child per byte, and the ranges are handed to
/// the children clamped to the block with its last byte taken for an exclusive end: that byte's
/// child gets none, so a lookup there finds no unit, no line and no function (gprof's
/// `no info for 0x…93ff`). Blocks that crowded are found where many units share code: C++
/// inline functions at `-O0`, whose discarded copies the linker points at the kept one, so
/// every unit that used `std::move` lists its range. Larger levels of the trie lose nothing.
/// Measured against `addr2line` (the same BFD) on every such block of leveldb, meshoptimizer,
/// QuickJS: a block's last byte is lost exactly when more than 16 merged ranges reach into the
/// block, and only once every unit has been read — which gprof's first lookup, of a crt
/// function without debugging information, always makes happen.
#[derive(Debug, Default)]
struct LostBlockEnds {
    /// Runs of crowded blocks (first block, last block; a block is an address `>> 8`), sorted.
    blocks: Vec<(u64, u64)>,
}

impl LostBlockEnds {
    /// How many ranges a leaf of BFD's trie holds before it is split.
    const LEAF_RANGES: u32 = 16;

    /// Reads every unit's ranges; a unit whose ranges cannot be read adds what was read of
    /// them (damaged debugging information loses lookups, it does not stop the report).
    fn read(dwarf: &gimli::Dwarf<Reader>) -> Self {
        let mut units = Vec::new();
        let mut headers = dwarf.units();
        while let Ok(Some(header)) = headers.next() {
            let Ok(unit) = dwarf.unit(header) else {
                continue;
            };
            let mut ranges = Vec::new();
            if let Ok(mut iter) = dwarf.unit_ranges(&unit) {
                while let Ok(Some(r)) = iter.next() {
                    ranges.push((r.begin, r.end));
                }
            }
            units.push(ranges);
        }
        Self::from_units(units)
    }

    /// The lost addresses of units with these address ranges (each unit's in its order).
    fn from_units(units: Vec<Vec<(u64, u64)>>) -> Self {
        // (block, +1 or -1): each merged range adds one to the blocks it reaches into.
        let mut events: Vec<(u64, i64)> = Vec::new();
        for ranges in units {
            let mut merged: Vec<(u64, u64)> = Vec::new();
            for (begin, end) in ranges {
                if begin >= end {
                    continue;
                }
                match merged.iter_mut().find(|m| begin == m.1 || end == m.0) {
                    Some(m) if begin == m.1 => m.1 = end,
                    Some(m) => m.0 = begin,
                    None => merged.push((begin, end)),
                }
            }
            for (begin, end) in merged {
                events.push((begin >> 8, 1));
                events.push((((end - 1) >> 8) + 1, -1));
            }
        }
        events.sort_unstable();
        let mut blocks: Vec<(u64, u64)> = Vec::new();
        let mut count = 0i64;
        let mut i = 0;
        while i < events.len() {
            let block = events[i].0;
            while i < events.len() && events[i].0 == block {
                count += events[i].1;
                i += 1;
            }
            if count > i64::from(Self::LEAF_RANGES) {
                // Crowded from `block` up to the next event's block.
                let last = events.get(i).map_or(u64::MAX >> 8, |e| e.0 - 1);
                match blocks.last_mut() {
                    Some(run) if run.1.checked_add(1) == Some(block) => run.1 = last,
                    _ => blocks.push((block, last)),
                }
            }
        }
        LostBlockEnds { blocks }
    }

    /// Whether a lookup of `address` finds no unit.
    fn contains(&self, address: u64) -> bool {
        if address & 0xff != 0xff {
            return false;
        }
        let block = address >> 8;
        let i = self.blocks.partition_point(|&(first, _)| first <= block);
        i > 0 && block <= self.blocks[i - 1].1
    }
}

/// Whether BFD takes a DWARF function name of this language as its linkage name: C, Ada,
/// COBOL, Fortran 77, Pascal, PL/I, UPC and assembler, which do not mangle.
fn names_are_not_mangled(language: gimli::DwLang) -> bool {
    matches!(
        language,
        gimli::DW_LANG_C89
            | gimli::DW_LANG_C
            | gimli::DW_LANG_Ada83
            | gimli::DW_LANG_Cobol74
            | gimli::DW_LANG_Cobol85
            | gimli::DW_LANG_Fortran77
            | gimli::DW_LANG_Pascal83
            | gimli::DW_LANG_C99
            | gimli::DW_LANG_Ada95
            | gimli::DW_LANG_PLI
            | gimli::DW_LANG_UPC
            | gimli::DW_LANG_C11
            | gimli::DW_LANG_Mips_Assembler
    )
}

/// A function's name and whether it is a linkage name, following abstract origins and
/// specifications within the unit: a linkage name anywhere wins, else the first `DW_AT_name`.
/// A reference into another unit counts as a linkage name (nothing changes for it).
fn function_name(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
    depth: usize,
) -> (Option<Vec<u8>>, bool) {
    let text = |v: gimli::AttributeValue<Reader>| -> Option<Vec<u8>> {
        dwarf
            .attr_string(unit, v)
            .ok()
            .and_then(|r| r.to_slice().ok().map(|b| b.to_vec()))
    };
    for at in [gimli::DW_AT_linkage_name, gimli::DW_AT_MIPS_linkage_name] {
        if let Some(v) = entry.attr_value(at) {
            return (text(v), true);
        }
    }
    let mut name = entry.attr_value(gimli::DW_AT_name).and_then(text);
    for at in [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification] {
        match entry.attr_value(at) {
            Some(gimli::AttributeValue::UnitRef(offset)) if depth < 16 => {
                let Ok(origin) = unit.entry(offset) else {
                    continue;
                };
                let (origin_name, linkage) = function_name(dwarf, unit, &origin, depth + 1);
                if linkage {
                    return (origin_name, true);
                }
                name = name.or(origin_name);
            }
            Some(_) => return (name, true),
            None => {}
        }
    }
    (name, false)
}

/// Gives [`begin`, `end`) to function `f` in a map of disjoint segments (start → (end, f)).
fn paint(
    segments: &mut std::collections::BTreeMap<u64, (u64, usize)>,
    begin: u64,
    end: u64,
    f: usize,
) {
    // A segment starting before `begin` and reaching into it is cut there, keeping its tail
    // past `end` if it has one.
    if let Some((&start, &(seg_end, g))) = segments.range(..begin).next_back()
        && seg_end > begin
    {
        segments.insert(start, (begin, g));
        if seg_end > end {
            segments.insert(end, (seg_end, g));
        }
    }
    let inside: Vec<u64> = segments.range(begin..end).map(|(&s, _)| s).collect();
    for start in inside {
        if let Some((seg_end, g)) = segments.remove(&start)
            && seg_end > end
        {
            segments.insert(end, (seg_end, g));
        }
    }
    segments.insert(begin, (end, f));
}

/// One row of a line table, as far as gprof uses it.
#[derive(Debug, Clone, Copy)]
struct Row {
    address: u64,
    /// Index into [`SourceLines::files`].
    file: usize,
    line: u64,
}

/// One sequence of a line table: rows over [start, end).
#[derive(Debug, Clone)]
struct Sequence {
    start: u64,
    end: u64,
    rows: Vec<Row>,
}

/// Runs every unit's line program, naming files as BFD does.
///
/// Two BFD habits matter for byte-identical names. A file's path is the compilation directory,
/// the file's directory entry and its name joined with `/` unless one of them is absolute (so
/// a relative directory `.` gives `././f.c`). And in a DWARF 5 table, rows before the program
/// first sets the file register (whose initial value is 1) are credited to file entry 0, the
/// primary source file, rather than entry 1.
fn read_line_tables(
    dwarf: &gimli::Dwarf<Reader>,
    files: &mut Vec<Rc<[u8]>>,
) -> gimli::Result<Vec<Sequence>> {
    use gimli::{LineInstruction, LineRow};
    let mut sequences = Vec::new();
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let unit = dwarf.unit(header)?;
        let Some(mut program) = unit.line_program.clone() else {
            continue;
        };
        let header = program.header().clone();
        let comp_dir: Option<Vec<u8>> = unit
            .comp_dir
            .as_ref()
            .and_then(|d| d.to_slice().ok().map(|b| b.to_vec()));
        let mut names: Vec<Option<usize>> = Vec::new();
        let mut name_of = |index: u64, files: &mut Vec<Rc<[u8]>>| -> Option<usize> {
            let slot = usize::try_from(index).ok()?;
            if slot < names.len()
                && let Some(n) = names[slot]
            {
                return Some(n);
            }
            let path = bfd_path(dwarf, &unit, &header, comp_dir.as_deref(), index)?;
            let id = match files.iter().position(|f| **f == *path) {
                Some(id) => id,
                None => {
                    files.push(Rc::from(path.as_slice()));
                    files.len() - 1
                }
            };
            if names.len() <= slot {
                names.resize(slot + 1, None);
            }
            names[slot] = Some(id);
            Some(id)
        };
        let version5 = header.version() >= 5;
        let mut instructions = header.instructions();
        let mut row = LineRow::new(&header);
        let mut file_set = false;
        let mut tombstone = false;
        let mut rows: Vec<Row> = Vec::new();
        while let Some(instruction) = instructions.next_instruction(&header)? {
            match instruction {
                LineInstruction::SetFile(_) => file_set = true,
                LineInstruction::SetAddress(a) => {
                    let max = if header.address_size() == 4 {
                        u64::from(u32::MAX)
                    } else {
                        u64::MAX
                    };
                    tombstone = a < row.address() || a >= max;
                }
                _ => {}
            }
            if !row.execute(instruction, &mut program)? {
                continue;
            }
            let end = row.end_sequence();
            if !tombstone {
                let index = if version5 && !file_set {
                    0
                } else {
                    row.file_index()
                };
                if end {
                    if let Some(first) = rows.first() {
                        sequences.push(Sequence {
                            start: first.address,
                            end: row.address(),
                            rows: std::mem::take(&mut rows),
                        });
                    }
                } else if let Some(file) = name_of(index, files) {
                    // A later row at the same address replaces an earlier one.
                    if rows.last().is_some_and(|r| r.address == row.address()) {
                        rows.pop();
                    }
                    rows.push(Row {
                        address: row.address(),
                        file,
                        line: row.line().map_or(0, |l| l.get()),
                    });
                }
            }
            if end {
                row = LineRow::new(&header);
                file_set = false;
                tombstone = false;
                rows.clear();
            }
        }
    }
    Ok(sequences)
}

/// The path BFD gives file `index` of a line-program header.
fn bfd_path(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    header: &gimli::LineProgramHeader<Reader>,
    comp_dir: Option<&[u8]>,
    index: u64,
) -> Option<Vec<u8>> {
    let file = header.file(index)?;
    let text = |v: gimli::AttributeValue<Reader>| -> Option<Vec<u8>> {
        dwarf
            .attr_string(unit, v)
            .ok()
            .and_then(|r| r.to_slice().ok().map(|b| b.to_vec()))
    };
    let name = text(file.path_name())?;
    if name.first() == Some(&b'/') {
        return Some(name);
    }
    let dir = if header.version() >= 5 || file.directory_index() != 0 {
        file.directory(header).and_then(text)
    } else {
        None
    };
    let mut path = Vec::new();
    match dir {
        Some(d) if d.first() == Some(&b'/') => path.extend_from_slice(&d),
        Some(d) => {
            if let Some(c) = comp_dir {
                path.extend_from_slice(c);
                path.push(b'/');
            }
            path.extend_from_slice(&d);
        }
        None => {
            if let Some(c) = comp_dir {
                path.extend_from_slice(c);
            }
        }
    }
    if !path.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(&name);
    Some(path)
}

/// A symbol's source position as gprof prints it: file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    /// Full path of the source file.
    pub file: Rc<[u8]>,
    /// Line number.
    pub line: u64,
}

impl SourceInfo {
    /// The file name as printed: the full path with `-L`, else the part after the last `/`.
    pub fn file_name(&self, full_path: bool) -> &[u8] {
        if full_path {
            return &self.file;
        }
        match self.file.iter().rposition(|&b| b == b'/') {
            Some(slash) => &self.file[slash + 1..],
            None => &self.file,
        }
    }
}

/// The source position of every symbol's start, as gprof records it: only when the lookup
/// yields a file, a function and a non-zero line.
pub fn symbol_sources(table: &SymbolTable, lines: Option<&SourceLines>) -> Vec<Option<SourceInfo>> {
    table
        .symbols()
        .iter()
        .map(|s| {
            let p = lines?.nearest(s.address)?;
            Some(SourceInfo {
                file: p.file,
                line: p.line,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(name: &str, address: u64, size: u64) -> ElfFunction {
        ElfFunction {
            address,
            size,
            name: name.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_block_reached_by_more_than_16_unit_ranges_loses_its_last_byte() {
        // Sixteen units share [0x1280, 0x1310); a seventeenth adds one range in block 0x12.
        let shared = vec![(0x1280, 0x1310)];
        let mut units = vec![shared.clone(); 16];
        let sixteen = LostBlockEnds::from_units(units.clone());
        assert!(!sixteen.contains(0x12ff));
        units.push(vec![(0x1200, 0x1210)]);
        let seventeen = LostBlockEnds::from_units(units.clone());
        assert!(seventeen.contains(0x12ff));
        // Only the block's last byte, and only in the crowded block.
        assert!(!seventeen.contains(0x12fe));
        assert!(!seventeen.contains(0x1300));
        assert!(!seventeen.contains(0x13ff));
        assert!(!seventeen.contains(0x11ff));
        // Ranges of one unit that touch count once: two halves of the seventeenth's range.
        units.pop();
        units.push(vec![(0x1200, 0x1208), (0x1208, 0x1210)]);
        assert!(LostBlockEnds::from_units(units.clone()).contains(0x12ff));
        units.pop();
        units.push(vec![(0x1200, 0x1208), (0x1209, 0x1210)]);
        units.push(vec![]);
        // Two ranges that do not touch count twice: eighteen in block 0x12.
        assert_eq!(LostBlockEnds::from_units(units).blocks, vec![(0x12, 0x12)]);
    }

    #[test]
    fn elf_fallback_names_the_nearest_symbol_below_and_remembers_it_within_its_size() {
        let f = ElfFunctions::from_candidates(vec![
            candidate("outer", 0x100, 0x40),
            candidate("small_first", 0x200, 1),
            candidate("big", 0x200, 0x10),
            candidate("big_too", 0x200, 0x10),
            candidate("inner", 0x110, 4),
        ]);
        assert_eq!(f.containing(0xff), None);
        // Padding past `outer`'s size still belongs to it: nothing starts in between.
        assert_eq!(f.containing(0x10c), Some(&b"outer"[..]));
        // The answer is kept for any address within outer's size, even past `inner`'s start.
        assert_eq!(f.containing(0x112), Some(&b"outer"[..]));
        // Outside it, the lookup is done again and finds the nearer symbol.
        assert_eq!(f.containing(0x150), Some(&b"inner"[..]));
        assert_eq!(f.containing(0x112), Some(&b"inner"[..]));
        // Same start: the larger wins, and between equals the first in `.symtab` order.
        assert_eq!(f.containing(0x205), Some(&b"big"[..]));
    }
}
