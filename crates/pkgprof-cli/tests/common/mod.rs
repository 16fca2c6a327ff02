//! What the end-to-end tests of pkgmon share: the collector's C workloads, built once, and a
//! lock that runs the tests one at a time.

#![allow(dead_code, reason = "each test binary uses a part")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

pub const PKGMON: &str = env!("CARGO_BIN_EXE_pkgmon");

pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("pkgmon-tests-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

/// A collector workload, compiled on first use.
pub fn workload(name: &str) -> PathBuf {
    let out = scratch().join(name);
    if !out.exists() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../collect-perf/tests/workloads/{name}.c"));
        let tmp = scratch().join(format!("{name}.tmp"));
        let st = Command::new("cc")
            .args(["-O2", "-fno-omit-frame-pointer", "-pthread", "-o"])
            .arg(&tmp)
            .arg(&src)
            .status()
            .unwrap();
        assert!(st.success(), "cc failed for {}", src.display());
        std::fs::rename(&tmp, &out).unwrap();
    }
    out
}

/// Tests run one at a time: the machine has two CPUs and the workloads count CPU time.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
