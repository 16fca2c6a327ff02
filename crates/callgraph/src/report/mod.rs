//! Text listings in GNU gprof's layouts.

pub(crate) mod explain;
pub(crate) mod flat;
pub(crate) mod flat_bsd;
pub(crate) mod format;
pub(crate) mod graph;
pub(crate) mod graph_order;
pub(crate) mod index;
