//! Differences of two profiles: a flat listing of what changed, function by function, and the
//! differential exports (two-count folded stacks, a red/blue flame graph, pprof with
//! `-diff_base` semantics).
//!
//! Functions of the two profiles are matched by symbolic identity — name, object path, side,
//! label and source file — never by address or build-id, so two builds of one program compare
//! (with [`DiffOptions::ignore_objects`] for profiles of one image each, whose files may be
//! named differently).
//! For each function the listing gives self and inclusive values in base and new, the change,
//! the change relative to the function's own base value, and the ratio; rows are sorted by the
//! absolute change of self, then of inclusive. Functions present in one profile only are
//! listed apart.
//!
//! Sampled counts are noisy: a function sampled n times would be sampled about n ± √n times in
//! a rerun, so the difference of two counts has a standard deviation of √(base + new). The
//! listing prints that as the row's noise and marks with `~` every change of self below twice
//! the noise: those are not worth a second look.

use std::io::{self, Write};

use profile_model::{Profile, Side, Unit, ValueTypeId};
use rustc_hash::FxHashMap;

use crate::names::Names;
use crate::reconstruct::with_stacks;
use crate::{Error, Format, Result, flamegraph, folded, pprof, value_type};

/// How the new profile is scaled before it is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Normalize {
    /// Values as recorded. The default.
    #[default]
    None,
    /// New values scaled so that the new total equals the base total (pprof's `-normalize`):
    /// compares shares when the runs differ in length.
    Total,
}

/// How a [`Diff`] is computed.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct DiffOptions {
    /// The value type compared, by name. Default is `None`: the new profile's first value type.
    pub value: Option<String>,
    /// Scaling of the new profile. Default is [`Normalize::None`].
    pub normalize: Normalize,
    /// A flame graph's title. Default is `None`: one naming the value type.
    pub title: Option<String>,
    /// Whether the object a function is in is left out of its identity. Default is false.
    /// Profiles of one image each (gmon.out files) set it, so that two builds of a program
    /// compare although their files are named differently.
    pub ignore_objects: bool,
}

/// One function of a [`Diff`]: its values in base and new (new values scaled when normalized).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DiffRow {
    /// The function's name as the listings print it.
    pub name: String,
    /// Self value in the base profile.
    pub base_self: i64,
    /// Self value in the new profile.
    pub new_self: i64,
    /// Inclusive value in the base profile.
    pub base_inclusive: i64,
    /// Inclusive value in the new profile.
    pub new_inclusive: i64,
    /// The standard deviation of the change of self from sampling alone, √(base + new samples),
    /// in the value's unit.
    pub noise: f64,
    /// Whether the function has samples in the base profile.
    pub in_base: bool,
    /// Whether the function has samples in the new profile.
    pub in_new: bool,
}

impl DiffRow {
    /// New self minus base self.
    pub fn self_delta(&self) -> i64 {
        self.new_self - self.base_self
    }

    /// New inclusive minus base inclusive.
    pub fn inclusive_delta(&self) -> i64 {
        self.new_inclusive - self.base_inclusive
    }

    /// Whether the change of self is within twice the sampling noise.
    pub fn within_noise(&self) -> bool {
        (self.self_delta().abs() as f64) < 2.0 * self.noise
    }
}

/// The difference of two profiles, function by function.
#[derive(Debug, Clone)]
pub struct Diff {
    rows: Vec<DiffRow>,
    value_name: String,
    unit: Unit,
    base_total: i64,
    new_total: i64,
    /// What new values were multiplied by.
    scale: f64,
    reconstructed: bool,
}

/// What identifies a function across two profiles.
type Key = (String, Option<String>, Side, Option<String>, Option<String>);

fn key(profile: &Profile, f: profile_model::FunctionId, ignore_objects: bool) -> Key {
    let function = profile.function(f);
    let text = |s: Option<profile_model::StringId>| s.map(|s| profile.string(s).to_owned());
    let object = function.object.filter(|_| !ignore_objects);
    (
        profile.string(function.name).to_owned(),
        text(object.map(|o| profile.object(o).path)),
        function.side,
        text(function.label),
        text(function.file),
    )
}

/// The value type named `name` (or new's first) in both profiles.
fn common_value(
    base: &Profile,
    new: &Profile,
    name: Option<&str>,
) -> Result<(ValueTypeId, ValueTypeId)> {
    let in_new = value_type(new, name)?;
    let kind = new.value_type(in_new);
    let in_base = value_type(base, Some(kind.name))?;
    Ok((in_base, in_new))
}

impl Diff {
    /// Compares `new` with `base`.
    ///
    /// Returns an error if the value type asked for is missing from either profile.
    pub fn new(base: &Profile, new: &Profile, options: &DiffOptions) -> Result<Diff> {
        let (base_view, new_view) = (with_stacks(base), with_stacks(new));
        let (b, n) = (base_view.profile(), new_view.profile());
        let (bvt, nvt) = common_value(b, n, options.value.as_deref())?;
        let kind = n.value_type(nvt);
        let (base_total, new_total) = (b.total(bvt), n.total(nvt));
        let scale = match options.normalize {
            Normalize::Total if new_total != 0 => base_total as f64 / new_total as f64,
            _ => 1.0,
        };
        // One sample of a time value is the period, when the profiles say what it is.
        let per_sample = |p: &Profile| {
            p.period()
                .filter(|period| period.kind == kind && period.value > 0)
                .map_or(1.0, |period| period.value as f64)
        };
        let (base_unit, new_unit) = (per_sample(b), per_sample(n));

        let mut rows: Vec<DiffRow> = Vec::new();
        let mut index: FxHashMap<Key, usize> = FxHashMap::default();
        for (profile, vt, is_base) in [(b, bvt, true), (n, nvt, false)] {
            let names = Names::new(profile);
            let totals = profile.function_totals(vt);
            for (f, self_value, inclusive) in totals.iter() {
                if self_value == 0 && inclusive == 0 {
                    continue;
                }
                let i = *index
                    .entry(key(profile, f, options.ignore_objects))
                    .or_insert_with(|| {
                        rows.push(DiffRow {
                            name: names.get(f).to_owned(),
                            base_self: 0,
                            new_self: 0,
                            base_inclusive: 0,
                            new_inclusive: 0,
                            noise: 0.0,
                            in_base: false,
                            in_new: false,
                        });
                        rows.len() - 1
                    });
                let row = &mut rows[i];
                if is_base {
                    row.base_self += self_value;
                    row.base_inclusive += inclusive;
                    row.in_base = true;
                } else {
                    row.new_self += (self_value as f64 * scale).round() as i64;
                    row.new_inclusive += (inclusive as f64 * scale).round() as i64;
                    row.in_new = true;
                }
            }
        }
        for row in &mut rows {
            // A value v made of v/u samples of u each varies by (v/u)·u² = v·u; a scaled one by
            // s² as much, and new's scaled value already holds one s.
            let variance =
                row.base_self as f64 * base_unit + row.new_self as f64 * new_unit * scale;
            row.noise = variance.abs().sqrt();
        }
        rows.sort_by(|x, y| {
            y.self_delta()
                .abs()
                .cmp(&x.self_delta().abs())
                .then(y.inclusive_delta().abs().cmp(&x.inclusive_delta().abs()))
                .then_with(|| x.name.cmp(&y.name))
        });
        Ok(Diff {
            rows,
            value_name: kind.name.to_owned(),
            unit: kind.unit,
            base_total,
            new_total,
            scale,
            reconstructed: base_view.reconstructed() || new_view.reconstructed(),
        })
    }

    /// Every function of either profile, largest change of self first.
    pub fn rows(&self) -> &[DiffRow] {
        &self.rows
    }

    /// Writes the listing: a header saying what is compared, the normalisation and the noise
    /// rule; the functions of both profiles; then those only in base and only in new.
    ///
    /// Returns an error if writing fails.
    pub fn write_listing(
        &self,
        base_name: &str,
        new_name: &str,
        out: impl Write,
    ) -> io::Result<()> {
        let mut out = io::BufWriter::new(out);
        let v = |x: i64| format_value(self.unit, x as f64);
        writeln!(
            out,
            "pkgprof diff of {} ({}): base {base_name}, total {}; new {new_name}, total {}",
            self.value_name,
            self.unit.as_str(),
            v(self.base_total),
            v(self.new_total),
        )?;
        match self.scale {
            1.0 => writeln!(
                out,
                "normalization: none (values as recorded; --normalize scales new to base's total)"
            )?,
            s => writeln!(
                out,
                "normalization: new values scaled by {s:.6} so that its total equals base's (pprof's -normalize)"
            )?,
        }
        writeln!(
            out,
            "noise: sqrt(base + new samples), the sampling deviation of a change of self; '~' marks a change within 2 noise"
        )?;
        if self.reconstructed {
            writeln!(out, "inclusive: {}", crate::RECONSTRUCTED_NOTE)?;
        }
        let both: Vec<&DiffRow> = self.rows.iter().filter(|r| r.in_base && r.in_new).collect();
        let only_base: Vec<&DiffRow> = self.rows.iter().filter(|r| !r.in_new).collect();
        let only_new: Vec<&DiffRow> = self.rows.iter().filter(|r| !r.in_base).collect();
        writeln!(out)?;
        writeln!(
            out,
            "{:>12} {:>12} {:>12} {:>9} {:>7} {:>9}  {:>12} {:>12} {:>12} {:>9}  name",
            "self base",
            "self new",
            "delta",
            "delta %",
            "ratio",
            "noise",
            "incl base",
            "incl new",
            "delta",
            "delta %"
        )?;
        for r in &both {
            writeln!(
                out,
                "{:>12} {:>12} {:>12} {:>9} {:>7} {:>9}{} {:>12} {:>12} {:>12} {:>9}  {}",
                v(r.base_self),
                v(r.new_self),
                signed(&v(r.self_delta())),
                percent(r.self_delta(), r.base_self),
                ratio(r.new_self, r.base_self),
                format_value(self.unit, r.noise),
                if r.within_noise() { '~' } else { ' ' },
                v(r.base_inclusive),
                v(r.new_inclusive),
                signed(&v(r.inclusive_delta())),
                percent(r.inclusive_delta(), r.base_inclusive),
                r.name
            )?;
        }
        for (title, rows, base) in [
            ("only in base", &only_base, true),
            ("only in new", &only_new, false),
        ] {
            if rows.is_empty() {
                continue;
            }
            writeln!(out)?;
            writeln!(out, "{title}:")?;
            writeln!(out, "{:>12} {:>12}  name", "self", "inclusive")?;
            for r in rows {
                let (s, i) = if base {
                    (r.base_self, r.base_inclusive)
                } else {
                    (r.new_self, r.new_inclusive)
                };
                writeln!(out, "{:>12} {:>12}  {}", v(s), v(i), r.name)?;
            }
        }
        out.flush()
    }
}

/// A value in its unit: counts as integers, times in seconds, bytes as integers.
fn format_value(unit: Unit, x: f64) -> String {
    match unit {
        Unit::Nanoseconds => format!("{:.4}", x / 1e9),
        _ => format!("{:.0}", x),
    }
}

fn signed(s: &str) -> String {
    if s.starts_with('-') || s.trim_start_matches(['0', '.']).is_empty() {
        s.to_owned()
    } else {
        format!("+{s}")
    }
}

/// The change relative to the base value, or `new` where there is no base.
fn percent(delta: i64, base: i64) -> String {
    if base == 0 {
        return if delta == 0 { "-".into() } else { "new".into() };
    }
    format!("{:+.1}%", delta as f64 * 100.0 / base as f64)
}

fn ratio(new: i64, base: i64) -> String {
    if base == 0 {
        return "-".into();
    }
    format!("{:.2}", new as f64 / base as f64)
}

/// Writes the difference of `new` and `base` in `format`: folded stacks with two counts
/// (`stack base new`, what `flamegraph.pl` and `inferno-flamegraph` draw as a differential
/// graph), that graph itself (widths from new, red where new grew, blue where it shrank), or
/// pprof with base samples negated and labelled `pprof::base=true`.
///
/// Returns an error for another format, a value type missing from either profile, or a write
/// that fails.
pub fn export_diff(
    base: &Profile,
    new: &Profile,
    format: Format,
    options: &DiffOptions,
    out: impl Write,
) -> Result<crate::Exported> {
    let (base_view, new_view) = (with_stacks(base), with_stacks(new));
    let (b, n) = (base_view.profile(), new_view.profile());
    let reconstructed = base_view.reconstructed() || new_view.reconstructed();
    let note = reconstructed.then_some(crate::RECONSTRUCTED_NOTE);
    let (bvt, nvt) = common_value(b, n, options.value.as_deref())?;
    match format {
        Format::Folded | Format::FlameGraph => {
            let lines = two_counts(
                b,
                bvt,
                n,
                nvt,
                options.normalize,
                format == Format::FlameGraph,
            );
            if format == Format::Folded {
                let mut out = io::BufWriter::new(out);
                if let Some(note) = note {
                    writeln!(out, "# {note}")?;
                }
                for (stack, before, after) in &lines {
                    writeln!(out, "{stack} {before} {after}")?;
                }
                out.flush()?;
            } else {
                let text: Vec<String> = lines
                    .iter()
                    .map(|(stack, before, after)| format!("{stack} {before} {after}"))
                    .collect();
                let kind = n.value_type(nvt);
                let title = options.title.clone().unwrap_or_else(|| {
                    format!(
                        "{} differential flame graph (red: grew, blue: shrank)",
                        kind.name
                    )
                });
                flamegraph::render(
                    text.iter().map(String::as_str),
                    &title,
                    flamegraph::count_name(kind.unit, kind.name),
                    false,
                    note,
                    out,
                )?;
            }
        }
        Format::Pprof => {
            let mut encoder = pprof::Encoder::new(&[n, b]);
            encoder.add(n, 1, false);
            encoder.add(b, -1, true);
            encoder.finish(n.value_type(nvt).name, note, out)?;
        }
        other => return Err(Error::NoDiffFormat(other.name())),
    }
    Ok(crate::Exported { reconstructed })
}

/// Every stack of either profile with its base and new counts (new scaled when normalized),
/// sorted by stack.
fn two_counts(
    b: &Profile,
    bvt: ValueTypeId,
    n: &Profile,
    nvt: ValueTypeId,
    normalize: Normalize,
    annotate_kernel: bool,
) -> Vec<(String, i64, i64)> {
    let before = folded::collapse(b, bvt, annotate_kernel);
    let after = folded::collapse(n, nvt, annotate_kernel);
    let scale = match normalize {
        Normalize::Total => {
            let (bt, nt) = (b.total(bvt), n.total(nvt));
            if nt != 0 { bt as f64 / nt as f64 } else { 1.0 }
        }
        Normalize::None => 1.0,
    };
    let mut lines: Vec<(String, i64, i64)> = Vec::with_capacity(before.len().max(after.len()));
    let (mut i, mut j) = (0, 0);
    while i < before.len() || j < after.len() {
        let order = match (before.get(i), after.get(j)) {
            (Some(x), Some(y)) => x.0.cmp(&y.0),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        let scaled = |v: i64| (v as f64 * scale).round() as i64;
        match order {
            std::cmp::Ordering::Less => {
                lines.push((before[i].0.clone(), before[i].1, 0));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                lines.push((after[j].0.clone(), 0, scaled(after[j].1)));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                lines.push((before[i].0.clone(), before[i].1, scaled(after[j].1)));
                i += 1;
                j += 1;
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::stack_profile;

    #[test]
    fn the_function_made_slower_comes_first_outside_the_noise() {
        let base = stack_profile(&[("main;fast", 1000), ("main;slow", 1000), ("main", 10)]);
        let new = stack_profile(&[("main;fast", 1010), ("main;slow", 2000), ("main;extra", 5)]);
        let diff = Diff::new(&base, &new, &DiffOptions::default()).unwrap();
        let first = &diff.rows()[0];
        assert_eq!(
            (first.name.as_str(), first.base_self, first.new_self),
            ("slow", 1000, 2000)
        );
        assert!(!first.within_noise());
        assert!((first.noise - 3000f64.sqrt()).abs() < 1e-9);
        let fast = diff.rows().iter().find(|r| r.name == "fast").unwrap();
        assert!(fast.within_noise());
        let main = diff.rows().iter().find(|r| r.name == "main").unwrap();
        assert_eq!((main.base_inclusive, main.new_inclusive), (2010, 3015));
        let extra = diff.rows().iter().find(|r| r.name == "extra").unwrap();
        assert!(!extra.in_base && extra.in_new);

        let mut out = Vec::new();
        diff.write_listing("a", "b", &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[5].ends_with("  slow"), "{text}");
        assert!(
            lines[5].contains("+1000")
                && lines[5].contains("+100.0%")
                && lines[5].contains(" 2.00 "),
            "{text}"
        );
        assert!(
            text.contains(
                "only in new:\n        self    inclusive  name\n           5            5  extra\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn normalizing_scales_new_to_base_total() {
        let base = stack_profile(&[("main;a", 100), ("main;b", 100)]);
        let new = stack_profile(&[("main;a", 200), ("main;b", 600)]);
        let options = DiffOptions {
            normalize: Normalize::Total,
            ..DiffOptions::default()
        };
        let diff = Diff::new(&base, &new, &options).unwrap();
        let rows: Vec<(&str, i64, i64)> = diff
            .rows()
            .iter()
            .map(|r| (r.name.as_str(), r.base_self, r.new_self))
            .collect();
        assert_eq!(rows, [("a", 100, 50), ("b", 100, 150), ("main", 0, 0)]);
        let mut out = Vec::new();
        export_diff(&base, &new, Format::Folded, &options, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "main;a 100 50\nmain;b 100 150\n"
        );
    }
}
