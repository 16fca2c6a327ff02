//! The command-line front ends of pkgprof: `pkgprof` (gprof's reports) and, later, `pkgmon`.
//!
//! The binaries are thin; everything they do lives here so that tests can call it.

mod getopt;
mod image;
mod options;
pub mod pkgprof;
mod seamless;
