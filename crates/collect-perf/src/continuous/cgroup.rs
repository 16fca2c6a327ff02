//! What a process's cgroup says of it: the container it runs in, and its cgroup v2 id.

/// What the cgroup of a running process says of it: the container id in its path, and the
/// id of its cgroup v2 (under the cgroup2 mount `cgroup2`, when there is one).
pub(super) fn cgroup_of(
    pid: u32,
    cgroup2: Option<&std::path::Path>,
) -> (Option<String>, Option<u64>) {
    let Some(text) = crate::procfs::text(&format!("/proc/{pid}/cgroup"), 1 << 16) else {
        return (None, None);
    };
    (
        container_in(&text),
        cgroup2.and_then(|root| cgroup_id_in(&text, root)),
    )
}

/// The container id in the cgroup path of a process (`/proc/PID/cgroup`, `cgroup`): a run of 64
/// hex digits in its last component (`docker-<id>.scope`, `cri-containerd-<id>.scope`,
/// `libpod-<id>`, `/docker/<id>`), as the OpenTelemetry profiler finds it.
fn container_in(cgroup: &str) -> Option<String> {
    cgroup.lines().find_map(|line| {
        let path = line.splitn(3, ':').nth(2)?;
        let last = path.rsplit('/').next()?;
        let b = last.as_bytes();
        (0..b.len().saturating_sub(63))
            .find(|&i| b[i..i + 64].iter().all(u8::is_ascii_hexdigit))
            .map(|i| last[i..i + 64].to_owned())
    })
}

/// The id of the cgroup v2 named in a process's `/proc/PID/cgroup` text (its `0::PATH` line):
/// the inode number of PATH's directory under the cgroup2 mount `root`, which is the id the
/// kernel reports in `PERF_SAMPLE_CGROUP` and `PERF_RECORD_CGROUP` (a kernfs node's id is its
/// inode number on 64-bit kernels; perf reads the same number with `name_to_handle_at`).
fn cgroup_id_in(cgroup: &str, root: &std::path::Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let rel = path.strip_prefix('/')?;
    // The kernel writes a path of names; anything that could climb out of the mount is not one.
    if rel.split('/').any(|c| c == ".." || c == ".") {
        return None;
    }
    std::fs::symlink_metadata(root.join(rel))
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| m.ino())
}

/// Where the cgroup v2 file system is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified`
/// beside v1 hierarchies), from `/proc/self/mountinfo`.
pub(super) fn cgroup2_mount() -> Option<std::path::PathBuf> {
    let text = crate::procfs::text("/proc/self/mountinfo", crate::procfs::LARGE)?;
    cgroup2_in(&text)
}

fn cgroup2_in(mountinfo: &str) -> Option<std::path::PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        if fs.split(' ').next()? != "cgroup2" {
            return None;
        }
        let point = mount.split(' ').nth(4)?;
        // mountinfo escapes space, tab, newline and backslash as \ooo.
        let mut out = Vec::with_capacity(point.len());
        let b = point.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match point.get(i + 1..i + 4).map(|o| u8::from_str_radix(o, 8)) {
                Some(Ok(c)) if b[i] == b'\\' => {
                    out.push(c);
                    i += 4;
                }
                _ => {
                    out.push(b[i]);
                    i += 1;
                }
            }
        }
        use std::os::unix::ffi::OsStringExt as _;
        Some(std::path::PathBuf::from(std::ffi::OsString::from_vec(out)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids_are_found_in_the_usual_cgroup_paths() {
        let id = "4f1c2d3e".repeat(8);
        for path in [
            format!("0::/system.slice/docker-{id}.scope"),
            format!("0::/kubepods/burstable/pod1/cri-containerd-{id}.scope"),
            format!("12:cpu:/docker/{id}"),
        ] {
            assert_eq!(container_in(&path), Some(id.clone()), "{path}");
        }
        assert_eq!(
            container_in("0::/user.slice/user-0.slice/session-3.scope"),
            None
        );
    }

    #[test]
    fn the_cgroup_id_is_the_inode_of_the_cgroup2_directory() {
        let hybrid = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
                      40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n\
                      41 31 0:38 / /sys/fs/cgroup/un\\040ified rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_in(hybrid),
            Some(std::path::PathBuf::from("/sys/fs/cgroup/un ified"))
        );
        assert_eq!(
            cgroup2_in("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"),
            None
        );
        let Some(root) = cgroup2_mount() else {
            panic!("no cgroup2 mount in /proc/self/mountinfo");
        };
        use std::os::unix::fs::MetadataExt as _;
        let own = std::fs::read_to_string("/proc/self/cgroup").expect("own cgroup");
        let path = own
            .lines()
            .find_map(|l| l.strip_prefix("0::/"))
            .expect("a v2 line");
        let dir = std::fs::metadata(root.join(path)).expect("own cgroup directory");
        assert_eq!(cgroup_id_in(&own, &root), Some(dir.ino()));
        // The root cgroup's id is 1.
        assert_eq!(cgroup_id_in("0::/\n", &root), Some(1));
        assert_eq!(cgroup_id_in("0::/../etc\n", &root), None);
        assert_eq!(cgroup_id_in("4:memory:/x\n", &root), None);
    }
}
