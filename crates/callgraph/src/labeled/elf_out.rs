//! A minimal ELF image holding a merged symbol table, so that GNU gprof can read a merged
//! gmon.out: `gprof -b image gmon.out` then prints what `pkgprof -b --pid` prints.

use std::io::{self, Write};

use crate::symbols::SymbolTable;

const EHDR_SIZE: u64 = 64;
const SHDR_SIZE: u64 = 64;
const SYM_SIZE: u64 = 24;

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
        let st_type = if s.is_function { 2 } else { 0 };
        let st_info: u8 = (1 << 4) | st_type; // STB_GLOBAL
        symtab.extend_from_slice(&name.to_le_bytes());
        symtab.push(st_info);
        symtab.push(0); // st_other
        symtab.extend_from_slice(&1u16.to_le_bytes()); // .text
        symtab.extend_from_slice(&s.address.to_le_bytes());
        symtab.extend_from_slice(&0u64.to_le_bytes());
    }
    let shstrtab = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";
    let name_at = |n: &[u8]| shstrtab.windows(n.len()).position(|w| w == n).unwrap_or(0) as u32;

    let symtab_at = EHDR_SIZE;
    let strtab_at = symtab_at + symtab.len() as u64;
    let shstrtab_at = strtab_at + strtab.len() as u64;
    let shdrs_at = (shstrtab_at + shstrtab.len() as u64).div_ceil(8) * 8;

    let mut ehdr = Vec::with_capacity(EHDR_SIZE as usize);
    ehdr.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    ehdr.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    ehdr.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    ehdr.extend_from_slice(&1u32.to_le_bytes());
    ehdr.extend_from_slice(&text_start.to_le_bytes()); // e_entry
    ehdr.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
    ehdr.extend_from_slice(&shdrs_at.to_le_bytes());
    ehdr.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    ehdr.extend_from_slice(&(EHDR_SIZE as u16).to_le_bytes());
    ehdr.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
    ehdr.extend_from_slice(&0u16.to_le_bytes()); // e_phnum
    ehdr.extend_from_slice(&(SHDR_SIZE as u16).to_le_bytes());
    ehdr.extend_from_slice(&5u16.to_le_bytes()); // e_shnum
    ehdr.extend_from_slice(&4u16.to_le_bytes()); // e_shstrndx

    out.write_all(&ehdr)?;
    out.write_all(&symtab)?;
    out.write_all(&strtab)?;
    out.write_all(shstrtab)?;
    let pad = shdrs_at - (shstrtab_at + shstrtab.len() as u64);
    out.write_all(&vec![0u8; pad as usize])?;

    #[allow(clippy::too_many_arguments)]
    fn shdr(
        name: u32,
        kind: u32,
        flags: u64,
        addr: u64,
        offset: u64,
        size: u64,
        link: u32,
        info: u32,
        align: u64,
        entsize: u64,
    ) -> Vec<u8> {
        let mut v = Vec::with_capacity(SHDR_SIZE as usize);
        v.extend_from_slice(&name.to_le_bytes());
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(&flags.to_le_bytes());
        v.extend_from_slice(&addr.to_le_bytes());
        v.extend_from_slice(&offset.to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
        v.extend_from_slice(&link.to_le_bytes());
        v.extend_from_slice(&info.to_le_bytes());
        v.extend_from_slice(&align.to_le_bytes());
        v.extend_from_slice(&entsize.to_le_bytes());
        v
    }
    out.write_all(&shdr(0, 0, 0, 0, 0, 0, 0, 0, 0, 0))?;
    // .text: SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR.
    out.write_all(&shdr(
        name_at(b".text\0"),
        8,
        0x6,
        text_start,
        shdrs_at,
        text_end.wrapping_sub(text_start),
        0,
        0,
        16,
        0,
    ))?;
    // .symtab: link to .strtab, info = index of the first global (all are).
    out.write_all(&shdr(
        name_at(b".symtab\0"),
        2,
        0,
        0,
        symtab_at,
        symtab.len() as u64,
        3,
        1,
        8,
        SYM_SIZE,
    ))?;
    out.write_all(&shdr(
        name_at(b".strtab\0"),
        3,
        0,
        0,
        strtab_at,
        strtab.len() as u64,
        0,
        0,
        1,
        0,
    ))?;
    out.write_all(&shdr(
        name_at(b".shstrtab\0"),
        3,
        0,
        0,
        shstrtab_at,
        shstrtab.len() as u64,
        0,
        0,
        1,
        0,
    ))?;
    Ok(())
}
