//! Where perf's build-id cache (`~/.debug`, filled by `perf record` and `perf buildid-cache`)
//! keeps a copy of an object: the one rule both the collector (unwinding an imported
//! perf.data's stacks) and the report (naming its frames) use to find a file that has moved or
//! changed since it ran.
//!
//! perf keeps each object at `CACHE/<recorded path>/<build-id in hex>/elf` (the vDSO as
//! `CACHE/[vdso]/<hex>/vdso`, the kernel's symbols as `CACHE/[kernel.kallsyms]/<hex>/kallsyms`),
//! with a link to that directory under `CACHE/.build-id/xx/`. The path is computed here from
//! the recorded path, so no link is followed; a reader still checks the build-id of what it
//! reads.

use std::path::{Component, Path, PathBuf};

/// perf's cache directory of the user running this: `$HOME/.debug`, or None without `HOME`.
pub fn default_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".debug"))
}

/// Where `cache` keeps the object mapped from `recorded` with `build_id`, or None when the
/// recorded path cannot name a cache entry (relative, or with `..`, which would point out of
/// the cache) or the build-id is empty.
pub fn object_path(cache: &Path, recorded: &Path, build_id: &[u8]) -> Option<PathBuf> {
    if build_id.is_empty() {
        return None;
    }
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let name = recorded.as_os_str().as_encoded_bytes();
    let (dir, file) = match name {
        b"[vdso]" => (PathBuf::from("[vdso]"), "vdso"),
        b"[kernel.kallsyms]" => (PathBuf::from("[kernel.kallsyms]"), "kallsyms"),
        _ => {
            let mut parts = recorded.components();
            if parts.next() != Some(Component::RootDir) {
                return None;
            }
            let rest: PathBuf = parts
                .map(|c| match c {
                    Component::Normal(p) => Some(p),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            (rest, "elf")
        }
    };
    Some(cache.join(dir).join(hex).join(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_the_vdso_and_kallsyms_are_where_perf_keeps_them() {
        let cache = Path::new("/home/u/.debug");
        let id = [0x0f, 0x73, 0x39];
        assert_eq!(
            object_path(cache, Path::new("/usr/bin/sqlite3"), &id).unwrap(),
            Path::new("/home/u/.debug/usr/bin/sqlite3/0f7339/elf")
        );
        assert_eq!(
            object_path(cache, Path::new("[vdso]"), &id).unwrap(),
            Path::new("/home/u/.debug/[vdso]/0f7339/vdso")
        );
        assert_eq!(
            object_path(cache, Path::new("[kernel.kallsyms]"), &id).unwrap(),
            Path::new("/home/u/.debug/[kernel.kallsyms]/0f7339/kallsyms")
        );
        // Nothing that could point out of the cache, and no entry without a build-id.
        for bad in ["/usr/../../etc/shadow", "bin/ls", "[heap]"] {
            assert_eq!(object_path(cache, Path::new(bad), &id), None, "{bad}");
        }
        assert_eq!(object_path(cache, Path::new("/bin/ls"), &[]), None);
    }
}
