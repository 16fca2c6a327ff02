//! gprof's analysis as a library: symbols from an ELF image, histogram samples assigned to
//! functions, the call graph with its cycles, time propagated from callees to callers, and the
//! flat profile and call-graph listings in GNU gprof's exact layout.
//!
//! This crate is being built (see the report issue); it holds no analysis yet.

#![deny(missing_docs)]
