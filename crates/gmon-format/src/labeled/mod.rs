//! Process-labeled profile sets: the files a measurement leaves in its directory (pkprof
//! paper, §4.7–4.8), their names, the measurement-info file, and listing a directory of them.

mod name;
mod scan;

pub mod info;

pub use info::{
    ArcCounts, Field, INFO_MAGIC, INFO_MAJOR, INFO_MINOR, KernelInfo, Mapping, MeasurementInfo,
    ProcessCounters, ProcessInfo, SampleRate, SamplingInfo, Section,
};
pub use name::{Comm, FileKind, NAME_PREFIX, ProfileName};
pub use scan::{Measurement, ProcessFiles, Skipped, scan};
