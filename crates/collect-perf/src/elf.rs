//! What the collector needs from an ELF file: its build-id, its loadable segments (to turn a
//! mapping into a load bias) and its unwind sections (for the leaf fix).

use std::ops::Range;

use object::read::elf::{ElfFile64, ProgramHeader as _};
use object::{Object as _, ObjectSection as _};

/// The largest section read (`.text` of the largest programs is about 200 MiB); a file that
/// claims more is damaged or hostile, and unwinding goes without that section.
const MAX_SECTION_BYTES: u64 = 512 << 20;

/// The largest object file opened: the limit of a file whose sections are read on demand.
const MAX_OBJECT_BYTES: u64 = 16 << 30;

/// Reads what the collector needs of the ELF file at `path`, a path a profiled process chose:
/// no symbolic link is followed, anything but a regular file is refused without blocking
/// (a FIFO or `/dev/zero` swapped in), and only the headers and sections used are read.
pub(crate) fn read_object(path: &str) -> Option<ElfInfo> {
    let (file, _) = safe_fs::open(path, &safe_fs::ReadOptions::untrusted(MAX_OBJECT_BYTES)).ok()?;
    let cache = object::ReadCache::new(file);
    ElfInfo::parse(&cache)
}

/// A `PT_LOAD` program header, reduced to what address translation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
}

/// One section's address (as stated in the file) and bytes.
#[derive(Debug, Clone)]
pub(crate) struct SectionData {
    pub svma: Range<u64>,
    pub data: Vec<u8>,
}

/// The parts of an ELF file the collector uses.
#[derive(Debug, Clone, Default)]
pub(crate) struct ElfInfo {
    pub build_id: Option<Vec<u8>>,
    /// The entry point (`e_entry`), where the first frame of a program begins.
    pub entry: u64,
    pub segments: Vec<Segment>,
    pub text: Option<SectionData>,
    pub eh_frame: Option<SectionData>,
    pub eh_frame_hdr: Option<SectionData>,
    pub got: Option<Range<u64>>,
}

impl ElfInfo {
    /// Parses a 64-bit ELF image, whole in memory or read on demand (an
    /// [`object::ReadCache`] of a file fetches only the headers and sections used). Returns
    /// None if `data` is not one. A section larger than [`MAX_SECTION_BYTES`] is left out.
    pub(crate) fn parse<'a, R: object::ReadRef<'a>>(data: R) -> Option<ElfInfo> {
        let file = ElfFile64::<object::Endianness, R>::parse(data).ok()?;
        let endian = file.endian();
        let segments = file
            .elf_program_headers()
            .iter()
            .filter(|ph| ph.p_type(endian) == object::elf::PT_LOAD)
            .map(|ph| Segment {
                offset: ph.p_offset(endian),
                vaddr: ph.p_vaddr(endian),
                filesz: ph.p_filesz(endian),
            })
            .collect();
        let section = |name: &str| {
            let s = file.section_by_name(name)?;
            if s.size() > MAX_SECTION_BYTES {
                return None;
            }
            let data = s.data().ok()?;
            Some(SectionData {
                svma: s.address()..s.address() + s.size(),
                data: data.to_vec(),
            })
        };
        Some(ElfInfo {
            build_id: file.build_id().ok().flatten().map(<[u8]>::to_vec),
            entry: file.entry(),
            segments,
            text: section(".text"),
            eh_frame: section(".eh_frame"),
            eh_frame_hdr: section(".eh_frame_hdr"),
            got: file
                .section_by_name(".got")
                .map(|s| s.address()..s.address() + s.size()),
        })
    }

    /// The load bias of a mapping of this file at `start` from file offset `pgoff`: runtime
    /// address minus ELF virtual address, from the `PT_LOAD` segment that holds the offset.
    ///
    /// Returns None if no loadable segment covers `pgoff`.
    pub(crate) fn bias(&self, start: u64, pgoff: u64) -> Option<u64> {
        // A segment's file offset need not be page-aligned, but its mapping starts at the page
        // that holds it, so the page below p_offset still belongs to the segment.
        let page = 4096u64;
        let seg = self
            .segments
            .iter()
            .find(|s| s.offset & !(page - 1) <= pgoff && pgoff < s.offset + s.filesz.max(1))?;
        Some(start.wrapping_sub(seg.vaddr.wrapping_add(pgoff.wrapping_sub(seg.offset))))
    }
}

/// The vDSO image of this process: the kernel maps the same image into every process, so the
/// collector's own copy can unwind the vDSO frames of the profiled ones.
pub(crate) fn own_vdso() -> Option<Vec<u8>> {
    let maps = crate::procfs::text("/proc/self/maps", crate::procfs::LARGE)?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (a, b) = line.split_whitespace().next()?.split_once('-')?;
    let (a, b) = (
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(b, 16).ok()?,
    );
    // Safety: /proc/self/maps says [a, b) is mapped readable in this process for its whole
    // life (the vDSO is never unmapped), and we only copy from it.
    let bytes = unsafe { std::slice::from_raw_parts(a as *const u8, (b - a) as usize) };
    Some(bytes.to_vec())
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
        assert_eq!(
            lazy.text.as_ref().map(|t| (&t.svma, &t.data)),
            info.text.as_ref().map(|t| (&t.svma, &t.data))
        );
        assert!(!info.segments.is_empty());
        assert!(info.eh_frame.is_some() && info.text.is_some());
        let vdso = own_vdso().expect("vdso mapped");
        let v = ElfInfo::parse(&vdso[..]).expect("vdso is ELF");
        assert!(v.eh_frame.is_some());
    }

    #[test]
    fn bias_from_the_segment_holding_the_offset() {
        let info = ElfInfo {
            segments: vec![
                Segment {
                    offset: 0,
                    vaddr: 0,
                    filesz: 0x1000,
                },
                Segment {
                    offset: 0x1000,
                    vaddr: 0x401000,
                    filesz: 0x2000,
                },
            ],
            ..ElfInfo::default()
        };
        assert_eq!(info.bias(0x401000, 0x1000), Some(0));
        assert_eq!(
            info.bias(0x5555_5555_5000, 0x1000),
            Some(0x5555_5555_5000 - 0x401000)
        );
        assert_eq!(info.bias(0x7000, 0x9000), None);
    }
}
