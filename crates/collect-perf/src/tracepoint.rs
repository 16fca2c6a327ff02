//! Tracepoint formats and raw records, portable: the `format` file of a tracefs event parsed
//! into a field layout, and a raw sample (`PERF_SAMPLE_RAW`) decoded by field name with it.
//!
//! Offsets are never hard-coded: kernels move fields between versions (`sched_switch`'s
//! `prev_state` changed type and width), so every layout comes from the running kernel's
//! `format` file, kept with the measurement so that records can be decoded again later. The
//! live half (finding or mounting tracefs, opening events) is in `tracefs`.

use std::fmt;

/// One field of a tracepoint's raw record, from a `field:` line of its `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceField {
    /// The field's name (`prev_state`, `args`); for an array, without the brackets.
    pub name: String,
    /// Its C type as written (`long`, `char[16]` is `char`, `__data_loc char[]`).
    pub c_type: String,
    /// Byte offset in the raw record.
    pub offset: usize,
    /// Size in bytes (of the whole array for an array).
    pub size: usize,
    /// Whether an integer field is signed.
    pub signed: bool,
    /// Number of elements for a fixed array (`args[6]` → 6), None for a scalar.
    pub array_len: Option<usize>,
    /// A `__data_loc` field: a u32 holding the offset (low 16 bits) and length (high 16 bits)
    /// of variable data elsewhere in the record.
    pub data_loc: bool,
}

/// A tracepoint's `format` file: its name, numeric id and field layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// `system:name`, e.g. `raw_syscalls:sys_enter`.
    pub name: String,
    /// The tracepoint id (`attr.config`), from the `ID:` line.
    pub id: u64,
    /// Every field, the common ones (`common_type`, `common_pid`) first, in file order.
    pub fields: Vec<TraceField>,
    /// The `print fmt:` text, kept for what it alone says (e.g. the preemption marker of
    /// `sched_switch`'s `prev_state`).
    pub print_fmt: String,
}

/// Why a `format` file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line's start.
    pub offset: usize,
    /// What is wrong.
    pub why: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (line {}, at offset {:#x})",
            self.why, self.line, self.offset
        )
    }
}

impl std::error::Error for FormatError {}

/// Largest raw record a format may describe: a perf record's size is 16 bits.
const MAX_RECORD: usize = 1 << 16;

impl EventFormat {
    /// Parses the text of `events/<system>/<name>/format`.
    ///
    /// Returns an error naming the line if a `field:` line lacks its offset, size or signedness,
    /// a field lies beyond 64 KiB, the `ID:` line is missing or not a number, or a field name
    /// appears twice.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat, FormatError> {
        let mut name = None;
        let mut id = None;
        let mut fields: Vec<TraceField> = Vec::new();
        let mut print_fmt = String::new();
        let mut at = 0;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let start = at;
            let err = |why: String| FormatError {
                line: i + 1,
                offset: start,
                why,
            };
            let l = line.trim();
            at += line.len();
            if let Some(n) = l.strip_prefix("name:") {
                name = Some(n.trim().to_owned());
            } else if let Some(n) = l.strip_prefix("ID:") {
                id =
                    Some(n.trim().parse::<u64>().map_err(|_| {
                        err(format!("tracepoint id `{}` is not a number", n.trim()))
                    })?);
            } else if let Some(f) = l.strip_prefix("print fmt:") {
                print_fmt = f.trim().to_owned();
            } else if l.starts_with("field:") {
                let field = parse_field(l).map_err(err)?;
                if fields.iter().any(|g| g.name == field.name) {
                    return Err(err(format!("field `{}` appears twice", field.name)));
                }
                fields.push(field);
            }
        }
        let id = id.ok_or_else(|| FormatError {
            line: text.lines().count(),
            offset: text.len(),
            why: "no `ID:` line".into(),
        })?;
        Ok(EventFormat {
            name: format!("{system}:{}", name.unwrap_or_default()),
            id,
            fields,
            print_fmt,
        })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&TraceField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The smallest raw record holding every fixed field.
    pub fn min_size(&self) -> usize {
        self.fields
            .iter()
            .map(|f| f.offset + f.size)
            .max()
            .unwrap_or(0)
    }

    /// Reads the raw record `data` with this layout.
    pub fn decode<'a>(&'a self, data: &'a [u8]) -> RawEvent<'a> {
        RawEvent { format: self, data }
    }
}

/// Parses `field:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;`.
fn parse_field(line: &str) -> Result<TraceField, String> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in line.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once(':')
            .ok_or_else(|| format!("`{part}` is not `key:value`"))?;
        let number = || {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("{key} `{}` is not a number", value.trim()))
        };
        match key.trim() {
            "field" => decl = Some(value.trim()),
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = Some(number()? != 0),
            _ => {}
        }
    }
    let decl = decl.ok_or("no field declaration")?;
    let (offset, size) = match (offset, size) {
        (Some(o), Some(s)) => (o, s),
        _ => return Err(format!("field `{decl}` has no offset or size")),
    };
    if offset.checked_add(size).is_none_or(|end| end > MAX_RECORD) {
        return Err(format!(
            "field `{decl}` ends beyond a record's 64 KiB (offset {offset}, size {size})"
        ));
    }
    // The name is the last identifier of the declaration, before any `[N]` (`char comm[16]`);
    // a `__data_loc char[] name` has its brackets on the type.
    let (head, array_len) = match decl.split_once('[') {
        Some((head, rest)) if rest.trim_end().ends_with(']') => {
            let n = rest.trim_end().trim_end_matches(']').trim();
            (head.trim_end(), n.parse::<usize>().ok())
        }
        _ => (decl, None),
    };
    let split = head
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = &head[split..];
    if name.is_empty() {
        return Err(format!("field declaration `{decl}` has no name"));
    }
    let c_type = head[..split].trim().to_owned();
    Ok(TraceField {
        name: name.to_owned(),
        data_loc: c_type.contains("__data_loc"),
        c_type,
        offset,
        size,
        signed: signed.unwrap_or(false),
        array_len,
    })
}

/// A raw tracepoint record read through its format: fields by name, as integers or strings.
/// Every accessor returns None for a field the format lacks or the record is too short to
/// hold, never reading past the record.
#[derive(Debug, Clone, Copy)]
pub struct RawEvent<'a> {
    format: &'a EventFormat,
    data: &'a [u8],
}

impl<'a> RawEvent<'a> {
    /// The raw bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }

    /// Integer field `name` (1, 2, 4 or 8 bytes, native byte order), sign-extended if signed,
    /// as the u64 of its bits.
    pub fn u64(&self, name: &str) -> Option<u64> {
        let f = self.format.field(name)?;
        if f.array_len.is_some() || f.data_loc {
            return None;
        }
        int_at(self.data, f.offset, f.size, f.signed)
    }

    /// Integer field `name` as a signed value.
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.u64(name).map(|v| v as i64)
    }

    /// Element `i` of the integer array `name` (`args[6]`).
    pub fn element(&self, name: &str, i: usize) -> Option<u64> {
        let f = self.format.field(name)?;
        let n = f.array_len?;
        if i >= n || n == 0 || f.size % n != 0 {
            return None;
        }
        let w = f.size / n;
        int_at(self.data, f.offset + i * w, w, f.signed)
    }

    /// String field `name`: a `char[N]` array up to its first NUL, or a `__data_loc char[]`.
    pub fn str(&self, name: &str) -> Option<&'a [u8]> {
        let f = self.format.field(name)?;
        let bytes = if f.data_loc {
            let loc = int_at(self.data, f.offset, 4, false)? as usize;
            let (off, len) = (loc & 0xffff, loc >> 16);
            self.data.get(off..off.checked_add(len)?)?
        } else {
            self.data.get(f.offset..f.offset.checked_add(f.size)?)?
        };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(&bytes[..end])
    }
}

fn int_at(data: &[u8], offset: usize, size: usize, signed: bool) -> Option<u64> {
    let b = data.get(offset..offset.checked_add(size)?)?;
    Some(match (size, signed) {
        (1, false) => u64::from(b[0]),
        (1, true) => b[0] as i8 as i64 as u64,
        (2, false) => u64::from(u16::from_ne_bytes(b.try_into().ok()?)),
        (2, true) => i16::from_ne_bytes(b.try_into().ok()?) as i64 as u64,
        (4, false) => u64::from(u32::from_ne_bytes(b.try_into().ok()?)),
        (4, true) => i32::from_ne_bytes(b.try_into().ok()?) as i64 as u64,
        (8, _) => u64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// The `sample_type` of this crate's tracepoint events: identifier, tid, time, cpu (the
/// trailer every event of a ring shares) and raw data, with the callchain when either part
/// is asked for, and user registers and a stack copy with the user part.
pub(crate) fn sample_type(kernel_chain: bool, user_chain: bool, stack_user: u32) -> u64 {
    const IDENTIFIER: u64 = 1 << 16;
    const TID: u64 = 1 << 1;
    const TIME: u64 = 1 << 2;
    const CPU: u64 = 1 << 7;
    const RAW: u64 = 1 << 10;
    const CALLCHAIN: u64 = 1 << 5;
    const REGS_USER: u64 = 1 << 12;
    const STACK_USER: u64 = 1 << 13;
    let mut t = IDENTIFIER | TID | TIME | CPU | RAW;
    if kernel_chain || user_chain {
        t |= CALLCHAIN;
    }
    if user_chain {
        t |= REGS_USER;
        if stack_user > 0 {
            t |= STACK_USER;
        }
    }
    t
}

/// The value of a constant integer expression of C literals and `| & + - << >> ~ ( )`, as
/// print formats spell masks: `((((0x00000000 | 0x00000001) + 1) << 1) - 1)`. None if it holds
/// anything else (a name, a call) or overflows.
pub fn const_expr(text: &str) -> Option<u64> {
    let tokens = tokenize(text)?;
    let mut p = ExprParser { t: &tokens, i: 0 };
    let v = p.or()?;
    (p.i == tokens.len()).then_some(v)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Num(u64),
    Op(&'static str),
}

fn tokenize(text: &str) -> Option<Vec<Tok>> {
    const OPS: [&str; 9] = ["<<", ">>", "|", "&", "+", "-", "~", "(", ")"];
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let lit = text[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = match lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16).ok()?,
                None => lit.parse().ok()?,
            };
            out.push(Tok::Num(v));
        } else {
            let op = OPS.iter().find(|op| text[i..].starts_with(**op))?;
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Some(out)
}

struct ExprParser<'a> {
    t: &'a [Tok],
    i: usize,
}

impl ExprParser<'_> {
    fn eat(&mut self, op: &str) -> bool {
        let hit = matches!(self.t.get(self.i), Some(Tok::Op(o)) if *o == op);
        self.i += usize::from(hit);
        hit
    }
    fn or(&mut self) -> Option<u64> {
        let mut v = self.and()?;
        while self.eat("|") {
            v |= self.and()?;
        }
        Some(v)
    }
    fn and(&mut self) -> Option<u64> {
        let mut v = self.shift()?;
        while self.eat("&") {
            v &= self.shift()?;
        }
        Some(v)
    }
    fn shift(&mut self) -> Option<u64> {
        let mut v = self.sum()?;
        loop {
            if self.eat("<<") {
                v = v.checked_shl(u32::try_from(self.sum()?).ok()?)?;
            } else if self.eat(">>") {
                v = v.checked_shr(u32::try_from(self.sum()?).ok()?)?;
            } else {
                return Some(v);
            }
        }
    }
    fn sum(&mut self) -> Option<u64> {
        let mut v = self.unary()?;
        loop {
            if self.eat("+") {
                v = v.checked_add(self.unary()?)?;
            } else if self.eat("-") {
                v = v.checked_sub(self.unary()?)?;
            } else {
                return Some(v);
            }
        }
    }
    fn unary(&mut self) -> Option<u64> {
        if self.eat("~") {
            return Some(!self.unary()?);
        }
        if self.eat("(") {
            let v = self.or()?;
            return self.eat(")").then_some(v);
        }
        match self.t.get(self.i)? {
            Tok::Num(v) => {
                self.i += 1;
                Some(*v)
            }
            Tok::Op(_) => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn data_loc_fields_are_named_after_their_brackets() {
        let text = "name: sched_process_fork\nID: 366\nformat:\n\
            \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
            \tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;\n\
            \tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;\n\
            \tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;\n\
            \tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;\n";
        let f = EventFormat::parse("sched", text).expect("parses");
        let child = f.field("child_comm").expect("named");
        assert!(child.data_loc);
        assert_eq!((child.offset, child.array_len), (16, None));
        assert_eq!(f.field("child_pid").map(|t| t.offset), Some(20));
    }

    /// `sched/sched_switch/format` of Linux 6.18, as read on the project's machine.
    pub(crate) const SCHED_SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" }, { 0x00000020, \"Z\" }, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio
";

    const SYS_ENTER: &str = "name: sys_enter
ID: 443
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;
\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;

print fmt: \"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)\", REC->id, REC->args[0]
";

    #[test]
    fn format_files_give_layouts_by_name() {
        let f = EventFormat::parse("sched", SCHED_SWITCH).expect("parses");
        assert_eq!((f.name.as_str(), f.id), ("sched:sched_switch", 372));
        let s = f.field("prev_state").expect("field");
        assert_eq!(
            (s.offset, s.size, s.signed, s.c_type.as_str()),
            (32, 8, true, "long")
        );
        let c = f.field("prev_comm").expect("field");
        assert_eq!((c.array_len, c.size), (Some(16), 16));
        assert_eq!(f.min_size(), 64);
        let e = EventFormat::parse("raw_syscalls", SYS_ENTER).expect("parses");
        let a = e.field("args").expect("args");
        assert_eq!((a.offset, a.size, a.array_len), (16, 48, Some(6)));
    }

    #[test]
    fn raw_records_decode_by_field_name() {
        let f = EventFormat::parse("sched", SCHED_SWITCH).expect("parses");
        let mut raw = vec![0u8; 68];
        raw[4..8].copy_from_slice(&1234i32.to_ne_bytes());
        raw[8..12].copy_from_slice(b"cat\0");
        raw[24..28].copy_from_slice(&(-5i32).to_ne_bytes());
        raw[32..40].copy_from_slice(&0x100i64.to_ne_bytes());
        let r = f.decode(&raw);
        assert_eq!(r.i64("common_pid"), Some(1234));
        assert_eq!(r.i64("prev_pid"), Some(-5));
        assert_eq!(r.u64("prev_state"), Some(0x100));
        assert_eq!(r.str("prev_comm"), Some(&b"cat"[..]));
        assert_eq!(r.u64("nope"), None);
        // Too short: no field read past the end.
        assert_eq!(f.decode(&raw[..30]).u64("prev_state"), None);
        let e = EventFormat::parse("raw_syscalls", SYS_ENTER).expect("parses");
        let mut raw = vec![0u8; 64];
        raw[8..16].copy_from_slice(&3i64.to_ne_bytes());
        raw[24..32].copy_from_slice(&77u64.to_ne_bytes());
        let r = e.decode(&raw);
        assert_eq!((r.i64("id"), r.element("args", 1)), (Some(3), Some(77)));
        assert_eq!(r.element("args", 6), None);
    }

    #[test]
    fn bad_formats_name_the_line() {
        let e = EventFormat::parse(
            "x",
            "name: a\nID: 1\n\tfield:int a;\toffset:70000;\tsize:4;\n",
        )
        .expect_err("field beyond 64 KiB");
        assert_eq!(e.line, 3);
        assert!(e.to_string().contains("beyond"), "{e}");
        let e = EventFormat::parse("x", "name: a\n").expect_err("no id");
        assert!(e.why.contains("ID"), "{e}");
        let e = EventFormat::parse(
            "x",
            "ID: 1\n\tfield:int a;\toffset:0;\tsize:4;\n\tfield:int a;\toffset:4;\tsize:4;\n",
        )
        .expect_err("twice");
        assert_eq!((e.line, e.offset), (3, 38));
    }

    #[test]
    fn constant_masks_of_print_formats_evaluate() {
        assert_eq!(
            const_expr(
                "((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | \
                 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)"
            ),
            Some(0xff)
        );
        assert_eq!(const_expr("(0x7f + 1) << 1"), Some(0x100));
        assert_eq!(const_expr("1 << 70"), None);
        assert_eq!(const_expr("REC->x"), None);
        assert_eq!(const_expr("(1"), None);
        assert_eq!(const_expr("~0 & 0xffUL"), Some(0xff));
    }
}
