//! A Linux profiler core built on `perf_event_open`: it samples a command (or running processes)
//! in user space and in the kernel, aggregates the samples as they arrive, and writes
//! per-process user and kernel gmon.out files.
//!
//! Use it in three steps:
//!
//! 1. Check permissions with [`preflight`] (optional: opening the events reports the same
//!    problems, with the same messages).
//! 2. Build a [`Sampler`] with [`Sampler::launch`] (the command starts stopped and the events
//!    turn on at its `exec`) or [`Sampler::attach`]; [`Config::system_wide`] samples every CPU.
//! 3. Call [`Sampler::run_aggregating`], which drains the per-CPU ring buffers until the whole
//!    process tree is gone or the stop flag is set, handing every record in time order to an
//!    [`Aggregator`] (which rebuilds processes keyed by (pid, generation), unwinds each sample's
//!    stack and interns it), then [`write_measurement`] the files.
//!
//! ```no_run
//! # #[cfg(target_os = "linux")]
//! # fn main() -> collect_perf::Result<()> {
//! use std::sync::atomic::AtomicBool;
//! use collect_perf::{
//!     AggregateOptions, Aggregator, Config, KernelSymbols, Sampler, WriteOptions,
//!     write_measurement,
//! };
//!
//! let sampler = Sampler::launch(&["/bin/ls".into()], &Config::default())?;
//! let mut opts = AggregateOptions::default();
//! opts.launched = sampler.child_pid();
//! let mut agg = Aggregator::new(opts);
//! let recording = sampler.run_aggregating(&AtomicBool::new(false), |_| {}, &mut agg)?;
//! let aggregate = agg.finish(KernelSymbols::live());
//! let summary = write_measurement(&recording, &aggregate, &WriteOptions::default())?;
//! println!("{} samples, {} lost, {} files", summary.samples, recording.lost, summary.files.len());
//! # Ok(())
//! # }
//! # #[cfg(not(target_os = "linux"))]
//! # fn main() {}
//! ```
//!
//! Memory stays proportional to the distinct stacks and processes, not to the samples: each
//! sample is unwound and its stack copy dropped within a round of draining. [`Sampler::run`]
//! keeps every sample instead (a [`Recording`] to inspect, [`replay`] or [`aggregate`] later).
//!
//! User stacks are unwound from `.eh_frame` over each sample's stack copy, continued by the
//! kernel's frame-pointer walk beyond it, and end for a stated reason ([`unwind_user_stacks`],
//! [`StackEnd`]). The files are those of
//! `gmon_format::labeled`, in runtime addresses. It does not symbolize: that is the report's
//! job, with the mappings, build-ids and kernel-symbol snapshot the files record.
//!
//! The modules that touch the live machine are few and named so: `spawn` (the held child),
//! `preflight` (perf settings and limits), `sampler`, `ring` and `sys` (the events and their
//! rings), `tracefs`, `procfs`, `taskstats`, `clock`, and `snapshot` ([`MachineSnapshot`]: the
//! kernel's release, build-id, boot id, symbols and this process's vDSO). Everything after them
//! is portable and works on recorded data: record decoding (`recording`), [`replay`],
//! unwinding, aggregation ([`Aggregator`]), `counters` and the measurement writer
//! ([`write_measurement_to`], which takes the machine as [`WriteOptions::machine`]), so a
//! recording from elsewhere (perf-import's perf.data, a stream) is written the same way, and the
//! writer is tested without a kernel (`tests/writer.rs`).
//!
//! In system-wide mode, kernel work for no process — samples of pid 0 (idle, and interrupts
//! taken while idle) and of kernel threads (tasks without user registers) — goes to
//! `gmon.out.-k.kernel`, and the kernel part of the samples of processes not asked for to
//! `gmon.out.-k.other`; their user-mode samples are dropped.

#![deny(missing_docs)]

#[cfg(target_os = "linux")]
mod aggregate;
#[cfg(target_os = "linux")]
mod asynchronous;
#[cfg(target_os = "linux")]
mod clock;
#[cfg(target_os = "linux")]
mod config;
#[cfg(target_os = "linux")]
mod continuous;
#[cfg(target_os = "linux")]
mod counters;
mod error;
#[cfg(target_os = "linux")]
mod kernel_symbols;
#[cfg(target_os = "linux")]
mod measurement;
#[cfg(target_os = "linux")]
mod output;
mod recording;
mod replay;

#[cfg(target_os = "linux")]
pub mod bpf;
#[cfg(target_os = "linux")]
mod elf;
#[cfg(target_os = "linux")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(target_os = "linux")]
mod preflight;
#[cfg(target_os = "linux")]
mod procfs;
#[cfg(target_os = "linux")]
mod register_frame;
#[cfg(target_os = "linux")]
mod ring;
#[cfg(target_os = "linux")]
mod sampler;
#[cfg(target_os = "linux")]
mod signal_frame;
#[cfg(target_os = "linux")]
mod snapshot;
#[cfg(target_os = "linux")]
mod spawn;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod syscalls;
#[cfg(target_os = "linux")]
mod taskstats;
#[cfg(target_os = "linux")]
mod tracefs;
pub mod tracepoint;
#[cfg(target_os = "linux")]
mod unwind;

pub use error::{Error, Result};
pub use recording::{
    ChildExit, CopyEnd, CounterEvent, CounterKind, ProcCounters, ProcReading, Recording, Sample,
    SideBand, SideRecord, TaskExit, TraceSample, TracepointInfo, UserRegs,
};
pub use replay::{MAX_MAPPINGS, MAX_RENAMES, Mapping, Process, ProcessKey, Replay, Thread, replay};
#[cfg(target_os = "linux")]
pub use syscalls::LatencyOptions;
#[cfg(target_os = "linux")]
pub use tracefs::Tracefs;

#[cfg(target_os = "linux")]
pub use aggregate::{Aggregate, AggregateOptions, Aggregator, aggregate};
#[cfg(target_os = "linux")]
pub use async_attribution::Kind as AsyncKind;
pub use asynchronous::{AsyncOptions, BlockPrograms, KernelBlock};
#[cfg(target_os = "linux")]
pub use config::{
    Config, DEFAULT_USER_STACK_BYTES, MAX_USER_STACK_BYTES, StackCopier, TracepointRequest,
};
#[cfg(target_os = "linux")]
pub use continuous::{Continuous, ContinuousOptions, ContinuousSummary};
#[cfg(target_os = "linux")]
pub use kernel_symbols::KernelSymbols;
#[cfg(target_os = "linux")]
pub use measurement::{
    FileSetSummary, WriteOptions, WriteSummary, write_measurement, write_measurement_to,
};
#[cfg(target_os = "linux")]
pub use output::{Output, WrittenFile, kallsyms_mode};
#[cfg(target_os = "linux")]
pub use preflight::{
    CallchainLimit, MAX_KERNEL_CHAIN, Permissions, preflight, raise_callchain_limit,
};
#[cfg(target_os = "linux")]
pub use sampler::{Progress, Sampler};
#[cfg(target_os = "linux")]
pub use snapshot::MachineSnapshot;
#[cfg(target_os = "linux")]
pub use unwind::{StackEnd, UnwindStats, UserStacks, unwind_user_stacks};
