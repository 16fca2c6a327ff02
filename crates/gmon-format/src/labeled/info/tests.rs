//! Unit tests of the info file, one or more per rule of its format. Longer than 800 lines
//! because the format has many rules: the table of malformed files alone is a third of it.

use super::*;
use crate::error::{Error, ErrorKind};
use crate::labeled::boundary::BoundaryKind;

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

/// What the collector writes besides the first tables' keys, every key typed.
const COLLECTOR_KEYS: &str = "pkgprof-info 1.1\n\n[process]\npid = 9\n\n\
    [sampling]\nlost-samples = 5\nthrottled = 0\nlost-samples-cpu1 = 2\nlost-samples-cpu12 = 3\n\
    truncated-stacks = 4\ntruncated-stack-copy = 1\ntruncated-callchain-limit = 0\n\
    truncated-unwind-info = 3\nstack-size = 65528\nmax-stack = 1024\n\n\
    [counters]\nwritten-bytes = 7\nsource = \"taskstats\"\ntaskstats = refused\n\
    perf-page-faults = 11\nperf-context-switches = 12\nperf-cpu-migrations = 13\n\n\
    [boundary]\nsyscall = 175\nfault = 10\ninterrupt = 8\nother = 0\nuser-only = 40\n\
    kernel-only = 2\nstacks-file = \"gmon.out.9s.x\"\n\n\
    [rename]\nmonotonic-ns = 100\ntid = 10\ncomm = \"worker\\x01\"\n\n\
    [rename]\nmonotonic-ns = 200\ntid = 9\ncomm = \"main\"\n\n\
    [end]\n";

#[test]
fn collector_keys_are_typed_and_written_back_the_same() {
    let info = MeasurementInfo::parse(COLLECTOR_KEYS.as_bytes()).expect("parses");
    let s = &info.sampling;
    assert_eq!(
        s.lost_samples_by_cpu.iter().collect::<Vec<_>>(),
        [(&1, &2), (&12, &3)]
    );
    assert_eq!(
        (
            s.truncated_stacks,
            s.truncated_stack_copy,
            s.truncated_callchain_limit
        ),
        (Some(4), Some(1), Some(0))
    );
    assert_eq!(
        (s.truncated_unwind_info, s.stack_size, s.max_stack),
        (Some(3), Some(65528), Some(1024))
    );
    assert!(s.extra.is_empty(), "{:?}", s.extra);
    let c = &info.counters;
    assert_eq!(c.source, Some(CounterSource::Taskstats));
    assert!(c.taskstats_refused);
    assert_eq!(
        (
            c.perf_page_faults,
            c.perf_context_switches,
            c.perf_cpu_migrations
        ),
        (Some(11), Some(12), Some(13))
    );
    assert!(c.extra.is_empty(), "{:?}", c.extra);
    let b = &info.boundary;
    assert_eq!(
        BoundaryKind::ALL.map(|k| b.entries.get(&k).copied()),
        // Written before the asynchronous kinds: none of them.
        [
            Some(175),
            Some(10),
            Some(8),
            Some(0),
            None,
            None,
            None,
            None
        ]
    );
    assert_eq!((b.user_only, b.kernel_only), (Some(40), Some(2)));
    assert_eq!(b.stacks_file.as_deref(), Some("gmon.out.9s.x"));
    assert_eq!(
        info.renames,
        [
            Rename::new(100, 10, Comm::new(&b"worker\x01"[..]).expect("short")),
            Rename::new(200, 9, Comm::new(&b"main"[..]).expect("short")),
        ]
    );
    assert!(info.extra_sections.is_empty());
    assert_eq!(written(&info), COLLECTOR_KEYS);
}

/// Every boundary kind is read and written: a kind missing from the writer or the reader
/// fails here, whatever kinds are added.
#[test]
fn every_boundary_kind_is_read_and_written() {
    let mut info = MeasurementInfo::default();
    for (i, kind) in BoundaryKind::ALL.into_iter().enumerate() {
        info.boundary.entries.insert(kind, i as u64 + 100);
    }
    let text = written(&info);
    for (i, kind) in BoundaryKind::ALL.into_iter().enumerate() {
        assert!(
            text.contains(&format!("\n{} = {}\n", kind.as_str(), i + 100)),
            "{kind:?}: {text}"
        );
    }
    assert_eq!(
        MeasurementInfo::parse(text.as_bytes()).expect("parses"),
        info
    );
}

#[test]
fn unknown_boundary_and_rename_keys_are_kept() {
    let text = "pkgprof-info 1.1\n\n[process]\npid = 1\n\n[boundary]\nsyscall = 1\nsoftirq = 4\n\n\
                [rename]\nmonotonic-ns = 1\ntid = 2\ncomm = \"a\"\ncpu = 3\n\n[end]\n";
    let info = MeasurementInfo::parse(text.as_bytes()).expect("parses");
    assert_eq!(info.boundary.extra, [Field::new("softirq", "4")]);
    assert_eq!(info.renames[0].extra, [Field::new("cpu", "3")]);
    assert_eq!(written(&info), text);
}

#[test]
fn malformed_collector_values_are_errors_at_their_offset() {
    for (body, line, column, wanted) in [
        ("[counters]\nsource = \"perf\"\n", 7, 9, "source must be"),
        ("[counters]\nsource = taskstats\n", 7, 9, "double quotes"),
        (
            "[counters]\ntaskstats = yes\n",
            7,
            12,
            "taskstats must be `refused`",
        ),
        (
            "[sampling]\nlost-samples-cpu = 1\n",
            7,
            0,
            "followed by a CPU number",
        ),
        (
            "[sampling]\nlost-samples-cpu01 = 1\n",
            7,
            0,
            "no leading zero",
        ),
        ("[sampling]\nlost-samples-cpux = 1\n", 7, 0, "CPU number"),
        (
            "[sampling]\nlost-samples-cpu99999999999 = 1\n",
            7,
            0,
            "CPU number",
        ),
        (
            "[sampling]\nlost-samples-cpu3 = -1\n",
            7,
            20,
            "expected a number",
        ),
        (
            "[sampling]\nlost-samples-cpu3 = 1\nlost-samples-cpu3 = 2\n",
            8,
            0,
            "again",
        ),
        (
            "[sampling]\ntruncated-stacks = many\n",
            7,
            19,
            "expected a number",
        ),
        ("[sampling]\nstack-size = 0x\n", 7, 13, "expected a number"),
        (
            "[counters]\nperf-page-faults = 1.5\n",
            7,
            19,
            "expected a number",
        ),
        ("[boundary]\nsyscall = x\n", 7, 10, "expected a number"),
        (
            "[boundary]\nfault = 1\nfault = 2\n",
            8,
            0,
            "`fault` again in [boundary]",
        ),
        (
            "[boundary]\nstacks-file = \"../s\"\n",
            7,
            14,
            "stacks-file must be",
        ),
        (
            "[boundary]\nuser-only = 1\n\n[boundary]\n",
            9,
            0,
            "[boundary] again",
        ),
        (
            "[rename]\ntid = 1\ncomm = \"a\"\n",
            6,
            0,
            "[rename] has no monotonic-ns",
        ),
        (
            "[rename]\nmonotonic-ns = 1\n",
            6,
            0,
            "[rename] has no tid, comm",
        ),
        ("[rename]\ntid = 4294967296\n", 7, 6, "does not fit 32 bits"),
    ] {
        let text = format!("{HEAD}\n{body}\n[end]\n");
        let (l, offset, message) = info_err(&text);
        assert!(message.contains(wanted), "{body:?}: {message}");
        assert_eq!(l, line, "{body:?}: {message}");
        let line_start: usize = text
            .split_inclusive('\n')
            .take(line - 1)
            .map(str::len)
            .sum();
        assert_eq!(offset as usize, line_start + column, "{body:?}: {message}");
    }
}

#[test]
fn writer_refuses_typed_keys_as_unknown_ones() {
    let mut info = MeasurementInfo::default();
    info.sampling
        .extra
        .push(Field::new("lost-samples-cpu3", "1"));
    assert!(info.write(Vec::new()).is_err());
    let mut info = MeasurementInfo::default();
    info.counters.extra.push(Field::new("source", "\"proc\""));
    assert!(info.write(Vec::new()).is_err());
    let mut info = MeasurementInfo::default();
    info.boundary.extra.push(Field::new("interrupt", "1"));
    assert!(info.write(Vec::new()).is_err());
    let mut info = MeasurementInfo::default();
    info.boundary.stacks_file = Some("a/b".into());
    assert!(info.write(Vec::new()).is_err());
    let mut info = MeasurementInfo::default();
    info.extra_sections.push(Section {
        name: "rename".into(),
        fields: Vec::new(),
    });
    assert!(info.write(Vec::new()).is_err());
}
