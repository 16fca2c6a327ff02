//! What pkgmon prints when a run ends: the summary of what was recorded, the notes a user can
//! act on, the command that reports it, and the exit status.

use collect_perf::Recording;

use super::{Args, DEFAULT_DIR, EXIT_FAILED};

/// What the attribution did and what it cost: per kind, the samples held and where they
/// went, the windows seen against those the kernel counted, and the records traced.
pub(super) fn print_async(
    rec: &Recording,
    moves: &gmon_format::AsyncMoves,
    block: Option<collect_perf::KernelBlock>,
) {
    let traced: u64 = rec.tracepoints.iter().map(|t| t.received).sum();
    for k in &moves.kinds {
        eprintln!(
            "pkgmon: async {}: {} samples of asynchronous work, {} charged to the processes \
             it served, {} unattributed{}",
            k.kind,
            k.held,
            k.attributed,
            k.unattributed(),
            k.residue_note()
        );
        let in_kernel = block.filter(|_| k.kind == collect_perf::AsyncKind::Block.as_str());
        let unseen = k.counted.map_or(0, |c| c.saturating_sub(k.windows));
        let why = match in_kernel {
            Some(_) => "their BPF records were lost",
            None => "ran in the idle task, where perf samples no tracepoint",
        };
        let evicted = match k.evicted {
            0 => String::new(),
            n => format!(
                " ({n} {} forgotten unconsumed to bound pkgmon's memory: see \"Security\" in \
                 the README)",
                k.object_words().0
            ),
        };
        eprintln!(
            "pkgmon: async {}: {} windows seen{}, {} {}, {} {}{evicted}",
            k.kind,
            k.windows,
            if unseen > 0 {
                format!(
                    " of {} the kernel ran ({unseen} {why}: their samples are unattributed as \
                     window-unseen)",
                    k.counted.unwrap_or(0)
                )
            } else {
                String::new()
            },
            k.objects,
            k.object_words().0,
            k.unconsumed,
            k.object_words().1
        );
        if let Some(b) = in_kernel {
            eprintln!(
                "pkgmon: async block: windows and completions recorded by BPF programs (in the \
                 idle task too): {} records, {} lost; completions the driver finishes in its \
                 interrupt handler, without the BLOCK softirq, are not attributed",
                b.records, b.lost
            );
        }
    }
    eprintln!(
        "pkgmon: async cost: {traced} tracepoint records beside {} samples, {} records lost",
        rec.sample_count,
        rec.lost_samples()
    );
}

/// One line on truncated stacks, if any: how many, and for each reason that took some (the
/// unwinder counts them) the remedy for that reason, so that the user changes the right knob.
/// `chains_from_copies`: the run's user chains were walked over the BPF copier's copies, so
/// frame pointers went on past a copy stopped at an untouched page only with the kernel's
/// (`--stack-copy kernel`); past one cut at its size the program walked them itself.
pub(super) fn truncated_note(
    truncated: u64,
    samples: u64,
    reasons: &collect_perf::UnwindStats,
    (stack_size, max_stack): (u32, u16),
    chains_from_copies: bool,
) -> Option<String> {
    let past_the_copy = if chains_from_copies {
        "with --stack-copy kernel and -fno-omit-frame-pointer, the kernel's frame-pointer walk \
         goes"
    } else {
        "frame pointers (-fno-omit-frame-pointer) go"
    };
    if truncated == 0 || samples == 0 {
        return None;
    }
    let share = 100.0 * truncated as f64 / samples as f64;
    let share = if share < 1.0 {
        format!("{truncated} of {samples} stacks ({share:.1}%) are")
    } else {
        format!("{share:.0}% of the stacks are")
    };
    let mut causes = Vec::new();
    // A copy that stopped at a page never touched goes no further whatever its size.
    let by_size = reasons.stack_copy.saturating_sub(reasons.untouched_page);
    if reasons.untouched_page > 0 {
        causes.push(format!(
            "{} ended where the stack copy stopped at a stack page not yet touched (a large \
             buffer never filled, or a frame just grown into a new page: the kernel copies \
             only pages in memory, whatever --stack-size): {past_the_copy} on past it",
            reasons.untouched_page
        ));
    }
    if by_size > 0 {
        causes.push(if stack_size < collect_perf::MAX_USER_STACK_BYTES {
            format!(
                "{by_size} ended with the {stack_size}-byte stack copy: copy more \
                 (--stack-size {}) or build with -fno-omit-frame-pointer",
                collect_perf::MAX_USER_STACK_BYTES
            )
        } else {
            format!(
                "{by_size} ended with the {stack_size}-byte stack copy, the most a sample \
                 holds: frame pointers go on past the copy (-fno-omit-frame-pointer), as far \
                 as the first function built without them"
            )
        });
    }
    if reasons.callchain_limit > 0 {
        let n = reasons.callchain_limit;
        causes.push(if max_stack > collect_perf::MAX_KERNEL_CHAIN {
            // The kernel walks at most its own limit; deeper frames come from the thread's
            // earlier samples, which may not have reached as deep.
            format!(
                "{n} reached the callchain limit: deeper than --max-stack (now {max_stack}), or \
                 than the kernel's {}-frame chain where the thread's earlier samples did not \
                 reach: allow deeper chains (--max-stack) or sample more often (-F)",
                collect_perf::MAX_KERNEL_CHAIN
            )
        } else {
            format!(
                "{n} reached the callchain limit: allow deeper chains (--max-stack, now \
                 {max_stack})"
            )
        });
    }
    if reasons.unwind_info > 0 {
        causes.push(format!(
            "{} met code with neither unwind information nor frame pointers: build it with \
             -fno-omit-frame-pointer, or keep its .eh_frame",
            reasons.unwind_info
        ));
    }
    if causes.is_empty() {
        causes.push("build with -fno-omit-frame-pointer".to_owned());
    }
    Some(format!(
        "{share} truncated (listings show their outer end as [truncated], and inclusive times \
         miss those callers); {}",
        causes.join("; ")
    ))
}

/// The process to report on first: the command pkgmon started, or the first one attached to.
pub(super) fn main_pid(rec: &Recording, args: &Args) -> Option<u32> {
    rec.child
        .as_ref()
        .map(|c| c.pid)
        .or_else(|| args.pids.first().and_then(|&p| u32::try_from(p).ok()))
}

pub(super) fn print_summary(
    rec: &Recording,
    s: &collect_perf::WriteSummary,
    args: &Args,
    main_pid: Option<u32>,
) {
    let lost = rec.lost_samples();
    eprintln!(
        "pkgmon: {} process{}, {} samples, {} lost, {} throttled, {} truncated stacks",
        s.processes,
        if s.processes == 1 { "" } else { "es" },
        s.samples,
        lost,
        rec.throttled,
        s.truncated_stacks
    );
    if s.samples == 0 && s.processes > 0 {
        let cpu_ns: u64 = s.file_sets.iter().filter_map(|f| f.cpu_ns).sum();
        eprintln!(
            "pkgmon: note: no samples: the profiled processes used {:.3} ms of CPU time, and \
             the kernel samples a task after a whole sample period of it ({} us at -F {}); \
             profile a longer run, or sample faster (-F 10000)",
            cpu_ns as f64 / 1e6,
            1_000_000 / rec.frequency.max(1),
            rec.frequency
        );
    }
    if args.all {
        eprintln!(
            "pkgmon: kernel samples for no process: {}, for other processes: {}",
            s.system_samples.0, s.system_samples.1
        );
    }
    if lost > 0 {
        // With --latency the rings carry a record per system call beside the samples, and
        // the kernel's lost count covers both.
        let traced: u64 = rec.tracepoints.iter().map(|t| t.received).sum();
        let total = rec.sample_count + traced + lost;
        let by_cpu: Vec<String> = rec
            .lost_samples_by_cpu()
            .iter()
            .map(|(cpu, n)| format!("cpu{cpu} {n}"))
            .collect();
        let (what, advice) = if traced > 0 {
            (
                "records (samples and traced events)",
                "the rings filled faster than pkgmon read them: lower -F, or trace a shorter run",
            )
        } else {
            ("samples", "lower -F")
        };
        eprintln!(
            "pkgmon: warning: lost {lost} of {total} {what} ({:.1}%; {}); {advice}",
            lost as f64 * 100.0 / total as f64,
            by_cpu.join(", ")
        );
    }
    if let Some(note) = truncated_note(
        s.truncated_stacks,
        s.samples,
        &s.unwind,
        (args.stack_size, args.max_stack),
        rec.user_chains_from_copies,
    ) {
        eprintln!("pkgmon: {note}");
    }
    let bytes: u64 = s.files.iter().map(|f| f.bytes).sum();
    eprintln!(
        "pkgmon: wrote {} files ({bytes} bytes) to {}{}",
        s.files.len(),
        args.dir.display(),
        if args.verbose {
            ":"
        } else {
            " (-v lists them)"
        }
    );
    if args.verbose {
        let width = s
            .files
            .iter()
            .map(|f| f.path.file_name().map_or(0, |n| n.len()))
            .max()
            .unwrap_or(0);
        for f in &s.files {
            let name = f
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            eprintln!("  {name:<width$}  {:>10} bytes", f.bytes);
        }
    }
    if let Some(command) = next_command(args, main_pid) {
        eprintln!("pkgmon: report with: {command}");
    }
}

/// The `pkgprof` command that reports this measurement: the main process, or the whole
/// system for `-a`; the directory only when it is not the one pkgprof reads by default.
pub(super) fn next_command(args: &Args, main_pid: Option<u32>) -> Option<String> {
    let mut command = match (main_pid, args.all) {
        (Some(pid), _) => format!("pkgprof -b --pid {pid}"),
        (None, true) => "pkgprof -b --system".to_string(),
        (None, false) => return None,
    };
    if args.dir != std::path::Path::new(DEFAULT_DIR) {
        command.push(' ');
        command.push_str(&shell_word(&args.dir.to_string_lossy()));
    }
    Some(command)
}

/// `word` quoted for a POSIX shell when it needs it.
pub(super) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The launched command's status (128+N for a signal), or 0 when attached.
pub(super) fn exit_status(rec: &Recording, attached: bool) -> u8 {
    if attached {
        return 0;
    }
    match &rec.child {
        Some(c) => match (c.code, c.signal) {
            (Some(code), _) => code as u8,
            (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
            _ => EXIT_FAILED,
        },
        None => EXIT_FAILED,
    }
}
