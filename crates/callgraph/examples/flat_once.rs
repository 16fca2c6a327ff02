//! Prints our `gprof -b -p [-z] [-a] [-D] IMAGE GMON...` (options first, each on its own);
//! with `--report` first, the full `gprof -b` report instead.
#[path = "../tests/common/mod.rs"]
mod common;
use std::io::Write;
use std::path::Path;
/// `common::flat_output` or `common::report_output`.
type Output = fn(&Path, &[&Path], common::Flags) -> Result<Vec<u8>, String>;

fn main() -> std::process::ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut flags = common::Flags::default();
    let mut output: Output = common::flat_output;
    while let Some(flag) = args.first() {
        match flag.as_str() {
            "-z" => flags.display_unused = true,
            "-a" => flags.no_static = true,
            "-D" => flags.ignore_non_functions = true,
            "--report" => output = common::report_output,
            "-T" => flags.traditional = true,
            _ => break,
        }
        args.remove(0);
    }
    let Some((image, gmons)) = args.split_first() else {
        eprintln!("usage: flat_once [--report] [-z] [-a] [-D] IMAGE GMON...");
        return std::process::ExitCode::from(2);
    };
    let gmons: Vec<&Path> = gmons.iter().map(Path::new).collect();
    match output(Path::new(image), &gmons, flags) {
        Ok(out) => {
            let _ = std::io::stdout().write_all(&out);
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::from(1)
        }
    }
}
