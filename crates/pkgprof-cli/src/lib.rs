//! The command-line front ends of pkgprof: `pkgprof` (gprof's reports) and `pkgmon` (the
//! Linux collector).
//!
//! The binaries are thin; everything they do lives here so that tests can call it.

mod apps;
#[cfg(target_os = "linux")]
mod export;
mod getopt;
mod instructions;
mod latency;
mod listing;
mod options;
#[cfg(target_os = "linux")]
mod perf_data;
#[cfg(target_os = "linux")]
pub mod pkgmon;
pub mod pkgprof;
mod seamless;
