//! Folded stacks: one line per distinct stack, `outermost;…;innermost N`, sorted, what
//! FlameGraph's `flamegraph.pl` and `inferno-flamegraph` read (and what their `collapse`
//! tools write).
//!
//! Functions are named as in the listings ([`crate::names`]); stacks whose frames differ only
//! by address fold into one line. Stacks whose value is zero are left out. A first line
//! `# …` carries a note when there is one (inferno skips such lines; FlameGraph counts them as
//! ignored).

use std::io::{self, Write};

use profile_model::{FunctionId, Profile, ValueTypeId};

use crate::names::{Names, is_kernel};

/// Writes the folded stacks of value type `vt`.
pub(crate) fn write(
    profile: &Profile,
    vt: ValueTypeId,
    note: Option<&str>,
    out: impl Write,
) -> io::Result<()> {
    write_lines(&collapse(profile, vt, false), note, out)
}

/// Writes `lines` (and `note` first, as a comment).
pub(crate) fn write_lines(
    lines: &[(String, i64)],
    note: Option<&str>,
    out: impl Write,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    if let Some(note) = note {
        writeln!(out, "# {note}")?;
    }
    for (stack, value) in lines {
        writeln!(out, "{stack} {value}")?;
    }
    out.flush()
}

/// The distinct folded stacks of value type `vt` with their summed values, sorted by stack,
/// zeros left out. With `annotate_kernel`, kernel functions get FlameGraph's `_[k]` suffix
/// (flame graphs colour them apart and print them without it).
pub(crate) fn collapse(
    profile: &Profile,
    vt: ValueTypeId,
    annotate_kernel: bool,
) -> Vec<(String, i64)> {
    let names = Names::new(profile);
    let kernel: Vec<bool> = profile
        .functions()
        .map(|(f, _)| annotate_kernel && is_kernel(profile, f))
        .collect();
    let mut leaf = vec![0i64; profile.stacks().len()];
    for sample in profile.samples() {
        let slot = &mut leaf[sample.stack.index()];
        *slot = slot.saturating_add(sample.values[vt.index()]);
    }
    let mut lines: Vec<(String, i64)> = Vec::new();
    let mut functions: Vec<FunctionId> = Vec::new();
    for (stack, value) in profile.stacks().map(|(s, _)| s).zip(leaf) {
        if value == 0 {
            continue;
        }
        functions.clear();
        functions.extend(
            profile
                .stack_frames(stack)
                .map(|frame| profile.frame(frame).function),
        );
        let mut line = String::new();
        for (i, &f) in functions.iter().rev().enumerate() {
            if i > 0 {
                line.push(';');
            }
            push_name(&mut line, names.get(f));
            if kernel[f.index()] {
                line.push_str("_[k]");
            }
        }
        lines.push((line, value));
    }
    lines.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    lines.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 = kept.1.saturating_add(next.1);
        }
        same
    });
    lines.retain(|(_, v)| *v != 0);
    lines
}

/// Appends `name` with the characters that would break a folded line (`;` separates frames,
/// a newline ends the line) replaced, and spaces kept (readers split the count off at the last
/// space).
fn push_name(line: &mut String, name: &str) {
    if name.contains([';', '\n', '\r']) {
        line.extend(name.chars().map(|c| match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        }));
    } else {
        line.push_str(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::stack_profile;

    #[test]
    fn equal_stacks_fold_into_one_sorted_line() {
        let p = stack_profile(&[
            ("main;work;leaf", 3),
            ("main;idle", 2),
            ("main;work;leaf", 4),
            ("main;gone", 0),
            ("operator<(a, b)", 1),
        ]);
        let mut out = Vec::new();
        write(
            &p,
            p.value_types().next().unwrap().0,
            Some("a note"),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# a note\nmain;idle 2\nmain;work;leaf 7\noperator<(a, b) 1\n"
        );
    }
}
