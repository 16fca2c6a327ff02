//! Reading pkgprof's inputs: every file goes through the bounded reader of `safe_fs` (special
//! files refused by name without blocking, sizes capped, large files mapped), with a limit that
//! fits what the file can hold. The limits are here, in one place.

use std::io::Read;
use std::path::Path;

use gmon_format::{AddressSize, Endian};
use safe_fs::{Contents, Map, ReadOptions};

use crate::error::Error;

/// Images, objects and their debug files: large programs' debug files reach a few GiB.
pub const IMAGE_MAX_BYTES: u64 = 16 << 30;

/// gmon and sampled-stacks files: mapped, so the limit only stops absurd files.
pub const PROFILE_MAX_BYTES: u64 = 16 << 30;

/// Measurement-info files and kernel-symbol snapshots (a few MiB in practice).
pub const TEXT_MAX_BYTES: u64 = 256 << 20;

/// Holes allowed in an object read at the path a measurement recorded ([`read_recorded`]): a
/// linker that writes its output through a mapping leaves the padding between segments as
/// holes, at most a few MiB; more is not the object's.
pub const RECORDED_MAX_HOLES: u64 = 16 << 20;

/// Reads the input file `path` of at most `limit` bytes. Large files are memory-mapped: pkgprof
/// runs with the rights of its user, so a file truncated under it costs only that run.
///
/// Returns the reader's error (naming `path`) if the file cannot be read, is not a regular
/// file, or is larger than `limit`.
pub fn read_input(path: &Path, limit: u64) -> Result<Contents, safe_fs::Error> {
    let opts = ReadOptions::default()
        .with_max_bytes(limit)
        .with_map(Map::Large);
    safe_fs::read(path, &opts)
}

/// Reads a file of a measurement directory (profiles, stacks, info and latency files, the
/// vDSO image), as [`read_input`] does, refusing a sparse file with more holes than
/// [`gmon_format::MEASUREMENT_MAX_HOLES`]: the collector writes none, and their zeros would be
/// walked and mapped as if they were data.
pub fn read_measurement_file(path: &Path, limit: u64) -> Result<Contents, safe_fs::Error> {
    let opts = ReadOptions::default()
        .with_max_bytes(limit)
        .with_map(Map::Large)
        .with_max_holes(gmon_format::MEASUREMENT_MAX_HOLES);
    safe_fs::read(path, &opts)
}

/// Reads a file at a path that a profiled process could have planted, such as an object path
/// recorded in an info file, as [`read_input`] does but without following a symbolic link in
/// its last component: the kernel records the real path of a mapped file, never a link, so a
/// link there was put in its place.
///
/// A file there with more than [`RECORDED_MAX_HOLES`] of holes is refused: its owner chose the
/// path, and sections claimed over holes cost the reader as much as data (a 16 KiB object
/// whose `.dynsym` claimed 7.5 GiB over holes took `pkgprof --pid` 14 s and 5.5 GiB).
pub fn read_recorded(path: &Path, limit: u64) -> Result<Contents, safe_fs::Error> {
    let opts = ReadOptions::untrusted(limit)
        .with_map(Map::Large)
        .with_max_holes(RECORDED_MAX_HOLES);
    safe_fs::read(path, &opts)
}

/// Reads an image (the profiled program or a mapped object), as [`crate::SymbolTable::read`]
/// does.
///
/// Returns [`Error::ReadImage`] if a system call fails, [`Error::Refused`] if the file is not a
/// regular file or is larger than [`IMAGE_MAX_BYTES`].
pub fn read_image(path: &Path) -> Result<Contents, Error> {
    read_input(path, IMAGE_MAX_BYTES).map_err(|e| {
        error(e, |source| Error::ReadImage {
            path: path.to_owned(),
            source,
        })
    })
}

/// The address width and byte order of gmon files for the image at `path`, from its ELF
/// identification (class and data encoding), as gprof takes them; only its first 16 bytes are
/// read, never from a FIFO or device.
///
/// Returns [`Error::ReadImage`] if a system call fails, [`Error::Refused`] for a file that is
/// not regular, [`Error::NotExecutable`] if it is not ELF and [`Error::UnknownElfIdent`] for a
/// class or encoding ELF does not define.
pub fn image_layout(path: &Path) -> Result<(AddressSize, Endian), Error> {
    let read_error = |source| Error::ReadImage {
        path: path.to_owned(),
        source,
    };
    let options = ReadOptions::default().with_max_bytes(u64::MAX);
    let (file, _) = safe_fs::open(path, &options).map_err(|e| error(e, read_error))?;
    let mut ident = Vec::with_capacity(16);
    file.take(16).read_to_end(&mut ident).map_err(read_error)?;
    if ident.len() < 16 || ident[..4] != *b"\x7fELF" {
        return Err(Error::NotExecutable {
            path: path.to_owned(),
            source: None,
        });
    }
    let unknown = |field, value| Error::UnknownElfIdent {
        path: path.to_owned(),
        field,
        value,
    };
    let size = match ident[4] {
        1 => AddressSize::U32,
        2 => AddressSize::U64,
        c => return Err(unknown("class", c)),
    };
    let endian = match ident[5] {
        1 => Endian::Little,
        2 => Endian::Big,
        d => return Err(unknown("data encoding", d)),
    };
    Ok((size, endian))
}

/// An error of [`read_input`] as this crate's: a failed system call keeps its io error in `io`'s
/// variant (`Error::ReadImage` or `Error::ReadFile`); a refusal is [`Error::Refused`].
pub(crate) fn error(e: safe_fs::Error, io: impl FnOnce(std::io::Error) -> Error) -> Error {
    let path = e.path().to_owned();
    match e.into_kind() {
        safe_fs::ErrorKind::Io { source, .. } => io(source),
        kind => Error::Refused(safe_fs::Error::new(path, kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_elf_identification_gives_the_layout() {
        let dir = std::env::temp_dir().join(format!("callgraph-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let layout = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            image_layout(&path).map_err(|e| e.to_string())
        };
        let ident = |class: u8, data: u8| {
            let mut b = b"\x7fELF".to_vec();
            b.extend([class, data, 1]);
            b.resize(64, 0);
            b
        };
        let results = [
            layout("64le", &ident(2, 1)),
            layout("32be", &ident(1, 2)),
            layout("class", &ident(3, 1)),
            layout("data", &ident(2, 0)),
            layout("short", b"\x7fELF\x02"),
        ];
        let shown = |name: &str| dir.join(name).display().to_string();
        assert_eq!(
            results,
            [
                Ok((AddressSize::U64, Endian::Little)),
                Ok((AddressSize::U32, Endian::Big)),
                Err(format!(
                    "{}: not in executable format (unknown ELF class 3)",
                    shown("class")
                )),
                Err(format!(
                    "{}: not in executable format (unknown ELF data encoding 0)",
                    shown("data")
                )),
                Err(format!("{}: not in executable format", shown("short"))),
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
