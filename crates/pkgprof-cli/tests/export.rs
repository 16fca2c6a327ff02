//! `pkgprof --export` and `--diff` on real gmon.out files, each output read by its real
//! consumer: `go tool pprof` (the same functions and totals as our flat listing), Graphviz,
//! xmllint, speedscope's schema; gprof2dot reading our gprof text; and the ground truth of a
//! diff — two builds of one program, one function made slower on purpose.
//!
//! The consumers come from `.ci/run`; a missing one fails the test with what to install, or
//! with `PKGPROF_NO_CONSUMERS=1` prints a notice instead. The diff test needs gcc.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/programs/out");
    let program = name.split('-').next().unwrap();
    (
        dir.join(name).join(program),
        dir.join(name).join("gmon.out"),
    )
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("export-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pkgprof(args: &[&str], cwd: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pkgprof"));
    c.args(args);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "pkgprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a consumer; `None` with a notice when it is missing and PKGPROF_NO_CONSUMERS is set.
fn consumer(program: &str, args: &[&str], stdin: Option<&[u8]>, install: &str) -> Option<String> {
    use std::io::Write;
    use std::process::Stdio;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::env::var_os("PKGPROF_NO_CONSUMERS").is_some() {
                eprintln!("NOTICE: {program} is not installed; check skipped ({install})");
                return None;
            }
            panic!("{program} is not installed: {install} (or PKGPROF_NO_CONSUMERS=1 to skip)");
        }
        Err(e) => panic!("cannot run {program}: {e}"),
    };
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

/// The flat profile of `pkgprof -b -p`: name → self seconds, for functions with samples.
fn flat_listing(image: &Path, gmon: &Path) -> BTreeMap<String, f64> {
    let out = pkgprof(
        &["-b", "-p", image.to_str().unwrap(), gmon.to_str().unwrap()],
        None,
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("time"))
        .skip(1)
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let numbers = fields
                .iter()
                .take_while(|f| f.parse::<f64>().is_ok())
                .count();
            let self_seconds: f64 = fields.get(2)?.parse().ok()?;
            (self_seconds > 0.0).then(|| (fields[numbers..].join(" "), self_seconds))
        })
        .collect()
}

/// `go tool pprof -top` of every function (no node dropped) in samples, as rows of fields:
/// flat, flat%, sum%, cum, cum%, name; `None` when go is missing and that is allowed.
fn pprof_top(pb: &Path) -> Option<(String, Vec<Vec<String>>)> {
    let top = consumer(
        "go",
        &[
            "tool",
            "pprof",
            "-top",
            "-nodefraction=0",
            "-sample_index=samples",
            pb.to_str().unwrap(),
        ],
        None,
        "apt-get install golang-go",
    )?;
    let rows = rows_after(&top, "flat", 5);
    Some((top, rows))
}

/// The rows of a listing after its header line (the one starting with `header`), each split
/// into fields, everything from field `name_at` on joined as the name.
fn rows_after(text: &str, header: &str, name_at: usize) -> Vec<Vec<String>> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with(header))
        .skip(1)
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let mut row: Vec<String> = fields.iter().take(name_at).map(|f| f.to_string()).collect();
            row.push(fields.get(name_at..).unwrap_or_default().join(" "));
            row
        })
        .collect()
}

#[test]
fn every_format_of_a_gmon_out_is_read_by_its_consumer() {
    let dir = scratch("formats");
    for case in ["cycle-pie", "shapes-pie", "recursion-nopie"] {
        let (image, gmon) = fixture(case);
        let (image, gmon) = (image.to_str().unwrap(), gmon.to_str().unwrap());
        let file = |ext: &str| dir.join(format!("{case}.{ext}"));
        for (format, ext) in [
            ("folded", "folded"),
            ("svg", "svg"),
            ("pprof", "pb.gz"),
            ("speedscope", "speedscope.json"),
            ("firefox", "firefox.json"),
            ("dot", "dot"),
            ("json", "json"),
        ] {
            let out = pkgprof(
                &[
                    &format!("--export={format}"),
                    "--output",
                    file(ext).to_str().unwrap(),
                    image,
                    gmon,
                ],
                None,
            );
            assert!(out.stdout.is_empty());
            // A gmon.out has no stacks, and the user is told what the stacks are.
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(
                stderr.contains("stacks reconstructed"),
                format != "json",
                "{format}: {stderr}"
            );
        }
        // go tool pprof: the same functions and self times as our flat listing.
        let listing = flat_listing(Path::new(image), Path::new(gmon));
        let Some((top, rows)) = pprof_top(&file("pb.gz")) else {
            return;
        };
        let pprof: BTreeMap<String, f64> = rows
            .iter()
            .filter_map(|r| {
                let flat: f64 = r[0].parse().ok()?;
                (flat > 0.0).then(|| (r[5].clone(), flat / 100.0))
            })
            .collect();
        assert_eq!(
            pprof.keys().collect::<Vec<_>>(),
            listing.keys().collect::<Vec<_>>(),
            "{case}\n{top}"
        );
        for (name, seconds) in &listing {
            assert!(
                (pprof[name] - seconds).abs() < 0.005,
                "{case} {name}: {top}"
            );
        }
        // Graphviz renders the DOT; xmllint accepts the flame graph; the folded total is the
        // samples' total.
        let svg = dir.join(format!("{case}.dot.svg"));
        consumer(
            "dot",
            &[
                "-Tsvg",
                "-o",
                svg.to_str().unwrap(),
                file("dot").to_str().unwrap(),
            ],
            None,
            "apt-get install graphviz",
        )
        .unwrap();
        consumer(
            "xmllint",
            &[
                "--noout",
                file("svg").to_str().unwrap(),
                svg.to_str().unwrap(),
            ],
            None,
            "apt-get install libxml2-utils",
        )
        .unwrap();
        let folded: f64 = std::fs::read_to_string(file("folded"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum();
        let total: f64 = listing.values().sum();
        assert!(
            (folded / 100.0 - total).abs() < 0.005,
            "{case}: {folded} vs {total}"
        );
        for ext in ["speedscope.json", "firefox.json", "json"] {
            let text = std::fs::read_to_string(file(ext)).unwrap();
            assert!(text.starts_with('{') && text.ends_with("}\n"), "{ext}");
        }
    }
}

#[test]
fn gprof2dot_reads_our_gprof_text() {
    let (image, gmon) = fixture("cycle-pie");
    for brief in [false, true] {
        let mut args = vec![image.to_str().unwrap(), gmon.to_str().unwrap()];
        if brief {
            args.insert(0, "-b");
        }
        let listing = pkgprof(&args, None).stdout;
        let Some(dot) = consumer(
            "gprof2dot",
            &["-f", "prof"],
            Some(&listing),
            "pip install gprof2dot",
        ) else {
            return;
        };
        assert!(
            dot.contains("label=\"common\\n100.00%\\n(100.00%)\\n1200×\""),
            "{dot}"
        );
        let svg = consumer(
            "dot",
            &["-Tsvg"],
            Some(dot.as_bytes()),
            "apt-get install graphviz",
        )
        .unwrap();
        assert!(svg.contains("<svg"));
    }
}

#[test]
fn a_diff_of_measurements_and_unknown_formats_are_refused_by_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(["--diff", "--pid", "137", "x", "y"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("measurement directories") && err.contains("not built yet"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(["--export=gif", "a", "b"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "pkgprof: unknown export format \"gif\" (known: folded, svg, pprof, speedscope, firefox, dot, json)\n"
    );
}

/// Builds tests/workloads/slower.c with `defines`, runs it in its own directory, and returns
/// the program and its gmon.out.
fn build_and_run(dir: &Path, name: &str, defines: &[&str]) -> (PathBuf, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workloads/slower.c");
    let run = dir.join(name);
    std::fs::create_dir_all(&run).unwrap();
    let exe = run.join("slower");
    let st = Command::new("gcc")
        .args(["-pg", "-O1", "-o"])
        .arg(&exe)
        .args(defines)
        .arg(&src)
        .status()
        .expect("gcc is needed to build the diff workload");
    assert!(st.success());
    let st = Command::new(&exe).current_dir(&run).status().unwrap();
    assert!(st.success());
    (exe, run.join("gmon.out"))
}

#[test]
fn a_diff_of_two_builds_names_the_function_made_slower_first() {
    let dir = scratch("diff");
    let (base_exe, base) = build_and_run(&dir, "base", &[]);
    let (new_exe, new) = build_and_run(&dir, "new", &["-DCOMPUTE_WORK=3"]);
    let args = [
        base_exe.to_str().unwrap(),
        base.to_str().unwrap(),
        new_exe.to_str().unwrap(),
        new.to_str().unwrap(),
    ];
    let mut diff = vec!["--diff"];
    diff.extend(args);
    let text = String::from_utf8(pkgprof(&diff, None).stdout).unwrap();
    let first = text
        .lines()
        .skip_while(|l| !l.contains("self base"))
        .nth(1)
        .unwrap();
    // Three times the work: well above the noise, which is printed without the '~' mark.
    let fields: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(fields.last(), Some(&"compute"), "{text}");
    let (b, n): (f64, f64) = (fields[0].parse().unwrap(), fields[1].parse().unwrap());
    let noise: f64 = fields[5]
        .parse()
        .unwrap_or_else(|_| panic!("a noise without ~: {text}"));
    assert!(n - b > 2.0 * noise && n > 2.0 * b, "{text}");

    // The differential flame graph shows compute red (grew) with the new width.
    let svg = dir.join("diff.svg");
    let mut export = vec!["--diff", "--export=svg", "--output", svg.to_str().unwrap()];
    export.extend(args);
    pkgprof(&export, None);
    let svg = std::fs::read_to_string(&svg).unwrap();
    let at = svg.find("<title>compute (").unwrap();
    let fill = &svg[at..][svg[at..].find("fill=\"").unwrap() + 6..];
    assert!(fill.starts_with("rgb(255,"), "{}", &svg[at..at + 300]);

    // pprof with -diff_base semantics: compute first, with the growth.
    let pb = dir.join("diff.pb.gz");
    let mut export = vec!["--diff", "--export=pprof", "--output", pb.to_str().unwrap()];
    export.extend(args);
    pkgprof(&export, None);
    let Some((top, rows)) = pprof_top(&pb) else {
        return;
    };
    assert_eq!(rows[0][5], "compute", "{top}");
    assert_eq!(rows[0][0].parse::<f64>().unwrap(), n - b, "{top}");
}

#[test]
fn a_measurement_exports_its_sampled_stacks() {
    let dir = scratch("measurement");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/seamless");
    let objects = root.join("objects");
    let measurement = root.join("measurement");
    let m = [
        "--pid",
        "137",
        "--object-path",
        objects.to_str().unwrap(),
        measurement.to_str().unwrap(),
    ];
    // The listing's flat profile: % time per function.
    let mut args = vec!["-b", "-p"];
    args.extend(m);
    let listing: BTreeMap<String, String> = String::from_utf8(pkgprof(&args, None).stdout)
        .unwrap()
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("time"))
        .skip(1)
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let share: f64 = fields.first()?.parse().ok()?;
            (share > 0.0).then(|| (fields.last().unwrap().to_string(), fields[0].to_owned()))
        })
        .collect();
    let folded = dir.join("m.folded");
    let mut args = vec!["--export=folded", "--output", folded.to_str().unwrap()];
    args.extend(m);
    let out = pkgprof(&args, None);
    assert!(out.stderr.is_empty(), "real stacks need no note");
    let folded = std::fs::read_to_string(&folded).unwrap();
    // User frames call into the kernel, as in the listing: read → entry_SYSCALL_64.
    assert!(
        folded.contains("137u:main;137u:read_input;137u:read;137k:entry_SYSCALL_64;"),
        "{folded}"
    );
    let pb = dir.join("m.pb.gz");
    let mut args = vec!["--export=pprof", "--output", pb.to_str().unwrap()];
    args.extend(m);
    pkgprof(&args, None);
    let Some((top, rows)) = pprof_top(&pb) else {
        return;
    };
    let pprof: BTreeMap<String, String> = rows
        .iter()
        .filter_map(|r| {
            let flat: f64 = r[0].parse().ok()?;
            (flat > 0.0).then(|| (r[5].clone(), r[1].trim_end_matches('%').to_owned()))
        })
        .collect();
    assert_eq!(pprof, listing, "{top}");
    assert!(top.contains("of 545 total"), "{top}");
}
