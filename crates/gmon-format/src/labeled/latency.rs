//! The latency file, `gmon.out.<pid>l.<comm>`: per system call and user call site, the
//! latency distribution in log2 buckets (OSprof), optionally per time slice, and the DeBox
//! summary of its calls (page faults, time blocked, sleeps by kernel site, wakers).
//!
//! [`LatencyFile`] is its typed form; [`LatencyFile::parse`] reads it and
//! [`LatencyFile::write`] writes it. It is written by `pkgmon --latency` / `--blocking`.
//!
//! # Format, version 1.0 (normative)
//!
//! ```text
//! pkgprof-latency 1.0
//! resolution 1
//! arch x86_64
//! slices 1000000000 5000000000
//! check raw_syscalls:sys_enter received 1000 counted 1000
//! check raw_syscalls:sys_exit received 999 counted 999
//! lost 0
//! unpaired enters 1 exits 0 dropped 0
//! op 35 calls 999 total 1060000000 min 1052000 max 1190000 faults 0 site 0x7f3a12 0x55550aa1
//! b 0 20 999 1060000000
//! blocking blocked 1055000000 runnable 1000 sleeps 999
//! sleep 999 1055000000 0xffffffff81a0c1d0 0xffffffff81a0c5e0
//! waker 0 999 1055000000 0xffffffff81150a10
//! end
//! ```
//!
//! The file is printable ASCII, spaces and newlines; lines end in `\n`. Each line is a keyword
//! and space-separated words.
//! Numbers are unsigned 64-bit decimal, addresses hexadecimal with `0x`. In order:
//!
//! | line | words | meaning |
//! |---|---|---|
//! | `pkgprof-latency M.m` | version | first line; a reader refuses a newer major version |
//! | `resolution r` | 1 to 64 | buckets per power of two: bucket `b = ⌊r·log2(ns)⌋`, covering [⌈2^(b/r)⌉, ⌈2^((b+1)/r)⌉) ns; 0 and 1 ns are in bucket 0 |
//! | `arch NAME` | word | the system call table the numbers belong to (`x86_64`) |
//! | `slices LEN START` | ns, ns | optional: buckets are kept per time slice of `LEN` ns, slice 0 starting at `START` (`CLOCK_MONOTONIC`); a call is in the slice of its end |
//! | `check EVENT received N [counted M]` | any number of lines | OSprof's checksums: records received of each tracepoint, and hits its counting twin saw (`counted`); received + lost must equal counted, and a report says when it does not |
//! | `lost N` | count | records the kernel dropped from the rings of the whole measurement (of every event: a ring is per CPU, shared by every profiled task) |
//! | `unpaired enters A exits B dropped C` | counts | calls of this process with an entry and no exit (the process exited or exec'd inside it, or the run ended) and exits with no entry (calls begun before the run); `dropped`: calls left out because records were lost while they ran |
//! | `op NR calls N total T min A max B faults F site ADDR…` | | one operation: system call `NR` from the user call site `site` (user frames, innermost first: the pc in the system-call wrapper, then return addresses; none when no user stack was recorded), with its calls, total, shortest and longest latency in ns, and page faults taken during its calls |
//! | `b SLICE BUCKET COUNT TOTAL` | after an `op` | its calls whose latency fell in `BUCKET` during slice `SLICE` (0 without slices), and their latencies summed in ns; ascending by (slice, bucket), counts above 0, summing to `calls` |
//! | `blocking blocked B runnable R sleeps S` | after an `op`, `--blocking` only | time its calls spent off the CPU blocked (voluntary switches) and runnable (preempted), in ns, and how many times they blocked |
//! | `sleep COUNT NS ADDR…` | after `blocking` | one sleep site: kernel frames innermost first, from the caller of the scheduler (`schedule()`'s caller, DeBox's file:line) out; how often and how long (switch-out to switch-in) the calls blocked there |
//! | `waker PID COUNT NS ADDR…` | after `blocking` | who ended those sleeps: the waking task's pid (0 for an interrupt of the idle task) and its kernel frames innermost first; wake-ups and the blocked time they ended. Pid 0 with no frames: wake-ups the kernel counted but did not sample, fired in the idle task (so by an interrupt) |
//! | `end` | | last line: a file without it was cut short and is refused |
//!
//! Addresses are runtime addresses: user ones resolve through the info file's `[mapping]`
//! sections, kernel ones through the kernel-symbol snapshot.

use std::fmt::Write as _;
use std::io;

use crate::error::{Error, ErrorKind, Result};

#[path = "syscalls_x86_64.rs"]
mod syscalls_x86_64;

/// The name of system call `nr` of `arch` (`read` for 0 on `x86_64`), or None if this crate
/// does not know it.
pub fn syscall_name(arch: &str, nr: u64) -> Option<&'static str> {
    match arch {
        "x86_64" => syscalls_x86_64::X86_64
            .get(usize::try_from(nr).ok()?)
            .copied()
            .filter(|n| !n.is_empty()),
        _ => None,
    }
}

/// First word of the file.
pub const LATENCY_MAGIC: &str = "pkgprof-latency";
/// The major version this crate writes and reads.
pub const LATENCY_MAJOR: u32 = 1;
/// The minor version this crate writes.
pub const LATENCY_MINOR: u32 = 0;

/// Most operations, buckets, sites or frames a file may declare per line or in all: bounds
/// the memory a hostile file can claim to the size of the file itself.
const MAX_FRAMES: usize = 1024;

/// A latency file. See the [module docs](self) for the format.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LatencyFile {
    /// Buckets per power of two (1 to 64).
    pub resolution: u32,
    /// The system-call table (`x86_64`).
    pub arch: String,
    /// Time slices: (length, start) in ns, if buckets are kept per slice.
    pub slices: Option<(u64, u64)>,
    /// Per tracepoint: records received and hits counted.
    pub checks: Vec<EventCheck>,
    /// Records lost from the rings of the whole measurement.
    pub lost: u64,
    /// Calls entered and never left.
    pub unpaired_enters: u64,
    /// Exits of calls entered before the run.
    pub unpaired_exits: u64,
    /// Calls left out because records were lost while they ran.
    pub dropped: u64,
    /// The operations.
    pub operations: Vec<Operation>,
}

/// OSprof's checksum of one tracepoint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventCheck {
    /// `system:name`.
    pub event: String,
    /// Records received.
    pub received: u64,
    /// Hits counted by its counting-mode twin, if it had one.
    pub counted: Option<u64>,
}

impl EventCheck {
    /// Hits counted and never received because the kernel does not sample them, not because
    /// records were lost: a `sched_waking` fired in the idle task (an interrupt on an idle
    /// CPU) reaches the counting twin but not the sampled event (Linux 6.18). 0 for others.
    pub fn unsampled_in_idle(&self) -> u64 {
        match self.counted {
            Some(n) if self.event == "sched:sched_waking" => n.saturating_sub(self.received),
            _ => 0,
        }
    }
}

/// One operation: a system call from one user call site.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Operation {
    /// The system call number.
    pub syscall: u64,
    /// User frames of the call site, innermost first.
    pub site: Vec<u64>,
    /// Calls.
    pub calls: u64,
    /// Latencies summed, ns.
    pub total_ns: u64,
    /// Shortest latency, ns.
    pub min_ns: u64,
    /// Longest latency, ns.
    pub max_ns: u64,
    /// Page faults during its calls.
    pub faults: u64,
    /// Non-empty buckets, ascending by (slice, bucket).
    pub buckets: Vec<BucketCount>,
    /// Its DeBox summary, when blocking was recorded.
    pub blocking: Option<Blocking>,
}

/// Calls of one bucket in one slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BucketCount {
    /// Time slice (0 without slices).
    pub slice: u64,
    /// Bucket index.
    pub bucket: u32,
    /// Calls.
    pub count: u64,
    /// Their latencies summed, ns.
    pub total_ns: u64,
}

/// Where and how long an operation's calls were off the CPU.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Blocking {
    /// Time blocked (voluntary switches), ns.
    pub blocked_ns: u64,
    /// Time runnable but not running (preempted), ns.
    pub runnable_ns: u64,
    /// Times blocked.
    pub sleeps: u64,
    /// Sleep sites.
    pub sites: Vec<SleepSite>,
    /// Wakers.
    pub wakers: Vec<Waker>,
}

/// One kernel sleep site of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SleepSite {
    /// Kernel frames, innermost first, from the scheduler's caller out.
    pub frames: Vec<u64>,
    /// Times blocked there.
    pub count: u64,
    /// Time blocked there, ns.
    pub blocked_ns: u64,
}

/// One waker of an operation's sleeps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Waker {
    /// The waking task's pid (0: an interrupt of the idle task).
    pub pid: u32,
    /// Its kernel frames, innermost first.
    pub frames: Vec<u64>,
    /// Wake-ups.
    pub count: u64,
    /// Blocked time they ended, ns.
    pub blocked_ns: u64,
}

impl Waker {
    /// Whether these are wake-ups the kernel counted but did not sample, fired in the idle
    /// task (so by an interrupt): written as pid 0 with no frames.
    pub fn unsampled_in_idle(&self) -> bool {
        self.pid == 0 && self.frames.is_empty()
    }
}

fn bad(offset: usize, line: usize, message: impl Into<String>) -> Error {
    Error::at(
        offset as u64,
        ErrorKind::Latency {
            line,
            message: message.into(),
        },
    )
}

/// The words of one line, with where it is.
struct Line<'a> {
    words: std::str::SplitAsciiWhitespace<'a>,
    no: usize,
    offset: usize,
}

impl<'a> Line<'a> {
    fn err(&self, m: impl Into<String>) -> Error {
        bad(self.offset, self.no, m)
    }
    fn word(&mut self, what: &str) -> Result<&'a str> {
        self.words
            .next()
            .ok_or_else(|| self.err(format!("{what} missing")))
    }
    fn number(&mut self, what: &str) -> Result<u64> {
        let w = self.word(what)?;
        w.parse()
            .map_err(|_| self.err(format!("{what} `{w}` is not a decimal number")))
    }
    fn key(&mut self, key: &str) -> Result<u64> {
        let w = self.word(key)?;
        if w != key {
            return Err(self.err(format!("expected `{key}`, found `{w}`")));
        }
        self.number(key)
    }
    fn addresses(&mut self) -> Result<Vec<u64>> {
        let mut out = Vec::new();
        for w in self.words.by_ref() {
            let h = w
                .strip_prefix("0x")
                .ok_or_else(|| bad(self.offset, self.no, format!("address `{w}` lacks 0x")))?;
            let a = u64::from_str_radix(h, 16)
                .map_err(|_| bad(self.offset, self.no, format!("address `{w}` is not hex")))?;
            if out.len() == MAX_FRAMES {
                return Err(bad(
                    self.offset,
                    self.no,
                    format!("more than {MAX_FRAMES} frames"),
                ));
            }
            out.push(a);
        }
        Ok(out)
    }
    fn end(&mut self) -> Result<()> {
        match self.words.next() {
            Some(w) => Err(self.err(format!("unexpected `{w}` at the end of the line"))),
            None => Ok(()),
        }
    }
}

impl LatencyFile {
    /// An empty file at `resolution` buckets per power of two, for system calls of `arch`.
    pub fn new(resolution: u32, arch: &str) -> LatencyFile {
        LatencyFile {
            resolution,
            arch: arch.into(),
            ..LatencyFile::default()
        }
    }

    /// Reads a latency file.
    ///
    /// Returns an error of kind [`ErrorKind::Latency`] naming the line and byte offset if the
    /// file does not follow the format: a wrong first line or a newer major version, bytes
    /// that are not ASCII, an unknown or misplaced line, a malformed number or address, a
    /// resolution outside 1 to 64, buckets out of order or not summing to the calls, or no
    /// `end` line (the file was cut short).
    pub fn parse(data: &[u8]) -> Result<LatencyFile> {
        if let Some(i) = data
            .iter()
            .position(|&b| !(b.is_ascii_graphic() || b == b' ' || b == b'\n'))
        {
            return Err(bad(
                i,
                0,
                format!(
                    "byte {:#04x}: the file is printable ASCII, spaces and newlines",
                    data[i]
                ),
            ));
        }
        let text = std::str::from_utf8(data).map_err(|_| bad(0, 0, "the file is not ASCII"))?;
        let mut f = LatencyFile::default();
        let mut offset = 0;
        let mut ended = false;
        let mut seen_header = false;
        for (i, raw) in text.split_inclusive('\n').enumerate() {
            let mut l = Line {
                words: raw.split_ascii_whitespace(),
                no: i + 1,
                offset,
            };
            offset += raw.len();
            if ended {
                return Err(l.err("text after `end`"));
            }
            if !raw.ends_with('\n') {
                return Err(l.err("the last line does not end in a newline"));
            }
            let Some(kw) = l.words.next() else {
                return Err(l.err("empty line"));
            };
            if !seen_header {
                if kw != LATENCY_MAGIC {
                    return Err(l.err(format!("not a latency file: it starts with `{kw}`")));
                }
                let v = l.word("version")?;
                let (major, minor) = v
                    .split_once('.')
                    .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
                    .ok_or_else(|| l.err(format!("version `{v}` is not MAJOR.MINOR")))?;
                let _ = minor;
                if major > LATENCY_MAJOR {
                    return Err(l.err(format!(
                        "version {v} is newer than this reader's {LATENCY_MAJOR}.x"
                    )));
                }
                l.end()?;
                seen_header = true;
                continue;
            }
            match kw {
                "resolution" => {
                    let r = l.number("resolution")?;
                    if !(1..=64).contains(&r) {
                        return Err(l.err(format!("resolution {r} is not 1 to 64")));
                    }
                    f.resolution = r as u32;
                }
                "arch" => f.arch = l.word("arch")?.to_owned(),
                "slices" => {
                    let len = l.number("slice length")?;
                    if len == 0 {
                        return Err(l.err("slice length 0"));
                    }
                    f.slices = Some((len, l.number("slice start")?));
                }
                "check" => {
                    let event = l.word("event")?.to_owned();
                    let received = l.key("received")?;
                    let counted = match l.words.next() {
                        Some("counted") => Some(l.number("counted")?),
                        Some(w) => return Err(l.err(format!("expected `counted`, found `{w}`"))),
                        None => None,
                    };
                    f.checks.push(EventCheck {
                        event,
                        received,
                        counted,
                    });
                }
                "lost" => f.lost = l.number("lost")?,
                "unpaired" => {
                    f.unpaired_enters = l.key("enters")?;
                    f.unpaired_exits = l.key("exits")?;
                    f.dropped = l.key("dropped")?;
                }
                "op" => {
                    check_buckets(&f, &l)?;
                    let syscall = l.number("system call number")?;
                    let calls = l.key("calls")?;
                    let total_ns = l.key("total")?;
                    let min_ns = l.key("min")?;
                    let max_ns = l.key("max")?;
                    let faults = l.key("faults")?;
                    match l.word("site")? {
                        "site" => {}
                        w => return Err(l.err(format!("expected `site`, found `{w}`"))),
                    }
                    let site = l.addresses()?;
                    f.operations.push(Operation {
                        syscall,
                        site,
                        calls,
                        total_ns,
                        min_ns,
                        max_ns,
                        faults,
                        buckets: Vec::new(),
                        blocking: None,
                    });
                }
                "b" => {
                    let slice = l.number("slice")?;
                    let bucket = l.number("bucket")?;
                    let count = l.number("count")?;
                    let total_ns = l.number("total")?;
                    l.end()?;
                    let max_bucket = 64 * u64::from(f.resolution.max(1));
                    if bucket >= max_bucket || count == 0 {
                        return Err(l.err(format!(
                            "bucket {bucket} with {count} calls: buckets are below {max_bucket} and not empty"
                        )));
                    }
                    if slice > 0 && f.slices.is_none() {
                        return Err(l.err("a slice other than 0 without a `slices` line"));
                    }
                    let op = f
                        .operations
                        .last_mut()
                        .ok_or_else(|| l.err("a bucket before any `op`"))?;
                    let b = BucketCount {
                        slice,
                        bucket: bucket as u32,
                        count,
                        total_ns,
                    };
                    if op
                        .buckets
                        .last()
                        .is_some_and(|p| (p.slice, p.bucket) >= (b.slice, b.bucket))
                    {
                        return Err(l.err("buckets out of order"));
                    }
                    op.buckets.push(b);
                }
                "blocking" => {
                    let blocked_ns = l.key("blocked")?;
                    let runnable_ns = l.key("runnable")?;
                    let sleeps = l.key("sleeps")?;
                    l.end()?;
                    let op = f
                        .operations
                        .last_mut()
                        .ok_or_else(|| l.err("`blocking` before any `op`"))?;
                    if op.blocking.is_some() {
                        return Err(l.err("a second `blocking` line for one operation"));
                    }
                    op.blocking = Some(Blocking {
                        blocked_ns,
                        runnable_ns,
                        sleeps,
                        ..Blocking::default()
                    });
                }
                "sleep" | "waker" => {
                    let pid = if kw == "waker" {
                        let p = l.number("pid")?;
                        u32::try_from(p).map_err(|_| l.err(format!("pid {p} is too large")))?
                    } else {
                        0
                    };
                    let count = l.number("count")?;
                    let blocked_ns = l.number("time")?;
                    let frames = l.addresses()?;
                    let b = f
                        .operations
                        .last_mut()
                        .and_then(|o| o.blocking.as_mut())
                        .ok_or_else(|| l.err(format!("`{kw}` before a `blocking` line")))?;
                    if kw == "sleep" {
                        b.sites.push(SleepSite {
                            frames,
                            count,
                            blocked_ns,
                        });
                    } else {
                        b.wakers.push(Waker {
                            pid,
                            frames,
                            count,
                            blocked_ns,
                        });
                    }
                }
                "end" => {
                    l.end()?;
                    check_buckets(&f, &l)?;
                    ended = true;
                }
                _ => return Err(l.err(format!("unknown line `{kw}`"))),
            }
        }
        if !seen_header {
            return Err(bad(0, 1, "empty file"));
        }
        if !ended {
            return Err(bad(
                data.len(),
                text.lines().count(),
                "no `end` line: the file was cut short",
            ));
        }
        if f.resolution == 0 {
            return Err(bad(0, 2, "no `resolution` line"));
        }
        Ok(f)
    }

    /// Writes the file, as the [format](self) says.
    ///
    /// Returns an error if `out` fails, or of kind [`ErrorKind::Latency`] if something would
    /// not read back the same: a resolution outside 1 to 64, an `arch` or event name with
    /// blanks, buckets out of order or not summing to the calls, or more than 1024 frames.
    pub fn write<W: io::Write>(&self, mut out: W) -> Result<()> {
        let text = self.to_text()?;
        out.write_all(text.as_bytes())?;
        Ok(())
    }

    /// The file's text (see [`LatencyFile::write`]).
    pub fn to_text(&self) -> Result<String> {
        let invalid = |m: String| bad(0, 0, m);
        let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_graphic());
        if !(1..=64).contains(&self.resolution) {
            return Err(invalid(format!(
                "resolution {} is not 1 to 64",
                self.resolution
            )));
        }
        let mut t = String::new();
        let _ = writeln!(t, "{LATENCY_MAGIC} {LATENCY_MAJOR}.{LATENCY_MINOR}");
        let _ = writeln!(t, "resolution {}", self.resolution);
        if !word(&self.arch) {
            return Err(invalid(format!("arch `{}` is not one word", self.arch)));
        }
        let _ = writeln!(t, "arch {}", self.arch);
        if let Some((len, start)) = self.slices {
            let _ = writeln!(t, "slices {len} {start}");
        }
        for c in &self.checks {
            if !word(&c.event) {
                return Err(invalid(format!("event `{}` is not one word", c.event)));
            }
            let _ = write!(t, "check {} received {}", c.event, c.received);
            if let Some(n) = c.counted {
                let _ = write!(t, " counted {n}");
            }
            t.push('\n');
        }
        let _ = writeln!(t, "lost {}", self.lost);
        let _ = writeln!(
            t,
            "unpaired enters {} exits {} dropped {}",
            self.unpaired_enters, self.unpaired_exits, self.dropped
        );
        let frames = |t: &mut String, f: &[u64]| -> Result<()> {
            if f.len() > MAX_FRAMES {
                return Err(invalid(format!("more than {MAX_FRAMES} frames")));
            }
            for a in f {
                let _ = write!(t, " {a:#x}");
            }
            t.push('\n');
            Ok(())
        };
        for op in &self.operations {
            let _ = write!(
                t,
                "op {} calls {} total {} min {} max {} faults {} site",
                op.syscall, op.calls, op.total_ns, op.min_ns, op.max_ns, op.faults
            );
            frames(&mut t, &op.site)?;
            let sum: u64 = op.buckets.iter().map(|b| b.count).sum();
            if sum != op.calls
                || op
                    .buckets
                    .windows(2)
                    .any(|w| (w[0].slice, w[0].bucket) >= (w[1].slice, w[1].bucket))
                || op.buckets.iter().any(|b| b.count == 0)
            {
                return Err(invalid(format!(
                    "operation {}: buckets out of order, empty, or summing to {sum} calls, not {}",
                    op.syscall, op.calls
                )));
            }
            for b in &op.buckets {
                let _ = writeln!(t, "b {} {} {} {}", b.slice, b.bucket, b.count, b.total_ns);
            }
            if let Some(bl) = &op.blocking {
                let _ = writeln!(
                    t,
                    "blocking blocked {} runnable {} sleeps {}",
                    bl.blocked_ns, bl.runnable_ns, bl.sleeps
                );
                for s in &bl.sites {
                    let _ = write!(t, "sleep {} {}", s.count, s.blocked_ns);
                    frames(&mut t, &s.frames)?;
                }
                for w in &bl.wakers {
                    let _ = write!(t, "waker {} {} {}", w.pid, w.count, w.blocked_ns);
                    frames(&mut t, &w.frames)?;
                }
            }
        }
        t.push_str("end\n");
        Ok(t)
    }
}

/// The operation read last must have buckets summing to its calls.
fn check_buckets(f: &LatencyFile, l: &Line<'_>) -> Result<()> {
    if let Some(op) = f.operations.last() {
        let sum = op
            .buckets
            .iter()
            .fold(0u64, |a, b| a.saturating_add(b.count));
        if sum != op.calls {
            return Err(l.err(format!(
                "the buckets of the operation before sum to {sum} calls, not {}",
                op.calls
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> LatencyFile {
        LatencyFile {
            resolution: 1,
            arch: "x86_64".into(),
            slices: Some((1_000_000_000, 5_000_000_000)),
            checks: vec![
                EventCheck {
                    event: "raw_syscalls:sys_enter".into(),
                    received: 1000,
                    counted: Some(1000),
                },
                EventCheck {
                    event: "sched:sched_switch".into(),
                    received: 7,
                    counted: None,
                },
            ],
            lost: 0,
            unpaired_enters: 1,
            unpaired_exits: 0,
            dropped: 0,
            operations: vec![Operation {
                syscall: 35,
                site: vec![0x7f3a12, 0x5555_0aa1],
                calls: 999,
                total_ns: 1_060_000_000,
                min_ns: 1_052_000,
                max_ns: 1_190_000,
                faults: 2,
                buckets: vec![
                    BucketCount {
                        slice: 0,
                        bucket: 20,
                        count: 998,
                        total_ns: 1_058_000_000,
                    },
                    BucketCount {
                        slice: 1,
                        bucket: 20,
                        count: 1,
                        total_ns: 2_000_000,
                    },
                ],
                blocking: Some(Blocking {
                    blocked_ns: 1_055_000_000,
                    runnable_ns: 1000,
                    sleeps: 999,
                    sites: vec![SleepSite {
                        frames: vec![0xffff_ffff_81a0_c1d0, 0xffff_ffff_81a0_c5e0],
                        count: 999,
                        blocked_ns: 1_055_000_000,
                    }],
                    wakers: vec![Waker {
                        pid: 0,
                        frames: vec![0xffff_ffff_8115_0a10],
                        count: 999,
                        blocked_ns: 1_055_000_000,
                    }],
                }),
            }],
        }
    }

    #[test]
    fn system_calls_have_their_names() {
        assert_eq!(syscall_name("x86_64", 0), Some("read"));
        assert_eq!(syscall_name("x86_64", 230), Some("clock_nanosleep"));
        assert_eq!(syscall_name("x86_64", 100_000), None);
        assert_eq!(syscall_name("sparc", 0), None);
    }

    #[test]
    fn round_trips_byte_for_byte() {
        let f = sample();
        let text = f.to_text().expect("writes");
        assert_eq!(
            text,
            "pkgprof-latency 1.0\nresolution 1\narch x86_64\nslices 1000000000 5000000000\n\
             check raw_syscalls:sys_enter received 1000 counted 1000\n\
             check sched:sched_switch received 7\nlost 0\nunpaired enters 1 exits 0 dropped 0\n\
             op 35 calls 999 total 1060000000 min 1052000 max 1190000 faults 2 site 0x7f3a12 0x55550aa1\n\
             b 0 20 998 1058000000\nb 1 20 1 2000000\n\
             blocking blocked 1055000000 runnable 1000 sleeps 999\n\
             sleep 999 1055000000 0xffffffff81a0c1d0 0xffffffff81a0c5e0\n\
             waker 0 999 1055000000 0xffffffff81150a10\nend\n"
        );
        let back = LatencyFile::parse(text.as_bytes()).expect("reads");
        assert_eq!(back, f);
        assert_eq!(back.to_text().expect("writes"), text);
    }

    #[test]
    fn bad_files_are_refused_with_line_and_offset() {
        let text = sample().to_text().expect("writes");
        let cut = &text.as_bytes()[..text.len() - 4];
        let e = LatencyFile::parse(cut).expect_err("cut short");
        assert!(e.to_string().contains("line"), "{e}");
        let e = LatencyFile::parse(text.replace("b 1 20 1 2000000\n", "").as_bytes())
            .expect_err("buckets short of the calls");
        assert!(e.to_string().contains("sum to 998 calls, not 999"), "{e}");
        let e = LatencyFile::parse(text.replace("b 0 20", "b 2 20").as_bytes())
            .expect_err("out of order");
        assert!(e.to_string().contains("out of order"), "{e}");
        let e = LatencyFile::parse(b"pkgprof-latency 2.0\n").expect_err("newer");
        assert!(e.to_string().contains("newer"), "{e}");
        let e = LatencyFile::parse(text.replace("resolution 1", "resolution 0").as_bytes())
            .expect_err("resolution");
        assert_eq!(e.offset(), Some(20));
        assert!(LatencyFile::parse(b"").is_err());
        assert!(LatencyFile::parse(&text.as_bytes()[..text.len() - 1]).is_err());
    }
}
