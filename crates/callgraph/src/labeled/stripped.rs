//! The warning for objects symbolized only from their exported symbols (`.dynsym`): found per
//! process by the merge ([`StrippedObject`]), said once per object however many processes and
//! windows ran it ([`stripped_warnings`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::objects;
use super::state::{Builder, Loc, What};

/// An object that received samples of one process but could only be symbolized from its
/// exported symbols: a stripped binary credits the time of its internal functions to
/// `[file]` or to whatever exported function precedes them (a stripped `-pg` program gives it
/// to `__gmon_start__`), which looks like an answer and is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrippedObject {
    /// The process's label (`PID`, or `PID.N` for a reused pid).
    pub process: String,
    /// The object's path as found.
    pub path: PathBuf,
    /// Its build-id, in hex, when recorded.
    pub build_id: Option<String>,
    /// The process's samples in it.
    pub samples: u64,
    /// Those outside every exported symbol, shown as `PIDu:[file]`.
    pub outside: u64,
    /// The exported functions the others fell after, with their samples.
    pub exported: BTreeMap<String, u64>,
}

impl Builder {
    /// Notes each object that received samples but could only be symbolized from its
    /// exported symbols ([`StrippedObject`]).
    pub(super) fn find_stripped_objects(&self) -> Vec<StrippedObject> {
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
        let mut found = Vec::new();
        for ((space, o), (samples, outside, by_symbol)) in tally {
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
            let build_id = self
                .object_index
                .iter()
                .find(|&(_, &i)| i == o)
                .and_then(|((_, id), _)| id.as_deref())
                .map(objects::hex);
            let mut exported = BTreeMap::new();
            for (sym, n) in by_symbol {
                let name = String::from_utf8_lossy(&loaded.table.symbols()[sym].name);
                *exported.entry(name.into_owned()).or_default() += n;
            }
            found.push(StrippedObject {
                process: self.spaces[space].label.clone(),
                path: loaded.path.clone(),
                build_id,
                samples,
                outside,
                exported,
            });
        }
        found
    }
}

/// One warning per stripped object of `objects` (by path and build-id), however many
/// processes and windows ran it: its samples in all, where they went, and what to do.
pub fn stripped_warnings(objects: &[StrippedObject]) -> Vec<String> {
    type Key<'a> = (&'a PathBuf, &'a Option<String>);
    let mut groups: BTreeMap<Key<'_>, Vec<&StrippedObject>> = BTreeMap::new();
    for s in objects {
        groups.entry((&s.path, &s.build_id)).or_default().push(s);
    }
    groups
        .into_iter()
        .map(|((path, build_id), group)| warning(path, build_id.as_deref(), &group))
        .collect()
}

/// Processes named in a warning before the rest are counted.
const NAMED_PROCESSES: usize = 3;

fn warning(path: &std::path::Path, build_id: Option<&str>, group: &[&StrippedObject]) -> String {
    let mut processes: Vec<&str> = group.iter().map(|s| s.process.as_str()).collect();
    // By pid, then instance (`PID.N`): labels are not ordered as text.
    processes.sort_unstable_by_key(|l| {
        let (pid, n) = l.split_once('.').unwrap_or((l, "0"));
        (pid.parse::<u64>().ok(), n.parse::<u64>().ok(), *l)
    });
    processes.dedup();
    let samples: u64 = group.iter().map(|s| s.samples).sum();
    let outside: u64 = group.iter().map(|s| s.outside).sum();
    let mut exported: BTreeMap<&str, u64> = BTreeMap::new();
    for s in group {
        for (name, &n) in &s.exported {
            *exported.entry(name.as_str()).or_default() += n;
        }
    }
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = build_id.map(|id| format!(" {id}")).unwrap_or_default();
    let (whose, shown) = match processes.as_slice() {
        [one] => (
            format!("process {one}: {} has no symbol table", path.display()),
            format!("of its {samples} samples, {outside} show as {one}u:[{file}]"),
        ),
        many => {
            let mut named = many[..many.len().min(NAMED_PROCESSES)].join(", ");
            if many.len() > NAMED_PROCESSES {
                named.push_str(&format!(" and {} more", many.len() - NAMED_PROCESSES));
            }
            (
                format!(
                    "{} processes ({named}): {} has no symbol table",
                    many.len(),
                    path.display()
                ),
                format!("of their {samples} samples in it, {outside} show as PIDu:[{file}]"),
            )
        }
    };
    let mut m =
        format!("{whose} (stripped) and no debug file with its build-id{id} was found: {shown}");
    if let Some((name, n)) = exported.iter().max_by_key(|&(_, &n)| n) {
        m.push_str(&format!(
            " and {} under the {} exported functions they fall after ({n} under {name}, \
             which also takes the time of any internal function after it)",
            samples - outside,
            exported.len()
        ));
    }
    m.push_str(
        "; install its debug symbols (on Debian the package's -dbgsym, which fills \
         /usr/lib/debug/.build-id), or give --object-path DIR with the unstripped file or \
         DIR/.build-id/xx/rest.debug",
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(process: &str, path: &str, samples: u64, outside: u64, top: u64) -> StrippedObject {
        StrippedObject {
            process: process.into(),
            path: path.into(),
            build_id: Some("5dc7".into()),
            samples,
            outside,
            exported: BTreeMap::from([("__cxa_finalize@plt".into(), top)]),
        }
    }

    #[test]
    fn one_process_is_named_with_its_own_figures() {
        let w = stripped_warnings(&[seen("12", "/usr/bin/gzip", 14, 0, 14)]);
        assert_eq!(
            w,
            [
                "process 12: /usr/bin/gzip has no symbol table (stripped) and no debug file \
              with its build-id 5dc7 was found: of its 14 samples, 0 show as 12u:[gzip] and \
              14 under the 1 exported functions they fall after (14 under \
              __cxa_finalize@plt, which also takes the time of any internal function after \
              it); install its debug symbols (on Debian the package's -dbgsym, which fills \
              /usr/lib/debug/.build-id), or give --object-path DIR with the unstripped file \
              or DIR/.build-id/xx/rest.debug"
            ]
        );
    }

    #[test]
    fn an_object_run_by_many_processes_and_windows_is_said_once() {
        let mut all = Vec::new();
        for (p, n) in [("12", 14), ("13", 10), ("13", 3), ("14", 12), ("15", 5)] {
            all.push(seen(p, "/usr/bin/gzip", n + 1, 1, n));
        }
        all.push(seen("16", "/usr/lib/libz.so.1", 4, 4, 0));
        let w = stripped_warnings(&all);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with(
                "4 processes (12, 13, 14 and 1 more): /usr/bin/gzip has no symbol table \
                 (stripped) and no debug file with its build-id 5dc7 was found: of their 49 \
                 samples in it, 5 show as PIDu:[gzip] and 44 under the 1 exported functions \
                 they fall after (44 under __cxa_finalize@plt,"
            ),
            "{}",
            w[0]
        );
        assert!(w[1].starts_with("process 16: /usr/lib/libz.so.1 has no symbol table"));
    }
}
