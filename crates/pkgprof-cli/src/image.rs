//! What the profiled image says about gmon files: address width and byte order.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use gmon_format::{AddressSize, Endian};

/// Reads the ELF identification of `path`: its class gives the address width of gmon fields and
/// its data encoding their byte order, as gprof takes them.
pub fn elf_layout(path: &Path) -> Result<(AddressSize, Endian)> {
    let mut ident = [0u8; 16];
    // Only the first 16 bytes are read, but never from a FIFO or device (opening one could
    // block, reading it never end).
    let (mut file, _) = safe_fs::open(
        path,
        &safe_fs::ReadOptions::default().with_max_bytes(u64::MAX),
    )
    .map_err(|e| match e.into_kind() {
        safe_fs::ErrorKind::Io { source, .. } => {
            anyhow::Error::new(source).context(path.display().to_string())
        }
        kind => anyhow::Error::new(safe_fs::Error::new(path, kind)),
    })?;
    let n = read_up_to(&mut file, &mut ident).with_context(|| format!("{}", path.display()))?;
    if n < ident.len() || ident[..4] != *b"\x7fELF" {
        bail!("{}: not in executable format", path.display());
    }
    let size = match ident[4] {
        1 => AddressSize::U32,
        2 => AddressSize::U64,
        c => bail!(
            "{}: not in executable format (unknown ELF class {c})",
            path.display()
        ),
    };
    let endian = match ident[5] {
        1 => Endian::Little,
        2 => Endian::Big,
        d => bail!(
            "{}: not in executable format (unknown ELF data encoding {d})",
            path.display()
        ),
    };
    Ok((size, endian))
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
