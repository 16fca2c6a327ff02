//! A Linux profiler built on `perf_event_open`: it samples a command or running processes in
//! user space and in the kernel and writes, per process, a user gmon.out, a kernel gmon.out and
//! a measurement-info file (the process-labeled file set of the pkprof paper).
//!
//! This crate is being built (see the collector issue); it holds no collector yet.

#![deny(missing_docs)]
