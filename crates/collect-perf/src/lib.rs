//! A Linux profiler core built on `perf_event_open`: it samples a command (or running processes)
//! in user space and in the kernel and returns an owned [`Recording`] that later stages turn into
//! per-process user and kernel gmon.out files.
//!
//! Use it in three steps:
//!
//! 1. Check permissions with [`preflight`] (optional: opening the events reports the same
//!    problems, with the same messages).
//! 2. Build a [`Sampler`] with [`Sampler::launch`] (the command starts stopped and the events
//!    turn on at its `exec`) or [`Sampler::attach`].
//! 3. Call [`Sampler::run`], which drains the per-CPU ring buffers until the whole process tree
//!    is gone or the stop flag is set, then [`replay`] the recording to rebuild processes,
//!    threads and memory maps keyed by (pid, generation).
//!
//! ```no_run
//! # #[cfg(target_os = "linux")]
//! # fn main() -> collect_perf::Result<()> {
//! use std::sync::atomic::AtomicBool;
//! use collect_perf::{Config, Sampler, replay};
//!
//! let sampler = Sampler::launch(&["/bin/ls".into()], &Config::default())?;
//! let recording = sampler.run(&AtomicBool::new(false))?;
//! let processes = replay(&recording);
//! println!("{} samples, {} lost", recording.samples.len(), recording.lost);
//! # let _ = processes;
//! # Ok(())
//! # }
//! # #[cfg(not(target_os = "linux"))]
//! # fn main() {}
//! ```
//!
//! It does not symbolize, unwind user stacks past the kernel's frame-pointer chain, or write gmon
//! files: those are later stages that read the [`Recording`] and the [`replay`] result.

#![deny(missing_docs)]

mod error;
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
mod unwind;

pub use error::{Error, Result};
pub use recording::{ChildExit, ProcCounters, Recording, Sample, SideBand, SideRecord, UserRegs};
pub use replay::{Mapping, Process, ProcessKey, Replay, Thread, replay};

#[cfg(target_os = "linux")]
pub use sampler::{Config, Permissions, Sampler, preflight};
#[cfg(target_os = "linux")]
pub use unwind::{UnwindStats, UserStacks, unwind_user_stacks};
