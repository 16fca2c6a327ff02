//! The asynchronous-event attribution's results, `async.moves` (`pkgmon --async` only): how
//! many samples of asynchronous kernel work moved from which process to which, per kind, and
//! the counts behind them.
//!
//! The per-process gmon and stacks files of a measurement made with `--async` hold the view
//! charged to the beneficiary: the moved kernel stacks are in the consumer's files, under the
//! boundary kind of their work ([`BoundaryKind`](super::BoundaryKind), e.g. `async-net-rx`), the
//! residue in `gmon.out.-k.kernel`. This file says where they came from: the victim → beneficiary
//! matrix, each process's received and given totals, the residue by reason, and the windows
//! and objects the collector saw — all a report needs, without the raw event stream — and the
//! moved stacks with the files they left and went to, from which a reader rebuilds the view as
//! recorded (`pkgprof --async=victim`).
//!
//! # Format, version 1.2
//!
//! Text, UTF-8, one record per line, fields separated by one space; the first line is
//! `pkgasync <major>.<minor>`. Then, in any order:
//!
//! | line | meaning |
//! |---|---|
//! | `kind <kind> held <n> attributed <n> windows <n> objects <n> unconsumed <n>` | per kind: samples held back, of them charged to a process, windows recorded, objects they served, objects nobody consumed |
//! | `counted <kind> <n>` | windows the kernel counted (a counting twin of the window tracepoint): more than `windows` when windows ran in the idle task, where perf samples no tracepoint |
//! | `residue <kind> <reason> <n>` | samples unattributed for `reason` (`window-unseen`, `no-object`, `no-consumer`, `no-owner`, `evicted`) |
//! | `evicted <kind> <n>` (1.2) | objects the collector dropped unconsumed to bound its memory (packets waiting on sockets nobody read beyond its bound, work items queued, timers armed and requests pending never seen to run or complete); written when not 0 |
//! | `move <kind> <victim> <beneficiary> <samples> <nanoseconds>` | samples (and the CPU time they stand for) of `kind` taken in process `victim` and charged to `beneficiary`; pids, `-` for no process (the idle task, or the residue as beneficiary) |
//! | `stack <kind> <from> <to> <samples> <nanoseconds> <frames>` (1.1) | samples of `kind` with these moved kernel frames (lower-case hex addresses, innermost first, separated by commas: the frames from the kind's cut in), taken in the file set whose kernel profile is named `from` and written into the kernel profile named `to`: a process's `gmon.out.<label>k.<comm>`, or `gmon.out.-k.kernel`, `gmon.out.-k.other`; `from` is `-` when the victim has no files |
//!
//! `<kind>` is a kind's name without its `async-` prefix (`net-rx`). Numbers are decimal.
//! Each moved sample is in `to`'s histogram at its innermost frame, and in its arcs: each
//! distinct caller → callee pair of its frames once, and 0 → its outermost frame; the
//! `stack` lines are what rebuilds the view as recorded: take them out of `to` and put them
//! into `from`.
//! The writer sorts the lines (kinds, then counts, residue and moves, each by its fields) so
//! files are reproducible.
//!
//! ## Growth
//!
//! A new minor version may add line keywords and kinds; a reader skips lines whose keyword
//! it does not know. A reader refuses a newer major version.

use std::io::Write;

use crate::error::{Error, ErrorKind, Result};

/// The name of the file in a measurement directory.
pub const ASYNC_MOVES_FILE: &str = "async.moves";

/// The major version this crate reads and writes.
pub const ASYNC_MOVES_MAJOR: u32 = 1;
/// The minor version this crate writes.
pub const ASYNC_MOVES_MINOR: u32 = 2;

const MAGIC: &str = "pkgasync";

/// The counts of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Default, PartialOrd, Ord)]
#[non_exhaustive]
pub struct KindTotals {
    /// The kind's name (`net-rx`).
    pub kind: String,
    /// Samples held back.
    pub held: u64,
    /// Of them, charged to a process.
    pub attributed: u64,
    /// Windows recorded.
    pub windows: u64,
    /// Objects they served.
    pub objects: u64,
    /// Of those, consumed by nobody.
    pub unconsumed: u64,
    /// Windows the kernel counted, when it was asked to.
    pub counted: Option<u64>,
    /// Objects dropped unconsumed to bound the collector's memory (1.2; 0 before).
    pub evicted: u64,
    /// Unattributed samples by reason.
    pub residue: Vec<(String, u64)>,
}

impl KindTotals {
    /// Totals of `kind`, all zero.
    pub fn new(kind: &str) -> KindTotals {
        KindTotals {
            kind: kind.into(),
            ..KindTotals::default()
        }
    }

    /// Samples unattributed, all reasons.
    pub fn unattributed(&self) -> u64 {
        self.residue.iter().map(|r| r.1).sum()
    }

    /// How reports name the kind's objects and those of them no process was found for:
    /// `packets` and `never read` for `net-rx`, `work items` and `queued by no process` for
    /// `workqueue`, `timer expiries` and `armed by no process` for `timer`, `requests` and
    /// `issued by no known process` for `block`; `objects` and
    /// `unconsumed` for a kind this reader does not know.
    pub fn object_words(&self) -> (&'static str, &'static str) {
        match self.kind.as_str() {
            "net-rx" => ("packets", "never read"),
            "workqueue" => ("work items", "queued by no process"),
            "timer" => ("timer expiries", "armed by no process"),
            "block" => ("requests", "issued by no known process"),
            _ => ("objects", "unconsumed"),
        }
    }

    /// The unattributed samples by reason as reports word them after their total:
    /// ` (3 never read, 1 lost exit)`, or nothing when there are none.
    pub fn residue_note(&self) -> String {
        if self.residue.is_empty() {
            return String::new();
        }
        let reasons: Vec<String> = (self.residue.iter())
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        format!(" ({})", reasons.join(", "))
    }
}

/// One cell of the victim → beneficiary matrix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Move {
    /// The kind's name.
    pub kind: String,
    /// The process the work ran in, None for the idle task or a context with no process.
    pub victim: Option<u32>,
    /// The process it was charged to, None for the residue.
    pub beneficiary: Option<u32>,
    /// Samples.
    pub samples: u64,
    /// The CPU time they stand for.
    pub nanoseconds: u64,
}

/// Samples of one moved stack, with the kernel profiles they left and went to (a `stack`
/// line).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct MovedStack {
    /// The kind's name.
    pub kind: String,
    /// The file name of the kernel profile the samples were taken for (the victim's; a
    /// system-wide one for the idle task, a kernel thread or a process not profiled), None
    /// when the victim has no files.
    pub from: Option<String>,
    /// The file name of the kernel profile they were written into (the beneficiary's, or
    /// `gmon.out.-k.kernel` for the residue, `gmon.out.-k.other` for a process not profiled).
    pub to: String,
    /// The moved kernel frames, innermost first.
    pub frames: Vec<u64>,
    /// Samples.
    pub samples: u64,
    /// The CPU time they stand for.
    pub nanoseconds: u64,
}

/// The contents of `async.moves`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AsyncMoves {
    /// Per kind.
    pub kinds: Vec<KindTotals>,
    /// The matrix, one cell per (kind, victim, beneficiary).
    pub moves: Vec<Move>,
    /// The moved stacks, one per (kind, from, to, frames); empty in a version 1.0 file.
    pub stacks: Vec<MovedStack>,
}

impl AsyncMoves {
    /// The cells of kind `kind`.
    pub fn moves_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Move> {
        self.moves.iter().filter(move |m| m.kind == kind)
    }

    /// Parses a file's bytes.
    ///
    /// Returns an error, with its line and byte offset, for a first line that is not
    /// `pkgasync 1.x`, a known line with missing or non-numeric fields, or text that is not
    /// UTF-8.
    pub fn parse(data: &[u8]) -> Result<AsyncMoves> {
        let text = std::str::from_utf8(data).map_err(|e| {
            Error::at(
                e.valid_up_to() as u64,
                ErrorKind::InvalidAsyncMoves {
                    line: data[..e.valid_up_to()]
                        .iter()
                        .filter(|&&b| b == b'\n')
                        .count()
                        + 1,
                    message: "not UTF-8".into(),
                },
            )
        })?;
        let mut out = AsyncMoves::default();
        let mut offset = 0usize;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let at = offset;
            offset += line.len();
            let fail = |message: String| {
                Error::at(
                    at as u64,
                    ErrorKind::InvalidAsyncMoves {
                        line: i + 1,
                        message,
                    },
                )
            };
            let f: Vec<&str> = line.trim_end_matches('\n').split(' ').collect();
            if i == 0 {
                let version = match f.as_slice() {
                    [MAGIC, v] => *v,
                    _ => return Err(fail(format!("not an async.moves file (no `{MAGIC}` line)"))),
                };
                let major = version
                    .split('.')
                    .next()
                    .and_then(|m| m.parse::<u32>().ok());
                match major {
                    Some(ASYNC_MOVES_MAJOR) => continue,
                    Some(m) if m > ASYNC_MOVES_MAJOR => {
                        return Err(fail(format!(
                            "version {version} is newer than this reader's {ASYNC_MOVES_MAJOR}.x; \
                             use a newer pkgprof"
                        )));
                    }
                    _ => return Err(fail(format!("unsupported version `{version}`"))),
                }
            }
            let num = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| fail(format!("`{s}` is not a count")))
            };
            let pid = |s: &str| match s {
                "-" => Ok(None),
                _ => s
                    .parse::<u32>()
                    .map(Some)
                    .map_err(|_| fail(format!("`{s}` is not a pid or `-`"))),
            };
            let name = |s: &str| {
                if s.is_empty() || s.contains(|c: char| c.is_control()) {
                    Err(fail(format!("`{s}` is not a kind")))
                } else {
                    Ok(s.to_string())
                }
            };
            let file = |s: &str| match crate::ProfileName::parse(s) {
                Ok(_) => Ok(s.to_string()),
                Err(_) => Err(fail(format!("`{s}` is not a profile's file name"))),
            };
            match f.as_slice() {
                [
                    "kind",
                    k,
                    "held",
                    h,
                    "attributed",
                    a,
                    "windows",
                    w,
                    "objects",
                    o,
                    "unconsumed",
                    u,
                ] => {
                    let t = out.kind(&name(k)?);
                    t.held = num(h)?;
                    t.attributed = num(a)?;
                    t.windows = num(w)?;
                    t.objects = num(o)?;
                    t.unconsumed = num(u)?;
                }
                ["counted", k, n] => {
                    let n = num(n)?;
                    out.kind(&name(k)?).counted = Some(n);
                }
                ["evicted", k, n] => {
                    let n = num(n)?;
                    out.kind(&name(k)?).evicted = n;
                }
                ["residue", k, reason, n] => {
                    let (reason, n) = (name(reason)?, num(n)?);
                    out.kind(&name(k)?).residue.push((reason, n));
                }
                ["move", k, v, b, s, ns] => out.moves.push(Move {
                    kind: name(k)?,
                    victim: pid(v)?,
                    beneficiary: pid(b)?,
                    samples: num(s)?,
                    nanoseconds: num(ns)?,
                }),
                ["stack", k, from, to, s, ns, frames] => out.stacks.push(MovedStack {
                    kind: name(k)?,
                    from: match *from {
                        "-" => None,
                        f => Some(file(f)?),
                    },
                    to: file(to)?,
                    frames: (frames.split(','))
                        .map(|a| {
                            u64::from_str_radix(a, 16)
                                .map_err(|_| fail(format!("`{a}` is not a hex address")))
                        })
                        .collect::<Result<_>>()?,
                    samples: num(s)?,
                    nanoseconds: num(ns)?,
                }),
                [
                    "kind" | "counted" | "evicted" | "residue" | "move" | "stack",
                    ..,
                ] => {
                    return Err(fail(format!("malformed `{}` line", f[0])));
                }
                [""] if line.trim().is_empty() => {}
                // A keyword of a newer minor version.
                _ => {}
            }
        }
        if offset == 0 {
            return Err(Error::at(
                0,
                ErrorKind::InvalidAsyncMoves {
                    line: 1,
                    message: "empty file".into(),
                },
            ));
        }
        Ok(out)
    }

    fn kind(&mut self, kind: &str) -> &mut KindTotals {
        match self.kinds.iter().position(|k| k.kind == kind) {
            Some(i) => &mut self.kinds[i],
            None => {
                self.kinds.push(KindTotals::new(kind));
                self.kinds.last_mut().expect("pushed")
            }
        }
    }

    /// Writes the file, its lines sorted.
    ///
    /// Returns an error if a kind or reason name is empty or holds a space or control
    /// character (it would not read back), or if writing fails.
    pub fn write(&self, mut out: impl Write) -> Result<()> {
        let check = |s: &str| {
            if s.is_empty() || s.contains(|c: char| c == ' ' || c.is_control()) {
                Err(Error::new(ErrorKind::InvalidAsyncMoves {
                    line: 0,
                    message: format!("`{s}` cannot be written as a name"),
                }))
            } else {
                Ok(())
            }
        };
        let pid = |p: Option<u32>| p.map_or("-".to_string(), |p| p.to_string());
        let mut lines = Vec::new();
        let mut kinds = self.kinds.clone();
        kinds.sort();
        for k in &kinds {
            check(&k.kind)?;
            lines.push(format!(
                "kind {} held {} attributed {} windows {} objects {} unconsumed {}",
                k.kind, k.held, k.attributed, k.windows, k.objects, k.unconsumed
            ));
            if let Some(n) = k.counted {
                lines.push(format!("counted {} {n}", k.kind));
            }
            if k.evicted > 0 {
                lines.push(format!("evicted {} {}", k.kind, k.evicted));
            }
            let mut residue = k.residue.clone();
            residue.sort();
            for (reason, n) in residue {
                check(&reason)?;
                lines.push(format!("residue {} {reason} {n}", k.kind));
            }
        }
        let mut moves: Vec<&Move> = self.moves.iter().collect();
        moves.sort();
        for m in moves {
            check(&m.kind)?;
            lines.push(format!(
                "move {} {} {} {} {}",
                m.kind,
                pid(m.victim),
                pid(m.beneficiary),
                m.samples,
                m.nanoseconds
            ));
        }
        let mut stacks: Vec<&MovedStack> = self.stacks.iter().collect();
        stacks.sort();
        for m in stacks {
            check(&m.kind)?;
            for f in m.from.iter().chain([&m.to]) {
                check(f)?;
            }
            let frames: Vec<String> = m.frames.iter().map(|a| format!("{a:x}")).collect();
            if frames.is_empty() {
                return Err(Error::new(ErrorKind::InvalidAsyncMoves {
                    line: 0,
                    message: "a moved stack without frames".into(),
                }));
            }
            lines.push(format!(
                "stack {} {} {} {} {} {}",
                m.kind,
                m.from.as_deref().unwrap_or("-"),
                m.to,
                m.samples,
                m.nanoseconds,
                frames.join(",")
            ));
        }
        let mut text = format!("{MAGIC} {ASYNC_MOVES_MAJOR}.{ASYNC_MOVES_MINOR}\n");
        for l in lines {
            text.push_str(&l);
            text.push('\n');
        }
        out.write_all(text.as_bytes()).map_err(Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> AsyncMoves {
        let mut m = AsyncMoves::default();
        let mut k = KindTotals::new("net-rx");
        k.held = 12;
        k.attributed = 9;
        k.windows = 5;
        k.objects = 6;
        k.unconsumed = 1;
        k.counted = Some(7);
        k.evicted = 3;
        k.residue = vec![("window-unseen".into(), 2), ("no-consumer".into(), 1)];
        m.kinds.push(k);
        let cell = |victim, beneficiary, samples| Move {
            kind: "net-rx".into(),
            victim,
            beneficiary,
            samples,
            nanoseconds: samples * 1_000_000,
        };
        m.moves = vec![
            cell(Some(100), Some(200), 9),
            cell(None, None, 2),
            cell(Some(100), None, 1),
        ];
        m.stacks = vec![MovedStack {
            kind: "net-rx".into(),
            from: Some("gmon.out.100k.send".into()),
            to: "gmon.out.200_1k.recv%20er".into(),
            frames: vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0200],
            samples: 9,
            nanoseconds: 9_000_000,
        }];
        m
    }

    #[test]
    fn round_trip_and_text() {
        let mut out = Vec::new();
        sample().write(&mut out).expect("write");
        let text = String::from_utf8(out.clone()).expect("utf-8");
        assert_eq!(
            text,
            "pkgasync 1.2\n\
             kind net-rx held 12 attributed 9 windows 5 objects 6 unconsumed 1\n\
             counted net-rx 7\n\
             evicted net-rx 3\n\
             residue net-rx no-consumer 1\n\
             residue net-rx window-unseen 2\n\
             move net-rx - - 2 2000000\n\
             move net-rx 100 - 1 1000000\n\
             move net-rx 100 200 9 9000000\n\
             stack net-rx gmon.out.100k.send gmon.out.200_1k.recv%20er 9 9000000 \
             ffffffff81000010,ffffffff81000200\n"
        );
        let back = AsyncMoves::parse(&out).expect("parse");
        let mut again = Vec::new();
        back.write(&mut again).expect("write");
        assert_eq!(again, out);
        assert_eq!(back.kinds[0].unattributed(), 3);
    }

    #[test]
    fn growth_and_refusals() {
        // A newer minor version's line is skipped.
        let m = AsyncMoves::parse(b"pkgasync 1.3\nfuture x y\nmove net-rx 1 2 3 4\n").expect("1.3");
        assert_eq!(m.moves.len(), 1);
        for (bad, what) in [
            (&b"pkgasync 2.0\n"[..], "newer"),
            (b"pkgstack 1.0\n", "not an async.moves"),
            (b"", "empty"),
            (b"pkgasync 1.0\nmove net-rx 1 2 x 4\n", "line 2"),
            (b"pkgasync 1.0\nmove net-rx 1\n", "malformed"),
            (b"pkgasync 1.0\nkind net-rx held 1\n", "malformed"),
            (b"pkgasync 1.0\n\xff\n", "UTF-8"),
            (
                b"pkgasync 1.1\nstack net-rx - gmon.out.1k.a 1 2 zz\n",
                "hex address",
            ),
            (
                b"pkgasync 1.1\nstack net-rx - gmon.out.1k.a 1 2 \n",
                "hex address",
            ),
            (
                b"pkgasync 1.1\nstack net-rx - /etc/passwd 1 2 ff\n",
                "file name",
            ),
            (
                b"pkgasync 1.1\nstack net-rx gmon.out.1k.a gmon.out.2k.b 1 2\n",
                "malformed",
            ),
        ] {
            let e = AsyncMoves::parse(bad).expect_err(what).to_string();
            assert!(e.contains(what), "{e}");
        }
        // A 1.0 file (no stacks) still reads.
        let old = AsyncMoves::parse(b"pkgasync 1.0\nmove net-rx 1 2 3 4\n").expect("1.0");
        assert!(old.stacks.is_empty());
        let mut m = sample();
        m.kinds[0].kind = "net rx".into();
        assert!(m.write(Vec::new()).is_err());
        let mut m = sample();
        m.stacks[0].frames.clear();
        assert!(m.write(Vec::new()).is_err());
    }
}
