//! A seamless measurement → the profile model: the processes pkgmon recorded, symbolized and
//! merged by [`Seamless::build`], as a model with their real sampled stacks, for exports and
//! diffs.

use profile_model::{Label, LabelKey, Profile, Side, ValueKind};

use crate::model::{Model, ModelOptions};
use crate::{SampledStack, Seamless};

/// The profile model of a seamless profile.
///
/// Each function of the merged table is a model function with its listing label split off
/// (`137u:read` is `read`, labelled `137u`, user side; `137k:ksys_read` kernel side; the
/// system-wide `kernel:` and `other:` are kernel side), so exports name functions as the
/// listings do and mark kernel frames. Samples are the processes' sampled stacks (build the
/// profile with [`crate::SeamlessOptions::stacks`] set): kernel frames above the user frames
/// that entered the kernel, `[interrupt]` between them for an interrupt, `[truncated]` beyond a
/// stack cut short; each labelled with its process's pid and command name. Their arcs, sampled
/// edges that the stacks already hold, are left out. Without stacks (a measurement that has no
/// stacks files), the histograms and arcs are taken as [`crate::gmon_model`] takes them.
///
/// With sampled stacks and [`Seamless::off_cpu`] (latency files recorded with `pkgmon
/// --blocking`), a second value type, `off-cpu` in nanoseconds, holds where the system
/// calls slept: the sleep site's kernel frames above the call site, one sample per site with
/// the time blocked there (the CPU samples have 0 of it, and the sleeps 0 samples), so that
/// `--value off-cpu` exports the blocked time as any other profile.
pub fn measurement_model(seamless: &Seamless) -> Profile {
    measurement_model_with(seamless, ProcessLabels::Pid)
}

/// How the functions of a process are labelled in [`measurement_model_with`]. The system-wide
/// kernel profiles keep `kernel` and `other` in every style.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProcessLabels {
    /// As the listings label them: `137u`, `137k`. The default.
    #[default]
    Pid,
    /// By side alone: `u`, `k` — for comparing one process with one of another run, whose pid
    /// differs.
    Side,
    /// By command name and side: `prog/u`, `prog/k` — for comparing whole systems across
    /// runs, where processes get other pids but keep their names.
    Comm,
}

/// The profile model of a seamless profile, its functions labelled in the given style (see
/// [`measurement_model`], which labels them as the listings do).
pub fn measurement_model_with(seamless: &Seamless, labels_style: ProcessLabels) -> Profile {
    // The names are labelled and demangled already.
    let options = ModelOptions {
        demangle: false,
        ..ModelOptions::default()
    };
    let mut model = Model::new(&seamless.table, &options);
    let off_cpu = !seamless.stacks.is_empty() && !seamless.off_cpu.is_empty();
    if off_cpu {
        model.b.value_type(ValueKind::OFF_CPU_TIME);
    }
    for p in &seamless.processes {
        match &p.files {
            Some(files) if p.label.starts_with(|c: char| c.is_ascii_digit()) => {
                let comm = model.b.string(&files.comm.to_string());
                let labels = model.b.label_set(&[
                    Label::number(LabelKey::Pid, i64::from(files.pid)),
                    Label::text(LabelKey::Comm, comm),
                ]);
                for (suffix, side) in [("u", Side::User), ("k", Side::Kernel)] {
                    let prefix = format!("{}{suffix}", p.label);
                    let label = match labels_style {
                        ProcessLabels::Pid => prefix.clone(),
                        ProcessLabels::Side => suffix.to_owned(),
                        ProcessLabels::Comm => format!("{}/{suffix}", files.comm),
                    };
                    model.processes.insert(prefix, (side, labels, label));
                }
            }
            _ => {
                let comm = model.b.string(&p.label);
                let labels = model.b.label_set(&[Label::text(LabelKey::Comm, comm)]);
                model
                    .processes
                    .insert(p.label.clone(), (Side::Kernel, labels, p.label.clone()));
            }
        }
    }
    model.set_period(&seamless.sum);
    if seamless.stacks.is_empty() {
        model.add_histogram(&seamless.sum);
        model.add_arcs(&seamless.sum);
    } else {
        let values = |n: u64| {
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            if off_cpu { vec![n, 0] } else { vec![n] }
        };
        add_stacks(&mut model, &seamless.stacks, values);
        if off_cpu {
            add_stacks(&mut model, &seamless.off_cpu, |ns| {
                vec![0, i64::try_from(ns).unwrap_or(i64::MAX)]
            });
        }
    }
    model.b.build()
}

/// One sample per distinct sampled stack, labelled with the process of its innermost frame,
/// with the values `values` gives for its count.
fn add_stacks(model: &mut Model<'_>, stacks: &[SampledStack], values: impl Fn(u64) -> Vec<i64>) {
    let table = model.table;
    let mut frames = Vec::new();
    for stack in stacks {
        frames.clear();
        let mut labels = None;
        // Innermost first in the file; the model takes the outermost caller first.
        for &address in &stack.frames {
            let (frame, l) = model.frame(table.lookup(address), address);
            labels.get_or_insert(l);
            frames.push(frame);
        }
        frames.reverse();
        let (Some(s), Some(labels)) = (model.b.stack_of(&frames), labels) else {
            continue;
        };
        // One value per value type: cannot fail.
        let _ = model.b.add_sample(s, labels, &values(stack.samples));
    }
}
