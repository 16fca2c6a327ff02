//! The merge's state: the objects and kernel symbol tables loaded, the regions (a symbol
//! table placed for one process and side) and address spaces made, and every sample, arc and
//! stack as resolved locations. `merge` fills it, `resolve` finds the locations, `layout`
//! places them.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use gmon_format::{BoundaryKind, HistogramUnit, MeasurementInfo};

use super::SeamlessOptions;
use super::objects::{LoadedObject, ObjectCache};
use crate::kallsyms::KernelTable;
use crate::symbols::SymbolTable;

/// The merge in progress: the objects and kernel symbol tables loaded, the regions and address
/// spaces made, and every histogram hit, arc and stack as resolved locations, until
/// `layout` places them.
#[derive(Debug, Default)]
pub(super) struct Builder {
    pub(super) options: SeamlessOptions,
    pub(super) dir: PathBuf,
    pub(super) objects: Vec<Option<Arc<LoadedObject>>>,
    /// Objects read by earlier merges of the same run (other windows), shared.
    pub(super) cache: Option<Arc<ObjectCache>>,
    pub(super) object_index: BTreeMap<(Vec<u8>, Option<Vec<u8>>), usize>,
    pub(super) kernels: Vec<Option<(Arc<KernelTable>, PathBuf)>>,
    pub(super) kernel_index: BTreeMap<String, usize>,
    pub(super) regions: Vec<Region>,
    pub(super) region_index: BTreeMap<(usize, Side, What), usize>,
    pub(super) spaces: Vec<Space>,
    /// Samples per symbol (region and symbol, or the region's pseudo-function): a listing
    /// needs no finer place, and a million sampled bins in a few functions cost a few entries.
    pub(super) hist: BTreeMap<(usize, Option<usize>), u64>,
    pub(super) arcs: Vec<(Loc, Loc, u64)>,
    /// The stacks, each frame the index of its location in `locs`.
    pub(super) stacks: Vec<(Vec<usize>, u64)>,
    /// The distinct locations of the stacks' frames: a deep recursion repeats a few places
    /// thousands of times in each of its stacks, each resolved and placed once.
    pub(super) locs: Vec<Loc>,
    pub(super) loc_ids: HashMap<Loc, usize>,
    /// The stack frames resolved so far, by space, side and address.
    pub(super) frame_ids: HashMap<(usize, Side, u64), usize>,
    /// Samples per place of the stacks' innermost frames (region, symbol, offset), with
    /// [`SeamlessOptions::instructions`].
    pub(super) leaves: BTreeMap<(usize, Option<usize>, u64), u64>,
    /// Sleep stacks and the nanoseconds blocked in them (the model's `off-cpu` value type).
    pub(super) off_cpu: Vec<(Vec<usize>, u64)>,
    pub(super) unit: Option<HistogramUnit>,
    pub(super) warnings: Vec<String>,
    /// The moved stacks to take out and put back, for the view as recorded
    /// ([`SeamlessOptions::async_as_recorded`]).
    pub(super) recorded: Option<Recorded>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Side {
    User,
    Kernel,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum What {
    Object(usize),
    Kernel(usize),
    Pseudo(Vec<u8>),
}

/// A symbol table (or none) placed for one space and side.
#[derive(Debug)]
pub(super) struct Region {
    pub(super) space: usize,
    pub(super) side: Side,
    pub(super) what: What,
    /// Lowest runtime address seen, which orders the regions of a space.
    pub(super) first_address: u64,
    pub(super) pseudo_name: Vec<u8>,
    pub(super) pseudo_used: bool,
    /// The symbols used (with samples or arcs).
    pub(super) used: BTreeMap<usize, ()>,
}

/// A resolved address: a region, a symbol of its table (or its pseudo-function) and an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Loc {
    pub(super) region: usize,
    pub(super) symbol: Option<usize>,
    pub(super) offset: u64,
}

#[derive(Debug)]
pub(super) enum Target {
    Unresolved,
    Object { object: usize, bias: u64 },
    Pseudo(Vec<u8>),
}

#[derive(Debug)]
pub(super) struct MappedRange {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) target: Target,
    pub(super) index: usize,
}

/// One address space: a process's user side and kernel side.
#[derive(Debug)]
pub(super) struct Space {
    pub(super) label: String,
    /// The process's pid and command name (its file set's); `None` for system-wide kernel
    /// work (`kernel:`, `other:`).
    pub(super) process: Option<(u32, String)>,
    pub(super) mappings: Vec<MappedRange>,
    pub(super) info: Option<MeasurementInfo>,
    pub(super) kernel: Option<usize>,
    /// The region of `kernel`, once made.
    pub(super) kernel_region: Option<usize>,
    pub(super) last_hit: usize,
}

/// The symbols of a region: an object's gprof table, or the kernel's compact one.
#[derive(Clone, Copy)]
pub(super) enum Table<'a> {
    Object(&'a SymbolTable),
    Kernel(&'a KernelTable),
}

impl<'a> Table<'a> {
    pub(super) fn len(self) -> usize {
        match self {
            Table::Object(t) => t.len(),
            Table::Kernel(t) => t.len(),
        }
    }

    /// The name, address and function-ness of symbol `i`.
    pub(super) fn symbol(self, i: usize) -> (&'a [u8], u64, bool) {
        match self {
            Table::Object(t) => {
                let s = &t.symbols()[i];
                (&s.name, s.address, s.is_function)
            }
            Table::Kernel(t) => (t.name(i), t.address(i), true),
        }
    }
}

/// A moved stack: its kernel frames (innermost first), kind and samples.
pub(super) type Moved = (Vec<u64>, BoundaryKind, u64);

/// The moved stacks of `async.moves`, by the file name of the kernel profile they are in
/// (`out`) and of the one they were taken for (`back`); read by `recorded.rs`.
#[derive(Debug, Default)]
pub(super) struct Recorded {
    pub(super) out: HashMap<String, Vec<Moved>>,
    pub(super) back: HashMap<String, Vec<Moved>>,
    /// Samples taken in processes that have no files (all their samples moved).
    pub(super) homeless: u64,
}
