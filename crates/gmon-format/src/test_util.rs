//! A tiny byte builder for hand-made gmon files in unit tests.

use crate::layout::{AddressSize, BSD44_VERSION, Endian};

/// Appends fields in one address width and byte order.
pub(crate) struct Builder {
    pub bytes: Vec<u8>,
    size: AddressSize,
    endian: Endian,
}

impl Builder {
    pub fn new(size: AddressSize, endian: Endian) -> Self {
        Builder {
            bytes: Vec::new(),
            size,
            endian,
        }
    }

    pub fn u8(mut self, v: u8) -> Self {
        self.bytes.push(v);
        self
    }

    pub fn u16(mut self, v: u16) -> Self {
        self.bytes.extend(self.endian.u16_bytes(v));
        self
    }

    pub fn u32(mut self, v: u32) -> Self {
        self.bytes.extend(self.endian.u32_bytes(v));
        self
    }

    pub fn addr(mut self, v: u64) -> Self {
        match (self.size, self.endian) {
            (AddressSize::U32, e) => self.bytes.extend(e.u32_bytes(v as u32)),
            (AddressSize::U64, Endian::Little) => self.bytes.extend(v.to_le_bytes()),
            (AddressSize::U64, Endian::Big) => self.bytes.extend(v.to_be_bytes()),
        }
        self
    }

    pub fn raw(mut self, b: &[u8]) -> Self {
        self.bytes.extend_from_slice(b);
        self
    }

    pub fn gnu_header(self, version: u32) -> Self {
        self.raw(b"gmon").u32(version).raw(&[0; 12])
    }

    pub fn hist(self, low: u64, high: u64, rate: u32, bins: &[u16]) -> Self {
        let b = self
            .u8(0)
            .addr(low)
            .addr(high)
            .u32(bins.len() as u32)
            .u32(rate);
        let b = b.raw(b"seconds\0\0\0\0\0\0\0\0").u8(b's');
        bins.iter().fold(b, |b, &v| b.u16(v))
    }

    pub fn arc(self, from: u64, to: u64, count: u32) -> Self {
        self.u8(1).addr(from).addr(to).u32(count)
    }

    pub fn bb(self, pairs: &[(u64, u64)]) -> Self {
        let b = self.u8(2).u32(pairs.len() as u32);
        pairs.iter().fold(b, |b, &(a, c)| b.addr(a).addr(c))
    }

    pub fn bsd44(self, low: u64, high: u64, rate: u32, bins: &[u16]) -> Self {
        let header = 2 * self.size.bytes() + 24;
        let ncnt = (header + 2 * bins.len()) as u32;
        let b = self
            .addr(low)
            .addr(high)
            .u32(ncnt)
            .u32(BSD44_VERSION)
            .u32(rate)
            .raw(&[0; 12]);
        bins.iter().fold(b, |b, &v| b.u16(v))
    }

    pub fn old_bsd(self, low: u64, high: u64, bins: &[u16]) -> Self {
        let header = 2 * self.size.bytes() + 4;
        let ncnt = (header + 2 * bins.len()) as u32;
        let b = self.addr(low).addr(high).u32(ncnt);
        bins.iter().fold(b, |b, &v| b.u16(v))
    }

    pub fn bsd_arc(self, from: u64, to: u64, count: u64) -> Self {
        self.addr(from).addr(to).addr(count)
    }
}
