//! The per-instruction view (SLEEPY's EIP view): where each sample was taken — its stack's
//! innermost frame, an instruction's own address — as an address of its object (the ELF
//! address `objdump -d` prints, so instances loaded at other places add up; the kernel's own
//! address for kernel code), with its function, its source line from the object's DWARF line
//! tables, and the samples taken there.

use std::collections::BTreeMap;
use std::path::PathBuf;

use profile_model::Side as ModelSide;

use super::layout::{function_label, printed_name};
use super::state::{Builder, What};
use crate::lines::SourceLines;

/// One sampled instruction of a seamless profile ([`super::Seamless::instructions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Instruction {
    /// The label of its function, as the model's (`137u`, `make/u`, `kernel`).
    pub label: String,
    /// Its function's name as the model prints it, or the pseudo-function of code no symbol
    /// names (`[libc.so.6]`, `[unknown]`).
    pub function: String,
    /// User or kernel code.
    pub side: ModelSide,
    /// Its address: in its object's ELF file for user code, the kernel's for kernel code;
    /// `None` in a pseudo-function (no symbol table placed it).
    pub address: Option<u64>,
    /// How far it is from its function's start.
    pub offset: u64,
    /// The object file it is in (user code with a symbol table only).
    pub object: Option<ObjectFile>,
    /// Its source file and line, once [`add_sources`] found them in the object's DWARF line
    /// tables.
    pub source: Option<(String, u64)>,
    /// The samples taken there.
    pub samples: u64,
}

/// An object file that instructions are in, as the merge found it, and how to read it
/// again for its line tables.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectFile {
    /// Where it was found.
    pub path: PathBuf,
    /// Its separate debug file, when its symbols came from one.
    debug_file: Option<PathBuf>,
    /// The build-id recorded for it, which a file read again must still have.
    build_id: Option<Vec<u8>>,
    /// Whether `path` is the path the process had it at (read without following a link).
    recorded: bool,
}

impl ObjectFile {
    /// The DWARF line tables of the object: of its separate debug file when its symbols came
    /// from one, else of the object itself (a file that no longer has the recorded build-id
    /// gives none).
    fn source_lines(&self) -> Option<SourceLines> {
        let recorded = self.recorded.then_some(&self.path);
        self.debug_file.iter().chain([&self.path]).find_map(|path| {
            let data = if Some(path) == recorded {
                crate::input::read_recorded(path, crate::input::IMAGE_MAX_BYTES)
            } else {
                crate::input::read_input(path, crate::input::IMAGE_MAX_BYTES)
            }
            .ok()?;
            if self.build_id.is_some() && build_id_of(&data) != self.build_id {
                return None;
            }
            SourceLines::parse(path, &data).ok().flatten()
        })
    }
}

/// Fills the source lines of `instructions` from their objects' DWARF line tables, reading
/// each object once (so the instructions of many windows summed cost one read).
pub fn add_sources(instructions: &mut [Instruction]) {
    let mut lines: BTreeMap<ObjectFile, Option<SourceLines>> = BTreeMap::new();
    for i in instructions.iter_mut() {
        let (Some(object), Some(address)) = (&i.object, i.address) else {
            continue;
        };
        let lines = (lines.entry(object.clone())).or_insert_with(|| object.source_lines());
        i.source = (lines.as_ref())
            .and_then(|l| l.nearest(address))
            .map(|n| (String::from_utf8_lossy(&n.file).into_owned(), n.line));
    }
}

impl Builder {
    /// The stacks' innermost frames as instructions (empty unless asked for), without their
    /// source lines ([`add_sources`]).
    pub(super) fn instructions(&self) -> Vec<Instruction> {
        let mut out = Vec::with_capacity(self.leaves.len());
        for (&(region, symbol, offset), &samples) in &self.leaves {
            let r = &self.regions[region];
            let (side, label) = function_label(&self.spaces[r.space], r.side, self.options.labels);
            let placed = symbol.zip(self.table_of(&r.what)).map(|(i, table)| {
                let (name, address, _) = table.symbol(i);
                (printed_name(name, self.options.demangle), address + offset)
            });
            let (function, address, offset) = match placed {
                Some((name, address)) => (name.into_owned(), Some(address), offset),
                None => (
                    String::from_utf8_lossy(&r.pseudo_name).into_owned(),
                    None,
                    0,
                ),
            };
            let object = match (&r.what, address) {
                (What::Object(o), Some(_)) => self.object_file(*o),
                _ => None,
            };
            out.push(Instruction {
                label,
                function,
                side,
                address,
                offset,
                object,
                source: None,
                samples,
            });
        }
        out
    }

    /// Object `o` as found, with what reading it again takes.
    fn object_file(&self, o: usize) -> Option<ObjectFile> {
        let loaded = self.objects[o].as_ref()?;
        let (recorded, build_id) = (self.object_index.iter()).find(|&(_, &v)| v == o)?.0;
        Some(ObjectFile {
            path: loaded.path.clone(),
            debug_file: loaded.symbols_from.clone(),
            build_id: build_id.clone(),
            recorded: loaded.path.as_os_str().as_encoded_bytes() == recorded.as_slice(),
        })
    }
}

/// The build-id of the ELF image `data`, if it has one.
fn build_id_of(data: &[u8]) -> Option<Vec<u8>> {
    use object::Object;
    let file = object::File::parse(data).ok()?;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}
