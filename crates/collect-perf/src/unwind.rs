//! The leaf fix: user stacks from `.eh_frame` unwinding of each sample's stack copy, joined to
//! the kernel's frame-pointer chain.
//!
//! The kernel walks user stacks by frame pointers. That loses the caller of any function
//! without a frame, and glibc's syscall wrappers (`read`, `write`) have none: a sample in the
//! kernel's read path then shows `read` called by the caller's caller. Each sample also carries
//! the user registers (ip, sp, bp) and a copy of the top of the user stack, so the first frames
//! are unwound again here from the call-frame information (CFI) of the mapped files, with
//! framehop, until the unwound return address meets an entry of the frame-pointer chain; the
//! rest of that chain is then appended.

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder as _};

use crate::elf::{ElfInfo, SectionData};
use crate::recording::Recording;
use crate::replay::{Mapping, Process, Replay};

/// Which section of a shared [`ElfInfo`] a framehop module reads, without copying its bytes
/// for every process that maps the file.
#[derive(Clone)]
struct SectionRef {
    elf: Arc<ElfInfo>,
    which: Which,
}

#[derive(Clone, Copy)]
enum Which {
    Text,
    EhFrame,
    EhFrameHdr,
}

impl Deref for SectionRef {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        let s = match self.which {
            Which::Text => &self.elf.text,
            Which::EhFrame => &self.elf.eh_frame,
            Which::EhFrameHdr => &self.elf.eh_frame_hdr,
        };
        s.as_ref().map_or(&[], |s| s.data.as_slice())
    }
}

/// ELF files read during one conversion, by mapped path and build-id.
#[derive(Debug, Default)]
pub(crate) struct Images {
    files: HashMap<ImageKey, Option<Arc<ElfInfo>>>,
}

/// A mapped path and the build-id the kernel reported for it.
type ImageKey = (String, Option<Vec<u8>>);

impl Images {
    /// The ELF file behind a mapping: read from its path (or this process's own vDSO for
    /// `[vdso]`). None if it cannot be read, is not ELF, or its build-id differs from the one
    /// the kernel recorded (the file was replaced since).
    pub(crate) fn get(&mut self, m: &Mapping) -> Option<Arc<ElfInfo>> {
        let key = (m.filename.clone(), m.build_id.clone());
        self.files
            .entry(key)
            .or_insert_with(|| {
                let info = if m.filename == "[vdso]" {
                    ElfInfo::parse(&crate::elf::own_vdso()?[..])?
                } else if m.filename.starts_with('/') {
                    crate::elf::read_object(&m.filename)?
                } else {
                    return None;
                };
                if let (Some(want), Some(have)) = (&m.build_id, &info.build_id)
                    && want != have
                {
                    return None;
                }
                Some(Arc::new(info))
            })
            .clone()
    }
}

/// Counts of how user stacks were obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnwindStats {
    /// Samples with a user context (user registers and a user callchain).
    pub user_samples: u64,
    /// Samples whose CFI unwinding met the frame-pointer chain, which was appended.
    pub joined: u64,
    /// Samples whose CFI unwinding reached the outermost frame on its own.
    pub complete: u64,
    /// Samples whose CFI unwinding stopped early (end of the stack copy, missing unwind
    /// information) without meeting the frame-pointer chain: their stacks may miss outer frames.
    pub truncated: u64,
    /// Samples without a stack copy, which keep the frame-pointer chain alone.
    pub frame_pointers_only: u64,
}

/// Each sample's user stack after the leaf fix, innermost first: the user ip, then return
/// addresses.
#[derive(Debug, Clone, Default)]
pub struct UserStacks {
    frames: Vec<u64>,
    ranges: Vec<Range<u32>>,
    truncated: Vec<bool>,
    /// How the stacks were obtained.
    pub stats: UnwindStats,
}

impl UserStacks {
    /// The user stack of sample `i` (an index into [`Recording::samples`]); empty for samples
    /// without a user context, such as those of kernel threads.
    pub fn frames(&self, i: usize) -> &[u64] {
        self.ranges
            .get(i)
            .map_or(&[], |r| &self.frames[r.start as usize..r.end as usize])
    }

    /// Whether the user stack of sample `i` may lack outer frames.
    pub fn truncated(&self, i: usize) -> bool {
        self.truncated.get(i).copied().unwrap_or(false)
    }
}

type FhModule = Module<SectionRef>;
type FhUnwinder = UnwinderX86_64<SectionRef>;

fn section_info(elf: &Arc<ElfInfo>) -> ExplicitModuleSectionInfo<SectionRef> {
    let r = |which, s: &Option<SectionData>| {
        s.as_ref().map(|_| SectionRef {
            elf: elf.clone(),
            which,
        })
    };
    let svma = |s: &Option<SectionData>| s.as_ref().map(|s| s.svma.clone());
    ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: svma(&elf.text),
        text: r(Which::Text, &elf.text),
        got_svma: elf.got.clone(),
        eh_frame_svma: svma(&elf.eh_frame),
        eh_frame: r(Which::EhFrame, &elf.eh_frame),
        eh_frame_hdr_svma: svma(&elf.eh_frame_hdr),
        eh_frame_hdr: r(Which::EhFrameHdr, &elf.eh_frame_hdr),
        stubs_svma: None,
        stub_helper_svma: None,
        unwind_info: None,
        debug_frame: None,
        text_segment_svma: None,
        text_segment: None,
    }
}

/// Unwinds the user stacks of all samples of `replay`'s processes.
///
/// Samples of processes the replay does not know keep no user stack. `max_frames` caps each
/// stack (the kernel's chains are capped by `sample_max_stack` already).
pub fn unwind_user_stacks(rec: &Recording, replay: &Replay, max_frames: usize) -> UserStacks {
    let mut images = Images::default();
    unwind_with(rec, replay, max_frames, &mut images, |_| true)
}

pub(crate) fn unwind_with(
    rec: &Recording,
    replay: &Replay,
    max_frames: usize,
    images: &mut Images,
    wanted: impl Fn(usize) -> bool,
) -> UserStacks {
    let n = rec.samples.len();
    let mut out = UserStacks {
        frames: Vec::new(),
        ranges: vec![0..0; n],
        truncated: vec![false; n],
        stats: UnwindStats::default(),
    };
    let mut modules: HashMap<(u64, u64, u64, String), Option<FhModule>> = HashMap::new();
    let mut cache = CacheX86_64::<_>::new();
    let mut dwarf = Vec::with_capacity(max_frames);
    let mut fp = Vec::with_capacity(max_frames);
    for (k, p) in replay.processes.iter().enumerate() {
        if !wanted(k) {
            continue;
        }
        let mut unwinders: HashMap<Vec<usize>, FhUnwinder> = HashMap::new();
        let mut live = Vec::new();
        for &i in &p.samples {
            let s = &rec.samples[i];
            let chain = rec.user_chain(s);
            if chain.is_empty() {
                continue;
            }
            out.stats.user_samples += 1;
            clean_fp_chain(p, s.time, chain, max_frames, &mut fp);
            let stack = rec.user_stack(s);
            let start = out.frames.len() as u32;
            match s.regs {
                Some(regs) if !stack.is_empty() => {
                    live.clear();
                    live.extend(
                        p.mappings
                            .iter()
                            .enumerate()
                            .filter(|(_, m)| m.from <= s.time && m.to.is_none_or(|t| s.time < t))
                            .map(|(k, _)| k),
                    );
                    let unwinder = unwinders.entry(live.clone()).or_insert_with(|| {
                        let mut u = FhUnwinder::new();
                        for &k in &live {
                            let m = &p.mappings[k];
                            if let Some(module) = module_for(m, &mut modules, images) {
                                u.add_module(module);
                            }
                        }
                        u
                    });
                    let complete = cfi_unwind(
                        unwinder, &mut cache, regs.ip, regs.sp, regs.bp, stack, max_frames,
                        &mut dwarf,
                    );
                    match join(&dwarf, &fp) {
                        Some((di, fj)) => {
                            out.stats.joined += 1;
                            out.frames.extend_from_slice(&dwarf[..di]);
                            out.frames.extend_from_slice(&fp[fj..]);
                        }
                        None if complete => {
                            out.stats.complete += 1;
                            out.frames.extend_from_slice(&dwarf);
                        }
                        None => {
                            out.stats.truncated += 1;
                            out.truncated[i] = true;
                            let best = if dwarf.len() >= 2 { &dwarf } else { &fp };
                            out.frames.extend_from_slice(best);
                        }
                    }
                }
                _ => {
                    out.stats.frame_pointers_only += 1;
                    out.frames.extend_from_slice(&fp);
                }
            }
            let end = out.frames.len().min(start as usize + max_frames) as u32;
            out.frames.truncate(end as usize);
            out.ranges[i] = start..end;
        }
    }
    out
}

fn module_for(
    m: &Mapping,
    modules: &mut HashMap<(u64, u64, u64, String), Option<FhModule>>,
    images: &mut Images,
) -> Option<FhModule> {
    modules
        .entry((m.start, m.end, m.pgoff, m.filename.clone()))
        .or_insert_with(|| {
            let elf = images.get(m)?;
            let bias = elf.bias(m.start, m.pgoff)?;
            elf.eh_frame.as_ref()?;
            Some(Module::new(
                m.filename.clone(),
                m.start..m.end,
                bias,
                section_info(&elf),
            ))
        })
        .clone()
}

/// Unwinds from the registers over the stack copy into `out`; returns whether the unwinder
/// reached the outermost frame (rather than stopping for lack of stack or unwind data).
#[allow(clippy::too_many_arguments)]
fn cfi_unwind(
    unwinder: &FhUnwinder,
    cache: &mut CacheX86_64,
    ip: u64,
    sp: u64,
    bp: u64,
    stack: &[u8],
    max_frames: usize,
    out: &mut Vec<u64>,
) -> bool {
    out.clear();
    let mut read = |addr: u64| -> Result<u64, ()> {
        let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
        let b = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
        Ok(u64::from_ne_bytes(b.try_into().map_err(|_| ())?))
    };
    let mut it = unwinder.iter_frames(ip, UnwindRegsX86_64::new(ip, sp, bp), cache, &mut read);
    while out.len() < max_frames {
        match it.next() {
            Ok(Some(f)) => {
                let a = f.address();
                // A frame that returns into itself would repeat forever on a corrupt stack.
                if out.len() > 1 && out.last() == Some(&a) {
                    return false;
                }
                out.push(a);
            }
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
    false
}

/// The frame-pointer chain without its garbage: it stops at the first return address outside
/// every executable mapping, or repeating the previous one.
fn clean_fp_chain(p: &Process, time: u64, chain: &[u64], max: usize, out: &mut Vec<u64>) {
    out.clear();
    for (k, &a) in chain.iter().enumerate() {
        if out.len() >= max
            || (k > 0 && (out.last() == Some(&a) || p.mapping_at(a, time).is_none()))
        {
            break;
        }
        out.push(a);
    }
}

/// Where the CFI frames meet the frame-pointer chain: the first CFI return address that is
/// also a return address of the chain, as (index in `dwarf`, index in `fp`).
fn join(dwarf: &[u64], fp: &[u64]) -> Option<(usize, usize)> {
    dwarf
        .iter()
        .enumerate()
        .skip(1)
        .find_map(|(i, a)| fp.iter().skip(1).position(|b| b == a).map(|j| (i, j + 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_prefers_the_first_meeting_point() {
        // CFI found the frameless wrapper's real caller (0x20); the frame-pointer chain skipped
        // it and went on to 0x30, 0x40, beyond the stack copy.
        let dwarf = [0x10, 0x20, 0x30];
        let fp = [0x10, 0x30, 0x40, 0x50];
        let (i, j) = join(&dwarf, &fp).expect("meets at 0x30");
        assert_eq!((i, j), (2, 1));
        let mut v = dwarf[..i].to_vec();
        v.extend_from_slice(&fp[j..]);
        assert_eq!(v, [0x10, 0x20, 0x30, 0x40, 0x50]);
        assert_eq!(join(&[0x10, 0x22], &fp), None);
        // The ip itself is not a meeting point: both chains start with it.
        assert_eq!(join(&[0x10], &[0x10]), None);
    }
}
