//! The ELF objects a process had mapped: finding them again (by recorded path, by file name in
//! search directories, by build-id), checking that they are the files that ran, reading their
//! symbols with gprof's rules and working out their load bias.

use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gmon_format::LoadSegment;
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolFlags};

use crate::error::Error;
use crate::symbols::{RawSymbol, SymbolOptions, SymbolTable};

/// Where this machine keeps separate debug files by build-id; searched for full symbol tables
/// of objects that ship only `.dynsym`.
const SYSTEM_DEBUG_DIR: &str = "/usr/lib/debug";

/// An object found and read.
#[derive(Debug)]
pub(crate) struct LoadedObject {
    /// Its symbols at ELF (link-time) addresses.
    pub table: SymbolTable,
    /// Where it was found.
    pub path: PathBuf,
    /// Where its symbols came from, when not `path` (a separate debug file).
    pub symbols_from: Option<PathBuf>,
    /// Whether only `.dynsym` was available.
    pub dynamic_only: bool,
    segments: Vec<LoadSegment>,
    /// Its PLT stubs, named `<function>@plt`.
    plt: Vec<RawSymbol>,
}

impl LoadedObject {
    /// The load bias of the executable mapping `start..end` of this object from file offset
    /// `offset`: runtime address minus ELF address, by the one rule
    /// ([`gmon_format::load_bias`], which the collector applied when it recorded a bias).
    pub fn bias_for(&self, start: u64, end: u64, offset: u64) -> Option<u64> {
        gmon_format::load_bias(&self.segments, start, end, offset)
    }
}

/// The objects several merges of one run (the windows of a continuous directory) found, each
/// read once: keyed by the path tried first, the recorded build-id and the search
/// directories, which are all the search looks at, so a merge gets what it would read itself
/// (objects are read when the report runs, not when they were recorded: an object without a
/// build-id is the file at its path now, for every window alike). It keeps at most
/// [`ObjectCache::BYTES`] of symbol tables; objects beyond are read by each merge, as without
/// it.
#[derive(Debug)]
pub struct ObjectCache {
    found: std::sync::Mutex<Cached>,
    /// The most symbol-table bytes kept ([`ObjectCache::BYTES`]; less in tests).
    limit: usize,
}

impl Default for ObjectCache {
    fn default() -> Self {
        ObjectCache {
            found: Default::default(),
            limit: Self::BYTES,
        }
    }
}

/// The objects kept, and the bytes their symbol tables take; the kernel symbol tables read.
#[derive(Debug, Default)]
struct Cached {
    objects: std::collections::HashMap<ObjectKey, std::sync::Arc<LoadedObject>>,
    bytes: usize,
    kernels: std::collections::HashMap<FileIdentity, std::sync::Arc<crate::kallsyms::KernelTable>>,
}

/// A file as the file system knows it (device, inode, size, modification time): the windows
/// of a continuous directory hold their boot's kallsyms snapshot as hard links of one file.
type FileIdentity = (u64, u64, u64, i64, i64);

fn identity(path: &Path) -> Option<FileIdentity> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
}

/// The path tried first, the recorded build-id and the search directories.
type ObjectKey = (PathBuf, Option<Vec<u8>>, Vec<PathBuf>);

impl ObjectCache {
    /// The most symbol-table bytes (symbols and their names) a cache keeps: a day of windows
    /// of a machine that builds programs all day runs thousands of distinct objects, and
    /// reading them again costs less than holding them all.
    pub const BYTES: usize = 256 << 20;

    /// [`find`], through `cache` when there is one.
    pub(crate) fn find(
        cache: Option<&ObjectCache>,
        recorded: &Path,
        build_id: Option<&[u8]>,
        search: &[PathBuf],
    ) -> Result<std::sync::Arc<LoadedObject>, NotFound> {
        let Some(cache) = cache else {
            return find(recorded, build_id, search).map(std::sync::Arc::new);
        };
        let key = (
            recorded.to_owned(),
            build_id.map(<[u8]>::to_vec),
            search.to_vec(),
        );
        if let Some(o) = cache.lock().objects.get(&key) {
            return Ok(o.clone());
        }
        let o = std::sync::Arc::new(find(recorded, build_id, search)?);
        let bytes: usize = (o.table.symbols().iter())
            .map(|s| std::mem::size_of_val(s) + s.name.len())
            .sum();
        let mut cached = cache.lock();
        if cached.bytes + bytes <= cache.limit && !cached.objects.contains_key(&key) {
            cached.bytes += bytes;
            cached.objects.insert(key, o.clone());
        }
        Ok(o)
    }

    /// The most kernel symbol tables kept: one per boot the windows span (a snapshot of
    /// ~200,000 symbols takes tens of MiB).
    const KERNELS: usize = 4;

    /// The kernel symbol table an earlier merge read from the file at `path`: the windows
    /// of a continuous directory share their boot's snapshot (hard links of one file), which
    /// each merge parsed again.
    pub(crate) fn kernel(
        cache: Option<&ObjectCache>,
        path: &Path,
    ) -> Option<std::sync::Arc<crate::kallsyms::KernelTable>> {
        let cache = cache?;
        let id = identity(path)?;
        cache.lock().kernels.get(&id).cloned()
    }

    /// Keeps the kernel symbol table read from `path` for the merges after this one.
    pub(crate) fn keep_kernel(
        cache: Option<&ObjectCache>,
        path: &Path,
        table: &std::sync::Arc<crate::kallsyms::KernelTable>,
    ) {
        let (Some(cache), Some(id)) = (cache, identity(path)) else {
            return;
        };
        let mut cached = cache.lock();
        if cached.kernels.len() < Self::KERNELS {
            cached.kernels.insert(id, table.clone());
        }
    }

    /// How many objects it holds.
    pub fn len(&self) -> usize {
        self.lock().objects.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The map, even if a merge panicked while holding it (a map of finished reads).
    fn lock(&self) -> std::sync::MutexGuard<'_, Cached> {
        self.found.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Why an object could not be used: every path tried, with what was wrong there.
#[derive(Debug, Default)]
pub(crate) struct NotFound {
    pub tried: Vec<(PathBuf, String)>,
}

impl NotFound {
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for (i, (path, why)) in self.tried.iter().enumerate() {
            if i > 0 {
                s.push_str("; ");
            }
            // The paths derive from what the profiled process mapped.
            let _ = write!(
                s,
                "{}: {}",
                gmon_format::printable(&path.display().to_string()),
                gmon_format::printable(why)
            );
        }
        s
    }
}

/// Hex digits of a build-id.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The paths where an object recorded as `recorded` (with `build_id`) may be: the recorded
/// path itself, then for each search directory the file of the same name, the
/// `.build-id/xx/rest.debug` and `.build-id/xx/rest` files, and perf's build-id cache entry
/// (a search directory may be a `~/.debug`, see [`gmon_format::perf_cache`]).
fn candidates(recorded: &Path, build_id: Option<&[u8]>, search: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = vec![recorded.to_owned()];
    for dir in search {
        if let Some(name) = recorded.file_name() {
            out.push(dir.join(name));
        }
        if let Some(raw) = build_id.filter(|id| id.len() > 1) {
            let id = hex(raw);
            let sub = dir.join(".build-id").join(&id[..2]);
            out.push(sub.join(format!("{}.debug", &id[2..])));
            out.push(sub.join(&id[2..]));
            out.extend(gmon_format::perf_cache::object_path(dir, recorded, raw));
        }
    }
    out
}

/// Why a path recorded in an info file is not read at all: `..` in it, which can only point
/// away from where the object was.
pub(crate) fn refused_recorded(recorded: &Path) -> Option<NotFound> {
    recorded
        .components()
        .any(|c| c == std::path::Component::ParentDir)
        .then(|| NotFound {
            tried: vec![(
                recorded.to_owned(),
                "a recorded path with `..` is not read".into(),
            )],
        })
}

/// Finds the object recorded as `recorded` with `build_id` and reads it.
///
/// The first candidate (see [`candidates`]) that reads as ELF and, when a build-id was
/// recorded, has that build-id, is used. If it has no `.symtab`, a separate debug file with the
/// same build-id (in the search directories or the system's) gives the symbols; failing that,
/// `.dynsym` does.
pub(crate) fn find(
    recorded: &Path,
    build_id: Option<&[u8]>,
    search: &[PathBuf],
) -> Result<LoadedObject, NotFound> {
    let mut not_found = NotFound::default();
    for (i, path) in candidates(recorded, build_id, search)
        .into_iter()
        .enumerate()
    {
        // The recorded path is where the process had the file, and it may have put something
        // else there since; the search directories are the user's own.
        let read_file = match i {
            0 => crate::input::read_recorded,
            _ => crate::input::read_input,
        };
        let data = match read_file(&path, crate::input::IMAGE_MAX_BYTES) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => {
                not_found.tried.push((path, "not found".into()));
                continue;
            }
            Err(e) => {
                let why = match e.io_error() {
                    Some(io) => format!("cannot read: {io}"),
                    // The error names the path; keep only what is wrong with it.
                    None => e
                        .to_string()
                        .strip_prefix(&format!("{}: ", path.display()))
                        .map(str::to_owned)
                        .unwrap_or_else(|| e.to_string()),
                };
                not_found.tried.push((path, why));
                continue;
            }
        };
        match read(&path, &data, build_id) {
            Ok(mut object) => {
                if object.dynamic_only
                    && let Some(id) = build_id
                {
                    improve_from_debug_file(&mut object, id, search);
                }
                return Ok(object);
            }
            Err(why) => not_found.tried.push((path, why)),
        }
    }
    Err(not_found)
}

fn improve_from_debug_file(object: &mut LoadedObject, id: &[u8], search: &[PathBuf]) {
    let mut dirs = search.to_vec();
    dirs.push(PathBuf::from(SYSTEM_DEBUG_DIR));
    let id_hex = hex(id);
    if id_hex.len() < 3 {
        return;
    }
    for dir in dirs {
        let path = dir
            .join(".build-id")
            .join(&id_hex[..2])
            .join(format!("{}.debug", &id_hex[2..]));
        let Ok(data) = crate::input::read_input(&path, crate::input::IMAGE_MAX_BYTES) else {
            continue;
        };
        if let Ok(debug) = read(&path, &data, Some(id))
            && !debug.dynamic_only
        {
            // A debug file's `.plt` has no contents: the stubs are named from the object's.
            object.table = with_plt(debug.table, &object.plt);
            object.dynamic_only = false;
            object.symbols_from = Some(path);
            return;
        }
    }
}

/// Reads one ELF file; the error says why it cannot stand for the object.
fn read(path: &Path, data: &[u8], build_id: Option<&[u8]>) -> Result<LoadedObject, String> {
    let file = object::File::parse(data).map_err(|e| format!("not an ELF file ({e})"))?;
    if file.format() != object::BinaryFormat::Elf {
        return Err("not an ELF file".into());
    }
    let found_id = file.build_id().ok().flatten();
    if let Some(want) = build_id {
        match found_id {
            Some(got) if got == want => {}
            Some(got) => {
                return Err(format!(
                    "build-id {} differs from the recorded {}",
                    hex(got),
                    hex(want)
                ));
            }
            None => return Err(format!("has no build-id, {} was recorded", hex(want))),
        }
    }
    let segments = file
        .segments()
        .map(|s| {
            let (file_offset, file_size) = s.file_range();
            LoadSegment {
                file_offset,
                file_size,
                address: s.address(),
                executable: matches!(
                    s.flags(),
                    object::SegmentFlags::Elf { p_flags, .. } if p_flags.contains(object::elf::PF_X)
                ),
            }
        })
        .collect();
    // Sampled code is charged to the function it is in, clones and cold parts included.
    let options = SymbolOptions {
        keep_fragments: true,
        ..SymbolOptions::default()
    };
    let (table, dynamic_only) = match SymbolTable::parse(path, data, &options) {
        Ok(t) => (t, false),
        Err(Error::NoSymbols { .. }) => (dynamic_table(&file), true),
        Err(e) => return Err(e.to_string()),
    };
    let plt = plt_symbols(&file);
    Ok(LoadedObject {
        table: with_plt(table, &plt),
        path: path.to_owned(),
        symbols_from: None,
        dynamic_only,
        segments,
        plt,
    })
}

/// A table from `.dynsym`, for objects stripped of `.symtab` (as distributions ship shared
/// libraries), with the rules gprof applies to `.symtab`: defined code symbols, no indirect
/// functions or unique symbols, weak objects left out.
fn dynamic_table(file: &object::File<'_>) -> SymbolTable {
    let mut raw = Vec::new();
    for sym in file.dynamic_symbols() {
        if sym.is_undefined() {
            continue;
        }
        let SymbolFlags::Elf { st_info, .. } = sym.flags() else {
            continue;
        };
        let (st_type, bind) = (st_info.st_type(), st_info.st_bind());
        if st_type == object::elf::STT_SECTION
            || st_type == object::elf::STT_FILE
            || st_type == object::elf::STT_GNU_IFUNC
            || bind == object::elf::STB_GNU_UNIQUE
        {
            continue;
        }
        let weak = bind == object::elf::STB_WEAK;
        if weak && st_type == object::elf::STT_OBJECT {
            continue;
        }
        let in_code = sym
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .is_some_and(|s| s.kind() == SectionKind::Text);
        if !weak && !in_code {
            continue;
        }
        let Ok(name) = sym.name_bytes() else {
            continue;
        };
        // Version suffixes (`memcpy@@GLIBC_2.14`) are not part of the name.
        let name = name.split(|&b| b == b'@').next().unwrap_or(name);
        if name.is_empty() {
            continue;
        }
        raw.push(RawSymbol {
            name: name.to_vec(),
            address: sym.address(),
            is_function: st_type == object::elf::STT_FUNC,
            is_static: bind == object::elf::STB_LOCAL,
        });
    }
    // The vDSO exports each function twice, `clock_gettime` (weak) and `__vdso_clock_gettime`:
    // the `__vdso_` name, as perf shows it, says where the code is.
    let vdso: std::collections::BTreeSet<u64> = raw
        .iter()
        .filter(|r| r.name.starts_with(b"__vdso_"))
        .map(|r| r.address)
        .collect();
    raw.retain(|r| r.name.starts_with(b"__vdso_") || !vdso.contains(&r.address));
    let text_end = file
        .section_by_name(".text")
        .map_or(0, |s| s.address().wrapping_add(s.size()));
    let address_size = if file.is_64() {
        gmon_format::AddressSize::U64
    } else {
        gmon_format::AddressSize::U32
    };
    let endian = if file.is_little_endian() {
        gmon_format::Endian::Little
    } else {
        gmon_format::Endian::Big
    };
    SymbolTable::from_symbols(raw, text_end, address_size, endian)
}

/// The object's PLT stubs as symbols named as perf and objdump name them, `write@plt`: each
/// stub of `.plt` (after the resolver stub, named `[plt]`), `.plt.sec` and `.plt.got` jumps
/// through a GOT slot (`jmp *slot(%rip)`, after an `endbr64` or `bnd` prefix), and the dynamic
/// relocation of that slot names the function. Without them a sample in a stub would count
/// for the symbol before the PLT, `_init`.
fn plt_symbols(file: &object::File<'_>) -> Vec<RawSymbol> {
    let mut slots: std::collections::HashMap<u64, Vec<u8>> = std::collections::HashMap::new();
    if let (Some(relocations), Some(dynsym)) =
        (file.dynamic_relocations(), file.dynamic_symbol_table())
    {
        use object::ObjectSymbolTable as _;
        for (slot, r) in relocations {
            if let object::RelocationTarget::Symbol(i) = r.target()
                && let Ok(sym) = dynsym.symbol_by_index(i)
                && let Ok(name) = sym.name_bytes()
                && !name.is_empty()
            {
                slots.insert(slot, name.to_vec());
            }
        }
    }
    let mut out = Vec::new();
    for (section, entry) in [(".plt", 16u64), (".plt.sec", 16), (".plt.got", 8)] {
        let Some(sec) = file.section_by_name(section) else {
            continue;
        };
        let Ok(data) = sec.data() else { continue };
        // With IBT (stubs that start with `endbr64`) `.plt.got` stubs are 16 bytes too.
        let entry = if section == ".plt.got" && data.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
            16
        } else {
            entry
        };
        for (k, stub) in data.chunks(entry as usize).enumerate() {
            let at = sec.address() + k as u64 * entry;
            let name = got_slot(stub, at).and_then(|slot| slots.get(&slot));
            let name = match (name, section, k) {
                (Some(n), ..) => {
                    let mut n = n.clone();
                    n.extend_from_slice(b"@plt");
                    n
                }
                (None, ".plt", 0) => b"[plt]".to_vec(),
                (None, ..) => continue,
            };
            out.push(RawSymbol {
                name,
                address: at,
                is_function: true,
                is_static: false,
            });
        }
    }
    out
}

/// The GOT slot a PLT stub at `at` jumps through: `jmp *disp32(%rip)` (`ff 25`), possibly after
/// `endbr64` (`f3 0f 1e fa`) and a `bnd` prefix (`f2`).
fn got_slot(stub: &[u8], at: u64) -> Option<u64> {
    let mut k = 0;
    if stub.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
        k = 4;
    }
    if stub.get(k) == Some(&0xf2) {
        k += 1;
    }
    if stub.get(k..k + 2)? != [0xff, 0x25] {
        return None;
    }
    let disp = i32::from_le_bytes(stub.get(k + 2..k + 6)?.try_into().ok()?);
    let next = at.wrapping_add(k as u64 + 6);
    Some(next.wrapping_add_signed(i64::from(disp)))
}

/// `table` with the PLT stubs added (a stub never replaces a symbol of the same address).
fn with_plt(table: SymbolTable, plt: &[RawSymbol]) -> SymbolTable {
    if plt.is_empty() {
        return table;
    }
    let known: std::collections::BTreeSet<u64> =
        table.symbols().iter().map(|s| s.address).collect();
    let end = table
        .symbols()
        .last()
        .map_or(0, |s| s.end_address.wrapping_add(1));
    let mut raw: Vec<RawSymbol> = table
        .symbols()
        .iter()
        .map(|s| RawSymbol {
            name: s.name.clone(),
            address: s.address,
            is_function: s.is_function,
            is_static: s.is_static,
        })
        .collect();
    raw.extend(plt.iter().filter(|p| !known.contains(&p.address)).cloned());
    SymbolTable::from_symbols(raw, end, table.address_size(), table.endian())
}

/// A path recorded as bytes.
pub(crate) fn path_of(bytes: &[u8]) -> &Path {
    Path::new(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::names;

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/seamless")
    }

    fn id_of(path: &Path) -> Vec<u8> {
        let data = std::fs::read(path).unwrap();
        object::File::parse(&*data)
            .unwrap()
            .build_id()
            .unwrap()
            .unwrap()
            .to_vec()
    }

    #[test]
    fn the_recorded_path_is_used_when_its_build_id_matches() {
        let path = fixtures().join("objects/reader");
        let id = id_of(&path);
        let o = find(&path, Some(&id), &[]).unwrap();
        assert_eq!(o.path, path);
        assert!(!o.dynamic_only);
        assert_eq!(
            names(&o.table),
            ["[plt]", "read@plt", "compute", "read_input", "main"]
        );
        // Without a recorded build-id, any readable ELF at the path will do.
        assert!(find(&path, None, &[]).is_ok());
    }

    #[test]
    fn bias_comes_from_the_segment_holding_the_mapped_offset() {
        let path = fixtures().join("objects/reader");
        let o = find(&path, None, &[]).unwrap();
        // The code segment: file offset 0x1000 at ELF address 0x1000.
        let (start, end) = (0x5555_5555_5000, 0x5555_5555_6000);
        assert_eq!(o.bias_for(start, end, 0x1000), Some(0x5555_5555_4000));
        // A mapping starting part-way into it.
        assert_eq!(o.bias_for(start, end, 0x1010), Some(0x5555_5555_3ff0));
        assert_eq!(o.bias_for(start, end, 0x10_0000), None);
    }

    #[test]
    fn another_build_and_missing_files_are_named_with_what_was_wrong() {
        let recorded = Path::new("/nonexistent/dir/reader");
        let id = id_of(&fixtures().join("objects/reader"));
        let other = fixtures().join("objects-other");
        let e = find(recorded, Some(&id), std::slice::from_ref(&other)).unwrap_err();
        let hex_id = hex(&id);
        let other_id = hex(&id_of(&other.join("reader")));
        assert_eq!(
            e.describe(),
            format!(
                "/nonexistent/dir/reader: not found; {o}/reader: build-id {other_id} differs \
                 from the recorded {hex_id}; {o}/.build-id/{a}/{b}.debug: not found; \
                 {o}/.build-id/{a}/{b}: not found; {o}/nonexistent/dir/reader/{hex_id}/elf: \
                 not found",
                o = other.display(),
                a = &hex_id[..2],
                b = &hex_id[2..]
            )
        );
        // A file that is no ELF at all.
        let e = find(&fixtures().join("README.md"), None, &[]).unwrap_err();
        assert!(
            e.describe().contains("README.md: not an ELF file"),
            "{}",
            e.describe()
        );
    }

    #[test]
    fn plt_stubs_are_named_after_the_functions_they_jump_to() {
        let path = fixtures().join("objects/reader");
        let o = find(&path, None, &[]).unwrap();
        let at = |a: u64| {
            o.table
                .lookup(a)
                .map(|i| o.table.symbols()[i].name_lossy().into_owned())
        };
        // `.plt` at 0x1000: the resolver stub, then `read`'s stub (from `.rela.plt`).
        assert_eq!(at(0x1000).as_deref(), Some("[plt]"));
        assert_eq!(at(0x1016).as_deref(), Some("read@plt"));
        assert_eq!(got_slot(&[0xff, 0x25, 0x10, 0, 0, 0], 0x1000), Some(0x1016));
        assert_eq!(
            got_slot(
                &[
                    0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xf0, 0xff, 0xff, 0xff
                ],
                0x2000
            ),
            Some(0x2000 + 11 - 0x10)
        );
        assert_eq!(got_slot(&[0x68, 0, 0, 0, 0], 0x1000), None);
    }

    #[test]
    fn the_cache_keeps_what_fits_its_bound_and_finds_the_rest_anew() {
        let a = fixtures().join("objects/reader");
        let b = fixtures().join("objects-stripped/libfake.so");
        let size = |p: &Path| -> usize {
            let o = find(p, None, &[]).unwrap();
            (o.table.symbols().iter())
                .map(|s| std::mem::size_of_val(s) + s.name.len())
                .sum()
        };
        let cache = ObjectCache {
            limit: size(&a) + size(&b) - 1,
            ..ObjectCache::default()
        };
        let first = ObjectCache::find(Some(&cache), &a, None, &[]).unwrap();
        let other = ObjectCache::find(Some(&cache), &b, None, &[]).unwrap();
        // Only the first fits; the second is found again at each merge, the same object.
        assert_eq!(cache.len(), 1);
        let again = ObjectCache::find(Some(&cache), &a, None, &[]).unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        let other_again = ObjectCache::find(Some(&cache), &b, None, &[]).unwrap();
        assert!(!std::sync::Arc::ptr_eq(&other, &other_again));
        assert_eq!(names(&other.table), names(&other_again.table));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_kernel_table_is_shared_by_the_hard_links_of_its_file() {
        let dir = std::env::temp_dir().join(format!("pkgprof-kcache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b, c) = (dir.join("a"), dir.join("b"), dir.join("c"));
        std::fs::write(&a, "ffffffff81000000 T _stext\n").unwrap();
        std::fs::hard_link(&a, &b).unwrap();
        std::fs::copy(&a, &c).unwrap();
        let cache = ObjectCache::default();
        let table = std::sync::Arc::new(
            crate::kallsyms::KernelSymbols::read(&a)
                .unwrap()
                .into_lookup(),
        );
        ObjectCache::keep_kernel(Some(&cache), &a, &table);
        let linked = ObjectCache::kernel(Some(&cache), &b);
        let copied = ObjectCache::kernel(Some(&cache), &c);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(linked.is_some_and(|t| std::sync::Arc::ptr_eq(&t, &table)));
        // Another file, even with the same bytes, is read on its own.
        assert!(copied.is_none());
        assert!(ObjectCache::kernel(None, &a).is_none());
    }

    #[test]
    fn stripped_objects_fall_back_to_the_dynamic_symbols() {
        let path = fixtures().join("objects-stripped/libfake.so");
        let id = id_of(&path);
        let o = find(&path, Some(&id), &[]).unwrap();
        assert!(o.dynamic_only);
        assert_eq!(names(&o.table), ["read", "write"]);
        // A debug file with the same build-id in a search directory gives the full table.
        let dir = std::env::temp_dir().join(format!("pkgprof-debug-{}", std::process::id()));
        let hex_id = hex(&id);
        let sub = dir.join(".build-id").join(&hex_id[..2]);
        std::fs::create_dir_all(&sub).unwrap();
        let debug = sub.join(format!("{}.debug", &hex_id[2..]));
        std::fs::copy(fixtures().join("objects/libfake.so"), &debug).unwrap();
        let o = find(&path, Some(&id), std::slice::from_ref(&dir)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!o.dynamic_only);
        assert_eq!(o.symbols_from.as_deref(), Some(debug.as_path()));
        assert_eq!(o.path, path);
    }
}
