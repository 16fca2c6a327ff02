//! The unwind tables of mapped files, read once and shared by every process that maps them,
//! within a memory limit; and the framehop module made of a file's sections.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Weak};

use framehop::x86_64::UnwinderX86_64;
use framehop::{ExplicitModuleSectionInfo, Module};

use crate::elf::{ElfInfo, SectionData};
use crate::replay::Mapping;

/// Which section of a shared [`ElfInfo`] a framehop module reads, without copying its bytes
/// for every process that maps the file.
#[derive(Clone)]
pub(crate) struct SectionRef {
    elf: Arc<ElfInfo>,
    which: Which,
}

#[derive(Clone, Copy)]
enum Which {
    EhFrame,
    EhFrameHdr,
}

impl Deref for SectionRef {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        let s = match self.which {
            Which::EhFrame => &self.elf.eh_frame,
            Which::EhFrameHdr => &self.elf.eh_frame_hdr,
        };
        s.as_ref().map_or(&[], |s| s.data())
    }
}

/// The most bytes of unwind tables (`.eh_frame`, `.eh_frame_hdr`) [`Images`] keeps of files
/// that no framehop module uses any more: the least recently used files' tables are dropped
/// beyond it (their headers stay) and read again if a new mapping needs them. Tables in use
/// by the processes being unwound are kept whatever their size, until those processes exit.
pub const UNWIND_TABLES_BYTES: u64 = 64 << 20;

/// ELF files read during one conversion, by mapped path and build-id: every file's headers
/// (load segments, build-id, entry point), and the unwind tables of the most recently used
/// ones, within [`UNWIND_TABLES_BYTES`].
#[derive(Debug, Clone)]
pub(crate) struct Images {
    files: HashMap<ImageKey, Slot>,
    /// perf's build-id cache, searched when a file is not at its path or is not the one that
    /// ran (see [`gmon_format::perf_cache`]).
    build_id_cache: Option<std::path::PathBuf>,
    /// The bytes of the tables kept in `files`.
    held: u64,
    /// The most bytes of tables kept: [`UNWIND_TABLES_BYTES`].
    limit: u64,
    /// Counts uses, to find the least recently used file.
    clock: u64,
}

impl Default for Images {
    fn default() -> Self {
        Images {
            files: HashMap::new(),
            build_id_cache: None,
            held: 0,
            limit: UNWIND_TABLES_BYTES,
            clock: 0,
        }
    }
}

/// What [`Images`] keeps of one file.
#[derive(Debug, Clone, Default)]
struct Slot {
    /// The file without its tables; None if it cannot be read as the ELF file that ran.
    headers: Option<Arc<ElfInfo>>,
    /// The file with its tables, while kept.
    tables: Option<Arc<ElfInfo>>,
    /// The file with its tables, while a framehop module still holds it after `tables`
    /// let go: it is taken back rather than read a second time.
    shared: Weak<ElfInfo>,
    /// When it was last used (`Images::clock`).
    used: u64,
}

/// A mapped path and the build-id the kernel reported for it.
type ImageKey = (Arc<str>, Option<Vec<u8>>);

impl Images {
    /// Images that also look in perf's build-id cache `cache` (for recordings made elsewhere or
    /// earlier: an imported perf.data).
    pub(crate) fn with_build_id_cache(cache: Option<std::path::PathBuf>) -> Images {
        Images {
            build_id_cache: cache,
            ..Images::default()
        }
    }

    /// Forgets the files no live process of `replay` maps any more: what a continuous run
    /// keeps from one window to the next.
    pub(crate) fn retain_mapped(&mut self, replay: &crate::Replay) {
        let mapped: std::collections::HashSet<(&str, Option<&[u8]>)> = (replay.processes.iter())
            .filter(|p| p.exit.is_none())
            .flat_map(|p| p.mappings.iter().filter(|m| m.to.is_none()))
            .map(|m| (&*m.filename, m.build_id.as_deref()))
            .collect();
        self.files
            .retain(|(path, id), _| mapped.contains(&(&**path, id.as_deref())));
        self.held = self.files.values().map(Slot::held).sum();
    }

    /// The ELF file behind a mapping, without its unwind tables: read from its path (or this
    /// process's own vDSO for `[vdso]`), else from the build-id cache. None if neither can be
    /// read as ELF with the build-id the kernel recorded (the file was replaced since, and no
    /// copy was kept).
    pub(crate) fn get(&mut self, m: &Mapping) -> Option<Arc<ElfInfo>> {
        self.slot(m).headers.clone()
    }

    /// The ELF file behind a mapping with its unwind tables, as [`Images::get`] finds it; a
    /// file whose tables were dropped is read again, and used only if it is still the same
    /// file.
    pub(crate) fn tables(&mut self, m: &Mapping) -> Option<Arc<ElfInfo>> {
        let key = (m.filename.clone(), m.build_id.clone());
        let slot = self.slot(m);
        if let Some(t) = &slot.tables {
            return Some(t.clone());
        }
        let headers = slot.headers.clone()?;
        let full = match slot.shared.upgrade() {
            Some(full) => full,
            None => Arc::new(self.read(m).filter(|f| f.same_file(&headers))?),
        };
        self.keep(&key, full.clone());
        Some(full)
    }

    /// The slot of a mapping's file, read if it was not yet; marks it used.
    fn slot(&mut self, m: &Mapping) -> &mut Slot {
        self.clock += 1;
        let key = (m.filename.clone(), m.build_id.clone());
        if !self.files.contains_key(&key) {
            let full = self.read(m).map(Arc::new);
            self.files.insert(
                key.clone(),
                Slot {
                    headers: full.as_ref().map(|f| Arc::new(f.headers())),
                    ..Slot::default()
                },
            );
            if let Some(full) = full {
                self.keep(&key, full);
            }
        }
        let slot = self.files.get_mut(&key).expect("inserted above");
        slot.used = self.clock;
        slot
    }

    /// Keeps the tables of `key`'s file, dropping the least recently used other files'
    /// tables beyond [`UNWIND_TABLES_BYTES`].
    fn keep(&mut self, key: &ImageKey, full: Arc<ElfInfo>) {
        let Some(slot) = self.files.get_mut(key) else {
            return;
        };
        slot.shared = Arc::downgrade(&full);
        self.held += full.table_bytes();
        slot.tables = Some(full);
        while self.held > self.limit {
            let Some(oldest) = (self.files.iter_mut())
                .filter(|(k, s)| s.tables.is_some() && *k != key)
                .min_by_key(|(_, s)| s.used)
                .map(|(_, s)| s)
            else {
                break;
            };
            self.held -= oldest.held();
            oldest.tables = None;
        }
    }

    /// Reads the ELF file behind a mapping with its tables.
    fn read(&self, m: &Mapping) -> Option<ElfInfo> {
        let matches = |info: &ElfInfo| match (&m.build_id, &info.build_id) {
            (Some(want), Some(have)) => want == have,
            _ => true,
        };
        let at_path = if &*m.filename == "[vdso]" {
            crate::snapshot::own_vdso().and_then(|b| ElfInfo::parse(&b[..]))
        } else if m.filename.starts_with('/') {
            crate::elf::read_object(&m.filename)
        } else {
            None
        };
        if let Some(info) = at_path.filter(|i| matches(i)) {
            return Some(info);
        }
        let cached = gmon_format::perf_cache::object_path(
            self.build_id_cache.as_deref()?,
            std::path::Path::new(&*m.filename),
            m.build_id.as_deref()?,
        )?;
        let info = crate::elf::read_object(cached.to_str()?)?;
        // A cache entry is named by its build-id; it must also hold it.
        (info.build_id.is_some() && matches(&info)).then_some(info)
    }
}

impl Slot {
    fn held(&self) -> u64 {
        self.tables.as_ref().map_or(0, |t| t.table_bytes())
    }
}

pub(crate) type FhModule = Module<SectionRef>;
pub(crate) type FhUnwinder = UnwinderX86_64<SectionRef>;

pub(crate) fn section_info(elf: &Arc<ElfInfo>) -> ExplicitModuleSectionInfo<SectionRef> {
    let r = |which, s: &Option<SectionData>| {
        s.as_ref().map(|_| SectionRef {
            elf: elf.clone(),
            which,
        })
    };
    let svma = |s: &Option<SectionData>| s.as_ref().map(|s| s.svma.clone());
    ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: elf.text.clone(),
        // framehop reads code bytes only for Mach-O and PE images.
        text: None,
        got_svma: elf.got.clone(),
        eh_frame_svma: svma(&elf.eh_frame),
        eh_frame: r(Which::EhFrame, &elf.eh_frame),
        eh_frame_hdr_svma: svma(&elf.eh_frame_hdr),
        eh_frame_hdr: r(Which::EhFrameHdr, &elf.eh_frame_hdr),
        stubs_svma: None,
        stub_helper_svma: None,
        unwind_info: None,
        debug_frame: None,
        text_segment_svma: None,
        text_segment: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unwind::tests::mapping;

    /// Beyond the limit the least recently used file's tables go (its headers stay); a file
    /// whose tables a module still holds is taken back, not read again; one whose tables
    /// nothing holds is read again, and is the same.
    #[test]
    fn images_keep_the_most_recent_tables_within_the_limit() {
        let exe = std::env::current_exe().expect("own path");
        let files = [exe.to_str().expect("utf-8").to_owned(), "[vdso]".to_owned()];
        let maps: Vec<Mapping> = files.iter().map(|f| mapping(f)).collect();
        let mut images = Images::default();
        let sizes: Vec<u64> = maps
            .iter()
            .map(|m| images.tables(m).expect("tables").table_bytes())
            .collect();
        assert!(sizes.iter().all(|&b| b > 0), "{sizes:?}");
        assert_eq!(images.held, sizes.iter().sum::<u64>());

        // Room for one file: reading the second drops the first's tables.
        let mut images = Images {
            limit: sizes[0].max(sizes[1]),
            ..Images::default()
        };
        let first = images.tables(&maps[0]).expect("tables");
        let second = images.tables(&maps[1]).expect("tables");
        assert_eq!(images.held, sizes[1]);
        assert!(
            images.files[&(files[0].as_str().into(), None)]
                .tables
                .is_none()
        );
        assert!(images.get(&maps[0]).expect("headers").eh_frame.is_none());
        // Still held by `first` (a module): taken back, the second's dropped.
        let again = images.tables(&maps[0]).expect("tables");
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(images.held, sizes[0]);
        drop((first, again));
        // Nothing holds the first's tables once the second's come back: read again.
        let _ = images.tables(&maps[1]).expect("tables");
        let reread = images.tables(&maps[0]).expect("read again");
        assert!(reread.same_file(&images.get(&maps[0]).expect("headers")));
        assert_eq!(reread.table_bytes(), sizes[0]);
        drop(second);
    }
}
