//! What the collector needs from an ELF file: its build-id, its loadable segments (to turn a
//! mapping into a load bias) and its unwind tables (`.eh_frame`, `.eh_frame_hdr`).
//!
//! The tables are mapped, not copied, when no other user can write the file (system
//! libraries and programs, root's own builds): only the pages the unwinder reads become
//! resident, and they are the page cache's, shared with the processes that run the file.
//! Other files get a copy of the two tables alone. `.text` is never read: framehop reads
//! code bytes only for Mach-O and PE images, and needs just the address range of ELF `.text`.

use std::ops::Range;
use std::sync::Arc;

use gmon_format::bias::{LoadSegment, load_bias};
use object::read::elf::{ElfFile64, ProgramHeader as _};
use object::{Object as _, ObjectSection as _};

/// The largest section read (`.eh_frame` of the largest programs is a few tens of MiB); a
/// file that claims more is damaged or hostile, and unwinding goes without that section.
const MAX_SECTION_BYTES: u64 = 512 << 20;

/// The largest section copied, from a file that other users can write (mapped files may have
/// [`MAX_SECTION_BYTES`]): a copy is memory of the collector's, and a profiled program's owner
/// chooses the sizes its headers claim (a sparse file claiming 500 MiB tables cost a root pkgmon
/// 1.5 GiB). Real `.eh_frame`s are a few MiB (libLLVM's: 5 MiB), and the tables held at once
/// are kept within `UNWIND_TABLES_BYTES` (unwind/images.rs) anyway.
const MAX_COPIED_SECTION_BYTES: u64 = 32 << 20;

/// The largest object file opened: the limit of a file whose sections are read on demand.
const MAX_OBJECT_BYTES: u64 = 16 << 30;

/// Reads what the collector needs of the ELF file at `path`, a path a profiled process chose:
/// no symbolic link is followed, anything but a regular file is refused without blocking
/// (a FIFO or `/dev/zero` swapped in), and only the headers and the unwind tables are read
/// (mapped when no other user can write the file, see the module docs).
pub(crate) fn read_object(path: &str) -> Option<ElfInfo> {
    let (file, size) =
        safe_fs::open(path, &safe_fs::ReadOptions::untrusted(MAX_OBJECT_BYTES)).ok()?;
    if let Some(map) = safe_fs::Contents::map_private(&file, size) {
        return ElfInfo::parse_mapped(Arc::new(map));
    }
    // The headers through a cache; the two tables read straight into their copies (through the
    // cache they were held twice).
    let tables = file.try_clone().ok()?;
    let cache = object::ReadCache::new(file);
    ElfInfo::parse_with(&cache, MAX_COPIED_SECTION_BYTES, |range, _| {
        use std::os::unix::fs::FileExt as _;
        let (offset, size) = range?;
        // Tables over a hole are not the file owner's data: 20 libraries whose headers
        // claimed 2 x 32 MiB tables ending in holes, 16 KiB each on disk, cost root pkgmon
        // 1.3 GiB (more libraries, more). A real table is never a hole.
        if safe_fs::has_hole(&tables, offset..offset.saturating_add(size)) {
            return None;
        }
        let mut bytes = vec![0; usize::try_from(size).ok()?];
        tables.read_exact_at(&mut bytes, offset).ok()?;
        Some(Bytes::Copied(bytes))
    })
}

/// One section's address (as stated in the file) and bytes.
#[derive(Debug, Clone)]
pub(crate) struct SectionData {
    pub svma: Range<u64>,
    bytes: Bytes,
}

/// A section's bytes: copied, or a range of the mapped file.
#[derive(Debug, Clone)]
enum Bytes {
    Copied(Vec<u8>),
    Mapped(Arc<safe_fs::Contents>, Range<usize>),
}

impl SectionData {
    /// Whether the bytes are a range of the mapped file.
    #[cfg(test)]
    fn is_mapped(&self) -> bool {
        matches!(self.bytes, Bytes::Mapped(..))
    }

    /// The section's bytes.
    pub(crate) fn data(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Copied(v) => v,
            Bytes::Mapped(map, r) => &map[r.clone()],
        }
    }
}

/// The parts of an ELF file the collector uses.
#[derive(Debug, Clone, Default)]
pub(crate) struct ElfInfo {
    pub build_id: Option<Vec<u8>>,
    /// The entry point (`e_entry`), where the first frame of a program begins.
    pub entry: u64,
    pub segments: Vec<LoadSegment>,
    /// The address range of `.text` (its bytes are not needed).
    pub text: Option<Range<u64>>,
    pub eh_frame: Option<SectionData>,
    pub eh_frame_hdr: Option<SectionData>,
    pub got: Option<Range<u64>>,
    /// The address ranges of its signal restorers' unwind entries
    /// ([`crate::signal_frame::trampolines`]), kept when the tables are dropped.
    pub signal_frames: Vec<Range<u64>>,
    /// The address ranges of its unwind entries that keep the frame in a register other
    /// than rsp and rbp ([`crate::register_frame::ranges`]).
    pub register_frames: Vec<Range<u64>>,
}

impl ElfInfo {
    /// Parses a 64-bit ELF image, whole in memory or read on demand (an
    /// [`object::ReadCache`] of a file fetches only the headers and sections used), copying
    /// its unwind tables. Returns None if `data` is not one. A section larger than
    /// [`MAX_SECTION_BYTES`] is left out.
    pub(crate) fn parse<'a, R: object::ReadRef<'a>>(data: R) -> Option<ElfInfo> {
        Self::parse_with(data, MAX_SECTION_BYTES, |_, bytes| {
            Some(Bytes::Copied(bytes()?.to_vec()))
        })
    }

    /// Parses a mapped ELF file, whose unwind tables stay ranges of the map.
    fn parse_mapped(map: Arc<safe_fs::Contents>) -> Option<ElfInfo> {
        let base = map.as_ptr() as usize;
        Self::parse_with(&map[..], MAX_SECTION_BYTES, |_, bytes| {
            let bytes = bytes()?;
            let start = (bytes.as_ptr() as usize).checked_sub(base)?;
            let range = start..start.checked_add(bytes.len())?;
            (range.end <= map.len()).then(|| Bytes::Mapped(map.clone(), range))
        })
    }

    /// Parses with `keep` making a table's bytes from its file range (offset, size) or its
    /// data read through `data`; a table larger than `max_section` is left out.
    fn parse_with<'a, R: object::ReadRef<'a>>(
        data: R,
        max_section: u64,
        keep: impl Fn(Option<(u64, u64)>, &dyn Fn() -> Option<&'a [u8]>) -> Option<Bytes>,
    ) -> Option<ElfInfo> {
        let file = ElfFile64::<object::Endianness, R>::parse(data).ok()?;
        let endian = file.endian();
        let segments = file
            .elf_program_headers()
            .iter()
            .filter(|ph| ph.p_type(endian) == object::elf::PT_LOAD)
            .map(|ph| LoadSegment {
                file_offset: ph.p_offset(endian),
                file_size: ph.p_filesz(endian),
                address: ph.p_vaddr(endian),
                executable: ph.p_flags(endian).contains(object::elf::PF_X),
            })
            .collect();
        let range = |name: &str| {
            let s = file.section_by_name(name)?;
            Some(s.address()..s.address().checked_add(s.size())?)
        };
        let section = |name: &str| {
            let s = file.section_by_name(name)?;
            if s.size() > max_section {
                return None;
            }
            Some(SectionData {
                svma: range(name)?,
                bytes: keep(s.file_range(), &|| s.data().ok())?,
            })
        };
        let eh_frame = section(".eh_frame");
        let signal_frames = eh_frame
            .as_ref()
            .map(|s| crate::signal_frame::trampolines(s.data(), s.svma.start))
            .unwrap_or_default();
        let register_frames = eh_frame
            .as_ref()
            .map(|s| crate::register_frame::ranges(s.data(), s.svma.start))
            .unwrap_or_default();
        Some(ElfInfo {
            build_id: file.build_id().ok().flatten().map(<[u8]>::to_vec),
            entry: file.entry(),
            segments,
            text: range(".text"),
            eh_frame,
            eh_frame_hdr: section(".eh_frame_hdr"),
            got: range(".got"),
            signal_frames,
            register_frames,
        })
    }

    /// The bytes of its unwind tables: what keeping it costs in memory (copied) or may
    /// become resident (mapped).
    pub(crate) fn table_bytes(&self) -> u64 {
        [&self.eh_frame, &self.eh_frame_hdr]
            .iter()
            .filter_map(|s| s.as_ref())
            .map(|s| s.data().len() as u64)
            .sum()
    }

    /// The same file without its unwind tables: what a file's mappings need for their load
    /// biases and build-ids once its tables are dropped.
    pub(crate) fn headers(&self) -> ElfInfo {
        ElfInfo {
            build_id: self.build_id.clone(),
            entry: self.entry,
            segments: self.segments.clone(),
            text: self.text.clone(),
            eh_frame: None,
            eh_frame_hdr: None,
            got: self.got.clone(),
            signal_frames: self.signal_frames.clone(),
            register_frames: self.register_frames.clone(),
        }
    }

    /// Whether `other` is the same file as far as the collector can tell (a file read again
    /// must be the one read before).
    pub(crate) fn same_file(&self, other: &ElfInfo) -> bool {
        self.build_id == other.build_id
            && self.entry == other.entry
            && self.segments == other.segments
            && self.text == other.text
    }

    /// The load bias of the executable mapping `start..end` of this file from file offset
    /// `pgoff`: runtime address minus ELF virtual address, by the one rule
    /// ([`gmon_format::load_bias`]).
    ///
    /// Returns None if no loadable segment's bytes are in the mapping.
    pub(crate) fn bias(&self, start: u64, end: u64, pgoff: u64) -> Option<u64> {
        load_bias(&self.segments, start, end, pgoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_executable_and_vdso_parse() {
        let exe = std::fs::read("/proc/self/exe").expect("read own executable");
        let info = ElfInfo::parse(&exe[..]).expect("own executable is ELF");
        // /proc/self/exe is a link, which an object path may not be.
        assert!(read_object("/proc/self/exe").is_none());
        let path = std::env::current_exe().expect("own path");
        let lazy = read_object(path.to_str().expect("utf-8 path")).expect("read on demand");
        assert_eq!(lazy.build_id, info.build_id);
        assert_eq!(lazy.segments, info.segments);
        assert_eq!(lazy.text, info.text);
        let table = |i: &ElfInfo| {
            i.eh_frame
                .as_ref()
                .map(|t| (t.svma.clone(), t.data().to_vec()))
        };
        assert_eq!(table(&lazy), table(&info));
        assert!(!info.segments.is_empty());
        assert!(info.eh_frame.is_some() && info.text.is_some());
        let vdso = crate::snapshot::own_vdso().expect("vdso mapped");
        let v = ElfInfo::parse(&vdso[..]).expect("vdso is ELF");
        assert!(v.eh_frame.is_some());
    }

    /// A file no other user can write has its unwind tables mapped; one that others can
    /// write (and could truncate under the map) has them copied; both read alike.
    #[test]
    fn tables_are_mapped_only_from_files_no_other_user_can_write() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("collect-perf-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let exe = std::env::current_exe().expect("own path");
        let mut seen = Vec::new();
        for (name, mode, mapped) in [("private", 0o755, true), ("shared", 0o777, false)] {
            let path = dir.join(name);
            std::fs::copy(&exe, &path).expect("copy the executable");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let info = read_object(path.to_str().expect("utf-8")).expect("an ELF file");
            let eh = info.eh_frame.as_ref().expect(".eh_frame");
            assert_eq!(eh.is_mapped(), mapped, "{name}");
            assert!(info.table_bytes() >= eh.data().len() as u64);
            assert!(info.headers().eh_frame.is_none() && info.headers().same_file(&info));
            seen.push(eh.data().to_vec());
        }
        assert_eq!(seen[0], seen[1]);
        std::fs::remove_dir_all(&dir).expect("remove scratch dir");
    }

    /// The bias of the executable mapping holding `runtime` (a function of `path` at ELF
    /// address `symbol`) in the maps text `maps`, by the rule, must place the function there.
    fn check_bias(maps: &str, path: &std::path::Path, symbol: &str, runtime: u64) {
        let path_text = path.to_str().expect("utf-8 path");
        let line = maps
            .lines()
            .find(|l| {
                let mut f = l.split_whitespace();
                let (range, perms) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
                let Some((a, b)) = range.split_once('-') else {
                    return false;
                };
                let (a, b) = (
                    u64::from_str_radix(a, 16).unwrap_or(0),
                    u64::from_str_radix(b, 16).unwrap_or(0),
                );
                perms.contains('x') && l.ends_with(path_text) && (a..b).contains(&runtime)
            })
            .unwrap_or_else(|| panic!("no executable mapping of {path_text} holds {runtime:#x}"));
        let mut f = line.split_whitespace();
        let (a, b) = f.next().and_then(|r| r.split_once('-')).expect("range");
        let start = u64::from_str_radix(a, 16).expect("start");
        let end = u64::from_str_radix(b, 16).expect("end");
        let pgoff = u64::from_str_radix(f.nth(1).expect("offset"), 16).expect("offset");
        let bytes = std::fs::read(path).expect("read the object");
        let file = object::File::parse(&bytes[..]).expect("ELF");
        use object::ObjectSymbol as _;
        let address = file
            .symbols()
            .chain(file.dynamic_symbols())
            .find(|s| s.name() == Ok(symbol))
            .map(|s| s.address())
            .unwrap_or_else(|| panic!("{symbol} not in {path_text}"));
        let info = read_object(path_text).expect("read the object's headers");
        let bias = info
            .bias(start, end, pgoff)
            .expect("a segment in the mapping");
        assert_eq!(
            address.wrapping_add(bias),
            runtime,
            "{symbol} of {path_text}: mapping {line}, segments {:x?}",
            info.segments
        );
    }

    /// The one bias rule on real mappings: a PIE, a non-PIE program, a shared library whose
    /// code starts part-way into a file page (linked as lld packs segments: congruent, not
    /// page-aligned), and the vDSO.
    #[test]
    fn bias_places_functions_of_programs_libraries_and_the_vdso() {
        use std::process::Command;
        let dir = std::env::temp_dir().join(format!("collect-perf-bias-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        // GNU ld's own script for a shared library, with the code and read-only data
        // segments placed at the next page's same offset instead of at a page boundary.
        let ld = Command::new("ld")
            .args(["-shared", "-z", "separate-code", "--verbose"])
            .output()
            .expect("run ld --verbose");
        let text = String::from_utf8_lossy(&ld.stdout);
        let script: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("====="))
            .skip(1)
            .take_while(|l| !l.starts_with("====="))
            .collect();
        let aligned = "  . = ALIGN(CONSTANT (MAXPAGESIZE));";
        assert!(script.contains(&aligned), "ld's script changed:\n{text}");
        let packed: String = script
            .iter()
            .map(|l| {
                if *l == aligned {
                    "  . = ALIGN(CONSTANT (MAXPAGESIZE)) + (. & (CONSTANT (MAXPAGESIZE) - 1));\n"
                        .to_owned()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(dir.join("packed.ld"), packed).expect("write script");
        // A local function's address is its own (a global's, taken in a non-PIE program, is
        // the program's PLT entry).
        std::fs::write(
            dir.join("lib.c"),
            "static __attribute__((noinline)) int inner(int x) { return x * 3 + 1; }\n\
             int libfn(int x) { return inner(x); }\n\
             void *inner_addr(void) { return (void *)inner; }\n",
        )
        .expect("write lib.c");
        std::fs::write(
            dir.join("main.c"),
            "#include <stdio.h>\nint libfn(int);\nvoid *inner_addr(void);\nint main(void) {\n\
             printf(\"%p %p\\n\", (void *)main, inner_addr());\n\
             FILE *f = fopen(\"/proc/self/maps\", \"r\"); char l[4096];\n\
             while (fgets(l, sizeof l, f)) fputs(l, stdout);\n\
             return libfn(1) == 4 ? 0 : 1;\n}\n",
        )
        .expect("write main.c");
        let cc = |args: &[&str]| {
            let st = Command::new("cc")
                .current_dir(&dir)
                .args(args)
                .status()
                .expect("run cc");
            assert!(st.success(), "cc {args:?}");
        };
        cc(&[
            "-shared",
            "-fPIC",
            "-O1",
            "-Wl,-T,packed.ld",
            "-o",
            "libpacked.so",
            "lib.c",
        ]);
        let lib = dir.join("libpacked.so");
        let code = read_object(lib.to_str().expect("utf-8")).expect("the library");
        assert!(
            code.segments
                .iter()
                .any(|s| s.executable && s.file_offset % 4096 != 0),
            "the library's code should start part-way into a page: {:x?}",
            code.segments
        );
        let rpath = format!("-Wl,-rpath,{}", dir.display());
        for (exe, pie) in [("pie", "-pie"), ("nopie", "-no-pie")] {
            let fpie = if pie == "-pie" { "-fPIE" } else { "-fno-PIE" };
            cc(&[
                fpie,
                pie,
                "-O1",
                "-o",
                exe,
                "main.c",
                "libpacked.so",
                &rpath,
            ]);
            let out = Command::new(dir.join(exe))
                .output()
                .expect("run the program");
            assert!(out.status.success(), "{exe}");
            let out = String::from_utf8_lossy(&out.stdout);
            let (first, maps) = out.split_once('\n').expect("addresses");
            let (main, inner) = first.split_once(' ').expect("two addresses");
            let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex");
            check_bias(maps, &dir.join(exe), "main", hex(main));
            check_bias(maps, &lib, "inner", hex(inner));
        }
        // The vDSO: the runtime address of its ELF header is what the kernel passes as
        // AT_SYSINFO_EHDR.
        let maps = std::fs::read_to_string("/proc/self/maps").expect("own maps");
        let line = maps.lines().find(|l| l.ends_with("[vdso]")).expect("vdso");
        let (a, b) = line
            .split_whitespace()
            .next()
            .and_then(|r| r.split_once('-'))
            .expect("range");
        let (start, end) = (
            u64::from_str_radix(a, 16).expect("start"),
            u64::from_str_radix(b, 16).expect("end"),
        );
        let vdso =
            ElfInfo::parse(&crate::snapshot::own_vdso().expect("vdso")[..]).expect("vdso is ELF");
        let bias = vdso.bias(start, end, 0).expect("the vdso's segment");
        let first = vdso.segments[0];
        // Safety: getauxval only reads the process's auxiliary vector.
        let ehdr = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
        assert_eq!(
            first
                .address
                .wrapping_sub(first.file_offset)
                .wrapping_add(bias),
            ehdr
        );
        std::fs::remove_dir_all(&dir).expect("remove scratch dir");
    }
}
