//! Text listings in GNU gprof's layouts.

pub(crate) mod flat;
pub(crate) mod format;
