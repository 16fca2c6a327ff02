//! Warnings about profiles that do not fit the image, where gprof prints a report of zeros,
//! `inf` or `nan` without a word.
//!
//! They never change a report: the caller prints them apart (pkgprof on stderr). One file
//! gprof cannot read the way it is written is refused instead ([`check_line_mode_blocks`]).

use std::fmt;
use std::path::Path;

use gmon_format::{Endian, Profile, Record};

use crate::error::{Error, Result};
use crate::histogram::HistogramTimes;
use crate::symbols::SymbolTable;

/// Something about a profile that makes its report misleading.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Warning {
    /// No histogram record of a profile overlaps the image's `.text`.
    HistogramOutsideText {
        /// The range the records span, `[low_pc, high_pc)`.
        histogram: (u64, u64),
        /// The image's `.text`, `[start, end)`.
        text: (u64, u64),
        /// The image is position independent and the histogram lies above all of its
        /// text: the profile most likely holds run-time addresses.
        run_time_addresses: bool,
    },
    /// A histogram record gives 0 samples per second, so every time is infinite or not a
    /// number.
    ZeroRate,
    /// Most call-graph arcs do not enter a function of the image where a `-pg` function calls
    /// `mcount`, just past its start: the profile comes from another binary (or another
    /// build of the same sources, whose functions lie elsewhere).
    ArcsOffEntries {
        /// Arcs whose callee address is not just past the start of a function.
        off: u64,
        /// All arcs of the profile.
        total: u64,
    },
    /// Most samples fell on no symbol: before the first, past the end of `.text`, or in the
    /// table's last symbol, which gprof never credits.
    SamplesOutsideSymbols {
        /// Samples (as credited, possibly fractional) that no symbol received.
        outside: f64,
        /// All samples that count in the flat profile's total.
        total: f64,
    },
}

impl Warning {
    /// The warning as one line of text, naming the profile and the image as given.
    pub fn message(&self, profile: &str, image: &str) -> String {
        match self {
            Warning::HistogramOutsideText {
                histogram,
                text,
                run_time_addresses,
            } => {
                let mut m = format!(
                    "{profile}: histogram covers {:#x}-{:#x} but {image}'s text is {:#x}-{:#x}: ",
                    histogram.0, histogram.1, text.0, text.1
                );
                if *run_time_addresses {
                    m.push_str(&format!(
                        "{image} is position independent and the profile seems to hold \
                         run-time addresses; was it written by a C library that does not \
                         subtract the load address?"
                    ));
                } else {
                    m.push_str("was the profile made by this binary?");
                }
                m
            }
            Warning::ArcsOffEntries { off, total } => format!(
                "{profile}: {off} of its {total} call-graph arcs do not enter a function of \
                 {image} where a -pg function records its calls (just past its start): was \
                 the profile made by this binary? A rebuild, even of the same sources, moves \
                 the functions"
            ),
            Warning::ZeroRate => format!(
                "{profile}: the profiling rate is 0 samples per second, so every time in the \
                 report is inf or nan"
            ),
            Warning::SamplesOutsideSymbols { outside, total } => format!(
                "{}% of the {} samples fall outside every function of {image} (before the \
                 first, past the end of its text, or in its last symbol): was the profile \
                 made by this binary?",
                Percent(100.0 * outside / total),
                Percent(*total)
            ),
        }
    }
}

/// A share printed with one decimal, or a count printed whole.
struct Percent(f64);

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.fract() == 0.0 {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:.1}", self.0)
        }
    }
}

/// Checks the histogram records of one profile against the image: whether any of them
/// overlaps its `.text` (when the table knows it), and their rate. Records that cannot be read
/// are skipped; reading reports them.
pub fn check_profile(table: &SymbolTable, profile: &Profile<'_>) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let mut span: Option<(u64, u64)> = None;
    let mut overlaps = false;
    let text = table.image_facts().map(|f| f.text);
    for record in profile.records() {
        let Ok((_, Record::Histogram(h))) = record else {
            continue;
        };
        let (lo, hi) = (h.header.low_pc, h.header.high_pc);
        span = Some(span.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        if let Some((t_lo, t_hi)) = text {
            overlaps |= lo < t_hi && t_lo < hi;
        }
        if h.header.prof_rate == 0 && !warnings.contains(&Warning::ZeroRate) {
            warnings.push(Warning::ZeroRate);
        }
    }
    if let (Some(facts), Some(histogram), false) = (table.image_facts(), span, overlaps) {
        warnings.insert(
            0,
            Warning::HistogramOutsideText {
                histogram,
                text: facts.text,
                run_time_addresses: facts.position_independent && histogram.0 >= facts.text.1,
            },
        );
    } else if let Some(w) = check_arc_entries(table, profile) {
        // Said only when the histogram did not already show the profile is not this image's.
        warnings.push(w);
    }
    warnings
}

/// How far past a function's start its `mcount` call may return: the prologue before it
/// (`endbr64`, frame pointer set-up, at most a few instructions) is well under this.
const MCOUNT_REACH: u64 = 64;

/// Checks the callee addresses of a profile's arcs: glibc records the return address of each
/// function's `mcount` call, a few bytes past the function's start. When more than half of
/// at least 4 arcs land elsewhere (deep inside a function, or on no function), the image is
/// not the one that ran.
fn check_arc_entries(table: &SymbolTable, profile: &Profile<'_>) -> Option<Warning> {
    let (mut off, mut total) = (0u64, 0u64);
    for record in profile.records() {
        let Ok((_, Record::Arc(arc))) = record else {
            continue;
        };
        total += 1;
        let entered = table
            .lookup_callee(arc.self_pc)
            .is_some_and(|i| arc.self_pc - table.symbols()[i].address <= MCOUNT_REACH);
        off += u64::from(!entered);
    }
    (total >= 4 && off * 2 > total).then_some(Warning::ArcsOffEntries { off, total })
}

/// Checks where the samples went (see [`crate::Analysis::times`]): a warning when more than
/// half of those the flat profile counts fell on no symbol.
pub fn check_samples(times: &HistogramTimes) -> Option<Warning> {
    if times.total_time <= 0.0 {
        return None;
    }
    let credited: f64 = times.time.iter().sum();
    let outside = (times.total_time - credited).max(0.0);
    (outside > 0.5 * times.total_time).then_some(Warning::SamplesOutsideSymbols {
        outside,
        total: times.total_time,
    })
}

/// Refuses a big-endian profile `profile` (read from `path`) in line mode when gprof would
/// misread one of its basic-block records: gprof reads their pair counts in the byte order of
/// the machine (little-endian x86), not the file's, so a count that reads otherwise swapped
/// claims far more pairs than the file holds and gprof stops. We stop too rather than read such
/// a file differently.
///
/// Returns [`Error::ForeignBasicBlocks`] naming the first such record.
pub fn check_line_mode_blocks(profile: &Profile<'_>, path: &Path) -> Result<()> {
    if profile.layout().endian != Endian::Big {
        return Ok(());
    }
    for record in profile.records() {
        if let Ok((offset, Record::BasicBlocks(bb))) = record {
            let count = u32::try_from(bb.len()).unwrap_or(u32::MAX);
            if count.swap_bytes() != count {
                return Err(Error::ForeignBasicBlocks {
                    path: path.to_owned(),
                    count,
                    read_as: count.swap_bytes(),
                    offset,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_mode_refuses_big_endian_block_counts_gprof_would_misread() {
        use gmon_format::{AddressSize, Header, Layout, ReadOptions, Writer};
        let file = |endian| {
            let mut w = Writer::new(Vec::new(), Layout::gnu(AddressSize::U64, endian));
            w.header(&Header::Gnu {
                version: 1,
                spare: [0; 12],
            })
            .unwrap();
            w.basic_blocks([(0x1000, 3)].into_iter()).unwrap();
            w.finish().unwrap()
        };
        let check = |endian| {
            let data = file(endian);
            let profile =
                Profile::parse(&data, &ReadOptions::new(AddressSize::U64, endian)).unwrap();
            check_line_mode_blocks(&profile, Path::new("gmon.out")).map_err(|e| e.to_string())
        };
        assert_eq!(check(Endian::Little), Ok(()));
        assert_eq!(
            check(Endian::Big),
            Err(
                "gmon.out: gprof cannot read this big-endian basic-block record in line mode: \
                 it takes the count 1 as 16777216 (at offset 0x14)"
                    .to_owned()
            )
        );
    }

    #[test]
    fn messages_name_the_files_and_the_ranges() {
        let w = Warning::HistogramOutsideText {
            histogram: (0x5555_0000, 0x5555_1000),
            text: (0x1000, 0x1300),
            run_time_addresses: false,
        };
        assert_eq!(
            w.message("gmon.out", "a.out"),
            "gmon.out: histogram covers 0x55550000-0x55551000 but a.out's text is \
             0x1000-0x1300: was the profile made by this binary?"
        );
        let w = Warning::ArcsOffEntries { off: 9, total: 12 };
        assert!(
            w.message("gmon.out", "prog").starts_with(
                "gmon.out: 9 of its 12 call-graph arcs do not enter a function of prog"
            )
        );
        let w = Warning::SamplesOutsideSymbols {
            outside: 75.0,
            total: 100.0,
        };
        assert!(w.message("g", "img").starts_with("75% of the 100 samples"));
        let w = Warning::SamplesOutsideSymbols {
            outside: 2.0,
            total: 3.0,
        };
        assert!(w.message("g", "img").starts_with("66.7% of the 3 samples"));
    }
}
