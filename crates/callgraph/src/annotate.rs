//! gprof's execution counts (`-C`) and annotated source listing (`-A`).
//!
//! Without basic-block records (modern gcc writes none) the only counts are the calls of each
//! function, shown on the source line where the function starts. Line symbols (`-l`) carry no
//! count of their own: they make a line "executable" but leave it unannotated.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::lines::{SourceInfo, SourceLines};
use crate::sort::glibc_qsort;
use crate::symbols::SymbolTable;
use crate::symspec::{SourcePosition, Symspec};

/// Which symbols an include/exclude pair of symspec lists selects (`-A`/`-J` for annotated
/// source, `-C`/`-Z` for execution counts): those included, or when no symbol is included all
/// those not excluded. File and line specs match the symbols' source positions in `sources`.
pub fn select_symbols(
    table: &SymbolTable,
    sources: &[Option<SourceInfo>],
    include: &[Symspec],
    exclude: &[Symspec],
) -> Vec<bool> {
    let hits = |specs: &[Symspec]| -> Vec<bool> {
        table
            .symbols()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let source = match sources.get(i).and_then(Option::as_ref) {
                    Some(src) => SourcePosition {
                        file: Some(&src.file),
                        line: src.line,
                    },
                    None => SourcePosition::default(),
                };
                specs.iter().any(|spec| spec.matches(s, source))
            })
            .collect()
    };
    let (inc, exc) = (hits(include), hits(exclude));
    // A table whose specs name no symbol stays empty, as in gprof: `-A nosuch` annotates all.
    let include_empty = !inc.contains(&true);
    inc.iter()
        .zip(&exc)
        .map(|(&i, &e)| i || (include_empty && !e))
        .collect()
}

/// Source files in the order gprof lists them: the most recently seen first.
///
/// gprof meets a file when it looks up the source of a symbol it reads from `.symtab` (in that
/// order, before sorting), then, in line mode, of each line symbol in address order.
pub fn source_file_order(
    table: &SymbolTable,
    lines: Option<&SourceLines>,
    sources: &[Option<SourceInfo>],
) -> Vec<Rc<[u8]>> {
    let mut seen: Vec<Rc<[u8]>> = Vec::new();
    let mut meet = |file: &Rc<[u8]>| {
        if !seen.iter().any(|f| f == file) {
            seen.push(file.clone());
        }
    };
    if let Some(lines) = lines {
        for &address in table.read_order() {
            if let Some(p) = lines.nearest(address) {
                meet(&p.file);
            }
        }
    }
    for (s, src) in table.symbols().iter().zip(sources) {
        if let Some(src) = src
            && !s.is_function
        {
            meet(&src.file);
        }
    }
    seen.reverse();
    seen
}

/// The `-C` listing: `FILE:LINE: (NAME:0xADDR) N executions` for every selected symbol (all
/// when `selected` is empty) that was called (every one with `display_unused`), ordered by file
/// and line where both symbols have one and by address otherwise, as gprof's comparator does.
///
/// Returns an error if writing fails.
pub fn write_exec_counts<W: Write>(
    mut out: W,
    table: &SymbolTable,
    sources: &[Option<SourceInfo>],
    ncalls: &[u64],
    selected: &[bool],
    display_unused: bool,
    after_other_output: bool,
) -> io::Result<()> {
    let symbols = table.symbols();
    let calls = |i: usize| ncalls.get(i).copied().unwrap_or(0);
    // gprof sorts the symbols the specs select, and skips uncalled ones only when printing;
    // its comparator mixes two orders, so the set sorted changes the order of the rest.
    let mut order: Vec<usize> = (0..symbols.len())
        .filter(|&i| selected.get(i).copied().unwrap_or(true))
        .collect();
    let source = |i: usize| sources.get(i).and_then(Option::as_ref);
    glibc_qsort(&mut order, |&a, &b| match (source(a), source(b)) {
        (Some(x), Some(y)) => x
            .file
            .cmp(&y.file)
            .then(x.line.cmp(&y.line))
            .then(symbols[a].address.cmp(&symbols[b].address)),
        _ => symbols[a].address.cmp(&symbols[b].address),
    });
    let mut buf = Vec::new();
    if after_other_output {
        buf.extend_from_slice(b"\x0c\n");
    }
    for i in order {
        let calls = calls(i);
        if calls == 0 && !display_unused {
            continue;
        }
        match source(i) {
            Some(s) => {
                buf.extend_from_slice(&s.file);
                buf.extend_from_slice(format!(":{}: (", s.line).as_bytes());
            }
            None => buf.extend_from_slice(b"<unknown>:0: ("),
        }
        buf.extend_from_slice(&symbols[i].name);
        buf.extend_from_slice(
            format!(":0x{:x}) {calls} executions\n", symbols[i].address).as_bytes(),
        );
    }
    out.write_all(&buf)
}

/// Settings of the annotated-source listing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnnotateOptions {
    /// Counts below this show as `#####` (`-m`). Default is 1.
    pub min_count: i64,
    /// Rows of the "Top N Lines" table (`-t`); 0 or less leaves the table out. Default is 10.
    pub table_length: i64,
    /// Directories to look for sources in (`-I`, `GPROF_PATH`) when a file's own path does not
    /// lead to it. Default is empty.
    pub directories: Vec<PathBuf>,
    /// List files whose functions were never called (`-z`). Default is false.
    pub display_unused: bool,
    /// Annotate every line that has a symbol (`-x`): a line without a count of its own repeats
    /// the count last shown above it, or at the top of a file the last one shown in the file
    /// listed before. Default is false.
    pub all_lines: bool,
    /// Something was printed before, so the first file opens with a form feed. Default is
    /// false.
    pub after_other_output: bool,
    /// Which symbols count (`-A`/`-J` with symspecs, see [`select_symbols`]); the others are
    /// left out as if absent. Default is empty: all.
    pub selected: Vec<bool>,
    /// Write each file's listing to `BASENAME-ann` in the current directory instead (`-y`),
    /// without the `*** File` line and the separators. Default is false.
    pub separate_files: bool,
}

impl Default for AnnotateOptions {
    fn default() -> Self {
        AnnotateOptions {
            min_count: 1,
            table_length: 10,
            directories: Vec::new(),
            display_unused: false,
            all_lines: false,
            after_other_output: false,
            selected: Vec::new(),
            separate_files: false,
        }
    }
}

/// What one source line has: any symbol, whether it shows a count, and the calls of the
/// functions starting on it.
#[derive(Debug, Clone, Copy, Default)]
struct LineCount {
    has_symbol: bool,
    has_count: bool,
    count: u64,
}

/// Writes gprof's annotated source (`-A`): for each source file (in `files` order) whose
/// functions were called, the file with a 16-column count margin, the most executed lines and a
/// summary (with `separate_files`, into `BASENAME-ann` files). A file that cannot be found, or
/// an `-ann` file that cannot be written, is reported through `warn` and skipped.
///
/// Returns an error if writing fails.
#[allow(clippy::too_many_arguments)]
pub fn write_annotated_source<W: Write>(
    mut out: W,
    table: &SymbolTable,
    sources: &[Option<SourceInfo>],
    ncalls: &[u64],
    files: &[Rc<[u8]>],
    options: &AnnotateOptions,
    warn: &mut dyn FnMut(String),
) -> io::Result<()> {
    let symbols = table.symbols();
    let mut first_file = true;
    // The count `-x` repeats on a line without one of its own: the last count shown, in this
    // file or, at its start, in the file listed before (gprof keeps it across files).
    let mut last = 0u64;
    for file in files {
        // A map, not a vector: damaged debugging information can claim any line number.
        let mut counts: std::collections::BTreeMap<u64, LineCount> = Default::default();
        let mut total: u64 = 0;
        for (i, src) in sources.iter().enumerate() {
            let Some(src) = src else { continue };
            if src.file != *file || !options.selected.get(i).copied().unwrap_or(true) {
                continue;
            }
            let c = counts.entry(src.line).or_default();
            // The first symbol on a line (in address order) decides whether it shows a count:
            // a line symbol first leaves it blank, even if a function starts there too
            // (whose calls still count in the totals and the top lines).
            if !c.has_symbol {
                c.has_symbol = true;
                c.has_count = symbols[i].is_function;
            }
            if symbols[i].is_function {
                let n = ncalls.get(i).copied().unwrap_or(0);
                c.count = c.count.wrapping_add(n);
                total = total.wrapping_add(n);
            }
        }
        if total == 0 && !options.display_unused {
            continue;
        }
        let Some(text) = locate(file, &options.directories) else {
            warn(format!(
                "could not locate `{}'",
                String::from_utf8_lossy(file)
            ));
            continue;
        };
        let mut buf = Vec::with_capacity(text.len() * 2 + 512);
        if !options.separate_files {
            if !first_file {
                buf.push(b'\n');
            }
            if !first_file || options.after_other_output {
                buf.extend_from_slice(b"\x0c\n");
            }
            first_file = false;
            buf.extend_from_slice(b"*** File ");
            buf.extend_from_slice(file);
            buf.extend_from_slice(b":\n");
        }
        let mut body = text.as_slice();
        let mut number = 1u64;
        // Only lines the file has count as executable or executed: a header's functions
        // credited to the `.c` file that includes it can claim lines far past its end.
        let (mut executable, mut executed) = (0u64, 0u64);
        while !body.is_empty() {
            // The text is copied as it is: a last line without a newline stays without one.
            let (line, rest) = match body.iter().position(|&b| b == b'\n') {
                Some(nl) => (&body[..=nl], &body[nl + 1..]),
                None => (body, &[][..]),
            };
            let c = counts.get(&number).copied().unwrap_or_default();
            let shown = if c.has_count {
                last = c.count;
                Some(c.count)
            } else if options.all_lines && c.has_symbol {
                Some(last)
            } else {
                None
            };
            executable += u64::from(c.has_symbol);
            executed += u64::from(shown.is_some());
            if let Some(count) = shown {
                if i128::from(count) < i128::from(options.min_count) {
                    buf.extend_from_slice(b"       ##### -> ");
                } else {
                    buf.extend_from_slice(format!("{count:>12} -> ").as_bytes());
                }
            } else {
                buf.extend_from_slice(&[b' '; 16]);
            }
            buf.extend_from_slice(line);
            body = rest;
            number += 1;
        }
        if options.table_length > 0 {
            let mut top: Vec<(u64, u64)> = counts
                .iter()
                .filter(|(_, c)| c.count > 0)
                .map(|(&l, c)| (l, c.count))
                .collect();
            glibc_qsort(&mut top, |a, b| b.1.cmp(&a.1));
            let n = usize::try_from(options.table_length).unwrap_or(usize::MAX);
            buf.extend_from_slice(
                format!(
                    "\n\nTop {} Lines:\n\n     Line      Count\n\n",
                    options.table_length
                )
                .as_bytes(),
            );
            for (line, count) in top.into_iter().take(n) {
                buf.extend_from_slice(format!("{line:>9} {count:>10}\n").as_bytes());
            }
        }
        buf.extend_from_slice(b"\nExecution Summary:\n\n");
        buf.extend_from_slice(
            format!("{executable:>9}   Executable lines in this file\n").as_bytes(),
        );
        buf.extend_from_slice(format!("{executed:>9}   Lines executed\n").as_bytes());
        // A file without executable lines is "100 % executed", at 0 executions per line.
        let (percent, average) = if executable == 0 {
            (100.0, 0.0)
        } else {
            (
                100.0 * executed as f64 / executable as f64,
                total as f64 / executable as f64,
            )
        };
        buf.extend_from_slice(
            format!("{:>9}   Percent of the file executed\n", fixed2(percent)).as_bytes(),
        );
        buf.extend_from_slice(
            format!("\n{total:>9}   Total number of line executions\n").as_bytes(),
        );
        buf.extend_from_slice(
            format!("{:>9}   Average executions per line\n", fixed2(average)).as_bytes(),
        );
        if options.separate_files {
            let base = file.rsplit(|&b| b == b'/').next().unwrap_or(file);
            let mut name = String::from_utf8_lossy(base).into_owned();
            name.push_str("-ann");
            if let Err(e) = safe_fs::replace_file(&name, &buf) {
                warn(e.to_string());
            }
        } else {
            out.write_all(&buf)?;
        }
    }
    Ok(())
}

/// `%.2f`, with C's spelling of NaN and infinity.
fn fixed2(v: f64) -> String {
    if v.is_nan() {
        "-nan".to_string()
    } else if v.is_infinite() {
        "inf".to_string()
    } else {
        format!("{v:.2}")
    }
}

/// Finds a source file as gprof does: the path itself (relative paths from the current
/// directory), then under each search directory, then its base name in each search directory.
fn locate(file: &[u8], directories: &[PathBuf]) -> Option<Vec<u8>> {
    let path = Path::new(std::str::from_utf8(file).ok()?);
    let mut candidates: Vec<PathBuf> = vec![path.to_path_buf()];
    if !path.is_absolute() {
        candidates.extend(directories.iter().map(|d| d.join(path)));
    }
    if let Some(base) = path.file_name() {
        candidates.extend(directories.iter().map(|d| d.join(base)));
    }
    // Source files named by the image's debugging information: a FIFO or device there is
    // skipped like a missing file, never read.
    candidates.into_iter().find_map(|c| {
        crate::input::read_input(&c, crate::input::TEXT_MAX_BYTES)
            .ok()
            .map(safe_fs::Contents::into_vec)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::RawSymbol;
    use gmon_format::{AddressSize, Endian};

    /// A six-line source: function `f` (3 calls) starts on line 1 after a line symbol of `g`,
    /// function `h` (5 calls) on line 3, a line symbol of `h` on line 4; no newline at the end.
    fn annotate(options: &AnnotateOptions) -> String {
        annotate_at(options, [1, 1, 3, 4])
    }

    /// The same symbols at other lines of the six-line source.
    fn annotate_at(options: &AnnotateOptions, lines: [u64; 4]) -> String {
        static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("pkgprof-annotate-{}-{run}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.c");
        std::fs::write(&path, "one\ntwo\nthree\nfour\nfive\nsix").unwrap();
        let file: Rc<[u8]> = Rc::from(path.to_str().unwrap().as_bytes());
        let raw = |name: &str, address, is_function| RawSymbol {
            name: name.as_bytes().to_vec(),
            address,
            is_function,
            is_static: false,
        };
        let t = SymbolTable::from_symbols(
            vec![
                raw("g", 0x100, false),
                raw("f", 0x110, true),
                raw("h", 0x120, true),
                raw("h", 0x130, false),
            ],
            0x140,
            AddressSize::U64,
            Endian::Little,
        );
        let at = |line| {
            Some(SourceInfo {
                file: file.clone(),
                line,
            })
        };
        let sources = lines.map(at);
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        write_annotated_source(
            &mut out,
            &t,
            &sources,
            &[0, 3, 5, 0],
            std::slice::from_ref(&file),
            options,
            &mut |w| warnings.push(w),
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let _ = std::fs::remove_dir_all(&dir);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_first_symbol_on_a_line_decides_whether_it_shows_a_count() {
        let text = annotate(&AnnotateOptions::default());
        let body: Vec<&str> = text.lines().skip(1).take(6).collect();
        assert_eq!(
            body,
            [
                "                one",
                "                two",
                "           5 -> three",
                "                four",
                "                five",
                "                six",
            ]
        );
        // Line 1 still counts f's calls in the top lines and the totals.
        assert!(
            text.contains("        3          5\n        1          3\n"),
            "{text}"
        );
        assert!(
            text.contains("        3   Executable lines in this file\n"),
            "{text}"
        );
        assert!(text.contains("        1   Lines executed\n"), "{text}");
        assert!(
            text.contains("        8   Total number of line executions\n"),
            "{text}"
        );
    }

    #[test]
    fn all_lines_repeat_the_last_count_shown() {
        let options = AnnotateOptions {
            all_lines: true,
            ..AnnotateOptions::default()
        };
        let text = annotate(&options);
        let body: Vec<&str> = text.lines().skip(1).take(4).collect();
        assert_eq!(
            body,
            [
                "       ##### -> one",
                "                two",
                "           5 -> three",
                "           5 -> four",
            ]
        );
        assert!(text.contains("        3   Lines executed\n"), "{text}");
    }

    #[test]
    fn lines_past_the_end_of_the_file_count_only_in_the_totals() {
        // h's line symbol claims line 9 of a six-line file (header code credited to the .c).
        let text = annotate_at(&AnnotateOptions::default(), [1, 1, 3, 9]);
        assert!(
            text.contains("        2   Executable lines in this file\n"),
            "{text}"
        );
        // Nothing on lines the file has: "100 %" of nothing executed, 0 per line.
        let text = annotate_at(&AnnotateOptions::default(), [7, 7, 8, 9]);
        assert!(
            text.contains("        8          5\n        7          3\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "        0   Executable lines in this file\n        0   Lines executed\n   100.00   Percent of the file executed\n\n        8   Total number of line executions\n     0.00   Average executions per line\n"
            ),
            "{text}"
        );
    }
}
