//! The index of a continuous-profiling directory (`pkgmon --continuous`): which time windows
//! it holds, and which application instances each window's file sets belong to.
//!
//! # Layout (normative)
//!
//! A continuous directory holds one complete measurement directory per time window, named
//! `w<seq>` (`seq` in decimal, at least 8 digits, growing by one per window written), and the
//! index file `index` ([`INDEX_NAME`]). A window is written as `.w<seq>.partial` with its
//! instances file `instances` ([`INSTANCES_NAME`]), then renamed to `w<seq>` once both are
//! complete, and only then listed in the index, which is rewritten and renamed into place. So
//! a collector killed at any moment leaves complete windows, an index that lists only complete
//! windows, and at most one `.partial` directory, which readers ignore and the next collector
//! removes. The index holds one line per window kept, whatever the processes: what a
//! collector rewrites per window, and holds in memory, grows with the windows kept, not with
//! the instances (version 1 put every instance line in the index, so each window rewrote
//! them all); a window's instances go with its directory when retention removes it.
//!
//! # Index format, version 2 (normative)
//!
//! ```text
//! # pkgprof-continuous 2
//! host build7
//! boot-id 0f3c2a9e-3a4b-4c1e-9d55-2f0b8c6d7e10
//! frequency 19
//! window 12 w00000012 1732426000000000000 1732426060000000000 samples=2280 lost=0 rss-kib=14208 instances=2
//! end 1
//! ```
//!
//! and in `w00000012/instances`:
//!
//! ```text
//! # pkgprof-continuous-instances 2 window 12
//! instance 1377 make#3 pid=1377 start=812345 samples=40 cpu-ns=2100000000 begin=1732425990000000000
//! instance 1377_1 cc1#17 pid=1377 start=812399 samples=3 cpu-ns=30000000 begin=1732426001000000000 end=1732426001200000000
//! end 2
//! ```
//!
//! Text lines, each ending in `\n`, fields separated by one space:
//!
//! * `# pkgprof-continuous <major>`: the first line. A reader refuses a major version it does
//!   not know, naming both; this one reads versions 1 and 2 and writes 2.
//! * `host <name>`, `boot-id <id>` (each absent when unknown), `frequency <hz>`: the machine
//!   and the requested samples per second per CPU, once each, before the first window.
//! * `window <seq> <dir> <start> <end> samples=<n> lost=<n> rss-kib=<n> instances=<n>`: a
//!   window, in order of `seq`; `start` and `end` are CLOCK_REALTIME nanoseconds (end
//!   excluded), `samples` the samples it holds, `lost` the samples the kernel dropped during
//!   it, `rss-kib` the collector's resident memory when it finished the window, `instances`
//!   the lines of its instances file.
//! * `end <windows>`: the last line, with the number of windows listed. An index without it
//!   was cut short and is refused.
//!
//! A window's instances file starts with `# pkgprof-continuous-instances 2 window <seq>`
//! (the window it belongs to), has one `instance` line per file set, and ends with
//! `end <lines>`; a file of another window, cut short, or with another count than the index
//! lists is refused.
//!
//! * `instance <label> <app>#<n> key=value...`: one file set of the window, by its
//!   process label (`<pid>` or `<pid>_<k>`, see [`crate::ProfileName`]) and command name. An
//!   instance with `samples=0` (a process that started or ended in the window without being
//!   sampled) has no files there: its line is its record, with its CPU time. The
//!   application instance is `<app>#<n>`: `app` the command name, `n` its instance number,
//!   SLEEPY's *appid*: counted from 0 per name over the directory's life; a pid reused later
//!   is a new instance; an exec into a program of another name starts a new one; a rename by
//!   `prctl(PR_SET_NAME)` does not. A file set without a command name is the application
//!   `[unknown]` ([`UNKNOWN_APP`]). Keys: `pid`, `start` (the process's start in clock ticks
//!   since boot, `/proc/<pid>/stat` field 22; absent when the process was gone before it could
//!   be read), `samples`, `cpu-ns` (user + system CPU time of the process up to the window's
//!   end, from its exit record or its latest /proc reading; absent when neither was seen),
//!   `begin` and `end` (CLOCK_REALTIME ns of its start and exit, when they fall in the window
//!   or are known), `container` (the container id found in the process's cgroup path, when
//!   it has one: 64 hex digits, as Docker, containerd and Podman name them), `cgroup` (the
//!   id of the process's cgroup v2, the number `PERF_SAMPLE_CGROUP` and `PERF_RECORD_CGROUP`
//!   report and `perf --all-cgroups` sorts by: the inode number of its directory in the
//!   cgroup file system; absent for a process gone before the window ended). Unknown keys
//!   are kept by readers ([`IndexInstance::extra`]), so minor additions stay readable.
//!
//! Names are escaped: a byte outside `!`..`~`, and `%`, `#` and `=`, is written `%XX`
//! (upper-case hex).
//!
//! # Version 1
//!
//! Written by pkgmon before the per-window instances files: the same lines, but each window's
//! `instance` lines follow its `window` line in the index itself (no `instances=` key, no
//! instances files). Readers still read it ([`ContinuousIndex::parse`] gives those windows
//! their instances); a collector continuing in such a directory moves each window's lines to
//! its instances file and rewrites the index as version 2.

use std::fmt::Write as _;

use crate::error::{Error, ErrorKind, Result};

/// The index's file name in a continuous directory.
pub const INDEX_NAME: &str = "index";

/// The largest index or instances file read: 32 MiB, some 270,000 window lines (half a year
/// of minute windows) or as many instances in one window. A larger one is refused unread,
/// rather than costing its size in memory (a sparse 900 MiB index cost `pkgprof --apps`
/// 1.8 GiB).
pub const INDEX_MAX_BYTES: u64 = 32 << 20;

/// The first line's magic words, before the version.
pub const INDEX_MAGIC: &str = "# pkgprof-continuous";

/// The major version written (and the newest read).
pub const INDEX_VERSION: u32 = 2;

/// The file of a window's instances, in its directory (version 2).
pub const INSTANCES_NAME: &str = "instances";

/// The first line's magic words of an instances file, before the version.
pub const INSTANCES_MAGIC: &str = "# pkgprof-continuous-instances";

/// The application name of a file set whose command name was never seen (a process sampled
/// after its exit was recorded, say); its files have an empty command name.
pub const UNKNOWN_APP: &[u8] = b"[unknown]";

/// The directory name of window `seq`.
pub fn window_dir_name(seq: u64) -> String {
    format!("w{seq:08}")
}

/// The temporary name window `seq` is written under.
pub fn partial_dir_name(seq: u64) -> String {
    format!(".w{seq:08}.partial")
}

/// A continuous directory's index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContinuousIndex {
    /// The host name of the machine profiled.
    pub host: String,
    /// Its boot id (`/proc/sys/kernel/random/boot_id`), if known.
    pub boot_id: Option<String>,
    /// Requested samples per second per CPU.
    pub frequency: u64,
    /// The windows, in order of `seq`.
    pub windows: Vec<IndexWindow>,
    /// The major version the index was read in (1: its windows came with their instances);
    /// an index is always written in [`INDEX_VERSION`].
    pub version: u32,
}

/// One window of a [`ContinuousIndex`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexWindow {
    /// Its sequence number.
    pub seq: u64,
    /// Its directory's name ([`window_dir_name`]).
    pub dir: String,
    /// CLOCK_REALTIME ns of its start.
    pub start_ns: u64,
    /// CLOCK_REALTIME ns of its end (excluded).
    pub end_ns: u64,
    /// Samples it holds.
    pub samples: u64,
    /// Samples lost during it.
    pub lost: u64,
    /// The collector's resident memory (KiB) when it finished this window.
    pub rss_kib: u64,
    /// The lines of its instances file (`instances=`; in version 1, its instance lines).
    pub instance_lines: u64,
    /// Its file sets, each with its application instance: read with
    /// [`IndexWindow::read_instances`] (or from a version 1 index, which holds them).
    pub instances: Vec<IndexInstance>,
}

/// One file set of a window and the application instance it belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexInstance {
    /// The process label of its files (`1377`, or `1377_1` for a pid reused in the window).
    pub label: String,
    /// The application: the command name of the file set (bytes, as in the file names).
    pub app: Vec<u8>,
    /// The instance number of `app`, from 0.
    pub number: u32,
    /// The pid.
    pub pid: u32,
    /// Start in clock ticks since boot (`/proc/<pid>/stat` field 22), if read.
    pub start_ticks: Option<u64>,
    /// Samples in this window.
    pub samples: u64,
    /// User + system CPU ns up to the window's end, if known.
    pub cpu_ns: Option<u64>,
    /// CLOCK_REALTIME ns of its start, if known.
    pub begin_ns: Option<u64>,
    /// CLOCK_REALTIME ns of its exit, if it exited.
    pub end_ns: Option<u64>,
    /// The container id in its cgroup path, if it has one.
    pub container: Option<String>,
    /// The id of its cgroup (v2), as `PERF_SAMPLE_CGROUP` reports it, if read.
    pub cgroup_id: Option<u64>,
    /// Keys this reader does not know, as written.
    pub extra: Vec<(String, String)>,
}

impl IndexInstance {
    /// `app#number`, escaped as in the index (how users name it: `pkgprof --app make#3`).
    pub fn appid(&self) -> String {
        format!("{}#{}", escape(&self.app), self.number)
    }
}

/// `bytes` as the index writes a name.
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        if (b'!'..=b'~').contains(&b) && !b"%#=".contains(&b) {
            s.push(b as char);
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    s
}

/// The bytes of an escaped name, None if an escape is malformed.
pub fn unescape(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

fn index_error(line: usize, offset: usize, message: impl Into<String>) -> Error {
    Error::at(
        offset as u64,
        ErrorKind::Index {
            line,
            message: message.into(),
        },
    )
}

fn number<T: std::str::FromStr>(text: &str, what: &str, line: usize, at: usize) -> Result<T> {
    text.parse()
        .map_err(|_| index_error(line, at, format!("{what}: `{text}' is not a number")))
}

/// An `instance` line of `i`.
fn write_instance(s: &mut String, i: &IndexInstance) {
    let _ = write!(
        s,
        "instance {} {} pid={}",
        escape(i.label.as_bytes()),
        i.appid(),
        i.pid
    );
    let opt = [
        ("start", i.start_ticks),
        ("samples", Some(i.samples)),
        ("cpu-ns", i.cpu_ns),
        ("begin", i.begin_ns),
        ("end", i.end_ns),
        ("cgroup", i.cgroup_id),
    ];
    for (k, v) in opt {
        if let Some(v) = v {
            let _ = write!(s, " {k}={v}");
        }
    }
    if let Some(c) = &i.container {
        let _ = write!(s, " container={}", escape(c.as_bytes()));
    }
    for (k, v) in &i.extra {
        let _ = write!(s, " {}={}", escape(k.as_bytes()), escape(v.as_bytes()));
    }
    s.push('\n');
}

/// Reads an `instance` line's fields after its first word (`f`), of line `n` at byte `at`.
fn parse_instance<'a>(
    mut f: impl Iterator<Item = &'a str>,
    n: usize,
    at: usize,
) -> Result<IndexInstance> {
    let name = |t: Option<&str>, what: &str| -> Result<Vec<u8>> {
        let t = t.ok_or_else(|| index_error(n, at, format!("`instance' lacks its {what}")))?;
        unescape(t)
            .filter(|b| !b.is_empty())
            .ok_or_else(|| index_error(n, at, format!("{what}: malformed name `{t}'")))
    };
    let text_of = |b: Vec<u8>, what: &str| {
        String::from_utf8(b).map_err(|_| index_error(n, at, format!("{what} not UTF-8")))
    };
    let label = text_of(name(f.next(), "process label")?, "label")?;
    if crate::parse_process_label(&label).is_none() {
        return Err(index_error(n, at, format!("process label `{label}'")));
    }
    let appid = f.next().unwrap_or("");
    let (app, num) = appid
        .rsplit_once('#')
        .ok_or_else(|| index_error(n, at, format!("`{appid}' is not an APP#N instance")))?;
    let mut i = IndexInstance {
        label,
        app: name(Some(app), "application")?,
        number: number(num, "instance number", n, at)?,
        ..IndexInstance::default()
    };
    for kv in f {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| index_error(n, at, format!("`{kv}' is not key=value")))?;
        match k {
            "pid" => i.pid = number(v, k, n, at)?,
            "start" => i.start_ticks = Some(number(v, k, n, at)?),
            "samples" => i.samples = number(v, k, n, at)?,
            "cpu-ns" => i.cpu_ns = Some(number(v, k, n, at)?),
            "begin" => i.begin_ns = Some(number(v, k, n, at)?),
            "end" => i.end_ns = Some(number(v, k, n, at)?),
            "cgroup" => i.cgroup_id = Some(number(v, k, n, at)?),
            "container" => i.container = Some(text_of(name(Some(v), "container")?, k)?),
            _ => {
                let k = text_of(name(Some(k), "key")?, "key")?;
                let v = text_of(unescape(v).unwrap_or_default(), "value")?;
                i.extra.push((k, v));
            }
        }
    }
    Ok(i)
}

/// The lines of `text` with their numbers (from 1) and byte offsets; a last line without its
/// line end is an error: the file was cut short.
fn numbered_lines(text: &str) -> impl Iterator<Item = Result<(usize, usize, &str)>> {
    let mut offset = 0;
    text.split_inclusive('\n').enumerate().map(move |(k, raw)| {
        let at = offset;
        offset += raw.len();
        raw.strip_suffix('\n')
            .map(|l| (k + 1, at, l))
            .ok_or_else(|| {
                index_error(
                    k + 1,
                    at,
                    "the last line has no line end: the file was cut short",
                )
            })
    })
}

fn ascii_text(data: &[u8]) -> Result<&str> {
    std::str::from_utf8(data).map_err(|e| {
        let at = e.valid_up_to();
        let line = 1 + data[..at].iter().filter(|&&b| b == b'\n').count();
        index_error(line, at, "not ASCII text")
    })
}

impl IndexWindow {
    /// Its line in the index.
    pub fn to_line(&self) -> String {
        format!(
            "window {} {} {} {} samples={} lost={} rss-kib={} instances={}\n",
            self.seq,
            escape(self.dir.as_bytes()),
            self.start_ns,
            self.end_ns,
            self.samples,
            self.lost,
            self.rss_kib,
            self.instance_lines
        )
    }

    /// Its instances file: the header naming the window, one line per instance, the count.
    pub fn instances_text(&self) -> String {
        let mut s = format!("{INSTANCES_MAGIC} {INDEX_VERSION} window {}\n", self.seq);
        for i in &self.instances {
            write_instance(&mut s, i);
        }
        let _ = writeln!(s, "end {}", self.instances.len());
        s
    }

    /// Reads its instances file (`data`).
    ///
    /// Returns [`ErrorKind::Index`], naming the line and byte offset, if the file is not this
    /// window's (another window's number, another version), a line is malformed, or the file
    /// was cut short: no `end` line, or a count that differs from the lines or from the index's
    /// `instances=`.
    pub fn parse_instances(&self, data: &[u8]) -> Result<Vec<IndexInstance>> {
        let text = ascii_text(data)?;
        let mut out = Vec::new();
        let mut ended = false;
        let mut last = (1, 0);
        for line in numbered_lines(text) {
            let (n, at, line) = line?;
            last = (n, at + line.len() + 1);
            if n == 1 {
                let head = format!("{INSTANCES_MAGIC} {INDEX_VERSION} window ");
                match line.strip_prefix(&head).map(str::parse::<u64>) {
                    Some(Ok(seq)) if seq == self.seq => continue,
                    Some(Ok(seq)) => {
                        return Err(index_error(
                            n,
                            at,
                            format!("the instances of window {seq}, not of window {}", self.seq),
                        ));
                    }
                    _ => {
                        return Err(index_error(
                            n,
                            at,
                            format!(
                                "not an instances file of this pkgprof: the first line must be \
                                 `{head}{}`",
                                self.seq
                            ),
                        ));
                    }
                }
            }
            if ended {
                return Err(index_error(n, at, "text after the `end` line"));
            }
            let mut f = line.split(' ');
            match f.next().unwrap_or("") {
                "instance" => out.push(parse_instance(f, n, at)?),
                "end" => {
                    let count: u64 = number(f.next().unwrap_or(""), "end", n, at)?;
                    if count != out.len() as u64 || count != self.instance_lines {
                        return Err(index_error(
                            n,
                            at,
                            format!(
                                "`end` counts {count} instances, {} are listed and the index \
                                 says {}",
                                out.len(),
                                self.instance_lines
                            ),
                        ));
                    }
                    ended = true;
                }
                word => return Err(index_error(n, at, format!("unknown line `{word}'"))),
            }
        }
        if !ended {
            return Err(index_error(
                last.0,
                last.1,
                "no `end` line: the instances file was cut short",
            ));
        }
        Ok(out)
    }

    /// Reads its instances from its directory in the continuous directory `dir`, unless it
    /// has them (a version 1 index holds them).
    ///
    /// Returns an error naming the file if it cannot be read or is damaged.
    pub fn read_instances(&mut self, dir: &std::path::Path) -> Result<()> {
        if self.instance_lines == self.instances.len() as u64 {
            return Ok(());
        }
        let path = dir.join(&self.dir).join(INSTANCES_NAME);
        let data = safe_fs::read(&path, &safe_fs::ReadOptions::untrusted(INDEX_MAX_BYTES))
            .map_err(|e| Error::from(e).with_path(&path))?;
        self.instances = self
            .parse_instances(&data)
            .map_err(|e| e.with_path(&path))?;
        Ok(())
    }
}

impl ContinuousIndex {
    /// Writes the index (version 2: the windows' lines, not their instances, which
    /// [`IndexWindow::instances_text`] writes). Writes as it goes.
    pub fn write<W: std::io::Write>(&self, mut out: W) -> Result<()> {
        let io = |e| Error::new(ErrorKind::Io(e));
        let mut s = String::new();
        let _ = writeln!(s, "{INDEX_MAGIC} {INDEX_VERSION}");
        // The reader refuses an empty name: an unknown host or boot id leaves its line out, as
        // an index read without the line had it.
        if !self.host.is_empty() {
            let _ = writeln!(s, "host {}", escape(self.host.as_bytes()));
        }
        if let Some(b) = self.boot_id.as_ref().filter(|b| !b.is_empty()) {
            let _ = writeln!(s, "boot-id {}", escape(b.as_bytes()));
        }
        let _ = writeln!(s, "frequency {}", self.frequency);
        out.write_all(s.as_bytes()).map_err(io)?;
        for w in &self.windows {
            out.write_all(w.to_line().as_bytes()).map_err(io)?;
        }
        writeln!(out, "end {}", self.windows.len()).map_err(io)
    }

    /// Reads an index of version 1 (its windows with their instances) or 2 (without: see
    /// [`IndexWindow::read_instances`]).
    ///
    /// Returns [`ErrorKind::Index`], naming the line and byte offset, if the first line is
    /// not `# pkgprof-continuous 1` or `2`, a line is malformed or out of place (an `instance`
    /// before any window or in a version 2 index, windows out of order), or the index is cut
    /// short: no `end` line, a count that differs from the windows listed, or text after it.
    pub fn parse(data: &[u8]) -> Result<ContinuousIndex> {
        let text = ascii_text(data)?;
        let mut index = ContinuousIndex::default();
        let mut ended = false;
        let mut last = (1, 0);
        for line in numbered_lines(text) {
            let (n, at, line) = line?;
            last = (n, at + line.len() + 1);
            if n == 1 {
                index.version = match line
                    .strip_prefix(INDEX_MAGIC)
                    .and_then(|v| v.strip_prefix(' '))
                    .map(|v| v.parse::<u32>())
                {
                    Some(Ok(v @ (1 | 2))) => v,
                    Some(Ok(v)) => {
                        return Err(index_error(
                            1,
                            0,
                            format!(
                                "index version {v} is newer than this pkgprof reads (versions \
                                 1 and {INDEX_VERSION}): use the pkgprof of the pkgmon that \
                                 wrote it"
                            ),
                        ));
                    }
                    _ => {
                        return Err(index_error(
                            1,
                            0,
                            format!(
                                "not a continuous index: the first line must be \
                                 `{INDEX_MAGIC} {INDEX_VERSION}`"
                            ),
                        ));
                    }
                };
                continue;
            }
            if ended {
                return Err(index_error(n, at, "text after the `end` line"));
            }
            let mut f = line.split(' ');
            let word = f.next().unwrap_or("");
            let name = |t: Option<&str>, what: &str| -> Result<Vec<u8>> {
                let t =
                    t.ok_or_else(|| index_error(n, at, format!("`{word}' lacks its {what}")))?;
                unescape(t)
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| index_error(n, at, format!("{what}: malformed name `{t}'")))
            };
            let text_of = |b: Vec<u8>, what: &str| {
                String::from_utf8(b).map_err(|_| index_error(n, at, format!("{what} not UTF-8")))
            };
            match word {
                "host" => index.host = text_of(name(f.next(), "name")?, "host")?,
                "boot-id" => index.boot_id = Some(text_of(name(f.next(), "id")?, "boot id")?),
                "frequency" => index.frequency = number(f.next().unwrap_or(""), word, n, at)?,
                "window" => {
                    let seq: u64 = number(f.next().unwrap_or(""), "window number", n, at)?;
                    if index.windows.last().is_some_and(|w| w.seq >= seq) {
                        return Err(index_error(n, at, format!("window {seq} is out of order")));
                    }
                    let dir = text_of(name(f.next(), "directory")?, "directory")?;
                    if dir.contains('/') || dir.starts_with('.') {
                        return Err(index_error(
                            n,
                            at,
                            format!(
                                "window directory `{dir}' is not a name in the continuous \
                                 directory (it has `/' or starts with `.')"
                            ),
                        ));
                    }
                    let start_ns = number(f.next().unwrap_or(""), "window start", n, at)?;
                    let end_ns = number(f.next().unwrap_or(""), "window end", n, at)?;
                    let mut w = IndexWindow {
                        seq,
                        dir,
                        start_ns,
                        end_ns,
                        ..IndexWindow::default()
                    };
                    let mut counted = false;
                    for kv in f {
                        let (k, v) = kv.split_once('=').ok_or_else(|| {
                            index_error(n, at, format!("`{kv}' is not key=value"))
                        })?;
                        match k {
                            "samples" => w.samples = number(v, k, n, at)?,
                            "lost" => w.lost = number(v, k, n, at)?,
                            "rss-kib" => w.rss_kib = number(v, k, n, at)?,
                            "instances" if index.version > 1 => {
                                w.instance_lines = number(v, k, n, at)?;
                                counted = true;
                            }
                            _ => {}
                        }
                    }
                    if index.version > 1 && !counted {
                        return Err(index_error(
                            n,
                            at,
                            format!("window {seq} lacks its instances=COUNT"),
                        ));
                    }
                    index.windows.push(w);
                }
                "instance" if index.version > 1 => {
                    return Err(index_error(
                        n,
                        at,
                        "an instance line in a version 2 index (they are in each window's \
                         instances file)",
                    ));
                }
                "instance" => {
                    let Some(w) = index.windows.last_mut() else {
                        return Err(index_error(n, at, "an instance before any window"));
                    };
                    w.instances.push(parse_instance(f, n, at)?);
                    w.instance_lines += 1;
                }
                "end" => {
                    let count: usize = number(f.next().unwrap_or(""), "end", n, at)?;
                    if count != index.windows.len() {
                        return Err(index_error(
                            n,
                            at,
                            format!(
                                "`end` counts {count} windows but {} are listed",
                                index.windows.len()
                            ),
                        ));
                    }
                    ended = true;
                }
                _ if word.starts_with('#') => {}
                _ => return Err(index_error(n, at, format!("unknown line `{word}'"))),
            }
        }
        if index.version == 0 {
            return Err(index_error(
                1,
                0,
                format!(
                    "not a continuous index: the first line must be `{INDEX_MAGIC} {INDEX_VERSION}`"
                ),
            ));
        }
        if !ended {
            return Err(index_error(
                last.0,
                last.1,
                "no `end` line: the index was cut short",
            ));
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ContinuousIndex {
        ContinuousIndex {
            host: "build 7".into(),
            boot_id: Some("0f3c".into()),
            frequency: 19,
            version: INDEX_VERSION,
            windows: vec![IndexWindow {
                seq: 12,
                dir: window_dir_name(12),
                start_ns: 10,
                end_ns: 20,
                samples: 5,
                lost: 1,
                rss_kib: 900,
                instance_lines: 1,
                instances: vec![IndexInstance {
                    label: "1377_1".into(),
                    app: b"my prog#%=".to_vec(),
                    number: 3,
                    pid: 1377,
                    start_ticks: Some(812),
                    samples: 4,
                    cpu_ns: Some(7),
                    begin_ns: None,
                    end_ns: Some(19),
                    container: Some("ab12".into()),
                    cgroup_id: Some(4242),
                    extra: vec![("later".into(), "x".into())],
                }],
            }],
        }
    }

    #[test]
    fn an_index_and_its_instances_read_back_as_written_and_every_cut_is_refused() {
        let index = sample();
        let mut text = Vec::new();
        index.write(&mut text).unwrap();
        let s = String::from_utf8(text.clone()).unwrap();
        assert!(s.ends_with("rss-kib=900 instances=1\nend 1\n"), "{s}");
        let mut read = ContinuousIndex::parse(&text).unwrap();
        let w = &index.windows[0];
        let inst = w.instances_text();
        assert!(
            inst.contains("instance 1377_1 my%20prog%23%25%3D#3 pid=1377 start=812 samples=4"),
            "{inst}"
        );
        read.windows[0].instances = read.windows[0].parse_instances(inst.as_bytes()).unwrap();
        assert_eq!(read, index);
        for cut in 0..text.len() {
            assert!(ContinuousIndex::parse(&text[..cut]).is_err(), "cut {cut}");
        }
        for cut in 0..inst.len() {
            assert!(
                w.parse_instances(&inst.as_bytes()[..cut]).is_err(),
                "cut {cut}"
            );
        }
    }

    /// An index read without a `host` line wrote `host ` with no name, which it then refused
    /// to read (the continuous_index fuzz target).
    #[test]
    fn an_index_without_host_or_boot_id_writes_text_that_reads_back() {
        let mut index = ContinuousIndex::parse(b"# pkgprof-continuous 2\nend 0\n").unwrap();
        assert_eq!(index.host, "");
        index.boot_id = Some(String::new());
        let mut text = Vec::new();
        index.write(&mut text).unwrap();
        let again = ContinuousIndex::parse(&text).unwrap();
        assert_eq!((again.host.as_str(), again.boot_id), ("", None));
        assert_eq!(text, b"# pkgprof-continuous 2\nfrequency 0\nend 0\n");
    }

    #[test]
    fn a_version_1_index_reads_with_its_instances() {
        let v1 = "# pkgprof-continuous 1\nhost build%207\nboot-id 0f3c\nfrequency 19\n\
                  window 12 w00000012 10 20 samples=5 lost=1 rss-kib=900\n\
                  instance 1377_1 my%20prog%23%25%3D#3 pid=1377 start=812 samples=4 cpu-ns=7 \
                  end=19 cgroup=4242 container=ab12 later=x\nend 1\n";
        let read = ContinuousIndex::parse(v1.as_bytes()).unwrap();
        assert_eq!(read.version, 1);
        assert_eq!(read.windows, sample().windows);
    }

    #[test]
    fn damaged_lines_name_their_line() {
        let bad = b"# pkgprof-continuous 1\nfrequency 19\ninstance 1 a#0 pid=1\nend 0\n";
        let e = ContinuousIndex::parse(bad).unwrap_err().to_string();
        assert!(
            e.contains("line 3") && e.contains("before any window"),
            "{e}"
        );
        let e = ContinuousIndex::parse(b"# pkgprof-continuous 3\nend 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("version 3") && e.contains("versions 1 and 2"),
            "{e}"
        );
        let e = ContinuousIndex::parse(
            b"# pkgprof-continuous 2\nwindow 1 w00000001 1 2\ninstance 1 a#0 pid=1\nend 1\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 2") && e.contains("instances=COUNT"), "{e}");
        let e = ContinuousIndex::parse(
            b"# pkgprof-continuous 2\nwindow 1 ../w00000001 1 2 instances=0\nend 1\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("line 2") && e.contains("`../w00000001' is not a name in the continuous"),
            "{e}"
        );
        let w = &sample().windows[0];
        let mut other = w.clone();
        other.seq = 13;
        let e = w
            .parse_instances(other.instances_text().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1") && e.contains("of window 13, not of window 12"),
            "{e}"
        );
        let mut short = w.clone();
        short.instance_lines = 2;
        let e = short
            .parse_instances(w.instances_text().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("the index says 2"), "{e}");
    }
}
