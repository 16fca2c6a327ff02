//! A Linux profiler core built on `perf_event_open`: it samples a command (or running processes)
//! in user space and in the kernel and returns an owned [`Recording`] that later stages turn into
//! per-process user and kernel gmon.out files.
//!
//! Use it in three steps:
//!
//! 1. Check permissions with [`preflight`] (optional: opening the events reports the same
//!    problems, with the same messages).
//! 2. Build a [`Sampler`] with [`Sampler::launch`] (the command starts stopped and the events
//!    turn on at its `exec`) or [`Sampler::attach`]; [`Config::system_wide`] samples every CPU.
//! 3. Call [`Sampler::run`], which drains the per-CPU ring buffers until the whole process tree
//!    is gone or the stop flag is set, [`replay`] the recording to rebuild processes, threads
//!    and memory maps keyed by (pid, generation), and [`write_measurement`] the files.
//!
//! ```no_run
//! # #[cfg(target_os = "linux")]
//! # fn main() -> collect_perf::Result<()> {
//! use std::sync::atomic::AtomicBool;
//! use collect_perf::{Config, Sampler, WriteOptions, replay, write_measurement};
//!
//! let sampler = Sampler::launch(&["/bin/ls".into()], &Config::default())?;
//! let recording = sampler.run(&AtomicBool::new(false))?;
//! let processes = replay(&recording);
//! let summary = write_measurement(&recording, &processes, &WriteOptions::default())?;
//! println!("{} samples, {} lost, {} files", summary.samples, recording.lost, summary.files.len());
//! # Ok(())
//! # }
//! # #[cfg(not(target_os = "linux"))]
//! # fn main() {}
//! ```
//!
//! User stacks are unwound from `.eh_frame` over each sample's stack copy, continued by the
//! kernel's frame-pointer walk beyond it, and end for a stated reason ([`unwind_user_stacks`],
//! [`StackEnd`]). The files are those of
//! `gmon_format::labeled`, in runtime addresses. It does not symbolize: that is the report's
//! job, with the mappings, build-ids and kernel-symbol snapshot the files record.
//!
//! In system-wide mode, kernel work for no process — samples of pid 0 (idle, and interrupts
//! taken while idle) and of kernel threads (tasks without user registers) — goes to
//! `gmon.out.-k.kernel`, and the kernel part of the samples of processes not asked for to
//! `gmon.out.-k.other`; their user-mode samples are dropped.

#![deny(missing_docs)]

mod error;
#[cfg(target_os = "linux")]
mod measurement;
#[cfg(target_os = "linux")]
mod output;
mod recording;
mod replay;

#[cfg(target_os = "linux")]
mod elf;
#[cfg(target_os = "linux")]
mod procfs;
#[cfg(target_os = "linux")]
mod ring;
#[cfg(target_os = "linux")]
mod sampler;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod taskstats;
#[cfg(target_os = "linux")]
mod unwind;

pub use error::{Error, Result};
pub use recording::{
    ChildExit, CounterEvent, CounterKind, ProcCounters, ProcReading, Recording, Sample, SideBand,
    SideRecord, TaskExit, UserRegs,
};
pub use replay::{Mapping, Process, ProcessKey, Replay, Thread, replay};

#[cfg(target_os = "linux")]
pub use measurement::{WriteOptions, WriteSummary, write_measurement, write_measurement_to};
#[cfg(target_os = "linux")]
pub use output::{Output, WrittenFile, kallsyms_mode};
#[cfg(target_os = "linux")]
pub use sampler::{
    Config, DEFAULT_USER_STACK_BYTES, MAX_USER_STACK_BYTES, Permissions, Progress, Sampler,
    preflight,
};
#[cfg(target_os = "linux")]
pub use unwind::{StackEnd, UnwindStats, UserStacks, unwind_user_stacks};
