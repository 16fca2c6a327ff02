//! The `.text` section of an image: the range gprof walks in line mode, and the bytes the
//! static call graph (`-c`) scans.

use std::path::Path;

use object::{Object, ObjectSection};

use crate::error::{Error, Result};

/// The `.text` section of an image: the address range gprof walks in line mode, and the code
/// bytes `-c` scans for calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextSection {
    /// Address of the first byte.
    pub address: u64,
    /// The section's contents (empty for a `NOBITS` section).
    pub bytes: Vec<u8>,
    /// Size from the section header (the bytes may be missing, but the range is known).
    pub size: u64,
}

impl TextSection {
    /// Reads the `.text` section (or `$CODE$`) of the ELF image `data`; `path` only names it
    /// in errors.
    ///
    /// Returns `None` if the image has no such section, and an error if it cannot be parsed.
    pub fn parse(path: &Path, data: &[u8]) -> Result<Option<Self>> {
        let file = object::File::parse(data).map_err(|e| Error::not_executable(path, e))?;
        let Some(section) = file
            .section_by_name(".text")
            .or_else(|| file.section_by_name("$CODE$"))
        else {
            return Ok(None);
        };
        Ok(Some(TextSection {
            address: section.address(),
            bytes: section.data().map(<[u8]>::to_vec).unwrap_or_default(),
            size: section.size(),
        }))
    }

    /// The byte at `address`, if it lies in the section's contents.
    pub fn byte(&self, address: u64) -> Option<u8> {
        let offset = usize::try_from(address.checked_sub(self.address)?).ok()?;
        self.bytes.get(offset).copied()
    }
}
