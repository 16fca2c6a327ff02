//! Each sample's user stack copy, taken by a BPF program on the sampling events in place of
//! the kernel's `PERF_SAMPLE_STACK_USER`. The kernel copies from the stack pointer to the end
//! of the stack's mapping, kilobytes above the outermost frame, and ends each copy with a
//! fault on the page beyond; its copy was most of what a sample cost the sampled task beyond
//! what `perf record -g` costs. The program copies up to where the thread's frames end: the
//! top of the stack a thread was created with (noted at its creation by a second program), a
//! main thread's `argv` end (noted at its exec by a third; both in the task's storage, read
//! without a hash lookup), or where the decoder found them to end in an earlier copy (a main
//! thread's `argv`, a glibc thread's descriptor: `recording/live_stack.rs`) once user space
//! has told it ([`LiveCopy::set_end`]); else page by page up to the copy size or the first
//! page it cannot read, as the kernel.
//!
//! The program writes its record through a `PERF_COUNT_SW_BPF_OUTPUT` event of its CPU that
//! shares that CPU's sampling ring, so the record lies just before the sample it belongs to;
//! the decoder pairs them by CPU and stack pointer (`recording/live_stack.rs` reads
//! the record). At the full copy size, a sample taken in user mode whose copy is not cut at
//! its size is written whole instead, its fields after the copy, and the kernel writes none
//! (`whole_sample`).
//! Runs that copy at full size do not ask the kernel for the user frame-pointer chain (the
//! decoder walks it over the copy); for a copy cut at its size the program walks it and
//! writes it in a second record, since it goes on past the copy.

use std::os::fd::{AsRawFd, OwnedFd};

use super::insn::{Alu, Asm, Code, Cond, Helper, Label, MapSlot, Reg, Size};
use super::map::{Map, MapKind};
use super::prog::{Attachment, Program};
use crate::recording::{
    CHAIN_RECORD, COPY_HEADER as HEADER, CopierEnd as Ended, SAMPLE_TRAILER, WHOLE_SAMPLE,
};
use crate::{Error, Result};

const ENDS: MapSlot = MapSlot(0);
const BUF: MapSlot = MapSlot(1);
const OUT: MapSlot = MapSlot(2);
const TOPS: MapSlot = MapSlot(3);

/// The most a record can copy: a perf record's size is 16 bits, and this one's sample fields
/// (header, identifier, CPU: 24 bytes), the raw data's size (4) and its header (16) come
/// before the copy, which perf pads so that the record stays 8-byte aligned (65,528 bytes in
/// all at this size; one more word and the record's size wraps, and the kernel writes
/// nothing).
pub(crate) const MAX_COPY: u32 = 65480;
/// `struct pt_regs`'s `bp`, `bx`, `ip`, `cs` and `sp` on x86-64
/// (`arch/x86/include/asm/ptrace.h`); the program's context (`struct bpf_perf_event_data`)
/// starts with the sample's registers, its period after them.
const PT_REGS_BP: i16 = 32;
const PT_REGS_BX: i16 = 40;
const PT_REGS_IP: i16 = 128;
const PT_REGS_CS: i16 = 136;
const PT_REGS_SP: i16 = 152;
const CTX_PERIOD: i16 = 168;
/// The most entries of the frame-pointer chain walked past a copy cut at its size: the most
/// the kernel is asked for, the user ip included.
const CHAIN_FRAMES: i32 = crate::preflight::MAX_KERNEL_CHAIN as i32;
const PAGE: i32 = 4096;
/// Threads whose ends the map holds at most; the others' copies run to their mapping's end.
const MAX_THREADS: u32 = 65536;
/// `BPF_F_CURRENT_CPU`: the perf event array's entry of the CPU the program runs on.
const CURRENT_CPU: u64 = 0xffff_ffff;
/// Where on the program's stack the map key and the next page's length are kept.
const KEY: i16 = -8;
const CHUNK: i16 = -16;
/// Where a frame's saved rbp and return address are read to (16 bytes).
const FRAME: i16 = -32;
/// Where the thread's frames end, when known to lie above the stack pointer (else 0): a page
/// the copy cannot read below it is one not yet touched, not the stack's end.
const FRAMES_END: i16 = -40;
/// Where a whole sample's time and thread are kept while its trailer is written.
const TIME: i16 = -48;
const PID_TID: i16 = -56;

/// The loaded program and its maps, and the per-CPU output events once opened.
#[derive(Debug)]
pub(crate) struct LiveCopy {
    program: Program,
    maps: Vec<Map>,
    /// Each CPU's output event, with the CPU.
    outputs: Vec<(i32, OwnedFd)>,
    /// Notes a process's new main-thread end at its exec (its stack starts anew elsewhere) in
    /// its storage, and forgets the end the decoder found for its old image.
    _exec: Attachment,
    /// Notes the top of each new thread's stack, where the kernel allows it.
    _new_threads: Option<Attachment>,
    max: u32,
}

impl LiveCopy {
    /// Creates the maps and loads the program for copies of at most `max_bytes` (capped at
    /// [`MAX_COPY`]), and the ones that note where a thread's frames end.
    ///
    /// Returns an error if BPF is not permitted or the kernel refuses a program.
    pub(crate) fn load(max_bytes: u32) -> Result<LiveCopy> {
        let max = max_bytes.min(MAX_COPY) & !7;
        let cpus = super::sys::possible_cpus()
            .map_err(|e| Error::io("cannot count the possible cpus", e))? as u32;
        let buffer = HEADER as u32 + max + PAGE as u32;
        let maps = vec![
            Map::create_sparse(MapKind::Hash, "pkg_stack_ends", 4, 8, MAX_THREADS)?,
            Map::create(MapKind::Array, "pkg_stack_buf", 4, buffer, cpus)?,
            Map::create(MapKind::PerfEventArray, "pkg_stack_out", 4, 4, cpus)?,
            Map::create_task_storage("pkg_thread_top", 8)?,
        ];
        let refs: Vec<&Map> = maps.iter().collect();
        // A smaller copy leaves the user chain past it to the kernel's sample.
        let whole = max == MAX_COPY && in_initial_pid_namespace();
        let program = Program::load_perf_event("pkg_stack_copy", &copy_program(max, whole), &refs)?;
        let exec_program = Program::load_raw_tracepoint("pkg_stack_exec", &exec_program(), &refs)?;
        let exec = exec_program.attach_raw("sched_process_exec")?;
        // Without it (a kernel without BTF for the tracepoint) a thread's copies end at its
        // glibc descriptor, once the decoder has found it in one.
        let new_threads = Program::load_tp_btf(
            "pkg_thread_top",
            &thread_top_program(),
            &refs,
            "sched_process_fork",
        )
        .and_then(|p| p.attach_tracing())
        .ok();
        Ok(LiveCopy {
            program,
            maps,
            outputs: Vec::new(),
            _exec: exec,
            _new_threads: new_threads,
            max,
        })
    }

    /// The most one copy holds.
    pub(crate) fn max_bytes(&self) -> u32 {
        self.max
    }

    /// Whether its copies are as large as they can be: then a sample's user callchain is
    /// walked over its copy, not by the kernel, and past a copy cut at its size by the
    /// program. A smaller copy asked for leaves the kernel's walk to reach beyond it.
    pub(crate) fn copies_full_size(&self) -> bool {
        self.max == MAX_COPY
    }

    /// Runs the program at each sample of `event` (before the sample is written).
    ///
    /// Returns an error if the kernel refuses it.
    pub(crate) fn attach(&self, event: &OwnedFd) -> Result<()> {
        self.program.attach_to_event(event)
    }

    /// Opens CPU `cpu`'s output event into the ring of `ring_owner` (an event on that CPU
    /// with a mapped ring) and returns its sample identifier.
    ///
    /// Returns an error if the event cannot be opened, share the ring or enter the map.
    pub(crate) fn open_output(&mut self, cpu: i32, ring_owner: &OwnedFd) -> Result<u64> {
        let what = |s: &str, e| {
            Error::io(
                format!("cannot {s} the stack copies' event of cpu {cpu}"),
                e,
            )
        };
        let mut attr = crate::sys::bpf_output_attr();
        let fd = crate::sys::open(&mut attr, -1, cpu).map_err(|e| what("open", e))?;
        crate::sys::set_output(&fd, ring_owner).map_err(|e| what("share the ring of", e))?;
        let id = crate::sys::event_id(&fd).map_err(|e| what("read the id of", e))?;
        self.maps[OUT.0]
            .update(
                &(cpu as u32).to_ne_bytes(),
                &(fd.as_raw_fd() as u32).to_ne_bytes(),
            )
            .map_err(|e| what("enter in the BPF map", e))?;
        self.outputs.push((cpu, fd));
        Ok(id)
    }

    /// Each CPU's copies the kernel could not write to its ring (`PERF_FORMAT_LOST`): the
    /// program dropped their samples. A lost-records notice in the ring tells of them only
    /// when a later copy finds room; those at the end of a run are counted here alone.
    pub(crate) fn lost_per_cpu(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        (self.outputs.iter())
            .filter_map(|(cpu, fd)| Some((*cpu as u32, crate::sys::read_lost(fd).ok()?)))
    }

    /// Sets (or with None, forgets) where thread `tid`'s frames end: its copies stop there
    /// when its stack pointer lies at most the copy size below.
    pub(crate) fn set_end(&self, tid: u32, end: Option<u64>) {
        let map = &self.maps[ENDS.0];
        // A failure (a full map) leaves the thread's copies running to their mapping's end,
        // as the kernel's: they cost more, and are trimmed by the decoder as before.
        let _ = match end {
            Some(end) => map.update(&tid.to_ne_bytes(), &end.to_ne_bytes()),
            None => map.delete(&tid.to_ne_bytes()),
        };
    }
}

/// Whether this process sees the initial pid namespace, whose thread ids the program's
/// helper gives: a whole sample's thread must be the one the kernel would have written, which
/// is the sampling process's namespace's. Elsewhere samples keep the kernel's record.
fn in_initial_pid_namespace() -> bool {
    use std::os::unix::fs::MetadataExt;
    /// `PROC_PID_INIT_INO`: the initial pid namespace's fixed inode number.
    const INITIAL: u64 = 0xEFFF_FFFC;
    std::fs::metadata("/proc/self/ns/pid").is_ok_and(|m| m.ino() == INITIAL)
}

/// `R0` = the saved user registers (`struct pt_regs`) of the task in `task`. Clobbers R1 to
/// R5.
fn user_regs(a: &mut Asm, task: Reg) -> &mut Asm {
    a.mov(Reg::R1, task).call(Helper::TaskPtRegs)
}

/// `dst` = the user stack pointer of the task in `task` (from its saved user registers).
/// Clobbers R0 to R5.
fn user_sp(a: &mut Asm, task: Reg, dst: Reg) -> &mut Asm {
    user_regs(a, task).load(Size::DW, dst, Reg::R0, PT_REGS_SP)
}

/// The sampling events' program. R6: the context; R7: the user stack pointer (the current
/// task's saved user registers, as the sample's own); R8: this CPU's record buffer; R9: the
/// current task, then where its frames end, then the bytes copied. Returns 1 (the sample is
/// written after the record), or 0 when the record could not be written or, with `whole`,
/// is the sample.
fn copy_program(max: u32, whole: bool) -> Code {
    let max = max as i32;
    let mut a = Asm::new();
    let out = a.label();
    let walk = a.label();
    let unreadable = a.label();
    let at_size = a.label();
    let write = a.label();
    let dropped = a.label();
    let by_tid = a.label();
    let have_end = a.label();
    a.mov(Reg::R6, Reg::R1)
        .store_imm(Size::DW, Reg::R10, FRAMES_END, 0)
        .call(Helper::GetCurrentTaskBtf)
        .mov(Reg::R9, Reg::R0);
    user_sp(&mut a, Reg::R0, Reg::R7)
        .jmp_imm(Cond::Eq, Reg::R7, 0, out)
        .call(Helper::GetSmpProcessorId)
        .store(Size::W, Reg::R10, KEY, Reg::R0)
        .ld_map(Reg::R1, BUF);
    a.frame_ptr(Reg::R2, KEY);
    a.call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .mov(Reg::R8, Reg::R0)
        .store(Size::DW, Reg::R8, 0, Reg::R7)
        // Where the thread's frames end: the top of the stack it was created with or its
        // argv's end after an exec, else what the decoder found in its copies.
        .ld_map(Reg::R1, TOPS)
        .mov(Reg::R2, Reg::R9)
        .mov_imm(Reg::R3, 0)
        .mov_imm(Reg::R4, 0)
        .call(Helper::TaskStorageGet)
        .jmp_imm(Cond::Eq, Reg::R0, 0, by_tid)
        .load(Size::DW, Reg::R9, Reg::R0, 0)
        // Not the stack it runs on now (a signal stack; 0 after an exec whose argc could not
        // be read): the decoder's end, if any.
        .jmp_reg(Cond::Le, Reg::R9, Reg::R7, by_tid)
        .mov(Reg::R1, Reg::R9)
        .alu_reg(Alu::Sub, Reg::R1, Reg::R7)
        .jmp_imm(Cond::Le, Reg::R1, max, have_end)
        .bind(by_tid)
        .call(Helper::GetCurrentPidTgid)
        .store(Size::W, Reg::R10, KEY, Reg::R0)
        .ld_map(Reg::R1, ENDS)
        .frame_ptr(Reg::R2, KEY)
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, Reg::R0, 0, walk)
        .load(Size::DW, Reg::R9, Reg::R0, 0)
        .bind(have_end)
        // The end lies not too far above: one copy up to it.
        .jmp_reg(Cond::Le, Reg::R9, Reg::R7, walk)
        .store(Size::DW, Reg::R10, FRAMES_END, Reg::R9)
        .alu_reg(Alu::Sub, Reg::R9, Reg::R7)
        .jmp_imm(Cond::Gt, Reg::R9, max, walk)
        .mov(Reg::R1, Reg::R8)
        .alu_imm(Alu::Add, Reg::R1, HEADER as i32)
        .mov(Reg::R2, Reg::R9)
        .mov(Reg::R3, Reg::R7)
        .call(Helper::ProbeReadUser)
        .jmp_imm(Cond::Ne, Reg::R0, 0, walk)
        .store_imm(Size::W, Reg::R8, 12, Ended::AtFrames as i32)
        .ja(write);
    // Else page by page (a read that faults anywhere copies nothing): to the end of the
    // stack pointer's page, then whole pages, until the copy size or an unreadable page.
    a.bind(walk)
        .mov_imm(Reg::R9, 0)
        .mov(Reg::R1, Reg::R7)
        .alu_imm(Alu::And, Reg::R1, PAGE - 1)
        .mov_imm(Reg::R2, PAGE)
        .alu_reg(Alu::Sub, Reg::R2, Reg::R1)
        .store(Size::DW, Reg::R10, CHUNK, Reg::R2);
    for _ in 0..max / PAGE + 2 {
        let fits = a.label();
        a.load(Size::DW, Reg::R2, Reg::R10, CHUNK)
            .mov_imm(Reg::R3, max)
            .alu_reg(Alu::Sub, Reg::R3, Reg::R9)
            .jmp_reg(Cond::Le, Reg::R2, Reg::R3, fits)
            .mov(Reg::R2, Reg::R3)
            .bind(fits)
            // The bounds the verifier needs: at most a page, into the buffer.
            .jmp_imm(Cond::Eq, Reg::R2, 0, at_size)
            .jmp_imm(Cond::Gt, Reg::R2, PAGE, at_size)
            .jmp_imm(Cond::Gt, Reg::R9, max, at_size)
            .store(Size::DW, Reg::R10, CHUNK, Reg::R2)
            .mov(Reg::R1, Reg::R8)
            .alu_imm(Alu::Add, Reg::R1, HEADER as i32)
            .alu_reg(Alu::Add, Reg::R1, Reg::R9)
            .mov(Reg::R3, Reg::R7)
            .alu_reg(Alu::Add, Reg::R3, Reg::R9)
            .call(Helper::ProbeReadUser)
            .jmp_imm(Cond::Ne, Reg::R0, 0, unreadable)
            .load(Size::DW, Reg::R2, Reg::R10, CHUNK)
            .alu_reg(Alu::Add, Reg::R9, Reg::R2)
            .store_imm(Size::DW, Reg::R10, CHUNK, PAGE);
    }
    a.bind(at_size)
        .store_imm(Size::W, Reg::R8, 12, Ended::AtSize as i32)
        .ja(write)
        .bind(unreadable)
        .store_imm(Size::W, Reg::R8, 12, Ended::Unreadable as i32)
        .load(Size::DW, Reg::R1, Reg::R10, FRAMES_END)
        .jmp_imm(Cond::Eq, Reg::R1, 0, write)
        .store_imm(Size::W, Reg::R8, 12, Ended::BelowFrames as i32)
        .bind(write)
        .jmp_imm(Cond::Gt, Reg::R9, max, out)
        .store(Size::W, Reg::R8, 8, Reg::R9);
    if whole {
        whole_sample(&mut a, dropped);
    }
    a.mov(Reg::R1, Reg::R6)
        .ld_map(Reg::R2, OUT)
        .ld_imm64(Reg::R3, CURRENT_CPU)
        .mov(Reg::R4, Reg::R8)
        .mov(Reg::R5, Reg::R9)
        .alu_imm(Alu::Add, Reg::R5, HEADER as i32)
        .call(Helper::PerfEventOutput)
        // No room in the ring for the copy: the sample goes too, so that the ring's count of
        // lost records counts it once, and no sample stands without its copy.
        .jmp_imm(Cond::Ne, Reg::R0, 0, dropped);
    if max == MAX_COPY as i32 {
        chain_past_the_copy(&mut a, out, dropped);
    }
    a.ja(out)
        .bind(dropped)
        .mov_imm(Reg::R0, 0)
        .exit()
        .bind(out)
        .mov_imm(Reg::R0, 1)
        .exit();
    a.finish()
}

/// At `write` (the copy in R8's buffer, its length in R9, R6 the context), in runs that copy
/// at full size (whose user chains the decoder walks over the copies, the kernel being asked
/// for none): a sample taken in user mode whose copy is not cut at its size is written whole,
/// the copy with a trailer of the sample's fields ([`SAMPLE_TRAILER`]), and the program
/// returns 0 so that the kernel writes no sample of its own: one record instead of two, and
/// the kernel's sample (its callchain, registers and output: ~2 us of the sampled task's time
/// a sample at 40 kHz here, against ~0.65 us for this program's output) not made. Other
/// samples go on to the copy record and the kernel's sample. Jumps to `done` (return 0)
/// whether the record found room or not: without room the output event counts it lost.
fn whole_sample(a: &mut Asm, done: Label) {
    let copy_only = a.label();
    let trailer = |i: i16| HEADER as i16 + 8 * i;
    a.load(Size::W, Reg::R1, Reg::R8, 12)
        .jmp_imm(Cond::Eq, Reg::R1, Ended::AtSize as i32, copy_only)
        .load(Size::DW, Reg::R1, Reg::R6, PT_REGS_CS)
        .alu_imm(Alu::And, Reg::R1, 3)
        .jmp_imm(Cond::Ne, Reg::R1, 3, copy_only)
        // A record's size is 16 bits: the largest copies keep the two records.
        .jmp_imm(
            Cond::Gt,
            Reg::R9,
            (MAX_COPY as usize - SAMPLE_TRAILER) as i32,
            copy_only,
        )
        .call(Helper::KtimeGetNs)
        .store(Size::DW, Reg::R10, TIME, Reg::R0)
        .call(Helper::GetCurrentPidTgid)
        .store(Size::DW, Reg::R10, PID_TID, Reg::R0)
        .mov(Reg::R2, Reg::R8)
        .alu_reg(Alu::Add, Reg::R2, Reg::R9);
    // The trailer's fields in order: ip, pid and tid, time, period, bx, bp.
    let fields = [
        (Reg::R6, PT_REGS_IP),
        (Reg::R10, PID_TID),
        (Reg::R10, TIME),
        (Reg::R6, CTX_PERIOD),
        (Reg::R6, PT_REGS_BX),
        (Reg::R6, PT_REGS_BP),
    ];
    for (i, (base, off)) in (0..).zip(fields) {
        a.load(Size::DW, Reg::R1, base, off)
            .store(Size::DW, Reg::R2, trailer(i), Reg::R1);
    }
    a.load(Size::W, Reg::R1, Reg::R8, 12)
        .alu_imm(Alu::Or, Reg::R1, WHOLE_SAMPLE as i32)
        .store(Size::W, Reg::R8, 12, Reg::R1)
        .mov(Reg::R1, Reg::R6)
        .ld_map(Reg::R2, OUT)
        .ld_imm64(Reg::R3, CURRENT_CPU)
        .mov(Reg::R4, Reg::R8)
        .mov(Reg::R5, Reg::R9)
        .alu_imm(Alu::Add, Reg::R5, (HEADER + SAMPLE_TRAILER) as i32)
        .call(Helper::PerfEventOutput)
        .ja(done)
        .bind(copy_only);
}

/// After a copy cut at the full copy size (the buffer in R8, R6 the context), the user
/// frame-pointer chain as the kernel walks it, which such runs do not ask the kernel for: the
/// user ip, then from the saved rbp on each frame's return address, until a read fails or
/// [`CHAIN_FRAMES`]; written as a [`CHAIN_RECORD`] in the same buffer, the copy being out.
/// Jumps to `dropped` when the record finds no room. Only deep stacks pay for it, as they paid
/// the kernel's walk.
fn chain_past_the_copy(a: &mut Asm, out: Label, dropped: Label) {
    let walked = a.label();
    let entry = |i: i32| (HEADER as i32 + 8 * i) as i16;
    a.load(Size::W, Reg::R1, Reg::R8, 12)
        .jmp_imm(Cond::Ne, Reg::R1, Ended::AtSize as i32, out)
        .call(Helper::GetCurrentTaskBtf);
    user_regs(a, Reg::R0)
        .load(Size::DW, Reg::R9, Reg::R0, PT_REGS_BP)
        .load(Size::DW, Reg::R1, Reg::R0, PT_REGS_IP)
        .store(Size::DW, Reg::R8, entry(0), Reg::R1)
        .mov_imm(Reg::R7, 1);
    for i in 1..CHAIN_FRAMES {
        a.frame_ptr(Reg::R1, FRAME);
        a.mov_imm(Reg::R2, 16)
            .mov(Reg::R3, Reg::R9)
            .call(Helper::ProbeReadUser)
            .jmp_imm(Cond::Ne, Reg::R0, 0, walked)
            .load(Size::DW, Reg::R1, Reg::R10, FRAME + 8)
            .store(Size::DW, Reg::R8, entry(i), Reg::R1)
            .load(Size::DW, Reg::R9, Reg::R10, FRAME)
            .mov_imm(Reg::R7, i + 1);
    }
    a.bind(walked)
        .store_imm(Size::W, Reg::R8, 12, CHAIN_RECORD as i32)
        .mov(Reg::R5, Reg::R7)
        .alu_imm(Alu::Lsh, Reg::R5, 3)
        .store(Size::W, Reg::R8, 8, Reg::R5)
        .alu_imm(Alu::Add, Reg::R5, HEADER as i32)
        .mov(Reg::R1, Reg::R6)
        .ld_map(Reg::R2, OUT)
        .ld_imm64(Reg::R3, CURRENT_CPU)
        .mov(Reg::R4, Reg::R8)
        .call(Helper::PerfEventOutput)
        .jmp_imm(Cond::Ne, Reg::R0, 0, dropped);
}

/// `sched_process_fork(parent, child)` (BTF-typed, in the parent): a task created with a stack
/// of its own (a thread, or a child of `posix_spawn`; not a forked copy, which goes on on its
/// parent's stack) starts with its stack pointer at the top of every frame it will have,
/// whatever its threading library keeps above (glibc: static TLS and the thread descriptor).
/// That top goes in the task's storage, freed with the task.
fn thread_top_program() -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.load(Size::DW, Reg::R6, Reg::R1, 8);
    user_sp(&mut a, Reg::R6, Reg::R7)
        .jmp_imm(Cond::Eq, Reg::R7, 0, out)
        .call(Helper::GetCurrentTaskBtf);
    user_sp(&mut a, Reg::R0, Reg::R8)
        .jmp_reg(Cond::Eq, Reg::R7, Reg::R8, out)
        .ld_map(Reg::R1, TOPS)
        .mov(Reg::R2, Reg::R6)
        .mov_imm(Reg::R3, 0)
        .mov_imm(Reg::R4, Asm::STORAGE_CREATE)
        .call(Helper::TaskStorageGet)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .store(Size::DW, Reg::R0, 0, Reg::R7)
        .bind(out)
        .mov_imm(Reg::R0, 0)
        .exit();
    a.finish()
}

/// The most arguments an exec'd program's `argc` is believed for (the kernel's own limit on
/// the argument strings' size allows ~2 million).
const MAX_ARGC: i32 = 1 << 22;

/// `sched_process_exec` (raw): the process that ran it starts a new stack, whose stack
/// pointer points at `argc`, then `argv` and its NULL: its main thread's frames end there, as
/// the decoder finds it from /proc (`recording/live_stack.rs`), so the copies of the new
/// image stop there from its first sample (they ran page by page to the mapping's end until
/// the decoder's first reading, for up to a second). The end goes in the task's storage, where
/// the copier finds it without a hash lookup, replacing a top its stack had before the exec;
/// the old image's end the decoder found goes. Where `argc` cannot be read, the task's copies
/// run to the decoder's end again.
fn exec_program() -> Code {
    let mut a = Asm::new();
    let unknown = a.label();
    let out = a.label();
    let done = a.label();
    a.call(Helper::GetCurrentPidTgid)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .store(Size::W, Reg::R10, KEY, Reg::R0)
        .ld_map(Reg::R1, ENDS);
    a.frame_ptr(Reg::R2, KEY);
    a.call(Helper::MapDeleteElem)
        .call(Helper::GetCurrentTaskBtf);
    user_sp(&mut a, Reg::R0, Reg::R6);
    a.frame_ptr(Reg::R1, CHUNK);
    a.mov_imm(Reg::R2, 8)
        .mov(Reg::R3, Reg::R6)
        .call(Helper::ProbeReadUser)
        .jmp_imm(Cond::Ne, Reg::R0, 0, unknown)
        .load(Size::DW, Reg::R7, Reg::R10, CHUNK)
        .jmp_imm(Cond::Gt, Reg::R7, MAX_ARGC, unknown)
        // The end: argc, its argc pointers, their NULL.
        .alu_imm(Alu::Add, Reg::R7, 2)
        .alu_imm(Alu::Lsh, Reg::R7, 3)
        .alu_reg(Alu::Add, Reg::R7, Reg::R6)
        .current_task_value(TOPS, Asm::STORAGE_CREATE)
        .ja(out)
        .bind(unknown)
        .mov_imm(Reg::R7, 0)
        .current_task_value(TOPS, 0)
        .bind(out)
        .jmp_imm(Cond::Eq, Reg::R0, 0, done)
        .store(Size::DW, Reg::R0, 0, Reg::R7)
        .bind(done)
        .mov_imm(Reg::R0, 0)
        .exit();
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_copy_fits_a_record_and_a_word_more_would_not() {
        let record = |copy: u32| 24 + (4 + HEADER as u32 + copy).next_multiple_of(8);
        assert!(record(MAX_COPY) <= u32::from(u16::MAX));
        assert!(record(MAX_COPY + 8) > u32::from(u16::MAX));
    }

    #[test]
    fn the_programs_are_the_same_bytes_on_every_build() {
        let got = [
            copy_program(MAX_COPY, true).digest(),
            copy_program(MAX_COPY, false).digest(),
            copy_program(8192, false).digest(),
            exec_program().digest(),
            thread_top_program().digest(),
        ];
        assert_eq!(
            got,
            [
                "10692 insns 4c7650abb6968d13",
                "10655 insns f59d70a15762845e",
                "156 insns 136672b00cacdda9",
                "43 insns 76a7d8822a675536",
                "20 insns 1e5bbdeda48d711f",
            ]
        );
    }
}
