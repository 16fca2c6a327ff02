//! Writing: the mirror of [`crate::read`], to any `io::Write`.

use std::io::Write;

use crate::error::{Error, ErrorKind, Result};
use crate::layout::{
    AddressBytes, BSD44_VERSION, Format, GNU_MAGIC, Layout, TAG_ARC, TAG_BASIC_BLOCKS,
    TAG_HISTOGRAM,
};
use crate::read::{Arc, Bins, Header, HistogramHeader, Profile, Record};

/// Writes a profile record by record in one [`Layout`].
///
/// Call [`Writer::header`] first, then any records, then [`Writer::finish`]. A BSD file has
/// exactly one histogram, which must come before the arcs; the writer refuses anything a format
/// cannot hold rather than dropping it.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    layout: Layout,
    state: State,
    /// A scratch buffer for encoding bins in bulk.
    buf: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    NoHeader,
    /// BSD: header seen, its spare bytes kept until the histogram supplies the rest.
    BsdPending([u8; 12]),
    Records,
}

impl<W: Write> Writer<W> {
    /// Starts writing `layout` to `out`.
    pub fn new(out: W, layout: Layout) -> Self {
        Writer {
            out,
            layout,
            state: State::NoHeader,
            buf: Vec::new(),
        }
    }

    /// Writes the file header.
    ///
    /// Returns an error if a header was already written, the header's format differs from the
    /// writer's layout, or the output fails.
    pub fn header(&mut self, header: &Header) -> Result<()> {
        if self.state != State::NoHeader {
            return Err(unsupported("a second file header"));
        }
        match (header, self.layout.format) {
            (Header::Gnu { version, spare }, Format::Gnu) => {
                let mut bytes = [0u8; 20];
                bytes[..4].copy_from_slice(&GNU_MAGIC);
                bytes[4..8].copy_from_slice(&self.layout.endian.u32_bytes(*version));
                bytes[8..].copy_from_slice(spare);
                self.put(&bytes)?;
                self.state = State::Records;
            }
            (Header::Bsd44 { spare }, Format::Bsd44) => self.state = State::BsdPending(*spare),
            (Header::OldBsd, Format::OldBsd) => self.state = State::BsdPending([0; 12]),
            _ => return Err(unsupported("a header of another format than the writer's")),
        }
        Ok(())
    }

    /// Writes a histogram record whose counters come from an iterator.
    ///
    /// Returns an error if an address does not fit the address width, the bin count does not
    /// fit the header, the layout cannot hold another histogram, or the output fails.
    pub fn histogram(
        &mut self,
        header: &HistogramHeader,
        bins: impl ExactSizeIterator<Item = u16>,
    ) -> Result<()> {
        self.histogram_header(header, bins.len())?;
        let endian = self.layout.endian;
        let mut bins = bins.peekable();
        while bins.peek().is_some() {
            self.buf.clear();
            self.buf.extend(
                bins.by_ref()
                    .take(32 * 1024)
                    .flat_map(|b| endian.u16_bytes(b)),
            );
            self.out.write_all(&self.buf)?;
        }
        Ok(())
    }

    /// Writes a histogram record whose counters are borrowed from a file, copying them in bulk
    /// when the byte order agrees.
    ///
    /// Returns an error as [`Writer::histogram`] does.
    pub fn histogram_bins(&mut self, header: &HistogramHeader, bins: &Bins<'_>) -> Result<()> {
        if bins.endian() == self.layout.endian {
            self.histogram_header(header, bins.len())?;
            self.put(bins.as_bytes())
        } else {
            self.histogram(header, bins.iter())
        }
    }

    fn histogram_header(&mut self, header: &HistogramHeader, num_bins: usize) -> Result<()> {
        let (low, high) = (self.address(header.low_pc)?, self.address(header.high_pc)?);
        let e = self.layout.endian;
        let mut bytes = Vec::with_capacity(self.layout.histogram_header_size() + 1);
        match self.state {
            State::Records if self.layout.format == Format::Gnu => {
                let n = u32::try_from(num_bins)
                    .map_err(|_| unsupported("more than 2^32 - 1 bins in one histogram"))?;
                bytes.push(TAG_HISTOGRAM);
                bytes.extend_from_slice(&low);
                bytes.extend_from_slice(&high);
                bytes.extend(e.u32_bytes(n));
                bytes.extend(e.u32_bytes(header.prof_rate));
                bytes.extend(header.dimension);
                bytes.push(header.dimension_abbrev);
            }
            State::BsdPending(spare) => {
                let size = self.layout.histogram_header_size();
                let ncnt = u32::try_from(size + 2 * num_bins)
                    .map_err(|_| unsupported("a bsd histogram over 4 GiB"))?;
                bytes.extend_from_slice(&low);
                bytes.extend_from_slice(&high);
                bytes.extend(e.u32_bytes(ncnt));
                if self.layout.format == Format::Bsd44 {
                    bytes.extend(e.u32_bytes(BSD44_VERSION));
                    bytes.extend(e.u32_bytes(header.prof_rate));
                    bytes.extend(spare);
                }
                debug_assert_eq!(bytes.len(), size);
            }
            State::NoHeader => return Err(unsupported("a record before the file header")),
            State::Records => return Err(unsupported("a second histogram in a bsd file")),
        }
        self.state = State::Records;
        self.put(&bytes)
    }

    /// Writes one arc.
    ///
    /// Returns an error if an address or the count does not fit the layout (GNU counts are
    /// 32-bit: wrap them first if that is what you want, as `gprof -s` does), if a BSD file has
    /// no histogram yet, or if the output fails.
    pub fn arc(&mut self, arc: &Arc) -> Result<()> {
        let (from, to) = (self.address(arc.from_pc)?, self.address(arc.self_pc)?);
        let e = self.layout.endian;
        let mut bytes = [0u8; 25];
        let mut len = 0;
        let mut push = |b: &[u8]| {
            bytes[len..len + b.len()].copy_from_slice(b);
            len += b.len();
        };
        match (self.state, self.layout.format) {
            (State::Records, Format::Gnu) => {
                let count = u32::try_from(arc.count)
                    .map_err(|_| unsupported("an arc count above 2^32 - 1 in a gnu file"))?;
                push(&[TAG_ARC]);
                push(&from);
                push(&to);
                push(&e.u32_bytes(count));
            }
            (State::Records, _) => {
                let count = self.address(arc.count)?;
                push(&from);
                push(&to);
                push(&count);
            }
            (State::BsdPending(_), _) => {
                return Err(unsupported("an arc before the bsd histogram"));
            }
            (State::NoHeader, _) => return Err(unsupported("a record before the file header")),
        }
        self.put(&bytes[..len])
    }

    /// Writes a basic-block count record (GNU only).
    ///
    /// Returns an error if the layout is BSD, a value does not fit the address width, or the
    /// output fails.
    pub fn basic_blocks(&mut self, pairs: impl ExactSizeIterator<Item = (u64, u64)>) -> Result<()> {
        if self.state != State::Records || self.layout.format != Format::Gnu {
            return Err(unsupported("basic-block counts outside a gnu file"));
        }
        let n = u32::try_from(pairs.len())
            .map_err(|_| unsupported("more than 2^32 - 1 basic blocks in one record"))?;
        let mut bytes = vec![TAG_BASIC_BLOCKS];
        bytes.extend(self.layout.endian.u32_bytes(n));
        for (address, count) in pairs {
            bytes.extend_from_slice(&self.address(address)?);
            bytes.extend_from_slice(&self.address(count)?);
        }
        self.put(&bytes)
    }

    /// Writes any record as read from a file.
    ///
    /// Returns an error as the method for that kind of record does.
    pub fn record(&mut self, record: &Record<'_>) -> Result<()> {
        match record {
            Record::Histogram(h) => self.histogram_bins(&h.header, &h.bins),
            Record::Arc(a) => self.arc(a),
            Record::BasicBlocks(bb) => self.basic_blocks(bb.iter()),
        }
    }

    /// Completes the file and returns the output.
    ///
    /// A BSD file given no histogram gets an empty one (range 0..0, no bins), since its header
    /// is the histogram's.
    ///
    /// Returns an error if no header was written or the output fails.
    pub fn finish(mut self) -> Result<W> {
        if let State::BsdPending(_) = self.state {
            let empty = HistogramHeader {
                low_pc: 0,
                high_pc: 0,
                prof_rate: crate::read::OLD_BSD_PROF_RATE,
                dimension: crate::read::SECONDS.0,
                dimension_abbrev: crate::read::SECONDS.1,
            };
            self.histogram(&empty, std::iter::empty())?;
        }
        if self.state == State::NoHeader {
            return Err(unsupported("a file without a header"));
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn address(&self, value: u64) -> Result<AddressBytes> {
        if value > self.layout.address_size.max() {
            return Err(unsupported(&format!(
                "{value:#x} does not fit in a {}-byte field",
                self.layout.address_size.bytes()
            )));
        }
        Ok(AddressBytes::new(
            value,
            self.layout.address_size,
            self.layout.endian,
        ))
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(Error::from)
    }
}

/// Writes `profile` again record by record, then any [`Profile::trailing_bytes`]: the result
/// equals the bytes it was read from.
///
/// Returns an error if a record cannot be read or the output fails.
pub fn write_profile<W: Write>(out: W, profile: &Profile<'_>) -> Result<W> {
    let mut w = Writer::new(out, profile.layout());
    w.header(profile.header())?;
    for record in profile.records() {
        w.record(&record?.1)?;
    }
    let mut out = w.finish()?;
    out.write_all(profile.trailing_bytes())?;
    Ok(out)
}

fn unsupported(what: &str) -> Error {
    Error::new(ErrorKind::Unsupported(what.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{AddressSize, Endian, FormatChoice, ReadOptions};
    use crate::test_util::Builder;

    fn round_trip(data: &[u8], size: AddressSize, endian: Endian) {
        let o = ReadOptions::new(size, endian);
        let p = Profile::parse(data, &o).unwrap();
        assert_eq!(write_profile(Vec::new(), &p).unwrap(), data);
    }

    #[test]
    fn every_layout_round_trips() {
        for size in [AddressSize::U32, AddressSize::U64] {
            for endian in [Endian::Little, Endian::Big] {
                let b = || Builder::new(size, endian);
                let mut spare = b()
                    .raw(b"gmon")
                    .u32(1)
                    .raw(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
                spare = spare
                    .hist(0, 8, 100, &[1, 2, 3, 4])
                    .hist(8, 16, 100, &[9; 4]);
                round_trip(
                    &spare.arc(4, 8, 1).bb(&[(1, 2), (3, 4)]).bytes,
                    size,
                    endian,
                );
                round_trip(&b().gnu_header(0).arc(4, 8, 1).bytes, size, endian);
                let mut b44 = b()
                    .bsd44(0x10, 0x20, 1000, &[3; 8])
                    .bsd_arc(0x12, 0x14, 5)
                    .bytes;
                let spare_at = 2 * size.bytes() + 12;
                b44[spare_at..spare_at + 12].copy_from_slice(b"spare bytes!");
                round_trip(&b44, size, endian);
                round_trip(
                    &b().old_bsd(0x10, 0x20, &[7; 8]).bsd_arc(1, 2, 3).bytes,
                    size,
                    endian,
                );
            }
        }
    }

    #[test]
    fn the_writer_refuses_what_a_layout_cannot_hold() {
        let gnu32 = Layout::gnu(AddressSize::U32, Endian::Little);
        let mut w = Writer::new(Vec::new(), gnu32);
        assert!(
            w.arc(&Arc {
                from_pc: 1,
                self_pc: 2,
                count: 3
            })
            .is_err(),
            "arc before header"
        );
        w.header(&Header::Gnu {
            version: 1,
            spare: [0; 12],
        })
        .unwrap();
        assert!(
            w.arc(&Arc {
                from_pc: 1 << 32,
                self_pc: 2,
                count: 3
            })
            .is_err()
        );
        assert!(
            w.arc(&Arc {
                from_pc: 1,
                self_pc: 2,
                count: 1 << 32
            })
            .is_err()
        );
        let bsd = Layout {
            format: Format::OldBsd,
            ..gnu32
        };
        let mut w = Writer::new(Vec::new(), bsd);
        w.header(&Header::OldBsd).unwrap();
        assert!(
            w.arc(&Arc {
                from_pc: 1,
                self_pc: 2,
                count: 3
            })
            .is_err(),
            "arc before histogram"
        );
        assert!(w.basic_blocks([(1, 2)].into_iter()).is_err());
        let h = HistogramHeader {
            low_pc: 0,
            high_pc: 8,
            prof_rate: 100,
            dimension: [0; 15],
            dimension_abbrev: 0,
        };
        w.histogram(&h, [1u16, 2, 3, 4].into_iter()).unwrap();
        assert!(
            w.histogram(&h, [1u16, 2].into_iter()).is_err(),
            "second bsd histogram"
        );
        let out = w.finish().unwrap();
        let p = Profile::parse(
            &out,
            &ReadOptions::new(AddressSize::U32, Endian::Little).with_format(FormatChoice::Bsd),
        )
        .unwrap();
        assert_eq!(p.layout().format, Format::OldBsd);
    }

    #[test]
    fn bins_change_byte_order_when_the_layouts_differ() {
        let data = Builder::new(AddressSize::U64, Endian::Little)
            .gnu_header(1)
            .hist(0, 4, 100, &[0x0102, 0x0304])
            .bytes;
        let p = Profile::parse(&data, &ReadOptions::new(AddressSize::U64, Endian::Little)).unwrap();
        let mut w = Writer::new(Vec::new(), Layout::gnu(AddressSize::U64, Endian::Big));
        w.header(p.header()).unwrap();
        for r in p.records() {
            w.record(&r.unwrap().1).unwrap();
        }
        let big = w.finish().unwrap();
        assert_eq!(&big[big.len() - 4..], &[1, 2, 3, 4]);
    }
}
