//! Writes the benches' generated program of N functions as `DIR/image` and `DIR/gmon.out`, so
//! it can be fed to `gprof` and `pkgprof` without compiling and running a real one:
//! `cargo run --release -p pkgprof-benches --example write_generated -- N SEED DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(seed), Some(dir)) = (
        args.first().and_then(|a| a.parse::<usize>().ok()),
        args.get(1).and_then(|a| a.parse::<u64>().ok()),
        args.get(2).map(PathBuf::from),
    ) else {
        eprintln!("usage: write_generated N SEED DIR");
        return ExitCode::from(2);
    };
    let program = pkgprof_benches::generated_program(n, seed);
    for (name, bytes) in [("image", &program.image), ("gmon.out", &program.gmon)] {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("{}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
