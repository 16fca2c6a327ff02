//! Listing a measurement directory: which profiles it holds, grouped by process.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::manifest::{Verification, verify_dir};
use super::name::{Comm, FileKind, NAME_PREFIX, ProfileName};
use crate::error::{Error, ErrorKind, Result};

/// The process-labeled files of one measurement directory.
#[derive(Debug)]
#[non_exhaustive]
pub struct Measurement {
    /// The directory, as given to [`scan`].
    pub dir: PathBuf,
    /// One entry per file set, ordered by pid, then instance, then comm.
    pub processes: Vec<ProcessFiles>,
    /// `gmon.out.-k.kernel`: kernel work done for no process.
    pub kernel_system: Option<PathBuf>,
    /// `gmon.out.-k.other`: kernel work done for processes not profiled.
    pub kernel_other: Option<PathBuf>,
    /// Entries whose names start with `gmon.out.` but that are not profiles, ordered by name.
    pub skipped: Vec<Skipped>,
}

impl Measurement {
    /// Checks the directory against its manifest, reading every file it lists (see
    /// [`crate::manifest`]): [`Verification::Complete`], [`Verification::Unchecked`] for a
    /// directory without a manifest (written before manifests existed), or what is wrong.
    ///
    /// Returns an error only if the directory cannot be opened or listed.
    pub fn verify(&self) -> Result<Verification> {
        let dir = safe_fs::Dir::open_following(&self.dir)?;
        let names: Vec<String> = dir
            .entries()?
            .into_iter()
            .filter_map(|n| n.into_string().ok())
            .collect();
        verify_dir(&dir, &names)
    }

    /// The files of the first process with pid `pid` (instance 0); more than one entry if it
    /// exec'd, one per command name.
    pub fn process(&self, pid: u32) -> impl Iterator<Item = &ProcessFiles> {
        self.instance(pid, 0)
    }

    /// The files of instance `instance` of pid `pid` (see
    /// [`ProfileName`](crate::ProfileName#reused-pids-the-instance-number)); more than one entry
    /// if it exec'd.
    pub fn instance(&self, pid: u32, instance: u32) -> impl Iterator<Item = &ProcessFiles> {
        self.processes
            .iter()
            .filter(move |p| p.pid == pid && p.instance == instance)
    }
}

/// The files of one process image (one pid, instance and comm).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessFiles {
    /// Process id.
    pub pid: u32,
    /// Which process with this pid: 0 for the first, `n` for the `n`-th reuse.
    pub instance: u32,
    /// Command name, as in the file names.
    pub comm: Comm,
    /// `gmon.out.<pid>u.<comm>`: the user-level profile.
    pub user: Option<PathBuf>,
    /// `gmon.out.<pid>k.<comm>`: the profile of the kernel working for the process.
    pub kernel: Option<PathBuf>,
    /// `gmon.out.<pid>.<comm>`: the measurement-info file.
    pub info: Option<PathBuf>,
    /// `gmon.out.<pid>s.<comm>`: the sampled-stacks file.
    pub stacks: Option<PathBuf>,
    /// `gmon.out.<pid>l.<comm>`: the latency file (`pkgmon --latency`, `--blocking`).
    pub latency: Option<PathBuf>,
}

/// A directory entry named like a profile that is not one, and why.
#[derive(Debug)]
pub struct Skipped {
    /// Its path.
    pub path: PathBuf,
    /// Why it was skipped: [`ErrorKind::InvalidFileName`] for a name that does not parse,
    /// [`ErrorKind::NotAFile`] for a directory or other non-file, [`ErrorKind::Io`] if its
    /// metadata cannot be read (a dangling symbolic link).
    pub error: Error,
}

/// Lists the profiles of a measurement directory, grouped by process.
///
/// Every entry whose name starts with `gmon.out.` is looked at: a regular file (or a link to
/// one) whose name parses as a [`ProfileName`] is listed, anything else is put in
/// [`Measurement::skipped`] with the reason. Other entries, `gmon.out` included, are ignored. Files
/// are grouped by pid, instance and comm: a pid whose files name two comms gives two entries. The
/// contents of the files are not read.
///
/// Returns an error if the directory cannot be read.
pub fn scan(dir: impl AsRef<Path>) -> Result<Measurement> {
    let dir = dir.as_ref();
    let io_error = |e| Error::from(e).with_path(dir);
    let mut processes = BTreeMap::new();
    let mut measurement = Measurement {
        dir: dir.to_path_buf(),
        processes: Vec::new(),
        kernel_system: None,
        kernel_other: None,
        skipped: Vec::new(),
    };
    for entry in fs::read_dir(dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        let file_name = entry.file_name();
        let bytes = file_name.as_encoded_bytes();
        if !bytes.starts_with(NAME_PREFIX.as_bytes()) {
            continue;
        }
        let path = entry.path();
        let name = match std::str::from_utf8(bytes) {
            Ok(text) => ProfileName::parse(text),
            // Every valid name is ASCII, so one that is not UTF-8 cannot be valid.
            Err(e) => Err(Error::at(
                e.valid_up_to() as u64,
                ErrorKind::InvalidFileName {
                    name: file_name.to_string_lossy().into_owned(),
                    reason: "not valid UTF-8: bytes of the command name above 0x7f are \
                             written %XX"
                        .to_owned(),
                },
            )),
        };
        let checked = name.and_then(|name| match fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(name),
            Ok(_) => Err(Error::new(ErrorKind::NotAFile)),
            Err(e) => Err(Error::from(e)),
        });
        match checked {
            Ok(ProfileName::KernelSystem) => measurement.kernel_system = Some(path),
            Ok(ProfileName::KernelOther) => measurement.kernel_other = Some(path),
            Ok(ProfileName::Process {
                pid,
                instance,
                kind,
                comm,
            }) => {
                let files = processes
                    .entry((pid, instance, comm.clone()))
                    .or_insert_with(|| ProcessFiles {
                        pid,
                        instance,
                        comm,
                        user: None,
                        kernel: None,
                        info: None,
                        stacks: None,
                        latency: None,
                    });
                let slot = match kind {
                    FileKind::User => &mut files.user,
                    FileKind::Kernel => &mut files.kernel,
                    FileKind::Info => &mut files.info,
                    FileKind::Stacks => &mut files.stacks,
                    FileKind::Latency => &mut files.latency,
                };
                *slot = Some(path);
            }
            Err(error) => measurement.skipped.push(Skipped { path, error }),
        }
    }
    measurement.processes = processes.into_values().collect();
    measurement.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(measurement)
}
