//! The one error type of this crate.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A refused or failed file operation, with the path it concerns.
///
/// Its message is the path, then what is wrong:
/// `/tmp/x/fifo: is a FIFO (named pipe), not a regular file`, or what failed and the system's
/// error: `cannot open /tmp/x: No such file or directory (os error 2)`; it has no
/// [`source`](std::error::Error::source): see its `Error` implementation.
#[derive(Debug)]
pub struct Error {
    path: PathBuf,
    kind: ErrorKind,
}

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A system call failed.
    Io {
        /// What was being done, e.g. `cannot open`.
        action: &'static str,
        /// The error the system gave.
        source: io::Error,
    },
    /// The path names something other than a regular file (or, for [`crate::Dir`], other
    /// than a directory).
    NotRegular(FileKind),
    /// The last component (or, where symbolic links are refused, any component) of the path is
    /// a symbolic link.
    Symlink,
    /// A symbolic link in a path, owned by a user who is neither root nor the effective user
    /// ([`crate::Dir::open_owned_links`]): another user could point it anywhere.
    ForeignSymlink {
        /// The link, as the path was written up to it.
        link: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// A `/proc` or `/sys` file, whose size is unknown until read, where the caller did not
    /// allow them ([`crate::ReadOptions::proc_text`]).
    PseudoFile,
    /// The file is larger than the caller's limit.
    TooLarge {
        /// Its size, or the bytes read before giving up.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file is sparse, with more bytes of holes (ranges not stored on disk, read as zeros)
    /// than the caller allows ([`crate::ReadOptions::max_holes`]).
    Sparse {
        /// Its size.
        size: u64,
        /// The bytes stored on disk (`st_blocks` × 512).
        stored: u64,
        /// The limit on holes.
        limit: u64,
    },
    /// The file's bytes are not UTF-8 ([`crate::read_text`]).
    NotUtf8 {
        /// Offset of the first bad byte.
        offset: u64,
    },
    /// Something already exists at a name that a new file was to get.
    Exists,
    /// A directory just created was replaced by another user's before it was opened.
    Replaced,
    /// A name that is not a single path component, or a relative path that leaves its
    /// directory (`..`).
    InvalidName(&'static str),
}

/// What a path turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A FIFO (named pipe).
    Fifo,
    /// A character device, such as `/dev/zero`.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A Unix-domain socket.
    Socket,
    /// A symbolic link.
    Symlink,
    /// Anything else.
    Other,
}

impl FileKind {
    /// The kind of a `st_mode`.
    pub fn from_mode(mode: u32) -> FileKind {
        match mode & libc::S_IFMT {
            libc::S_IFREG => FileKind::Regular,
            libc::S_IFDIR => FileKind::Directory,
            libc::S_IFIFO => FileKind::Fifo,
            libc::S_IFCHR => FileKind::CharDevice,
            libc::S_IFBLK => FileKind::BlockDevice,
            libc::S_IFSOCK => FileKind::Socket,
            libc::S_IFLNK => FileKind::Symlink,
            _ => FileKind::Other,
        }
    }

    /// Its name in a message, with an article: `a FIFO (named pipe)`.
    pub fn description(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Symlink => "a symbolic link",
            FileKind::Other => "not a file",
        }
    }
}

impl Error {
    /// An error of `kind` about `path` (to rebuild one taken apart with [`Error::into_kind`]).
    pub fn new(path: impl Into<PathBuf>, kind: ErrorKind) -> Error {
        Error {
            path: path.into(),
            kind,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, action: &'static str, source: io::Error) -> Error {
        let kind = match source.raw_os_error() {
            Some(libc::ELOOP) => ErrorKind::Symlink,
            Some(libc::EEXIST) => ErrorKind::Exists,
            _ => ErrorKind::Io { action, source },
        };
        Error::new(path, kind)
    }

    /// The path concerned.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// What went wrong, by value (to keep the system's error as a source elsewhere).
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }

    /// The system's error, if a system call failed.
    pub fn io_error(&self) -> Option<&io::Error> {
        match &self.kind {
            ErrorKind::Io { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Whether nothing exists at the path (`ENOENT`).
    pub fn is_not_found(&self) -> bool {
        self.io_error()
            .is_some_and(|e| e.kind() == io::ErrorKind::NotFound)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.kind {
            ErrorKind::Io { action, source } => write!(f, "{action} {path}: {source}"),
            ErrorKind::NotRegular(kind) => {
                write!(f, "{path}: is {}, not a regular file", kind.description())
            }
            ErrorKind::Symlink => write!(
                f,
                "{path}: is a symbolic link (or has one in its path), which is not followed here"
            ),
            ErrorKind::ForeignSymlink { link, owner } => {
                if link != &self.path {
                    write!(f, "{path}: {}", link.display())?;
                } else {
                    write!(f, "{path}:")?;
                }
                write!(
                    f,
                    " is a symbolic link of user {owner}, who could point it anywhere; not \
                     followed here (give the path it points to, if you trust it)"
                )
            }
            ErrorKind::PseudoFile => write!(
                f,
                "{path}: is a /proc or /sys file, whose size is unknown, not a regular file"
            ),
            ErrorKind::TooLarge { size, limit } => write!(
                f,
                "{path}: {size} bytes is more than the limit of {limit} bytes for this file"
            ),
            ErrorKind::Sparse {
                size,
                stored,
                limit,
            } => write!(
                f,
                "{path}: is a sparse file of {size} bytes, {stored} of them stored on disk: \
                 more than the limit of {limit} bytes of holes for this file (a hole costs \
                 its maker nothing and a reader as much as data; a copy made with \
                 `cp --sparse=never` has none)"
            ),
            ErrorKind::NotUtf8 { offset } => {
                write!(f, "{path}: not UTF-8 text (at offset {offset:#x})")
            }
            ErrorKind::Exists => write!(f, "{path}: already exists"),
            ErrorKind::Replaced => write!(
                f,
                "{path}: was replaced by another user's directory as it was created; create \
                 it where no other user can write"
            ),
            ErrorKind::InvalidName(why) => write!(f, "{path}: {why}"),
        }
    }
}

/// The message is whole (the system's error is in it), so it has no source: a chain printed
/// with `{:#}` would say the system's error twice (`cannot open /x: No such file or directory
/// (os error 2): No such file or directory (os error 2)`), and a message kept as text (a
/// manifest's list of problems, a warning) must say it once. The system's error itself is
/// [`Error::io_error`].
impl std::error::Error for Error {}
