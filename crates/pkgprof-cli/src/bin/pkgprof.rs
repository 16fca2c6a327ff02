//! `pkgprof`: GNU gprof's reports, from the pkgprof libraries.

use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    keep_big_buffers_out_of_the_heap();
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

/// Pins glibc's mmap threshold at its initial 128 KiB.
///
/// glibc raises the threshold to the size of every mmapped block that is freed, so after the
/// image buffer (10 MB for a 60,000-function program) and the summed histogram go, the call
/// graph's big vectors land in the heap, where the freed space around them stays resident:
/// 2.8 MiB more peak RSS at 60,000 functions. With the threshold fixed, big blocks are always
/// mapped and given back when freed.
fn keep_big_buffers_out_of_the_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // Safety: mallopt only sets an allocator parameter; it is called before any other thread
    // exists and before any allocation it could affect the layout of.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
