//! The flat profile as data: which functions are listed, in which order, with which numbers.

use std::cmp::Ordering;

use crate::calls::CallCounts;
use crate::histogram::HistogramTimes;
use crate::sort::glibc_qsort_fast;
use crate::symbols::SymbolTable;

/// What the flat profile lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlatOptions {
    /// List functions that were neither called nor sampled (`-z`). Default is false.
    pub display_unused: bool,
}

/// The prefixes gprof walks to pick the per-call unit, with the factor that converts seconds
/// into each: from tera-seconds down to atto-seconds.
const UNIT_PREFIXES: [(u8, f64); 11] = [
    (b'T', 1e-12),
    (b'G', 1e-9),
    (b'M', 1e-6),
    (b'K', 1e-3),
    (b' ', 1.0),
    (b'm', 1e3),
    (b'u', 1e6),
    (b'n', 1e9),
    (b'p', 1e12),
    (b'f', 1e15),
    (b'a', 1e18),
];

/// What gprof 2.40 (Debian's build) uses when no prefix fits — per-call times below 1e-18 or
/// from 1e15 seconds up, or infinite ones when the rate is 0: it reads one entry past its
/// table, which holds the character `<` and, as the factor, the bytes of a neighbouring
/// string. Observed, not designed; it makes such profiles print `<s/call` and huge numbers.
const PAST_THE_PREFIXES: (u8, f64) = (b'<', f64::from_le_bytes(*b">\0 (addr"));

/// One line of the flat profile.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatRow {
    /// Index of the function in [`SymbolTable::symbols`].
    pub symbol: usize,
    /// Share of the histogram's total time, in percent (can exceed 100, see
    /// [`HistogramTimes::assign`]).
    pub percent: f64,
    /// Self seconds of this row and all rows above it.
    pub cumulative_seconds: f64,
    /// Seconds spent in the function itself.
    pub self_seconds: f64,
    /// Calls from other functions; `None` when there were none, which leaves the call columns
    /// blank.
    pub calls: Option<u64>,
    /// Self time per call, in the profile's [`FlatProfile::unit_prefix`] unit.
    pub self_per_call: f64,
    /// Self plus children's time per call, in the same unit.
    pub total_per_call: f64,
}

/// gprof's flat profile, computed but not printed.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatProfile {
    /// Listed functions, most time first.
    pub rows: Vec<FlatRow>,
    /// Names of the listed functions, in row order, as stored in the image. gprof prints C++
    /// names demangled by default; this crate has no demangler matching libiberty's output
    /// yet, so a caller wanting that replaces these before printing (sorting has already used
    /// the stored names, as gprof does).
    pub names: Vec<Vec<u8>>,
    /// Duration one sample stands for (1 / hz).
    pub sample_period: f64,
    /// Histogram unit name (`seconds`).
    pub dimension: Vec<u8>,
    /// Histogram unit abbreviation (`s`).
    pub dimension_abbrev: u8,
    /// Whether the histogram holds no time at all, in which case percentages are of 1 tick.
    pub no_time_accumulated: bool,
    /// SI prefix of the per-call columns: `m` for milliseconds, `u`, `n`, … , ` ` for plain
    /// units, and `T` when nothing was called (gprof's fallback).
    pub unit_prefix: u8,
}

impl FlatProfile {
    /// Computes the flat profile.
    ///
    /// `child_time` is, per symbol, the time its callees spent on its behalf in ticks (gprof's
    /// propagated child time), which only the "total per call" column and the choice of unit
    /// use. Time propagation through the call graph is not implemented yet: pass an empty
    /// slice (read as all zeros) until it is, and "total" then equals "self".
    ///
    /// `included` marks the symbols the flat profile may list (see
    /// [`crate::default_flat_selection`]); all vectors are indexed like the table.
    pub fn new(
        table: &SymbolTable,
        times: &HistogramTimes,
        calls: &CallCounts,
        child_time: &[f64],
        included: &[bool],
        options: &FlatOptions,
    ) -> Self {
        let n = table.len();
        let time = |i: usize| times.time.get(i).copied().unwrap_or(0.0);
        let ncalls = |i: usize| calls.calls.get(i).copied().unwrap_or(0);
        let child = |i: usize| child_time.get(i).copied().unwrap_or(0.0);
        let hz = f64::from(times.hz);

        // The unit is chosen from the slowest call of any called function.
        let mut slowest = 0.0;
        for i in 0..n {
            if ncalls(i) != 0 {
                let per_call = (time(i) + child(i)) / ncalls(i) as f64;
                if per_call > slowest {
                    slowest = per_call;
                }
            }
        }
        let mut prefix = UNIT_PREFIXES[0];
        if slowest != 0.0 {
            let seconds = slowest / hz;
            prefix = UNIT_PREFIXES
                .iter()
                .find(|(_, factor)| (1.0..1000.0).contains(&(seconds * factor)))
                .copied()
                .unwrap_or(PAST_THE_PREFIXES);
        }
        let factor = prefix.1;

        let symbols = table.symbols();
        // Compact keys side by side; without NaN times the comparator is consistent, and any
        // stable sort gives glibc's order.
        let mut keys: Vec<(f64, u64, &[u8], usize)> = (0..n)
            .map(|i| (time(i), ncalls(i), &symbols[i].name[..], i))
            .collect();
        let consistent = !keys.iter().any(|k| k.0.is_nan());
        glibc_qsort_fast(&mut keys, consistent, |a, b| {
            if a.0 > b.0 {
                return Ordering::Less;
            }
            if a.0 < b.0 {
                return Ordering::Greater;
            }
            b.1.cmp(&a.1).then_with(|| a.2.cmp(b.2))
        });
        let order: Vec<usize> = keys.iter().map(|k| k.3).collect();
        drop(keys);

        let no_time_accumulated = times.total_time <= 0.0;
        let total = if no_time_accumulated {
            1.0
        } else {
            times.total_time
        };
        let mut rows = Vec::new();
        let mut names = Vec::new();
        let mut cumulative = 0.0;
        for i in order {
            let (t, c) = (time(i), ncalls(i));
            if !included.get(i).copied().unwrap_or(true)
                || (!options.display_unused && c == 0 && t == 0.0)
            {
                continue;
            }
            cumulative += t;
            let calls = c as f64;
            rows.push(FlatRow {
                symbol: i,
                percent: 100.0 * t / total,
                cumulative_seconds: cumulative / hz,
                self_seconds: t / hz,
                calls: (c != 0).then_some(c),
                self_per_call: factor * t / hz / calls,
                total_per_call: factor * (t + child(i)) / hz / calls,
            });
            names.push(symbols[i].name.clone());
        }
        FlatProfile {
            rows,
            names,
            sample_period: times.sample_period(),
            dimension: times.dimension.clone(),
            dimension_abbrev: times.dimension_abbrev,
            no_time_accumulated,
            unit_prefix: prefix.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::flat::{FlatPrintOptions, write_flat};
    use crate::test_util::{functions, spaced};

    fn table(names: &[&str]) -> SymbolTable {
        functions(&spaced(names, 0x10), 0x2000)
    }

    fn times(time: &[f64], total_time: f64, hz: u32) -> HistogramTimes {
        crate::test_util::times(time.to_vec(), total_time, hz)
    }

    fn print(t: &SymbolTable, h: &HistogramTimes, calls: &[u64], child: &[f64], z: bool) -> String {
        let calls = CallCounts {
            calls: calls.to_vec(),
            self_calls: vec![0; calls.len()],
        };
        let included = vec![true; t.len()];
        let options = FlatOptions { display_unused: z };
        let flat = FlatProfile::new(t, h, &calls, child, &included, &options);
        let mut out = Vec::new();
        write_flat(&mut out, &flat, &FlatPrintOptions::default()).unwrap();
        String::from_utf8(out).unwrap()
    }

    const HEADER: &str = "Flat profile:\n\nEach sample counts as 0.01 seconds.\n  %   cumulative   self              self     total           \n";

    #[test]
    fn percentages_can_exceed_100_and_no_calls_means_ts_per_call() {
        let t = table(&["_start", "fa", "fb"]);
        let h = times(&[4.0 / 4.8, 6.0 / 4.8, 0.0], 2.0, 100);
        assert_eq!(
            print(&t, &h, &[0, 0, 0], &[], false),
            format!(
                "{HEADER} time   seconds   seconds    calls  Ts/call  Ts/call  name    \n\
                 \x2062.50      0.01     0.01                             fa\n\
                 \x2041.67      0.02     0.01                             _start\n"
            )
        );
    }

    #[test]
    fn ties_sort_by_calls_then_name_and_the_unit_follows_the_slowest_call() {
        let t = table(&["b", "a", "c", "d"]);
        let h = times(&[5.0, 5.0, 5.0, 0.0], 15.0, 100);
        // c: 5 ticks in 1 call = 50 ms, with 20 ticks of children 250 ms: still ms.
        let out = print(&t, &h, &[2, 2, 1, 0], &[0.0, 0.0, 20.0, 0.0], true);
        assert_eq!(
            out,
            format!(
                "{HEADER} time   seconds   seconds    calls  ms/call  ms/call  name    \n\
                 \x2033.33      0.05     0.05        2    25.00    25.00  a\n\
                 \x2033.33      0.10     0.05        2    25.00    25.00  b\n\
                 \x2033.33      0.15     0.05        1    50.00   250.00  c\n\
                 \x20 0.00      0.15     0.00                             d\n"
            )
        );
        // A call of 2000 s picks plain seconds; printed with a leading space.
        let h = times(&[200_000.0, 0.0, 0.0, 0.0], 200_000.0, 100);
        let out = print(&t, &h, &[1, 0, 0, 0], &[], false);
        assert!(out.contains("calls  Ks/call  Ks/call"), "{out}");
        let h = times(&[2.0, 0.0, 0.0, 0.0], 2.0, 100);
        let out = print(&t, &h, &[1, 0, 0, 0], &[], false);
        assert!(out.contains("   calls  ms/call"), "{out}");
        let h = times(&[200.0, 0.0, 0.0, 0.0], 200.0, 100);
        let out = print(&t, &h, &[1, 0, 0, 0], &[], false);
        assert!(out.contains("   calls   s/call   s/call  name"), "{out}");
    }

    #[test]
    fn no_time_accumulated() {
        let t = table(&["a", "b"]);
        let h = times(&[0.0, 0.0], 0.0, 100);
        let out = print(&t, &h, &[3, 0], &[], false);
        assert_eq!(
            out,
            "Flat profile:\n\nEach sample counts as 0.01 seconds.\n no time accumulated\n\n\
             \x20 %   cumulative   self              self     total           \n\
             \x20time   seconds   seconds    calls  Ts/call  Ts/call  name    \n\
             \x20 0.00      0.00     0.00        3     0.00     0.00  a\n"
        );
    }
}
