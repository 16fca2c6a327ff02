//! The index of a continuous-profiling directory (`pkgmon --continuous`): which time windows
//! it holds, and which application instances each window's file sets belong to.
//!
//! # Layout (normative)
//!
//! A continuous directory holds one complete measurement directory per time window, named
//! `w<seq>` (`seq` in decimal, at least 8 digits, growing by one per window written), and the
//! index file `index` ([`INDEX_NAME`]). A window is written as `.w<seq>.partial`, then renamed
//! to `w<seq>` once its manifest is complete, and only then listed in the index, which is
//! rewritten whole and renamed into place. So a collector killed at any moment leaves complete
//! windows, an index that lists only complete windows, and at most one `.partial` directory,
//! which readers ignore and the next collector removes.
//!
//! # Index format, version 1 (normative)
//!
//! ```text
//! # pkgprof-continuous 1
//! host build7
//! boot-id 0f3c2a9e-3a4b-4c1e-9d55-2f0b8c6d7e10
//! frequency 19
//! window 12 w00000012 1732426000000000000 1732426060000000000 samples=2280 lost=0 rss-kib=14208
//! instance 1377 make#3 pid=1377 start=812345 samples=40 cpu-ns=2100000000 begin=1732425990000000000
//! instance 1377_1 cc1#17 pid=1377 start=812399 samples=3 cpu-ns=30000000 begin=1732426001000000000 end=1732426001200000000
//! end 1
//! ```
//!
//! Text lines, each ending in `\n`, fields separated by one space:
//!
//! * `# pkgprof-continuous <major>`: the first line. A reader refuses another major version.
//! * `host <name>`, `boot-id <id>` (absent when unknown), `frequency <hz>`: the machine and the
//!   requested samples per second per CPU, once each, before the first window.
//! * `window <seq> <dir> <start> <end> samples=<n> lost=<n> rss-kib=<n>`: a window, in order of
//!   `seq`; `start` and `end` are CLOCK_REALTIME nanoseconds (end excluded), `samples` the
//!   samples it holds, `lost` the samples the kernel dropped during it, `rss-kib` the
//!   collector's resident memory when it finished the window.
//! * `instance <label> <app>#<n> key=value...`: one file set of the window above, by its
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
//!   are kept by readers
//!   ([`IndexInstance::extra`]), so minor additions stay readable.
//! * `end <windows>`: the last line, with the number of windows listed. An index without it
//!   was cut short and is refused.
//!
//! Names are escaped: a byte outside `!`..`~`, and `%`, `#` and `=`, is written `%XX`
//! (upper-case hex).

use std::fmt::Write as _;

use crate::error::{Error, ErrorKind, Result};

/// The index's file name in a continuous directory.
pub const INDEX_NAME: &str = "index";

/// The first line's magic words, before the version.
pub const INDEX_MAGIC: &str = "# pkgprof-continuous";

/// The major version written and read.
pub const INDEX_VERSION: u32 = 1;

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
    /// Its file sets, each with its application instance.
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

impl IndexWindow {
    /// Its lines in the index: the `window` line, then one `instance` line per file set.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "window {} {} {} {} samples={} lost={} rss-kib={}",
            self.seq,
            escape(self.dir.as_bytes()),
            self.start_ns,
            self.end_ns,
            self.samples,
            self.lost,
            self.rss_kib
        );
        for i in &self.instances {
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
        s
    }
}

impl ContinuousIndex {
    /// Writes the index.
    pub fn write<W: std::io::Write>(&self, out: W) -> Result<()> {
        self.write_with(out, |_| None)
    }

    /// Writes the index, taking a window's lines from `lines` where it has them
    /// ([`IndexWindow::to_text`], kept by a writer that holds each window's lines rather than
    /// its instances: the file's bytes rather than parsed instances with their allocations), and
    /// from the window
    /// otherwise. Writes as it goes: nothing the size of the index is built in memory.
    pub fn write_with<'a, W: std::io::Write>(
        &self,
        mut out: W,
        lines: impl Fn(&IndexWindow) -> Option<&'a str>,
    ) -> Result<()> {
        let io = |e| Error::new(ErrorKind::Io(e));
        let mut s = String::new();
        let _ = writeln!(s, "{INDEX_MAGIC} {INDEX_VERSION}");
        let _ = writeln!(s, "host {}", escape(self.host.as_bytes()));
        if let Some(b) = &self.boot_id {
            let _ = writeln!(s, "boot-id {}", escape(b.as_bytes()));
        }
        let _ = writeln!(s, "frequency {}", self.frequency);
        out.write_all(s.as_bytes()).map_err(io)?;
        for w in &self.windows {
            match lines(w) {
                Some(text) => out.write_all(text.as_bytes()).map_err(io)?,
                None => out.write_all(w.to_text().as_bytes()).map_err(io)?,
            }
        }
        writeln!(out, "end {}", self.windows.len()).map_err(io)
    }

    /// Reads an index.
    ///
    /// Returns [`ErrorKind::Index`], naming the line and byte offset, if the first line is
    /// not `# pkgprof-continuous 1`, a line is malformed or out of place (an `instance` before
    /// any window, windows out of order), or the index is cut short: no `end` line, a count
    /// that differs from the windows listed, or text after it.
    pub fn parse(data: &[u8]) -> Result<ContinuousIndex> {
        let text = std::str::from_utf8(data).map_err(|e| {
            let at = e.valid_up_to();
            let line = 1 + data[..at].iter().filter(|&&b| b == b'\n').count();
            index_error(line, at, "not ASCII text")
        })?;
        let mut lines = text.split_inclusive('\n');
        let first = lines.next().unwrap_or("");
        match first
            .strip_suffix('\n')
            .and_then(|l| l.strip_prefix(INDEX_MAGIC))
            .and_then(|v| v.strip_prefix(' '))
            .map(|v| v.parse::<u32>())
        {
            Some(Ok(INDEX_VERSION)) => {}
            Some(Ok(v)) => {
                return Err(index_error(
                    1,
                    0,
                    format!(
                        "index version {v} is not readable by this pkgprof (version {INDEX_VERSION})"
                    ),
                ));
            }
            _ => {
                return Err(index_error(
                    1,
                    0,
                    format!("not a continuous index: the first line must be `{INDEX_MAGIC} 1`"),
                ));
            }
        }
        let mut index = ContinuousIndex::default();
        let mut ended = false;
        let mut offset = first.len();
        let mut n = 1;
        for raw in lines {
            n += 1;
            let at = offset;
            offset += raw.len();
            if ended {
                return Err(index_error(n, at, "text after the `end` line"));
            }
            let Some(line) = raw.strip_suffix('\n') else {
                return Err(index_error(
                    n,
                    at,
                    "the last line has no line end: the index was cut short",
                ));
            };
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
                        return Err(index_error(n, at, format!("window directory `{dir}'")));
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
                    for kv in f {
                        let (k, v) = kv.split_once('=').ok_or_else(|| {
                            index_error(n, at, format!("`{kv}' is not key=value"))
                        })?;
                        match k {
                            "samples" => w.samples = number(v, k, n, at)?,
                            "lost" => w.lost = number(v, k, n, at)?,
                            "rss-kib" => w.rss_kib = number(v, k, n, at)?,
                            _ => {}
                        }
                    }
                    index.windows.push(w);
                }
                "instance" => {
                    let Some(w) = index.windows.last_mut() else {
                        return Err(index_error(n, at, "an instance before any window"));
                    };
                    let label = text_of(name(f.next(), "process label")?, "label")?;
                    if crate::parse_process_label(&label).is_none() {
                        return Err(index_error(n, at, format!("process label `{label}'")));
                    }
                    let appid = f.next().unwrap_or("");
                    let (app, num) = appid.rsplit_once('#').ok_or_else(|| {
                        index_error(n, at, format!("`{appid}' is not an APP#N instance"))
                    })?;
                    let mut i = IndexInstance {
                        label,
                        app: name(Some(app), "application")?,
                        number: number(num, "instance number", n, at)?,
                        ..IndexInstance::default()
                    };
                    for kv in f {
                        let (k, v) = kv.split_once('=').ok_or_else(|| {
                            index_error(n, at, format!("`{kv}' is not key=value"))
                        })?;
                        match k {
                            "pid" => i.pid = number(v, k, n, at)?,
                            "start" => i.start_ticks = Some(number(v, k, n, at)?),
                            "samples" => i.samples = number(v, k, n, at)?,
                            "cpu-ns" => i.cpu_ns = Some(number(v, k, n, at)?),
                            "begin" => i.begin_ns = Some(number(v, k, n, at)?),
                            "end" => i.end_ns = Some(number(v, k, n, at)?),
                            "cgroup" => i.cgroup_id = Some(number(v, k, n, at)?),
                            "container" => {
                                i.container = Some(text_of(name(Some(v), "container")?, k)?)
                            }
                            _ => {
                                let k = text_of(name(Some(k), "key")?, "key")?;
                                let v = text_of(unescape(v).unwrap_or_default(), "value")?;
                                i.extra.push((k, v));
                            }
                        }
                    }
                    w.instances.push(i);
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
        if !ended {
            return Err(index_error(
                n,
                offset,
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
            windows: vec![IndexWindow {
                seq: 12,
                dir: window_dir_name(12),
                start_ns: 10,
                end_ns: 20,
                samples: 5,
                lost: 1,
                rss_kib: 900,
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
    fn an_index_reads_back_as_written_and_every_cut_is_refused() {
        let index = sample();
        let mut text = Vec::new();
        index.write(&mut text).unwrap();
        // A window's lines kept as text write the same index.
        let kept: Vec<String> = index.windows.iter().map(IndexWindow::to_text).collect();
        let mut bare = index.clone();
        bare.windows.iter_mut().for_each(|w| w.instances.clear());
        let mut again = Vec::new();
        bare.write_with(&mut again, |w| {
            let k = bare.windows.iter().position(|x| x.seq == w.seq)?;
            Some(kept[k].as_str())
        })
        .unwrap();
        assert_eq!(
            String::from_utf8(again).unwrap(),
            String::from_utf8(text.clone()).unwrap()
        );
        let s = String::from_utf8(text.clone()).unwrap();
        assert!(
            s.contains("instance 1377_1 my%20prog%23%25%3D#3 pid=1377 start=812 samples=4"),
            "{s}"
        );
        assert_eq!(ContinuousIndex::parse(&text).unwrap(), index);
        for cut in 0..text.len() {
            assert!(ContinuousIndex::parse(&text[..cut]).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn damaged_lines_name_their_line() {
        let bad = b"# pkgprof-continuous 1\nfrequency 19\ninstance 1 a#0 pid=1\nend 0\n";
        let e = ContinuousIndex::parse(bad).unwrap_err().to_string();
        assert!(
            e.contains("line 3") && e.contains("before any window"),
            "{e}"
        );
        let e = ContinuousIndex::parse(b"# pkgprof-continuous 2\nend 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 2"), "{e}");
    }
}
