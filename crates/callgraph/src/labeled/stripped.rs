//! The warning for objects symbolized only from their exported symbols (`.dynsym`).

use std::collections::BTreeMap;

use super::objects;
use super::state::{Builder, Loc, What};

impl Builder {
    /// Warns about each object that received samples but could only be symbolized from its
    /// exported symbols (`.dynsym`): a stripped binary credits the time of its internal
    /// functions to `[file]` or to whatever exported function precedes them (a stripped
    /// `-pg` program gives it to `__gmon_start__`), which looks like an answer and is not.
    pub(super) fn warn_stripped_objects(&mut self) {
        // Per (space, object): samples in all, outside every symbol, and per symbol.
        type Tally = (u64, u64, BTreeMap<usize, u64>);
        let mut tally: BTreeMap<(usize, usize), Tally> = BTreeMap::new();
        for (&(region, symbol), &count) in &self.hist {
            let loc = Loc {
                region,
                symbol,
                offset: 0,
            };
            let region = &self.regions[loc.region];
            let What::Object(o) = region.what else {
                continue;
            };
            if !self.objects[o].as_ref().is_some_and(|l| l.dynamic_only) {
                continue;
            }
            let t = tally.entry((region.space, o)).or_default();
            t.0 += count;
            match loc.symbol {
                None => t.1 += count,
                Some(sym) => *t.2.entry(sym).or_default() += count,
            }
        }
        for ((space, o), (total, outside, by_symbol)) in tally {
            let Some(loaded) = &self.objects[o] else {
                continue;
            };
            // The vDSO has no other symbols than the ones it exports.
            if self
                .object_index
                .iter()
                .any(|((path, _), &i)| i == o && path.as_slice() == b"[vdso]")
            {
                continue;
            }
            let label = &self.spaces[space].label;
            let file = loaded
                .path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let id = self
                .object_index
                .iter()
                .find(|&(_, &i)| i == o)
                .and_then(|((_, id), _)| id.as_deref())
                .map(|id| format!(" {}", objects::hex(id)))
                .unwrap_or_default();
            let mut m = format!(
                "process {label}: {} has no symbol table (stripped) and no debug file with its \
                 build-id{id} was found: of its {total} samples, {outside} show as \
                 {label}u:[{file}]",
                loaded.path.display()
            );
            if let Some((&sym, &n)) = by_symbol.iter().max_by_key(|&(_, &n)| n) {
                let name = String::from_utf8_lossy(&loaded.table.symbols()[sym].name);
                m.push_str(&format!(
                    " and {} under the {} exported functions they fall after ({n} under \
                     {name}, which also takes the time of any internal function after it)",
                    total - outside,
                    by_symbol.len()
                ));
            }
            m.push_str(
                "; install its debug symbols (on Debian the package's -dbgsym, which fills \
                 /usr/lib/debug/.build-id), or give --object-path DIR with the unstripped \
                 file or DIR/.build-id/xx/rest.debug",
            );
            self.warnings.push(m);
        }
    }
}
