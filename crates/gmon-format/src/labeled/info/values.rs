//! The values of a measurement-info file — numbers, strings, lists, hex bytes, names — read
//! and written, each in one place.

use std::fmt::Write as _;

use crate::error::{Error, ErrorKind};

pub(super) fn invalid(why: String) -> Error {
    Error::new(ErrorKind::InvalidInfo(why))
}

/// Writes `bytes` as a quoted string, escaping what the module docs say.
pub(super) fn push_quoted(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if hidden(c) => {
                    for b in c.encode_utf8(&mut [0; 4]).bytes() {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
}

/// Characters written as `\xHH` escapes although they are valid UTF-8: control characters, and
/// those that reorder or split lines on screen, so that what is read is what is there.
pub(super) fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}'
        )
}

pub(super) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_name_char)
}

/// Why a kernel-symbol file name is not a single path component, if it is not.
pub(super) fn check_file_name(name: &str) -> std::result::Result<(), &'static str> {
    if name.is_empty() || name == "." || name == ".." {
        Err("must name a file in the measurement directory")
    } else if name.contains(['/', '\\', '\0']) {
        Err("must be a file name without a directory")
    } else {
        Ok(())
    }
}

/// A problem inside a value: its byte offset from the value's start, and what it is.
pub(super) type ValueError = (usize, String);

/// At most the first `max` bytes of `bytes`, as text, to quote in a message.
pub(super) fn excerpt(bytes: &[u8], max: usize) -> String {
    let shown = &bytes[..bytes.len().min(max)];
    let mut s = String::from_utf8_lossy(shown).escape_debug().to_string();
    if bytes.len() > max {
        s.push('…');
    }
    s
}

pub(super) fn number(value: &str) -> std::result::Result<u64, ValueError> {
    let (digits, radix) = match value.strip_prefix("0x") {
        Some(hex) => (hex, 16),
        None => (value, 10),
    };
    // `from_str_radix` would also take a leading `+`, which is not part of the format.
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err((
            0,
            format!(
                "expected a number, found `{}`",
                excerpt(value.as_bytes(), 40)
            ),
        ));
    }
    u64::from_str_radix(digits, radix).map_err(|_| (0, format!("{value} does not fit 64 bits")))
}

pub(super) fn number_u32(value: &str) -> std::result::Result<u32, ValueError> {
    let n = number(value)?;
    u32::try_from(n).map_err(|_| (0, format!("{value} does not fit 32 bits")))
}

pub(super) fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

pub(super) fn hex_bytes(value: &str) -> std::result::Result<Vec<u8>, ValueError> {
    let digits = value.as_bytes();
    if let Some(at) = digits.iter().position(|&b| hex_value(b).is_none()) {
        return Err((at, "a build-id is written as hex digits".to_owned()));
    }
    if !digits.len().is_multiple_of(2) {
        return Err((0, "a build-id has an even number of hex digits".to_owned()));
    }
    Ok(digits
        .chunks_exact(2)
        .filter_map(|pair| Some(hex_value(pair[0])? << 4 | hex_value(pair[1])?))
        .collect())
}

/// A whole value that is one string.
pub(super) fn string(value: &str) -> std::result::Result<Vec<u8>, ValueError> {
    let (bytes, end) = lex_string(value, 0)?;
    let end = skip_blanks(value, end);
    if end != value.len() {
        return Err((end, "unexpected text after the string".to_owned()));
    }
    Ok(bytes)
}

/// A whole value that is one string of UTF-8.
pub(super) fn text(value: &str) -> std::result::Result<String, ValueError> {
    String::from_utf8(string(value)?).map_err(|_| {
        (
            0,
            "the string's escapes give bytes that are not utf-8".to_owned(),
        )
    })
}

pub(super) fn skip_blanks(s: &str, mut at: usize) -> usize {
    while matches!(s.as_bytes().get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    at
}

pub(super) fn string_list(value: &str) -> std::result::Result<Vec<Vec<u8>>, ValueError> {
    let bytes = value.as_bytes();
    if bytes.first() != Some(&b'[') {
        return Err((0, "expected a list of strings in `[` `]`".to_owned()));
    }
    let mut list = Vec::new();
    let mut at = skip_blanks(value, 1);
    if bytes.get(at) == Some(&b']') {
        at += 1;
    } else {
        loop {
            let (item, end) = lex_string(value, at)?;
            list.push(item);
            at = skip_blanks(value, end);
            match bytes.get(at) {
                Some(b',') => at = skip_blanks(value, at + 1),
                Some(b']') => {
                    at += 1;
                    break;
                }
                _ => return Err((at, "expected `,` or `]` after a list item".to_owned())),
            }
        }
    }
    let at = skip_blanks(value, at);
    if at != value.len() {
        return Err((at, "unexpected text after the list".to_owned()));
    }
    Ok(list)
}

/// Reads the quoted string that starts at byte `start` of `s`; returns its bytes and the offset
/// after its closing quote.
pub(super) fn lex_string(
    s: &str,
    start: usize,
) -> std::result::Result<(Vec<u8>, usize), ValueError> {
    let bytes = s.as_bytes();
    if bytes.get(start) != Some(&b'"') {
        return Err((start, "expected a string in double quotes".to_owned()));
    }
    let mut out = Vec::new();
    let mut i = start + 1;
    loop {
        let Some(&b) = bytes.get(i) else {
            return Err((start, "unterminated string".to_owned()));
        };
        match b {
            b'"' => return Ok((out, i + 1)),
            b'\\' => {
                let escaped = match bytes.get(i + 1) {
                    Some(b'"') => b'"',
                    Some(b'\\') => b'\\',
                    Some(b'n') => b'\n',
                    Some(b't') => b'\t',
                    Some(b'r') => b'\r',
                    Some(b'x') => {
                        let h = bytes.get(i + 2).copied().and_then(hex_value);
                        let l = bytes.get(i + 3).copied().and_then(hex_value);
                        let Some((h, l)) = h.zip(l) else {
                            return Err((i, "`\\x` must be followed by two hex digits".to_owned()));
                        };
                        out.push(h << 4 | l);
                        i += 4;
                        continue;
                    }
                    Some(_) => {
                        let c = s[i + 1..].chars().next().unwrap_or('?');
                        return Err((i, format!("unknown escape `\\{c}`")));
                    }
                    None => return Err((start, "unterminated string".to_owned())),
                };
                out.push(escaped);
                i += 2;
            }
            // The line is UTF-8, so copying byte by byte copies whole characters.
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
}

/// A measurement-info file being written: each kind of value spelt as the format says.
pub(super) struct TextWriter {
    pub(super) text: String,
}

impl TextWriter {
    pub(super) fn section(&mut self, name: &str) {
        let _ = write!(self.text, "\n[{name}]\n");
    }

    pub(super) fn key(&mut self, key: &str) {
        self.text.push_str(key);
        self.text.push_str(" = ");
    }

    pub(super) fn decimal(&mut self, key: &str, value: Option<u64>) {
        if let Some(v) = value {
            let _ = writeln!(self.text, "{key} = {v}");
        }
    }

    pub(super) fn word(&mut self, key: &str, word: &str) {
        let _ = writeln!(self.text, "{key} = {word}");
    }

    pub(super) fn hex(&mut self, key: &str, value: Option<u64>) {
        if let Some(v) = value {
            let _ = writeln!(self.text, "{key} = {v:#x}");
        }
    }

    pub(super) fn string(&mut self, key: &str, value: Option<&[u8]>) {
        if let Some(v) = value {
            self.key(key);
            push_quoted(&mut self.text, v);
            self.text.push('\n');
        }
    }

    pub(super) fn hex_bytes(
        &mut self,
        key: &str,
        value: Option<&[u8]>,
    ) -> crate::error::Result<()> {
        if let Some(v) = value {
            if v.is_empty() {
                return Err(invalid(format!("empty {key} (leave it out instead)")));
            }
            self.key(key);
            for b in v {
                let _ = write!(self.text, "{b:02x}");
            }
            self.text.push('\n');
        }
        Ok(())
    }

    /// Writes the list of quoted strings `list`.
    pub(super) fn string_list(&mut self, key: &str, list: &[Vec<u8>]) {
        self.key(key);
        self.text.push('[');
        for (i, item) in list.iter().enumerate() {
            if i > 0 {
                self.text.push_str(", ");
            }
            push_quoted(&mut self.text, item);
        }
        self.text.push_str("]\n");
    }
}
