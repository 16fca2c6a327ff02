//! The one error type of this crate.

use std::io;

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What an export or a diff refuses, or the writer it could not write to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The output could not be written.
    #[error("cannot write the export")]
    Io(#[from] io::Error),
    /// The value type asked for is not in the profile.
    #[error("the profile has no value type {name:?} (it has: {known})")]
    NoSuchValue {
        /// The name asked for.
        name: String,
        /// The profile's value types, comma-separated.
        known: String,
    },
    /// The profile declares no value type at all, so there is nothing to export.
    #[error("the profile has no value types")]
    NoValues,
    /// A format name that is not one of [`Format::ALL`](crate::Format::ALL).
    #[error("unknown export format {0:?} (known: {known})", known = crate::Format::names())]
    UnknownFormat(String),
    /// A diff asked for in a format that cannot show one.
    #[error("a diff cannot be exported as {0} (diff formats: folded, svg, pprof)")]
    NoDiffFormat(&'static str),
    /// The serializer of a JSON format failed.
    #[error("cannot write the JSON")]
    Json(#[source] serde_json::Error),
}
