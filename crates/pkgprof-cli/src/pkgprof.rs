//! `pkgprof`: gprof's command line over the pkgprof libraries.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use callgraph::{
    Analysis, AnnotateOptions, ORDERING_HUB_THRESHOLD, SourceLines, SourceNames, SymbolOptions,
    SymbolTable, Symspec, TextSection, function_ordering, line_table, select_symbols,
    source_file_order, static_arcs, symbol_sources, write_annotated_source, write_exec_counts,
    write_gmon_sum, write_report,
};
use gmon_format::{AddressSize, Endian, FormatChoice, Profile, ReadOptions, Sum};

use crate::getopt::UsageError;
use crate::listing::{file_format, refuse_unbuilt, report_options, symspecs};
use crate::options::{self, Options, Style, SymspecTable, USAGE};

/// A command line that gprof would refuse; `main` prints it with the usage text, exit 1.
#[derive(Debug)]
pub struct Usage(pub UsageError);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\n{USAGE}", self.0.0)
    }
}

impl std::error::Error for Usage {}

const VERSION: &str = concat!(
    "pkgprof ",
    env!("CARGO_PKG_VERSION"),
    "\nReports gmon.out profiles as GNU gprof 2.40 does; see README.md.\n"
);

/// Runs `pkgprof` with `args` (without the program name), writing reports to `out`.
///
/// Returns [`Usage`] for a command line gprof would refuse, and otherwise an error naming the
/// file and what is wrong when an input cannot be used.
pub fn run(args: impl IntoIterator<Item = OsString>, out: &mut dyn Write) -> Result<()> {
    let args = crate::getopt::expand_response_files(args)?;
    let o = options::parse(args).map_err(Usage)?;
    if o.help {
        out.write_all(USAGE.as_bytes())?;
        out.write_all(options::SEAMLESS_HELP.as_bytes())?;
        out.write_all(options::EXPORT_HELP.as_bytes())?;
        return Ok(());
    }
    if o.version {
        out.write_all(VERSION.as_bytes())?;
        return Ok(());
    }
    if o.latency || o.blocking || o.latency_diff {
        return crate::latency::run(&o, out);
    }
    // With --pid or --system, --value picks what the listing counts.
    let listed_value = o.seamless || o.system;
    let export_options = o.output.is_some() || (o.value.is_some() && !listed_value) || o.inverted;
    #[cfg(target_os = "linux")]
    if o.apps && o.export.is_some() {
        let format = o.export.as_deref().unwrap_or("").parse()?;
        for f in crate::apps::export_instances(&o, format)? {
            writeln!(out, "{}", f.display())?;
        }
        return Ok(());
    }
    if o.export.is_some() || o.diff || export_options || o.title.is_some() {
        #[cfg(target_os = "linux")]
        return crate::export::run(&o, file_format(&o)?, out);
        #[cfg(not(target_os = "linux"))]
        bail!("--export and --diff are built for Linux only (they read through safe-fs)");
    }
    if crate::apps::wanted(&o) {
        return crate::apps::run(&o, report_options(&o), out);
    }
    if o.seamless || o.system || o.threads {
        if !o.dump {
            refuse_unbuilt(&o)?;
        }
        return crate::seamless::run(&o, report_options(&o), out);
    }
    gprof(&o, out)
}

/// gprof's own job: sum the gmon files with the image's layout (printing `-i` and `--dump`
/// as it reads them), write `gmon.sum` for `-s`, then the reports.
fn gprof(o: &Options, out: &mut dyn Write) -> Result<()> {
    let format = file_format(o)?;
    // -i and -s print nothing of the reports; alone they select none.
    let quiet = Style::FileInfo as u32 | Style::Sum as u32;
    let reports = !o.dump && (o.styles & !quiet != 0 || o.styles == 0);
    if reports {
        refuse_unbuilt(o)?;
    }
    let (read_options, gmon_files, image) = inputs(o)?;
    let read_options = read_options.with_format(format);
    let sum = read_profiles(o, &gmon_files, &read_options, image.as_ref(), reports, out)?;
    let Some(Image { table, text, lines }) = image else {
        return Ok(());
    };
    let (table, sources) = if o.line {
        let t = line_table(&table, &text, lines.as_ref());
        (t.table, t.sources)
    } else {
        let sources = symbol_sources(&table, lines.as_ref());
        (table, sources)
    };
    if o.has(Style::Sum) {
        write_sum(format, &table, &sum)?;
    }
    if reports {
        write_reports(o, table, &text, lines.as_ref(), sources, sum, out)?;
    }
    Ok(())
}

/// Reads and sums `gmon_files` as gprof does, a file that cannot join the sum (other histogram
/// scale, overlapping range) stopping the run before anything about it is printed; prints each
/// file's `-i` summary and `--dump` as it goes, and warns about profiles that do not fit the
/// image when reports follow.
fn read_profiles(
    o: &Options,
    gmon_files: &[PathBuf],
    read_options: &ReadOptions,
    image: Option<&Image>,
    reports: bool,
    out: &mut dyn Write,
) -> Result<Sum> {
    let mut sum = Sum::new();
    for (n, path) in gmon_files.iter().enumerate() {
        refuse_missing_profile(path, image.is_some())?;
        let data = read_input(path, callgraph::PROFILE_MAX_BYTES)?;
        let profile = Profile::parse(&data, read_options).map_err(|e| e.with_path(path))?;
        sum.add(&profile).map_err(|e| e.with_path(path))?;
        if o.line {
            callgraph::check_line_mode_blocks(&profile, path)?;
        }
        if let (true, Some(Image { table, .. })) = (reports, &image) {
            for w in callgraph::check_profile(table, &profile) {
                warn(&w.message(&path.display().to_string(), &image_name(o)));
            }
        }
        if o.has(Style::FileInfo) {
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
        if o.dump {
            if n > 0 || o.has(Style::FileInfo) {
                writeln!(out)?;
            }
            writeln!(out, "file {}", path.display())?;
            dump_one(out, &profile, path)?;
        }
    }
    Ok(sum)
}

/// The reports the options select, over `table` (functions, or lines in line mode) and the
/// summed profile: flat profile and call graph, execution counts, annotated source, function
/// ordering, in gprof's order.
fn write_reports(
    o: &Options,
    table: SymbolTable,
    text: &TextSection,
    lines: Option<&SourceLines>,
    sources: Vec<Option<callgraph::SourceInfo>>,
    sum: Sum,
    out: &mut dyn Write,
) -> Result<()> {
    let static_arcs = if o.static_call_graph {
        static_arcs(&table, text, &sum)
    } else {
        Vec::new()
    };
    let source_names =
        SourceNames::new(&table, &sources, o.line, o.inline_file_names, o.print_path);
    // gprof's list of source files: the order of -A's listing, and where a file spec's name
    // is looked up (the first file with that base name is the one it means).
    let names_a_file = o
        .symspecs
        .iter()
        .any(|(_, text)| text.iter().any(|&b| b == b'.' || b == b':'));
    let files = if o.has(Style::Annotate) || names_a_file {
        source_file_order(&table, lines, &sources)
    } else {
        Vec::new()
    };
    let mut specs = symspecs(o);
    specs.resolve_files(&files);
    // The sum goes as soon as the self times are known (see Analysis::from_sum).
    let mut analysis = Analysis::from_sum(table, sum, &specs, &static_arcs, &sources);
    analysis.set_sources(source_names);
    if let Some(w) = callgraph::check_samples(&analysis.times) {
        warn(&w.message("", &image_name(o)));
    }
    let mut report = report_options(o);
    report.after_other_output = o.has(Style::FileInfo);
    // Refused before anything is printed.
    let ordering = if o.has(Style::FunctionOrdering) {
        let Some(order) = function_ordering(&analysis.graph) else {
            bail!(
                "not implemented yet: -r (function ordering) with {ORDERING_HUB_THRESHOLD} \
                 or more called functions"
            );
        };
        Some(order)
    } else {
        None
    };
    // Only the flat profile and call graph come from write_report; -A/-C/-s alone print
    // neither.
    let by_default = analysis.has_histogram() || analysis.has_arcs;
    if (o.styles == 0 && by_default) || o.has(Style::Flat) || o.has(Style::Graph) {
        write_report(&mut *out, &analysis, &report)?;
    }
    let mut printed = o.has(Style::FileInfo) || o.has(Style::Flat) || o.has(Style::Graph);
    // With nothing selected and nothing to show, gprof falls back to the exec counts.
    let exec_counts = o.has(Style::ExecCounts)
        || (o.styles == 0 && !analysis.has_histogram() && !analysis.has_arcs);
    let ncalls = &analysis.calls.calls;
    let specs_of = |table: SymspecTable| -> Vec<Symspec> {
        o.symspecs
            .iter()
            .filter(|(t, _)| *t == table)
            .map(|(_, text)| {
                let mut spec = Symspec::parse(text);
                spec.resolve_file(&files);
                spec
            })
            .collect()
    };
    let selection = |include: SymspecTable, exclude: SymspecTable| {
        let (inc, exc) = (specs_of(include), specs_of(exclude));
        if inc.is_empty() && exc.is_empty() {
            Vec::new()
        } else {
            select_symbols(&analysis.table, &sources, &inc, &exc)
        }
    };
    if exec_counts {
        let selected = selection(SymspecTable::IncludeExec, SymspecTable::ExcludeExec);
        write_exec_counts(
            &mut *out,
            &analysis.table,
            &sources,
            ncalls,
            &selected,
            o.display_unused,
            printed,
        )?;
        printed = true;
    }
    if o.has(Style::Annotate) {
        let mut options = AnnotateOptions::default();
        options.min_count = o.min_count.unwrap_or(1);
        options.table_length = o.table_length.unwrap_or(10);
        options.display_unused = o.display_unused;
        options.all_lines = o.all_lines;
        options.separate_files = o.separate_files;
        options.selected = selection(
            SymspecTable::IncludeAnnotation,
            SymspecTable::ExcludeAnnotation,
        );
        options.after_other_output = printed;
        let env_path = std::env::var_os("GPROF_PATH").unwrap_or_default();
        options.directories = o
            .directories
            .iter()
            .flat_map(|d| d.split(':').map(PathBuf::from).collect::<Vec<_>>())
            .chain(std::env::split_paths(&env_path))
            .filter(|d| !d.as_os_str().is_empty())
            .collect();
        let mut warn = |message: String| eprintln!("pkgprof: {message}");
        write_annotated_source(
            &mut *out,
            &analysis.table,
            &sources,
            ncalls,
            &files,
            &options,
            &mut warn,
        )?;
    }
    if let Some(order) = ordering {
        // Raw names, one per line, with no separator before them.
        let mut buf = Vec::new();
        for s in order {
            buf.extend_from_slice(&analysis.table.symbols()[s].name);
            buf.push(b'\n');
        }
        out.write_all(&buf)?;
    }
    Ok(())
}

/// Parses a pkgprof command line (without the program name) as [`run`] does — getopt_long's
/// rules, `@FILE` response files, symbol specifications — without reading any image or
/// profile: for tests and the command-line fuzz target. Returns a description of the options
/// and specifications, or getopt's message.
pub fn parse_command_line(args: impl IntoIterator<Item = OsString>) -> Result<String, String> {
    let args = crate::getopt::expand_response_files(args).map_err(|e| e.0)?;
    let o = options::parse(args).map_err(|e| e.0)?;
    Ok(format!("{o:?}\n{:?}", symspecs(&o)))
}

/// Reads an input file of at most `limit` bytes through the bounded reader: a failed system
/// call reads `PATH: <why>` as before, a refused file (FIFO, device, too large) names what it is.
pub(crate) fn read_input(path: &Path, limit: u64) -> Result<safe_fs::Contents> {
    callgraph::read_input(path, limit).map_err(|e| {
        let shown = path.display().to_string();
        match e.into_kind() {
            safe_fs::ErrorKind::Io { source, .. } => anyhow::Error::new(source).context(shown),
            kind => anyhow::Error::new(safe_fs::Error::new(path, kind)),
        }
    })
}

/// Writes `gmon.sum` in the current directory as `gprof -s` does.
fn write_sum(format: FormatChoice, table: &SymbolTable, sum: &Sum) -> Result<()> {
    let path = Path::new("gmon.sum");
    let out = write_gmon_sum(format, table, sum).map_err(|e| e.with_path(path))?;
    // A new file renamed over the old one: a link planted at gmon.sum is replaced, not
    // followed, and no reader sees half a sum.
    safe_fs::replace_file(path, &out)?;
    Ok(())
}

/// Says on stderr what gprof would leave unsaid; stdout stays gprof's.
fn warn(message: &str) {
    eprintln!("pkgprof: warning: {message}");
}

/// The image as the command line names it (gprof's default `a.out`).
fn image_name(o: &Options) -> String {
    o.operands
        .first()
        .map_or_else(|| "a.out".to_owned(), |i| i.to_string_lossy().into_owned())
}

/// The symbol table, the read options and the profile files.
///
/// As gprof does, the image (default `a.out`) is loaded first, so a bad image stops the run
/// before any profile is read or summarised, and its ELF header gives the address width and
/// byte order of the profiles (default `gmon.out`). `--dump` needs no symbols: it reads only the
/// ELF header, or takes the layout from `--dump-layout`, in which case every operand is a
/// profile.
struct Image {
    table: SymbolTable,
    /// `.text`, kept only for line mode (`-l`) and the static call graph (`-c`).
    text: TextSection,
    lines: Option<SourceLines>,
}

/// A profile that is not there is most often one not written yet: say how it comes about.
fn refuse_missing_profile(path: &Path, with_image: bool) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut m = format!("{}: no such file", path.display());
            if with_image {
                m.push_str(
                    "; run the program first (built with `gcc -pg`, it writes gmon.out into \
                     its working directory when it exits), or name the profile: \
                     pkgprof [OPTIONS] IMAGE GMON...",
                );
            }
            bail!(m)
        }
        _ => Ok(()),
    }
}

fn inputs(o: &Options) -> Result<(ReadOptions, Vec<PathBuf>, Option<Image>)> {
    let mut operands = o.operands.iter().map(PathBuf::from);
    let (read_options, table) = match o.dump_layout.as_deref() {
        Some(kind) => {
            let (size, endian) = parse_layout(kind)?;
            (ReadOptions::new(size, endian), None)
        }
        None => {
            let image = operands.next().unwrap_or_else(|| PathBuf::from("a.out"));
            if o.dump {
                let (size, endian) = callgraph::image_layout(&image)?;
                (ReadOptions::new(size, endian), None)
            } else {
                let mut symbol_options = SymbolOptions::default();
                symbol_options.no_static = o.no_static;
                symbol_options.ignore_non_functions = o.ignore_non_functions;
                let data = callgraph::read_image(&image)?;
                let table = SymbolTable::parse(&image, &data, &symbol_options)?;
                let mut text = TextSection::parse(&image, &data)?.unwrap_or_default();
                if !o.line && !o.static_call_graph {
                    text.bytes = Vec::new();
                }
                // Damaged debugging information only costs the source names, as in gprof.
                let lines = SourceLines::parse(&image, &data).ok().flatten();
                // The image itself (10 MB for 60,000 functions) goes before any profile is
                // read: what the rest needs of it is in these three.
                drop(data);
                let read_options = table.read_options();
                (read_options, Some(Image { table, text, lines }))
            }
        }
    };
    let mut files: Vec<PathBuf> = operands.collect();
    if files.is_empty() {
        files.push(PathBuf::from("gmon.out"));
    }
    Ok((read_options, files, table))
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
