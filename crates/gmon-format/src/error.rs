//! The one error type of this crate.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading, summing or writing profiles.
///
/// An error may carry the path of the file it concerns and the byte offset at which the problem
/// was found; both are part of its message, e.g.
/// `gmon.out: histogram record claims 4294967295 bins but 12 bytes remain (at offset 0x2c)`.
#[derive(Debug)]
pub struct Error {
    path: Option<PathBuf>,
    offset: Option<u64>,
    kind: ErrorKind,
}

/// What went wrong, without the file name and offset.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Fewer bytes than any gmon header needs.
    FileTooShort {
        /// Bytes in the file.
        len: u64,
    },
    /// `-O m` style GNU parsing of a file that does not start with `gmon`.
    BadMagic,
    /// `-O 4` style 4.4BSD parsing of a file whose header has no 4.4BSD version word.
    NotBsd44 {
        /// The word found where the version should be.
        found: u32,
    },
    /// A GNU header whose version is neither 0 nor 1.
    UnsupportedVersion(u32),
    /// A BSD header that cannot be one (sample count smaller than the header, or low > high).
    NotGmon(&'static str),
    /// A record tag other than 0, 1 or 2.
    BadTag(u8),
    /// A record or header that the file ends in the middle of.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the file.
        remaining: u64,
    },
    /// A histogram whose bin count needs more bytes than the file has left.
    TooManyBins {
        /// Bins the header claims.
        claimed: u64,
        /// Bytes left after the header.
        remaining: u64,
    },
    /// A record kind this layout cannot hold, or that this reader does not support.
    Unsupported(String),
    /// Summing: the dimension (unit name) differs between histogram records.
    DimensionChanged {
        /// Unit of the first histogram record.
        old: String,
        /// Unit of the record being added.
        new: String,
    },
    /// Summing: the dimension abbreviation differs between histogram records.
    AbbrevChanged {
        /// Abbreviation of the first histogram record.
        old: char,
        /// Abbreviation of the record being added.
        new: char,
    },
    /// Summing: bytes per bin differ between histogram records.
    DifferentScales,
    /// Summing: a histogram range overlaps an earlier one without being identical.
    OverlappingHistograms,
    /// Summing: a BSD file whose histogram differs from the first one.
    IncompatibleWithFirst,
    /// Summing: a 4.4BSD file whose profiling rate differs from the first one.
    RateIncompatible,
    /// A name that is not a process-labeled profile file name.
    InvalidFileName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A malformed line in a measurement-info file.
    Info {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A measurement-info file from a newer major version than this reader knows.
    UnsupportedInfoVersion {
        /// Version the file declares.
        found: String,
        /// Highest major version this reader supports.
        supported: u32,
    },
    /// An I/O error, e.g. while reading a directory or writing output.
    Io(io::Error),
    /// A command name longer than a process-labeled file name can hold.
    CommTooLong {
        /// Bytes in the command name.
        len: usize,
        /// Most bytes allowed.
        max: usize,
    },
    /// Measurement info that cannot be written so that it reads back the same.
    InvalidInfo(String),
    /// A directory entry with a profile's name that is not a regular file.
    NotAFile,
    /// A malformed sampled-stacks file, or stacks that cannot be written as one.
    InvalidStacks(String),
    /// A malformed or incomplete measurement manifest.
    Manifest {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file that could not be read or created safely (its message names the path).
    File(safe_fs::Error),
    /// A malformed latency file, or one that cannot be written so that it reads back the
    /// same (line 0).
    Latency {
        /// 1-based line number (0 when writing).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A malformed `async.moves` file, or one that cannot be written so that it reads back
    /// the same (line 0).
    InvalidAsyncMoves {
        /// 1-based line number (0 when writing).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A malformed line in a kallsyms snapshot ([`crate::kallsyms`]).
    Kallsyms {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A malformed line in a continuous directory's index ([`crate::continuous`]).
    Index {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    /// Creates an error of `kind` found at byte `offset`.
    pub fn at(offset: u64, kind: ErrorKind) -> Self {
        Error {
            path: None,
            offset: Some(offset),
            kind,
        }
    }

    /// Creates an error of `kind` with no position.
    pub fn new(kind: ErrorKind) -> Self {
        Error {
            path: None,
            offset: None,
            kind,
        }
    }

    /// Attaches the path of the file the error concerns; it starts the message.
    #[must_use]
    pub fn with_path(mut self, path: impl AsRef<Path>) -> Self {
        self.path = Some(path.as_ref().to_path_buf());
        self
    }

    /// The file the error concerns, if known.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The byte offset in the file at which the problem was found, if any.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// What went wrong, by value (to keep a foreign error as another crate's source).
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }
}

impl From<safe_fs::Error> for Error {
    fn from(err: safe_fs::Error) -> Self {
        Error::new(ErrorKind::File(err))
    }
}

impl From<io::Error> for Error {
    fn from(err: io::Error) -> Self {
        Error::new(ErrorKind::Io(err))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}: ", path.display())?;
        }
        match &self.kind {
            ErrorKind::FileTooShort { len } => {
                write!(f, "file too short to be a gmon file ({len} bytes)")
            }
            ErrorKind::BadMagic => f.write_str("bad magic: the file does not start with `gmon`"),
            ErrorKind::NotBsd44 { found } => write!(
                f,
                "not a 4.4bsd file: the header's version word is {found:#010x}, not 0x00051879"
            ),
            ErrorKind::UnsupportedVersion(v) => {
                write!(
                    f,
                    "unsupported gmon version {v} (versions 0 and 1 are known)"
                )
            }
            ErrorKind::NotGmon(why) => write!(f, "does not appear to be in gmon.out format: {why}"),
            ErrorKind::BadTag(t) => write!(f, "found bad tag {t} (file corrupted?)"),
            ErrorKind::Truncated {
                what,
                needed,
                remaining,
            } => write!(
                f,
                "unexpected end of file in {what}: {needed} bytes needed but {remaining} remain"
            ),
            ErrorKind::TooManyBins { claimed, remaining } => write!(
                f,
                "histogram record claims {claimed} bins but {remaining} bytes remain"
            ),
            ErrorKind::Unsupported(what) => write!(f, "unsupported: {what}"),
            ErrorKind::DimensionChanged { old, new } => write!(
                f,
                "dimension unit changed between histogram records: from '{old}' to '{new}'"
            ),
            ErrorKind::AbbrevChanged { old, new } => write!(
                f,
                "dimension abbreviation changed between histogram records: from '{old}' to '{new}'"
            ),
            ErrorKind::DifferentScales => f.write_str("different scales in histogram records"),
            ErrorKind::OverlappingHistograms => f.write_str("overlapping histogram records"),
            ErrorKind::IncompatibleWithFirst => f.write_str("incompatible with first gmon file"),
            ErrorKind::RateIncompatible => {
                f.write_str("profiling rate incompatible with first gmon file")
            }
            ErrorKind::InvalidFileName { name, reason } => {
                write!(
                    f,
                    "`{name}` is not a process-labeled profile name: {reason}"
                )
            }
            ErrorKind::Info { line, message } => write!(f, "line {line}: {message}"),
            ErrorKind::UnsupportedInfoVersion { found, supported } => write!(
                f,
                "measurement-info version {found} is newer than this reader (major version {supported}); upgrade pkgprof"
            ),
            ErrorKind::Io(_) => f.write_str("i/o error"),
            ErrorKind::CommTooLong { len, max } => {
                write!(f, "command name of {len} bytes is longer than {max}")
            }
            ErrorKind::InvalidInfo(why) => write!(f, "cannot write measurement info: {why}"),
            ErrorKind::NotAFile => f.write_str("not a regular file"),
            ErrorKind::InvalidStacks(why) => write!(f, "invalid stacks file: {why}"),
            ErrorKind::Latency { line: 0, message } => write!(f, "invalid latency file: {message}"),
            ErrorKind::Latency { line, message } => {
                write!(f, "latency file line {line}: {message}")
            }
            ErrorKind::InvalidAsyncMoves { line: 0, message } => {
                write!(f, "invalid async.moves file: {message}")
            }
            ErrorKind::InvalidAsyncMoves { line, message } => {
                write!(f, "async.moves line {line}: {message}")
            }
            ErrorKind::Manifest { line, message } => write!(f, "line {line}: {message}"),
            ErrorKind::Kallsyms { line, message } => write!(f, "line {line}: {message}"),
            ErrorKind::Index { line, message } => write!(f, "index line {line}: {message}"),
            ErrorKind::File(e) => write!(f, "{e}"),
        }?;
        if let Some(offset) = self.offset {
            write!(f, " (at offset {offset:#x})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(err) => Some(err),
            ErrorKind::File(err) => std::error::Error::source(err),
            _ => None,
        }
    }
}
