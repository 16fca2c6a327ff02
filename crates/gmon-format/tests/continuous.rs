//! The continuous index's fixtures (`fixtures/continuous/`): an index of version 1 as pkgmon
//! wrote it (the instances in the index), and the same windows in version 2 (the index and
//! each window's `instances` file). Version 1 reads to the same windows as version 2, and a
//! version 2 directory read and written again gives its own bytes. `PKGPROF_BLESS=1` writes
//! `v2/` from `v1/index`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use gmon_format::continuous::{ContinuousIndex, INDEX_NAME, INSTANCES_NAME};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/continuous")
}

/// The files of a version 2 directory for `index`: the index and each window's instances.
fn files(index: &ContinuousIndex) -> Vec<(PathBuf, Vec<u8>)> {
    let mut text = Vec::new();
    index.write(&mut text).unwrap();
    let mut out = vec![(PathBuf::from(INDEX_NAME), text)];
    for w in &index.windows {
        out.push((
            Path::new(&w.dir).join(INSTANCES_NAME),
            w.instances_text().into_bytes(),
        ));
    }
    out
}

#[test]
fn version_1_reads_as_version_2_and_version_2_round_trips() {
    let v1 = std::fs::read(fixtures().join("v1").join(INDEX_NAME)).unwrap();
    let old = ContinuousIndex::parse(&v1).unwrap();
    assert_eq!(old.version, 1);
    assert!(old.windows.iter().all(|w| !w.instances.is_empty()));
    let v2 = fixtures().join("v2");
    if std::env::var_os("PKGPROF_BLESS").is_some_and(|v| v == "1") {
        for (name, bytes) in files(&old) {
            let path = v2.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }
    let text = std::fs::read(v2.join(INDEX_NAME)).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (PKGPROF_BLESS=1 cargo test -p gmon-format --test continuous writes it)",
            v2.display()
        )
    });
    let mut new = ContinuousIndex::parse(&text).unwrap();
    assert_eq!(new.version, 2);
    assert!(new.windows.iter().all(|w| w.instances.is_empty()));
    for w in &mut new.windows {
        w.read_instances(&v2).unwrap();
    }
    assert_eq!(new.windows, old.windows);
    for (name, bytes) in files(&new) {
        let on_disk = std::fs::read(v2.join(&name)).unwrap();
        assert!(
            on_disk == bytes,
            "{} differs from what its reading writes",
            name.display()
        );
    }
    // A window whose instances file is gone or belongs to another window is named.
    let mut w = new.windows[0].clone();
    w.instances.clear();
    w.dir = new.windows[1].dir.clone();
    let e = w.read_instances(&v2).unwrap_err().to_string();
    assert!(
        e.contains("w00000002/instances") && e.contains("of window 2, not of window 1"),
        "{e}"
    );
    w.dir = "w00000009".into();
    let e = w.read_instances(&v2).unwrap_err().to_string();
    assert!(e.contains("w00000009/instances"), "{e}");
}
