//! A window directory's files: its instances file, its size, its removal, its mode.

use gmon_format::continuous::{INSTANCES_NAME, IndexWindow};
use safe_fs::Dir;

use crate::error::{Error, Result};

/// The mode of a window directory whose files have mode `mode`: private, readable where the
/// files are.
pub(super) fn dir_mode(mode: u32) -> u32 {
    0o700 | (mode & 0o044) | ((mode & 0o044) >> 2)
}

/// Writes the instances file of `window` into its directory `sub_name` of `dir`.
pub(super) fn write_instances(
    dir: &Dir,
    sub_name: &str,
    window: &IndexWindow,
    mode: u32,
) -> Result<()> {
    let out = |e: safe_fs::Error| Error::Output(gmon_format::Error::from(e));
    let sub = dir.open_subdir(sub_name).map_err(out)?;
    let mut f = sub.create(mode).map_err(out)?;
    std::io::Write::write_all(&mut f, window.instances_text().as_bytes())
        .map_err(|e| Error::io(format!("cannot write {INSTANCES_NAME}"), e))?;
    f.persist_replacing(INSTANCES_NAME).map_err(out)?;
    sub.sync().map_err(out)
}

/// The bytes of the files of window directory `name`.
pub(super) fn window_bytes(dir: &Dir, name: &str) -> u64 {
    let Ok(sub) = dir.open_subdir(name) else {
        return 0;
    };
    sub.entries()
        .unwrap_or_default()
        .iter()
        .filter_map(|n| sub.kind_of(n).ok().flatten())
        .map(|(_, st)| st.st_size as u64)
        .sum()
}

/// Removes the window directory `name` and its files (never following a link).
pub(super) fn remove_window(dir: &Dir, name: &str) -> safe_fs::Result<()> {
    let sub = match dir.open_subdir(name) {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    for n in sub.entries()? {
        sub.remove(&n, false)?;
    }
    dir.remove(name, true)
}
