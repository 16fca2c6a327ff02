//! Where the kernel's symbols of a perf.data file come from. perf.data holds the kernel's
//! build-id and release, not its symbols: perf keeps a kallsyms copy per build-id in its
//! cache (`~/.debug/[kernel.kallsyms]/<build-id>/kallsyms`), and the running kernel's
//! `/proc/kallsyms` is right when the file was recorded on it.

use std::path::{Path, PathBuf};

use collect_perf::KernelSymbols;
use safe_fs::ReadOptions;

use crate::error::{Error, Result};

/// Largest kallsyms file read (today's kernels: about 15 MB).
const KALLSYMS_MAX_BYTES: u64 = 256 << 20;

/// Where the kernel symbols of an import came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelSymbolsSource {
    /// The file given by the user.
    File(PathBuf),
    /// perf's build-id cache, for the kernel build-id the perf.data file records.
    BuildIdCache(PathBuf),
    /// `/proc/kallsyms` of the running kernel, whose release is the file's.
    Live,
    /// None found: kernel frames stay unnamed addresses.
    None,
}

impl KernelSymbolsSource {
    /// A sentence for the user, for the sources that deserve one.
    pub fn note(&self) -> Option<String> {
        match self {
            KernelSymbolsSource::None => Some(
                "no kernel symbols for this perf.data (not in perf's build-id cache, and \
                 recorded on another kernel than the running one): give them with --kallsyms \
                 FILE (a copy of that kernel's /proc/kallsyms)"
                    .into(),
            ),
            KernelSymbolsSource::Live => Some(
                "kernel symbols from this machine's /proc/kallsyms (the perf.data file records \
                 the same kernel release but no build-id cached by perf)"
                    .into(),
            ),
            _ => None,
        }
    }
}

/// Reads a kallsyms text file.
///
/// Returns an error naming the file if it cannot be read.
pub(crate) fn read(path: &Path) -> Result<KernelSymbols> {
    let text = safe_fs::read_text(
        path,
        &ReadOptions::default().with_max_bytes(KALLSYMS_MAX_BYTES),
    )
    .map_err(|source| Error::Kallsyms {
        path: path.to_owned(),
        source,
    })?;
    Ok(KernelSymbols::parse(text))
}

/// The kernel symbols for a file recording kernel `build_id` and `release`: `given`, else
/// perf's cache entry for the build-id, else the running kernel's if its release is the same.
pub(crate) fn find(
    given: Option<&Path>,
    build_id: Option<&[u8]>,
    release: Option<&str>,
) -> Result<(KernelSymbols, KernelSymbolsSource)> {
    if let Some(path) = given {
        return Ok((read(path)?, KernelSymbolsSource::File(path.to_owned())));
    }
    if let Some(cached) = build_id.and_then(|id| {
        gmon_format::perf_cache::object_path(
            &gmon_format::perf_cache::default_dir()?,
            Path::new("[kernel.kallsyms]"),
            id,
        )
    }) && let Ok(k) = read(&cached)
        && !k.is_empty()
    {
        return Ok((k, KernelSymbolsSource::BuildIdCache(cached)));
    }
    let running = safe_fs::read_text("/proc/sys/kernel/osrelease", &ReadOptions::procfs(4096)).ok();
    if let (Some(file), Some(running)) = (release, running)
        && file.trim() == running.trim()
    {
        let k = KernelSymbols::live();
        if !k.is_empty() {
            return Ok((k, KernelSymbolsSource::Live));
        }
    }
    Ok((KernelSymbols::default(), KernelSymbolsSource::None))
}
