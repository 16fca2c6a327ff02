//! Reading: a borrowing parser that yields records without copying histogram bins.
//!
//! The file is longer than 800 lines because of its unit tests (the last third, with their byte
//! builder, at the bottom as everywhere here). The parser itself is one stage: header
//! detection, the cursor and the record iterator all work through one `Cursor`, and splitting
//! them would spread one grammar over several files.

use crate::error::{Error, ErrorKind, Result};
use crate::layout::{
    AddressSize, BSD44_VERSION, DIMENSION_LEN, Endian, Format, FormatChoice, GNU_HEADER_SIZE,
    GNU_MAGIC, Layout, ReadOptions, TAG_ARC, TAG_BASIC_BLOCKS, TAG_HISTOGRAM,
};

/// The file header, less what BSD headers share with the histogram.
///
/// BSD headers also hold the histogram's range and size; those are reported through the first
/// [`Record::Histogram`] so that both families read alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// GNU `struct gmon_hdr`.
    Gnu {
        /// `version`: 1 from any modern glibc, 0 from very old ones.
        version: u32,
        /// `spare`: unused; kept so that writing gives back the same bytes.
        spare: [u8; 12],
    },
    /// 4.4BSD `struct gmonhdr`.
    Bsd44 {
        /// `histcounter_type` and `spare[2]`: unused; kept for byte-exact writing.
        spare: [u8; 12],
    },
    /// 4.2/4.3BSD `struct phdr` (low, high, ncnt).
    OldBsd,
}

/// The profiling rate gprof assumes for old BSD files, which do not store one (its `hertz()`,
/// `CLK_TCK` = 100 on Linux).
pub const OLD_BSD_PROF_RATE: u32 = 100;

/// The histogram's unit name and abbreviation as glibc writes them.
pub const SECONDS: ([u8; DIMENSION_LEN], u8) = (*b"seconds\0\0\0\0\0\0\0\0", b's');

/// The fixed part of a histogram record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistogramHeader {
    /// `lpc`: address of the first byte bin 0 covers.
    pub low_pc: u64,
    /// `hpc`: end of the covered range (exclusive).
    pub high_pc: u64,
    /// `prof_rate`: samples per second. For old BSD files, which do not store it, gprof's
    /// default of [`OLD_BSD_PROF_RATE`].
    pub prof_rate: u32,
    /// `dimen`: the unit, NUL padded (`seconds`); synthesised for BSD files.
    pub dimension: [u8; DIMENSION_LEN],
    /// `dimen_abbrev`: the unit's one-letter abbreviation (`s`).
    pub dimension_abbrev: u8,
}

impl HistogramHeader {
    /// The dimension as text, up to its first NUL (at most 15 bytes, as gprof reads it).
    pub fn dimension_str(&self) -> String {
        dimension_text(&self.dimension)
    }
}

/// A dimension field as text, up to its first NUL.
pub(crate) fn dimension_text(d: &[u8; DIMENSION_LEN]) -> String {
    let end = d.iter().position(|&b| b == 0).unwrap_or(DIMENSION_LEN);
    String::from_utf8_lossy(&d[..end]).into_owned()
}

/// A histogram record: program-counter samples over an address range.
#[derive(Debug, Clone, Copy)]
pub struct Histogram<'data> {
    /// Range, rate and unit.
    pub header: HistogramHeader,
    /// The counters, borrowed from the file.
    pub bins: Bins<'data>,
}

/// Histogram counters borrowed from the file: `u16` each in the file's byte order.
#[derive(Clone, Copy)]
pub struct Bins<'data> {
    bytes: &'data [u8],
    endian: Endian,
}

impl std::fmt::Debug for Bins<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bins").field("len", &self.len()).finish()
    }
}

impl<'data> Bins<'data> {
    /// Wraps `bytes` as counters in `endian` order; an odd last byte is not a counter and is
    /// left out.
    pub fn new(bytes: &'data [u8], endian: Endian) -> Self {
        Bins {
            bytes: &bytes[..bytes.len() & !1],
            endian,
        }
    }

    /// Number of bins.
    pub fn len(&self) -> usize {
        self.bytes.len() / 2
    }

    /// Whether there are no bins.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The counter of bin `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<u16> {
        let b = self.bytes.get(index * 2..index * 2 + 2)?;
        Some(self.endian.u16([b[0], b[1]]))
    }

    /// The raw bytes, in the file's byte order.
    pub fn as_bytes(&self) -> &'data [u8] {
        self.bytes
    }

    /// Byte order of the counters.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Iterates over the counters.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u16> + 'data {
        let endian = self.endian;
        self.bytes
            .chunks_exact(2)
            .map(move |b| endian.u16([b[0], b[1]]))
    }

    /// Adds every counter to the matching element of `totals` (which must be as long).
    ///
    /// This is the hot loop of summing and of histogram assignment, so it is monomorphised per
    /// byte order rather than branching per bin.
    pub fn add_to(&self, totals: &mut [u64]) {
        fn add(bytes: &[u8], totals: &mut [u64], read: fn([u8; 2]) -> u16) {
            for (total, b) in totals.iter_mut().zip(bytes.chunks_exact(2)) {
                *total += u64::from(read([b[0], b[1]]));
            }
        }
        match self.endian {
            Endian::Little => add(self.bytes, totals, u16::from_le_bytes),
            Endian::Big => add(self.bytes, totals, u16::from_be_bytes),
        }
    }
}

/// A call-graph arc: `count` calls from a site in the caller to the callee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Arc {
    /// `from_pc`: an address inside the caller (glibc writes the return address, quantised).
    pub from_pc: u64,
    /// `self_pc`: an address inside the callee (just after its `mcount` call).
    pub self_pc: u64,
    /// `count`: number of traversals. 32-bit in GNU files, address-sized in BSD files.
    pub count: u64,
}

/// A basic-block count record: (address, count) pairs, both address-sized.
#[derive(Debug, Clone, Copy)]
pub struct BasicBlocks<'data> {
    bytes: &'data [u8],
    address_size: AddressSize,
    endian: Endian,
}

impl<'data> BasicBlocks<'data> {
    /// Number of (address, count) pairs.
    pub fn len(&self) -> usize {
        self.bytes.len() / (2 * self.address_size.bytes())
    }

    /// Whether the record has no pairs.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Iterates over the (address, count) pairs.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u64, u64)> + 'data {
        let (a, endian) = (self.address_size.bytes(), self.endian);
        self.bytes
            .chunks_exact(2 * a)
            .map(move |pair| (endian.address(&pair[..a]), endian.address(&pair[a..])))
    }
}

/// One record of a profile.
#[derive(Debug, Clone, Copy)]
pub enum Record<'data> {
    /// Tag 0, or the header and samples of a BSD file.
    Histogram(Histogram<'data>),
    /// Tag 1, or one BSD `rawarc`.
    Arc(Arc),
    /// Tag 2.
    BasicBlocks(BasicBlocks<'data>),
}

/// A parsed profile: the header, and records read lazily from the borrowed bytes.
#[derive(Debug, Clone, Copy)]
pub struct Profile<'data> {
    data: &'data [u8],
    layout: Layout,
    header: Header,
    /// Offset of the first record (GNU) or of the samples (BSD).
    body: usize,
    /// Where the records end: the file's end, less a partial last BSD arc.
    end: usize,
}

impl<'data> Profile<'data> {
    /// Parses the header of `data` and detects its format as GNU gprof does.
    ///
    /// Records are checked as they are iterated with [`Profile::records`]; use
    /// [`Profile::validate`] to check the whole file at once.
    ///
    /// Returns an error if the file is shorter than a header, the header is not one the options
    /// accept, or (BSD) the header's sample count cannot be right.
    pub fn parse(data: &'data [u8], options: &ReadOptions) -> Result<Self> {
        let endian = options.endian;
        let a = options.address_size.bytes();
        // gprof first reads 20 bytes whatever the format; fewer is always an error.
        if data.len() < GNU_HEADER_SIZE {
            return Err(Error::at(
                0,
                ErrorKind::FileTooShort {
                    len: data.len() as u64,
                },
            ));
        }
        let is_gnu = data[..4] == GNU_MAGIC;
        let format = match options.format {
            FormatChoice::Auto | FormatChoice::Gnu if is_gnu => Format::Gnu,
            FormatChoice::Gnu => return Err(Error::at(0, ErrorKind::BadMagic)),
            FormatChoice::Auto | FormatChoice::Bsd | FormatChoice::Bsd44 => {
                let version_at = 2 * a + 4;
                let is_44 = data
                    .get(version_at..version_at + 4)
                    .is_some_and(|b| endian.u32([b[0], b[1], b[2], b[3]]) == BSD44_VERSION);
                // gprof reads the version word whatever the header turns out to be.
                if data.len() < version_at + 4 {
                    return Err(Error::at(
                        0,
                        ErrorKind::FileTooShort {
                            len: data.len() as u64,
                        },
                    ));
                }
                match (is_44, options.format) {
                    (true, _) => Format::Bsd44,
                    (false, FormatChoice::Bsd44) => {
                        let b = &data[version_at..version_at + 4];
                        let found = endian.u32([b[0], b[1], b[2], b[3]]);
                        return Err(Error::at(version_at as u64, ErrorKind::NotBsd44 { found }));
                    }
                    (false, _) => Format::OldBsd,
                }
            }
        };
        let layout = Layout {
            format,
            address_size: options.address_size,
            endian,
        };
        let mut cur = Cursor {
            data,
            pos: 0,
            layout,
            gnu_version: 1,
        };
        let mut end = data.len();
        let header = match format {
            Format::Gnu => {
                cur.pos = 4;
                let version = cur.u32("file header")?;
                if version > 1 {
                    return Err(Error::at(4, ErrorKind::UnsupportedVersion(version)));
                }
                let spare = cur.array::<12>("file header")?;
                Header::Gnu { version, spare }
            }
            Format::Bsd44 | Format::OldBsd => {
                let bsd = cur.bsd_header()?;
                // gprof stops at a partial last arc without a word; we stop there too, and keep
                // the bytes (see `trailing_bytes`) so that nothing is lost.
                if let Some(arc_bytes) = data.len().checked_sub(bsd.ncnt as usize) {
                    end -= arc_bytes % layout.arc_size();
                }
                match format {
                    Format::Bsd44 => Header::Bsd44 { spare: bsd.spare },
                    _ => Header::OldBsd,
                }
            }
        };
        let body = match format {
            Format::Gnu => GNU_HEADER_SIZE,
            _ => 0,
        };
        Ok(Profile {
            data,
            layout,
            header,
            body,
            end,
        })
    }

    /// The format, address width and byte order the file was read with.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The file header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The bytes this profile was parsed from.
    pub fn data(&self) -> &'data [u8] {
        self.data
    }

    /// Bytes after the last whole record that are not a record: the start of an arc that a BSD
    /// file was cut off in. gprof ignores them silently; they are empty for GNU files, whose
    /// truncated records are errors (as in gprof).
    pub fn trailing_bytes(&self) -> &'data [u8] {
        &self.data[self.end..]
    }

    /// Iterates over the records in file order, each with its byte offset.
    ///
    /// After the first error the iterator ends.
    pub fn records(&self) -> Records<'data> {
        Records {
            cur: Cursor {
                data: &self.data[..self.end],
                pos: self.body,
                layout: self.layout,
                gnu_version: match self.header {
                    Header::Gnu { version, .. } => version,
                    _ => 1,
                },
            },
            bsd_header_done: false,
            failed: false,
        }
    }

    /// Reads every record, returning the first error.
    pub fn validate(&self) -> Result<()> {
        self.records().try_for_each(|r| r.map(drop))
    }
}

/// Iterator over the records of a [`Profile`], yielding `(offset, record)`.
#[derive(Debug, Clone)]
pub struct Records<'data> {
    cur: Cursor<'data>,
    bsd_header_done: bool,
    failed: bool,
}

impl<'data> Iterator for Records<'data> {
    type Item = Result<(u64, Record<'data>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let start = self.cur.pos as u64;
        let item = match self.cur.layout.format {
            Format::Gnu => {
                if self.cur.pos >= self.cur.data.len() {
                    return None;
                }
                self.cur.gnu_record()
            }
            Format::Bsd44 | Format::OldBsd if !self.bsd_header_done => {
                self.bsd_header_done = true;
                self.cur.bsd_histogram().map(Record::Histogram)
            }
            Format::Bsd44 | Format::OldBsd => {
                if self.cur.pos >= self.cur.data.len() {
                    return None;
                }
                self.cur.bsd_arc().map(Record::Arc)
            }
        };
        if item.is_err() {
            self.failed = true;
        }
        Some(item.map(|r| (start, r)))
    }
}

/// The fields of a BSD header.
struct BsdHeader {
    low_pc: u64,
    high_pc: u64,
    ncnt: u32,
    prof_rate: u32,
    spare: [u8; 12],
}

/// A position in the data, with the layout to read it by.
#[derive(Debug, Clone)]
struct Cursor<'data> {
    data: &'data [u8],
    pos: usize,
    layout: Layout,
    /// The GNU header's version; version 0 laid out basic-block records differently.
    gnu_version: u32,
}

impl<'data> Cursor<'data> {
    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Takes `n` bytes, or fails naming `what` and the offset where it started.
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'data [u8]> {
        if self.remaining() < n {
            return Err(Error::at(
                self.pos as u64,
                ErrorKind::Truncated {
                    what,
                    needed: n as u64,
                    remaining: self.remaining() as u64,
                },
            ));
        }
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let bytes = self.take(N, what)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(self.layout.endian.u32(self.array(what)?))
    }

    fn address(&mut self, what: &'static str) -> Result<u64> {
        let bytes = self.take(self.layout.address_size.bytes(), what)?;
        Ok(self.layout.endian.address(bytes))
    }

    fn gnu_record(&mut self) -> Result<Record<'data>> {
        let tag_at = self.pos as u64;
        let tag = self.data[self.pos];
        self.pos += 1;
        match tag {
            TAG_HISTOGRAM => {
                let header_at = self.pos;
                // Check the fixed part as a whole so a truncation names the record, not a field.
                self.take(
                    self.layout.histogram_header_size(),
                    "histogram record header",
                )?;
                self.pos = header_at;
                let low_pc = self.address("histogram record header")?;
                let high_pc = self.address("histogram record header")?;
                let num_bins = self.u32("histogram record header")?;
                let prof_rate = self.u32("histogram record header")?;
                let dimension = self.array::<DIMENSION_LEN>("histogram record header")?;
                let [dimension_abbrev] = self.array::<1>("histogram record header")?;
                let header = HistogramHeader {
                    low_pc,
                    high_pc,
                    prof_rate,
                    dimension,
                    dimension_abbrev,
                };
                let bins = self.bins(u64::from(num_bins), header_at as u64)?;
                Ok(Record::Histogram(Histogram { header, bins }))
            }
            TAG_ARC => {
                // Arcs dominate large files: one bounds check, then fixed offsets.
                let b = self.take(self.layout.arc_size(), "call-graph arc")?;
                let (a, e) = (self.layout.address_size.bytes(), self.layout.endian);
                let count = e.u32([b[2 * a], b[2 * a + 1], b[2 * a + 2], b[2 * a + 3]]);
                Ok(Record::Arc(Arc {
                    from_pc: e.address(&b[..a]),
                    self_pc: e.address(&b[a..2 * a]),
                    count: u64::from(count),
                }))
            }
            TAG_BASIC_BLOCKS if self.gnu_version == 0 => Err(Error::at(
                tag_at,
                ErrorKind::Unsupported(
                    "basic-block records of version 0 files (an older layout)".into(),
                ),
            )),
            TAG_BASIC_BLOCKS => {
                let n_at = self.pos as u64;
                let n = u64::from(self.u32("basic-block record")?);
                let pair = 2 * self.layout.address_size.bytes() as u64;
                let remaining = self.remaining() as u64;
                if n * pair > remaining {
                    return Err(Error::at(
                        n_at,
                        ErrorKind::Truncated {
                            what: "basic-block record",
                            needed: n * pair,
                            remaining,
                        },
                    ));
                }
                let bytes = self.take((n * pair) as usize, "basic-block record")?;
                let (address_size, endian) = (self.layout.address_size, self.layout.endian);
                Ok(Record::BasicBlocks(BasicBlocks {
                    bytes,
                    address_size,
                    endian,
                }))
            }
            other => Err(Error::at(tag_at, ErrorKind::BadTag(other))),
        }
    }

    /// Borrows `count` bins, refusing counts the file cannot back before touching memory.
    fn bins(&mut self, count: u64, header_at: u64) -> Result<Bins<'data>> {
        let remaining = self.remaining() as u64;
        if count * 2 > remaining {
            return Err(Error::at(
                header_at,
                ErrorKind::TooManyBins {
                    claimed: count,
                    remaining,
                },
            ));
        }
        let bytes = self.take((count * 2) as usize, "histogram bins")?;
        Ok(Bins::new(bytes, self.layout.endian))
    }

    fn bsd_header(&mut self) -> Result<BsdHeader> {
        let size = self.layout.histogram_header_size();
        if self.remaining() < size {
            return Err(Error::at(
                self.pos as u64,
                ErrorKind::Truncated {
                    what: "bsd header",
                    needed: size as u64,
                    remaining: self.remaining() as u64,
                },
            ));
        }
        let low_pc = self.address("bsd header")?;
        let high_pc = self.address("bsd header")?;
        let ncnt_at = self.pos as u64;
        let ncnt = self.u32("bsd header")?;
        let (prof_rate, spare) = match self.layout.format {
            Format::Bsd44 => {
                let _version = self.u32("bsd header")?;
                (self.u32("bsd header")?, self.array::<12>("bsd header")?)
            }
            _ => (OLD_BSD_PROF_RATE, [0; 12]),
        };
        if (ncnt as usize) < size {
            return Err(Error::at(
                ncnt_at,
                ErrorKind::NotGmon("the header's byte count is smaller than the header"),
            ));
        }
        if !(ncnt as usize - size).is_multiple_of(2) {
            return Err(Error::at(
                ncnt_at,
                ErrorKind::NotGmon("the header's byte count leaves half a sample"),
            ));
        }
        if low_pc > high_pc {
            return Err(Error::at(0, ErrorKind::NotGmon("low_pc is above high_pc")));
        }
        Ok(BsdHeader {
            low_pc,
            high_pc,
            ncnt,
            prof_rate,
            spare,
        })
    }

    fn bsd_histogram(&mut self) -> Result<Histogram<'data>> {
        self.pos = 0;
        let h = self.bsd_header()?;
        let count = (h.ncnt as usize - self.layout.histogram_header_size()) / 2;
        let bins = self.bins(count as u64, 0)?;
        let header = HistogramHeader {
            low_pc: h.low_pc,
            high_pc: h.high_pc,
            prof_rate: h.prof_rate,
            dimension: SECONDS.0,
            dimension_abbrev: SECONDS.1,
        };
        Ok(Histogram { header, bins })
    }

    fn bsd_arc(&mut self) -> Result<Arc> {
        let b = self.take(self.layout.arc_size(), "call-graph arc")?;
        let (a, e) = (self.layout.address_size.bytes(), self.layout.endian);
        Ok(Arc {
            from_pc: e.address(&b[..a]),
            self_pc: e.address(&b[a..2 * a]),
            count: e.address(&b[2 * a..3 * a]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::Builder;

    const LE64: ReadOptions = ReadOptions {
        address_size: AddressSize::U64,
        endian: Endian::Little,
        format: FormatChoice::Auto,
    };

    fn opts(size: AddressSize, endian: Endian) -> ReadOptions {
        ReadOptions::new(size, endian)
    }

    fn records<'a>(data: &'a [u8], o: &ReadOptions) -> Result<Vec<(u64, Record<'a>)>> {
        Profile::parse(data, o)?.records().collect()
    }

    fn err(data: &[u8], o: &ReadOptions) -> Error {
        match Profile::parse(data, o).and_then(|p| p.validate()) {
            Ok(()) => panic!("expected an error"),
            Err(e) => e,
        }
    }

    #[test]
    fn gnu_records_in_every_width_and_order() {
        for size in [AddressSize::U32, AddressSize::U64] {
            for endian in [Endian::Little, Endian::Big] {
                let data = Builder::new(size, endian)
                    .gnu_header(1)
                    .hist(0x1000, 0x1010, 100, &[1, 2, 0, 65535])
                    .arc(0x1004, 0x100c, 7)
                    .bb(&[(0x1002, 3)])
                    .bytes;
                let recs = records(&data, &opts(size, endian)).unwrap();
                assert_eq!(recs.len(), 3);
                let Record::Histogram(h) = recs[0].1 else {
                    panic!()
                };
                assert_eq!(recs[0].0, 20);
                assert_eq!(
                    (h.header.low_pc, h.header.high_pc, h.header.prof_rate),
                    (0x1000, 0x1010, 100)
                );
                assert_eq!(h.header.dimension_str(), "seconds");
                assert_eq!(h.bins.iter().collect::<Vec<_>>(), [1, 2, 0, 65535]);
                let Record::Arc(a) = recs[1].1 else { panic!() };
                assert_eq!(
                    a,
                    Arc {
                        from_pc: 0x1004,
                        self_pc: 0x100c,
                        count: 7
                    }
                );
                let arc_at = 20 + 1 + 2 * size.bytes() as u64 + 24 + 8;
                assert_eq!(recs[1].0, arc_at);
                let Record::BasicBlocks(bb) = recs[2].1 else {
                    panic!()
                };
                assert_eq!(bb.iter().collect::<Vec<_>>(), [(0x1002, 3)]);
            }
        }
    }

    #[test]
    fn bsd_headers_are_detected_by_the_version_word() {
        let b44 = Builder::new(AddressSize::U64, Endian::Little)
            .bsd44(0x400000, 0x400008, 1000, &[5, 6])
            .bsd_arc(0x400002, 0x400004, 1 << 40)
            .bytes;
        let p = Profile::parse(&b44, &LE64).unwrap();
        assert_eq!(p.layout().format, Format::Bsd44);
        let recs: Vec<_> = p.records().collect::<Result<_>>().unwrap();
        let Record::Histogram(h) = recs[0].1 else {
            panic!()
        };
        assert_eq!((h.header.prof_rate, h.bins.len()), (1000, 2));
        let Record::Arc(a) = recs[1].1 else { panic!() };
        assert_eq!((recs[1].0, a.count), (44, 1 << 40));

        let old = Builder::new(AddressSize::U32, Endian::Little)
            .old_bsd(0x1000, 0x1004, &[9])
            .bsd_arc(1, 2, 3)
            .bytes;
        let p = Profile::parse(&old, &opts(AddressSize::U32, Endian::Little)).unwrap();
        assert_eq!(
            (p.layout().format, *p.header()),
            (Format::OldBsd, Header::OldBsd)
        );
        let recs: Vec<_> = p.records().collect::<Result<_>>().unwrap();
        let Record::Histogram(h) = recs[0].1 else {
            panic!()
        };
        assert_eq!(
            (h.header.prof_rate, h.bins.get(0)),
            (OLD_BSD_PROF_RATE, Some(9))
        );
        assert_eq!(recs[1].0, 14);
    }

    #[test]
    fn format_choice_follows_gprofs_o_option() {
        let gnu = Builder::new(AddressSize::U64, Endian::Little)
            .gnu_header(1)
            .bytes;
        let old = Builder::new(AddressSize::U64, Endian::Little)
            .old_bsd(0, 8, &[0; 4])
            .bytes;
        let o = |f| LE64.with_format(f);
        assert!(matches!(
            err(&old, &o(FormatChoice::Gnu)).kind(),
            ErrorKind::BadMagic
        ));
        assert!(matches!(
            err(&old, &o(FormatChoice::Bsd44)).kind(),
            ErrorKind::NotBsd44 { found: 0 }
        ));
        assert_eq!(
            Profile::parse(&old, &o(FormatChoice::Bsd))
                .unwrap()
                .layout()
                .format,
            Format::OldBsd
        );
        // A GNU file read as BSD: "gmon" as low_pc is above the spare bytes as high_pc.
        let gnu_arc = Builder::new(AddressSize::U64, Endian::Little)
            .gnu_header(1)
            .arc(1, 2, 3)
            .bytes;
        let e = err(&gnu_arc, &o(FormatChoice::Bsd));
        assert!(matches!(e.kind(), ErrorKind::NotGmon(_)), "{e}");
        // gprof reads a 64-bit BSD header's version word before deciding, so 20 bytes are short.
        let e = err(&gnu, &o(FormatChoice::Bsd));
        assert!(
            matches!(e.kind(), ErrorKind::FileTooShort { len: 20 }),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_offset_and_what_was_expected() {
        let b = || Builder::new(AddressSize::U64, Endian::Little).gnu_header(1);
        let e = err(&b().bytes[..12], &LE64);
        assert_eq!(
            e.to_string(),
            "file too short to be a gmon file (12 bytes) (at offset 0x0)"
        );
        let e = err(
            &Builder::new(AddressSize::U64, Endian::Little)
                .gnu_header(2)
                .bytes,
            &LE64,
        );
        assert_eq!(
            e.to_string(),
            "unsupported gmon version 2 (versions 0 and 1 are known) (at offset 0x4)"
        );
        let e = err(&b().u8(7).bytes, &LE64);
        assert_eq!(
            e.to_string(),
            "found bad tag 7 (file corrupted?) (at offset 0x14)"
        );
        let e = err(&b().arc(1, 2, 3).bytes[..30], &LE64);
        assert_eq!(
            e.to_string(),
            "unexpected end of file in call-graph arc: 20 bytes needed but 9 remain (at offset 0x15)"
        );
        // A header claiming 2^32 - 1 bins in a tiny file is refused before any allocation.
        let mut hostile = b().hist(0, 16, 100, &[]).bytes;
        hostile[37..41].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = err(
            &hostile.iter().copied().chain([0; 12]).collect::<Vec<_>>(),
            &LE64,
        );
        assert_eq!(
            e.with_path("gmon.out").to_string(),
            "gmon.out: histogram record claims 4294967295 bins but 12 bytes remain (at offset 0x15)"
        );
        let e = err(&b().u8(2).u32(u32::MAX).bytes, &LE64);
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Truncated {
                    what: "basic-block record",
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.offset(), Some(21));
    }

    #[test]
    fn bsd_headers_that_cannot_be_right_are_refused() {
        let b = || Builder::new(AddressSize::U64, Endian::Little);
        let small = b().addr(0).addr(8).u32(4).raw(&[0; 8]).bytes;
        assert!(matches!(err(&small, &LE64).kind(), ErrorKind::NotGmon(_)));
        let odd = b().addr(0).addr(8).u32(21).raw(&[0; 8]).bytes;
        assert!(matches!(err(&odd, &LE64).kind(), ErrorKind::NotGmon(_)));
        let reversed = b().old_bsd(8, 0, &[0; 2]).bytes;
        assert!(matches!(
            err(&reversed, &LE64).kind(),
            ErrorKind::NotGmon(_)
        ));
        let mut huge = b().old_bsd(0, 8, &[0; 2]).bytes;
        huge[16..20].copy_from_slice(&(u32::MAX - 1).to_le_bytes());
        let e = err(&huge, &LE64);
        assert!(matches!(e.kind(), ErrorKind::TooManyBins { .. }), "{e}");
    }

    #[test]
    fn the_iterator_stops_after_an_error() {
        let mut data = Builder::new(AddressSize::U64, Endian::Little)
            .gnu_header(1)
            .u8(9)
            .bytes;
        data.extend(
            Builder::new(AddressSize::U64, Endian::Little)
                .arc(1, 2, 3)
                .bytes,
        );
        let p = Profile::parse(&data, &LE64).unwrap();
        let mut it = p.records();
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }
}
