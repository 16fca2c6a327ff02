//! User stacks that tell the truth: unwound from the call-frame information (CFI) of the mapped
//! files over each sample's stack copy, continued by the kernel's frame-pointer chain beyond the
//! copy, and ended for a stated reason.
//!
//! The kernel walks user stacks by frame pointers (or, when the BPF copier copies the stacks
//! at full size, the decoder makes the same walk over the copy: `recording/live_stack.rs`).
//! That loses the caller of any function without a frame (glibc's `read` wrapper, its
//! start-up code) and everything of a program built without frame pointers. Each sample also
//! carries the user registers (ip, sp, bp) and a copy of the top of the user stack, so the
//! stack is unwound again here from `.eh_frame` with framehop, frame by frame, each frame
//! known by where it sits on the stack.
//!
//! * A frame is identified by its position (the stack pointer of its caller), never by its
//!   return address alone: every level of a recursion returns to the same address.
//! * Where the copy ends, the frame-pointer chain takes over at the first frame whose position
//!   both walks agree on (the kernel's walk is replayed over the copy to learn its positions),
//!   so the joint is exact however deep the recursion.
//! * A chain that ends in a function without frame pointer or unwind entry (glibc's start-up
//!   code under a frame-pointer walk) is completed with the outer frames an earlier, complete
//!   unwind of the same thread found beyond the same frame.
//! * A signal handler's frame is crossed to the code the signal interrupted, whose registers
//!   the kernel saved just above it ([`crate::signal_frame`]).
//! * Whatever remains incomplete says why ([`StackEnd`]): the copy was too small, the kernel's
//!   callchain limit was reached, or a frame could not be unwound.
//!
//! Over 800 lines: the unwinder itself is about 1,100 (copy, frame-pointer chain and the
//! frames framehop cannot read, the live mappings, completion from a thread's earlier
//! stacks), then its unit tests, which need its private frame walk.

use std::collections::HashMap;
use std::ops::Range;

use rustc_hash::FxHashMap;
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64};
use framehop::{Error as FhError, FrameAddress, Module, Unwinder as _};

use crate::elf::ElfInfo;
use crate::recording::{CopyEnd, Recording, Sample, word_at};
use crate::replay::{Mapping, Process, Replay};

mod ends;
mod images;

pub use ends::{StackEnd, UnwindStats, UserStacks};
pub(crate) use images::{FhModule, FhUnwinder, Images, section_info};

/// What unwinding shares across processes: the files read, the framehop modules made of them,
/// framehop's rule cache, and scratch space.
pub(crate) struct Unwinding {
    images: Images,
    modules: HashMap<(u64, u64, u64, Arc<str>), MappedModule>,
    cache: CacheX86_64,
    max_frames: usize,
    cfi: Vec<Frame>,
    fp: Vec<Option<u64>>,
    /// The frame-pointer chain's known positions with their entries, sorted by position.
    fp_sorted: Vec<(u64, usize)>,
    /// The frames chosen for a sample: kept from sample to sample, as `cfi` and `fp` are, so
    /// that a sample costs no allocation (one each was 3% of pkgmon's own time at 10 kHz).
    frames: Vec<Frame>,
}

/// A frame found by unwinding: its address (the ip, then return addresses) and its position,
/// the stack pointer of the frame it returns to (None where unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Frame {
    address: u64,
    position: Option<u64>,
}

impl Unwinding {
    /// `max_frames` caps each stack (at least 1).
    pub(crate) fn new(images: Images, max_frames: usize) -> Unwinding {
        Unwinding {
            images,
            modules: HashMap::new(),
            cache: CacheX86_64::new(),
            max_frames: max_frames.max(1),
            cfi: Vec::new(),
            fp: Vec::new(),
            fp_sorted: Vec::new(),
            frames: Vec::new(),
        }
    }

    /// The ELF files read.
    pub(crate) fn into_images(self) -> Images {
        self.images
    }

    /// Releases what unwinding kept for the mappings of `p`, a process that exited: its
    /// framehop modules (and with them, once no other process maps the same file, the
    /// file's tables beyond [`UNWIND_TABLES_BYTES`]).
    pub(crate) fn forget(&mut self, p: &Process) {
        for m in &p.mappings {
            self.modules
                .remove(&(m.start, m.end, m.pgoff, m.filename.clone()));
        }
    }

    fn module_for(&mut self, m: &Mapping) -> MappedModule {
        let images = &mut self.images;
        self.modules
            .entry((m.start, m.end, m.pgoff, m.filename.clone()))
            .or_insert_with(|| {
                let Some(elf) = images.tables(m) else {
                    return MappedModule::default();
                };
                let Some(bias) = elf.bias(m.start, m.end, m.pgoff) else {
                    return MappedModule::default();
                };
                MappedModule {
                    module: elf.eh_frame.as_ref().map(|_| {
                        Module::new(
                            m.filename.to_string(),
                            m.start..m.end,
                            bias,
                            section_info(&elf),
                        )
                    }),
                    signal_frames: elf
                        .signal_frames
                        .iter()
                        .filter_map(|r| shifted(r, bias))
                        .collect(),
                    register_frames: elf
                        .register_frames
                        .iter()
                        .filter_map(|r| {
                            Some(RegisterFrames {
                                at: shifted(r, bias)?,
                                elf: elf.clone(),
                                bias,
                            })
                        })
                        .collect(),
                }
            })
            .clone()
    }
}

/// A range of file addresses as runtime addresses, `bias` on.
fn shifted(r: &Range<u64>, bias: u64) -> Option<Range<u64>> {
    Some(r.start.checked_add(bias)?..r.end.checked_add(bias)?)
}

/// What unwinding uses of one mapping: its framehop module (None without unwind tables), and
/// the address ranges of its signal restorers ([`crate::signal_frame`]) and of its frames kept
/// in another register ([`crate::register_frame`]).
#[derive(Clone, Default)]
struct MappedModule {
    module: Option<FhModule>,
    signal_frames: Vec<Range<u64>>,
    register_frames: Vec<RegisterFrames>,
}

/// Code whose frame an unwind entry keeps in a register framehop does not follow, at `at`
/// (runtime addresses), with its file (tables included) and load bias.
#[derive(Clone)]
struct RegisterFrames {
    at: Range<u64>,
    elf: Arc<ElfInfo>,
    bias: u64,
}

/// A framehop unwinder over one set of live mappings, and their signal restorers' and
/// register-kept frames' ranges.
struct LiveUnwinder {
    fh: FhUnwinder,
    signal_frames: Vec<Range<u64>>,
    /// By start: looked up at every frame (a scan of the eleven of ld.so and glibc took a
    /// tenth of the unwinder's time).
    register_frames: Vec<RegisterFrames>,
    /// From the first of them to the end of the last: most frames lie outside.
    register_span: Range<u64>,
}

impl LiveUnwinder {
    /// Keeps `register_frames` by start, with their span, for [`LiveUnwinder::register_frame`].
    fn new(
        fh: FhUnwinder,
        signal_frames: Vec<Range<u64>>,
        mut register_frames: Vec<RegisterFrames>,
    ) -> LiveUnwinder {
        register_frames.sort_unstable_by_key(|f| f.at.start);
        let register_span = register_frames.first().map_or(0, |f| f.at.start)
            ..register_frames.iter().map(|f| f.at.end).max().unwrap_or(0);
        LiveUnwinder {
            fh,
            signal_frames,
            register_frames,
            register_span,
        }
    }

    /// The register-kept frame whose code holds `at`. The ranges of one set of live mappings
    /// do not overlap (unwind entries of one file, files at distinct addresses), so it is the
    /// last to start at or before `at`. (A file whose entries overlap may have a frame in one
    /// of them unwound by framehop alone.)
    fn register_frame(&self, at: u64) -> Option<&RegisterFrames> {
        if !self.register_span.contains(&at) {
            return None;
        }
        let i = self.register_frames.partition_point(|f| f.at.start <= at);
        let f = self.register_frames.get(i.checked_sub(1)?)?;
        f.at.contains(&at).then_some(f)
    }
}

/// The unwinding state of one process: an unwinder per set of live mappings, and the last
/// complete stack of each thread.
#[derive(Default)]
pub(crate) struct ProcessUnwinder {
    /// An unwinder per set of live mappings (their indices), the most recent last.
    unwinders: Vec<(Vec<usize>, LiveUnwinder)>,
    /// Which of `unwinders` is for `live`, when `live` has not changed since.
    current: Option<usize>,
    live: LiveSet,
    /// What each thread's earlier samples showed, by tid.
    threads: FxHashMap<u32, ThreadStack>,
    /// Return address → whether its function keeps its frame pointer there
    /// ([`ProcessUnwinder::keeps_frame_pointer`]), found with the live mappings in
    /// `kept_for`.
    keeps_fp: FxHashMap<u64, bool>,
    kept_for: Vec<usize>,
    /// (lookup address, whether it is an ip) → the mapping it lay in and whether it is the
    /// outermost frame there ([`ProcessUnwinder::is_outermost`]): asked of every frame-pointer
    /// stack's last frame, each sample, and the same few addresses each time.
    outermost: FxHashMap<(u64, bool), (usize, bool)>,
}

/// The mappings of a process live at a time, kept while they hold: asked for every frame of
/// every sample, and a scan of all the mappings each time cost pkgmon 5.4 us a sample of a
/// process with 400 libraries loaded, 2.1 us with one (`benches/many-libraries.sh`).
#[derive(Default)]
struct LiveSet {
    /// For which process, with how many mappings and [`Process::mapping_changes`].
    of: Option<(crate::replay::ProcessKey, usize, u64)>,
    /// The times for which they hold: from the last start or end of a mapping at or before
    /// the time they were found, to the next one after it.
    from: u64,
    until: u64,
    /// Their indices in the process's mappings, in order.
    indices: Vec<usize>,
    /// (start, end, index), by start.
    by_start: Vec<(u64, u64, usize)>,
    /// Whether two of them overlap (never from a replay: an mmap ends those it overlaps);
    /// then an address is looked up as [`Process::mapping_index_at`] does.
    overlapping: bool,
    /// The entry of `by_start` last found: a stack's frames mostly lie in the mapping of the
    /// frame before (a third of the unwinder's lookups' cost was the search).
    last: std::cell::Cell<(u64, u64, usize)>,
}

impl LiveSet {
    /// Finds the mappings of `p` live at `time` unless they are still those; says whether
    /// they were found again.
    fn update(&mut self, p: &Process, time: u64) -> bool {
        let of = (p.key, p.mappings.len(), p.mapping_changes);
        if self.of == Some(of) && self.from <= time && time < self.until {
            return false;
        }
        let (mut from, mut until) = (0, u64::MAX);
        self.indices.clear();
        self.by_start.clear();
        for (k, m) in p.mappings.iter().enumerate() {
            for t in [Some(m.from), m.to].into_iter().flatten() {
                if t <= time {
                    from = from.max(t);
                } else {
                    until = until.min(t);
                }
            }
            if m.from <= time && m.to.is_none_or(|t| time < t) {
                self.indices.push(k);
                self.by_start.push((m.start, m.end, k));
            }
        }
        self.by_start.sort_unstable();
        self.last.set((0, 0, 0));
        self.overlapping = self.by_start.windows(2).any(|w| w[0].1 > w[1].0);
        (self.of, self.from, self.until) = (Some(of), from, until);
        true
    }

    /// The index of the live mapping of `p` containing `addr` (found for `time`).
    fn index_at(&self, p: &Process, addr: u64, time: u64) -> Option<usize> {
        if self.overlapping {
            return p.mapping_index_at(addr, time);
        }
        let (start, end, k) = self.last.get();
        if start <= addr && addr < end {
            return Some(k);
        }
        let i = self
            .by_start
            .partition_point(|&(start, _, _)| start <= addr);
        let &(start, end, k) = self.by_start.get(i.checked_sub(1)?)?;
        self.last.set((start, end, k));
        (addr < end).then_some(k)
    }
}

/// What a thread's earlier samples showed of its stack.
#[derive(Default)]
struct ThreadStack {
    /// The frames of its last complete stack (perhaps completed from the one before),
    /// innermost first.
    root: Vec<Frame>,
    /// The end of its stack, as far as its samples show: the farthest end of its stack copies
    /// (a copy the kernel cut short stops at the stack's end, or at a page not yet touched
    /// below it).
    end: u64,
}

/// The deepest stack kept as a thread's last complete one (a recursion deeper than the frames
/// kept still passes its callers on from sample to sample, so its samples say why they are
/// cut); the most `--max-stack` allows.
const MAX_ROOT_FRAMES: usize = 65535;

/// The most unwinders a process keeps, one per set of live mappings it was sampled with.
const MAX_UNWINDERS: usize = 16;

/// The most modules the unwinders a process keeps hold together: each holds one per live
/// mapping, and a process with tens of thousands of mappings (up to
/// [`crate::replay::MAX_MAPPINGS`]) that keep changing would otherwise hold sixteen copies of
/// them (a program mapping code at 100,000 places cost root pkgmon 218 MiB).
const MAX_CACHED_MODULES: usize = 1 << 16;

/// How far before the unwind entry of a thread's outermost frame a sampled ip is taken for
/// the thread's start too ([`ProcessUnwinder::find_outermost`]; glibc's clone3 child: 8
/// bytes).
const THREAD_START_GAP: u64 = 16;

/// How the frames of one sample were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Cfi,
    Joined,
    FramePointers,
}

impl ProcessUnwinder {
    /// Forgets what was kept of thread `tid`, which exited.
    pub(crate) fn thread_exited(&mut self, tid: u32) {
        self.threads.remove(&tid);
    }

    /// Unwinds the user stack of sample `s` of process `p` into `out`, innermost first.
    ///
    /// Returns None (and leaves `out` empty) for a sample without a user context.
    pub(crate) fn unwind(
        &mut self,
        u: &mut Unwinding,
        p: &Process,
        rec: &Recording,
        s: &Sample,
        stats: &mut UnwindStats,
        out: &mut Vec<u64>,
    ) -> Option<StackEnd> {
        out.clear();
        let chain = rec.user_chain(s);
        // A user ip in no mapping is code the run never saw mapped: the launcher's own, in the
        // moment a launched command's exec begins. Its stack says nothing of the command.
        if chain
            .first()
            .is_none_or(|&ip| self.mapping_index(p, ip, s.time).is_none())
        {
            stats.unmapped_ip += u64::from(!chain.is_empty());
            return None;
        }
        stats.user_samples += 1;
        let max = u.max_frames;
        let stack = rec.user_stack(s);

        // The kernel's frame-pointer walk replayed over the copy: the position of each chain
        // entry it could check (the caller's stack pointer, 16 bytes above the saved bp).
        let mut fp = std::mem::take(&mut u.fp);
        fp.clear();
        fp.resize(chain.len(), None);
        let mut cfi = std::mem::take(&mut u.cfi);
        cfi.clear();
        let mut cfi_end = CfiEnd::Stuck;
        // An empty copy that was asked for stopped at once: the page at the stack pointer
        // was not yet touched (a sample in a function that just grew its frame into it).
        if let Some(regs) = s
            .regs
            .filter(|_| !stack.is_empty() || rec.user_stack_bytes > 0)
        {
            let read = |addr| word_at(stack, regs.sp, addr);
            let mut bp = regs.bp;
            for (j, &a) in chain.iter().enumerate().skip(1) {
                match (read(bp), read(bp.wrapping_add(8))) {
                    (Some(next), Some(ra)) if ra == a => {
                        fp[j] = Some(bp + 16);
                        bp = next;
                    }
                    _ => break,
                }
            }
            let copy_end = regs.sp.saturating_add(stack.len() as u64);
            let thread = self.threads.entry(s.tid).or_default();
            thread.end = thread.end.max(copy_end);
            let copy = CopyBounds::of(s, copy_end, thread.end);
            cfi_end = self.cfi_unwind(u, p, s.time, regs, stack, copy, &mut cfi);
            // Entry code without unwind information (ld.so's `_start`) ends a stack as well.
            let last = match cfi.len() {
                1 => Some(FrameAddress::InstructionPointer(regs.ip)),
                _ => cfi
                    .last()
                    .and_then(|f| FrameAddress::from_return_address(f.address)),
            };
            if cfi_end == CfiEnd::Stuck && last.is_some_and(|f| self.is_outermost(u, p, s.time, f))
            {
                cfi_end = CfiEnd::Root;
            }
        }

        // Choose: CFI alone when it reached the root; else CFI up to its outermost frame that
        // the frame-pointer walk also found, then the rest of that chain.
        let cfi_reason = match cfi_end {
            CfiEnd::Root => StackEnd::Complete,
            CfiEnd::Limit => StackEnd::CallchainLimit,
            CfiEnd::CopyEnd | CfiEnd::UntouchedPage => StackEnd::StackCopy,
            CfiEnd::Stuck => StackEnd::UnwindInfo,
        };
        let joint = match cfi_end {
            CfiEnd::Root | CfiEnd::Limit => None,
            CfiEnd::CopyEnd | CfiEnd::UntouchedPage | CfiEnd::Stuck => {
                // The chain goes on from a frame rightly only if its function keeps its
                // frame pointer: a frameless one leaves its caller's there, and the chain
                // skips its caller. Each copy frame's position is looked up among the
                // chain's sorted ones (a scan of the chain for each frame of the copy cost a
                // deep recursion with frame pointers 1,400 x 1,024 comparisons a sample, and
                // pkgmon lost 500-1,000 samples a run at 4 kHz).
                let mut sorted = std::mem::take(&mut u.fp_sorted);
                sorted.clear();
                sorted.extend(fp.iter().enumerate().filter_map(|(j, q)| Some(((*q)?, j))));
                // The first entry at each position, as a scan from the start finds it.
                sorted.sort_unstable();
                let mut joint = None;
                for (k, f) in cfi.iter().enumerate().skip(1).rev() {
                    let Some(at) = f.position else { continue };
                    let i = sorted.partition_point(|&(q, _)| q < at);
                    if let Some(&(q, j)) = sorted.get(i)
                        && q == at
                        && self.keeps_frame_pointer(u, p, s.time, f.address)
                    {
                        joint = Some((k, j));
                        break;
                    }
                }
                u.fp_sorted = sorted;
                joint
            }
        };
        let mut frames = std::mem::take(&mut u.frames);
        frames.clear();
        let (source, mut end) = match joint {
            Some((k, j)) => {
                frames.extend_from_slice(&cfi[..=k]);
                let end = self.fp_tail(u, p, s, chain, &fp, j + 1, &mut frames);
                // The chain may give up sooner than the copy: then the copy's frames stand.
                if frames.len() > cfi.len() || end == StackEnd::Complete {
                    (Source::Joined, end)
                } else {
                    frames.clear();
                    frames.extend_from_slice(&cfi);
                    (Source::Cfi, cfi_reason)
                }
            }
            None if cfi.len() >= 2 || (!cfi.is_empty() && chain.len() == 1) => {
                frames.extend_from_slice(&cfi);
                (Source::Cfi, cfi_reason)
            }
            None => {
                let end = self.fp_tail(u, p, s, chain, &fp, 0, &mut frames);
                // A chain no longer than the copy's frames says less about why the stack
                // ends: a sample in a function whose frame outgrows the copy, whose bp holds
                // data, has a one-frame copy that ended at the copy, not at missing unwind
                // information.
                if end != StackEnd::Complete && !cfi.is_empty() && frames.len() <= cfi.len() {
                    frames.clear();
                    frames.extend_from_slice(&cfi);
                    (Source::Cfi, cfi_reason)
                } else {
                    (Source::FramePointers, end)
                }
            }
        };
        // A frame-pointer chain that stopped at a frame it found inside the copy (a function
        // without a frame pointer, glibc's __libc_start_call_main above a main built without
        // unwind tables, whose own first frame CFI could not unwind) goes on from that frame
        // by its unwind information: its stack pointer is the frame's position, its rbp the
        // one its callee saved just below.
        if source != Source::Cfi
            && end == StackEnd::UnwindInfo
            && frames.len() < max
            && let Some(regs) = s.regs
            && let Some(&Frame {
                address,
                position: Some(at),
            }) = frames.last()
            && let Some(from) = FrameAddress::from_return_address(address)
            && let Some(bp) = at.checked_sub(16).and_then(|a| word_at(stack, regs.sp, a))
        {
            let copy = CopyBounds::of(
                s,
                regs.sp.saturating_add(stack.len() as u64),
                self.threads.get(&s.tid).map_or(0, |t| t.end),
            );
            // A rare path: its own buffer (`u.cfi` holds this sample's CFI frames).
            let mut more = Vec::new();
            let start = UnwindRegsX86_64::new(address, at, bp);
            // rbx here is the one of a frame the chain reached, not the sample's.
            let more_end = self.cfi_walk(
                u, p, s.time, regs.sp, None, from, start, stack, copy, &mut more,
            );
            if !more.is_empty() || more_end == CfiEnd::Root {
                let room = max - frames.len();
                end = match more_end {
                    _ if more.len() > room => StackEnd::CallchainLimit,
                    CfiEnd::Root => StackEnd::Complete,
                    CfiEnd::Limit => StackEnd::CallchainLimit,
                    CfiEnd::CopyEnd | CfiEnd::UntouchedPage => StackEnd::StackCopy,
                    CfiEnd::Stuck => StackEnd::UnwindInfo,
                };
                more.truncate(room);
                frames.extend_from_slice(&more);
                stats.fp_then_cfi += 1;
            }
        }
        let whole = end == StackEnd::Complete || self.complete_from_thread(s.tid, &mut frames);
        if whole && frames.len() <= MAX_ROOT_FRAMES {
            let root = &mut self.threads.entry(s.tid).or_default().root;
            root.clear();
            root.extend_from_slice(&frames);
        }
        if whole && end != StackEnd::Complete {
            // Whole, but deeper than the frames kept: cut as the kernel's limit cuts.
            if frames.len() > max {
                frames.truncate(max);
                end = StackEnd::CallchainLimit;
            } else {
                stats.completed_from_thread += 1;
                end = StackEnd::Complete;
            }
        }
        // A frame-pointer chain that took over where the copy stopped at a page not yet
        // touched, and then stopped at a function without a frame pointer (glibc's
        // __libc_start_call_main, whose unwind information the copy would have used), ended
        // for the copy's sake: a sample in main as it first touched its 8 KiB of buffers (the
        // reload workload, with frame pointers, one run in ~10) was counted as code without
        // unwind information.
        if source != Source::Cfi && cfi_end == CfiEnd::UntouchedPage && end == StackEnd::UnwindInfo
        {
            end = StackEnd::StackCopy;
        }
        if cfi_end == CfiEnd::UntouchedPage && end == StackEnd::StackCopy {
            stats.untouched_page += 1;
        }
        match source {
            Source::Cfi => {}
            Source::Joined => stats.joined += 1,
            Source::FramePointers => stats.frame_pointers_only += 1,
        }
        stats.count(end);
        out.extend(frames.iter().map(|f| f.address));
        u.cfi = cfi;
        u.fp = fp;
        u.frames = frames;
        Some(end)
    }

    /// Unwinds a stack copied without a sample (a call site the in-kernel latency programs
    /// copied, [`crate::bpf::SyscallLatency`]) from `.eh_frame` alone: `regs` and `stack`
    /// (from `regs.sp` up) of process `p` at `time`, innermost first into `out`, as far as
    /// the copy and the unwind information go.
    pub(crate) fn unwind_copy(
        &mut self,
        u: &mut Unwinding,
        p: &Process,
        time: u64,
        regs: crate::recording::UserRegs,
        stack: &[u8],
        out: &mut Vec<u64>,
    ) {
        out.clear();
        if self.mapping_index(p, regs.ip, time).is_none() {
            return;
        }
        let mut cfi = std::mem::take(&mut u.cfi);
        cfi.clear();
        let end = regs.sp.saturating_add(stack.len() as u64);
        let copy = CopyBounds {
            end,
            full: true,
            stack_end: end,
        };
        self.cfi_unwind(u, p, time, regs, stack, copy, &mut cfi);
        out.extend(cfi.iter().map(|f| f.address));
        u.cfi = cfi;
    }

    /// Appends the frame-pointer chain from entry `from` on, and says why it ends: at the
    /// root when its last function has no caller by its unwind information; else at the
    /// kernel's depth limit, or for want of a stack copy reaching that far when the chain
    /// runs out (or into an address outside every mapping) beyond the copy, or at a frame
    /// that cannot be unwound inside it.
    #[allow(clippy::too_many_arguments)]
    fn fp_tail(
        &mut self,
        u: &mut Unwinding,
        p: &Process,
        s: &Sample,
        chain: &[u64],
        fp: &[Option<u64>],
        from: usize,
        frames: &mut Vec<Frame>,
    ) -> StackEnd {
        for (j, &a) in chain.iter().enumerate().skip(from) {
            if frames.len() >= u.max_frames {
                return StackEnd::CallchainLimit;
            }
            if j > 0 && self.mapping_index(p, a, s.time).is_none() {
                break;
            }
            // Past a frameless function (not the sampled one, whose frame pointer the first
            // entry does not depend on) the chain has skipped its caller.
            if j >= 2 && !self.keeps_frame_pointer(u, p, s.time, chain[j - 1]) {
                break;
            }
            frames.push(Frame {
                address: a,
                position: fp[j],
            });
        }
        let last = match frames.len() {
            1 => Some(FrameAddress::InstructionPointer(chain[0])),
            _ => frames
                .last()
                .and_then(|f| FrameAddress::from_return_address(f.address)),
        };
        if last.is_some_and(|f| self.is_outermost(u, p, s.time, f)) {
            return StackEnd::Complete;
        }
        match frames.last() {
            _ if s.chain_limited => StackEnd::CallchainLimit,
            // Beyond a copy the kernel cut by its size; a chain that leaves a copy which
            // holds the whole stack has left the stack, and says no more than a stuck unwind.
            Some(last)
                if frames.len() > 1 && last.position.is_none() && s.copy_end == CopyEnd::AtSize =>
            {
                StackEnd::StackCopy
            }
            _ => StackEnd::UnwindInfo,
        }
    }

    /// Completes `frames` with the outer frames of the thread's last complete stack (itself
    /// perhaps completed so): a stack deeper than the copy and the callchain limit is still
    /// whole when the sample before it, a little less deep, was. The joint is `frames`'
    /// outermost frame at a known stack position, found in that stack at the same position
    /// with the same address (a frame still on the stack has kept its callers), the
    /// frame-pointer chain's frames past it agreeing; else `frames`' outermost frame, when its
    /// position is unknown (a frame of the chain beyond the copy) and its address occurs
    /// exactly once there.
    fn complete_from_thread(&self, tid: u32, frames: &mut Vec<Frame>) -> bool {
        let Some(root) = self
            .threads
            .get(&tid)
            .map(|t| &t.root)
            .filter(|r| !r.is_empty() && frames.len() >= 2)
        else {
            return false;
        };
        let by_position = frames
            .iter()
            .rposition(|f| f.position.is_some())
            .and_then(|k| {
                let at = root.iter().position(|f| *f == frames[k])?;
                let (chained, tail) = (&frames[k + 1..], &root[at + 1..]);
                let agree = chained.len() < tail.len()
                    && chained
                        .iter()
                        .zip(tail)
                        .all(|(c, t)| c.address == t.address);
                agree.then_some((k, at))
            });
        let by_address = || {
            let last = frames.len() - 1;
            frames[last].position.is_none().then_some(())?;
            let mut hits = root
                .iter()
                .enumerate()
                .skip(1)
                .filter(|(_, f)| f.address == frames[last].address);
            match (hits.next(), hits.next()) {
                (Some((at, _)), None) => Some((last, at)),
                _ => None,
            }
        };
        let Some((k, at)) = by_position.or_else(by_address) else {
            return false;
        };
        let tail = &root[at + 1..];
        if tail.is_empty() {
            return false;
        }
        frames.truncate(k + 1);
        frames.extend_from_slice(tail);
        true
    }

    /// The index in [`Process::mappings`] of the mapping of `p` containing `addr` at `time`.
    fn mapping_index(&mut self, p: &Process, addr: u64, time: u64) -> Option<usize> {
        if self.live.update(p, time) {
            self.current = None;
        }
        self.live.index_at(p, addr, time)
    }

    /// The unwinder for the mappings of `p` live at `time`, made if none is kept for them.
    fn unwinder(&mut self, u: &mut Unwinding, p: &Process, time: u64) -> &LiveUnwinder {
        let k = self.unwinder_index(u, p, time);
        &self.unwinders[k].1
    }

    /// Where in `unwinders` [`ProcessUnwinder::unwinder`]'s answer is.
    fn unwinder_index(&mut self, u: &mut Unwinding, p: &Process, time: u64) -> usize {
        if self.live.update(p, time) {
            self.current = None;
        }
        match self.current {
            Some(k) => k,
            None => {
                let k = match self
                    .unwinders
                    .iter()
                    .position(|(m, _)| *m == self.live.indices)
                {
                    Some(k) => k,
                    None => {
                        // A process whose mappings keep changing (a JIT, dlopen and dlclose)
                        // would otherwise gather an unwinder per set it was ever sampled with.
                        let modules: usize = self.unwinders.iter().map(|(m, _)| m.len()).sum();
                        if self.unwinders.len() >= MAX_UNWINDERS
                            || modules + self.live.indices.len() > MAX_CACHED_MODULES
                        {
                            self.unwinders.clear();
                        }
                        let mut fh = FhUnwinder::new();
                        let mut signal_frames = Vec::new();
                        let mut register_frames = Vec::new();
                        for &k in &self.live.indices {
                            let m = u.module_for(&p.mappings[k]);
                            if let Some(module) = m.module {
                                fh.add_module(module);
                            }
                            signal_frames.extend(m.signal_frames);
                            register_frames.extend(m.register_frames);
                        }
                        let live = LiveUnwinder::new(fh, signal_frames, register_frames);
                        self.unwinders.push((self.live.indices.clone(), live));
                        self.unwinders.len() - 1
                    }
                };
                self.current = Some(k);
                k
            }
        }
    }

    /// Whether the function that return address `ra` returns into keeps its frame pointer
    /// there: its frame is found from `rbp` (its unwind information defines the frame by
    /// `rbp`, or it has none and frame pointers are all there is). Then the saved `rbp` of its
    /// callee, the kernel's next chain entry, is its own frame and the entry after is its
    /// caller. Asked of framehop with two `rbp` values: the frame moves with it or not.
    fn keeps_frame_pointer(&mut self, u: &mut Unwinding, p: &Process, time: u64, ra: u64) -> bool {
        /// The most answers kept.
        const MAX_KEPT: usize = 1 << 16;
        let Some(f) = FrameAddress::from_return_address(ra) else {
            return true;
        };
        // Asked for every frame of a deep chain: the answer comes first, the live mappings
        // are looked at only to find a new one (and forget the answers when they changed).
        if let Some(&k) = self.keeps_fp.get(&ra) {
            return k;
        }
        let k = self.unwinder_index(u, p, time);
        if self.kept_for != self.live.indices || self.keeps_fp.len() >= MAX_KEPT {
            self.keeps_fp.clear();
            self.kept_for.clone_from(&self.live.indices);
        }
        let live = &self.unwinders[k].1;
        // A signal restorer has no frame of its own: the kernel's chain goes on from the
        // interrupted code's rbp, past the interrupted function (and any frameless caller)
        // without a word. framehop, which does not evaluate the restorer's DWARF expressions,
        // would answer as for code without unwind information (frame pointers only), and a
        // handler running on an alternate stack (sigaltstack, the interrupted stack outside
        // the copy) was joined there: raiser's callee `handler` showed under `main`, its
        // stacks complete, raiser 12.6% inclusive for 56.4%.
        let at = f.address_for_lookup();
        let restorer = live.signal_frames.iter().any(|r| r.contains(&at));
        let fh = &live.fh;
        let mut cfa = |bp: u64| {
            let mut regs = UnwindRegsX86_64::new(ra, 0x10_0000, bp);
            match fh.unwind_frame(f, &mut regs, &mut u.cache, &mut |_| Ok(0x1000)) {
                Ok(_) => Some(regs.sp()),
                Err(_) => None,
            }
        };
        let keeps = !restorer && cfa(0x20_0000) != cfa(0x30_0000);
        self.keeps_fp.insert(ra, keeps);
        keeps
    }

    /// Whether the function of frame `f` (the ip, or a return address) has no caller: its
    /// return address is undefined by its unwind information (`_start`'s and `clone3`'s are),
    /// or it is the entry code of its file (`ld.so`'s `_start` has no unwind entry; its call of
    /// `_dl_start` returns a few bytes after the entry point).
    fn is_outermost(&mut self, u: &mut Unwinding, p: &Process, time: u64, f: FrameAddress) -> bool {
        /// The most answers kept.
        const MAX_KEPT: usize = 1 << 16;
        let at = f.address_for_lookup();
        // The answer depends on the file mapped there and the address alone: kept for the
        // same mapping (a file mapped again elsewhere, or another file here, is a new one).
        let key = (at, matches!(f, FrameAddress::InstructionPointer(_)));
        let mapping = self.mapping_index(p, at, time);
        if let Some(k) = mapping
            && let Some(&(kept, outermost)) = self.outermost.get(&key)
            && kept == k
        {
            return outermost;
        }
        let outermost = self.find_outermost(u, p, time, f, mapping);
        if let Some(k) = mapping {
            if self.outermost.len() >= MAX_KEPT {
                self.outermost.clear();
            }
            self.outermost.insert(key, (k, outermost));
        }
        outermost
    }

    /// [`ProcessUnwinder::is_outermost`] without its memory; a sampled ip is also outermost
    /// a few bytes before such code: a new thread's first instructions, where the child of
    /// glibc's clone3 returns from its system call into bytes no unwind entry covers (the
    /// parent's `ret` shares them) and the new stack's top holds no return address (one
    /// such sample of a run that starts 300 threads was counted as cut for want of unwind
    /// information).
    fn find_outermost(
        &mut self,
        u: &mut Unwinding,
        p: &Process,
        time: u64,
        f: FrameAddress,
        mapping: Option<usize>,
    ) -> bool {
        if self.ends_stack(u, p, time, f, mapping) {
            return true;
        }
        let FrameAddress::InstructionPointer(ip) = f else {
            return false;
        };
        (1..=THREAD_START_GAP).any(|k| {
            ip.checked_add(k).is_some_and(|a| {
                let mapping = self.mapping_index(p, a, time);
                self.ends_stack(u, p, time, FrameAddress::InstructionPointer(a), mapping)
            })
        })
    }

    /// Whether frame `f` (in the mapping of index `mapping`) is the entry code of its file or
    /// has its return address undefined by its unwind information.
    fn ends_stack(
        &mut self,
        u: &mut Unwinding,
        p: &Process,
        time: u64,
        f: FrameAddress,
        mapping: Option<usize>,
    ) -> bool {
        /// How far after the entry point an address still counts as the entry code's.
        const ENTRY_CODE: u64 = 64;
        let at = f.address_for_lookup();
        if let Some(m) = mapping.map(|k| &p.mappings[k])
            && let Some(elf) = u.images.get(m)
            && let Some(bias) = elf.bias(m.start, m.end, m.pgoff)
            && elf.entry != 0
            && at.wrapping_sub(bias).wrapping_sub(elf.entry) < ENTRY_CODE
        {
            return true;
        }
        let fh = &self.unwinder(u, p, time).fh;
        // A frame-pointer walk would read memory, which there is none of: only an end-of-stack
        // rule answers without reading.
        let mut regs = UnwindRegsX86_64::new(f.address(), 0x1000, 0x1000);
        matches!(
            fh.unwind_frame(f, &mut regs, &mut u.cache, &mut |_| Err(())),
            Ok(None)
        )
    }

    /// CFI unwinding over the copy into `out`; says how it ended.
    #[allow(clippy::too_many_arguments)]
    fn cfi_unwind(
        &mut self,
        u: &mut Unwinding,
        p: &Process,
        time: u64,
        regs: crate::recording::UserRegs,
        stack: &[u8],
        copy: CopyBounds,
        out: &mut Vec<Frame>,
    ) -> CfiEnd {
        out.push(Frame {
            address: regs.ip,
            position: None,
        });
        let r = UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp);
        let from = FrameAddress::InstructionPointer(regs.ip);
        self.cfi_walk(u, p, time, regs.sp, regs.bx, from, r, stack, copy, out)
    }

    /// CFI unwinding over the copy (`stack`, from `base` up) from frame `address` with
    /// registers `r` (and rbx `bx`, when known), appending its callers to `out`; says how it
    /// ended.
    #[allow(clippy::too_many_arguments)]
    fn cfi_walk(
        &mut self,
        u: &mut Unwinding,
        p: &Process,
        time: u64,
        base: u64,
        bx: Option<u64>,
        mut address: FrameAddress,
        mut r: UnwindRegsX86_64,
        stack: &[u8],
        copy: CopyBounds,
        out: &mut Vec<Frame>,
    ) -> CfiEnd {
        let max = u.max_frames;
        let k = self.unwinder_index(u, p, time);
        let (live, set) = (&self.unwinders[k].1, &self.live);
        let mut read = |addr| word_at(stack, base, addr).ok_or(());
        loop {
            if out.len() >= max {
                return CfiEnd::Limit;
            }
            // A signal restorer's frame: the next frame is the code the signal interrupted,
            // its registers in the ucontext just above (the restorer's unwind entry says so in
            // DWARF expressions, which framehop does not evaluate).
            // A sample in the restorer's `rt_sigreturn` has its user ip just past the
            // `syscall` instruction, the entry's end.
            let at = address.address_for_lookup();
            let ip = matches!(address, FrameAddress::InstructionPointer(_));
            if live
                .signal_frames
                .iter()
                .any(|f| f.contains(&at) || (ip && at == f.end))
            {
                let Some((ip, sp, bp)) = crate::signal_frame::registers(r.sp(), &mut read) else {
                    let needs = r.sp().saturating_add(crate::signal_frame::UC_READ);
                    return copy.read_failed(needs.saturating_sub(1));
                };
                if set.index_at(p, ip, time).is_none() {
                    return CfiEnd::Stuck;
                }
                r = UnwindRegsX86_64::new(ip, sp, bp);
                out.push(Frame {
                    address: ip,
                    position: Some(sp),
                });
                address = FrameAddress::InstructionPointer(ip);
                continue;
            }
            // A frame kept in another register (ld.so's lazy-binding trampolines): read by
            // its unwind entry, the register's value from where an inner frame saved it. At
            // the trampoline's first instructions, before the register holds the frame, its
            // entry says rsp, as framehop's rules do.
            if let Some(f) = live.register_frame(at)
                && let Some(here) = rbx_row(f, at)
            {
                // A read the copy cannot answer ends the stack there, as in framehop's steps
                // below: the trampoline saving its registers is often what touches a new
                // stack page, so a sample in its page fault has its copy stop at that page.
                let mut failed = None;
                let mut reading = |addr| read(addr).inspect_err(|_| failed = Some(addr));
                let regs = (&r, base, bx);
                let step = register_frame_step(u, p, time, set, &here, regs, out, &mut reading);
                let Some((ra, cfa, bp)) = step else {
                    return failed.map_or(CfiEnd::Stuck, |a| copy.read_failed(a));
                };
                if set.index_at(p, ra, time).is_none() {
                    return CfiEnd::Stuck;
                }
                out.push(Frame {
                    address: ra,
                    position: Some(cfa),
                });
                let Some(next) = FrameAddress::from_return_address(ra) else {
                    return CfiEnd::Root;
                };
                r = UnwindRegsX86_64::new(ra, cfa, bp);
                address = next;
                continue;
            }
            // framehop holds an entry's offsets in 16 bits: a frame of over 256 KiB that saves
            // rbp outgrows them, and framehop refuses the entry or guesses with a frame-pointer
            // rule (an unmapped return address from rbp's data). Such a frame's return address
            // lies past any copy (64 KiB at most): read from the entry with gimli, it says the
            // copy ended the stack, not the unwind information.
            let here = r;
            let refused = |u: &mut Unwinding| match return_address_at(u, p, set, time, at, &here) {
                Some(a) => copy.read_failed(a),
                None => CfiEnd::Stuck,
            };
            match live
                .fh
                .unwind_frame(address, &mut r, &mut u.cache, &mut read)
            {
                Ok(None) => return CfiEnd::Root,
                Ok(Some(ra)) => {
                    let Some(next) = FrameAddress::from_return_address(ra) else {
                        return CfiEnd::Root;
                    };
                    if set.index_at(p, ra, time).is_none() {
                        return refused(u);
                    }
                    out.push(Frame {
                        address: ra,
                        position: Some(r.sp()),
                    });
                    address = next;
                }
                Err(FhError::CouldNotReadStack(a)) => return copy.read_failed(a),
                Err(_) => return refused(u),
            }
        }
    }
}

/// Where the return address of the frame at lookup address `at` with registers `r` lies, by
/// its unwind entry read with gimli (for a frame framehop could not unwind); None without one.
fn return_address_at(
    u: &mut Unwinding,
    p: &Process,
    set: &LiveSet,
    time: u64,
    at: u64,
    r: &UnwindRegsX86_64,
) -> Option<u64> {
    let row = entry_row(u, p, set, time, at)?;
    let base = match row.cfa.0 {
        gimli::X86_64::RSP => r.sp(),
        gimli::X86_64::RBP => r.bp(),
        _ => return None,
    };
    base.checked_add_signed(row.cfa.1)?
        .checked_add_signed(row.ra?)
}

/// The rules of the unwind entry for lookup address `at` in the live mappings of `p` at `time`,
/// read with gimli from its file; None outside the mappings or without an entry.
fn entry_row(
    u: &mut Unwinding,
    p: &Process,
    set: &LiveSet,
    time: u64,
    at: u64,
) -> Option<crate::register_frame::Row> {
    let m = &p.mappings[set.index_at(p, at, time)?];
    let elf = u.images.tables(m)?;
    let bias = elf.bias(m.start, m.end, m.pgoff)?;
    crate::register_frame::row(&elf, at.checked_sub(bias)?)
}

/// The unwind entry's rules of frame `f` at the lookup address `at` when they put its CFA in
/// rbx; None elsewhere (an rsp-based CFA, which framehop follows).
fn rbx_row(f: &RegisterFrames, at: u64) -> Option<crate::register_frame::Row> {
    let row = crate::register_frame::row(&f.elf, at.checked_sub(f.bias)?)?;
    (row.cfa.0 == gimli::X86_64::RBX).then_some(row)
}

/// One step of unwinding through a frame whose CFA is rbx plus an offset by its unwind entry
/// (`here`, [`rbx_row`]), rbx's value being where the nearest inner frame of `out` saved it
/// (those frames' entries read with gimli too), else (none saved it, or the sample is in the
/// epilogue that restored it: the slot lies below `base`, the sample's stack pointer) the
/// sample's `bx`. Returns the caller's return address, this frame's CFA (the caller's stack
/// pointer) and the caller's rbp; None when rbx is not known or a read fails.
#[allow(clippy::too_many_arguments)]
fn register_frame_step(
    u: &mut Unwinding,
    p: &Process,
    time: u64,
    set: &LiveSet,
    here: &crate::register_frame::Row,
    (r, base, bx): (&UnwindRegsX86_64, u64, Option<u64>),
    out: &[Frame],
    read: &mut impl FnMut(u64) -> Result<u64, ()>,
) -> Option<(u64, u64, u64)> {
    // The frames inside this one, outermost first: frame j's CFA is frame j+1's position.
    let mut rbx = None;
    for j in (0..out.len().saturating_sub(1)).rev() {
        let lookup = match j {
            0 => out[0].address,
            _ => out[j].address.checked_sub(1)?,
        };
        let cfa = out[j + 1].position?;
        let row = entry_row(u, p, set, time, lookup)?;
        if let Some(n) = row.rbx {
            let slot = cfa.checked_add_signed(n)?;
            // Below the sample's stack pointer: an epilogue past its `pop rbx` (its entry
            // still names the slot), so the register holds the value again: the sample's.
            if slot >= base {
                rbx = Some(read(slot).ok()?);
            }
            break;
        }
    }
    let cfa = rbx.or(bx)?.checked_add_signed(here.cfa.1)?;
    let ra = read(cfa.checked_add_signed(here.ra?)?).ok()?;
    let bp = match here.rbp {
        Some(n) => read(cfa.checked_add_signed(n)?).ok()?,
        None => r.bp(),
    };
    Some((ra, cfa, bp))
}

/// Where a sample's stack copy ends, and the stack.
#[derive(Debug, Clone, Copy)]
struct CopyBounds {
    /// The copy's end (the stack pointer plus its length).
    end: u64,
    /// Whether the copy is as long as asked: the kernel cut it by its size.
    full: bool,
    /// The farthest end of the thread's copies: the stack's end, as far as they show.
    stack_end: u64,
}

impl CopyBounds {
    /// The bounds of sample `s`'s copy, ending at `end`, of a thread whose copies reached
    /// `thread_end` at the farthest: the stack's end as far as they show, or beyond reach when
    /// the copier knew the copy stopped below where the frames end.
    fn of(s: &Sample, end: u64, thread_end: u64) -> CopyBounds {
        CopyBounds {
            end,
            full: s.copy_end == CopyEnd::AtSize,
            stack_end: match s.copy_end {
                CopyEnd::BelowFrames => u64::MAX,
                CopyEnd::Short | CopyEnd::AtSize => thread_end,
            },
        }
    }

    /// How unwinding ends when it cannot read the stack at `addr`: past a copy cut by its
    /// size; past a copy that stopped below the stack's end, so at a page not yet touched
    /// (the kernel copies only pages in memory); else stuck (a read outside the stack, or
    /// inside the copy: no such frame).
    fn read_failed(self, addr: u64) -> CfiEnd {
        if addr < self.end {
            CfiEnd::Stuck
        } else if self.full {
            CfiEnd::CopyEnd
        } else if addr < self.stack_end {
            CfiEnd::UntouchedPage
        } else {
            CfiEnd::Stuck
        }
    }
}

/// How CFI unwinding of a copy ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CfiEnd {
    /// At the outermost frame.
    Root,
    /// It needed stack beyond the copy, which was cut by its size.
    CopyEnd,
    /// It needed stack beyond the copy, which stopped at a page not yet touched, below the
    /// stack's end.
    UntouchedPage,
    /// At the most frames kept.
    Limit,
    /// At a frame it could not unwind.
    Stuck,
}

/// Unwinds the user stacks of all samples of `replay`'s processes, each in time order, as a
/// streaming run does as samples arrive (see [`Aggregator`](crate::Aggregator)).
///
/// Samples of processes the replay does not know keep no user stack. `max_frames` caps each
/// stack.
pub fn unwind_user_stacks(rec: &Recording, replay: &Replay, max_frames: usize) -> UserStacks {
    let n = rec.samples.len();
    let mut out = UserStacks {
        frames: Vec::new(),
        ranges: vec![0..0; n],
        ends: vec![None; n],
        stats: UnwindStats::default(),
    };
    let mut u = Unwinding::new(Images::default(), max_frames);
    let mut frames = Vec::new();
    for p in &replay.processes {
        let mut pu = ProcessUnwinder::default();
        for &i in &p.samples {
            let s = &rec.samples[i];
            let end = pu.unwind(&mut u, p, rec, s, &mut out.stats, &mut frames);
            let start = out.frames.len() as u32;
            out.frames.extend_from_slice(&frames);
            out.ranges[i] = start..out.frames.len() as u32;
            out.ends[i] = end;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::tests::{mmap_len, side};

    pub(super) fn mapping(path: &str) -> Mapping {
        Mapping {
            start: 0x1000,
            end: 0x2000,
            pgoff: 0,
            filename: path.into(),
            build_id: None,
            from: 0,
            to: None,
        }
    }

    /// Frames at the given (address, position) pairs, innermost first.
    fn frames(list: &[(u64, Option<u64>)]) -> Vec<Frame> {
        list.iter()
            .map(|&(address, position)| Frame { address, position })
            .collect()
    }

    /// A truncated stack takes the outer frames of the thread's last complete one where a
    /// frame sits at the same position with the same address; the frame-pointer chain's
    /// frames past that joint must agree with it, and the result must fit `max`.
    #[test]
    fn a_stack_is_completed_from_the_threads_last_one_at_a_shared_frame() {
        let mut p = ProcessUnwinder::default();
        // main (0x10) ← driver (0x20) ← f (0x30) ← f ← f, positions growing outward.
        let root = frames(&[
            (0x30, Some(0x900)),
            (0x30, Some(0x940)),
            (0x20, Some(0x980)),
            (0x10, Some(0x9c0)),
        ]);
        p.threads.entry(7).or_default().root = root.clone();
        // Deeper by two levels, its copy ending at the frame at 0x940.
        let mut deeper = frames(&[
            (0x31, Some(0x880)),
            (0x30, Some(0x8c0)),
            (0x30, Some(0x940)),
        ]);
        assert!(p.complete_from_thread(7, &mut deeper));
        let addresses: Vec<u64> = deeper.iter().map(|f| f.address).collect();
        assert_eq!(addresses, [0x31, 0x30, 0x30, 0x20, 0x10]);
        // The same, with the frame-pointer chain going on past the copy: agreeing, and not.
        let mut agreeing = frames(&[(0x31, Some(0x880)), (0x30, Some(0x940)), (0x20, None)]);
        assert!(p.complete_from_thread(7, &mut agreeing));
        assert_eq!(agreeing.len(), 4);
        let mut disagreeing = frames(&[(0x31, Some(0x880)), (0x30, Some(0x940)), (0x25, None)]);
        assert!(!p.complete_from_thread(7, &mut disagreeing));
        assert_eq!(disagreeing.len(), 3, "left as it was");
        // No frame at that position (another activation): left truncated.
        let mut elsewhere = frames(&[(0x31, Some(0x880)), (0x30, Some(0x948))]);
        assert!(!p.complete_from_thread(7, &mut elsewhere));
        // Another thread's stacks are not used, nor those of a thread that exited.
        assert!(!p.complete_from_thread(8, &mut deeper.clone()));
        p.thread_exited(7);
        assert!(p.threads.is_empty());
        assert!(!p.complete_from_thread(7, &mut deeper.clone()));
    }

    /// A sample in a new thread's first instructions (the child side of glibc's clone3,
    /// just after its system call, where no unwind entry applies and the new stack holds no
    /// return address) is the thread's whole stack; a sample stuck the same way elsewhere in
    /// clone3 is not.
    #[test]
    fn a_new_threads_first_instructions_are_its_outermost_frame() {
        use crate::recording::UserRegs;
        let path = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6").expect("libc");
        let data = std::fs::read(&path).expect("libc");
        // clone3 is not an exported symbol: found by its system call, `mov $435, %eax;
        // syscall`.
        let call = [0xb8, 0xb3, 0x01, 0x00, 0x00, 0x0f, 0x05];
        let at = data
            .windows(call.len())
            .position(|w| w == call)
            .expect("clone3's system call") as u64;
        let child = at + call.len() as u64;
        // Earlier in clone3, 16 bytes before the system call's number is set.
        let earlier = at - 16;
        let base = 0x7f00_0000_0000u64;
        let len = (data.len() as u64).next_multiple_of(0x1000);
        let libc = path.to_str().expect("utf-8");
        let mut rec = Recording {
            side_band: vec![side(1, mmap_len(5, base, len, libc))],
            user_stack_bytes: 64,
            ..Recording::default()
        };
        // The top of a new thread's stack: nothing that is code.
        let stack = [0x1234u64.to_ne_bytes(), [0; 8]].concat();
        for (time, ip) in [(10, base + child), (20, base + earlier)] {
            let regs = UserRegs {
                ip,
                sp: 0x7ffd_0000_0000,
                bp: 0,
                bx: None,
            };
            rec.push_sample(time, 5, 6, 0, 1, ip, true, Some(regs), &[], &[ip], &stack);
        }
        let replay = crate::replay::replay(&rec);
        let stacks = unwind_user_stacks(&rec, &replay, 127);
        assert_eq!(stacks.frames(0).len(), 1);
        assert_eq!(
            stacks.end(0),
            Some(StackEnd::Complete),
            "{:?}",
            stacks.stats
        );
        assert_eq!(
            stacks.end(1),
            Some(StackEnd::UnwindInfo),
            "{:?}",
            stacks.stats
        );
    }

    /// The live mappings kept between samples answer as a scan of all the mappings does, at
    /// every time and address, through mmaps over earlier ones, an exec and a later mmap
    /// at an earlier time (records from two CPUs); and they are found again only when a
    /// mapping starts or ends or the mappings change.
    #[test]
    fn the_live_mappings_kept_answer_as_a_scan_of_all() {
        use crate::recording::SideBand;
        let mmap = |time, addr, len, name| side(time, mmap_len(5, addr, len, name));
        let mut side_band = vec![
            mmap(1, 0x1000, 0x3000, "/bin/a"),
            mmap(10, 0x8000, 0x1000, "/lib/b"),
            mmap(20, 0x2000, 0x1000, "/lib/c"),
            mmap(30, 0x8000, 0x2000, "/lib/d"),
        ];
        side_band.push(side(
            40,
            SideBand::Comm {
                pid: 5,
                tid: 5,
                comm: "e".into(),
                exec: true,
            },
        ));
        side_band.push(mmap(41, 0x1000, 0x1000, "/bin/e"));
        let rec = Recording {
            side_band,
            ..Recording::default()
        };
        let replay = crate::replay::replay(&rec);
        let p = replay.by_pid(5).next().expect("process 5");
        let mut live = LiveSet::default();
        let mut found = 0;
        for time in 0..50 {
            found += usize::from(live.update(p, time));
            for addr in (0..0xb000).step_by(0x400) {
                assert_eq!(
                    live.index_at(p, addr, time),
                    p.mapping_index_at(addr, time),
                    "{addr:#x} at {time}"
                );
            }
        }
        // At 0, 1, 10, 20, 30, 40 and 41.
        assert_eq!(found, 7);
        // A mapping ended by the replay after the set was found (its change counted).
        let mut later = p.clone();
        if let Some(m) = later.mappings.last_mut() {
            m.to = Some(45);
        }
        later.mapping_changes += 1;
        assert!(live.update(&later, 49));
        assert_eq!(live.index_at(&later, 0x1000, 49), None);
    }
}
