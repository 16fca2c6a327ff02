//! Where a recorded address belongs: a user address through the process's mappings to an
//! object's symbol (relocated by the mapping's load bias), a kernel address in the kallsyms
//! snapshot, anything else to a pseudo-function; each as a [`Loc`] in a [`Region`].

use std::collections::BTreeMap;
use std::sync::Arc;

use super::objects::{self, ObjectCache, path_of};
use super::state::{Builder, Loc, MappedRange, Region, Side, Target, What};

use crate::kallsyms::KernelSymbols;

impl Builder {
    pub(super) fn symbol_name(&self, loc: Loc) -> Vec<u8> {
        let region = &self.regions[loc.region];
        match (&region.what, loc.symbol) {
            (What::Kernel(k), Some(s)) => self.kernels[*k]
                .as_ref()
                .map(|(t, _)| t.name(s).to_vec())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The kernel symbols the info file of `space` names.
    pub(super) fn kernel_symbols(&mut self, space: usize) -> Option<usize> {
        let label = self.spaces[space].label.clone();
        let name = self.spaces[space]
            .info
            .as_ref()
            .and_then(|i| i.kernel.symbols_file.clone());
        let Some(name) = name else {
            self.warnings.push(format!(
                "process {label}: no kernel symbols-file in its info file; kernel samples are \
                 reported as {label}k:[kernel]"
            ));
            return None;
        };
        self.load_kernel(&name)
    }

    pub(super) fn load_kernel(&mut self, name: &str) -> Option<usize> {
        if let Some(&k) = self.kernel_index.get(name) {
            return self.kernels[k].is_some().then_some(k);
        }
        let k = self.kernels.len();
        self.kernel_index.insert(name.to_owned(), k);
        // The name must stay inside the measurement directory.
        let path = self.dir.join(name);
        let loaded = if name.contains('/') || name == ".." {
            self.warnings.push(format!(
                "kernel symbols-file {name:?} is not a file name in the measurement directory"
            ));
            None
        } else if let Some(t) = ObjectCache::kernel(self.cache.as_deref(), &path) {
            Some((t, path))
        } else {
            match KernelSymbols::read(&path) {
                Ok(k) if k.addresses_hidden() => {
                    self.warnings.push(format!(
                        "{}: every address is 0 (kernel.kptr_restrict hid them when it was \
                         taken); kernel symbols are unavailable",
                        path.display()
                    ));
                    None
                }
                Ok(k) => {
                    let t = Arc::new(k.into_lookup());
                    ObjectCache::keep_kernel(self.cache.as_deref(), &path, &t);
                    Some((t, path))
                }
                Err(e) => {
                    self.warnings
                        .push(format!("{e}; kernel symbols are unavailable"));
                    None
                }
            }
        };
        let ok = loaded.is_some();
        self.kernels.push(loaded);
        ok.then_some(k)
    }

    pub(super) fn region(
        &mut self,
        space: usize,
        side: Side,
        what: What,
        pseudo: &[u8],
        at: u64,
    ) -> usize {
        let key = (space, side, what);
        let id = match self.region_index.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.regions.len();
                self.regions.push(Region {
                    space,
                    side,
                    what: key.2.clone(),
                    first_address: at,
                    pseudo_name: pseudo.to_vec(),
                    pseudo_used: false,
                    used: BTreeMap::new(),
                });
                self.region_index.insert(key, id);
                id
            }
        };
        let r = &mut self.regions[id];
        r.first_address = r.first_address.min(at);
        id
    }

    pub(super) fn pseudo_loc(&mut self, space: usize, side: Side, name: &[u8], at: u64) -> Loc {
        let region = self.region(space, side, What::Pseudo(name.to_vec()), name, at);
        Loc {
            region,
            symbol: None,
            offset: 0,
        }
    }

    pub(super) fn kernel_loc(&mut self, space: usize, at: u64) -> Loc {
        let Some(k) = self.spaces[space].kernel else {
            return self.pseudo_loc(space, Side::Kernel, b"[kernel]", at);
        };
        let region = match self.spaces[space].kernel_region {
            Some(r) => r,
            None => {
                let r = self.region(space, Side::Kernel, What::Kernel(k), b"[kernel]", 0);
                self.spaces[space].kernel_region = Some(r);
                r
            }
        };
        let table = self.kernels[k].as_ref().map(|(t, _)| &**t);
        let found = table.and_then(|t| t.lookup(at).map(|i| (i, t.address(i))));
        match found {
            Some((i, start)) => Loc {
                region,
                symbol: Some(i),
                offset: at - start,
            },
            None => Loc {
                region,
                symbol: None,
                offset: 0,
            },
        }
    }

    /// Resolves a user address of `space`; `callee` applies gprof's rule that an arc into a
    /// label counts for the function before it.
    pub(super) fn user_loc(&mut self, space: usize, at: u64, callee: bool) -> Loc {
        let Some(m) = self.mapping_of(space, at) else {
            return self.pseudo_loc(space, Side::User, b"[unknown]", at);
        };
        if matches!(self.spaces[space].mappings[m].target, Target::Unresolved) {
            let target = self.resolve(space, m);
            self.spaces[space].mappings[m].target = target;
        }
        let start = self.spaces[space].mappings[m].start;
        match &self.spaces[space].mappings[m].target {
            Target::Object { object, bias } => {
                let (object, bias) = (*object, *bias);
                let region = self.region(space, Side::User, What::Object(object), &[], start);
                if self.regions[region].pseudo_name.is_empty() {
                    self.regions[region].pseudo_name = self.pseudo_name_of(object);
                }
                let Some(loaded) = &self.objects[object] else {
                    return Loc {
                        region,
                        symbol: None,
                        offset: 0,
                    };
                };
                let link = at.wrapping_sub(bias);
                let t = &loaded.table;
                let i = if callee {
                    t.lookup_callee(link)
                } else {
                    t.lookup(link)
                };
                match i {
                    Some(i) => Loc {
                        region,
                        symbol: Some(i),
                        offset: link.wrapping_sub(t.symbols()[i].address),
                    },
                    None => Loc {
                        region,
                        symbol: None,
                        offset: 0,
                    },
                }
            }
            Target::Pseudo(name) => {
                let name = name.clone();
                self.pseudo_loc(space, Side::User, &name, start)
            }
            Target::Unresolved => self.pseudo_loc(space, Side::User, b"[unknown]", at),
        }
    }

    pub(super) fn pseudo_name_of(&self, object: usize) -> Vec<u8> {
        let path = self
            .object_index
            .iter()
            .find(|&(_, &i)| i == object)
            .map(|((p, _), _)| p.clone())
            .unwrap_or_default();
        if path.starts_with(b"[") {
            // A pseudo-path such as `[vdso]` is its own name.
            return path;
        }
        let file = path.rsplit(|&b| b == b'/').next().unwrap_or(&path);
        let mut name = b"[".to_vec();
        name.extend_from_slice(file);
        name.push(b']');
        name
    }

    /// The mapping holding `at`, the latest recorded if several did over time.
    pub(super) fn mapping_of(&mut self, space: usize, at: u64) -> Option<usize> {
        let s = &mut self.spaces[space];
        let hit = |m: &MappedRange| m.start <= at && at < m.end;
        if s.mappings.get(s.last_hit).is_some_and(hit) {
            return Some(s.last_hit);
        }
        let found = s.mappings.iter().rposition(hit)?;
        s.last_hit = found;
        Some(found)
    }

    pub(super) fn resolve(&mut self, space: usize, m: usize) -> Target {
        let label = self.spaces[space].label.clone();
        let index = self.spaces[space].mappings[m].index;
        let Some(mapping) = self.spaces[space]
            .info
            .as_ref()
            .and_then(|i| i.mappings.get(index))
            .cloned()
        else {
            return Target::Pseudo(b"[unknown]".to_vec());
        };
        let path = match &mapping.path {
            None => return Target::Pseudo(b"[unknown]".to_vec()),
            Some(p) if p.is_empty() || p.starts_with(b"//anon") => {
                return Target::Pseudo(b"[unknown]".to_vec());
            }
            Some(p) if p.as_slice() == b"[vdso]" => {
                // The collector saves the vDSO image as `vdso.<build-id>`; without it (or a
                // build-id) the vDSO stays a pseudo-function.
                let saved = mapping
                    .build_id
                    .as_deref()
                    .map(|id| self.dir.join(gmon_format::vdso_file_name(id)))
                    .filter(|f| f.is_file());
                if saved.is_none() {
                    return Target::Pseudo(p.clone());
                }
                p.clone()
            }
            Some(p) if p.starts_with(b"[") => return Target::Pseudo(p.clone()),
            Some(p) => p.clone(),
        };
        let key = (path.clone(), mapping.build_id.clone());
        let object = match self.object_index.get(&key) {
            Some(&o) => o,
            None => {
                let o = self.objects.len();
                self.object_index.insert(key, o);
                let cache = self.cache.as_deref();
                let found = match &mapping.build_id {
                    Some(id) if path.as_slice() == b"[vdso]" => objects::find(
                        &self.dir.join(gmon_format::vdso_file_name(id)),
                        Some(id),
                        &[],
                    )
                    .map(Arc::new),
                    _ => match objects::refused_recorded(path_of(&path)) {
                        Some(refused) => Err(refused),
                        // A relative recorded path is relative to the measurement, never to
                        // the current directory.
                        None => ObjectCache::find(
                            cache,
                            &self.dir.join(path_of(&path)),
                            mapping.build_id.as_deref(),
                            &self.options.object_path,
                        ),
                    },
                };
                match found {
                    Ok(obj) => self.objects.push(Some(obj)),
                    Err(why) => {
                        let id = mapping
                            .build_id
                            .as_deref()
                            .map(|id| format!(" (build-id {})", objects::hex(id)))
                            .unwrap_or_default();
                        let file = path.rsplit(|&b| b == b'/').next().unwrap_or(&path);
                        self.warnings.push(format!(
                            "process {label}: cannot use {}{id}: {}; its samples are reported \
                             as {label}u:[{}]",
                            // The process named the file it mapped.
                            gmon_format::printable(&path_of(&path).display().to_string()),
                            why.describe(),
                            gmon_format::printable(&String::from_utf8_lossy(file))
                        ));
                        self.objects.push(None);
                    }
                }
                o
            }
        };
        let bias = match (&self.objects[object], mapping.load_bias) {
            (_, Some(b)) => b,
            (Some(obj), None) => {
                match obj.bias_for(mapping.start, mapping.end, mapping.file_offset.unwrap_or(0)) {
                    Some(b) => b,
                    None => {
                        self.warnings.push(format!(
                            "process {label}: no segment of {} holds offset {:#x}; its mapping \
                             at {:#x} is taken as unrelocated",
                            obj.path.display(),
                            mapping.file_offset.unwrap_or(0),
                            mapping.start
                        ));
                        0
                    }
                }
            }
            (None, None) => 0,
        };
        Target::Object { object, bias }
    }
}
