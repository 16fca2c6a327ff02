//! The bodies of the fuzz targets. Each `run` is also called by ordinary tests over the
//! fixtures (they include these files by path), so a crash found by fuzzing becomes a test.

pub mod async_moves;
pub mod cmdline;
pub mod collector;
pub mod continuous_index;
pub mod demangle;
pub mod gmon;
pub mod image;
pub mod info;
pub mod kallsyms;
pub mod latency;
pub mod manifest;
pub mod measurement;
pub mod name;
pub mod perf_data;
pub mod procfs;
pub mod stacks;
pub mod sum;
pub mod tracepoint;
