//! Raw layouts: the constants and field sizes of the three gmon.out formats, and the byte
//! order every multi-byte field of them is read and written in (one place for both sides).
//!
//! Address width and byte order are properties of the profiled image, not of the gmon file (GNU
//! gprof takes both from the ELF header), so callers pass them in [`ReadOptions`].

/// The four bytes that start a GNU gmon.out file (`GMON_MAGIC` in `<sys/gmon_out.h>`).
pub const GNU_MAGIC: [u8; 4] = *b"gmon";
/// Size of the GNU file header: magic, version, 12 spare bytes (`struct gmon_hdr`).
pub const GNU_HEADER_SIZE: usize = 20;
/// Version word of a 4.4BSD `struct gmonhdr` (`GMONVERSION`).
pub const BSD44_VERSION: u32 = 0x0005_1879;
/// Tag of a histogram record (`GMON_TAG_TIME_HIST`).
pub const TAG_HISTOGRAM: u8 = 0;
/// Tag of a call-graph arc record (`GMON_TAG_CG_ARC`).
pub const TAG_ARC: u8 = 1;
/// Tag of a basic-block count record (`GMON_TAG_BB_COUNT`).
pub const TAG_BASIC_BLOCKS: u8 = 2;
/// Bytes of the dimension (unit name) field of a histogram record.
pub const DIMENSION_LEN: usize = 15;

/// Byte order of every multi-byte field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Endian {
    /// Least significant byte first (x86, most of what exists today).
    #[default]
    Little,
    /// Most significant byte first.
    Big,
}

/// Every multi-byte field of every layout is read and written through these.
impl Endian {
    /// Reads a `u16` in this byte order.
    #[inline]
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    /// Reads a `u32` in this byte order.
    #[inline]
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    /// Reads a 4- or 8-byte address in this byte order.
    #[inline]
    pub(crate) fn address(self, b: &[u8]) -> u64 {
        match *b {
            [a, b, c, d] => u64::from(self.u32([a, b, c, d])),
            [a, b, c, d, e, f, g, h] => match self {
                Endian::Little => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
                Endian::Big => u64::from_be_bytes([a, b, c, d, e, f, g, h]),
            },
            _ => unreachable!("addresses are 4 or 8 bytes"),
        }
    }

    /// Encodes a `u16` in this byte order.
    #[inline]
    pub fn u16_bytes(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// Encodes a `u32` in this byte order.
    #[inline]
    pub fn u32_bytes(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
}

/// An address or address-sized count, encoded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AddressBytes {
    bytes: [u8; 8],
    len: usize,
}

impl AddressBytes {
    pub(crate) fn new(value: u64, size: AddressSize, endian: Endian) -> Self {
        let mut bytes = [0u8; 8];
        let len = size.bytes();
        match (size, endian) {
            (AddressSize::U32, _) => bytes[..4].copy_from_slice(&endian.u32_bytes(value as u32)),
            (AddressSize::U64, Endian::Little) => bytes = value.to_le_bytes(),
            (AddressSize::U64, Endian::Big) => bytes = value.to_be_bytes(),
        }
        AddressBytes { bytes, len }
    }
}

impl std::ops::Deref for AddressBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Width of an address field, which is the image's pointer width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AddressSize {
    /// 4-byte addresses (ELFCLASS32).
    U32,
    /// 8-byte addresses (ELFCLASS64).
    #[default]
    U64,
}

impl AddressSize {
    /// Bytes in one address.
    pub const fn bytes(self) -> usize {
        match self {
            AddressSize::U32 => 4,
            AddressSize::U64 => 8,
        }
    }

    /// Largest address this width can hold.
    pub const fn max(self) -> u64 {
        match self {
            AddressSize::U32 => u32::MAX as u64,
            AddressSize::U64 => u64::MAX,
        }
    }
}

/// One of the three on-disk gmon.out formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// GNU tagged format: `gmon` magic, version, then tagged records.
    Gnu,
    /// 4.4BSD `struct gmonhdr` with version 0x00051879 and a profiling rate.
    Bsd44,
    /// The 4.2/4.3BSD header: low_pc, high_pc and a byte count, nothing else.
    OldBsd,
}

/// Which formats a reader accepts; mirrors gprof's `-O` (`--file-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FormatChoice {
    /// `-O a`: GNU if the file starts with `gmon`, else BSD (4.4 or old, by the version word).
    #[default]
    Auto,
    /// `-O m`: GNU only.
    Gnu,
    /// `-O b`: BSD only, 4.4 or old by the version word.
    Bsd,
    /// `-O 4`: 4.4BSD only.
    Bsd44,
}

/// Where the bytes of a file come from: its format, address width and byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    /// The on-disk format.
    pub format: Format,
    /// Width of address fields.
    pub address_size: AddressSize,
    /// Byte order of multi-byte fields.
    pub endian: Endian,
}

impl Layout {
    /// The GNU format with the given address width and byte order.
    pub const fn gnu(address_size: AddressSize, endian: Endian) -> Self {
        Layout {
            format: Format::Gnu,
            address_size,
            endian,
        }
    }

    /// Bytes of a histogram record after its tag (GNU) or of the whole header (BSD).
    pub const fn histogram_header_size(self) -> usize {
        let a = self.address_size.bytes();
        match self.format {
            // low, high, num_bins, prof_rate, dimension, abbreviation
            Format::Gnu => 2 * a + 4 + 4 + DIMENSION_LEN + 1,
            // low, high, ncnt, version, profrate, 12 spare bytes (FreeBSD's 3 ints)
            Format::Bsd44 => 2 * a + 4 + 4 + 4 + 12,
            // low, high, ncnt: no alignment padding
            Format::OldBsd => 2 * a + 4,
        }
    }

    /// Bytes of one arc (after the tag in the GNU format).
    pub const fn arc_size(self) -> usize {
        let a = self.address_size.bytes();
        match self.format {
            Format::Gnu => 2 * a + 4,
            // BSD's `struct rawarc` holds the count in a `long`.
            Format::Bsd44 | Format::OldBsd => 3 * a,
        }
    }
}

/// How to read a file: what the image says about addresses and byte order, and which formats to
/// accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Width of addresses, from the image's ELF class. Default is 8 bytes.
    pub address_size: AddressSize,
    /// Byte order, from the image's ELF header. Default is little-endian.
    pub endian: Endian,
    /// Which formats to accept. Default is [`FormatChoice::Auto`], as gprof does.
    pub format: FormatChoice,
}

impl ReadOptions {
    /// Options for an image with this address width and byte order, accepting any format.
    pub fn new(address_size: AddressSize, endian: Endian) -> Self {
        ReadOptions {
            address_size,
            endian,
            format: FormatChoice::Auto,
        }
    }

    /// The same options, accepting only the formats of `format`.
    #[must_use]
    pub fn with_format(mut self, format: FormatChoice) -> Self {
        self.format = format;
        self
    }
}
