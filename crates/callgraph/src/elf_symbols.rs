//! Which ELF symbols gprof's table takes: defined code symbols (`nm`'s `T`, `t` and `W`) of
//! `.symtab`, less local names that are fragments of another function, with the image's
//! `.text` range and kind.

use std::path::Path;

use gmon_format::{AddressSize, Endian};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::{FileKind, SymbolIndex};

use crate::error::{Error, Result};
use crate::symbols::{Entry, ImageFacts, SymbolOptions, SymbolTable};

impl SymbolTable {
    /// Reads the image at `path` and builds its symbol table.
    ///
    /// Returns an error naming `path` if the file cannot be read or is not a usable ELF image
    /// (see [`SymbolTable::parse`]).
    pub fn read(path: &Path, options: &SymbolOptions) -> Result<Self> {
        let data = crate::input::read_image(path)?;
        Self::parse(path, &data, options)
    }

    /// Builds the symbol table of the ELF image `data`; `path` is only used in error messages.
    ///
    /// Symbols come from `.symtab` (never `.dynsym`, so PLT stubs do not appear). A symbol is
    /// kept when `nm` would class it `T` or `t` (defined, in an executable section, not an
    /// indirect function or unique symbol) or `W` (a defined weak non-object, in any section).
    /// Local names that are empty, contain `$`, start with `__gnu_compiled`, or carry a dot
    /// suffix other than `.N`, `.clone.N` or `.constprop.N` (such as `.part.0` or `.cold`) are
    /// dropped, so their addresses belong to the preceding symbol. Like gprof, the suffix check
    /// of a name ending in a dot group reads on into the next `.strtab` string, so that
    /// `f.constprop.0` followed there by `crtstuff.c` is dropped too.
    ///
    /// Returns an error if `data` is not a 32- or 64-bit ELF file, its section or symbol table
    /// is damaged, it has no `.text` section, or it has no `.symtab`.
    pub fn parse(path: &Path, data: &[u8], options: &SymbolOptions) -> Result<Self> {
        match FileKind::parse(data).map_err(|e| Error::not_executable(path, e))? {
            FileKind::Elf32 => {
                read_elf::<elf::FileHeader32<object::Endianness>>(path, data, options)
            }
            FileKind::Elf64 => {
                read_elf::<elf::FileHeader64<object::Endianness>>(path, data, options)
            }
            _ => Err(Error::NotExecutable {
                path: path.to_owned(),
                source: None,
            }),
        }
    }
}

/// Reads the gprof symbol table of the ELF image `data` of class `Elf` (see
/// [`SymbolTable::parse`]).
fn read_elf<Elf: FileHeader<Endian = object::Endianness>>(
    path: &Path,
    data: &[u8],
    options: &SymbolOptions,
) -> Result<SymbolTable> {
    let not_exec = |source| Error::not_executable(path, source);
    let header = Elf::parse(data).map_err(not_exec)?;
    let endian = header.endian().map_err(not_exec)?;
    let sections = header.sections(endian, data).map_err(not_exec)?;

    let text = sections
        .section_by_name(endian, b".text")
        .or_else(|| sections.section_by_name(endian, b"$CODE$"))
        .map(|(_, s)| {
            let addr: u64 = s.sh_addr(endian).into();
            let size: u64 = s.sh_size(endian).into();
            (addr, addr.wrapping_add(size))
        });

    // gprof looks for `.text` before it reads any symbol.
    let text = text.ok_or_else(|| Error::NoTextSection {
        path: path.to_owned(),
    })?;
    let text_end = text.1;
    let facts = ImageFacts {
        text,
        position_independent: header.e_type(endian) == elf::ET_DYN,
    };
    let symtab = sections
        .symbols(endian, data, elf::SHT_SYMTAB)
        .map_err(not_exec)?;
    if symtab.len() <= 1 {
        return Err(Error::NoSymbols {
            path: path.to_owned(),
        });
    }

    let strtab = sections
        .section(symtab.string_section())
        .and_then(|s| s.data(endian, data))
        .map_err(not_exec)?;
    let mut raw = Vec::with_capacity(symtab.len());
    for (index, sym) in symtab.enumerate() {
        if index == SymbolIndex(0) {
            continue;
        }
        let st_type = sym.st_type().0;
        let bind = sym.st_bind().0;
        if st_type == elf::STT_SECTION.0 || st_type == elf::STT_FILE.0 {
            continue;
        }
        let shndx = sym.st_shndx(endian);
        if shndx == elf::SHN_UNDEF {
            continue;
        }
        if st_type == elf::STT_GNU_IFUNC.0 || bind == elf::STB_GNU_UNIQUE.0 {
            continue;
        }
        // A defined weak symbol (`W`) counts as global code whatever its section, even an
        // absolute one; only weak objects (`V`) are left out.
        let is_static = if bind == elf::STB_WEAK.0 {
            if st_type == elf::STT_OBJECT.0 {
                continue;
            }
            false
        } else {
            if shndx == elf::SHN_ABS || shndx == elf::SHN_COMMON {
                continue;
            }
            let executable = match symtab.symbol_section(endian, sym, index) {
                Ok(Some(section)) => sections
                    .section(section)
                    .is_ok_and(|s| s.sh_flags(endian).0 & elf::SHF_EXECINSTR.0 != 0),
                // Other reserved indices and damaged extended indices: no code section.
                Ok(None) | Err(_) => false,
            };
            if !executable {
                continue;
            }
            bind != elf::STB_GLOBAL.0
        };
        let name = symtab.symbol_name(endian, sym).unwrap_or_default();
        let is_function = st_type == elf::STT_FUNC.0;
        if is_static
            && (options.no_static
                || (options.ignore_non_functions && !is_function)
                || !(local_name_is_kept(strtab, sym.st_name(endian) as usize)
                    || (options.keep_fragments && is_function && !name.is_empty())))
        {
            continue;
        }
        raw.push(Entry {
            name,
            address: sym.st_value(endian).into(),
            is_function,
            is_static,
        });
    }
    let address_size = if header.is_type_64() {
        AddressSize::U64
    } else {
        AddressSize::U32
    };
    let endian = if endian == object::Endianness::Big {
        Endian::Big
    } else {
        Endian::Little
    };
    let mut table = SymbolTable::from_entries(raw, text_end, address_size, endian);
    table.image = Some(facts);
    Ok(table)
}

/// Whether gprof keeps the local symbol whose name starts at `offset` in the string table
/// `strtab`.
///
/// Compilers mark clones with dot suffixes. Numbered copies (`.N`) and `.clone.N` /
/// `.constprop.N` are whole functions and stay; other suffixes (`.part.N`, `.cold`,
/// `.isra.N`, `.lto_priv.N`) are fragments, and dropping them gives their samples to the
/// function they were split from, which usually precedes them.
///
/// gprof's check does not stop at the end of a name that ends in a dot group: it carries on
/// into the next string of the string table, and rejects the name if that string holds a `$`
/// or a dot suffix it would reject (so `y.1` followed in `.strtab` by `y.cold` is dropped,
/// whatever their addresses). Reproducing that needs the table itself, not just the name.
pub(crate) fn local_name_is_kept(strtab: &[u8], offset: usize) -> bool {
    let byte = |p: usize| strtab.get(p).copied().unwrap_or(0);
    let name = strtab.get(offset..).unwrap_or_default();
    if byte(offset) == 0
        || name.starts_with(b"__gnu_compiled")
        || name.starts_with(b"___gnu_compiled")
    {
        return false;
    }
    let mut p = offset;
    loop {
        match byte(p) {
            0 => return true,
            b'$' => return false,
            b'.' => {
                let rest = &strtab[p..];
                let len = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                if rest.starts_with(b".clone.") && len > 7 {
                    p += 6;
                } else if rest.starts_with(b".constprop.") && len > 11 {
                    p += 10;
                }
                p += 1;
                let mut digits = 0;
                loop {
                    match byte(p) {
                        b'0'..=b'9' => digits += 1,
                        b'.' if digits > 0 => break,
                        0 => {
                            // The end of the name: go on with the next string, if any.
                            if p + 1 >= strtab.len() {
                                return true;
                            }
                            p += 1;
                            break;
                        }
                        _ => return false,
                    }
                    p += 1;
                }
            }
            _ => p += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(name: &str) -> bool {
        let mut strtab = vec![0];
        strtab.extend_from_slice(name.as_bytes());
        strtab.extend_from_slice(b"\0next\0");
        local_name_is_kept(&strtab, 1)
    }

    #[test]
    fn local_name_suffixes() {
        for name in [
            "f",
            "f.1",
            "f.12.3",
            "f.constprop.0",
            "f.clone.3",
            "f.constprop.0.123",
        ] {
            assert!(kept(name), "{name} should be kept");
        }
        for name in ["f.1.constprop.2", "foo.", "f.1.", "_"] {
            assert!(kept(name), "{name} should be kept");
        }
        for name in [
            "",
            "f.part.0",
            "f.cold",
            "f.isra.0",
            "f.lto_priv.0",
            "f$x",
            "a$b.1",
            "foo..1",
            "foo.1a",
            "f.1.cold",
            "foo.clone.",
            "foo.constprop.",
            "__gnu_compiled_c",
            "___gnu_compiled_cplusplus",
        ] {
            assert!(!kept(name), "{name:?} should be dropped");
        }
    }

    #[test]
    fn a_dot_group_at_the_end_of_a_name_reads_on_into_the_next_string() {
        let strtab = b"\0y.1\0z.2\0q$r\0c\0w.3\0d.cold\0x\0v.4\0";
        let at = |s: &[u8]| strtab.windows(s.len()).position(|w| w == s).unwrap();
        // y.1 → z.2 → q$r: both rejected by the `$` two strings on.
        assert!(!local_name_is_kept(strtab, at(b"y.1")));
        assert!(!local_name_is_kept(strtab, at(b"z.2")));
        // A name without dots stops at its own end; one ending in a dot group does not.
        assert!(local_name_is_kept(strtab, at(b"c\0")));
        assert!(
            !local_name_is_kept(strtab, at(b"w.3")),
            "w.3 is followed by d.cold"
        );
        // v.4 is the last string: the end of the table ends the check.
        assert!(local_name_is_kept(strtab, at(b"v.4")));
    }

    #[test]
    fn non_elf_input_is_an_error_naming_the_path() {
        let e = SymbolTable::parse(Path::new("x/y"), b"not an elf", &SymbolOptions::default())
            .unwrap_err();
        assert_eq!(e.to_string(), "x/y: not in executable format");
        let e = SymbolTable::read(Path::new("/nonexistent/a.out"), &SymbolOptions::default())
            .unwrap_err();
        assert_eq!(e.to_string(), "/nonexistent/a.out: cannot read the image");
    }
}
