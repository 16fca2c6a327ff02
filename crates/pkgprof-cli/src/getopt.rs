//! GNU `getopt_long` semantics, which gprof's command line is defined by and clap cannot
//! express: optional arguments that must be attached (`-pmain`, `--graph=main`), clustered short
//! options (`-bp`), options after operands (permutation), `--`, unambiguous long-option
//! prefixes, and `@FILE` response files.

use std::ffi::OsString;

/// Whether an option takes an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasArg {
    /// `-b`, `--brief`.
    No,
    /// `-e NAME`, `-eNAME`, `--time NAME`, `--time=NAME`.
    Required,
    /// Only attached: `-pNAME`, `--flat-profile=NAME`.
    Optional,
}

/// One option of a command's table.
#[derive(Debug, Clone, Copy)]
pub struct Spec<Id> {
    /// What the parser reports when it sees the option.
    pub id: Id,
    /// The short name, if any.
    pub short: Option<char>,
    /// The long name (without `--`), if any.
    pub long: Option<&'static str>,
    /// Whether it takes an argument.
    pub arg: HasArg,
    /// Extensions (tier 1) match only when no tier-0 option matches a prefix, so that adding
    /// options never changes what an abbreviation of an original option means.
    pub tier: u8,
}

/// What the command line held, in order.
#[derive(Debug, PartialEq, Eq)]
pub struct Parsed<Id> {
    /// Options with their arguments, in command-line order.
    pub options: Vec<(Id, Option<OsString>)>,
    /// Everything that is not an option, in order.
    pub operands: Vec<OsString>,
}

/// A command line getopt refuses; the message is getopt's, without the program name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

/// Parses `args` (without the program name, `@FILE`s already expanded by
/// [`expand_response_files`]) against `table`.
///
/// Returns getopt's message for an unknown or ambiguous option, or a missing or unexpected
/// argument.
pub fn parse<Id: Copy>(
    table: &[Spec<Id>],
    args: impl IntoIterator<Item = OsString>,
) -> Result<Parsed<Id>, UsageError> {
    let args: Vec<OsString> = args.into_iter().collect();
    let mut parsed = Parsed {
        options: Vec::new(),
        operands: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(text) = arg.to_str() else {
            // Options are ASCII; anything else is an operand (a path).
            parsed.operands.push(arg.clone());
            continue;
        };
        if text == "--" {
            parsed.operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let spec = find_long(table, name, text)?;
            let full = spec.long.unwrap_or(name);
            let argument = match (spec.arg, value) {
                (HasArg::No, Some(_)) => {
                    return Err(UsageError(format!(
                        "option '--{full}' doesn't allow an argument"
                    )));
                }
                (HasArg::No, None) | (HasArg::Optional, None) => None,
                (_, Some(v)) => Some(OsString::from(v)),
                (HasArg::Required, None) => match args.get(i) {
                    Some(next) => {
                        i += 1;
                        Some(next.clone())
                    }
                    None => {
                        return Err(UsageError(format!(
                            "option '--{full}' requires an argument"
                        )));
                    }
                },
            };
            parsed.options.push((spec.id, argument));
        } else if text.len() > 1 && text.starts_with('-') {
            let cluster = &text[1..];
            for (at, c) in cluster.char_indices() {
                let Some(spec) = table.iter().find(|s| s.short == Some(c)) else {
                    return Err(UsageError(format!("invalid option -- '{c}'")));
                };
                let rest = &cluster[at + c.len_utf8()..];
                match spec.arg {
                    HasArg::No => parsed.options.push((spec.id, None)),
                    HasArg::Optional => {
                        let value = (!rest.is_empty()).then(|| OsString::from(rest));
                        parsed.options.push((spec.id, value));
                        break;
                    }
                    HasArg::Required if !rest.is_empty() => {
                        parsed.options.push((spec.id, Some(OsString::from(rest))));
                        break;
                    }
                    HasArg::Required => match args.get(i) {
                        Some(next) => {
                            i += 1;
                            parsed.options.push((spec.id, Some(next.clone())));
                            break;
                        }
                        None => {
                            return Err(UsageError(format!(
                                "option requires an argument -- '{c}'"
                            )));
                        }
                    },
                }
            }
        } else {
            parsed.operands.push(arg.clone());
        }
    }
    Ok(parsed)
}

/// Finds a long option by exact name, else by unique prefix (tier 0 first, then tier 1).
fn find_long<'t, Id>(
    table: &'t [Spec<Id>],
    name: &str,
    text: &str,
) -> Result<&'t Spec<Id>, UsageError> {
    if let Some(exact) = table.iter().find(|s| s.long == Some(name)) {
        return Ok(exact);
    }
    for tier in [0, 1] {
        let matches: Vec<&Spec<Id>> = table
            .iter()
            .filter(|s| s.tier == tier && s.long.is_some_and(|l| l.starts_with(name)))
            .collect();
        match matches[..] {
            [] => continue,
            [one] => return Ok(one),
            _ => {
                let names: String = matches
                    .iter()
                    .filter_map(|s| s.long)
                    .map(|l| format!(" '--{l}'"))
                    .collect();
                let shown = text.split_once('=').map_or(text, |(n, _)| n);
                return Err(UsageError(format!(
                    "option '{shown}' is ambiguous; possibilities:{names}"
                )));
            }
        }
    }
    Err(UsageError(format!("unrecognized option '{text}'")))
}

/// The most `@FILE` arguments expanded, those found in response files included: libiberty's
/// `expandargv` limit, past which GNU gprof stops with "too many @-files encountered". It
/// ends a response file that names itself, or a few that name each other many times.
pub const RESPONSE_FILES_MAX: usize = 2000;

/// The most bytes read from response files, all of them together.
pub const RESPONSE_BYTES_MAX: u64 = 16 << 20;

/// The most arguments response files may add, all of them together: far more than any
/// command line holds (the kernel's limit on one is 2 MiB).
pub const RESPONSE_WORDS_MAX: usize = 1 << 20;

/// Response files that cannot be expanded within the limits; the message names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseFileError(pub String);

impl std::fmt::Display for ResponseFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ResponseFileError {}

/// Replaces every `@FILE` argument whose file can be read by the words in it, as libiberty's
/// `expandargv` does: words split at white space, with `'…'`, `"…"` and `\` quoting, and
/// the `@FILE`s among them expanded in turn. Unreadable files, and anything but a regular
/// file (a FIFO, a device), stay as they are.
///
/// Returns an error, as gprof does, for a directory and for the 2,000th `@` argument
/// ([`RESPONSE_FILES_MAX`]: a file naming itself would otherwise be read without end), and
/// for response files holding more than [`RESPONSE_BYTES_MAX`] bytes or
/// [`RESPONSE_WORDS_MAX`] words together (ten files naming each other ten times each expand
/// to 10⁹ words).
pub fn expand_response_files(
    args: impl IntoIterator<Item = OsString>,
) -> Result<Vec<OsString>, ResponseFileError> {
    // Arguments still to look at, the next last; a response file's words go back on top.
    let mut pending: Vec<OsString> = args.into_iter().collect();
    pending.reverse();
    let mut out = Vec::with_capacity(pending.len());
    let (mut files, mut bytes, mut words) = (0usize, 0u64, 0usize);
    while let Some(arg) = pending.pop() {
        let Some(path) = arg.to_str().and_then(|a| a.strip_prefix('@')) else {
            out.push(arg);
            continue;
        };
        files += 1;
        if files >= RESPONSE_FILES_MAX {
            return Err(ResponseFileError(format!(
                "error: too many @-files encountered ({RESPONSE_FILES_MAX} at most, as GNU \
                 gprof allows; the last was {}): does a response file name itself?",
                printable(path)
            )));
        }
        // A response file is a regular file of words: a FIFO or device stays a literal
        // argument, as an unreadable file does.
        let left = RESPONSE_BYTES_MAX - bytes;
        let read = safe_fs::read(path, &safe_fs::ReadOptions::default().with_max_bytes(left));
        let contents = match read {
            Ok(contents) => contents,
            Err(e) => match e.kind() {
                safe_fs::ErrorKind::NotRegular(safe_fs::FileKind::Directory) => {
                    return Err(ResponseFileError(format!(
                        "error: @-file refers to a directory: {}",
                        printable(path)
                    )));
                }
                safe_fs::ErrorKind::TooLarge { .. } => {
                    return Err(ResponseFileError(format!(
                        "{}: response files hold more than {} MiB together; pass fewer or \
                         smaller @FILEs",
                        printable(path),
                        RESPONSE_BYTES_MAX >> 20
                    )));
                }
                _ => {
                    out.push(arg);
                    continue;
                }
            },
        };
        bytes += contents.len() as u64;
        let mut found = split_words(&String::from_utf8_lossy(&contents));
        words += found.len();
        if words > RESPONSE_WORDS_MAX {
            return Err(ResponseFileError(format!(
                "{}: response files give more than {RESPONSE_WORDS_MAX} arguments together; \
                 pass fewer or smaller @FILEs",
                printable(path)
            )));
        }
        found.reverse();
        pending.append(&mut found);
    }
    Ok(out)
}

/// `text` with control characters escaped, for a message.
fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    gmon_format::printable(text)
}

fn split_words(text: &str) -> Vec<OsString> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(OsString::from(std::mem::take(&mut word)));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(OsString::from(word));
    }
    words
}

/// C's `atoi`: optional white space and sign, then digits up to the first non-digit; 0 if none.
/// gprof reads its numeric arguments this way, so `-w x` means width 0.
pub fn atoi(text: &str) -> i64 {
    let t = text.trim_start();
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let mut value: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        value = value.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    sign * value
}

/// What gprof's `int` options hold after `atoi`: glibc's `atoi` is `(int) strtol(...)`, which
/// saturates to a 64-bit long and is then cut to 32 bits, so `-w 999999999999` is the width
/// -727379969 (and gprof prints a packed index), not a width that no memory can pad.
pub fn atoi_int(text: &str) -> i64 {
    i64::from(atoi(text) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const T: &[Spec<char>] = &[
        Spec {
            id: 'b',
            short: Some('b'),
            long: Some("brief"),
            arg: HasArg::No,
            tier: 0,
        },
        Spec {
            id: 'p',
            short: Some('p'),
            long: Some("flat-profile"),
            arg: HasArg::Optional,
            tier: 0,
        },
        Spec {
            id: 'e',
            short: Some('e'),
            long: None,
            arg: HasArg::Required,
            tier: 0,
        },
        Spec {
            id: 'R',
            short: Some('R'),
            long: Some("file-ordering"),
            arg: HasArg::Required,
            tier: 0,
        },
        Spec {
            id: 'i',
            short: Some('i'),
            long: Some("file-info"),
            arg: HasArg::No,
            tier: 0,
        },
        Spec {
            id: 'P',
            short: None,
            long: Some("print-path"),
            arg: HasArg::No,
            tier: 0,
        },
        Spec {
            id: 'X',
            short: None,
            long: Some("pid"),
            arg: HasArg::Required,
            tier: 1,
        },
    ];

    fn p(args: &[&str]) -> Result<Parsed<char>, UsageError> {
        parse(T, args.iter().map(OsString::from))
    }

    fn expanded(args: &[&str]) -> Vec<String> {
        expand_response_files(args.iter().map(OsString::from))
            .unwrap()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    fn ok<S: AsRef<str>>(args: &[S]) -> (Vec<(char, Option<String>)>, Vec<String>) {
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let args = &args[..];
        let parsed = p(args).unwrap();
        let opts = parsed
            .options
            .into_iter()
            .map(|(id, v)| (id, v.map(|v| v.into_string().unwrap())))
            .collect();
        let ops = parsed
            .operands
            .into_iter()
            .map(|o| o.into_string().unwrap())
            .collect();
        (opts, ops)
    }

    #[test]
    fn optional_arguments_must_be_attached() {
        assert_eq!(
            ok(&["-p", "main"]),
            (vec![('p', None)], vec!["main".into()])
        );
        assert_eq!(ok(&["-pmain"]).0, [('p', Some("main".into()))]);
        assert_eq!(ok(&["--flat-profile=main"]).0, [('p', Some("main".into()))]);
        assert_eq!(
            ok(&["--flat", "main"]),
            (vec![('p', None)], vec!["main".into()])
        );
    }

    #[test]
    fn clusters_permutation_and_double_dash() {
        assert_eq!(ok(&["-bip"]).0, [('b', None), ('i', None), ('p', None)]);
        assert_eq!(
            ok(&["-bemain", "x"]),
            (
                vec![('b', None), ('e', Some("main".into()))],
                vec!["x".into()]
            )
        );
        assert_eq!(ok(&["-e", "main", "x"]).0, [('e', Some("main".into()))]);
        assert_eq!(
            ok(&["a.out", "-b", "gmon.out"]),
            (vec![('b', None)], vec!["a.out".into(), "gmon.out".into()])
        );
        assert_eq!(
            ok(&["-b", "--", "-i", "-"]),
            (vec![('b', None)], vec!["-i".into(), "-".into()])
        );
    }

    #[test]
    fn long_prefixes_resolve_among_the_original_options_first() {
        assert_eq!(ok(&["--bri"]).0, [('b', None)]);
        assert_eq!(
            ok(&["--p"]).0,
            [('P', None)],
            "--p stays --print-path despite --pid"
        );
        assert_eq!(ok(&["--pi", "7"]).0, [('X', Some("7".into()))]);
        assert_eq!(
            ok(&["--file-ordering", "map"]).0,
            [('R', Some("map".into()))]
        );
        assert_eq!(
            p(&["--fi"]).unwrap_err().0,
            "option '--fi' is ambiguous; possibilities: '--file-ordering' '--file-info'"
        );
    }

    #[test]
    fn getopts_messages() {
        assert_eq!(p(&["-q"]).unwrap_err().0, "invalid option -- 'q'");
        assert_eq!(
            p(&["-e"]).unwrap_err().0,
            "option requires an argument -- 'e'"
        );
        assert_eq!(
            p(&["--bogus"]).unwrap_err().0,
            "unrecognized option '--bogus'"
        );
        assert_eq!(
            p(&["--brief=x"]).unwrap_err().0,
            "option '--brief' doesn't allow an argument"
        );
        assert_eq!(
            p(&["--file-ordering"]).unwrap_err().0,
            "option '--file-ordering' requires an argument"
        );
    }

    #[test]
    fn response_files_expand_with_quotes() {
        let dir = std::env::temp_dir().join(format!("pkgprof-getopt-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("args");
        fs::write(&file, "-b 'a b' \"c\\\"d\" e\\ f\n").unwrap();
        let at = format!("@{}", file.display());
        assert_eq!(
            ok(&expanded(&[&at, "@/no/such/file"])).1,
            ["a b", "c\"d", "e f", "@/no/such/file"]
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A response file naming itself, and ten naming each other ten times each (10⁹ words
    /// at depth 9), end with gprof's error: pkgprof read the second for over 20 s and 251 MiB
    /// before the fix, and took a directory for an image.
    #[test]
    fn response_files_are_expanded_within_gprofs_limits() {
        let dir = std::env::temp_dir().join(format!("pkgprof-getopt-rec-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let own = dir.join("self");
        fs::write(&own, format!("-b @{}", own.display())).unwrap();
        let err = expand_response_files([OsString::from(format!("@{}", own.display()))])
            .unwrap_err()
            .0;
        assert!(
            err.starts_with("error: too many @-files encountered (2000 at most"),
            "{err}"
        );
        for i in 0..9 {
            let next = format!("@{} ", dir.join(format!("f{}", i + 1)).display());
            fs::write(dir.join(format!("f{i}")), next.repeat(10)).unwrap();
        }
        fs::write(dir.join("f9"), "-b").unwrap();
        let start = std::time::Instant::now();
        let f0 = format!("@{}", dir.join("f0").display());
        let err = expand_response_files([OsString::from(&f0)]).unwrap_err().0;
        assert!(err.contains("too many @-files"), "{err}");
        assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
        // 1,999 `@` arguments are allowed, as in gprof, unreadable ones counted too.
        let mut args = vec!["@/no/such/file"; RESPONSE_FILES_MAX - 1];
        assert_eq!(expanded(&args).len(), RESPONSE_FILES_MAX - 1);
        args.push("@/no/such/file");
        assert!(expand_response_files(args.iter().map(OsString::from)).is_err());
        let at_dir = format!("@{}", dir.display());
        assert_eq!(
            expand_response_files([OsString::from(&at_dir)])
                .unwrap_err()
                .0,
            format!("error: @-file refers to a directory: {}", dir.display())
        );
        // Words and bytes are bounded over all the files together.
        let words = dir.join("words");
        fs::write(&words, "a ".repeat(RESPONSE_WORDS_MAX / 2 + 1)).unwrap();
        let at = format!("@{}", words.display());
        assert_eq!(expanded(&[&at]).len(), RESPONSE_WORDS_MAX / 2 + 1);
        let err = expand_response_files([OsString::from(&at), OsString::from(&at)])
            .unwrap_err()
            .0;
        assert!(
            err.contains("more than 1048576 arguments together"),
            "{err}"
        );
        let big = dir.join("big");
        fs::write(&big, "x".repeat((RESPONSE_BYTES_MAX / 2 + 1) as usize)).unwrap();
        let at = format!("@{}", big.display());
        assert_eq!(expanded(&[&at]).len(), 1);
        let err = expand_response_files([OsString::from(&at), OsString::from(&at)])
            .unwrap_err()
            .0;
        assert!(err.contains("more than 16 MiB together"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn int_options_are_cut_to_32_bits_as_gprof_stores_them() {
        assert_eq!(atoi_int("999999999999"), -727_379_969);
        assert_eq!(atoi_int("4294967297"), 1);
        assert_eq!(atoi_int("99999999999999999999999"), -1);
        assert_eq!(atoi_int("2147483647"), 2_147_483_647);
        assert_eq!(atoi_int("-80"), -80);
    }

    #[test]
    fn atoi_is_cs() {
        assert_eq!(
            [atoi("12x"), atoi(" -5"), atoi("x"), atoi("+3"), atoi("")],
            [12, -5, 0, 3, 0]
        );
    }
}
