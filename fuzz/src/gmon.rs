//! Fuzz body for the gmon parser: any bytes must parse or fail cleanly, and whatever parses must
//! write back to the same bytes, sum and dump without panicking.

use gmon_format::{AddressSize, Endian, FormatChoice, Profile, ReadOptions, Sum, write_profile};

/// The first byte picks address width, byte order and format choice; the rest is the file.
pub fn run(data: &[u8]) {
    let Some((&selector, file)) = data.split_first() else {
        return;
    };
    run_with(options_for(selector), file);
}

/// The read options a selector byte stands for (the low 4 bits are used).
pub fn options_for(selector: u8) -> ReadOptions {
    let size = if selector & 1 == 0 {
        AddressSize::U64
    } else {
        AddressSize::U32
    };
    let endian = if selector & 2 == 0 {
        Endian::Little
    } else {
        Endian::Big
    };
    let format = match (selector >> 2) & 3 {
        0 => FormatChoice::Auto,
        1 => FormatChoice::Gnu,
        2 => FormatChoice::Bsd,
        _ => FormatChoice::Bsd44,
    };
    ReadOptions::new(size, endian).with_format(format)
}

/// Checks one file under one set of options.
pub fn run_with(options: ReadOptions, file: &[u8]) {
    let Ok(profile) = Profile::parse(file, &options) else {
        return;
    };
    let mut text = Vec::new();
    let dumped = gmon_format::dump(&mut text, &profile);
    if profile.validate().is_err() {
        assert!(dumped.is_err(), "dump accepted a file the reader rejects");
        return;
    }
    dumped.expect("dump of a valid file");
    let written = write_profile(Vec::new(), &profile).expect("writing a valid profile");
    assert!(written == file, "round trip changed the bytes");
    let mut sum = Sum::new();
    // Summing may refuse a file (overlapping histograms), but must not panic.
    if sum.add(&profile).is_ok() {
        let _ = sum.write_gnu(Vec::new(), options.address_size, options.endian);
    }
}
