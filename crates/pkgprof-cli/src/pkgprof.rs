//! `pkgprof`: gprof's command line over the pkgprof libraries.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{ArgAction, Parser};
use gmon_format::{AddressSize, Endian, FormatChoice, Profile, ReadOptions, Sum};

use crate::image::elf_layout;

const AFTER_HELP: &str = "\
Examples:
  pkgprof -i a.out gmon.out            how many records of each kind gmon.out holds
  pkgprof --dump a.out gmon.out        every record of gmon.out, readable
  pkgprof --dump --layout 32be x.out   the same for a file from a 32-bit big-endian image

Exit status: 0 on success, 1 if a file cannot be read or is not a valid profile (as gprof).";

/// Report on gmon.out profiles, as GNU gprof does.
#[derive(Debug, Parser)]
#[command(name = "pkgprof", version, after_help = AFTER_HELP)]
struct Args {
    /// Print a summary of each profile file: its version and how many records of each kind it
    /// holds (gprof's --file-info).
    #[arg(short = 'i', long = "file-info")]
    file_info: bool,

    /// Print every record of each profile file as text, with byte offsets.
    #[arg(long)]
    dump: bool,

    /// Which gmon formats to accept: `auto` (default), `magic` (GNU only), `bsd` (4.4 or old
    /// BSD), `4.4bsd`, or `prof`; only the first letter counts, as in gprof.
    #[arg(short = 'O', long = "file-format", value_name = "FORMAT")]
    file_format: Option<String>,

    /// Read profiles as coming from an image of this kind instead of reading the image:
    /// `64le`, `64be`, `32le` or `32be`. All operands are then profile files.
    #[arg(long, value_name = "KIND")]
    layout: Option<String>,

    /// Brief: leave out the explanations (accepted for gprof compatibility).
    #[arg(short = 'b', long = "brief", action = ArgAction::SetTrue)]
    brief: bool,

    /// The profiled image (default `a.out`), then its profile files (default `gmon.out`).
    #[arg(value_name = "IMAGE [GMON...]")]
    operands: Vec<PathBuf>,
}

/// Runs `pkgprof` with `args` (without the program name), writing reports to `out`.
///
/// Returns an error naming the file and what is wrong when an input cannot be used.
pub fn run(args: impl IntoIterator<Item = OsString>, out: &mut dyn Write) -> Result<()> {
    let args = Args::parse_from(std::iter::once(OsString::from("pkgprof")).chain(args));
    let format = match args.file_format.as_deref() {
        None => FormatChoice::Auto,
        Some(f) => match f.chars().next() {
            Some('a') => FormatChoice::Auto,
            Some('m') => FormatChoice::Gnu,
            Some('b') => FormatChoice::Bsd,
            Some('4') => FormatChoice::Bsd44,
            Some('p') => bail!("sorry, file format `prof' is not yet supported"),
            _ => bail!("{f}: unknown file format"),
        },
    };
    let (options, gmon_files) = match args.layout.as_deref() {
        Some(kind) => {
            let (size, endian) = parse_layout(kind)?;
            let files = if args.operands.is_empty() {
                vec![PathBuf::from("gmon.out")]
            } else {
                args.operands.clone()
            };
            (ReadOptions::new(size, endian), files)
        }
        None => {
            let mut operands = args.operands.iter();
            let image = operands
                .next()
                .cloned()
                .unwrap_or_else(|| PathBuf::from("a.out"));
            let mut files: Vec<PathBuf> = operands.cloned().collect();
            if files.is_empty() {
                files.push(PathBuf::from("gmon.out"));
            }
            let (size, endian) = elf_layout(&image)?;
            (ReadOptions::new(size, endian), files)
        }
    };
    let options = options.with_format(format);
    if !args.file_info && !args.dump {
        bail!(
            "only -i (--file-info) and --dump are implemented so far; the reports come with the callgraph crate"
        );
    }
    // Files are summed as they are read, as gprof does: a file that cannot join the sum (other
    // histogram scale, overlapping range) stops the run before anything about it is printed.
    let mut sum = Sum::new();
    let mut first = true;
    for path in &gmon_files {
        let data = fs::read(path).with_context(|| format!("{}", path.display()))?;
        let profile = Profile::parse(&data, &options).map_err(|e| e.with_path(path))?;
        sum.add(&profile).map_err(|e| e.with_path(path))?;
        if args.file_info {
            let s = profile.summary().map_err(|e| e.with_path(path))?;
            let plural = |n: u64| if n == 1 { "record" } else { "records" };
            writeln!(
                out,
                "File `{}' (version {}) contains:",
                path.display(),
                s.version
            )?;
            writeln!(out, "\t{} histogram {}", s.histograms, plural(s.histograms))?;
            writeln!(out, "\t{} call-graph {}", s.arcs, plural(s.arcs))?;
            writeln!(
                out,
                "\t{} basic-block count {}",
                s.basic_blocks,
                plural(s.basic_blocks)
            )?;
        }
        if args.dump {
            if !first || args.file_info {
                writeln!(out)?;
            }
            writeln!(out, "file {}", path.display())?;
            dump_one(out, &profile, path)?;
        }
        first = false;
    }
    Ok(())
}

fn dump_one(out: &mut dyn Write, profile: &Profile<'_>, path: &Path) -> Result<()> {
    let mut out = io::BufWriter::new(out);
    gmon_format::dump(&mut out, profile).map_err(|e| e.with_path(path))?;
    out.flush()?;
    Ok(())
}

fn parse_layout(kind: &str) -> Result<(AddressSize, Endian)> {
    Ok(match kind {
        "64le" => (AddressSize::U64, Endian::Little),
        "64be" => (AddressSize::U64, Endian::Big),
        "32le" => (AddressSize::U32, Endian::Little),
        "32be" => (AddressSize::U32, Endian::Big),
        _ => bail!("unknown layout `{kind}`: expected 64le, 64be, 32le or 32be"),
    })
}
