//! The names of a measurement's files: `gmon.out.<pid>u.<comm>` and its siblings, and the
//! escaping that lets any command name appear in one.
//!
//! The file is longer than 800 lines because of its unit tests (the last third). The code is
//! one grammar: a name is built and parsed here, and the command name's escape is part of that
//! grammar ([`Comm`] is what may appear in a name), so building, parsing and escaping stay
//! together where a change to one is seen beside the others.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind, Result};

/// What every process-labeled file name starts with.
pub const NAME_PREFIX: &str = "gmon.out.";

/// The name of the saved vDSO image whose GNU build-id is `build_id`: `vdso.` and the
/// build-id in lower-case hex (see item 7 of [the measurement directory](crate::labeled)).
///
/// ```
/// assert_eq!(gmon_format::vdso_file_name(&[0x5d, 0x0a]), "vdso.5d0a");
/// ```
pub fn vdso_file_name(build_id: &[u8]) -> String {
    let mut name = String::from("vdso.");
    for b in build_id {
        name.push_str(&format!("{b:02x}"));
    }
    name
}

/// A process's command name (Linux `comm`, 4.4BSD `p_comm`), as bytes.
///
/// It may hold any byte, NUL included, and is at most [`Comm::MAX_LEN`] bytes long, so that any
/// name built from it fits a path component.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Comm(Vec<u8>);

impl Comm {
    /// The longest command name accepted, in bytes.
    ///
    /// Linux keeps 15 bytes (`TASK_COMM_LEN` less its NUL) and 4.4BSD 16 (`MAXCOMLEN`), but
    /// Linux shows kernel threads with names up to 64 bytes long in `/proc/PID/comm`. Escaped,
    /// 64 bytes take at most 192, and the longest name, `gmon.out.4294967295_4294967295u.` plus
    /// those, is 224 bytes: below the 255 of `NAME_MAX`.
    pub const MAX_LEN: usize = 64;

    /// Wraps a command name.
    ///
    /// Returns an error if it is longer than [`Comm::MAX_LEN`] bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Comm> {
        let bytes = bytes.into();
        if bytes.len() > Comm::MAX_LEN {
            return Err(Error::new(ErrorKind::CommTooLong {
                len: bytes.len(),
                max: Comm::MAX_LEN,
            }));
        }
        Ok(Comm(bytes))
    }

    /// The command name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Unwraps the bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The command name as it appears in a file name: printable ASCII, with the bytes listed in
    /// [`ProfileName`'s docs](ProfileName#escaping-the-command-name) written `%XX`.
    pub fn escaped(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for &b in &self.0 {
            push_escaped(&mut out, b);
        }
        out
    }

    /// Decodes the escaped form of a command name (the part of a file name after the label).
    ///
    /// Returns an error if the text is not the canonical escaping of some command name: see
    /// [`ProfileName::parse`].
    pub fn from_escaped(text: &str) -> Result<Comm> {
        decode_comm(text).map_err(|(at, reason)| {
            Error::at(
                at as u64,
                ErrorKind::InvalidFileName {
                    name: text.to_owned(),
                    reason,
                },
            )
        })
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Comm(\"{}\")", self.0.escape_ascii())
    }
}

/// Shows the bytes as UTF-8, with invalid sequences replaced by U+FFFD, and the characters
/// [`printable`] escapes written `%XX`: a process names itself, and a name holding escape
/// sequences or line ends would act on the terminal it is printed to.
impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&printable(&String::from_utf8_lossy(&self.0)), f)
    }
}

/// Whether a character acts on a terminal or on the text around it instead of showing: a
/// control character (C0, DEL, C1) or a Unicode bidirectional control.
pub fn acts_on_terminal(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` as it can be shown to a person: control characters (line ends, escape sequences,
/// C1 controls), the characters that reorder text (Unicode bidirectional controls) and `%`
/// written `%XX`, each byte of their UTF-8 in upper-case hex. For what a profiled process
/// chose (its command name, its arguments, the names of the files it mapped): printed as it
/// is, `\x1b[2J` clears the screen and a line end starts a line that looks like the tool's own.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| c == '%' || acts_on_terminal(c);
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The character between a pid and its instance number in a label: `4242_1u` is the user
/// profile of the second process that had pid 4242 (see [`ProfileName`]).
pub const INSTANCE_SEPARATOR: char = '_';

/// Which of a process's four files a name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// `gmon.out.<pid>u.<comm>`: the process's user-level gmon profile.
    User,
    /// `gmon.out.<pid>k.<comm>`: the gmon profile of the kernel while it served the process.
    Kernel,
    /// `gmon.out.<pid>.<comm>`: the measurement-info file.
    Info,
    /// `gmon.out.<pid>s.<comm>`: the sampled-stacks file (see [`crate::stacks`]).
    Stacks,
    /// `gmon.out.<pid>l.<comm>`: the latency file (see [`crate::latency`]).
    Latency,
}

impl FileKind {
    /// The letter after the pid in a name: `u`, `k`, `s` or nothing.
    pub fn suffix(self) -> &'static str {
        match self {
            FileKind::User => "u",
            FileKind::Kernel => "k",
            FileKind::Stacks => "s",
            FileKind::Latency => "l",
            FileKind::Info => "",
        }
    }
}

/// A parsed process-labeled file name.
///
/// A measurement directory holds, for each profiled process, up to four files named after its
/// process id and command name, plus two system-wide kernel profiles (pkprof paper, §4.8, and
/// pkgprof's stacks file):
///
/// | name | contents |
/// |---|---|
/// | `gmon.out.<pid>u.<comm>` | gmon profile of the process's user code |
/// | `gmon.out.<pid>k.<comm>` | gmon profile of the kernel working for the process |
/// | `gmon.out.<pid>.<comm>` | measurement info (see [`crate::measurement_info`]) |
/// | `gmon.out.<pid>s.<comm>` | the sampled stacks (see [`crate::stacks`]) |
/// | `gmon.out.<pid>l.<comm>` | system-call latencies and blocking (see [`crate::latency`]) |
/// | `gmon.out.-k.kernel` | gmon profile of kernel work done for no process |
/// | `gmon.out.-k.other` | gmon profile of kernel work done for processes not profiled |
///
/// # Reused pids: the instance number
///
/// A pid can be reused during a measurement: the kernel gives it to a new process once the
/// first has ended. Each process has its own file set. The first process with a pid (instance
/// 0) has the names above; the later ones carry their *instance number* `n` = 1, 2, … after the
/// pid and an underscore: `gmon.out.4242_1u.cmd`, `gmon.out.4242_1k.cmd`,
/// `gmon.out.4242_1s.cmd` and the info file `gmon.out.4242_1.cmd`. Reports label them the same
/// way (`4242_1u:main`) and `pkgprof --pid 4242_1` selects one. Instances are numbered per pid
/// in the order the processes started, whatever their command names.
///
/// The separator is not a dot, as `4242.1u` would be, because the label ends at the first dot:
/// `gmon.out.4242.1u.cmd` already means the info file of process 4242 whose command name is
/// `1u.cmd`, so a dot would make two different files share a name. No name valid before
/// instances existed has an underscore in its label, so old measurements read as before and
/// a reader that predates instances refuses the new names instead of misreading them.
///
/// [`ProfileName::parse`] and [`ProfileName::file_name`] are inverses: every name built is a
/// single path component that parses back to the same value, and every name that parses is
/// built again byte for byte.
///
/// # Escaping the command name
///
/// A command name (Linux `comm`) is up to 15 arbitrary bytes and may hold `/`, which a file name
/// cannot, as well as spaces, control bytes and bytes that are not UTF-8. In a name, these bytes
/// are written `%XX` with two upper-case hex digits:
///
/// * `/`, because it separates path components, and NUL, which ends a C string;
/// * `%`, the escape character itself;
/// * control bytes (0x01–0x1f, 0x7f), which terminals and `ls` show badly or act upon;
/// * space, because these names are typed into shells and passed through scripts, where a space
///   splits words, and a trailing space is invisible: `gmon.out.7u.my%20job` survives
///   `for f in $(ls)` and copy-and-paste where `gmon.out.7u.my job` does not;
/// * bytes 0x80 and above, so that a name is ASCII whatever the comm's encoding, and a comm
///   that is not UTF-8 still gives a name that every tool can print.
///
/// Every other byte, dots included, stands for itself: the comm is always the last component,
/// so `gmon.out.137u.a.b` is process 137's comm `a.b`. For example, `kworker/0:1` is written
/// `kworker%2F0:1` and `café` is written `caf%C3%A9`.
///
/// Exactly one name stands for each file: parsing refuses an escape of a byte that is written as
/// itself (`%41`), lower-case hex digits and raw bytes that must be escaped. This keeps two files
/// of one directory from meaning the same profile.
///
/// Names are case-sensitive, as on Linux; on a case-insensitive file system, comms that differ
/// only in case share a file.
///
/// # Example
///
/// ```
/// use gmon_format::{Comm, FileKind, ProfileName};
///
/// # fn main() -> gmon_format::Result<()> {
/// let name = ProfileName::user(137, Comm::new("my job/2")?);
/// assert_eq!(name.file_name(), "gmon.out.137u.my%20job%2F2");
/// assert_eq!(ProfileName::parse("gmon.out.137u.my%20job%2F2")?, name);
/// assert_eq!(ProfileName::parse("gmon.out.-k.other")?, ProfileName::KernelOther);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProfileName {
    /// One of a process's files.
    Process {
        /// Process id.
        pid: u32,
        /// Which process with this pid, in the order they started: 0 for the first (no suffix
        /// in the name), `n` for the `n`-th reuse (`<pid>_<n>`).
        instance: u32,
        /// User profile, kernel profile or info file.
        kind: FileKind,
        /// Command name.
        comm: Comm,
    },
    /// `gmon.out.-k.kernel`: kernel work done for no process (scheduling, timers, interrupts
    /// that no process benefits from).
    KernelSystem,
    /// `gmon.out.-k.other`: kernel work done for processes that are not profiled.
    KernelOther,
}

const SYSTEM_LABEL: &str = "-k";
const KERNEL_SYSTEM: &str = "kernel";
const KERNEL_OTHER: &str = "other";

impl ProfileName {
    /// The name of process `pid`'s user-level profile.
    pub fn user(pid: u32, comm: Comm) -> Self {
        ProfileName::Process {
            pid,
            instance: 0,
            kind: FileKind::User,
            comm,
        }
    }

    /// The name of the profile of the kernel while serving process `pid`.
    pub fn kernel(pid: u32, comm: Comm) -> Self {
        ProfileName::Process {
            pid,
            instance: 0,
            kind: FileKind::Kernel,
            comm,
        }
    }

    /// The name of process `pid`'s sampled-stacks file.
    pub fn stacks(pid: u32, comm: Comm) -> Self {
        ProfileName::Process {
            pid,
            instance: 0,
            kind: FileKind::Stacks,
            comm,
        }
    }

    /// The name of process `pid`'s latency file.
    pub fn latency(pid: u32, comm: Comm) -> Self {
        ProfileName::Process {
            pid,
            instance: 0,
            kind: FileKind::Latency,
            comm,
        }
    }

    /// The name of process `pid`'s measurement-info file.
    pub fn info(pid: u32, comm: Comm) -> Self {
        ProfileName::Process {
            pid,
            instance: 0,
            kind: FileKind::Info,
            comm,
        }
    }

    /// The same name for instance `instance` of the pid (see
    /// [above](ProfileName#reused-pids-the-instance-number)); a system-wide profile is returned
    /// unchanged.
    pub fn with_instance(self, instance: u32) -> Self {
        match self {
            ProfileName::Process {
                pid, kind, comm, ..
            } => ProfileName::Process {
                pid,
                instance,
                kind,
                comm,
            },
            other => other,
        }
    }

    /// The instance number of the pid, unless this is a system-wide profile.
    pub fn instance(&self) -> Option<u32> {
        match self {
            ProfileName::Process { instance, .. } => Some(*instance),
            _ => None,
        }
    }

    /// The process id, unless this is a system-wide profile.
    pub fn pid(&self) -> Option<u32> {
        match self {
            ProfileName::Process { pid, .. } => Some(*pid),
            _ => None,
        }
    }

    /// The file kind, unless this is a system-wide profile.
    pub fn kind(&self) -> Option<FileKind> {
        match self {
            ProfileName::Process { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// The command name, unless this is a system-wide profile.
    pub fn comm(&self) -> Option<&Comm> {
        match self {
            ProfileName::Process { comm, .. } => Some(comm),
            _ => None,
        }
    }

    /// Whether the file is a gmon profile rather than a measurement-info or stacks file.
    pub fn is_gmon(&self) -> bool {
        !matches!(
            self.kind(),
            Some(FileKind::Info | FileKind::Stacks | FileKind::Latency)
        )
    }

    /// The file name: printable ASCII, never containing `/`, at most 224 bytes long.
    pub fn file_name(&self) -> String {
        self.to_string()
    }

    /// Parses a file name (the last component of a path, not a whole path).
    ///
    /// The pid and instance number are decimal without leading zeros and fit 32 bits; instance
    /// 0 is written by leaving the suffix out, never as `_0`. Returns an error of kind
    /// [`ErrorKind::InvalidFileName`], at the byte offset in `name` of the problem, if `name`
    /// does not start with `gmon.out.`, has no `.` after the label, has a label other than
    /// `<pid>`, `<pid>u`, `<pid>k`, `<pid>s` (each optionally with `_<instance>` after the
    /// pid) or `-k`, names a system-wide profile other than `kernel` and
    /// `other`, or has a comm that is not escaped exactly as [`Comm::escaped`] does (see
    /// [above](ProfileName#escaping-the-command-name)) or is longer than [`Comm::MAX_LEN`].
    pub fn parse(name: &str) -> Result<Self> {
        parse_name(name).map_err(|(at, reason)| {
            Error::at(
                at as u64,
                ErrorKind::InvalidFileName {
                    name: name.to_owned(),
                    reason,
                },
            )
        })
    }
}

impl fmt::Display for ProfileName {
    /// Writes the file name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(NAME_PREFIX)?;
        match self {
            ProfileName::Process {
                pid,
                instance,
                kind,
                comm,
            } => {
                write!(
                    f,
                    "{}{}.{}",
                    Label(*pid, *instance),
                    kind.suffix(),
                    comm.escaped()
                )
            }
            ProfileName::KernelSystem => write!(f, "{SYSTEM_LABEL}.{KERNEL_SYSTEM}"),
            ProfileName::KernelOther => write!(f, "{SYSTEM_LABEL}.{KERNEL_OTHER}"),
        }
    }
}

/// A pid with its instance suffix when it has one: `4242`, `4242_1`.
struct Label(u32, u32);

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            0 => write!(f, "{}", self.0),
            n => write!(f, "{}{INSTANCE_SEPARATOR}{n}", self.0),
        }
    }
}

/// The label of a process in listings and on the command line: the pid, and `_<instance>` for a
/// reused pid's later process (`4242`, `4242_1`), as in [`ProfileName`]'s file names.
pub fn process_label(pid: u32, instance: u32) -> String {
    Label(pid, instance).to_string()
}

/// Parses a process label as [`process_label`] writes it: `4242` or `4242_1`, returning the pid
/// and instance number (0 without a suffix); `None` for anything else (`4242_0`, `04242`,
/// `4242_`, numbers above 32 bits).
pub fn parse_process_label(label: &str) -> Option<(u32, u32)> {
    split_label(label).ok()
}

fn split_label(label: &str) -> std::result::Result<(u32, u32), Refusal> {
    match label.split_once(INSTANCE_SEPARATOR) {
        None => Ok((parse_number(label, "process id")?, 0)),
        Some((pid, instance)) => {
            let pid = parse_number(pid, "process id")?;
            let at = label.len() - instance.len();
            let n = parse_number(instance, "instance number").map_err(|(i, why)| (at + i, why))?;
            if n == 0 {
                // One spelling per file: the first process has no suffix.
                return Err((at, "instance 0 is written without a suffix".to_owned()));
            }
            Ok((pid, n))
        }
    }
}

impl FromStr for ProfileName {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        ProfileName::parse(s)
    }
}

/// A reason a name is refused, and the byte offset in the name it concerns.
type Refusal = (usize, String);

fn parse_name(name: &str) -> std::result::Result<ProfileName, Refusal> {
    let Some(rest) = name.strip_prefix(NAME_PREFIX) else {
        return Err((0, format!("does not start with `{NAME_PREFIX}`")));
    };
    let base = NAME_PREFIX.len();
    let Some(dot) = rest.find('.') else {
        return Err((
            name.len(),
            "no `.` between the process label and the command name".to_owned(),
        ));
    };
    let (label, comm) = (&rest[..dot], &rest[dot + 1..]);
    let comm_at = base + dot + 1;
    if label == SYSTEM_LABEL {
        return match comm {
            KERNEL_SYSTEM => Ok(ProfileName::KernelSystem),
            KERNEL_OTHER => Ok(ProfileName::KernelOther),
            _ => Err((
                comm_at,
                format!(
                    "unknown system-wide profile `{}` (expected `{KERNEL_SYSTEM}` or `{KERNEL_OTHER}`)",
                    comm.escape_debug()
                ),
            )),
        };
    }
    let (digits, kind) = match label.as_bytes().last() {
        Some(b'u') => (&label[..label.len() - 1], FileKind::User),
        Some(b'k') => (&label[..label.len() - 1], FileKind::Kernel),
        Some(b's') => (&label[..label.len() - 1], FileKind::Stacks),
        Some(b'l') => (&label[..label.len() - 1], FileKind::Latency),
        _ => (label, FileKind::Info),
    };
    let (pid, instance) = split_label(digits).map_err(|(at, why)| (base + at, why))?;
    let comm = decode_comm(comm).map_err(|(at, why)| (comm_at + at, why))?;
    Ok(ProfileName::Process {
        pid,
        instance,
        kind,
        comm,
    })
}

/// A decimal number of a label (`what` is `process id` or `instance number`).
fn parse_number(digits: &str, what: &str) -> std::result::Result<u32, Refusal> {
    if let Some(at) = digits.bytes().position(|b| !b.is_ascii_digit()) {
        return Err((
            at,
            "the label must be `<pid>`, `<pid>u`, `<pid>k`, `<pid>s` (the pid optionally \
             followed by `_<instance>`) or `-k`"
                .to_owned(),
        ));
    }
    if digits.is_empty() {
        return Err((0, format!("missing {what}")));
    }
    if digits.len() > 1 && digits.starts_with('0') {
        // One spelling per pid, so that one directory cannot hold two files for one profile.
        return Err((0, format!("{what} with a leading zero")));
    }
    digits
        .parse()
        .map_err(|_| (0, format!("{what} {digits} does not fit 32 bits")))
}

/// Whether a comm byte is written `%XX` in a name.
fn needs_escape(b: u8) -> bool {
    b <= b' ' || b == 0x7f || b >= 0x80 || b == b'/' || b == b'%'
}

fn push_escaped(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    if needs_escape(b) {
        out.push('%');
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    } else {
        out.push(char::from(b));
    }
}

fn upper_hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn decode_comm(text: &str) -> std::result::Result<Comm, Refusal> {
    let bytes = text.as_bytes();
    let mut comm = Vec::with_capacity(bytes.len().min(Comm::MAX_LEN + 1));
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).unwrap_or(&bytes[i + 1..]);
            let value = match hex {
                &[h, l] => upper_hex_digit(h).zip(upper_hex_digit(l)),
                _ => None,
            };
            let Some((h, l)) = value else {
                let shown = String::from_utf8_lossy(hex);
                let reason = if hex.len() == 2 && hex.iter().all(u8::is_ascii_hexdigit) {
                    format!("escape `%{shown}` must use upper-case hex digits")
                } else {
                    format!(
                        "`%` must be followed by two hex digits, not `{}`",
                        shown.escape_debug()
                    )
                };
                return Err((i, reason));
            };
            let decoded = h << 4 | l;
            if !needs_escape(decoded) {
                return Err((
                    i,
                    format!(
                        "`%{h:X}{l:X}` escapes `{}`, which is written as itself",
                        char::from(decoded)
                    ),
                ));
            }
            comm.push(decoded);
            i += 3;
        } else if needs_escape(b) {
            return Err((i, format!("byte {b:#04x} must be written %{b:02X}")));
        } else {
            comm.push(b);
            i += 1;
        }
        if comm.len() > Comm::MAX_LEN {
            return Err((
                i,
                format!("command name longer than {} bytes", Comm::MAX_LEN),
            ));
        }
    }
    Ok(Comm(comm))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_process_chose_is_shown_without_acting_on_the_terminal() {
        assert_eq!(printable("café -x=1 a/b"), "café -x=1 a/b");
        assert_eq!(printable("\x1b[31mRED\x1b[0m\n"), "%1B[31mRED%1B[0m%0A");
        assert_eq!(printable("50%\r\u{202e}\u{85}"), "50%25%0D%E2%80%AE%C2%85");
        let comm = Comm::new(*b"\x1b]0;t\x07\xff").unwrap();
        assert_eq!(comm.to_string(), "%1B]0;t%07\u{fffd}");
    }

    fn comm(bytes: &[u8]) -> Comm {
        Comm::new(bytes).expect("short comm")
    }

    fn refused(name: &str) -> (u64, String) {
        let err = ProfileName::parse(name).expect_err(name);
        let ErrorKind::InvalidFileName {
            name: given,
            reason,
        } = err.kind()
        else {
            panic!("{name}: wrong error kind {err:?}")
        };
        assert_eq!(given, name);
        (err.offset().expect("offset"), reason.clone())
    }

    #[test]
    fn the_papers_names() {
        let cat = comm(b"cat");
        for (name, parsed) in [
            ("gmon.out.137u.cat", ProfileName::user(137, cat.clone())),
            ("gmon.out.137k.cat", ProfileName::kernel(137, cat.clone())),
            ("gmon.out.137s.cat", ProfileName::stacks(137, cat.clone())),
            ("gmon.out.137.cat", ProfileName::info(137, cat)),
            ("gmon.out.-k.kernel", ProfileName::KernelSystem),
            ("gmon.out.-k.other", ProfileName::KernelOther),
            (
                "gmon.out.63k.nfsiod",
                ProfileName::kernel(63, comm(b"nfsiod")),
            ),
        ] {
            assert_eq!(ProfileName::parse(name).expect(name), parsed);
            assert_eq!(parsed.file_name(), name);
            assert_eq!(name.parse::<ProfileName>().expect(name), parsed);
        }
    }

    #[test]
    fn instances_of_a_reused_pid() {
        let job = comm(b"job");
        for (name, pid, instance, kind) in [
            ("gmon.out.4242_1u.job", 4242, 1, FileKind::User),
            ("gmon.out.4242_1k.job", 4242, 1, FileKind::Kernel),
            ("gmon.out.4242_1s.job", 4242, 1, FileKind::Stacks),
            ("gmon.out.4242_1l.job", 4242, 1, FileKind::Latency),
            ("gmon.out.4242_1.job", 4242, 1, FileKind::Info),
            ("gmon.out.4242_12u.job", 4242, 12, FileKind::User),
            ("gmon.out.0_4294967295.job", 0, u32::MAX, FileKind::Info),
        ] {
            let parsed = ProfileName::parse(name).expect(name);
            let built = ProfileName::Process {
                pid,
                instance,
                kind,
                comm: job.clone(),
            };
            assert_eq!(parsed, built, "{name}");
            assert_eq!(built.file_name(), name);
            assert_eq!(parsed.instance(), Some(instance));
        }
        assert_eq!(
            ProfileName::user(7, job.clone())
                .with_instance(2)
                .file_name(),
            "gmon.out.7_2u.job"
        );
        assert_eq!(
            ProfileName::user(7, job.clone()).with_instance(0),
            ProfileName::user(7, job.clone())
        );
        assert_eq!(
            ProfileName::KernelOther.with_instance(3),
            ProfileName::KernelOther
        );
        assert_eq!(ProfileName::KernelOther.instance(), None);
        // The dotted form stays what it always was: an info file whose comm starts with digits.
        assert_eq!(
            ProfileName::parse("gmon.out.4242.1u.job").expect("info"),
            ProfileName::info(4242, comm(b"1u.job"))
        );
        for (name, offset, reason) in [
            (
                "gmon.out.4242_0u.job",
                14,
                "instance 0 is written without a suffix",
            ),
            (
                "gmon.out.4242_01u.job",
                14,
                "instance number with a leading zero",
            ),
            ("gmon.out.4242_u.job", 14, "missing instance number"),
            ("gmon.out._1u.job", 9, "missing process id"),
            ("gmon.out.4242_1_2u.job", 15, "the label must be"),
            ("gmon.out.4242_xu.job", 14, "the label must be"),
            ("gmon.out.4242_4294967296u.job", 14, "does not fit 32 bits"),
        ] {
            let (at, why) = refused(name);
            assert!(why.contains(reason), "{name}: {why:?} lacks {reason:?}");
            assert_eq!(at, offset, "{name}: {why}");
        }
        assert_eq!(process_label(4242, 0), "4242");
        assert_eq!(process_label(4242, 3), "4242_3");
        assert_eq!(parse_process_label("4242_3"), Some((4242, 3)));
        assert_eq!(parse_process_label("4242"), Some((4242, 0)));
        for bad in ["4242_0", "04242", "4242_", "", "4242.1", "x", "4294967296"] {
            assert_eq!(parse_process_label(bad), None, "{bad}");
        }
    }

    #[test]
    fn accessors() {
        let n = ProfileName::kernel(7, comm(b"sh"));
        assert_eq!(n.pid(), Some(7));
        assert_eq!(n.kind(), Some(FileKind::Kernel));
        assert_eq!(n.comm(), Some(&comm(b"sh")));
        assert!(n.is_gmon());
        assert!(!ProfileName::info(7, comm(b"sh")).is_gmon());
        assert!(!ProfileName::stacks(7, comm(b"sh")).is_gmon());
        assert!(ProfileName::KernelOther.is_gmon());
        assert_eq!(ProfileName::KernelSystem.pid(), None);
        assert_eq!(ProfileName::KernelSystem.kind(), None);
        assert_eq!(ProfileName::KernelOther.comm(), None);
    }

    #[test]
    fn dots_stay_in_the_comm() {
        let n = ProfileName::parse("gmon.out.137u.a.b").expect("parses");
        assert_eq!(n, ProfileName::user(137, comm(b"a.b")));
        for c in [&b"."[..], b"..", b"...", b".x", b"x."] {
            let n = ProfileName::info(1, comm(c));
            assert_eq!(ProfileName::parse(&n.file_name()).expect("parses"), n);
        }
        assert_eq!(
            ProfileName::info(1, comm(b"..")).file_name(),
            "gmon.out.1..."
        );
    }

    #[test]
    fn escapes() {
        for (raw, escaped) in [
            (&b"kworker/0:1"[..], "kworker%2F0:1"),
            (b"100%", "100%25"),
            (b"my job", "my%20job"),
            (b"a\0b", "a%00b"),
            (b"\t\n\x1b\x7f", "%09%0A%1B%7F"),
            ("café".as_bytes(), "caf%C3%A9"),
            (b"\xff\x80", "%FF%80"),
            (b"-k", "-k"),
            (
                b"~!@#$^&*()[]{}<>?|\\'\";:,=+",
                "~!@#$^&*()[]{}<>?|\\'\";:,=+",
            ),
            (b"", ""),
        ] {
            let c = comm(raw);
            assert_eq!(c.escaped(), escaped);
            assert_eq!(Comm::from_escaped(escaped).expect(escaped), c);
        }
    }

    #[test]
    fn empty_comm() {
        let n = ProfileName::user(9, comm(b""));
        assert_eq!(n.file_name(), "gmon.out.9u.");
        assert_eq!(ProfileName::parse("gmon.out.9u.").expect("parses"), n);
    }

    #[test]
    fn pid_limits() {
        assert_eq!(
            ProfileName::parse("gmon.out.0k.swapper")
                .expect("pid 0")
                .pid(),
            Some(0)
        );
        assert_eq!(
            ProfileName::parse("gmon.out.4294967295u.x")
                .expect("max")
                .pid(),
            Some(u32::MAX)
        );
        assert_eq!(refused("gmon.out.4294967296u.x").0, 9);
        assert!(refused("gmon.out.4294967296u.x").1.contains("32 bits"));
        assert_eq!(
            refused("gmon.out.0137u.cat"),
            (9, "process id with a leading zero".into())
        );
    }

    #[test]
    fn malformed_names() {
        for (name, offset, reason) in [
            ("gmon.out", 0, "does not start with `gmon.out.`"),
            ("gmon.outx137u.cat", 0, "does not start"),
            ("xgmon.out.137u.cat", 0, "does not start"),
            ("gmon.out.", 9, "no `.` between"),
            ("gmon.out.137u", 13, "no `.` between"),
            ("gmon.out..cat", 9, "missing process id"),
            ("gmon.out.u.cat", 9, "missing process id"),
            ("gmon.out.k.cat", 9, "missing process id"),
            ("gmon.out.137x.cat", 12, "the label must be"),
            ("gmon.out.137uk.cat", 12, "the label must be"),
            ("gmon.out.-137u.cat", 9, "the label must be"),
            ("gmon.out.+137u.cat", 9, "the label must be"),
            ("gmon.out. 137u.cat", 9, "the label must be"),
            ("gmon.out.137U.cat", 12, "the label must be"),
            ("gmon.out.-u.cat", 9, "the label must be"),
            (
                "gmon.out.-k.Kernel",
                12,
                "unknown system-wide profile `Kernel`",
            ),
            ("gmon.out.-k.", 12, "unknown system-wide profile ``"),
            ("gmon.out.-k.kernel.old", 12, "unknown system-wide profile"),
            ("gmon.out.137u.my job", 16, "byte 0x20 must be written %20"),
            ("gmon.out.137u.café", 17, "byte 0xc3 must be written %C3"),
            ("gmon.out.137u.a\tb", 15, "byte 0x09 must be written %09"),
            ("gmon.out.137u.a\u{7f}", 15, "byte 0x7f must be written %7F"),
            ("gmon.out.137u.%2f", 14, "upper-case hex"),
            (
                "gmon.out.137u.%41",
                14,
                "`%41` escapes `A`, which is written as itself",
            ),
            ("gmon.out.137u.%2E", 14, "escapes `.`"),
            ("gmon.out.137u.%", 14, "two hex digits, not ``"),
            ("gmon.out.137u.%2", 14, "two hex digits, not `2`"),
            ("gmon.out.137u.%G0", 14, "two hex digits, not `G0`"),
            ("gmon.out.137u.%é", 14, "two hex digits"),
        ] {
            let (at, why) = refused(name);
            assert!(why.contains(reason), "{name}: {why:?} lacks {reason:?}");
            assert_eq!(at, offset, "{name}: {why}");
        }
    }

    #[test]
    fn comm_length() {
        let longest = vec![b'/'; Comm::MAX_LEN];
        let name = ProfileName::user(u32::MAX, comm(&longest)).file_name();
        assert_eq!(name.len(), 213);
        assert!(ProfileName::parse(&name).is_ok());
        let name = ProfileName::user(u32::MAX, comm(&longest))
            .with_instance(u32::MAX)
            .file_name();
        assert_eq!(name.len(), 224);
        assert!(ProfileName::parse(&name).is_ok());
        let err = Comm::new(vec![b'a'; Comm::MAX_LEN + 1]).expect_err("too long");
        assert!(matches!(
            err.kind(),
            ErrorKind::CommTooLong { len: 65, max: 64 }
        ));
        let too_long = format!("gmon.out.1u.{}", "a".repeat(Comm::MAX_LEN + 1));
        assert_eq!(
            refused(&too_long),
            (77, "command name longer than 64 bytes".into())
        );
    }

    #[test]
    fn error_message() {
        let err = ProfileName::parse("gmon.out.137u.my job").expect_err("space");
        assert_eq!(
            err.to_string(),
            "`gmon.out.137u.my job` is not a process-labeled profile name: \
             byte 0x20 must be written %20 (at offset 0x10)"
        );
    }

    #[test]
    fn debug_and_display_of_comm() {
        let c = comm(b"a\"b\xff");
        assert_eq!(format!("{c:?}"), "Comm(\"a\\\"b\\xff\")");
        assert_eq!(c.to_string(), "a\"b\u{fffd}");
    }
}
