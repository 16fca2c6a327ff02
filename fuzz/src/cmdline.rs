//! Fuzz body for pkgprof's command line: gprof's getopt_long rules, `@FILE` response files and
//! symbol specifications. The bytes are cut into arguments at NUL; parsing ends in options or a
//! usage error, the same each time, and never runs anything.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

/// Parses the arguments `data` holds.
pub fn run(data: &[u8]) {
    let args: Vec<OsString> = data
        .split(|&b| b == 0)
        .take(64)
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect();
    let first = pkgprof_cli::pkgprof::parse_command_line(args.clone());
    let again = pkgprof_cli::pkgprof::parse_command_line(args);
    assert_eq!(first, again, "parsing is not deterministic");
}
