//! `pkgmon`: profiles a command in user space and in the kernel and writes the process-labeled
//! files that `pkgprof --pid` reads.

#[cfg(target_os = "linux")]
fn main() -> std::process::ExitCode {
    pkgprof_cli::pkgmon::main()
}

#[cfg(not(target_os = "linux"))]
fn main() -> std::process::ExitCode {
    eprintln!("pkgmon: perf_event_open is Linux-only");
    std::process::ExitCode::from(125)
}
