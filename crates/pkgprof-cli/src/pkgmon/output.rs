//! Choosing and opening pkgmon's output directory, as its help's "Output directory" says: the
//! rule for an existing measurement (kept as `DIR.old`), and the refusals that keep a root
//! pkgmon from writing where another user could redirect it.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::{Context, Result, bail};
use gmon_format::{MANIFEST_NAME, is_measurement_file};
use safe_fs::{Dir, FileKind, TEMP_PREFIX};

/// Whether `name` is something a pkgmon run leaves in its directory: a measurement file, the
/// manifest, or a temporary file of a killed run (ours, or the `.NAME.tmp` files of pkgmon
/// before manifests existed).
fn is_ours(name: &OsStr) -> bool {
    let Some(text) = name.to_str() else {
        return false;
    };
    text == MANIFEST_NAME || is_measurement_file(text) || is_temporary(text)
}

/// A temporary file of a killed run, removed without being read.
fn is_temporary(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
        || (name.ends_with(".tmp")
            && name
                .strip_prefix('.')
                .is_some_and(|rest| is_measurement_file(rest) || rest.starts_with("manifest.")))
}

/// What a directory holds, by the rule above.
struct Contents {
    /// Measurement files and the manifest.
    measurement: Vec<OsString>,
    /// Temporary files of killed runs.
    temporary: Vec<OsString>,
    /// Anything else.
    other: Vec<OsString>,
}

fn contents(dir: &Dir) -> Result<Contents> {
    let mut c = Contents {
        measurement: Vec::new(),
        temporary: Vec::new(),
        other: Vec::new(),
    };
    let mut names = dir.entries()?;
    names.sort();
    for name in names {
        if name.to_str().is_some_and(is_temporary) {
            c.temporary.push(name);
        } else if is_ours(&name) {
            c.measurement.push(name);
        } else {
            c.other.push(name);
        }
    }
    Ok(c)
}

/// Removes the temporary files of killed runs, without reading them.
fn remove_temporaries(dir: &Dir, c: &Contents) -> Result<()> {
    for name in &c.temporary {
        match dir.remove(name, false) {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

/// Refuses a directory that a root pkgmon should not write into on its own: another user's.
fn check_owner(dir: &Dir, trust: bool) -> Result<()> {
    let st = dir.stat()?;
    // Safety: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if st.st_uid != me && !trust {
        bail!(
            "{} belongs to user {}, not to you (uid {me}): another user could read or swap \
             what pkgmon writes there; use a directory of your own, or --trust-output",
            dir.path().display(),
            st.st_uid
        );
    }
    Ok(())
}

/// Opens the directory `path` the way pkgmon may reach its output: through any symbolic link
/// with `trust` (--trust-output), else only through links of root or of the user, since a
/// root pkgmon writing into a path that crosses a shared directory (`-o /tmp/x/out`) must not
/// let another user's link there choose where it writes.
pub(super) fn open_path(path: &Path, trust: bool) -> Result<Dir> {
    let dir = if trust {
        Dir::open_following(path)
    } else {
        Dir::open_owned_links(path)
    };
    Ok(dir?)
}

/// The directory holding `path`'s last component, opened by [`open_path`].
pub(super) fn open_parent(path: &Path, trust: bool) -> Result<Dir> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    open_path(parent, trust)
}

/// Opens (creating if needed) the output directory `path` for a new measurement, applying the
/// rule of pkgmon's help; `mode` is the mode of a directory it creates.
///
/// Returns an error, before anything is measured, if `path` is a symbolic link or another
/// user's directory (without `trust`), is not a directory, holds a measurement among other
/// files, or cannot be created.
pub fn prepare(path: &Path, mode: u32, trust: bool) -> Result<Dir> {
    let Some(name) = path.file_name() else {
        // `.`, `..` or `/`: written into as it is, since it cannot be renamed away.
        let dir = open_path(path, trust)?;
        check_owner(&dir, trust)?;
        let c = contents(&dir)?;
        if let Some(first) = c.measurement.first() {
            bail!(
                "{} holds an earlier measurement ({}); give pkgmon -o a new directory",
                path.display(),
                first.to_string_lossy()
            );
        }
        remove_temporaries(&dir, &c)?;
        return Ok(dir);
    };
    let parent =
        open_parent(path, trust).with_context(|| format!("cannot create {}", path.display()))?;
    let create = |parent: &Dir| {
        parent
            .create_subdir(name, mode)
            .with_context(|| format!("cannot create {}", path.display()))
    };
    match parent.kind_of(name)? {
        None => return create(&parent),
        Some((FileKind::Symlink, _)) if !trust => bail!(
            "{} is a symbolic link: pkgmon does not write through links, which another user \
             could point anywhere; give the real directory, or --trust-output",
            path.display()
        ),
        Some((FileKind::Symlink, _)) => {
            let dir = Dir::open_following(path)?;
            let c = contents(&dir)?;
            if let Some(first) = c.measurement.first() {
                bail!(
                    "{} holds an earlier measurement ({}), and is a link, which pkgmon does \
                     not rename; give -o a new directory",
                    path.display(),
                    first.to_string_lossy()
                );
            }
            remove_temporaries(&dir, &c)?;
            return Ok(dir);
        }
        Some((FileKind::Directory, _)) => {}
        Some((kind, _)) => bail!(
            "{} is {}, not a directory",
            path.display(),
            kind.description()
        ),
    }
    let dir = parent.open_subdir(name)?;
    check_owner(&dir, trust)?;
    let c = contents(&dir)?;
    if c.measurement.is_empty() {
        remove_temporaries(&dir, &c)?;
        return Ok(dir);
    }
    if let Some(first) = c.other.first() {
        bail!(
            "{} holds an earlier measurement ({}) among other files ({}): pkgmon neither \
             mixes measurements nor moves other files; give -o a new directory",
            path.display(),
            c.measurement[0].to_string_lossy(),
            first.to_string_lossy()
        );
    }
    // The killed run's temporary files go now, not into DIR.old.
    remove_temporaries(&dir, &c)?;
    let finished = finished(&dir);
    drop(dir);
    keep_as_old(&parent, name, path, finished)?;
    let dir = create(&parent)?;
    eprintln!(
        "pkgmon: kept the earlier measurement as {}.old",
        path.display()
    );
    Ok(dir)
}

/// Whether the measurement in `dir` was finished: its manifest is complete (its files are not
/// checked here; a report does that).
fn finished(dir: &Dir) -> bool {
    let opts = safe_fs::ReadOptions::default().with_max_bytes(64 << 20);
    dir.read(MANIFEST_NAME, &opts)
        .is_ok_and(|m| gmon_format::Manifest::parse(&m).is_ok())
}

/// Renames the measurement directory `name` to `name.old`, first removing an earlier
/// `name.old` that holds only a measurement, unless that one was finished and `name`'s was not
/// (`finished`): two killed runs in a row would otherwise leave nothing but the last one's
/// unfinished files.
fn keep_as_old(parent: &Dir, name: &OsStr, path: &Path, finished_new: bool) -> Result<()> {
    let mut old = name.to_os_string();
    old.push(".old");
    let shown = format!("{}.old", path.display());
    match parent.kind_of(&old)? {
        None => {}
        Some((FileKind::Directory, _)) => {
            let dir = parent.open_subdir(&old)?;
            let st = dir.stat()?;
            // Safety: geteuid has no preconditions.
            if st.st_uid != unsafe { libc::geteuid() } {
                bail!("{shown} belongs to another user; move it away to keep a new measurement");
            }
            let c = contents(&dir)?;
            if let Some(first) = c.other.first() {
                bail!(
                    "{shown} holds files pkgmon did not write ({}); move it away to keep \
                     the earlier measurement there",
                    first.to_string_lossy()
                );
            }
            if !finished_new && finished(&dir) {
                bail!(
                    "{} holds a measurement pkgmon did not finish (it was killed, or the disk \
                     filled) and {shown} a finished one, which keeping {} as {shown} would \
                     remove; remove {} (`pkgprof --force` reports what it holds) or move \
                     {shown} away",
                    path.display(),
                    path.display(),
                    path.display()
                );
            }
            for n in c.measurement.iter().chain(&c.temporary) {
                dir.remove(n, false)?;
            }
            parent.remove(&old, true)?;
        }
        Some((kind, _)) => bail!(
            "{shown} is {}; move it away to keep the earlier measurement there",
            kind.description()
        ),
    }
    let (Some(from), Some(to)) = (name.to_str(), old.to_str()) else {
        bail!(
            "{}: the name is not UTF-8; give -o another directory",
            String::from_utf8_lossy(name.as_bytes())
        );
    };
    parent
        .rename(from, to, false)
        .with_context(|| format!("cannot keep the earlier measurement as {shown}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_run_leaves_is_recognized() {
        for name in [
            "gmon.out.137u.cat",
            "gmon.out.-k.kernel",
            "kallsyms.0badc0de",
            "vdso.5d0a",
            "async.moves",
            "manifest.sha256",
            ".safe-fs-tmp.0123456789abcdef",
            ".kallsyms.0badc0de.tmp",
            ".gmon.out.137u.cat.tmp",
        ] {
            assert!(is_ours(OsStr::new(name)), "{name}");
        }
        for name in ["gmon.out", "notes.txt", ".bashrc", ".x.tmp", "kallsyms"] {
            assert!(!is_ours(OsStr::new(name)), "{name}");
        }
        assert!(is_temporary(".kallsyms.0badc0de.tmp"));
        assert!(!is_temporary("kallsyms.0badc0de"));
    }
}
