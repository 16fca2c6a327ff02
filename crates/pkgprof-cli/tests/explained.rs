//! Without `-b`, pkgprof prints its own explanations where gprof prints its texts; everything
//! else must be gprof's output byte for byte. This test runs GNU gprof and pkgprof on the
//! fixtures with options but no `-b`, replaces the explanation blocks in both outputs by a
//! placeholder, and compares.
//!
//! gprof's blocks are not stored here (its texts are GNU's, not ours): they are taken at run
//! time from gprof's own output, as the difference between a listing with and without `-b`.
//! Like the differential test, this fails when gprof is missing unless `PKGPROF_NO_GPROF=1`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/programs/out")
}

fn run(program: &str, args: &[&str], dir: &Path) -> Vec<u8> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn gprof(args: &[&str], dir: &Path) -> Vec<u8> {
    run("gprof", args, dir)
}

fn ours(args: &[&str], dir: &Path) -> Vec<u8> {
    run(env!("CARGO_BIN_EXE_pkgprof"), args, dir)
}

fn strip_prefix<'a>(text: &'a [u8], prefix: &[u8], what: &str) -> &'a [u8] {
    text.strip_prefix(prefix)
        .unwrap_or_else(|| panic!("{what}: unexpected layout"))
}

fn strip_suffix<'a>(text: &'a [u8], suffix: &[u8], what: &str) -> &'a [u8] {
    text.strip_suffix(suffix)
        .unwrap_or_else(|| panic!("{what}: unexpected layout"))
}

const GNU_TITLE_BRIEF: &[u8] = b"\t\t\tCall graph\n\n";
const GNU_TITLE: &[u8] = b"\t\t     Call graph (explanation follows)\n\n";
const INDEX: &[u8] = b"\x0c\nIndex by function name\n";

/// The four explanation blocks of a program, as `run` prints them: (GNU flat, GNU call graph,
/// BSD call graph, BSD flat), each from the first byte after the layout lines that introduce
/// it to the end of its notice.
fn blocks(run: &dyn Fn(&[&str]) -> Vec<u8>, image: &str) -> [Vec<u8>; 4] {
    let with = |a: &[&str]| run(&[a, &[image, "gmon.out"]].concat());
    // GNU flat: brief listing, "\n", block.
    let (full, brief) = (with(&["-p"]), with(&["-b", "-p"]));
    let flat = strip_prefix(&full, &brief, "gnu flat");
    let flat = strip_prefix(flat, b"\n", "gnu flat").to_vec();
    // GNU call graph: title, listing, "\n", block, index.
    let (full, brief) = (with(&["-q"]), with(&["-b", "-q"]));
    let index = brief
        .windows(INDEX.len())
        .position(|w| w == INDEX)
        .expect("index");
    let (listing, index) = brief.split_at(index);
    let listing = strip_prefix(listing, GNU_TITLE_BRIEF, "gnu graph");
    let rest = strip_prefix(&full, GNU_TITLE, "gnu graph");
    let rest = strip_prefix(rest, listing, "gnu graph");
    let rest = strip_prefix(rest, b"\n", "gnu graph");
    let graph = strip_suffix(rest, index, "gnu graph").to_vec();
    // BSD call graph: "\n\n\ncall graph profile:\n", block, brief listing.
    let (full, brief) = (with(&["-T", "-q"]), with(&["-b", "-T", "-q"]));
    let rest = strip_prefix(&full, b"\n\n\ncall graph profile:\n", "bsd graph");
    let bsd_graph = strip_suffix(rest, &brief, "bsd graph").to_vec();
    // BSD flat: "\n\n\nflat profile:\n\n", block, brief listing.
    let (full, brief) = (with(&["-T", "-p"]), with(&["-b", "-T", "-p"]));
    let rest = strip_prefix(&full, b"\n\n\nflat profile:\n\n", "bsd flat");
    let bsd_flat = strip_suffix(rest, &brief, "bsd flat").to_vec();
    [flat, graph, bsd_graph, bsd_flat]
}

/// `text` with every occurrence of each block replaced by `<explanation N>`.
fn masked(text: &[u8], blocks: &[Vec<u8>; 4]) -> String {
    let mut text = text.to_vec();
    for (n, block) in blocks.iter().enumerate() {
        assert!(!block.is_empty());
        let mark = format!("<explanation {n}>");
        let mut out = Vec::new();
        let mut rest = &text[..];
        while let Some(at) = rest.windows(block.len()).position(|w| w == &block[..]) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(mark.as_bytes());
            rest = &rest[at + block.len()..];
        }
        out.extend_from_slice(rest);
        text = out;
    }
    String::from_utf8_lossy(&text).into_owned()
}

fn gprof_installed() -> bool {
    let found = Command::new("gprof")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        if std::env::var_os("PKGPROF_NO_GPROF").is_some_and(|v| v == "1") {
            println!("\n*** explained-layout test NOT RUN: gprof not found on PATH ***\n");
            return false;
        }
        panic!("this test needs GNU gprof on PATH; set PKGPROF_NO_GPROF=1 to skip it");
    }
    true
}

#[test]
fn everything_but_the_explanations_is_gprofs_layout() {
    if !gprof_installed() {
        return;
    }
    let fixtures = programs().join("../..");
    let cycle = programs().join("cycle-o2");
    let theirs_blocks = blocks(&|a| gprof(a, &cycle), "cycle");
    let our_blocks = blocks(&|a| ours(a, &cycle), "cycle");
    // (directory, image, profile) of every input tried.
    let mut inputs: Vec<(PathBuf, String, String)> = [
        ("cycle-o2", "cycle"),
        ("samename-o2", "samename"),
        ("recursion-pie", "recursion"),
        ("uncalled-nopie", "uncalled"),
    ]
    .iter()
    .map(|(d, i)| (programs().join(d), i.to_string(), "gmon.out".to_string()))
    .collect();
    // Hand-made files: several histogram records, none with bins, arcs only, BSD layouts,
    // 32-bit and big-endian images; and profiles that do not fit their image.
    let handmade = fixtures.join("handmade");
    for (image, gmon) in [
        ("img64", "gnu64le-multi.gmon"),
        ("img64", "gnu64le-hist0.gmon"),
        ("img64", "gnu64le-header-only.gmon"),
        ("img64", "oldbsd-64le.gmon"),
        ("img64", "oldbsd-64le-nobins.gmon"),
        ("img32", "bsd44-32le.gmon"),
        ("img64be", "gnu64be-multi.gmon"),
        ("img32be", "gnu32be-multi.gmon"),
    ] {
        inputs.push((handmade.clone(), image.into(), gmon.into()));
    }
    for gmon in ["rate0.gmon", "elsewhere.gmon", "outside.gmon"] {
        inputs.push((
            fixtures.join("warnings"),
            "../symspec/hide".into(),
            gmon.into(),
        ));
    }
    let mut failures = Vec::new();
    let mut compared = 0;
    for (dir, image, gmon) in &inputs {
        for args in [
            &[][..],
            &["-p"],
            &["-q"],
            &["-T"],
            &["-T", "-p"],
            &["-T", "-q"],
            &["-z"],
            &["-T", "-z"],
            &["-i"],
            &["-i", "-q"],
            &["-i", "-T", "-q"],
            &["-i", "-T", "-p"],
            &["-P"],
            &["-Q"],
            &["-pmain", "-qmain"],
        ] {
            // With no histogram and no arcs gprof's default is the execution counts, which
            // `-z` fills; that listing is not pkgprof's yet (it prints nothing there).
            if gmon.contains("header-only") && args.contains(&"-z") {
                continue;
            }
            let args = [args, &[image.as_str(), gmon.as_str()]].concat();
            let Some(theirs) = output("gprof", &args, dir) else {
                continue;
            };
            let theirs = masked(&theirs, &theirs_blocks);
            let ours = output(env!("CARGO_BIN_EXE_pkgprof"), &args, dir)
                .map(|o| masked(&o, &our_blocks))
                .unwrap_or_else(|| "(pkgprof failed where gprof did not)".into());
            compared += 1;
            if theirs != ours {
                failures.push(format!(
                    "{}: {args:?}\n--- gprof\n{theirs}\n--- pkgprof\n{ours}",
                    dir.display()
                ));
            }
        }
    }
    assert!(compared > 200, "only {compared} layouts compared");
    assert!(
        failures.is_empty(),
        "{} of {compared} layouts differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Stdout of `program args` run in `dir`, or `None` if it failed (as gprof does on inputs
/// that lack a listing asked for).
fn output(program: &str, args: &[&str], dir: &Path) -> Option<Vec<u8>> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    out.status.success().then_some(out.stdout)
}
