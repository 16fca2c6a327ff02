//! A small BPF facility: programs assembled in Rust ([`Asm`], no clang and no object files),
//! maps ([`Map`], [`RingBuf`]), loading with the verifier's log in the error
//! ([`Program::load_tracepoint`]) and attaching to tracepoints through perf events
//! ([`Program::attach`]). Tracepoint field offsets come from tracefs at run time
//! ([`crate::Tracefs::event`]) and are written into the instructions, never hard-coded.
//!
//! Use it in three steps: create the maps; build a program with [`Asm`] (maps referred to by
//! [`MapSlot`], patched at load) and load it; attach it to a tracepoint and read the maps (or
//! drain the ring buffer) while it runs. Everything is owned: dropping the [`Attachment`]
//! detaches, dropping the last handle frees the program or map.
//!
//! Its users are the in-kernel system-call latency and blocking collection
//! ([`SyscallLatency`], `pkgmon --latency` and `--blocking`) and the wakers of blocked calls
//! recorded through perf when that collection is not used ([`Wakers`], `pkgmon --blocking`
//! falling back to the rings).

mod btf;
mod insn;
mod latency;
mod live_copy;
mod map;
mod prog;
mod ringbuf;
mod sys;
mod wakers;

pub use insn::{Alu, Asm, Code, Cond, Helper, Insn, Label, MapSlot, Reg, Size};
pub use latency::{Counted, CountedBucket, LatencyCounts, SyscallLatency};
pub(crate) use latency::{KernelWaker, OffCpu};
pub(crate) use live_copy::LiveCopy;
pub use map::{Map, MapKind};
pub(crate) use map::{u32_at, u64_at};
pub use prog::{Attachment, LICENSE, Program};
pub use ringbuf::{CountedOutput, RingBuf};
pub use wakers::{MAX_FRAMES, Wakers, Wakeup};
