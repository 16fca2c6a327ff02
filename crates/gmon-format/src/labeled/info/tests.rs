use super::*;
use crate::error::{Error, ErrorKind};

fn err_of(text: &str) -> Error {
    MeasurementInfo::parse(text.as_bytes()).expect_err(text)
}

/// The line, offset and message of an `Info` error.
fn info_err(text: &str) -> (usize, u64, String) {
    let err = err_of(text);
    match err.kind() {
        ErrorKind::Info { line, message } => {
            (*line, err.offset().expect("offset"), message.clone())
        }
        other => panic!("{text:?}: not an info error: {other:?}"),
    }
}

fn written(info: &MeasurementInfo) -> String {
    let mut out = Vec::new();
    info.write(&mut out).expect("writes");
    String::from_utf8(out).expect("utf-8")
}

const HEAD: &str = "pkgprof-info 1.0\n\n[process]\npid = 1\n";

#[test]
fn module_doc_example_round_trips() {
    let source = include_str!("mod.rs");
    let example: String = source
        .lines()
        .skip_while(|l| *l != "//! ```text")
        .skip(1)
        .take_while(|l| *l != "//! ```")
        .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start_matches(' ')))
        .collect();
    assert!(example.starts_with("pkgprof-info 1.1\n"), "{example}");
    let info = MeasurementInfo::parse(example.as_bytes()).expect("the example parses");
    assert_eq!(written(&info), example);
}

#[test]
fn minimal() {
    let info = MeasurementInfo::parse(b"pkgprof-info 1.0\n[process]\npid = 42").expect("ok");
    assert_eq!(info.process.pid, 42);
    assert_eq!(info.process.ppid, None);
    // A 1.0 file needs no `[end]`; it is written back as 1.1, with one.
    assert_eq!(info.version(), (1, 1));
    assert_eq!(
        written(&info),
        "pkgprof-info 1.1\n\n[process]\npid = 42\n\n[end]\n"
    );
}

#[test]
fn default_writes_pid_zero() {
    assert_eq!(
        written(&MeasurementInfo::default()),
        "pkgprof-info 1.1\n\n[process]\npid = 0\n\n[end]\n"
    );
}

#[test]
fn comments_blanks_crlf_and_spacing() {
    let text = "pkgprof-info 1.0\r\n# made by hand\r\n\r\n  [process]  \r\n\tpid=7 \r\n  # x\nppid\t =\t 0x10\n";
    let info = MeasurementInfo::parse(text.as_bytes()).expect("ok");
    assert_eq!((info.process.pid, info.process.ppid), (7, Some(16)));
    assert_eq!(
        written(&info),
        "pkgprof-info 1.1\n\n[process]\npid = 7\nppid = 16\n\n[end]\n"
    );
}

#[test]
fn strings_round_trip_any_bytes() {
    let mut all: Vec<u8> = (0..=255).collect();
    all.extend("é日本\u{202e}\u{2028}\u{85}\u{feff}".as_bytes());
    all.extend(b"\xc3");
    let mut info = MeasurementInfo::default();
    info.process.exe = Some(all.clone());
    info.process.argv = Some(vec![all.clone(), Vec::new(), b"\"a, b\"".to_vec()]);
    let text = written(&info);
    assert!(text.is_ascii() || std::str::from_utf8(text.as_bytes()).is_ok());
    assert!(text.contains("é日本\\xe2\\x80\\xae\\xe2\\x80\\xa8\\xc2\\x85\\xef\\xbb\\xbf\\xc3\""));
    assert!(text.contains(r#", "", "\"a, b\""]"#));
    let back = MeasurementInfo::parse(text.as_bytes()).expect("parses");
    assert_eq!(back, info);
    assert_eq!(written(&back), text);
}

#[test]
fn string_escapes_read() {
    let info = MeasurementInfo::parse(
        format!("{HEAD}exe = \"a\\\"\\\\\\n\\t\\r\\x41\\xFf\tz\"\n").as_bytes(),
    )
    .expect("ok");
    assert_eq!(
        info.process.exe.as_deref(),
        Some(&b"a\"\\\n\t\rA\xff\tz"[..])
    );
}

#[test]
fn lists() {
    for (value, expected) in [
        ("[]", vec![]),
        ("[ ]", vec![]),
        ("[\"a\"]", vec![b"a".to_vec()]),
        ("[ \"a\" ,\"b\"\t]", vec![b"a".to_vec(), b"b".to_vec()]),
        ("[\"]\", \",\"]", vec![b"]".to_vec(), b",".to_vec()]),
    ] {
        let info = MeasurementInfo::parse(format!("{HEAD}argv = {value}").as_bytes()).expect(value);
        assert_eq!(info.process.argv, Some(expected), "{value}");
    }
}

#[test]
fn numbers() {
    for (value, expected) in [
        ("0", 0),
        ("007", 7),
        ("0x0", 0),
        ("0xFFffFFffFFffFFff", u64::MAX),
        ("18446744073709551615", u64::MAX),
    ] {
        let info =
            MeasurementInfo::parse(format!("{HEAD}instances = {value}").as_bytes()).expect(value);
        assert_eq!(info.process.instances, Some(expected));
    }
}

#[test]
fn versions() {
    let info =
        MeasurementInfo::parse(b"pkgprof-info 1.7\n[process]\npid = 1\n[end]\n").expect("1.7");
    assert_eq!(info.version(), (1, 7));
    assert!(written(&info).starts_with("pkgprof-info 1.7\n"));

    for (text, found) in [
        ("pkgprof-info 2.0\n[process]\npid = 1\n", "2.0"),
        ("pkgprof-info 10.3\nanything at all \0", "10.3"),
        ("pkgprof-info 2.x-beta", "2.x-beta"),
        ("pkgprof-info 3", "3"),
    ] {
        let err = err_of(text);
        let ErrorKind::UnsupportedInfoVersion {
            found: f,
            supported,
        } = err.kind()
        else {
            panic!("{text:?}: {err:?}")
        };
        assert_eq!((f.as_str(), *supported), (found, 1));
        assert_eq!(err.offset(), Some(13));
        assert!(err.to_string().contains("upgrade pkgprof"), "{err}");
    }
}

#[test]
fn bytes_that_are_not_utf8() {
    let err = MeasurementInfo::parse(b"pkgprof-info 1.0\n[process]\npid = 1\n\xff")
        .expect_err("not utf-8");
    assert_eq!(err.to_string(), "line 4: invalid utf-8 (at offset 0x23)");
    let err = MeasurementInfo::parse(b"pkgprof-info 9.0\n\xff").expect_err("newer");
    assert!(matches!(
        err.kind(),
        ErrorKind::UnsupportedInfoVersion { .. }
    ));
    let err = MeasurementInfo::parse(b"pkgprof-info 1.\xff\n").expect_err("bad version");
    assert!(
        err.to_string().contains("malformed version `1.\u{fffd}`"),
        "{err}"
    );
}

#[test]
fn error_message_names_line_and_offset() {
    let err = err_of("pkgprof-info 1.0\n[process]\npid = x\n");
    assert_eq!(
        err.to_string(),
        "line 3: expected a number, found `x` (at offset 0x21)"
    );
}

#[test]
fn malformed_files() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("", 1, 0, "not a pkgprof measurement-info file"),
        ("pkgprof-info", 1, 0, "not a pkgprof"),
        ("\u{feff}pkgprof-info 1.0\n", 1, 0, "not a pkgprof"),
        ("pkgprof-info  1.0\n", 1, 13, "malformed version"),
        ("pkgprof-info 1\n", 1, 13, "malformed version"),
        ("pkgprof-info 1.\n", 1, 13, "malformed version"),
        ("pkgprof-info 1.0 \n", 1, 13, "malformed version"),
        ("pkgprof-info 1.+1\n", 1, 13, "malformed version"),
        ("pkgprof-info 1.99999999999\n", 1, 13, "malformed version"),
        ("pkgprof-info 0.9\n", 1, 13, "unknown version 0.9"),
        ("pkgprof-info 1.0\n", 2, 17, "missing [process] section"),
        (
            "pkgprof-info 1.0\n[process]\n",
            2,
            17,
            "[process] has no pid",
        ),
        (
            "pkgprof-info 1.0\npid = 1\n",
            2,
            17,
            "comes before the first [section]",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\x01\n",
            3,
            34,
            "control character U+0001",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\u{85}\n",
            3,
            34,
            "control character U+0085",
        ),
        (
            "pkgprof-info 1.0\n[process\n",
            2,
            17,
            "a section header is `[name]`",
        ),
        ("pkgprof-info 1.0\n[]\n", 2, 17, "a section header"),
        ("pkgprof-info 1.0\n[a b]\n", 2, 17, "a section header"),
        (
            "pkgprof-info 1.0\n [process] x\n",
            2,
            18,
            "a section header",
        ),
        (
            "pkgprof-info 1.0\n[process]\n[process]\n",
            3,
            27,
            "[process] again (first on line 2)",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid\n",
            3,
            30,
            "expected `key = value`",
        ),
        (
            "pkgprof-info 1.0\n[process]\np id = 1\n",
            3,
            28,
            "expected `key = value`",
        ),
        (
            "pkgprof-info 1.0\n[process]\n= 1\n",
            3,
            27,
            "missing key before `=`",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid =  \n",
            3,
            32,
            "missing value after `pid =`",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\npid = 2\n",
            4,
            35,
            "`pid` again in [process]",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = -1\n",
            3,
            33,
            "expected a number, found `-1`",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = +1\n",
            3,
            33,
            "expected a number",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 0x\n",
            3,
            33,
            "expected a number",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1 2\n",
            3,
            33,
            "expected a number",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 4294967296\n",
            3,
            33,
            "does not fit 32 bits",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\ninstances = 18446744073709551616\n",
            4,
            47,
            "does not fit 64 bits",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe = /bin/sh\n",
            4,
            41,
            "expected a string",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"/bin/sh\n",
            4,
            41,
            "unterminated string",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"a\\\"\n",
            4,
            41,
            "unterminated string",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"a\\",
            4,
            41,
            "unterminated string",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"a\" b\n",
            4,
            45,
            "after the string",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"\\q\"\n",
            4,
            42,
            "unknown escape `\\q`",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"\\é\"\n",
            4,
            42,
            "unknown escape `\\é`",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe = \"\\x4\"\n",
            4,
            42,
            "two hex digits",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nargv = \"a\"\n",
            4,
            42,
            "expected a list",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nargv = [\"a\" \"b\"]\n",
            4,
            47,
            "expected `,` or `]`",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nargv = [\"a\",]\n",
            4,
            47,
            "expected a string",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nargv = [\"a\"\n",
            4,
            46,
            "expected `,` or `]`",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nargv = [] x\n",
            4,
            45,
            "after the list",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe-build-id = 0xab\n",
            4,
            51,
            "hex digits",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nexe-build-id = abc\n",
            4,
            50,
            "even number",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\ncomm = \"12345678901234567890123456789012345678901234567890123456789012345\"\n",
            4,
            42,
            "command name of 65 bytes is longer than 64",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\narcs = call\n",
            5,
            53,
            "arcs must be",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\nfrequency = 1\nperiod = 2\n",
            6,
            69,
            "both frequency and period",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\nevent = \"\\xff\"\n",
            5,
            54,
            "not utf-8",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\n[kernel]\nsymbols-file = \"../x\"\n",
            5,
            59,
            "without a directory",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\n[kernel]\nsymbols-file = \"..\"\n",
            5,
            59,
            "must name a file",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\n[mapping]\nstart = 0x1\n",
            4,
            35,
            "[mapping] has no end",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\n[mapping]\nend = 0x1\n",
            4,
            35,
            "[mapping] has no start",
        ),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\n[mapping]\nstart = 1\nend = 2\nend = 3\n",
            7,
            63,
            "`end` again in [mapping]",
        ),
    ];
    let mut wrong = Vec::new();
    for &(text, line, offset, message) in cases {
        let (l, o, m) = info_err(text);
        if !m.contains(message) || (l, o) != (line, offset as u64) {
            wrong.push(format!(
                "{text:?}: line {l} offset {o}: {m:?}; wanted {message:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn unknown_content_is_kept_and_written_back() {
    let text = "pkgprof-info 1.3\n\n\
                [future]\nx = 1.5e3\n\n\
                [process]\nnew-key = {a = 1}\npid = 5\n\n\
                [mapping]\nstart = 0x1\nend = 0x2\nprot = r-x\n\n\
                [future]\n\n\
                [Process]\npid = what\n\n\
                [end]\n";
    let info = MeasurementInfo::parse(text.as_bytes()).expect("1.3 parses");
    assert_eq!(info.process.extra, vec![Field::new("new-key", "{a = 1}")]);
    assert_eq!(info.mappings[0].extra, vec![Field::new("prot", "r-x")]);
    assert_eq!(
        info.extra_sections,
        vec![
            Section {
                name: "future".into(),
                fields: vec![Field::new("x", "1.5e3")]
            },
            Section {
                name: "future".into(),
                fields: vec![]
            },
            Section {
                name: "Process".into(),
                fields: vec![Field::new("pid", "what")]
            },
        ]
    );
    let out = written(&info);
    assert_eq!(
        out,
        "pkgprof-info 1.3\n\n\
         [process]\npid = 5\nnew-key = {a = 1}\n\n\
         [mapping]\nstart = 0x1\nend = 0x2\nprot = r-x\n\n\
         [future]\nx = 1.5e3\n\n\
         [future]\n\n\
         [Process]\npid = what\n\n\
         [end]\n"
    );
    assert_eq!(MeasurementInfo::parse(out.as_bytes()).expect("again"), info);
}

#[test]
fn writer_refuses_what_would_not_read_back() {
    let refuse = |info: MeasurementInfo, what: &str| {
        let mut out = Vec::new();
        let err = info.write(&mut out).expect_err(what);
        assert!(matches!(err.kind(), ErrorKind::InvalidInfo(_)), "{err:?}");
        assert!(err.to_string().contains(what), "{err} lacks {what}");
        assert!(out.is_empty(), "wrote part of the file");
    };
    let mut i = MeasurementInfo::default();
    i.process.exe_build_id = Some(vec![]);
    refuse(i, "empty exe-build-id");
    let mut i = MeasurementInfo::default();
    i.kernel.symbols_file = Some("a/b".into());
    refuse(i, "symbols-file");
    let mut i = MeasurementInfo::default();
    i.process.extra.push(Field::new("pid", "1"));
    refuse(i, "has the name of a known one");
    let mut i = MeasurementInfo::default();
    i.process.extra.push(Field::new("a b", "1"));
    refuse(i, "key `a b`");
    for value in ["", " 1", "1\t", "a\nb", "\u{7f}"] {
        let mut i = MeasurementInfo::default();
        i.counters.extra.push(Field::new("k", value));
        refuse(i, "value of `k` in [counters]");
    }
    let mut i = MeasurementInfo::default();
    i.extra_sections.push(Section {
        name: "mapping".into(),
        fields: vec![],
    });
    refuse(i, "known section [mapping]");
    let mut i = MeasurementInfo::default();
    i.extra_sections.push(Section {
        name: "x]".into(),
        fields: vec![],
    });
    refuse(i, "section name");
}

#[test]
fn empty_known_sections_are_left_out() {
    let text = "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\n[kernel]\n[counters]\n";
    let info = MeasurementInfo::parse(text.as_bytes()).expect("ok");
    assert_eq!(info, {
        let mut i = MeasurementInfo::default();
        i.process.pid = 1;
        i
    });
    assert_eq!(
        written(&info),
        "pkgprof-info 1.1\n\n[process]\npid = 1\n\n[end]\n"
    );
}

#[test]
fn every_truncation_of_a_written_file_is_refused() {
    let mut info = MeasurementInfo::default();
    info.process.pid = 4242;
    info.process.argv = Some(vec![b"job".to_vec(), b"--x".to_vec()]);
    info.sampling.rate = Some(SampleRate::Frequency(997));
    let mut m = Mapping::new(0x5559_c997_0000, 0x5559_c998_0000);
    m.path = Some(b"/usr/bin/job".to_vec());
    info.mappings.push(m);
    let text = written(&info);
    assert!(text.ends_with("\n\n[end]\n"));
    assert_eq!(
        MeasurementInfo::parse(text.as_bytes()).expect("whole"),
        info
    );
    for cut in 0..text.len() {
        let err = MeasurementInfo::parse(&text.as_bytes()[..cut])
            .expect_err(&format!("cut at {cut}: {:?}", &text[..cut]));
        // Every error names a line (and the caller adds the file).
        let ErrorKind::Info { line, .. } = err.kind() else {
            panic!("cut at {cut}: {err:?}");
        };
        assert!(*line >= 1, "cut at {cut}");
    }
    // The error names the line where the end is missing.
    let cut = &text[..text.len() - "[end]\n".len()];
    let err = MeasurementInfo::parse(cut.as_bytes()).expect_err("no end");
    let lines = cut.lines().count();
    assert!(
        err.to_string().contains(&format!("line {}", lines + 1)),
        "{err}"
    );
    // Nothing may follow `[end]`.
    for after in ["\n", "# c\n", "[process]\n", "x = 1\n"] {
        let err = MeasurementInfo::parse(format!("{text}{after}").as_bytes()).expect_err(after);
        assert!(
            err.to_string().contains("text after the `[end]` line"),
            "{err}"
        );
    }
}

#[test]
fn period_and_words() {
    let text = "pkgprof-info 1.0\n[process]\npid = 1\n[sampling]\nperiod = 1000\narcs = calls\n";
    let info = MeasurementInfo::parse(text.as_bytes()).expect("ok");
    assert_eq!(info.sampling.rate, Some(SampleRate::Period(1000)));
    assert_eq!(info.sampling.arcs, Some(ArcCounts::Calls));
}
