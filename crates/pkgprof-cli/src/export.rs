//! `pkgprof --export` and `pkgprof --diff`: gmon.out files and their image, or the processes
//! of a measurement directory, read into the profile model (callgraph's `gmon_model` and
//! `measurement_model`), written by `profile-export`.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use callgraph::{ModelOptions, SymbolOptions, SymbolTable, gmon_model};
use gmon_format::{FormatChoice, Sum};
use profile_export::{Diff, DiffOptions, ExportOptions, Format, Normalize, export, export_diff};
use profile_model::Profile;

use crate::options::Options;

/// Runs an export or a diff, writing to `--output` or to `out`.
///
/// Returns an error naming the file for an input that cannot be read, an unknown format or
/// value, or a diff of measurement directories (not built yet).
pub(crate) fn run(o: &Options, format_choice: FormatChoice, out: &mut dyn Write) -> Result<()> {
    let measurement = o.seamless || o.system;
    if measurement && o.diff {
        bail!(
            "--diff of measurement directories (--pid, --system) is not built yet: processes \
             of two runs have other pids, so their labelled functions would not match; diff \
             the exported folded stacks or pprof files instead, or their gmon.out.PIDu files"
        );
    }
    let format = o.export.as_deref().map(str::parse::<Format>).transpose()?;
    let to_terminal = o.output.is_none() && std::io::stdout().is_terminal();
    if format.is_some_and(Format::is_binary) && to_terminal {
        bail!("pprof output is binary: give --output=FILE or redirect standard output");
    }
    let mut buffer = Vec::new();
    if o.diff {
        let (base, new) = diff_inputs(&o.operands)?;
        let base_profile = model(o, format_choice, &base.0, &base.1)?;
        let new_profile = model(o, format_choice, &new.0, &new.1)?;
        let mut options = DiffOptions::default();
        options.value = o.value.clone();
        options.title = o.title.clone();
        // A gmon.out covers one image: its object says nothing a build under another name
        // would share.
        options.ignore_objects = true;
        if o.normalize {
            options.normalize = Normalize::Total;
        }
        match format {
            Some(format) => {
                let done = export_diff(&base_profile, &new_profile, format, &options, &mut buffer)?;
                note(done.reconstructed);
            }
            None => Diff::new(&base_profile, &new_profile, &options)?.write_listing(
                &describe(&base),
                &describe(&new),
                &mut buffer,
            )?,
        }
    } else {
        let Some(format) = format else {
            bail!("--output, --value, --title and --inverted go with --export or --diff");
        };
        let profile = if measurement {
            callgraph::measurement_model(&crate::seamless::build(o, true)?)
        } else {
            let mut operands = o.operands.iter().map(PathBuf::from);
            let image = operands.next().unwrap_or_else(|| PathBuf::from("a.out"));
            let mut gmons: Vec<PathBuf> = operands.collect();
            if gmons.is_empty() {
                gmons.push(PathBuf::from("gmon.out"));
            }
            model(o, format_choice, &image, &gmons)?
        };
        let mut options = ExportOptions::default();
        options.value = o.value.clone();
        options.title = o.title.clone();
        options.inverted = o.inverted;
        let done = export(&profile, format, &options, &mut buffer)?;
        note(done.reconstructed);
    }
    match &o.output {
        Some(path) => write_file(Path::new(path), &buffer),
        None => Ok(out.write_all(&buffer)?),
    }
}

/// Tells stderr what the output stands for when it is more than was recorded.
fn note(reconstructed: bool) {
    if reconstructed {
        eprintln!("pkgprof: note: {}", profile_export::RECONSTRUCTED_NOTE);
    }
}

/// An image and its gmon files.
type Input = (PathBuf, Vec<PathBuf>);

/// BASE and NEW from the operands: `GMON GMON` (image a.out), `IMAGE GMON GMON`, or
/// `IMAGE GMON IMAGE GMON`.
fn diff_inputs(operands: &[OsString]) -> Result<(Input, Input)> {
    let p: Vec<PathBuf> = operands.iter().map(PathBuf::from).collect();
    Ok(match p.as_slice() {
        [a, b] => (
            (PathBuf::from("a.out"), vec![a.clone()]),
            (PathBuf::from("a.out"), vec![b.clone()]),
        ),
        [image, a, b] => (
            (image.clone(), vec![a.clone()]),
            (image.clone(), vec![b.clone()]),
        ),
        [ia, a, ib, b] => ((ia.clone(), vec![a.clone()]), (ib.clone(), vec![b.clone()])),
        _ => bail!(
            "--diff takes BASE and NEW as GMON GMON, IMAGE GMON GMON or IMAGE GMON IMAGE GMON \
             ({} operands given)",
            p.len()
        ),
    })
}

fn describe((image, gmons): &Input) -> String {
    let gmons: Vec<String> = gmons.iter().map(|g| g.display().to_string()).collect();
    format!("{} of {}", gmons.join("+"), image.display())
}

/// The profile model of `gmons` summed, with `image`'s symbols.
fn model(o: &Options, format: FormatChoice, image: &Path, gmons: &[PathBuf]) -> Result<Profile> {
    let mut symbol_options = SymbolOptions::default();
    symbol_options.no_static = o.no_static;
    symbol_options.ignore_non_functions = o.ignore_non_functions;
    let data = callgraph::read_image(image)?;
    let table = SymbolTable::parse(image, &data, &symbol_options)?;
    drop(data);
    let read_options = table.read_options().with_format(format);
    let mut sum = Sum::new();
    for path in gmons {
        let data = callgraph::read_input(path, callgraph::PROFILE_MAX_BYTES)?;
        let profile =
            gmon_format::Profile::parse(&data, &read_options).map_err(|e| e.with_path(path))?;
        sum.add(&profile).map_err(|e| e.with_path(path))?;
    }
    let mut options = ModelOptions::default();
    options.image = Some(image.display().to_string());
    options.demangle = o.demangle;
    Ok(gmon_model(&table, &sum, &options))
}

/// Writes `bytes` to `path` through a temporary file renamed over it when complete, so a
/// failed export never leaves half a file and a planted link is never followed.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        bail!("{}: not a file name this command can write", path.display());
    };
    let dir = safe_fs::Dir::open_following(parent)?;
    let mut file = dir.create(0o644)?;
    file.write_all(bytes)
        .with_context(|| format!("{}", path.display()))?;
    file.persist_replacing(name)?;
    Ok(())
}
