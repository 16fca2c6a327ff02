//! pkgprof's profile model: what ran, what was measured, and whose it was, in a form that
//! knows no file format.
//!
//! Readers (gmon.out with its image, a pkgmon measurement directory, perf.data) produce a
//! [`Profile`]; listings, exports (pprof, folded stacks, speedscope, Firefox, DOT) and diffs
//! consume one. A profile holds:
//!
//! - interned strings ([`StringId`]): every name and path once;
//! - [`Object`]s (path, build-id), [`Function`]s (name, symbol name, object, user or kernel
//!   [`Side`], a label such as pkprof's `137u`, source file) and [`Frame`]s (a function at an
//!   address or line);
//! - a stack table ([`StackNode`]: parent, frame), shared prefixes stored once;
//! - value types with units ([`ValueKind`]: samples, CPU time, off-CPU time, latency, bytes,
//!   or any other), and samples with a stack, one value per type, a set of typed [`Label`]s
//!   (pid, tid, instance, comm, system call, boundary kind, or any other key) and maybe a time;
//! - [`Arc`]s, counted caller → callee edges, for mcount data (gmon.out has arcs, not stacks).
//!
//! Using it takes three steps:
//!
//! 1. Make a [`ProfileBuilder`] and declare the value types the reader measures.
//! 2. Intern what the reader finds — strings, objects, functions, frames, stacks, label sets;
//!    each comes back as a typed handle, the same handle for the same item — and add samples
//!    and arcs.
//! 3. [`ProfileBuilder::build`] the [`Profile`] and read it: its tables, [`Profile::total`],
//!    per-function self and inclusive values ([`Profile::function_totals`]), the caller/callee
//!    graph with its cycles ([`Profile::call_graph`], a petgraph view). Profiles are summed, or
//!    subtracted for a diff, with [`ProfileBuilder::add_profile`], which matches functions by
//!    identity (name, symbol name, object, side, label, file) rather than by handle.
//!
//! ```
//! use profile_model::{Frame, Function, Label, LabelKey, ProfileBuilder, Side, ValueKind};
//!
//! # fn main() -> profile_model::Result<()> {
//! let mut b = ProfileBuilder::new();
//! let cpu = b.value_type(ValueKind::CPU_TIME);
//!
//! // main → work → (kernel) ksys_read, sampled at 1 ms per sample, for pid 137.
//! let mut frame = |b: &mut ProfileBuilder, name: &str, side| {
//!     let name = b.string(name);
//!     let function = b.function(Function::new(name, side));
//!     b.frame(Frame::new(function))
//! };
//! let main = frame(&mut b, "main", Side::User);
//! let work = frame(&mut b, "work", Side::User);
//! let read = frame(&mut b, "ksys_read", Side::Kernel);
//! let pid = b.label_set(&[Label::number(LabelKey::Pid, 137)]);
//!
//! let in_work = b.stack_of(&[main, work]).expect("two frames");
//! let in_read = b.stack(Some(in_work), read);
//! b.add_sample(in_work, pid, &[3_000_000])?;
//! b.add_sample(in_read, pid, &[1_000_000])?;
//! let profile = b.build();
//!
//! assert_eq!(profile.total(cpu), 4_000_000);
//! let totals = profile.function_totals(cpu);
//! let work = profile.frame(work).function;
//! assert_eq!((totals.self_value(work), totals.inclusive(work)), (3_000_000, 4_000_000));
//! let graph = profile.call_graph(Some(cpu));
//! let callees = graph.callees(work);
//! assert_eq!(profile.function_name(callees[0].0), "ksys_read");
//! assert!(graph.cycles().is_empty());
//! # Ok(())
//! # }
//! ```
//!
//! `cargo run -p profile-model --example summary` builds a larger profile and prints what it
//! holds.
//!
//! What it does not do: read or write any file format (readers and exporters live with their
//! formats and produce or consume this model), symbolize addresses, or apply gprof's listing
//! rules (splitting histogram bins across symbols, numbering cycles, propagating time along
//! arcs) — those stay in `callgraph`, on top of the model.
//!
//! Speed: interning is hashing a few integers (FxHash); samples are stored as columns; a
//! million samples build and aggregate in a fraction of a second (`cargo bench -p
//! pkgprof-benches --bench model`).

#![deny(missing_docs)]

/// Declares a typed handle: a `u32` position in one of a profile's tables.
macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);

        impl $name {
            /// The position in its table: 0 for the first item added, then 1, 2, ….
            pub fn index(self) -> usize {
                self.0 as usize
            }

            pub(crate) fn from_u32(i: u32) -> Self {
                $name(i)
            }
        }
    };
}

mod arcs;
mod builder;
mod code;
mod error;
mod graph;
mod intern;
mod labels;
mod profile;
mod samples;
mod stacks;
mod strings;
#[cfg(test)]
mod test_util;
mod totals;
mod values;

pub use arcs::Arc;
pub use builder::{MergeOptions, ProfileBuilder};
pub use code::{Frame, FrameId, Function, FunctionId, Object, ObjectId, Side};
pub use error::{Error, Result};
pub use graph::{CallEdge, CallGraph};
pub use labels::{Label, LabelKey, LabelSetId, LabelValue};
pub use profile::Profile;
pub use samples::Sample;
pub use stacks::{StackId, StackNode};
pub use strings::StringId;
pub use totals::FunctionTotals;
pub use values::{Period, Unit, ValueKind, ValueTypeId};
