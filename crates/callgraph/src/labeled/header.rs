//! The header printed before a seamless report: each process's kernel counters, as the info
//! file recorded them, and its sample counts.
//!
//! It is data, not explanation, so it is printed with `-b` too. One block per process:
//!
//! ```text
//! Process 4242 (syscall), parent 4241: ./syscall 1000
//!     cpu time:         0.250000 s user, 1.100000 s system
//!     page faults:      95 minor, 0 major
//!     context switches: 2 voluntary, 5 involuntary
//!     i/o:              0 bytes read, 4096 bytes written
//!     samples:          250 user, 1100 kernel (cpu-clock at 997 Hz); 0 lost, 0 throttled, 3 truncated stacks
//!     kernel entries:   1000 syscall, 3 fault, 2 interrupt, 0 other
//!     other counters:   perf-context-switches 7, perf-cpu-migrations 0
//! ```
//!
//! A measurement made with `pkgmon --async` adds, per kind of asynchronous work, what the
//! process received (charged to it, by the process it ran in; `-` the idle task) and gave
//! (taken from it, by beneficiary), in samples:
//!
//! ```text
//!     async net-rx:     received 380 (370 from 4241, 10 from -), gave 0
//! ```
//!
//! `kernel entries` lists the ways a process entered the kernel itself, then the asynchronous
//! work charged to it (`async-net-rx`) when there is some.
//!
//! A process that reused a pid is written with its instance number (`Process 4242_1 (cmd)`).
//! The block of a file set that is not its process's last (an image the process replaced by
//! `exec`), whose names carry the command name, has a `labels` line after the first:
//! `    labels:           4242(execer)u: and 4242(execer)k: (process 4242 ran another command
//! after this one)`. When the collector counted truncated stacks by reason, the `samples` line
//! says them: `3 truncated stacks (2 stack copy, 1 unwind info)`. When the info file says where its counters came from (`source`), a
//! `counters from:` line after `i/o` gives it (`taskstats` or `proc`, plus `(taskstats
//! refused)` when the collector was refused taskstats).
//!
//! A value the info file lacks is printed as `-`; `truncated stacks` (samples whose user stack
//! the collector could not unwind to its end) only when the info file has that key. `samples` counts both sides' histograms
//! whichever side the listing shows. `kernel entries` are the samples taken in the kernel on
//! behalf of user code, by kind of kernel entry: the collector's `[boundary]` section when the
//! info file has one, else the boundary arcs counted. The system-wide blocks (`kernel`,
//! `other`) have only a `samples` line. A blank line ends each block.

use std::io::{self, Write};

use gmon_format::AsyncMoves;

use super::{BoundaryKind, ProcessSummary};

/// A pid of `async.moves`, `-` for none.
fn pid_or_dash(p: Option<u32>) -> String {
    p.map_or_else(|| "-".to_owned(), |p| p.to_string())
}

/// The `async <kind>:` lines of process `pid`: per kind, what it received and from whom, what
/// it gave and to whom (samples; a kind listed even when the process has no share of it).
fn write_async_lines(mut out: impl Write, moves: &AsyncMoves, pid: u32) -> io::Result<()> {
    for k in &moves.kinds {
        let mut received = (0, Vec::new());
        let mut given = (0, Vec::new());
        for m in moves.moves_of(&k.kind) {
            if m.beneficiary == Some(pid) {
                received.0 += m.samples;
                received
                    .1
                    .push(format!("{} from {}", m.samples, pid_or_dash(m.victim)));
            }
            if m.victim == Some(pid) && m.beneficiary != Some(pid) {
                given.0 += m.samples;
                given.1.push(match m.beneficiary {
                    Some(b) => format!("{} to {b}", m.samples),
                    None => format!("{} unattributed", m.samples),
                });
            }
        }
        let part = |(n, list): (u64, Vec<String>)| match list.is_empty() {
            true => n.to_string(),
            false => format!("{n} ({})", list.join(", ")),
        };
        let label = format!("async {}:", k.kind);
        writeln!(
            out,
            "    {label:<18}received {}, gave {}",
            part(received),
            part(given)
        )?;
    }
    Ok(())
}

/// Writes the victim → beneficiary matrix of each kind of asynchronous work (`pkgprof
/// --system` on a measurement made with `pkgmon --async`): who ran the work, who it was
/// charged to, samples and seconds, then the kind's totals and residue by reason.
///
/// Returns an error if writing fails.
pub fn write_async_matrix<W: Write>(mut out: W, moves: &AsyncMoves) -> io::Result<()> {
    for k in &moves.kinds {
        writeln!(
            out,
            "Asynchronous work {} moved, victim (the process it ran in) -> beneficiary:\n",
            k.kind
        )?;
        writeln!(
            out,
            "  {:>10}  {:>12}  {:>10}  {:>12}",
            "victim", "beneficiary", "samples", "seconds"
        )?;
        for m in moves.moves_of(&k.kind) {
            let ns = m.nanoseconds;
            writeln!(
                out,
                "  {:>10}  {:>12}  {:>10}  {:>12}",
                pid_or_dash(m.victim),
                m.beneficiary
                    .map_or_else(|| "unattributed".to_owned(), |b| b.to_string()),
                m.samples,
                format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000)
            )?;
        }
        writeln!(
            out,
            "\n  {} samples: {} charged to a process, {} unattributed{}; {} windows{}, {} {}, {} {}\n",
            k.held,
            k.attributed,
            k.unattributed(),
            k.residue_note(),
            k.windows,
            k.counted
                .map_or_else(String::new, |c| format!(" of {c} the kernel counted")),
            k.objects,
            k.object_words().0,
            k.unconsumed,
            k.object_words().1
        )?;
    }
    Ok(())
}

fn num(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn secs(ns: Option<u64>) -> String {
    ns.map_or_else(
        || "-".to_owned(),
        |ns| format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000),
    )
}

/// Quotes an argument the way a shell would need it, when it needs it; one holding characters
/// that act on a terminal ([`gmon_format::acts_on_terminal`]: the profiled process chose its
/// arguments, and `\x1b[2J` would clear the screen) is written `$'...'` with those as `\xHH`.
fn shell_word(arg: &[u8]) -> String {
    let text = String::from_utf8_lossy(arg);
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        text.into_owned()
    } else if text.chars().any(gmon_format::acts_on_terminal) {
        let mut out = String::from("$'");
        for c in text.chars() {
            match c {
                '\\' | '\'' => {
                    out.push('\\');
                    out.push(c);
                }
                c if gmon_format::acts_on_terminal(c) => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Writes one header block per process (see the module docs).
///
/// Returns an error if writing fails.
pub fn write_process_header<W: Write>(
    mut out: W,
    processes: &[ProcessSummary],
    moves: Option<&AsyncMoves>,
) -> io::Result<()> {
    for p in processes {
        let Some(files) = &p.files else {
            writeln!(
                out,
                "Kernel work for {}: {} samples\n",
                if p.label == "kernel" {
                    "no process (gmon.out.-k.kernel)"
                } else {
                    "processes not profiled (gmon.out.-k.other)"
                },
                p.kernel_samples
            )?;
            continue;
        };
        let info = p.info.as_ref();
        let process = info.map(|i| &i.process);
        let process_label = gmon_format::process_label(files.pid, files.instance);
        write!(out, "Process {process_label} ({})", files.comm)?;
        if let Some(ppid) = process.and_then(|p| p.ppid) {
            write!(out, ", parent {ppid}")?;
        }
        if let Some(n) = process.and_then(|p| p.instances) {
            write!(out, ", {n} instances")?;
        }
        match process.and_then(|p| p.argv.as_ref()) {
            Some(argv) => {
                let words: Vec<String> = argv.iter().map(|a| shell_word(a)).collect();
                writeln!(out, ": {}", words.join(" "))?;
            }
            None => writeln!(out)?,
        }
        if p.label != process_label {
            writeln!(
                out,
                "    labels:           {0}u: and {0}k: (process {1} ran another command after this one)",
                p.label, process_label
            )?;
        }
        let c = info.map(|i| &i.counters);
        let s = info.map(|i| &i.sampling);
        writeln!(
            out,
            "    cpu time:         {} s user, {} s system",
            secs(c.and_then(|c| c.user_cpu_ns)),
            secs(c.and_then(|c| c.system_cpu_ns))
        )?;
        writeln!(
            out,
            "    page faults:      {} minor, {} major",
            num(c.and_then(|c| c.minor_faults)),
            num(c.and_then(|c| c.major_faults))
        )?;
        writeln!(
            out,
            "    context switches: {} voluntary, {} involuntary",
            num(c.and_then(|c| c.voluntary_switches)),
            num(c.and_then(|c| c.involuntary_switches))
        )?;
        writeln!(
            out,
            "    i/o:              {} bytes read, {} bytes written",
            num(c.and_then(|c| c.read_bytes)),
            num(c.and_then(|c| c.written_bytes))
        )?;
        // Where the collector took the counters from (`source`), and whether taskstats was
        // refused to it.
        if let Some(source) = c.and_then(|c| c.source) {
            let refused = c.is_some_and(|c| c.taskstats_refused);
            let note = if refused { " (taskstats refused)" } else { "" };
            writeln!(out, "    counters from:    {}{note}", source.as_str())?;
        }
        let rate = match s.and_then(|s| s.rate) {
            Some(gmon_format::SampleRate::Frequency(hz)) => format!(" at {hz} Hz"),
            Some(gmon_format::SampleRate::Period(p)) => format!(
                " every {p} {}",
                s.and_then(|s| s.period_unit.as_deref()).unwrap_or("events")
            ),
            None => String::new(),
        };
        let event = s.and_then(|s| s.event.as_deref()).unwrap_or("-");
        // The collector's count of samples whose user stack could not be unwound to the end,
        // and why, when it says.
        let reasons: Vec<String> = s
            .map(|s| {
                [
                    (s.truncated_stack_copy, "stack copy"),
                    (s.truncated_callchain_limit, "callchain limit"),
                    (s.truncated_unwind_info, "unwind info"),
                ]
            })
            .into_iter()
            .flatten()
            .filter_map(|(n, why)| n.filter(|&n| n != 0).map(|n| format!("{n} {why}")))
            .collect();
        let truncated = s
            .and_then(|s| s.truncated_stacks)
            .map(|n| match reasons.is_empty() {
                true => format!(", {n} truncated stacks"),
                false => format!(", {n} truncated stacks ({})", reasons.join(", ")),
            })
            .unwrap_or_default();
        writeln!(
            out,
            "    samples:          {} user, {} kernel ({event}{rate}); {} lost, {} throttled{truncated}",
            p.user_samples,
            p.kernel_samples,
            num(s.and_then(|s| s.lost_samples)),
            num(s.and_then(|s| s.throttled))
        )?;
        // Asynchronous work moved to the process is listed when there is some, so the line
        // of a measurement made without `--async` reads as it always did.
        let entries: Vec<String> = BoundaryKind::ALL
            .iter()
            .map(|k| (k, p.entries.get(k).copied().unwrap_or(0)))
            .filter(|&(k, n)| !k.is_asynchronous() || n > 0)
            .map(|(k, n)| format!("{n} {}", k.as_str()))
            .collect();
        writeln!(out, "    kernel entries:   {}", entries.join(", "))?;
        if let (Some(moves), 0) = (moves, files.instance) {
            write_async_lines(&mut out, moves, files.pid)?;
        }
        // The perf-event counts of measurements written before November 2026, then what this
        // version does not know.
        let fields: Vec<String> = c
            .map(|c| {
                [
                    ("perf-page-faults", c.perf_page_faults),
                    ("perf-context-switches", c.perf_context_switches),
                    ("perf-cpu-migrations", c.perf_cpu_migrations),
                ]
                .into_iter()
                .filter_map(|(key, n)| Some(format!("{key} {}", n?)))
                .chain(c.extra.iter().map(|f| format!("{} {}", f.key, f.value)))
                .collect()
            })
            .unwrap_or_default();
        if !fields.is_empty() {
            writeln!(out, "    other counters:   {}", fields.join(", "))?;
        }
        writeln!(out)?;
    }
    Ok(())
}
