//! The crate's error type.

use std::path::PathBuf;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong while importing a perf.data file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input could not be opened (not a regular file, missing, too large).
    #[error(transparent)]
    Open(#[from] safe_fs::Error),
    /// The file is not perf.data, or is damaged.
    #[error("{path}: not a readable perf.data file (damage found at byte {offset})")]
    Parse {
        /// The file (`-` for standard input).
        path: PathBuf,
        /// How far the reader had read when it found the damage.
        offset: u64,
        /// What the reader said.
        #[source]
        source: linux_perf_data::Error,
    },
    /// A record of the file could not be decoded.
    #[error("{path}: damaged {what} record (found by byte {offset})")]
    Record {
        /// The file.
        path: PathBuf,
        /// How far the reader had read when it found the damage (records are read a round
        /// ahead, so the record lies before).
        offset: u64,
        /// The record type.
        what: &'static str,
        /// What the decoder said.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no samples of an event that measures CPU time.
    #[error(
        "{path}: no cpu-clock or task-clock samples (events: {events}); record with `perf record -e cpu-clock -g` (the default event falls back to cpu-clock where there are no hardware counters)"
    )]
    NoCpuTime {
        /// The file.
        path: PathBuf,
        /// The events the file holds.
        events: String,
    },
    /// The kernel-symbol file could not be read.
    #[error("kernel symbols {path}")]
    Kallsyms {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: safe_fs::Error,
    },
    /// Writing the measurement failed.
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Write(#[from] collect_perf::Error),
}
