//! Mappings written displaced: a mapping placed where an earlier one of the same image, of
//! another file or placement, had been (a library unloaded and another loaded in its place).
//!
//! The profiles keep each sample's addresses, not its time, so a report resolves an address
//! through the one mapping that holds it. When two mappings of one image held the same
//! addresses at different times, the later one's samples are written displaced into addresses
//! no process uses, and its `[mapping]` section with them (with `runtime-start`, where it
//! was): see [`gmon_format::Mapping::runtime_start`]. Without this a report read the samples
//! of one library as the other's: two libraries loaded and unloaded in turn at the same
//! addresses (pkgprof-cli's truth test `reload`) had 29.2% for 58.4% and 29.2% for 19.4%.

use std::collections::HashMap;

use gmon_format::{DISPLACED_MAPPING_SLOT, DISPLACED_MAPPINGS_START};

use crate::replay::{Mapping, Process};

/// The part of an address a displaced mapping keeps within its slot.
const KEPT_BITS: u64 = DISPLACED_MAPPING_SLOT / 2 - 1;

/// The displaced mappings of every process, and the next free slot.
#[derive(Debug, Default)]
pub(crate) struct Displacements {
    /// By process index: (mapping index, what is added to its addresses).
    by_process: HashMap<usize, Vec<(usize, u64)>>,
    /// Slots handed out.
    slots: u64,
}

/// Whether `a` and `b` map the same bytes of the same file at the same addresses (an
/// executable mapping announced again, a library reloaded where it was): then an address
/// means the same in both, and neither need move.
fn same_placement(a: &Mapping, b: &Mapping) -> bool {
    a.filename == b.filename
        && a.build_id == b.build_id
        && a.start.wrapping_sub(a.pgoff) == b.start.wrapping_sub(b.pgoff)
}

/// Whether a mapping's addresses name code of a file (not anonymous memory, `//anon` or no
/// name, whose addresses a report names `[unknown]` wherever they lie).
fn is_file(m: &Mapping) -> bool {
    (m.filename.starts_with('/') && !m.filename.starts_with("//")) || &*m.filename == "[vdso]"
}

impl Displacements {
    /// Looks at the newest mapping of process `pi` (`p`, just after an mmap record): it is
    /// displaced if it overlaps a mapping of the same image placed otherwise.
    pub(crate) fn mapped(&mut self, pi: usize, p: &Process) {
        let Some((new, earlier)) = p.mappings.split_last() else {
            return;
        };
        let index = earlier.len();
        // The image's mappings: those still mapped after its exec (an exec closes the
        // mappings before it at its own time).
        let image_start = p.execs.last().copied().unwrap_or(0);
        let clash = earlier.iter().any(|m| {
            m.start < new.end
                && new.start < m.end
                && m.to.is_none_or(|t| t > image_start)
                && (is_file(m) || is_file(new))
                && !same_placement(m, new)
        });
        let len = new.end - new.start;
        let slots_left =
            (0x8000_0000_0000_0000 - DISPLACED_MAPPINGS_START) / DISPLACED_MAPPING_SLOT;
        if !clash || len > KEPT_BITS || self.slots >= slots_left {
            return;
        }
        let at = DISPLACED_MAPPINGS_START + self.slots * DISPLACED_MAPPING_SLOT;
        self.slots += 1;
        let delta = (at + (new.start & KEPT_BITS)).wrapping_sub(new.start);
        self.by_process.entry(pi).or_default().push((index, delta));
    }

    /// What is added to the addresses of mapping `index` of process `pi`, if it is displaced.
    pub(crate) fn delta(&self, pi: usize, index: usize) -> Option<u64> {
        self.by_process
            .get(&pi)?
            .iter()
            .find(|&&(i, _)| i == index)
            .map(|&(_, d)| d)
    }

    /// Displaces the addresses of `frames` (of process `pi`, `p`, at `time`) that lie in a
    /// displaced mapping mapped then.
    pub(crate) fn apply(&self, pi: usize, p: &Process, time: u64, frames: &mut [u64]) {
        let Some(list) = self.by_process.get(&pi) else {
            return;
        };
        for a in frames.iter_mut() {
            for &(index, delta) in list {
                let m = &p.mappings[index];
                if m.start <= *a && *a < m.end && m.from <= time && m.to.is_none_or(|t| time < t) {
                    *a = a.wrapping_add(delta);
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::ProcessKey;

    fn mapping(start: u64, path: &str, from: u64, to: Option<u64>) -> Mapping {
        Mapping {
            start,
            end: start + 0x2000,
            pgoff: 0x1000,
            filename: path.into(),
            build_id: None,
            from,
            to,
        }
    }

    fn process(mappings: Vec<Mapping>, execs: Vec<u64>) -> Process {
        Process {
            key: ProcessKey {
                pid: 1,
                generation: 0,
            },
            parent: None,
            start: None,
            exit: None,
            comms: Vec::new(),
            renames: Vec::new(),
            renames_dropped: 0,
            mappings_dropped: 0,
            mapping_changes: 0,
            execs,
            mappings,
            threads: Vec::new(),
            samples: Vec::new(),
        }
    }

    /// A library loaded where another had been is displaced, its addresses moved only while
    /// it was mapped; one reloaded where it was, or after an exec, is not.
    #[test]
    fn a_mapping_over_another_files_addresses_is_displaced() {
        let base = 0x7f00_0000_1000;
        let mut d = Displacements::default();
        let mut p = process(vec![mapping(base, "/lib/a.so", 10, Some(20))], vec![]);
        d.mapped(0, &p);
        assert_eq!(d.delta(0, 0), None, "the first keeps its addresses");
        p.mappings.push(mapping(base, "/lib/b.so", 20, Some(30)));
        d.mapped(0, &p);
        let delta = d.delta(0, 1).expect("b.so displaced");
        assert_eq!(
            base.wrapping_add(delta),
            DISPLACED_MAPPINGS_START + (base & KEPT_BITS)
        );
        // a.so again, where it was first: same placement as a.so, but over b.so's addresses.
        p.mappings.push(mapping(base, "/lib/a.so", 30, None));
        d.mapped(0, &p);
        let again = d
            .delta(0, 2)
            .expect("a.so again displaced, clashing with b.so");
        assert_ne!(again, delta, "a slot of its own");
        // Addresses move by the mapping mapped at the sample's time.
        let mut frames = [base + 0x10, base + 0x10, 0x1234];
        d.apply(0, &p, 15, &mut frames[..1]);
        d.apply(0, &p, 25, &mut frames[1..]);
        assert_eq!(
            frames,
            [base + 0x10, (base + 0x10).wrapping_add(delta), 0x1234]
        );

        // The same library announced again where it is, or mappings of an image an exec
        // replaced: nothing moves.
        let mut d = Displacements::default();
        let mut p = process(vec![mapping(base, "/lib/a.so", 10, Some(20))], vec![]);
        p.mappings.push(mapping(base, "/lib/a.so", 20, Some(40)));
        d.mapped(0, &p);
        p.execs.push(40);
        p.mappings.push(mapping(base, "/bin/other", 41, None));
        d.mapped(0, &p);
        assert_eq!((d.delta(0, 1), d.delta(0, 2)), (None, None));
        // Anonymous code over anonymous code: named [unknown] wherever it is.
        let mut p = process(vec![mapping(base, "//anon", 10, Some(20))], vec![]);
        p.mappings.push(mapping(base + 0x1000, "//anon", 20, None));
        d.mapped(0, &p);
        assert_eq!(d.delta(0, 1), None);
    }
}
