//! `pkgprof`: GNU gprof's reports, from the pkgprof libraries.

use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let result = pkgprof_cli::pkgprof::run(std::env::args_os().skip(1), &mut out);
    let flushed = out.flush();
    match result.and_then(|()| flushed.map_err(Into::into)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            match err.downcast_ref::<pkgprof_cli::pkgprof::Usage>() {
                // getopt's message, then the usage text, as gprof prints them.
                Some(usage) => eprint!("pkgprof: {usage}"),
                None => eprintln!("pkgprof: {err:#}"),
            }
            // gprof exits 1 on every error; scripts written for gprof rely on it.
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
