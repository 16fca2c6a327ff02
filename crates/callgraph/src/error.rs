//! The one error type of this crate.

use std::io;
use std::path::{Path, PathBuf};

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while building the analysis.
///
/// Messages are lower case without a trailing period; those about the image name its path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The image could not be read from disk.
    #[error("{path}: cannot read the image")]
    ReadImage {
        /// Path of the image.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: io::Error,
    },
    /// The image is not an ELF file this crate understands, or its headers are damaged.
    #[error("{path}: not in executable format")]
    NotExecutable {
        /// Path of the image.
        path: PathBuf,
        /// What the ELF reader objected to; none when the file is not ELF at all.
        #[source]
        source: Option<object::Error>,
    },
    /// The image's ELF identification names a class (address width) or data encoding (byte
    /// order) that ELF does not define.
    #[error("{path}: not in executable format (unknown ELF {field} {value})")]
    UnknownElfIdent {
        /// Path of the image.
        path: PathBuf,
        /// `class` or `data encoding`.
        field: &'static str,
        /// The byte found.
        value: u8,
    },
    /// In line mode gprof reads a basic-block record's count in the byte order of the machine
    /// (little-endian), not the file's: a big-endian count it would read as another number.
    #[error(
        "{path}: gprof cannot read this big-endian basic-block record in line mode: it takes \
         the count {count} as {read_as} (at offset {offset:#x})"
    )]
    ForeignBasicBlocks {
        /// Path of the profile.
        path: PathBuf,
        /// The record's count of pairs.
        count: u32,
        /// The count as gprof reads it.
        read_as: u32,
        /// Offset of the record in the file.
        offset: u64,
    },
    /// The image has no `.text` section, which gprof needs to bound the last symbol.
    #[error("can't find .text section in {path}")]
    NoTextSection {
        /// Path of the image.
        path: PathBuf,
    },
    /// The image has no static symbol table (`.symtab`), as after `strip`.
    #[error(
        "file `{path}' has no symbols: it was stripped (by `strip`, `install -s` or `gcc -s`); \
         report with the unstripped build, or rebuild it without stripping"
    )]
    NoSymbols {
        /// Path of the image.
        path: PathBuf,
    },
    /// The image's DWARF debugging information is damaged.
    #[error("{path}: cannot read the debugging information")]
    Dwarf {
        /// Path of the image.
        path: PathBuf,
        /// What gimli objected to.
        #[source]
        source: gimli::Error,
    },
    /// The flat profile was asked for but no histogram record was read.
    #[error("gmon.out file is missing histogram")]
    MissingHistogram,
    /// The call graph was asked for but no arc was read.
    #[error("gmon.out file is missing call-graph data")]
    MissingCallGraph,
    /// A file other than the image could not be read.
    #[error("{path}: cannot read")]
    ReadFile {
        /// Path of the file.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: io::Error,
    },
    /// A line of a kallsyms snapshot is malformed.
    #[error("{path}: line {line}: {message}")]
    Kallsyms {
        /// Path of the snapshot.
        path: PathBuf,
        /// Line number, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A gmon or measurement-info file of a measurement cannot be used.
    #[error(transparent)]
    Measurement(#[from] gmon_format::Error),
    /// A process asked for has no files in the measurement directory.
    #[error("no profile of process {label} in {dir}")]
    NoSuchProcess {
        /// The process asked for: its pid, with `_<instance>` for a later process that reused
        /// the pid.
        label: String,
        /// The measurement directory.
        dir: PathBuf,
    },
    /// A latency report was asked for but no selected process has a latency file.
    #[error(
        "no latency file (gmon.out.<pid>l.<comm>) for the processes asked for in {dir}: record \
         with `pkgmon --latency` or `--blocking`"
    )]
    NoLatency {
        /// The measurement directory.
        dir: PathBuf,
    },
    /// A blocking report was asked for but the latency files have no blocking data.
    #[error("the latency files in {dir} have no blocking data: record with `pkgmon --blocking`")]
    NoBlocking {
        /// The measurement directory.
        dir: PathBuf,
    },
    /// A plot was asked for a system call no selected process made.
    #[error(
        "no selected process in {dir} made the system call `{syscall}' (pkgprof --latency lists those made)"
    )]
    NoSuchSyscall {
        /// The name asked for.
        syscall: String,
        /// The measurement directory.
        dir: PathBuf,
    },
    /// Two latency files to compare or merge have different resolutions.
    #[error(
        "the latency files in {dir} have another resolution than the rest: record both with the \
         same `pkgmon --resolution`"
    )]
    ResolutionsDiffer {
        /// The measurement directory.
        dir: PathBuf,
    },
    /// Exact inclusive times were asked for but a process has no sampled-stacks file.
    #[error("process {label} has no sampled-stacks file (gmon.out.{label}s.<comm>) in {dir}")]
    NoStacks {
        /// The process's label (pid, and instance number if above 0).
        label: String,
        /// The measurement directory.
        dir: PathBuf,
    },
    /// A file was refused without being read: a FIFO, device, directory or `/proc` file where
    /// a regular file belongs, a file over its size limit, or a path that leaves its directory.
    #[error(transparent)]
    Refused(safe_fs::Error),
    /// The measurement directory holds nothing to report.
    #[error("{dir}: no process-labeled profiles")]
    EmptyMeasurement {
        /// The measurement directory.
        dir: PathBuf,
    },
    /// The view as recorded was asked for, but the measurement's `async.moves` does not say
    /// which stacks moved.
    #[error(
        "{dir}/async.moves does not list the moved stacks (it was written by an older pkgmon), \
         so the view as recorded cannot be rebuilt: leave out --async=victim, or record again"
    )]
    NoMovedStacks {
        /// The measurement directory.
        dir: PathBuf,
    },
    /// The view as recorded was asked for, but `async.moves` moved stacks of a kind this
    /// reader does not know.
    #[error(
        "{dir}/async.moves moved stacks of a kind this pkgprof does not know (`{kind}`): use a newer pkgprof"
    )]
    UnknownAsyncKind {
        /// The measurement directory.
        dir: PathBuf,
        /// The kind's name.
        kind: String,
    },
}

impl Error {
    /// The image at `path` is not ELF this crate reads: `source` says why.
    pub(crate) fn not_executable(path: &Path, source: object::Error) -> Error {
        Error::NotExecutable {
            path: path.to_owned(),
            source: Some(source),
        }
    }
}
