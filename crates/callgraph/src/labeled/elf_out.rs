//! A minimal ELF image holding a symbol table, the project's one ELF writer: GNU gprof reads a
//! merged gmon.out with it (`gprof -b image gmon.out` prints what `pkgprof -b --pid` prints),
//! and the benchmarks make their generated programs' images with it.

use std::io::{self, Write};

use crate::symbols::SymbolTable;

const EHDR_SIZE: u64 = 64;
const SHDR_SIZE: u64 = 64;
const SYM_SIZE: u64 = 24;
/// The section names, each NUL-terminated, at the offsets the section headers give.
const SHSTRTAB: &[u8] = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";

/// Writes `table` as a 64-bit little-endian x86-64 executable with one `.text` section
/// (`SHT_NOBITS`, so the file holds no code) spanning the table, and a `.symtab` with every
/// symbol global, `STT_FUNC` for functions and `STT_NOTYPE` for the rest, in address order.
///
/// The image has no program headers: it is only for reading symbols. gprof's symbol rules
/// give back exactly `table`: names are unique per address, and no name is local, so no
/// local-name rule applies.
///
/// Returns an error if writing fails.
pub fn write_symbol_image<W: Write>(mut out: W, table: &SymbolTable) -> io::Result<()> {
    let symbols = table.symbols();
    let text_start = symbols.first().map_or(0, |s| s.address);
    let text_end = symbols
        .last()
        .map_or(text_start, |s| s.end_address.wrapping_add(1));

    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; SYM_SIZE as usize];
    for s in symbols {
        let name = strtab.len() as u32;
        strtab.extend_from_slice(&s.name);
        strtab.push(0);
        const STB_GLOBAL: u8 = 1 << 4;
        let st_type = if s.is_function { 2 } else { 0 }; // STT_FUNC, STT_NOTYPE
        symtab.extend_from_slice(&name.to_le_bytes());
        symtab.extend_from_slice(&[STB_GLOBAL | st_type, 0]); // st_info, st_other
        symtab.extend_from_slice(&1u16.to_le_bytes()); // st_shndx: .text
        symtab.extend_from_slice(&s.address.to_le_bytes());
        symtab.extend_from_slice(&0u64.to_le_bytes()); // st_size: gprof does not use it
    }

    let symtab_at = EHDR_SIZE;
    let strtab_at = symtab_at + symtab.len() as u64;
    let shstrtab_at = strtab_at + strtab.len() as u64;
    let shdrs_at = (shstrtab_at + SHSTRTAB.len() as u64).next_multiple_of(8);

    let mut file = Vec::with_capacity(shdrs_at as usize + 5 * SHDR_SIZE as usize);
    file.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"); // 64-bit, LE, v1
    file.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    file.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    file.extend_from_slice(&1u32.to_le_bytes()); // e_version
    file.extend_from_slice(&text_start.to_le_bytes()); // e_entry
    file.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
    file.extend_from_slice(&shdrs_at.to_le_bytes());
    file.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
    for v in [EHDR_SIZE as u16, 56, 0, SHDR_SIZE as u16, 5, 4] {
        file.extend_from_slice(&v.to_le_bytes());
    }
    file.extend_from_slice(&symtab);
    file.extend_from_slice(&strtab);
    file.extend_from_slice(SHSTRTAB);
    file.resize(shdrs_at as usize, 0);

    // name, type, flags, addr, offset, size, link, info, align, entsize
    type SectionHeader = (u32, u32, u64, u64, u64, u64, u32, u32, u64, u64);
    let text_size = text_end.wrapping_sub(text_start);
    let sections: [SectionHeader; 5] = [
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        // .text: SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR.
        (1, 8, 0x6, text_start, shdrs_at, text_size, 0, 0, 16, 0),
        // .symtab: linked to .strtab; info = index of the first global (all are).
        (
            7,
            2,
            0,
            0,
            symtab_at,
            symtab.len() as u64,
            3,
            1,
            8,
            SYM_SIZE,
        ),
        (15, 3, 0, 0, strtab_at, strtab.len() as u64, 0, 0, 1, 0),
        (23, 3, 0, 0, shstrtab_at, SHSTRTAB.len() as u64, 0, 0, 1, 0),
    ];
    for (name, kind, flags, addr, offset, size, link, info, align, entsize) in sections {
        file.extend_from_slice(&name.to_le_bytes());
        file.extend_from_slice(&kind.to_le_bytes());
        for v in [flags, addr, offset, size] {
            file.extend_from_slice(&v.to_le_bytes());
        }
        file.extend_from_slice(&link.to_le_bytes());
        file.extend_from_slice(&info.to_le_bytes());
        file.extend_from_slice(&align.to_le_bytes());
        file.extend_from_slice(&entsize.to_le_bytes());
    }
    out.write_all(&file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::SymbolOptions;
    use crate::test_util::functions;

    #[test]
    fn the_image_reads_back_as_the_table() {
        let table = functions(&[("main", 0x1000), ("f", 0x1010), ("g", 0x1040)], 0x1100);
        let mut image = Vec::new();
        write_symbol_image(&mut image, &table).unwrap();
        let path = std::path::Path::new("image");
        let read = SymbolTable::parse(path, &image, &SymbolOptions::default()).unwrap();
        assert_eq!(read.symbols(), table.symbols());
        assert_eq!(read.image_facts().map(|f| f.text), Some((0x1000, 0x1100)));
    }
}
