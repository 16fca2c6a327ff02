//! Entry points for the fuzz targets (hidden from the docs): the whole conversion of bytes
//! held in memory, up to the aggregate, with no kernel symbols and nothing written.

use std::io::Cursor;
use std::path::Path;

use collect_perf::KernelSymbols;
use linux_perf_data::PerfFileReader;

use crate::convert::{FindKernel, ImportOptions, Tracked, read_records};
use crate::error::{Error, Result};
use crate::kernel::KernelSymbolsSource;

/// Converts `data` (a perf.data file in file or pipe mode, told apart as `import_file` does)
/// as an import would, and returns the samples read and the MMAP2 records left out as
/// damaged.
///
/// Returns the errors of an import: a damaged file is an `Err` naming a byte offset.
pub fn convert(data: &[u8]) -> Result<(u64, u64)> {
    let path = Path::new("fuzz.data");
    let pipe = data.get(8..16) == Some(&16u64.to_le_bytes()[..]);
    let reader = Tracked::new(Cursor::new(data));
    let at = reader.position();
    let parse = |source| Error::Parse {
        path: path.to_owned(),
        offset: at.get(),
        source,
    };
    let none: FindKernel<'_> = &|_, _| Ok((KernelSymbols::default(), KernelSymbolsSource::None));
    let options = ImportOptions::default();
    let converted = if pipe {
        let r = PerfFileReader::parse_pipe(reader).map_err(parse)?;
        read_records(r, path, &at, &options, none)?
    } else {
        let r = PerfFileReader::parse_file(reader).map_err(parse)?;
        read_records(r, path, &at, &options, none)?
    };
    Ok((converted.rec.sample_count, converted.damaged_mmaps))
}
