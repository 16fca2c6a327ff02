//! The sampled-stacks file, `gmon.out.<pid>s.<comm>`: every distinct full stack a process was
//! sampled in, with its sample count and time, and the kind of the user/kernel boundary.
//!
//! gmon files keep only a histogram and caller-callee arcs, so a report built from them must
//! guess inclusive times by propagating self time along the arcs (gprof's assumption that every
//! call of a function costs the same). The stacks file keeps the samples' whole stacks, so a
//! report can count each function once per sample it appears in and get exact inclusive times,
//! and can follow a stack across the user/kernel boundary.
//!
//! [`Stacks::parse`] reads a file, borrowing its bytes; [`StacksWriter`] writes one.
//!
//! # Format, version 1.0
//!
//! Binary, little-endian whatever the machine. A header, then `stack count` stack records.
//!
//! Header (32 bytes in version 1.0):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic, the bytes `pkgstack` |
//! | 8 | 2 | major version, 1 |
//! | 10 | 2 | minor version, 0 |
//! | 12 | 2 | header size in bytes, at least 32 |
//! | 14 | 2 | stack record header size in bytes, at least 24 |
//! | 16 | 8 | stack count |
//! | 24 | 8 | flags, 0 (no flag is defined yet) |
//!
//! Each stack record is a record header followed by its frames:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | samples: how many samples had exactly this stack |
//! | 8 | 8 | nanoseconds: the CPU time those samples stand for (sum of their periods) |
//! | 16 | 2 | kernel frame count *k* |
//! | 18 | 2 | user frame count *u* |
//! | 20 | 1 | boundary kind: 0 none (only one side has frames), 1 `syscall`, 2 `fault`, 3 `interrupt`, 4 `other`, 5 `async-net-rx`, 6 `async-workqueue`, 7 `async-timer`, 8 `async-block` (kernel frames only: asynchronous work moved to this process, see [`BoundaryKind`]) |
//! | 21 | 1 | flags: bit 0 set when the user frames may lack outer frames (unwinding stopped early) |
//! | 22 | 2 | reserved, 0 |
//! | 24 | 8 × (*k* + *u*) | the *k* kernel frames, then the *u* user frames |
//!
//! Frames are runtime addresses, innermost first within each part: the first kernel frame is
//! the sampled pc when the sample was taken in the kernel, the last kernel frame is the kernel
//! entry point; the first user frame is the user pc (the instruction after the `syscall` for a
//! sample taken in a system call), the following ones are return addresses. Kernel addresses
//! are at or above `0x8000_0000_0000_0000`, user addresses below.
//!
//! The writer writes stacks in the order given; the collector sorts them by kernel frames, then
//! user frames, then boundary kind, so that its files are reproducible. A stack appears once
//! per file: records with equal frames, boundary kind and flags are one stack.
//!
//! ## Growth
//!
//! A new minor version may lengthen the header or the record header (their sizes are in the
//! header) and define flags; a reader skips bytes it does not know and ignores unknown flag
//! bits. A reader refuses a newer major version.
//!
//! New boundary kinds take the next code without a version change (the version describes
//! the layout, not the kinds), so a file without them stays readable by every reader. A
//! reader refuses a record whose code it does not know, naming the code and its offset,
//! rather than read the file with those samples misplaced.

use std::io::Write;

use super::boundary::BoundaryKind;
use crate::error::{Error, ErrorKind, Result};

/// The first 8 bytes of a stacks file.
pub const STACKS_MAGIC: [u8; 8] = *b"pkgstack";

/// The major version this crate reads and writes.
pub const STACKS_MAJOR: u16 = 1;

/// The minor version this crate writes.
pub const STACKS_MINOR: u16 = 0;

const HEADER_SIZE: u16 = 32;
const RECORD_HEADER_SIZE: u16 = 24;
const FLAG_USER_TRUNCATED: u8 = 1;

/// A stacks file's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StacksHeader {
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Number of stack records.
    pub count: u64,
}

/// A parsed stacks file, borrowing its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Stacks<'data> {
    header: StacksHeader,
    record_header_size: usize,
    data: &'data [u8],
    /// Offset of the first record.
    start: usize,
}

/// A sequence of frame addresses borrowed from a stacks file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frames<'data>(&'data [u8]);

impl<'data> Frames<'data> {
    /// Number of frames.
    pub fn len(&self) -> usize {
        self.0.len() / 8
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Frame `i`, innermost first.
    pub fn get(&self, i: usize) -> Option<u64> {
        let b = self.0.get(i.checked_mul(8)?..i.checked_mul(8)? + 8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    /// The frames, innermost first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + 'data {
        self.0
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
    }

    /// The frames, copied.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }
}

/// One stack record as read from a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StackRecord<'data> {
    /// Samples that had this stack.
    pub samples: u64,
    /// CPU time they stand for, in nanoseconds.
    pub nanoseconds: u64,
    /// How the kernel was entered; None when only one side has frames.
    pub boundary: Option<BoundaryKind>,
    /// Whether the user frames may lack outer frames.
    pub user_truncated: bool,
    /// Kernel frames, innermost (the sampled pc) first, the entry point last.
    pub kernel: Frames<'data>,
    /// User frames, innermost (the user pc) first.
    pub user: Frames<'data>,
}

/// One stack to write: the same fields as [`StackRecord`], with the frames as slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stack<'a> {
    /// Samples that had this stack.
    pub samples: u64,
    /// CPU time they stand for, in nanoseconds.
    pub nanoseconds: u64,
    /// How the kernel was entered; None when only one side has frames.
    pub boundary: Option<BoundaryKind>,
    /// Whether the user frames may lack outer frames.
    pub user_truncated: bool,
    /// Kernel frames, innermost first (at most 65535).
    pub kernel: &'a [u64],
    /// User frames, innermost first (at most 65535).
    pub user: &'a [u64],
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn truncated(what: &'static str, offset: usize, needed: usize, remaining: usize) -> Error {
    Error::at(
        offset as u64,
        ErrorKind::Truncated {
            what,
            needed: needed as u64,
            remaining: remaining as u64,
        },
    )
}

impl<'data> Stacks<'data> {
    /// Reads the header of a stacks file and checks that the records can be walked.
    ///
    /// Only the header is decoded here; [`Stacks::records`] decodes the records as it goes.
    /// Returns an error if the magic is wrong, the major version is newer than
    /// [`STACKS_MAJOR`], the header or record header sizes are too small, or the file ends
    /// inside the header.
    pub fn parse(data: &'data [u8]) -> Result<Stacks<'data>> {
        if data.len() < usize::from(HEADER_SIZE) {
            return Err(truncated(
                "stacks header",
                0,
                usize::from(HEADER_SIZE),
                data.len(),
            ));
        }
        if data[..8] != STACKS_MAGIC {
            return Err(Error::at(
                0,
                ErrorKind::InvalidStacks(
                    "bad magic: the file does not start with `pkgstack`".into(),
                ),
            ));
        }
        let major = le_u16(data, 8);
        let minor = le_u16(data, 10);
        if major != STACKS_MAJOR {
            return Err(Error::at(
                8,
                ErrorKind::InvalidStacks(format!(
                    "stacks file version {major}.{minor} is not supported (major version {STACKS_MAJOR} is)"
                )),
            ));
        }
        let header_size = usize::from(le_u16(data, 12));
        let record_header_size = usize::from(le_u16(data, 14));
        if header_size < usize::from(HEADER_SIZE) {
            return Err(Error::at(
                12,
                ErrorKind::InvalidStacks(format!(
                    "header size {header_size} is below {HEADER_SIZE}"
                )),
            ));
        }
        if record_header_size < usize::from(RECORD_HEADER_SIZE) {
            return Err(Error::at(
                14,
                ErrorKind::InvalidStacks(format!(
                    "stack record header size {record_header_size} is below {RECORD_HEADER_SIZE}"
                )),
            ));
        }
        if data.len() < header_size {
            return Err(truncated("stacks header", 0, header_size, data.len()));
        }
        let count = le_u64(data, 16);
        // Every record takes at least its header: a count the bytes cannot back is refused
        // here, so no caller sizes anything by it.
        let room = (data.len() - header_size) / record_header_size;
        if count > room as u64 {
            return Err(Error::at(
                16,
                ErrorKind::InvalidStacks(format!(
                    "header claims {count} stacks but {} bytes remain",
                    data.len() - header_size
                )),
            ));
        }
        Ok(Stacks {
            header: StacksHeader {
                major,
                minor,
                count,
            },
            record_header_size,
            data,
            start: header_size,
        })
    }

    /// The header.
    pub fn header(&self) -> StacksHeader {
        self.header
    }

    /// The stack records, each with its byte offset. After an error the iterator ends.
    pub fn records(&self) -> StackRecords<'data> {
        StackRecords {
            data: self.data,
            pos: self.start,
            left: self.header.count,
            record_header_size: self.record_header_size,
        }
    }
}

/// Iterator over the records of a [`Stacks`] file.
#[derive(Debug, Clone)]
pub struct StackRecords<'data> {
    data: &'data [u8],
    pos: usize,
    left: u64,
    record_header_size: usize,
}

impl<'data> StackRecords<'data> {
    fn read(&mut self) -> Result<(u64, StackRecord<'data>)> {
        let at = self.pos;
        let rest = &self.data[at..];
        if rest.len() < self.record_header_size {
            return Err(truncated(
                "stack record header",
                at,
                self.record_header_size,
                rest.len(),
            ));
        }
        let nk = usize::from(le_u16(rest, 16));
        let nu = usize::from(le_u16(rest, 18));
        let boundary = BoundaryKind::from_code(rest[20], (at + 20) as u64)?;
        let flags = rest[21];
        let frames_at = self.record_header_size;
        let need = frames_at + 8 * (nk + nu);
        if rest.len() < need {
            return Err(truncated("stack frames", at, need, rest.len()));
        }
        self.pos += need;
        Ok((
            at as u64,
            StackRecord {
                samples: le_u64(rest, 0),
                nanoseconds: le_u64(rest, 8),
                boundary,
                user_truncated: flags & FLAG_USER_TRUNCATED != 0,
                kernel: Frames(&rest[frames_at..frames_at + 8 * nk]),
                user: Frames(&rest[frames_at + 8 * nk..need]),
            },
        ))
    }
}

impl<'data> Iterator for StackRecords<'data> {
    type Item = Result<(u64, StackRecord<'data>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let r = self.read();
        self.left = if r.is_ok() { self.left - 1 } else { 0 };
        Some(r)
    }
}

/// Writes a stacks file: the header with the number of stacks to come, then each stack.
#[derive(Debug)]
pub struct StacksWriter<W: Write> {
    out: W,
    left: u64,
}

impl<W: Write> StacksWriter<W> {
    /// Writes the header of a file that will hold `count` stacks.
    ///
    /// Returns an error if the output fails.
    pub fn new(mut out: W, count: u64) -> Result<Self> {
        let mut h = Vec::with_capacity(usize::from(HEADER_SIZE));
        h.extend_from_slice(&STACKS_MAGIC);
        h.extend_from_slice(&STACKS_MAJOR.to_le_bytes());
        h.extend_from_slice(&STACKS_MINOR.to_le_bytes());
        h.extend_from_slice(&HEADER_SIZE.to_le_bytes());
        h.extend_from_slice(&RECORD_HEADER_SIZE.to_le_bytes());
        h.extend_from_slice(&count.to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes());
        out.write_all(&h)?;
        Ok(StacksWriter { out, left: count })
    }

    /// Writes one stack.
    ///
    /// Returns an error if more stacks are written than announced, a part has more than 65535
    /// frames, or the output fails.
    pub fn stack(&mut self, s: &Stack<'_>) -> Result<()> {
        if self.left == 0 {
            return Err(Error::new(ErrorKind::InvalidStacks(
                "more stacks written than the header announced".into(),
            )));
        }
        let (Ok(nk), Ok(nu)) = (u16::try_from(s.kernel.len()), u16::try_from(s.user.len())) else {
            return Err(Error::new(ErrorKind::InvalidStacks(
                "a stack part with more than 65535 frames".into(),
            )));
        };
        let mut b = Vec::with_capacity(
            usize::from(RECORD_HEADER_SIZE) + 8 * (s.kernel.len() + s.user.len()),
        );
        b.extend_from_slice(&s.samples.to_le_bytes());
        b.extend_from_slice(&s.nanoseconds.to_le_bytes());
        b.extend_from_slice(&nk.to_le_bytes());
        b.extend_from_slice(&nu.to_le_bytes());
        b.push(s.boundary.map_or(0, BoundaryKind::code));
        b.push(if s.user_truncated {
            FLAG_USER_TRUNCATED
        } else {
            0
        });
        b.extend_from_slice(&[0, 0]);
        for f in s.kernel.iter().chain(s.user) {
            b.extend_from_slice(&f.to_le_bytes());
        }
        self.out.write_all(&b)?;
        self.left -= 1;
        Ok(())
    }

    /// Checks that every announced stack was written, flushes, and returns the output.
    ///
    /// Returns an error if fewer stacks were written than announced or the flush fails.
    pub fn finish(mut self) -> Result<W> {
        if self.left != 0 {
            return Err(Error::new(ErrorKind::InvalidStacks(format!(
                "{} announced stacks were not written",
                self.left
            ))));
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_file() -> Vec<u8> {
        let stacks = [
            Stack {
                samples: 3,
                nanoseconds: 3_000_000,
                boundary: Some(BoundaryKind::Syscall),
                user_truncated: false,
                kernel: &[0xffff_ffff_8100_1000, 0xffff_ffff_8200_0076],
                user: &[0x7f00_0000_1234, 0x5555_0000_1000],
            },
            Stack {
                samples: 1,
                nanoseconds: 1_000_000,
                boundary: None,
                user_truncated: true,
                kernel: &[],
                user: &[0x5555_0000_2000],
            },
        ];
        let mut w = StacksWriter::new(Vec::new(), 2).expect("header");
        for s in &stacks {
            w.stack(s).expect("stack");
        }
        w.finish().expect("finish")
    }

    #[test]
    fn round_trip() {
        let data = sample_file();
        assert_eq!(data.len(), 32 + (24 + 32) + (24 + 8));
        let s = Stacks::parse(&data).expect("parse");
        assert_eq!(
            s.header(),
            StacksHeader {
                major: 1,
                minor: 0,
                count: 2
            }
        );
        let recs: Vec<_> = s.records().map(|r| r.expect("record")).collect();
        assert_eq!(recs[0].0, 32);
        assert_eq!(recs[1].0, 32 + 56);
        let a = recs[0].1;
        assert_eq!((a.samples, a.nanoseconds), (3, 3_000_000));
        assert_eq!(a.boundary, Some(BoundaryKind::Syscall));
        assert_eq!(
            a.kernel.to_vec(),
            [0xffff_ffff_8100_1000, 0xffff_ffff_8200_0076]
        );
        assert_eq!(a.user.get(1), Some(0x5555_0000_1000));
        assert_eq!(a.user.get(2), None);
        let b = recs[1].1;
        assert!(b.user_truncated && b.kernel.is_empty() && b.boundary.is_none());
        // Writing what was read gives the same bytes.
        let mut w = StacksWriter::new(Vec::new(), s.header().count).expect("header");
        for (_, r) in &recs {
            let (k, u) = (r.kernel.to_vec(), r.user.to_vec());
            w.stack(&Stack {
                samples: r.samples,
                nanoseconds: r.nanoseconds,
                boundary: r.boundary,
                user_truncated: r.user_truncated,
                kernel: &k,
                user: &u,
            })
            .expect("stack");
        }
        assert_eq!(w.finish().expect("finish"), data);
    }

    #[test]
    fn every_truncation_fails_cleanly_with_an_offset() {
        let data = sample_file();
        for len in 0..data.len() {
            let cut = &data[..len];
            let err = match Stacks::parse(cut) {
                Err(e) => e,
                Ok(s) => s
                    .records()
                    .find_map(|r| r.err())
                    .unwrap_or_else(|| panic!("truncation to {len} bytes read fully")),
            };
            assert!(err.offset().is_some(), "{len}: {err}");
        }
        let err = Stacks::parse(&data[..40]).expect_err("count beyond the bytes");
        assert_eq!(
            err.to_string(),
            "invalid stacks file: header claims 2 stacks but 8 bytes remain (at offset 0x10)"
        );
        let err = Stacks::parse(&data[..116])
            .expect("header fits")
            .records()
            .find_map(|r| r.err())
            .expect("frames cut");
        assert_eq!(
            err.to_string(),
            "unexpected end of file in stack frames: 32 bytes needed but 28 remain (at offset 0x58)"
        );
    }

    #[test]
    fn bad_headers_and_fields() {
        let data = sample_file();
        let mut bad = data.clone();
        bad[0] = b'x';
        assert!(
            Stacks::parse(&bad)
                .expect_err("magic")
                .to_string()
                .contains("bad magic")
        );
        let mut newer = data.clone();
        newer[8] = 2;
        assert!(
            Stacks::parse(&newer)
                .expect_err("major")
                .to_string()
                .contains("version 2.0 is not supported")
        );
        let mut kind = data.clone();
        kind[32 + 20] = 9;
        let err = Stacks::parse(&kind)
            .expect("header")
            .records()
            .next()
            .expect("one")
            .expect_err("kind 9");
        assert_eq!(err.offset(), Some(52));
        // A newer minor version with longer headers is read, skipping what it adds.
        let mut longer = data[..32].to_vec();
        longer[10] = 1;
        longer[12] = 40;
        longer[14] = 28;
        longer.extend([0xee; 8]);
        for (head, frames) in [(32..56, 56..88), (88..112, 112..120)] {
            longer.extend_from_slice(&data[head]);
            longer.extend([0xee; 4]);
            longer.extend_from_slice(&data[frames]);
        }
        let s = Stacks::parse(&longer).expect("minor 1");
        assert_eq!(s.header().minor, 1);
        let recs: Vec<_> = s.records().map(|r| r.expect("record").1).collect();
        assert_eq!(recs[0].samples, 3);
        assert_eq!(recs[0].user.get(1), Some(0x5555_0000_1000));
        assert_eq!(recs[1].user.to_vec(), [0x5555_0000_2000]);
    }

    #[test]
    fn writer_checks_the_announced_count() {
        let mut w = StacksWriter::new(Vec::new(), 1).expect("header");
        let s = Stack {
            samples: 1,
            nanoseconds: 1,
            boundary: None,
            user_truncated: false,
            kernel: &[],
            user: &[1],
        };
        w.stack(&s).expect("one");
        assert!(w.stack(&s).is_err());
        assert!(
            StacksWriter::new(Vec::new(), 2)
                .expect("h")
                .finish()
                .is_err()
        );
    }
}
