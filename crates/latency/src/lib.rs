//! Latency profiles as OSprof draws them, and blocking summaries as DeBox returns them.
//!
//! OSprof (Joukov et al., OSDI 2006) profiles an operation by the *distribution* of its
//! latency in log2 buckets: each peak is a path (a cache hit, a lock contention, a disk
//! seek). DeBox (Ruan and Pai, USENIX 2004) returns, per system call, its wall time, its page
//! faults, and where and how long it slept. This crate holds their analysis, with no
//! collector or file format: feed it latencies, read it peaks, distances and choices.
//!
//! Use it in three steps:
//!
//! 1. Count latencies into a [`Histogram`] at a [`Resolution`] (r buckets per power of two).
//! 2. Find its [`peaks`] and draw it ([`text::histogram`]).
//! 3. Compare two sets of histograms with [`select`] (OSprof's three phases: prefilter by
//!    totals, compare peaks, rate by [`emd`], with [`chi_squared`] and [`ks`] beside it).
//!
//! ```
//! use latency::{Histogram, PeakOptions, Resolution, peaks};
//!
//! let mut h = Histogram::new(Resolution::ONE);
//! for _ in 0..999 { h.add(1_060_000) }  // nanosleep(1 ms): bucket 20, [2^20, 2^21) ns
//! h.add(300);                           // one fast call: noise, not a peak
//! let p = peaks(&h, &PeakOptions::default());
//! assert_eq!((p.len(), p[0].mode, p[0].mean_ns()), (1, 20, 1_060_000));
//! ```
//!
//! It does not collect (that is `collect-perf`), read files (`gmon-format`'s latency file) or
//! symbolize call sites (the report does).

#![deny(missing_docs)]

mod compare;
pub mod debox;
mod histogram;
mod peaks;
pub mod plot;
mod select;
pub mod text;

pub use compare::{chi_squared, emd, ks};
pub use debox::{CallSummary, SleepSite, Wakes};
pub use histogram::{Bucket, Histogram, Resolution};
pub use peaks::{Peak, PeakOptions, peaks};
pub use select::{PeakChange, SelectOptions, Selected, by_total_latency, peak_changes, select};
