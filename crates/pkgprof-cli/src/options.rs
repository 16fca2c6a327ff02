//! gprof's options, as `pkgprof` accepts them: the same short and long names, arguments and
//! abbreviations, plus pkgprof's own long options.

use std::ffi::OsString;

use crate::getopt::{self, HasArg, Spec, UsageError};

/// Every option `pkgprof` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    NoStatic,
    Annotate,
    Brief,
    GraphSynonym,
    StaticCallGraph,
    ExecCounts,
    Debug,
    IgnoreNonFunctions,
    ExcludeGraph,
    ExcludeTime,
    IncludeGraph,
    IncludeTime,
    Help,
    FileInfo,
    Directory,
    NoAnnotate,
    ExcludeArc,
    Line,
    PrintPath,
    MinCount,
    Time,
    NoTime,
    FileFormat,
    FlatProfile,
    NoFlatProfile,
    Graph,
    NoGraph,
    FunctionOrdering,
    FileOrdering,
    Sum,
    ExternalSymbols,
    TableLength,
    Traditional,
    Version,
    Width,
    AllLines,
    SeparateFiles,
    DisplayUnused,
    NoExecCounts,
    InlineFileNames,
    Demangle,
    NoDemangle,
    // pkgprof's own
    Dump,
    DumpLayout,
    Pid,
    UserOnly,
    KernelOnly,
    System,
    MergeOut,
    ObjectPath,
    Inclusive,
    Async,
    Force,
    Export,
    Output,
    Diff,
    Normalize,
    Value,
    Inverted,
    Title,
    Threads,
    Kallsyms,
    Latency,
    Blocking,
    LatencyDiff,
    Plot,
    Operation,
    Apps,
    App,
    From,
    To,
}

const fn o(id: Opt, short: Option<char>, long: Option<&'static str>, arg: HasArg) -> Spec<Opt> {
    Spec {
        id,
        short,
        long,
        arg,
        tier: 0,
    }
}

const fn ours(id: Opt, long: &'static str, arg: HasArg) -> Spec<Opt> {
    Spec {
        id,
        short: None,
        long: Some(long),
        arg,
        tier: 1,
    }
}

use HasArg::{No, Optional, Required};

/// gprof's options. The order of the long names is gprof's own table order, which its
/// "ambiguous; possibilities:" messages list them in.
pub const TABLE: &[Spec<Opt>] = &[
    o(
        Opt::IgnoreNonFunctions,
        Some('D'),
        Some("ignore-non-functions"),
        No,
    ),
    o(Opt::InlineFileNames, None, Some("inline-file-names"), No),
    o(Opt::Line, Some('l'), Some("line"), No),
    o(Opt::Annotate, Some('A'), Some("annotated-source"), Optional),
    o(Opt::AllLines, Some('x'), Some("all-lines"), No),
    o(Opt::NoStatic, Some('a'), Some("no-static"), No),
    o(
        Opt::NoAnnotate,
        Some('J'),
        Some("no-annotated-source"),
        Optional,
    ),
    o(Opt::FlatProfile, Some('p'), Some("flat-profile"), Optional),
    o(
        Opt::NoFlatProfile,
        Some('P'),
        Some("no-flat-profile"),
        Optional,
    ),
    o(Opt::Graph, Some('q'), Some("graph"), Optional),
    o(Opt::NoGraph, Some('Q'), Some("no-graph"), Optional),
    o(
        Opt::ExternalSymbols,
        Some('S'),
        Some("external-symbol-table"),
        Required,
    ),
    o(Opt::ExecCounts, Some('C'), Some("exec-counts"), Optional),
    o(
        Opt::NoExecCounts,
        Some('Z'),
        Some("no-exec-counts"),
        Optional,
    ),
    o(
        Opt::FunctionOrdering,
        Some('r'),
        Some("function-ordering"),
        No,
    ),
    o(
        Opt::FileOrdering,
        Some('R'),
        Some("file-ordering"),
        Required,
    ),
    o(Opt::FileInfo, Some('i'), Some("file-info"), No),
    o(Opt::FileFormat, Some('O'), Some("file-format"), Required),
    o(Opt::Demangle, None, Some("demangle"), Optional),
    o(Opt::NoDemangle, None, Some("no-demangle"), No),
    o(Opt::Directory, Some('I'), Some("directory-path"), Required),
    o(
        Opt::DisplayUnused,
        Some('z'),
        Some("display-unused-functions"),
        No,
    ),
    o(Opt::Debug, Some('d'), Some("debug"), Optional),
    o(Opt::Help, Some('h'), Some("help"), No),
    o(Opt::MinCount, Some('m'), Some("min-count"), Required),
    o(Opt::PrintPath, Some('L'), Some("print-path"), No),
    o(Opt::Sum, Some('s'), Some("sum"), No),
    o(Opt::SeparateFiles, Some('y'), Some("separate-files"), No),
    o(
        Opt::StaticCallGraph,
        Some('c'),
        Some("static-call-graph"),
        No,
    ),
    o(Opt::TableLength, Some('t'), Some("table-length"), Required),
    o(Opt::Time, Some('n'), Some("time"), Required),
    o(Opt::NoTime, Some('N'), Some("no-time"), Required),
    o(Opt::Traditional, Some('T'), Some("traditional"), No),
    o(Opt::Version, Some('v'), Some("version"), No),
    o(Opt::Width, Some('w'), Some("width"), Required),
    o(Opt::Brief, Some('b'), Some("brief"), No),
    // Short-only options.
    o(Opt::GraphSynonym, Some('B'), None, No),
    o(Opt::ExcludeGraph, Some('e'), None, Required),
    o(Opt::ExcludeTime, Some('E'), None, Required),
    o(Opt::IncludeGraph, Some('f'), None, Required),
    o(Opt::IncludeTime, Some('F'), None, Required),
    o(Opt::ExcludeArc, Some('k'), None, Required),
    ours(Opt::Dump, "dump", No),
    ours(Opt::DumpLayout, "dump-layout", Required),
    ours(Opt::Pid, "pid", Required),
    ours(Opt::UserOnly, "user", No),
    ours(Opt::KernelOnly, "kernel", No),
    ours(Opt::System, "system", No),
    ours(Opt::MergeOut, "merge-out", Required),
    ours(Opt::ObjectPath, "object-path", Required),
    ours(Opt::Inclusive, "inclusive", Required),
    ours(Opt::Async, "async", Required),
    ours(Opt::Force, "force", No),
    ours(Opt::Export, "export", Required),
    ours(Opt::Output, "output", Required),
    ours(Opt::Diff, "diff", No),
    ours(Opt::Normalize, "normalize", No),
    ours(Opt::Value, "value", Required),
    ours(Opt::Inverted, "inverted", No),
    ours(Opt::Title, "title", Required),
    ours(Opt::Threads, "threads", No),
    ours(Opt::Kallsyms, "kallsyms", Required),
    ours(Opt::Latency, "latency", No),
    ours(Opt::Blocking, "blocking", No),
    ours(Opt::LatencyDiff, "latency-diff", No),
    ours(Opt::Plot, "plot", Required),
    ours(Opt::Operation, "operation", Required),
    ours(Opt::Apps, "apps", No),
    ours(Opt::App, "app", Required),
    ours(Opt::From, "from", Required),
    ours(Opt::To, "to", Required),
];

/// gprof's usage text (the option summary), printed for `-h` and after a usage error.
pub const USAGE: &str = "\
Usage: pkgprof [-[abcDhilLrsTvwxyz]] [-[ABCeEfFJnNOpPqQRStZ][name]] [-I dirs]
\t[-d[num]] [-k from/to] [-m min-count] [-t table-length]
\t[--[no-]annotated-source[=name]] [--[no-]exec-counts[=name]]
\t[--[no-]flat-profile[=name]] [--[no-]graph[=name]]
\t[--[no-]time=name] [--all-lines] [--brief] [--debug[=level]]
\t[--function-ordering] [--file-ordering] [--inline-file-names]
\t[--directory-path=dirs] [--display-unused-functions]
\t[--file-format=name] [--file-info] [--help] [--line] [--min-count=n]
\t[--no-static] [--print-path] [--separate-files]
\t[--static-call-graph] [--sum] [--table-length=len] [--traditional]
\t[--version] [--width=n] [--ignore-non-functions]
\t[--demangle[=STYLE]] [--no-demangle] [--external-symbol-table=name] [@FILE]
\t[--dump] [--dump-layout=64le|64be|32le|32be]
\t[image-file] [profile-file...]
";

/// The seamless report's options, printed after [`USAGE`] by `--help` (not after usage
/// errors, whose text is gprof's).
pub const SEAMLESS_HELP: &str = "\n\
Seamless reports of a pkgmon measurement directory (default pkgmon.data if it
exists, else .):
  pkgprof [gprof options] --pid=PID[,PID...] [DIR]
  pkgprof [gprof options] --system [DIR]
\t--pid=PID[,PID...]   merge these processes' user and kernel profiles into one
\t                     listing, names labelled PIDu:name and PIDk:name; PID_N is
\t                     the Nth later process that reused pid PID
\t--system             every process, plus kernel: (gmon.out.-k.kernel) and
\t                     other: (gmon.out.-k.other)
\t--user, --kernel     one side only
\t--object-path=DIR    where to look for objects not at their recorded path: by
\t                     file name, and by build-id as DIR/.build-id/xx/rest.debug
\t                     (repeatable; every object's build-id is checked)
\t--merge-out=FILE     also write the merged profile to FILE and its symbols to
\t                     FILE.elf, so that `gprof FILE.elf FILE` reads them
\t--inclusive=gprof    children times as gprof propagates them (the default):
\t                     each arc gets its callee's total in proportion to its
\t                     count, as if every call cost the same
\t--inclusive=stacks   exact inclusive times from the sampled stacks: a function
\t                     counts once per sample it was on the stack of
\t--async=victim       for a measurement of pkgmon --async: asynchronous kernel
\t                     work in the process it ran in, as recorded, under
\t                     PIDk:[async KIND] (--async=beneficiary, the default:
\t                     in the process it was done for)
\t--force              report a measurement that its manifest says is incomplete
\t                     or changed (pkgmon killed, disk full), with a warning
\t--threads            refused: the threads of a process are merged when pkgmon
\t                     writes its files, which keep no thread ids
\t--kallsyms=FILE      DIR may be a perf.data file (perf record -g; frame
\t                     pointers or --call-graph dwarf, -z, pipe mode): it is
\t                     read as the measurement `pkgmon --import` makes of it;
\t                     its kernel symbols are FILE, else perf's build-id cache,
\t                     else /proc/kallsyms if this kernel's release is the file's
Continuous directories (of `pkgmon --continuous -a`: a measurement per window):
  pkgprof --apps [--from=WHEN] [--to=WHEN] DIR
  pkgprof [gprof options] --app=NAME[#N] [--from=WHEN] [--to=WHEN] DIR
  pkgprof --apps --export=FORMAT --output=OUTDIR [--app=NAME[#N]] DIR
  pkgprof [gprof options] --system [--from=WHEN] [--to=WHEN] DIR
\t--apps               applications and their instances (NAME#N, SLEEPY's
\t                     appid) with their share of the samples, CPU time and
\t                     lifetime over the windows selected
\t--app=NAME[#N]       the seamless listing of one application, all its
\t                     instances summed, or of instance N; functions labelled
\t                     NAME/u: and NAME/k:; every --export works on it
\t-l (with --app, --system or --pid)
\t                     per instruction (SLEEPY's EIP view): each address the
\t                     samples were taken at, in its object file's addresses
\t                     (objdump -d), with function+offset, source file:line
\t                     (DWARF) and object, most samples first; -L: full paths
\t--from, --to=WHEN    the windows to read: a window number (12 or w12), a
\t                     time before the last window's end (-30m, -2h), or
\t                     seconds since the epoch (@1732426000); default all
Latency and blocking reports (of `pkgmon --latency` / `--blocking`):
  pkgprof --latency [--pid=PID[,PID...]] [DIR]
  pkgprof --blocking [--pid=PID[,PID...]] [DIR]
  pkgprof --latency-diff A B
  pkgprof --latency|--latency-diff --plot=FILE [--operation=NAME] ...
\t--latency            per process, system calls by total latency, each with its
\t                     log2 histogram, its peaks (mean latency, share of calls)
\t                     and its top call sites
\t--blocking           per system call and call site: calls, wall, CPU, blocked
\t                     and runnable time, page faults, where the calls slept and
\t                     who woke them (DeBox)
\t--latency-diff A B   the system calls whose latency changed most between two
\t                     measurements (OSprof: prefilter by totals, compare peaks,
\t                     rate by the Earth Mover's Distance; KS and chi2 beside)
\t--plot=FILE          with --latency or --latency-diff: draw one system call's
\t                     latency profile as SVG, or PNG if FILE ends in .png (a
\t                     heat map of its time slices if recorded with --slice;
\t                     A filled and B outlined for a diff)
\t--operation=NAME     the system call --plot draws (default: the one with the
\t                     most total latency; for a diff, the one changed most)
A header with each process's kernel counters (CPU time, faults, switches, i/o,
samples, lost samples, kernel entries by kind) comes before the listings.
Interrupts are not calls from the user function: their kernel entries have the
pseudo-function PIDk:[interrupt] as parent.
Examples:
  pkgprof -b --pid 4242 measurement/
  pkgprof -b -q --pid 4242,4243 --object-path /srv/archive/bin measurement/
  pkgprof -b --pid 4242 perf.data
Exit status: 0 on success, 1 on any error.
";

/// The export and diff options, printed after [`SEAMLESS_HELP`] by `--help`.
pub const EXPORT_HELP: &str = "\n\
Exports and diffs of a gmon.out with its image, or of a measurement directory:
  pkgprof --export=FORMAT [--output=FILE] [options] [image-file] [profile-file...]
  pkgprof --export=FORMAT [--output=FILE] (--pid=PID[,PID...] | --system) [DIR]
  pkgprof --diff [--export=FORMAT] [--output=FILE] [options] BASE NEW
  pkgprof --diff [--export=FORMAT] (--pid=BASE_PID,NEW_PID | --system) BASE NEW
\t--export=FORMAT      write the profile in FORMAT instead of gprof's listings:
\t                     folded      folded stacks (FlameGraph, inferno)
\t                     svg         an interactive flame graph (also: flamegraph)
\t                     pprof       gzip-compressed profile.proto (go tool pprof)
\t                     speedscope  speedscope's JSON (speedscope.app)
\t                     firefox     the Firefox Profiler's processed format
\t                     dot         the call graph for Graphviz, gprof2dot-style
\t                     json        the profile model, versioned schema
\t                     A gmon.out has arcs, not stacks: stack formats get stacks
\t                     reconstructed by gprof's assumption (each call of a
\t                     function costs the average), and say so; pprof and dot
\t                     also carry the arcs with their counts.
\t--output=FILE        write there instead of standard output (pprof is binary
\t                     and is not written to a terminal)
\t--value=NAME         the value exported or compared (default: samples); with
\t                     --pid or --system and no --export, the value the listing
\t                     counts: off-cpu lists the time the system calls of a
\t                     pkgmon --blocking run slept, in seconds, by where they
\t                     slept and the callers that led there
\t--title=TEXT         a flame graph's title, a speedscope or Firefox name
\t--inverted           an icicle graph: roots at the top
\t--diff BASE NEW      compare two profiles, functions matched by name, object
\t                     and file (not address): a listing of self and inclusive
\t                     values in base and new, the change, change %, ratio and
\t                     sampling noise (sqrt of the counts), sorted by change;
\t                     with --export=folded|svg|pprof, a differential export
\t                     (two-count folded stacks, a red/blue flame graph, pprof
\t                     with base samples negated as go tool pprof -diff_base).
\t                     BASE and NEW are: GMON GMON (image a.out), IMAGE GMON
\t                     GMON (one image), or IMAGE GMON IMAGE GMON (two builds);
\t                     or two measurements (directories or perf.data files)
\t                     with --pid=BASE_PID,NEW_PID (functions matched by side
\t                     and name: u:read, k:vfs_read) or --system (by command
\t                     name too: prog/u:read)
\t--normalize          scale NEW so that its total equals BASE's (pprof's)
Examples:
  pkgprof --export=svg --output=prog.svg ./prog gmon.out
  pkgprof --export=pprof --output=prog.pb.gz ./prog gmon.out
  go tool pprof -top prog.pb.gz
  pkgprof --export=folded --pid 4242 pkgmon.data | inferno-flamegraph > pid.svg
  pkgprof --diff ./prog-v1 gmon.out.v1 ./prog-v2 gmon.out.v2
  pkgprof --diff --export=svg --output=diff.svg ./prog gmon.base gmon.new
  pkgprof --diff --pid 4242,5151 before.data after.data
Exit status: 0 on success, 1 on any error.
";

/// Which symbol table a symspec option adds to (gprof's include/exclude tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymspecTable {
    /// `-p spec`: only these get flat-profile credit and are printed.
    IncludeFlat,
    /// `-P spec`.
    ExcludeFlat,
    /// `-q spec` without `/`, `-f`, `-F`.
    IncludeGraph,
    /// `-Q spec` without `/`, `-e`, `-E`.
    ExcludeGraph,
    /// `-q from/to`.
    IncludeArcs,
    /// `-Q from/to`, `-k from/to`.
    ExcludeArcs,
    /// `-n`, `-F`.
    IncludeTime,
    /// `-N`, `-E`.
    ExcludeTime,
    /// `-A spec`.
    IncludeAnnotation,
    /// `-J spec`.
    ExcludeAnnotation,
    /// `-C spec`.
    IncludeExec,
    /// `-Z spec`.
    ExcludeExec,
}

/// One output style, a bit of gprof's style mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// The flat profile (`-p`).
    Flat = 1,
    /// The call graph (`-q`).
    Graph = 2,
    /// Basic-block execution counts (`-C`).
    ExecCounts = 4,
    /// Annotated source (`-A`).
    Annotate = 8,
    /// File info (`-i`).
    FileInfo = 16,
    /// Function ordering (`-r`).
    FunctionOrdering = 32,
    /// File ordering (`-R`).
    FileOrdering = 64,
    /// gmon.sum (`-s`).
    Sum = 128,
}

/// The parsed command line.
#[derive(Debug, Default)]
pub struct Options {
    /// Styles selected.
    pub styles: u32,
    /// Styles the user mentioned, selected or not; they are kept out of the default.
    pub user_styles: u32,
    /// Symspecs with their tables, in command-line order.
    /// The specs are bytes: symbol names need not be UTF-8.
    pub symspecs: Vec<(SymspecTable, Vec<u8>)>,
    /// `-b`.
    pub brief: bool,
    /// `-a`.
    pub no_static: bool,
    /// `-D`.
    pub ignore_non_functions: bool,
    /// `-c`.
    pub static_call_graph: bool,
    /// `-z`.
    pub display_unused: bool,
    /// `-l`, also implied by `-s`.
    pub line: bool,
    /// `-L`.
    pub print_path: bool,
    /// `-T`.
    pub traditional: bool,
    /// `-x`.
    pub all_lines: bool,
    /// `-y`.
    pub separate_files: bool,
    /// `--inline-file-names`.
    pub inline_file_names: bool,
    /// `--demangle` (default) or `--no-demangle`.
    pub demangle: bool,
    /// `-I`, in order.
    pub directories: Vec<String>,
    /// `-m`, as C's atoi reads it.
    pub min_count: Option<i64>,
    /// `-t`.
    pub table_length: Option<i64>,
    /// `-w`.
    pub width: Option<i64>,
    /// `-O`.
    pub file_format: Option<String>,
    /// `-S`.
    pub external_symbols: Option<OsString>,
    /// `-R`.
    pub file_ordering_map: Option<OsString>,
    /// `-h`.
    pub help: bool,
    /// `-v`.
    pub version: bool,
    /// `--dump`.
    pub dump: bool,
    /// `--dump-layout`.
    pub dump_layout: Option<String>,
    /// `--pid`, every process of every use, in order, as (pid, instance): `4242_1` is the
    /// second process that had pid 4242.
    pub pids: Vec<(u32, u32)>,
    /// `--pid` was given (even with an empty list).
    pub seamless: bool,
    /// `--user`.
    pub user_only: bool,
    /// `--kernel`.
    pub kernel_only: bool,
    /// `--system`.
    pub system: bool,
    /// `--merge-out`.
    pub merge_out: Option<OsString>,
    /// `--object-path`, in order.
    pub object_path: Vec<OsString>,
    /// `--inclusive`.
    pub inclusive: Option<String>,
    /// `--async`: which view of asynchronous work (`victim`, `beneficiary`).
    pub async_view: Option<String>,
    /// `--force`: report an incomplete measurement.
    pub force: bool,
    /// `--export`: the format's name.
    pub export: Option<String>,
    /// `--output`.
    pub output: Option<OsString>,
    /// `--diff`.
    pub diff: bool,
    /// `--normalize`.
    pub normalize: bool,
    /// `--value`.
    pub value: Option<String>,
    /// `--inverted`.
    pub inverted: bool,
    /// `--title`.
    pub title: Option<String>,
    /// `--threads`: per-thread listings, refused (see `seamless::run`).
    pub threads: bool,
    /// `--kallsyms`: the kernel symbols of a perf.data file.
    pub kallsyms: Option<OsString>,
    /// A `--pid` list that does not parse, reported when the run starts.
    pub bad_pid: Option<String>,
    /// `--latency`: system-call latency histograms.
    pub latency: bool,
    /// `--blocking`: where system calls blocked.
    pub blocking: bool,
    /// `--latency-diff A B`: compare two measurements' latencies.
    pub latency_diff: bool,
    /// `--plot=FILE`: draw a latency profile into FILE.
    pub plot: Option<OsString>,
    /// `--operation=NAME`: the system call `--plot` draws.
    pub operation: Option<String>,
    /// `--apps`: the applications and instances of a continuous directory.
    pub apps: bool,
    /// `--app=NAME[#N]`: one application (or instance) of a continuous directory.
    pub app: Option<String>,
    /// `--from=WHEN`: the first window of a continuous directory to read.
    pub from: Option<String>,
    /// `--to=WHEN`: the last window of a continuous directory to read.
    pub to: Option<String>,
    /// Image and profile files.
    pub operands: Vec<OsString>,
}

impl Options {
    /// Whether `style` is selected.
    pub fn has(&self, style: Style) -> bool {
        self.styles & style as u32 != 0
    }
}

/// Parses a command line as gprof does.
///
/// Returns getopt's message on a usage error.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Options, UsageError> {
    let parsed = getopt::parse(TABLE, args)?;
    let mut o = Options {
        demangle: true,
        operands: parsed.operands,
        ..Options::default()
    };
    for (id, arg) in parsed.options {
        let text = arg.as_ref().map(|a| a.to_string_lossy().into_owned());
        let select = |o: &mut Options, style: Style, on: bool| {
            o.user_styles |= style as u32;
            if on {
                o.styles |= style as u32;
            } else {
                o.styles &= !(style as u32);
            }
        };
        let spec = |o: &mut Options, table: SymspecTable| {
            if let Some(a) = &arg {
                o.symspecs.push((table, a.as_encoded_bytes().to_vec()));
            }
        };
        match id {
            Opt::NoStatic => o.no_static = true,
            Opt::Annotate => {
                spec(&mut o, SymspecTable::IncludeAnnotation);
                select(&mut o, Style::Annotate, true);
            }
            // The "no" forms with a spec add it to the exclude table and still select the
            // style; without one they deselect it.
            Opt::NoAnnotate => {
                spec(&mut o, SymspecTable::ExcludeAnnotation);
                select(&mut o, Style::Annotate, text.is_some());
            }
            Opt::Brief => o.brief = true,
            Opt::GraphSynonym => select(&mut o, Style::Graph, true),
            Opt::StaticCallGraph => o.static_call_graph = true,
            Opt::ExecCounts => {
                spec(&mut o, SymspecTable::IncludeExec);
                select(&mut o, Style::ExecCounts, true);
            }
            Opt::NoExecCounts => {
                spec(&mut o, SymspecTable::ExcludeExec);
                select(&mut o, Style::ExecCounts, text.is_some());
            }
            Opt::Debug => {}
            Opt::IgnoreNonFunctions => o.ignore_non_functions = true,
            Opt::ExcludeGraph => spec(&mut o, SymspecTable::ExcludeGraph),
            Opt::ExcludeTime => {
                spec(&mut o, SymspecTable::ExcludeTime);
                spec(&mut o, SymspecTable::ExcludeGraph);
            }
            Opt::IncludeGraph => spec(&mut o, SymspecTable::IncludeGraph),
            Opt::IncludeTime => {
                spec(&mut o, SymspecTable::IncludeTime);
                spec(&mut o, SymspecTable::IncludeGraph);
            }
            Opt::Help => o.help = true,
            Opt::FileInfo => select(&mut o, Style::FileInfo, true),
            Opt::Directory => o.directories.extend(text),
            Opt::ExcludeArc => spec(&mut o, SymspecTable::ExcludeArcs),
            Opt::Line => o.line = true,
            Opt::PrintPath => o.print_path = true,
            Opt::MinCount => o.min_count = text.as_deref().map(getopt::atoi),
            Opt::Time => spec(&mut o, SymspecTable::IncludeTime),
            Opt::NoTime => spec(&mut o, SymspecTable::ExcludeTime),
            Opt::FileFormat => o.file_format = text,
            Opt::FlatProfile => {
                spec(&mut o, SymspecTable::IncludeFlat);
                select(&mut o, Style::Flat, true);
            }
            Opt::NoFlatProfile => {
                spec(&mut o, SymspecTable::ExcludeFlat);
                select(&mut o, Style::Flat, text.is_some());
            }
            Opt::Graph | Opt::NoGraph => {
                let arcs = text.as_deref().is_some_and(|t| t.contains('/'));
                let table = match (id == Opt::Graph, arcs) {
                    (true, false) => SymspecTable::IncludeGraph,
                    (true, true) => SymspecTable::IncludeArcs,
                    (false, false) => SymspecTable::ExcludeGraph,
                    (false, true) => SymspecTable::ExcludeArcs,
                };
                spec(&mut o, table);
                select(&mut o, Style::Graph, id == Opt::Graph || text.is_some());
            }
            Opt::FunctionOrdering => select(&mut o, Style::FunctionOrdering, true),
            Opt::FileOrdering => {
                o.file_ordering_map = arg.clone();
                select(&mut o, Style::FileOrdering, true);
            }
            Opt::Sum => {
                // gprof's -s turns on line granularity so basic-block counts survive.
                o.line = true;
                select(&mut o, Style::Sum, true);
            }
            Opt::ExternalSymbols => o.external_symbols = arg.clone(),
            Opt::TableLength => o.table_length = text.as_deref().map(getopt::atoi_int),
            Opt::Traditional => o.traditional = true,
            Opt::Version => o.version = true,
            Opt::Width => o.width = text.as_deref().map(getopt::atoi_int),
            Opt::AllLines => o.all_lines = true,
            Opt::SeparateFiles => o.separate_files = true,
            Opt::DisplayUnused => o.display_unused = true,
            Opt::InlineFileNames => o.inline_file_names = true,
            Opt::Demangle => o.demangle = true,
            Opt::NoDemangle => o.demangle = false,
            Opt::Dump => o.dump = true,
            Opt::DumpLayout => o.dump_layout = text,
            Opt::Pid => {
                o.seamless = true;
                for part in text.as_deref().unwrap_or("").split(',') {
                    match gmon_format::parse_process_label(part.trim()) {
                        Some(label) => o.pids.push(label),
                        None => o.bad_pid = Some(part.to_owned()),
                    }
                }
            }
            Opt::UserOnly => o.user_only = true,
            Opt::KernelOnly => o.kernel_only = true,
            Opt::System => o.system = true,
            Opt::MergeOut => o.merge_out = arg.clone(),
            Opt::ObjectPath => o.object_path.extend(arg.clone()),
            Opt::Inclusive => o.inclusive = text,
            Opt::Async => o.async_view = text,
            Opt::Force => o.force = true,
            Opt::Export => o.export = text,
            Opt::Output => o.output = arg.clone(),
            Opt::Diff => o.diff = true,
            Opt::Normalize => o.normalize = true,
            Opt::Value => o.value = text,
            Opt::Inverted => o.inverted = true,
            Opt::Title => o.title = text,
            Opt::Threads => o.threads = true,
            Opt::Kallsyms => o.kallsyms = arg.clone(),
            Opt::Latency => o.latency = true,
            Opt::Blocking => o.blocking = true,
            Opt::LatencyDiff => o.latency_diff = true,
            Opt::Plot => o.plot = arg.clone(),
            Opt::Operation => o.operation = text,
            Opt::Apps => o.apps = true,
            Opt::App => o.app = text,
            Opt::From => o.from = text,
            Opt::To => o.to = text,
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(args: &str) -> Options {
        parse(args.split_whitespace().map(OsString::from)).unwrap()
    }

    #[test]
    fn no_forms_with_a_spec_still_select_their_style() {
        let o = parse_str("-Pmain");
        assert!(o.has(Style::Flat));
        assert_eq!(o.symspecs, [(SymspecTable::ExcludeFlat, b"main".to_vec())]);
        let o = parse_str("-p -P");
        assert!(!o.has(Style::Flat));
        assert_eq!(o.user_styles, Style::Flat as u32);
        let o = parse_str("-Qa/b");
        assert!(o.has(Style::Graph));
        assert_eq!(o.symspecs, [(SymspecTable::ExcludeArcs, b"a/b".to_vec())]);
    }

    #[test]
    fn sum_implies_line_and_numbers_read_like_atoi() {
        let o = parse_str("-s -w x -t -5 -m 3k");
        assert!(o.line && o.has(Style::Sum));
        assert_eq!(
            (o.width, o.table_length, o.min_count),
            (Some(0), Some(-5), Some(3))
        );
    }

    #[test]
    fn our_options_never_take_over_gprofs_abbreviations() {
        let err = parse(["--d".into()]).unwrap_err().0;
        assert_eq!(
            err,
            "option '--d' is ambiguous; possibilities: '--demangle' '--directory-path' \
             '--display-unused-functions' '--debug'"
        );
        assert!(parse_str("--dump a.out").dump);
        let o = parse_str("--dump-l 32be x");
        assert_eq!(o.dump_layout.as_deref(), Some("32be"));
    }

    #[test]
    fn seamless_options_leave_gprofs_abbreviations_alone() {
        // `--s`, `--m`, `--i` and `--p` keep meaning what they mean to gprof.
        let err = parse(["--s".into()]).unwrap_err().0;
        assert!(err.starts_with("option '--s' is ambiguous"), "{err}");
        assert!(!err.contains("system"), "{err}");
        assert_eq!(parse_str("--m 5").min_count, Some(5));
        assert!(parse_str("--p").print_path);
        let err = parse(["--i".into()]).unwrap_err().0;
        assert!(!err.contains("inclusive"), "{err}");
        // Our own names and their unique prefixes.
        let o = parse_str("--pid 12,34 --pid=56 --sy --us --ker --merge-o m --obj a --obj b");
        assert_eq!(o.pids, [(12, 0), (34, 0), (56, 0)]);
        assert!(o.seamless && o.system && o.user_only && o.kernel_only);
        assert_eq!(o.merge_out, Some("m".into()));
        assert_eq!(o.object_path, ["a", "b"]);
        assert_eq!(
            parse_str("--inc stacks").inclusive.as_deref(),
            Some("stacks")
        );
        assert_eq!(parse_str("--pid 1,x").bad_pid.as_deref(), Some("x"));
        assert_eq!(parse_str("--pid 7_2,8").pids, [(7, 2), (8, 0)]);
        assert_eq!(parse_str("--pid 7_0").bad_pid.as_deref(), Some("7_0"));
    }

    #[test]
    fn export_options_parse_and_leave_gprofs_alone() {
        let o = parse_str("--exp pprof --out p.gz --val cpu --inv --title T --diff --norm a b");
        assert_eq!(o.export.as_deref(), Some("pprof"));
        assert_eq!(o.output, Some("p.gz".into()));
        assert_eq!(
            (o.value.as_deref(), o.title.as_deref()),
            (Some("cpu"), Some("T"))
        );
        assert!(o.inverted && o.diff && o.normalize);
        assert_eq!(o.operands, ["a", "b"]);
        // gprof's --d... and --i... keep their meaning.
        assert!(parse(["--d".into()]).unwrap_err().0.contains("'--debug'"));
        assert!(!parse(["--d".into()]).unwrap_err().0.contains("diff"));
        assert!(parse_str("--inline").inline_file_names);
    }
}
