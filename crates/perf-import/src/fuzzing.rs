//! Entry points for the fuzz targets (hidden from the docs): the whole conversion of bytes
//! held in memory, up to the aggregate, with no kernel symbols and nothing written.

use std::io::Cursor;
use std::path::Path;

use collect_perf::KernelSymbols;

use crate::convert::{FindKernel, ImportOptions, is_pipe_mode, read_seekable};
use crate::error::Result;
use crate::kernel::KernelSymbolsSource;

/// Converts `data` (a perf.data file in file or pipe mode, told apart as `import_file` does)
/// as an import would, and returns the samples read and the MMAP2 records left out as
/// damaged.
///
/// Returns the errors of an import: a damaged file is an `Err` naming a byte offset.
pub fn convert(data: &[u8]) -> Result<(u64, u64)> {
    let none: FindKernel<'_> = &|_, _| Ok((KernelSymbols::default(), KernelSymbolsSource::None));
    let converted = read_seekable(
        Cursor::new(data),
        is_pipe_mode(data),
        Path::new("fuzz.data"),
        &ImportOptions::default(),
        none,
    )?;
    Ok((converted.rec.sample_count, converted.damaged_mmaps))
}
