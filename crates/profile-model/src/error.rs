//! The one error type of this crate.

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a profile builder refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A sample with more or fewer values than the profile has value types.
    #[error("a sample has {got} values but the profile has {expected} value types")]
    ValueCount {
        /// Value types of the profile.
        expected: usize,
        /// Values the sample has.
        got: usize,
    },
}
