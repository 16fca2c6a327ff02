//! The load bias of a mapping: what is added (wrapping) to an ELF file's virtual address to
//! give the runtime address, worked out from a mapping of the file and the file's `PT_LOAD`
//! segments. The one rule, used by the collector (it records `bias` in the info file) and by
//! the report (for a mapping recorded without one).
//!
//! The loader maps each segment from the page holding its first byte: a segment at file offset
//! `0x440` is mapped from offset 0, so one page of the file may hold the end of one segment and
//! the start of the next (lld packs segments so; GNU ld does for its data segment). Several
//! segments can thus lie in one mapping. The mappings a measurement records are the executable
//! ones (perf reports no others, and the collector keeps only those of `/proc/PID/maps`), so the
//! executable segment in the mapping is the one it was made for.

/// A loadable segment (`PT_LOAD`): which file bytes land at which ELF virtual address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    /// `p_offset`: where the segment starts in the file.
    pub file_offset: u64,
    /// `p_filesz`: how many of its bytes come from the file.
    pub file_size: u64,
    /// `p_vaddr`: its ELF virtual address.
    pub address: u64,
    /// Whether `p_flags` has `PF_X`.
    pub executable: bool,
}

/// The load bias of the executable mapping `start..end` of a file, mapping it from file offset
/// `offset`, given the file's `segments`: runtime address minus ELF address.
///
/// The segment is one whose file bytes the mapping holds: first one whose first page is where
/// the mapping starts (the loader made the mapping for it), then an executable one, then one
/// holding `offset` (a mapping may start part-way into a segment, when a process unmapped or
/// re-protected part of it).
///
/// Returns None if no segment's bytes are in the mapping.
pub fn load_bias(segments: &[LoadSegment], start: u64, end: u64, offset: u64) -> Option<u64> {
    let len = end.saturating_sub(start).max(1);
    let mapped = |s: &&LoadSegment| {
        offset < s.file_offset.saturating_add(s.file_size.max(1))
            && s.file_offset < offset.saturating_add(len)
    };
    let mut best: Option<((bool, bool, bool), &LoadSegment)> = None;
    for s in segments.iter().filter(mapped) {
        let key = (
            s.file_offset & !(PAGE - 1) == offset,
            s.executable,
            s.file_offset <= offset,
        );
        if best.is_none_or(|(k, _)| key > k) {
            best = Some((key, s));
        }
    }
    let (_, s) = best?;
    // The segment's first byte is at `start + (file_offset - offset)`, which may lie before
    // `start` when the mapping begins part-way into it: wrapping arithmetic gives both.
    Some(
        start
            .wrapping_add(s.file_offset)
            .wrapping_sub(offset)
            .wrapping_sub(s.address),
    )
}

/// The page size the loader rounds a segment's offset down to (4 KiB on every Linux target
/// the collector runs on; used only to prefer, never to exclude, a segment).
const PAGE: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(file_offset: u64, file_size: u64, address: u64, executable: bool) -> LoadSegment {
        LoadSegment {
            file_offset,
            file_size,
            address,
            executable,
        }
    }

    #[test]
    fn a_pie_and_a_non_pie_program() {
        // GNU ld's separate-code layout: R, RX at a page boundary, R, RW.
        let pie = [
            seg(0, 0x628, 0, false),
            seg(0x1000, 0x1b1, 0x1000, true),
            seg(0x2000, 0xf4, 0x2000, false),
            seg(0x2de8, 0x248, 0x3de8, false),
        ];
        let base = 0x5555_5555_4000;
        assert_eq!(
            load_bias(&pie, base + 0x1000, base + 0x2000, 0x1000),
            Some(base)
        );
        let non_pie = [
            seg(0, 0x5a8, 0x400000, false),
            seg(0x1000, 0x1b1, 0x401000, true),
        ];
        assert_eq!(load_bias(&non_pie, 0x401000, 0x402000, 0x1000), Some(0));
        // A mapping that starts part-way into the code (the rest unmapped by the process).
        let big = [
            seg(0, 0x100, 0, false),
            seg(0x1000, 0x10_0000, 0x1000, true),
        ];
        assert_eq!(
            load_bias(&big, base + 0x8000, base + 0x9000, 0x8000),
            Some(base)
        );
        assert_eq!(load_bias(&big, base, base + 0x1000, 0x20_0000), None);
    }

    #[test]
    fn a_packed_library_whose_code_shares_a_page_with_its_headers() {
        // lld's layout (and GNU ld's with a congruent rather than page-aligned text): the code
        // starts at file offset 0x440, mapped from offset 0 one page above the headers.
        let lib = [
            seg(0, 0x440, 0, false),
            seg(0x440, 0x109, 0x1440, true),
            seg(0x560, 0xc50, 0x2560, false),
            seg(0x1e68, 0x1a0, 0x4e68, false),
        ];
        let base = 0x7f8f_f4b3_e000;
        assert_eq!(
            load_bias(&lib, base + 0x1000, base + 0x2000, 0),
            Some(base),
            "the code's mapping is biased by the library's base, not by its own start"
        );
    }

    #[test]
    fn a_segment_whose_offset_is_not_page_aligned_is_found_from_its_page() {
        // GNU ld -z noseparate-code: one RX segment from 0, then RW at 0x1e68 mapped from 0x1000.
        let lib = [seg(0, 0x1130, 0, true), seg(0x1e68, 0x1a0, 0x2e68, false)];
        let base = 0x7f00_0000_0000;
        // The code's mapping holds the data segment's first bytes too.
        assert_eq!(load_bias(&lib, base, base + 0x2000, 0), Some(base));
        // The data's mapping (not recorded by the collector, but a mapping all the same).
        assert_eq!(
            load_bias(&lib, base + 0x2000, base + 0x3000, 0x1000),
            Some(base)
        );
    }

    #[test]
    fn the_vdso() {
        // One RX segment at address 0 (older kernels link it at 0xffffffffff700000).
        for address in [0, 0xffff_ffff_ff70_0000] {
            let vdso = [seg(0, 0x1000, address, true)];
            let start = 0x7ffd_1234_5000u64;
            assert_eq!(
                load_bias(&vdso, start, start + 0x2000, 0),
                Some(start.wrapping_sub(address))
            );
        }
    }
}
