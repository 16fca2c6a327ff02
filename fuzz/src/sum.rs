//! Fuzz body for summing several gmon files, as gprof does with `gprof a.out gmon.1 gmon.2`:
//! the bytes are cut into files at `0xff 0xfe` markers; each that parses is added, and a sum
//! that takes them all writes out and reads back.

use gmon_format::{Profile, ReadOptions, Sum};

use crate::gmon::options_for;

/// The first byte picks the layout (as for the `gmon` target); the rest holds the files.
pub fn run(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    run_files(options_for(selector), rest.split(|&b| b == 0xfe).take(16));
}

/// Sums `files` read with `options`.
pub fn run_files<'a>(options: ReadOptions, files: impl Iterator<Item = &'a [u8]>) {
    let mut sum = Sum::new();
    for file in files {
        let Ok(profile) = Profile::parse(file, &options) else {
            continue;
        };
        // A file that cannot join the sum (another scale, an overlap) is an error, not a panic.
        if sum.add(&profile).is_err() {
            return;
        }
    }
    let mut out = Vec::new();
    if sum
        .write_gnu(&mut out, options.address_size, options.endian)
        .is_ok()
    {
        let back = Profile::parse(&out, &options.with_format(gmon_format::FormatChoice::Gnu));
        assert!(back.is_ok(), "a written sum does not read back: {back:?}");
    }
}
