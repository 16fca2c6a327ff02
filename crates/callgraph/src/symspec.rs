//! Symbol specifications ("symspecs"): the names given to `-p`, `-P`, `-q`, `-Q`, `-e`, `-E`,
//! `-f`, `-F`, `-n`, `-N` and `-k`, and the include/exclude tables gprof builds from them.
//!
//! gprof resolves every spec once, against the finished symbol table: the symbols a spec
//! matches, taken in address order, become address ranges (a run of consecutive matching
//! symbols is one range), and later questions are "does this symbol's address fall in a range
//! of table X". A spec that matches nothing adds nothing, so `-pnosuch` behaves like `-p`.

use std::rc::Rc;

use crate::histogram::MCOUNT_NAMES;
use crate::lines::SourceInfo;
use crate::symbols::{Symbol, SymbolTable};

/// One symbol specification, parsed as gprof parses it.
///
/// Forms: `FUNCTION`, `FILE` (no colon, contains a dot), `LINE` (no colon, starts with a
/// digit), `FILE:FUNCTION`, `FILE:LINE`, `:FUNCTION`, `:LINE`; the last colon splits. Parts
/// left empty match anything, so `""` and `":"` match every symbol.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Symspec {
    /// Source file, compared with the base name of the symbol's file.
    pub file: Option<Vec<u8>>,
    /// Symbol name, compared with the name as stored (mangled).
    pub function: Option<Vec<u8>>,
    /// Source line of the symbol's start, read as C's `atoi` reads it.
    pub line: Option<u64>,
    /// The source file `file` names once resolved ([`Symspec::resolve_file`]). Default is
    /// [`FileTarget::BaseName`]: not resolved.
    pub target: FileTarget,
}

/// The source file a file spec stands for.
///
/// gprof looks a spec's file name up once, in its list of source files (the most recently
/// met first, the order of `-A`'s listing, see [`crate::source_file_order`]), and takes the
/// first whose base name it is: where two sources share a base name (tree-sitter's runtime
/// `src/parser.c` and its C grammar's `grammar/parser.c`), `-pparser.c` selects the functions
/// of one of them only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileTarget {
    /// Not resolved: the name is compared with the base name of every symbol's file.
    #[default]
    BaseName,
    /// The file gprof takes, by full path.
    Path(Rc<[u8]>),
    /// No source file has that base name: the spec matches nothing.
    Nothing,
}

/// Where a symbol comes from in the source, as far as the image says.
///
/// Without debugging information (the case this crate handles) there is no file and the line
/// is 0, which is what gprof matches file and line specs against then: a file spec matches
/// nothing, and the line spec `0` matches everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourcePosition<'a> {
    /// Full path of the source file, if known.
    pub file: Option<&'a [u8]>,
    /// Line of the symbol's start; 0 when unknown.
    pub line: u64,
}

impl Symspec {
    /// Parses `text` as gprof does (see the type's documentation).
    pub fn parse(text: &[u8]) -> Self {
        let mut spec = Symspec::default();
        let (file, rest) = match text.iter().rposition(|&b| b == b':') {
            Some(colon) => {
                let file = &text[..colon];
                ((!file.is_empty()).then_some(file), &text[colon + 1..])
            }
            None if text.contains(&b'.') => (Some(text), &text[text.len()..]),
            None => (None, text),
        };
        spec.file = file.map(<[u8]>::to_vec);
        match rest.first() {
            None => {}
            Some(b) if b.is_ascii_digit() => spec.line = Some(atoi(rest)),
            Some(_) => spec.function = Some(rest.to_vec()),
        }
        spec
    }

    /// Resolves the spec's file name against gprof's source files, `files` in its order (see
    /// [`FileTarget`]); a spec without a file is left as it is.
    pub fn resolve_file(&mut self, files: &[Rc<[u8]>]) {
        if let Some(file) = &self.file {
            self.target = match files.iter().find(|f| base_name(f) == file.as_slice()) {
                Some(path) => FileTarget::Path(path.clone()),
                None => FileTarget::Nothing,
            };
        }
    }

    /// Whether the spec names `symbol`, found at `source`.
    ///
    /// This is the one place file and line specs are matched: with line tables, `source`
    /// carries the symbol's file and line and the same rules apply.
    pub fn matches(&self, symbol: &Symbol, source: SourcePosition<'_>) -> bool {
        if let Some(file) = &self.file {
            let Some(path) = source.file else {
                return false;
            };
            let same = match &self.target {
                FileTarget::BaseName => base_name(path) == file.as_slice(),
                FileTarget::Path(p) => **p == *path,
                FileTarget::Nothing => false,
            };
            if !same {
                return false;
            }
        }
        if let Some(function) = &self.function
            && *function != symbol.name
        {
            return false;
        }
        self.line.is_none_or(|line| line == source.line)
    }
}

/// The part of `path` after its last `/`.
fn base_name(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// C's `atoi` over leading digits, saturating instead of overflowing.
fn atoi(digits: &[u8]) -> u64 {
    digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u64, |n, &d| {
            n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        })
}

/// An arc specification `FROM/TO` (`-k`, or `-q`/`-Q` with a slash): each side a [`Symspec`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArcSpec {
    /// The caller side.
    pub from: Symspec,
    /// The callee side.
    pub to: Symspec,
}

impl ArcSpec {
    /// Splits `text` at its first `/`; `None` when there is none, and gprof then ignores the
    /// spec.
    pub fn parse(text: &[u8]) -> Option<Self> {
        let slash = text.iter().position(|&b| b == b'/')?;
        Some(ArcSpec {
            from: Symspec::parse(&text[..slash]),
            to: Symspec::parse(&text[slash + 1..]),
        })
    }
}

/// The specs of the command line, sorted into gprof's tables. Fill it with [`Symspecs::add`];
/// the default is no spec at all (the mcount family is always excluded on top, see
/// [`Selection::new`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Symspecs {
    /// `-p SPEC`: only these get flat-profile time and are listed.
    pub include_flat: Vec<Symspec>,
    /// `-P SPEC`: these get no flat-profile time and are not listed.
    pub exclude_flat: Vec<Symspec>,
    /// `-q SPEC`, `-f`, `-F`: the call graph shows these and their descendants.
    pub include_graph: Vec<Symspec>,
    /// `-Q SPEC`, `-e`, `-E`: the call graph leaves these out.
    pub exclude_graph: Vec<Symspec>,
    /// `-n SPEC`, `-F`: only these (and their descendants) propagate time.
    pub include_time: Vec<Symspec>,
    /// `-N SPEC`, `-E`: these propagate no time.
    pub exclude_time: Vec<Symspec>,
    /// `-q FROM/TO`: only these arcs are read.
    pub include_arcs: Vec<ArcSpec>,
    /// `-k FROM/TO`, `-Q FROM/TO`: these arcs are dropped as they are read.
    pub exclude_arcs: Vec<ArcSpec>,
}

/// Which of gprof's tables a spec goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SymspecTable {
    /// [`Symspecs::include_flat`].
    IncludeFlat,
    /// [`Symspecs::exclude_flat`].
    ExcludeFlat,
    /// [`Symspecs::include_graph`].
    IncludeGraph,
    /// [`Symspecs::exclude_graph`].
    ExcludeGraph,
    /// [`Symspecs::include_time`].
    IncludeTime,
    /// [`Symspecs::exclude_time`].
    ExcludeTime,
    /// [`Symspecs::include_arcs`].
    IncludeArcs,
    /// [`Symspecs::exclude_arcs`].
    ExcludeArcs,
}

impl Symspecs {
    /// Adds the spec `text` to `table`. An arc spec without a `/` is ignored, as gprof does.
    pub fn add(&mut self, table: SymspecTable, text: &[u8]) {
        let list = match table {
            SymspecTable::IncludeFlat => &mut self.include_flat,
            SymspecTable::ExcludeFlat => &mut self.exclude_flat,
            SymspecTable::IncludeGraph => &mut self.include_graph,
            SymspecTable::ExcludeGraph => &mut self.exclude_graph,
            SymspecTable::IncludeTime => &mut self.include_time,
            SymspecTable::ExcludeTime => &mut self.exclude_time,
            SymspecTable::IncludeArcs => {
                self.include_arcs.extend(ArcSpec::parse(text));
                return;
            }
            SymspecTable::ExcludeArcs => {
                self.exclude_arcs.extend(ArcSpec::parse(text));
                return;
            }
        };
        list.push(Symspec::parse(text));
    }

    /// Resolves the file names of every spec against gprof's source files, `files` in its
    /// order (see [`FileTarget`]).
    pub fn resolve_files(&mut self, files: &[Rc<[u8]>]) {
        for list in [
            &mut self.include_flat,
            &mut self.exclude_flat,
            &mut self.include_graph,
            &mut self.exclude_graph,
            &mut self.include_time,
            &mut self.exclude_time,
        ] {
            for spec in list.iter_mut() {
                spec.resolve_file(files);
            }
        }
        for arc in self.include_arcs.iter_mut().chain(&mut self.exclude_arcs) {
            arc.from.resolve_file(files);
            arc.to.resolve_file(files);
        }
    }
}

/// Address ranges of the symbols a list of specs matched: gprof's resolved table.
///
/// Observed behaviour this reproduces: the ranges are sorted by start address, and of several
/// ranges starting at the same address only the one added last survives; a lookup takes the
/// last range starting at or below the address and then checks its end (so a short range can
/// hide a longer one that starts earlier).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    fn resolve(table: &SymbolTable, specs: &[Symspec], sources: &[Option<SourceInfo>]) -> Self {
        let mut ranges = Vec::new();
        for spec in specs {
            ranges.extend(runs(table, spec, sources));
        }
        Ranges(sorted_last_wins(ranges, |&(lo, _)| lo))
    }

    fn contains(&self, address: u64) -> bool {
        let i = self.0.partition_point(|&(lo, _)| lo <= address);
        i.checked_sub(1).is_some_and(|i| address <= self.0[i].1)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The runs of consecutive symbols `spec` matches, as `[first.address, last.end_address]`, in
/// address order. A run that ends before it starts (a lone symbol past the end of `.text`,
/// such as `data_start`) adds nothing, as observed: `-f data_start` is as if not given.
fn runs(table: &SymbolTable, spec: &Symspec, sources: &[Option<SourceInfo>]) -> Vec<(u64, u64)> {
    let mut runs = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    for (i, symbol) in table.symbols().iter().enumerate() {
        if spec.matches(symbol, symbol_source(sources, i)) {
            let start = run.map_or(symbol.address, |(lo, _)| lo);
            run = Some((start, symbol.end_address));
        } else if let Some(r) = run.take() {
            runs.push(r);
        }
    }
    runs.extend(run);
    runs.retain(|&(lo, hi)| lo <= hi);
    runs
}

/// Sorts `items` by `key`, keeping of equal keys only the one that came last.
fn sorted_last_wins<T>(mut items: Vec<T>, key: impl Fn(&T) -> u64) -> Vec<T> {
    items.sort_by_key(&key); // stable: equal keys stay in the order they were added
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    for item in items {
        match out.last_mut() {
            Some(last) if key(last) == key(&item) => *last = item,
            _ => out.push(item),
        }
    }
    out
}

/// A resolved arc table: each run of a spec's caller side, with the ranges of its callee side.
///
/// As observed: an entry exists for every caller run even when the callee side matched
/// nothing (so `-q FROM/nosuch` keeps no arc at all), entries starting at the same address
/// replace each other (the last spec wins), and an arc matches if any entry does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ArcRanges {
    /// Caller runs: first address, last address, index into `callees`.
    entries: Vec<(u64, u64, usize)>,
    /// The callee ranges of each spec.
    callees: Vec<Ranges>,
}

impl ArcRanges {
    fn resolve(table: &SymbolTable, specs: &[ArcSpec], sources: &[Option<SourceInfo>]) -> Self {
        let mut entries = Vec::new();
        let mut callees = Vec::new();
        for spec in specs {
            for (lo, hi) in runs(table, &spec.from, sources) {
                entries.push((lo, hi, callees.len()));
            }
            callees.push(Ranges(runs(table, &spec.to, sources)));
        }
        ArcRanges {
            entries: sorted_last_wins(entries, |e| e.0),
            callees,
        }
    }

    fn matches(&self, from: u64, to: u64) -> bool {
        self.entries
            .iter()
            .any(|&(lo, hi, c)| lo <= from && from <= hi && self.callees[c].contains(to))
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The source position of symbol `i`: the single hook through which file and line specs see
/// debugging information (see [`crate::symbol_sources`]); without it a symbol is at line 0 of
/// no file.
fn symbol_source(sources: &[Option<SourceInfo>], i: usize) -> SourcePosition<'_> {
    match sources.get(i).and_then(Option::as_ref) {
        Some(src) => SourcePosition {
            file: Some(&src.file),
            line: src.line,
        },
        None => SourcePosition::default(),
    }
}

/// What an include/exclude pair says about one symbol when gprof walks the call graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Toggle {
    /// A flag that is off turns on: the symbol is included, or nothing is included and it is
    /// not excluded.
    pub on: bool,
    /// A flag that is on turns off: the symbol is excluded and not included.
    pub off: bool,
}

/// The resolved tables, as per-symbol answers (indexed like [`SymbolTable::symbols`]) plus the
/// arc filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Symbols that get flat-profile time and may be listed; the time of the others is taken
    /// off the total.
    pub flat: Vec<bool>,
    /// How the call graph's print flag changes at each symbol.
    pub print: Vec<Toggle>,
    /// How the propagation fraction changes at each symbol (off: 0, on: 1).
    pub time: Vec<Toggle>,
    include_arcs: ArcRanges,
    exclude_arcs: ArcRanges,
}

impl Selection {
    /// Resolves `specs` against `table`, with gprof's default exclusions ([`MCOUNT_NAMES`] out
    /// of the flat profile, the call graph and time propagation) added.
    pub fn new(table: &SymbolTable, specs: &Symspecs) -> Self {
        Self::with_sources(table, specs, &[])
    }

    /// [`Selection::new`] with the symbols' source positions (see [`crate::symbol_sources`]),
    /// so that file and line specs can match.
    pub fn with_sources(
        table: &SymbolTable,
        specs: &Symspecs,
        sources: &[Option<SourceInfo>],
    ) -> Self {
        let with_mcount = |list: &[Symspec]| {
            let mut all = list.to_vec();
            all.extend(MCOUNT_NAMES.iter().map(|name| Symspec {
                function: Some(name.to_vec()),
                ..Symspec::default()
            }));
            Ranges::resolve(table, &all, sources)
        };
        let include_flat = Ranges::resolve(table, &specs.include_flat, sources);
        let exclude_flat = with_mcount(&specs.exclude_flat);
        let include_graph = Ranges::resolve(table, &specs.include_graph, sources);
        let exclude_graph = with_mcount(&specs.exclude_graph);
        let include_time = Ranges::resolve(table, &specs.include_time, sources);
        let exclude_time = with_mcount(&specs.exclude_time);
        let toggle = |include: &Ranges, exclude: &Ranges, address: u64| {
            let (inc, exc) = (include.contains(address), exclude.contains(address));
            Toggle {
                on: inc || (include.is_empty() && !exc),
                off: exc && !inc,
            }
        };
        let symbols = table.symbols();
        Selection {
            flat: symbols
                .iter()
                .map(|s| toggle(&include_flat, &exclude_flat, s.address).on)
                .collect(),
            print: symbols
                .iter()
                .map(|s| toggle(&include_graph, &exclude_graph, s.address))
                .collect(),
            time: symbols
                .iter()
                .map(|s| toggle(&include_time, &exclude_time, s.address))
                .collect(),
            include_arcs: ArcRanges::resolve(table, &specs.include_arcs, sources),
            exclude_arcs: ArcRanges::resolve(table, &specs.exclude_arcs, sources),
        }
    }

    /// Whether any arc spec was resolved to something, so arcs must be filtered at all.
    pub fn filters_arcs(&self) -> bool {
        !self.include_arcs.is_empty() || !self.exclude_arcs.is_empty()
    }

    /// Whether gprof keeps an arc from `caller` to `callee` (symbol indices, the callee already
    /// moved to its function): with `-q FROM/TO` specs only arcs matching one of them, else
    /// all but those matching a `-k`/`-Q FROM/TO` spec.
    pub fn keeps_arc(&self, table: &SymbolTable, caller: usize, callee: usize) -> bool {
        let symbols = table.symbols();
        let (from, to) = (symbols[caller].address, symbols[callee].address);
        if !self.include_arcs.is_empty() {
            self.include_arcs.matches(from, to)
        } else {
            !self.exclude_arcs.matches(from, to)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{functions, spaced};

    fn spec(file: Option<&str>, function: Option<&str>, line: Option<u64>) -> Symspec {
        Symspec {
            file: file.map(|f| f.as_bytes().to_vec()),
            function: function.map(|f| f.as_bytes().to_vec()),
            line,
            ..Symspec::default()
        }
    }

    #[test]
    fn parse_forms() {
        let p = |t: &str| Symspec::parse(t.as_bytes());
        assert_eq!(p("main"), spec(None, Some("main"), None));
        assert_eq!(p("main.c"), spec(Some("main.c"), None, None));
        assert_eq!(p("12x"), spec(None, None, Some(12)));
        assert_eq!(p("a.c:f"), spec(Some("a.c"), Some("f"), None));
        assert_eq!(p("a.c:7"), spec(Some("a.c"), None, Some(7)));
        assert_eq!(p(":f.1"), spec(None, Some("f.1"), None));
        assert_eq!(p("f:"), spec(Some("f"), None, None));
        assert_eq!(p("a:b:f"), spec(Some("a:b"), Some("f"), None));
        assert_eq!(p(""), Symspec::default());
        assert_eq!(p(":"), Symspec::default());
        let a = ArcSpec::parse(b"main/:f").expect("has a slash");
        assert_eq!(
            (a.from, a.to),
            (spec(None, Some("main"), None), spec(None, Some("f"), None))
        );
        assert_eq!(ArcSpec::parse(b"mainf"), None);
    }

    fn table(names: &[&str]) -> SymbolTable {
        let end = 0x1000 + 0x10 * names.len() as u64;
        functions(&spaced(names, 0x10), end)
    }

    #[test]
    fn include_beats_exclude_and_unmatched_specs_add_nothing() {
        let t = table(&["a", "b", "mcount", "c"]);
        let mut specs = Symspecs::default();
        specs.add(SymspecTable::IncludeFlat, b"nosuch");
        specs.add(SymspecTable::ExcludeFlat, b"b");
        assert_eq!(Selection::new(&t, &specs).flat, [true, false, false, true]);
        specs.add(SymspecTable::IncludeFlat, b"b");
        specs.add(SymspecTable::IncludeFlat, b"mcount");
        assert_eq!(Selection::new(&t, &specs).flat, [false, true, true, false]);
        // No debugging information: file specs match nothing, line 0 everything.
        let mut specs = Symspecs::default();
        specs.add(SymspecTable::ExcludeGraph, b"a.c");
        specs.add(SymspecTable::ExcludeTime, b"0");
        let s = Selection::new(&t, &specs);
        let on = |v: &[Toggle]| v.iter().map(|t| t.on).collect::<Vec<_>>();
        assert_eq!(on(&s.print), [true, true, false, true]);
        // `0` covers a..c, but the default `mcount` range starts later and hides it from `c`.
        assert_eq!(on(&s.time), [false, false, false, true]);
    }

    #[test]
    fn a_file_name_resolves_to_the_first_source_file_with_that_base_name() {
        let t = table(&["one", "two", "three"]);
        let file = |path: &str| {
            Some(SourceInfo {
                file: Rc::from(path.as_bytes()),
                line: 1,
            })
        };
        let sources = [
            file("/s/one/twin.c"),
            file("/s/two/twin.c"),
            file("/s/main.c"),
        ];
        let flat = |spec: &[u8], files: &[Rc<[u8]>]| {
            let mut specs = Symspecs::default();
            specs.add(SymspecTable::IncludeFlat, spec);
            specs.resolve_files(files);
            Selection::with_sources(&t, &specs, &sources).flat
        };
        // gprof's order: the most recently met file first.
        let files: Vec<Rc<[u8]>> = ["/s/main.c", "/s/two/twin.c", "/s/one/twin.c"]
            .iter()
            .map(|f| Rc::from(f.as_bytes()))
            .collect();
        assert_eq!(flat(b"twin.c", &files), [false, true, false]);
        // `one` is in the other twin.c: the spec matches nothing, and adds nothing.
        assert_eq!(flat(b"twin.c:one", &files), [true, true, true]);
        assert_eq!(flat(b"twin.c:two", &files), [false, true, false]);
        // A name no file has matches nothing; unresolved, the base name matches both.
        assert_eq!(flat(b"twin.c", &[]), [true, true, true]);
        let mut specs = Symspecs::default();
        specs.add(SymspecTable::IncludeFlat, b"twin.c");
        let unresolved = Selection::with_sources(&t, &specs, &sources).flat;
        assert_eq!(unresolved, [true, true, false]);
    }

    #[test]
    fn arc_specs_pair_their_sides() {
        let t = table(&["a", "b", "c"]);
        let mut specs = Symspecs::default();
        specs.add(SymspecTable::ExcludeArcs, b"a/b");
        specs.add(SymspecTable::ExcludeArcs, b"b/c");
        specs.add(SymspecTable::ExcludeArcs, b"no-slash");
        let s = Selection::new(&t, &specs);
        assert!(!s.keeps_arc(&t, 0, 1) && !s.keeps_arc(&t, 1, 2));
        assert!(s.keeps_arc(&t, 0, 2) && s.keeps_arc(&t, 1, 1));
        let mut specs = Symspecs::default();
        specs.add(SymspecTable::IncludeArcs, b"/c");
        let s = Selection::new(&t, &specs);
        assert!(s.keeps_arc(&t, 0, 2) && s.keeps_arc(&t, 2, 2));
        assert!(!s.keeps_arc(&t, 2, 1));
    }
}
