//! The measurement manifest, `manifest.sha256`: the list of a measurement's files with their
//! sizes and SHA-256 checksums, written last, so that a measurement is complete or refused.
//!
//! # Format, version 1.0 (normative)
//!
//! ```text
//! # pkgprof-manifest 1.0
//! # The files of this measurement, listed after all of them were written and synced.
//! # Check them with: sha256sum -c --strict manifest.sha256
//! # size 3 kallsyms.0badc0de
//! a665a45920422f9d417e4867efdc4fb8a04a1f3fff1fa07e998e86f7f7a27ae3  kallsyms.0badc0de
//! # end 1
//! ```
//!
//! It is a file that `sha256sum -c --strict` checks as it is: one line per file, the checksum
//! in lower-case hex, two spaces and the file name (a single path component, printable ASCII
//! without spaces or backslashes; every name of [`crate::labeled`] is one). The other lines
//! start with `#`, which `sha256sum` skips:
//!
//! * the first line is `# pkgprof-manifest <major>.<minor>`;
//! * `# size <bytes> <name>` gives the size of a file listed in the same manifest (each listed
//!   file has exactly one);
//! * `# end <files>` is the last line, with the number of files listed, and ends in `\n`.
//!   Nothing follows it. A manifest without it is incomplete: the collector writes one without
//!   it, the *placeholder*, before it starts the command, and replaces it by the complete one
//!   only after every listed file was written and synced to disk. So a directory whose
//!   manifest has no `# end` line was being written when the collector was killed, ran out of
//!   disk, or lost its directory;
//! * any other line starting with `#` is a comment.
//!
//! # Complete or refused
//!
//! [`Measurement::verify`](crate::Measurement::verify) checks a measurement directory:
//!
//! * with a manifest, the measurement is complete only if the manifest is, every file it
//!   lists is a regular file of that size and checksum, and every measurement file of the
//!   directory (`gmon.out.*`, `kallsyms.*`, `vdso.*`, `async.moves`) is listed. Anything else
//!   is reported, file by file ([`Verification::Incomplete`]), and a report refuses it;
//! * without one, the directory was written before manifests existed (or its files were
//!   copied without it): it is read as before, unchecked ([`Verification::Unchecked`]). Archived
//!   measurements stay readable; only a directory that claims the new format by having a
//!   manifest is held to it.
//!
//! Temporary files of the collector (names starting with [`safe_fs::TEMP_PREFIX`]) are never
//! read; the collector removes them at its next run in the directory.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io;

use safe_fs::{Dir, ReadOptions};
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Result};

/// The manifest's file name in a measurement directory.
pub const MANIFEST_NAME: &str = "manifest.sha256";

/// The first line's magic words, before the version.
pub const MANIFEST_MAGIC: &str = "# pkgprof-manifest";

/// The version written.
pub const MANIFEST_VERSION: (u32, u32) = (1, 0);

/// The bytes of holes a reader allows in a measurement's file (a sparse file: ranges its size
/// claims that the disk does not store, read as zeros). The collector writes every file
/// without holes, so a file with more was made by someone else, whom it cost nothing while it
/// costs a reader as much time and memory as data (an 8 GiB sparse kernel profile of a few
/// KiB on disk kept `pkgprof --pid` busy for minutes at 5 GiB resident).
pub const MEASUREMENT_MAX_HOLES: u64 = 16 << 20;

/// One file of a measurement: its name, size and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// File name in the measurement directory.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of its bytes.
    pub sha256: [u8; 32],
}

impl ManifestEntry {
    /// The entry for a file named `name` holding `bytes`.
    pub fn of(name: impl Into<String>, bytes: &[u8]) -> Self {
        ManifestEntry {
            name: name.into(),
            size: bytes.len() as u64,
            sha256: Sha256::digest(bytes).into(),
        }
    }
}

/// A complete manifest: every file of a measurement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The files, in the order listed.
    pub files: Vec<ManifestEntry>,
}

/// Whether `name` can be listed: one path component, printable ASCII without space or `\`,
/// and not the manifest itself.
fn check_name(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() || name == "." || name == ".." {
        Err("a file name is required")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'/' && b != b'\\')
    {
        Err("file names are printable ASCII without spaces, `/` or `\\`")
    } else if name == MANIFEST_NAME {
        Err("the manifest cannot list itself")
    } else {
        Ok(())
    }
}

fn manifest_error(line: usize, offset: usize, message: impl Into<String>) -> Error {
    Error::at(
        offset as u64,
        ErrorKind::Manifest {
            line,
            message: message.into(),
        },
    )
}

impl Manifest {
    /// The placeholder the collector writes before it starts: the first line and a comment,
    /// without `# end`, so that it reads as incomplete until it is replaced.
    pub fn placeholder() -> Vec<u8> {
        format!(
            "{MANIFEST_MAGIC} {}.{}\n# incomplete: pkgmon is writing this measurement, or was \
             stopped before it finished\n",
            MANIFEST_VERSION.0, MANIFEST_VERSION.1
        )
        .into_bytes()
    }

    /// Writes the manifest as [the format](self) says.
    ///
    /// Returns [`ErrorKind::Manifest`] if a name cannot be listed or is listed twice, and
    /// [`ErrorKind::Io`] if `out` fails.
    pub fn write<W: io::Write>(&self, mut out: W) -> Result<()> {
        let mut text = format!(
            "{MANIFEST_MAGIC} {}.{}\n# The files of this measurement, listed after all of them \
             were written and synced.\n# Check them with: sha256sum -c --strict {MANIFEST_NAME}\n",
            MANIFEST_VERSION.0, MANIFEST_VERSION.1
        );
        let mut seen = std::collections::BTreeSet::new();
        for (i, f) in self.files.iter().enumerate() {
            check_name(&f.name)
                .map_err(|why| manifest_error(i + 1, 0, format!("{why}: {:?}", f.name)))?;
            if !seen.insert(&f.name) {
                return Err(manifest_error(i + 1, 0, format!("{} listed twice", f.name)));
            }
            let _ = writeln!(text, "# size {} {}", f.size, f.name);
            for b in f.sha256 {
                let _ = write!(text, "{b:02x}");
            }
            let _ = writeln!(text, "  {}", f.name);
        }
        let _ = writeln!(text, "# end {}", self.files.len());
        out.write_all(text.as_bytes())?;
        Ok(())
    }

    /// Reads a manifest.
    ///
    /// Returns [`ErrorKind::Manifest`], naming the line and byte offset, if the first line is
    /// not `# pkgprof-manifest 1.<minor>` (a newer major version is refused too), a line is
    /// malformed, a name is listed twice or lacks its size line, the `# end` count differs from
    /// the files listed, or the manifest is incomplete: no `# end` line (a placeholder, or a
    /// cut-short file), or text after it.
    pub fn parse(data: &[u8]) -> Result<Manifest> {
        let text = std::str::from_utf8(data).map_err(|e| {
            let at = e.valid_up_to();
            let line = 1 + data[..at].iter().filter(|&&b| b == b'\n').count();
            manifest_error(line, at, "not ASCII text")
        })?;
        let mut lines = text.split_inclusive('\n');
        let first = lines.next().unwrap_or("");
        let version = first
            .trim_end_matches('\n')
            .strip_prefix(MANIFEST_MAGIC)
            .and_then(|v| v.strip_prefix(' '))
            .and_then(|v| v.split_once('.'))
            .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
        match version {
            Some((major, _)) if major == MANIFEST_VERSION.0 => {}
            Some((major, minor)) => {
                return Err(manifest_error(
                    1,
                    0,
                    format!(
                        "manifest version {major}.{minor} is not readable by this pkgprof \
                         (major version {})",
                        MANIFEST_VERSION.0
                    ),
                ));
            }
            None => {
                return Err(manifest_error(
                    1,
                    0,
                    format!(
                        "not a pkgprof manifest: the first line must be `{MANIFEST_MAGIC} 1.<minor>`"
                    ),
                ));
            }
        }
        let mut files: Vec<ManifestEntry> = Vec::new();
        // The names listed so far, looked up in constant time: a search of `files` for each
        // line made a 7 MiB manifest of 100,000 names take 20 s, and a 64 MiB one hours.
        let mut listed: HashSet<&str> = HashSet::new();
        let mut sizes: HashMap<&str, (u64, usize)> = HashMap::new();
        let mut end = None;
        let mut offset = first.len();
        let mut number = 1;
        for raw in lines {
            number += 1;
            let at = offset;
            offset += raw.len();
            if let Some(end_line) = end {
                return Err(manifest_error(
                    number,
                    at,
                    format!("text after the `# end` line {end_line}, which must be the last"),
                ));
            }
            let Some(line) = raw.strip_suffix('\n') else {
                return Err(manifest_error(
                    number,
                    at,
                    "the last line has no line end: the manifest was cut short",
                ));
            };
            if let Some(count) = line.strip_prefix("# end ") {
                let n: usize = count.parse().map_err(|_| {
                    manifest_error(
                        number,
                        at,
                        format!("`# end` needs a file count, not {count:?}"),
                    )
                })?;
                if n != files.len() {
                    return Err(manifest_error(
                        number,
                        at,
                        format!("`# end` counts {n} files but {} are listed", files.len()),
                    ));
                }
                end = Some(number);
            } else if let Some(rest) = line.strip_prefix("# size ") {
                let (size, name) = rest.split_once(' ').unwrap_or((rest, ""));
                let size: u64 = size.parse().map_err(|_| {
                    manifest_error(
                        number,
                        at,
                        format!("`# size` needs a byte count, not {size:?}"),
                    )
                })?;
                check_name(name).map_err(|why| manifest_error(number, at, why))?;
                if sizes.insert(name, (size, number)).is_some() {
                    return Err(manifest_error(number, at, format!("second size of {name}")));
                }
            } else if line.starts_with('#') {
                // A comment.
            } else {
                let (hex, name) = line.split_once("  ").ok_or_else(|| {
                    manifest_error(
                        number,
                        at,
                        "expected `<sha256>  <name>`, `# size <bytes> <name>` or `# end <files>`",
                    )
                })?;
                let sha256 = parse_sha256(hex).ok_or_else(|| {
                    manifest_error(number, at, "a checksum is 64 lower-case hex digits")
                })?;
                check_name(name).map_err(|why| manifest_error(number, at, why))?;
                if !listed.insert(name) {
                    return Err(manifest_error(number, at, format!("{name} listed twice")));
                }
                files.push(ManifestEntry {
                    name: name.to_owned(),
                    size: 0,
                    sha256,
                });
            }
        }
        if end.is_none() {
            return Err(manifest_error(
                number + 1,
                data.len(),
                "incomplete: no `# end` line, so the measurement was not finished (the \
                 collector was killed, ran out of disk, or is still writing)",
            ));
        }
        for f in &mut files {
            let Some((size, _)) = sizes.remove(f.name.as_str()) else {
                return Err(manifest_error(
                    number,
                    data.len(),
                    format!("{} has no `# size` line", f.name),
                ));
            };
            f.size = size;
        }
        if let Some((name, (_, line))) = sizes.into_iter().min_by_key(|&(_, (_, line))| line) {
            return Err(manifest_error(
                line,
                0,
                format!("a size for {name}, which is not listed"),
            ));
        }
        Ok(Manifest { files })
    }
}

fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// Whether a directory entry's name is one a measurement's files have (and so must be listed
/// in its manifest): `async.moves` too, which the report reads (unlisted, one put beside a
/// complete measurement was read as part of it, and pkgmon took its own for another user's
/// file and refused to keep an `--async` measurement as `DIR.old`).
pub fn is_measurement_file(name: &str) -> bool {
    name.starts_with(crate::labeled::NAME_PREFIX)
        || name.starts_with("kallsyms.")
        || name.starts_with("vdso.")
        || name == crate::labeled::ASYNC_MOVES_FILE
}

/// What [`Measurement::verify`](crate::Measurement::verify) found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verification {
    /// The manifest is complete, and every file matches it.
    Complete,
    /// No manifest: a measurement written before manifests existed. Read as before.
    Unchecked,
    /// What is missing or wrong, one sentence per problem: the first 20, then one sentence
    /// counting the others.
    Incomplete(Vec<String>),
}

/// Checks the files of `dir` against its manifest, as [the module docs](self) say.
pub(crate) fn verify_dir(dir: &Dir, names: &[String]) -> Result<Verification> {
    let opts = ReadOptions::default()
        .with_max_bytes(64 << 20)
        .with_max_holes(MEASUREMENT_MAX_HOLES);
    let data = match dir.read(MANIFEST_NAME, &opts) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(Verification::Unchecked),
        Err(e) => return Ok(Verification::Incomplete(vec![e.to_string()])),
    };
    let manifest = match Manifest::parse(&data) {
        Ok(m) => m,
        Err(e) => {
            let e = e.with_path(dir.path().join(MANIFEST_NAME));
            return Ok(Verification::Incomplete(vec![e.to_string()]));
        }
    };
    let mut problems = Problems::default();
    // Any size (the readers have their limits), but no more holes than a reader allows: a
    // listed sparse file of 20 GiB took 110 s to hash.
    let file_opts = ReadOptions::default()
        .with_max_bytes(u64::MAX)
        .with_max_holes(MEASUREMENT_MAX_HOLES);
    for f in &manifest.files {
        let path = dir.path().join(&f.name);
        match dir.open_file(&f.name, &file_opts) {
            Err(e) if e.is_not_found() => problems.add(format!(
                "{}: missing (listed in the manifest)",
                path.display()
            )),
            Err(e) => problems.add(e.to_string()),
            // The size first: a file of another size is not read at all.
            Ok((_, size)) if size != f.size => problems.add(format!(
                "{}: {size} bytes, but the manifest lists {} (cut short or changed)",
                path.display(),
                f.size
            )),
            Ok((file, _)) => match sha256_of(file, f.size) {
                Err(e) => problems.add(format!("{}: cannot read: {e}", path.display())),
                Ok(None) => problems.add(format!(
                    "{}: changed size while it was checked",
                    path.display()
                )),
                Ok(Some(sum)) if sum != f.sha256 => problems.add(format!(
                    "{}: its checksum differs from the manifest's (corrupted or changed)",
                    path.display()
                )),
                Ok(Some(_)) => {}
            },
        }
    }
    let listed: HashSet<&str> = manifest.files.iter().map(|f| f.name.as_str()).collect();
    for name in names {
        if is_measurement_file(name) && !listed.contains(name.as_str()) {
            problems.add(format!(
                "{}: not listed in the manifest, so not part of this measurement",
                dir.path().join(name).display()
            ));
        }
    }
    Ok(problems.verdict())
}

/// The problems a check found: the first [`Problems::LISTED`] described, the others counted
/// (a manifest of 200,000 missing files made a 200,000-line message).
#[derive(Default)]
struct Problems {
    listed: Vec<String>,
    more: usize,
}

impl Problems {
    /// How many problems are described one by one.
    const LISTED: usize = 20;

    fn add(&mut self, problem: String) {
        if self.listed.len() < Self::LISTED {
            self.listed.push(problem);
        } else {
            self.more += 1;
        }
    }

    fn verdict(mut self) -> Verification {
        if self.listed.is_empty() {
            return Verification::Complete;
        }
        if self.more > 0 {
            self.listed.push(format!(
                "and {} more files missing, changed or not listed",
                self.more
            ));
        }
        Verification::Incomplete(self.listed)
    }
}

/// The SHA-256 of `file`'s bytes, read in a fixed buffer (a file listed in a manifest may be
/// any size, and another user's is not mapped): None if it does not hold exactly `size` bytes.
fn sha256_of(file: std::fs::File, size: u64) -> io::Result<Option<[u8; 32]>> {
    use std::io::Read as _;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut reader = file.take(size.saturating_add(1));
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((total == size).then(|| hasher.finalize().into()))
}

/// Writes a measurement's files into its directory and, last, its manifest: the writer side
/// of [the manifest contract](self).
///
/// [`MeasurementWriter::begin`] removes temporary files an earlier killed run left and writes
/// the placeholder manifest, so that from then on the directory reads as an unfinished
/// measurement; [`MeasurementWriter::write`] creates each file with
/// [`Dir::write_new`](safe_fs::Dir::write_new) (random temporary name, `O_EXCL|O_NOFOLLOW`,
/// fsync, rename that never replaces); [`MeasurementWriter::finish`] syncs the directory,
/// then replaces the placeholder by the complete manifest and syncs again.
#[derive(Debug)]
pub struct MeasurementWriter {
    dir: Dir,
    mode: u32,
    manifest: Manifest,
}

impl MeasurementWriter {
    /// Starts a measurement in `dir`, whose files get `mode` (e.g. `0o600`).
    ///
    /// Returns an error if `dir` already holds a manifest (an earlier measurement: move it
    /// away first) or the placeholder cannot be written: this also checks, before anything is
    /// measured, that the directory is writable.
    pub fn begin(dir: Dir, mode: u32) -> Result<MeasurementWriter> {
        dir.remove_stale_temps()?;
        dir.write_new(MANIFEST_NAME, &Manifest::placeholder(), mode)?;
        dir.sync()?;
        Ok(MeasurementWriter {
            dir,
            mode,
            manifest: Manifest::default(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Writes the new file `name` with the measurement's mode; returns its size.
    ///
    /// Returns an error if something named `name` exists (it is not replaced) or the file
    /// cannot be written; the files written before stay, and the manifest stays a placeholder.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<u64> {
        self.write_with_mode(name, bytes, self.mode)
    }

    /// The same with another mode (the kernel-symbol snapshot is never more readable than
    /// `/proc/kallsyms` is to the same reader).
    pub fn write_with_mode(&mut self, name: &str, bytes: &[u8], mode: u32) -> Result<u64> {
        if let Err(why) = check_name(name) {
            return Err(manifest_error(0, 0, format!("{why}: {name:?}")));
        }
        let size = self.dir.write_new(name, bytes, mode)?;
        self.manifest.files.push(ManifestEntry::of(name, bytes));
        Ok(size)
    }

    /// Gives up a measurement before any file was written (the command could not be started):
    /// removes the placeholder, so that nothing claims to be a measurement.
    ///
    /// Returns an error if files were written already (they stay, marked incomplete by the
    /// placeholder) or the placeholder cannot be removed.
    pub fn abandon(self) -> Result<()> {
        if let Some(f) = self.manifest.files.first() {
            return Err(manifest_error(
                0,
                0,
                format!(
                    "{} was written already: the measurement stays incomplete",
                    f.name
                ),
            ));
        }
        self.dir.remove(MANIFEST_NAME, false)?;
        self.dir.sync()?;
        Ok(())
    }

    /// Makes every file durable, then writes the complete manifest in place of the placeholder.
    /// Returns the manifest written.
    pub fn finish(self) -> Result<Manifest> {
        self.dir.sync()?;
        let mut text = Vec::new();
        self.manifest.write(&mut text)?;
        let mut file = self.dir.create(self.mode)?;
        io::Write::write_all(&mut file, &text)
            .map_err(|e| Error::from(e).with_path(self.dir.path().join(MANIFEST_NAME)))?;
        file.persist_replacing(MANIFEST_NAME)?;
        self.dir.sync()?;
        Ok(self.manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            files: vec![
                ManifestEntry::of("gmon.out.137u.cat", b"gmon"),
                ManifestEntry::of("kallsyms.0badc0de", b"123"),
            ],
        }
    }

    fn text(m: &Manifest) -> String {
        let mut out = Vec::new();
        m.write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn module_doc_example_is_what_the_writer_writes() {
        let source = include_str!("manifest.rs");
        let example: String = source
            .lines()
            .skip_while(|l| *l != "//! ```text")
            .skip(1)
            .take_while(|l| *l != "//! ```")
            .map(|l| format!("{}\n", l.trim_start_matches("//! ")))
            .collect();
        let m = Manifest {
            files: vec![ManifestEntry::of("kallsyms.0badc0de", b"123")],
        };
        assert_eq!(text(&m), example);
        assert_eq!(Manifest::parse(example.as_bytes()).unwrap(), m);
    }

    #[test]
    fn round_trip_and_every_truncation_refused() {
        let m = sample();
        let t = text(&m);
        assert_eq!(Manifest::parse(t.as_bytes()).unwrap(), m);
        for cut in 0..t.len() {
            let err = Manifest::parse(&t.as_bytes()[..cut]).expect_err(&t[..cut]);
            assert!(matches!(err.kind(), ErrorKind::Manifest { .. }), "{err}");
        }
        let err = Manifest::parse(&Manifest::placeholder()).unwrap_err();
        assert!(err.to_string().contains("incomplete"), "{err}");
    }

    #[test]
    fn malformed_manifests() {
        let t = text(&sample());
        let hex = t
            .lines()
            .nth(4)
            .unwrap()
            .split_once("  ")
            .unwrap()
            .0
            .to_owned();
        for (bad, reason) in [
            (t.replace("# end 2", "# end 3"), "counts 3 files but 2"),
            (
                t.replace("# end 2\n", "# end 2\n\n"),
                "text after the `# end`",
            ),
            (
                t.replace("# size 4 gmon.out.137u.cat\n", ""),
                "has no `# size` line",
            ),
            (t.replace(&hex, &hex.to_uppercase()), "64 lower-case hex"),
            (
                t.replace("pkgprof-manifest 1.0", "pkgprof-manifest 2.0"),
                "version 2.0",
            ),
            (
                t.replace("pkgprof-manifest", "other"),
                "not a pkgprof manifest",
            ),
            (
                t.replace("  kallsyms", " kallsyms"),
                "expected `<sha256>  <name>`",
            ),
            (t.replace("kallsyms.0badc0de", "../x"), "printable ASCII"),
            (
                t.clone()
                    .replace("# end 2\n", &format!("{hex}  gmon.out.137u.cat\n# end 3\n")),
                "listed twice",
            ),
        ] {
            let err = Manifest::parse(bad.as_bytes()).expect_err(&bad);
            assert!(err.to_string().contains(reason), "{bad:?}: {err}");
        }
    }

    #[test]
    fn sha256sum_checks_it() {
        let dir = std::env::temp_dir().join(format!("gmon-manifest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut w = MeasurementWriter::begin(Dir::create_dir(&dir, 0o700).unwrap(), 0o600).unwrap();
        // Until finished, the directory reads as incomplete.
        let names = vec![];
        assert!(matches!(
            verify_dir(w.dir(), &names).unwrap(),
            Verification::Incomplete(_)
        ));
        w.write("gmon.out.137u.cat", b"gmon").unwrap();
        w.write("kallsyms.0badc0de", b"123").unwrap();
        assert!(w.write("kallsyms.0badc0de", b"again").is_err());
        let written = w.finish().unwrap();
        assert_eq!(written, sample());
        let status = std::process::Command::new("sha256sum")
            .args(["-c", "--strict", "--quiet", MANIFEST_NAME])
            .current_dir(&dir)
            .status()
            .expect("sha256sum (coreutils) runs");
        assert!(status.success(), "sha256sum -c refused the manifest");
        let names: Vec<String> = vec!["gmon.out.137u.cat".into(), "kallsyms.0badc0de".into()];
        let d = Dir::open(&dir).unwrap();
        assert_eq!(verify_dir(&d, &names).unwrap(), Verification::Complete);
        std::fs::write(dir.join("gmon.out.137k.cat"), b"planted").unwrap();
        std::fs::write(dir.join("kallsyms.0badc0de"), b"12").unwrap();
        std::fs::write(dir.join("async.moves"), b"planted").unwrap();
        let mut names = names;
        names.push("gmon.out.137k.cat".into());
        names.push("async.moves".into());
        let Verification::Incomplete(problems) = verify_dir(&d, &names).unwrap() else {
            panic!("changed files pass")
        };
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems[2].ends_with(
                "async.moves: not listed in the manifest, so not part of this measurement"
            ),
            "{problems:?}"
        );
        assert!(
            problems[0].ends_with(
                "kallsyms.0badc0de: 2 bytes, but the manifest lists 3 (cut short or changed)"
            ),
            "{problems:?}"
        );
        assert!(
            problems[1].ends_with(
                "gmon.out.137k.cat: not listed in the manifest, so not part of this measurement"
            ),
            "{problems:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
