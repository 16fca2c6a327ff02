//! Writes `src/pprof/proto.rs`, the prost code of pprof's `profile.proto`.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let proto = crate_dir.join("proto");
    let descriptors = protox::compile([proto.join("profile.proto")], [&proto])?;
    let out = tempdir(&crate_dir)?;
    prost_build::Config::new()
        .out_dir(&out)
        .compile_fds(descriptors)?;
    std::fs::rename(
        out.join("perftools.profiles.rs"),
        crate_dir.join("src/pprof/proto.rs"),
    )?;
    std::fs::remove_dir(&out)?;
    Ok(())
}

/// A fresh directory for prost-build's output, beside the crate's target directory.
fn tempdir(crate_dir: &Path) -> std::io::Result<std::path::PathBuf> {
    let dir = crate_dir.join("proto/gen/target/out");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
