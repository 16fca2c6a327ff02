//! What sample values measure: value types, named with a unit (pprof's `ValueType`).

use crate::StringId;

handle!(
    /// A value type of a profile: the position of its value in every sample's values.
    ValueTypeId
);

/// The unit of a value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Unit {
    /// Things counted: samples, calls, events.
    Count,
    /// Time, in nanoseconds.
    Nanoseconds,
    /// Memory or i/o, in bytes.
    Bytes,
}

impl Unit {
    /// The unit's name as pprof spells it (`count`, `nanoseconds`, `bytes`).
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::Nanoseconds => "nanoseconds",
            Unit::Bytes => "bytes",
        }
    }
}

/// A value type by name and unit: what [`ProfileBuilder::value_type`] declares and
/// [`Profile::value_type`] returns.
///
/// The constants are the kinds this project records; any other name works the same.
///
/// [`ProfileBuilder::value_type`]: crate::ProfileBuilder::value_type
/// [`Profile::value_type`]: crate::Profile::value_type
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ValueKind<'a> {
    /// What is measured (`samples`, `cpu`, `off-cpu`, …).
    pub name: &'a str,
    /// In which unit.
    pub unit: Unit,
}

impl ValueKind<'static> {
    /// Samples taken (histogram ticks, perf samples).
    pub const SAMPLES: Self = ValueKind::new("samples", Unit::Count);
    /// Calls counted (mcount arcs, traced calls).
    pub const CALLS: Self = ValueKind::new("calls", Unit::Count);
    /// CPU time.
    pub const CPU_TIME: Self = ValueKind::new("cpu", Unit::Nanoseconds);
    /// Time off the CPU: blocked or waiting to run.
    pub const OFF_CPU_TIME: Self = ValueKind::new("off-cpu", Unit::Nanoseconds);
    /// The latency of an operation (a system call, a request).
    pub const LATENCY: Self = ValueKind::new("latency", Unit::Nanoseconds);
    /// Bytes allocated, read or written.
    pub const BYTES: Self = ValueKind::new("bytes", Unit::Bytes);
}

impl<'a> ValueKind<'a> {
    /// The kind named `name`, in `unit`.
    pub const fn new(name: &'a str, unit: Unit) -> Self {
        ValueKind { name, unit }
    }
}

/// A value type as a profile stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ValueType {
    pub(crate) name: StringId,
    pub(crate) unit: Unit,
}

/// How much one sample stands for: pprof's `period_type` and `period` (a 1000 Hz cpu-clock
/// sample is 1,000,000 ns of CPU time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period<'a> {
    /// What the period measures.
    pub kind: ValueKind<'a>,
    /// The amount one sample stands for, in `kind`'s unit.
    pub value: i64,
}
