//! `pkgprof --export` and `pkgprof --diff`: gmon.out files and their image, or the processes
//! of a measurement directory or perf.data file, read into the profile model (callgraph's
//! `gmon_model` and `measurement_model`), written by `profile-export`.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use callgraph::{ModelOptions, ProcessLabels, SymbolOptions, SymbolTable, gmon_model};
use gmon_format::{FormatChoice, Sum};
use profile_export::{Diff, DiffOptions, ExportOptions, Format, Normalize, export, export_diff};
use profile_model::Profile;

use crate::options::Options;

/// Runs an export or a diff, writing to `--output` or to `out`.
///
/// Returns an error naming the file for an input that cannot be read, or for an unknown format
/// or value.
pub(crate) fn run(o: &Options, format_choice: FormatChoice, out: &mut dyn Write) -> Result<()> {
    let measurement = o.seamless || o.system;
    let format = o.export.as_deref().map(str::parse::<Format>).transpose()?;
    let to_terminal = o.output.is_none() && std::io::stdout().is_terminal();
    if format.is_some_and(Format::is_binary) && to_terminal {
        bail!("pprof output is binary: give --output=FILE or redirect standard output");
    }
    let mut buffer = Vec::new();
    if o.diff {
        let ((base_profile, base_name), (new_profile, new_name)) = if measurement {
            measurement_diff_inputs(o)?
        } else {
            let (base, new) = diff_inputs(&o.operands)?;
            (
                (model(o, format_choice, &base.0, &base.1)?, describe(&base)),
                (model(o, format_choice, &new.0, &new.1)?, describe(&new)),
            )
        };
        let mut options = DiffOptions::default();
        options.value = o.value.clone();
        options.title = o.title.clone();
        // A gmon.out covers one image, and a process of a measurement has its executable:
        // its path says nothing a build under another name would share.
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
                &base_name,
                &new_name,
                &mut buffer,
            )?,
        }
    } else {
        let Some(format) = format else {
            bail!("--output, --value, --title and --inverted go with --export or --diff");
        };
        let profile = if crate::apps::wanted(o) {
            crate::apps::export_model(o)?
        } else if measurement {
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

/// BASE and NEW of a diff of two measurements (directories or perf.data files), as profile
/// models with their names: `--pid B,N BASE NEW` compares process B of BASE with process N of
/// NEW (`--pid P` the same pid in both), their functions labelled by side alone (`u:`, `k:`),
/// since the pids differ; `--system BASE NEW` compares whole systems, processes labelled by
/// command name (`prog/u:`, `prog/k:`).
///
/// Returns an error unless there are two operands and one or two pids (or `--system`), or if a
/// measurement cannot be read.
fn measurement_diff_inputs(o: &Options) -> Result<((Profile, String), (Profile, String))> {
    let [base, new] = o.operands.as_slice() else {
        bail!(
            "--diff of measurements takes BASE and NEW, two measurement directories or \
             perf.data files ({} operands given): pkgprof --diff --pid BASE_PID,NEW_PID BASE NEW",
            o.operands.len()
        );
    };
    let (base_pids, new_pids, style) = match (o.system, o.pids.as_slice()) {
        (true, _) => (vec![], vec![], ProcessLabels::Comm),
        (false, [p]) => (vec![*p], vec![*p], ProcessLabels::Side),
        (false, [b, n]) => (vec![*b], vec![*n], ProcessLabels::Side),
        (false, pids) => bail!(
            "--diff --pid takes the process of BASE and the process of NEW (--pid \
             BASE_PID,NEW_PID), or one pid for both; {} given. Compare whole measurements \
             with --system",
            pids.len()
        ),
    };
    let side = |dir: &OsString, pids: &[(u32, u32)]| -> Result<(Profile, String)> {
        let dir = Path::new(dir);
        let seamless = crate::seamless::build_at(o, dir, pids, true, style)?;
        let name = match pids {
            [(pid, n)] => format!(
                "pid {} of {}",
                gmon_format::process_label(*pid, *n),
                dir.display()
            ),
            _ => format!("the system of {}", dir.display()),
        };
        Ok((callgraph::measurement_model(&seamless), name))
    };
    Ok((side(base, &base_pids)?, side(new, &new_pids)?))
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
