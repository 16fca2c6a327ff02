//! Every export read by the tool it is for: `go tool pprof` (top, traces, diff_base), inferno's
//! flame-graph renderer and xmllint, Graphviz `dot`, speedscope's JSON schema, the Firefox
//! Profiler's processed-format version, and our own JSON read back.
//!
//! The tools come from `.ci/run` (golang-go, graphviz, libxml2-utils; jsonschema from PyPI;
//! speedscope from npm). A missing tool fails the test with what to install;
//! `PKGPROF_NO_CONSUMERS=1` turns that into a loud notice instead.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use profile_export::{DiffOptions, ExportOptions, Format, export, export_diff, json};
use profile_model::{
    Arc, Frame, FrameId, Function, Label, LabelKey, LabelSetId, Object, Period, Profile,
    ProfileBuilder, Side, ValueKind,
};

/// A directory of its own for each test's files, removed when the test passes (kept for a
/// look when it fails).
struct Scratch(PathBuf);

impl Scratch {
    fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("pkgprof-export-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// Runs a consumer; `None` (with a notice) when it is missing and PKGPROF_NO_CONSUMERS is set.
fn run(program: &str, args: &[&str], install: &str) -> Option<String> {
    let output = match Command::new(program).args(args).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::env::var_os("PKGPROF_NO_CONSUMERS").is_some() {
                eprintln!("NOTICE: {program} is not installed; consumer check skipped ({install})");
                return None;
            }
            panic!("{program} is not installed: {install} (or PKGPROF_NO_CONSUMERS=1 to skip)");
        }
        Err(e) => panic!("cannot run {program}: {e}"),
    };
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Some(String::from_utf8(output.stdout).unwrap())
}

fn go_pprof(args: &[&str]) -> Option<String> {
    let mut all = vec!["tool", "pprof"];
    all.extend_from_slice(args);
    run("go", &all, "apt-get install golang-go")
}

fn write(profile: &Profile, format: Format, options: &ExportOptions, path: &Path) {
    let mut out = Vec::new();
    export(profile, format, options, &mut out).unwrap();
    std::fs::write(path, out).unwrap();
}

/// A seamless-style profile: pid 137 (threads 137 and 138) in user code and in the kernel
/// working for it, labelled as the listings label them, with boundary arcs, at 1 ms a sample.
fn seamless() -> Profile {
    let mut b = ProfileBuilder::new();
    b.value_type(ValueKind::SAMPLES);
    b.value_type(ValueKind::CPU_TIME);
    b.set_period(Period {
        kind: ValueKind::CPU_TIME,
        value: 1_000_000,
    });
    let prog = b.string("/usr/bin/prog");
    let prog = b.object(Object::new(prog).with_build_id(&[0xab, 0xcd, 0x01]));
    let libc = b.string("/lib/x86_64-linux-gnu/libc.so.6");
    let libc = b.object(Object::new(libc));
    let vmlinux = b.string("[kernel.kallsyms]");
    let vmlinux = b.object(Object::new(vmlinux));
    let (u, k) = (b.string("137u"), b.string("137k"));
    let frame = |b: &mut ProfileBuilder, name: &str, object, side| -> FrameId {
        let name = b.string(name);
        let label = if side == Side::Kernel { k } else { u };
        let f = b.function(
            Function::new(name, side)
                .with_object(object)
                .with_label(label),
        );
        b.frame(Frame::new(f))
    };
    let main = frame(&mut b, "main", prog, Side::User);
    let work = frame(&mut b, "work", prog, Side::User);
    let read_input = frame(&mut b, "read_input", prog, Side::User);
    let read = frame(&mut b, "read", libc, Side::User);
    let entry = frame(&mut b, "entry_SYSCALL_64", vmlinux, Side::Kernel);
    let ksys_read = frame(&mut b, "ksys_read", vmlinux, Side::Kernel);
    let comm = b.string("prog");
    let threads = [137, 138].map(|tid| {
        b.label_set(&[
            Label::number(LabelKey::Pid, 137),
            Label::number(LabelKey::Tid, tid),
            Label::text(LabelKey::Comm, comm),
        ])
    });
    let stacks: [(&[FrameId], i64, usize); 6] = [
        (&[main, work], 400, 0),
        (&[main], 20, 0),
        (&[main, read_input, read], 30, 0),
        (&[main, read_input, read, entry, ksys_read], 250, 0),
        (&[main, read_input, read, entry], 50, 1),
        (&[main, work], 100, 1),
    ];
    for (frames, n, thread) in stacks {
        let s = b.stack_of(frames).unwrap();
        for _ in 0..n {
            b.add_sample(s, threads[thread], &[1, 1_000_000]).unwrap();
        }
    }
    b.add_arc(Arc::new(read, entry, 300));
    b.build()
}

/// A gmon-style profile: self samples of single functions and counted arcs, no stacks.
fn mcount() -> Profile {
    let mut b = ProfileBuilder::new();
    b.value_type(ValueKind::SAMPLES);
    let frame = |b: &mut ProfileBuilder, name: &str| {
        let name = b.string(name);
        let f = b.function(Function::new(name, Side::User));
        b.frame(Frame::new(f))
    };
    let (main, a, bb, leaf) = (
        frame(&mut b, "main"),
        frame(&mut b, "a"),
        frame(&mut b, "b"),
        frame(&mut b, "leaf"),
    );
    for (f, n) in [(main, 5), (a, 20), (bb, 10), (leaf, 65)] {
        let s = b.stack(None, f);
        b.add_sample(s, LabelSetId::EMPTY, &[n]).unwrap();
    }
    for (from, to, n) in [(main, a, 3), (main, bb, 1), (a, leaf, 10), (bb, leaf, 30)] {
        b.add_arc(Arc::new(from, to, n));
    }
    b.build()
}

/// (name, self, inclusive) of every function with samples, in samples.
fn totals(p: &Profile) -> BTreeMap<String, (i64, i64)> {
    let vt = p.find_value_type(ValueKind::SAMPLES).unwrap();
    let t = p.function_totals(vt);
    p.functions()
        .filter(|&(f, _)| t.inclusive(f) > 0)
        .map(|(f, func)| {
            let name = match func.label {
                Some(l) => format!("{}:{}", p.string(l), p.function_name(f)),
                None => p.function_name(f).to_owned(),
            };
            (name, (t.self_value(f), t.inclusive(f)))
        })
        .collect()
}

/// The rows of `go tool pprof -top`: name → (flat, cum), and the total it states.
fn pprof_top(text: &str) -> (BTreeMap<String, (i64, i64)>, i64) {
    let total = text
        .lines()
        .find_map(|l| l.split(" of ").nth(1)?.strip_suffix(" total")?.parse().ok())
        .unwrap_or_else(|| panic!("no total in\n{text}"));
    let rows = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let name = fields[5..].join(" ");
            (
                name,
                (fields[0].parse().unwrap(), fields[3].parse().unwrap()),
            )
        })
        .collect();
    (rows, total)
}

#[test]
fn go_tool_pprof_reads_top_traces_and_totals() {
    let dir = scratch("pprof");
    for (name, profile) in [("seamless", seamless()), ("mcount", mcount())] {
        let path = dir.join(format!("{name}.pb.gz"));
        write(&profile, Format::Pprof, &ExportOptions::default(), &path);
        let path = path.to_str().unwrap();
        let Some(top) = go_pprof(&["-top", "-sample_index=samples", path]) else {
            return;
        };
        let (rows, total) = pprof_top(&top);
        let expected = totals(&stack_only(&profile));
        assert_eq!(total, expected.values().map(|v| v.0).sum::<i64>(), "{top}");
        assert_eq!(rows, expected, "{name}: {top}");
        let traces = go_pprof(&["-traces", path]).unwrap();
        if name == "seamless" {
            // The deepest stack, with its labels, innermost first.
            assert!(
                traces.contains("pid:  137") && traces.contains("comm:  prog"),
                "{traces}"
            );
            let kernel_stack = "250   137k:ksys_read\n             137k:entry_SYSCALL_64\n             137u:read\n             137u:read_input\n             137u:main";
            assert!(traces.contains(kernel_stack), "{traces}");
            // The default sample type is the first one, samples; cpu is in nanoseconds.
            let cpu = go_pprof(&["-top", "-sample_index=cpu", "-unit=ms", path]).unwrap();
            assert!(cpu.contains("850ms total"), "{cpu}");
        } else {
            assert!(
                traces.contains(profile_export::RECONSTRUCTED_NOTE),
                "{traces}"
            );
            // Arcs are edges: calls samples of callee <- caller.
            let calls = go_pprof(&["-traces", "-sample_index=calls", path]).unwrap();
            assert!(
                calls.contains("        30   leaf\n             b\n---"),
                "{calls}"
            );
        }
    }
}

#[test]
fn go_tool_pprof_diff_base_agrees_with_our_diff() {
    let dir = scratch("pprof-diff");
    let (base, new) = (mcount(), seamless_slower());
    let base = stack_only(&base);
    let (b, n, d) = (
        dir.join("base.pb.gz"),
        dir.join("new.pb.gz"),
        dir.join("diff.pb.gz"),
    );
    write(&base, Format::Pprof, &ExportOptions::default(), &b);
    write(&new, Format::Pprof, &ExportOptions::default(), &n);
    let mut out = Vec::new();
    export_diff(
        &base,
        &new,
        Format::Pprof,
        &DiffOptions::default(),
        &mut out,
    )
    .unwrap();
    std::fs::write(&d, out).unwrap();
    let (b, n, d) = (
        b.to_str().unwrap(),
        n.to_str().unwrap(),
        d.to_str().unwrap(),
    );
    let Some(theirs) = go_pprof(&[
        "-top",
        "-sample_index=samples",
        &format!("-diff_base={b}"),
        n,
    ]) else {
        return;
    };
    let ours = go_pprof(&["-top", "-sample_index=samples", d]).unwrap();
    // Same rows and total; only the header's file names differ.
    let body = |t: &str| {
        t.lines()
            .skip_while(|l| !l.starts_with("Showing"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&ours), body(&theirs));
    assert!(body(&ours).contains("leaf"), "{ours}");
}

/// The mcount profile with stacks that make `leaf` twice as slow.
fn seamless_slower() -> Profile {
    let mut b = ProfileBuilder::from_profile(stack_only(&mcount()));
    let mut frames = Vec::new();
    for name in ["main", "b", "leaf"] {
        let n = b.string(name);
        let f = b.function(Function::new(n, Side::User));
        frames.push(b.frame(Frame::new(f)));
    }
    let s = b.stack_of(&frames).unwrap();
    b.add_sample(s, LabelSetId::EMPTY, &[65]).unwrap();
    b.build()
}

/// `p` with its stacks reconstructed, as a plain stack profile (exported and read back).
fn stack_only(p: &Profile) -> Profile {
    let mut text = Vec::new();
    export(p, Format::Folded, &ExportOptions::default(), &mut text).unwrap();
    let mut b = ProfileBuilder::new();
    b.value_type(ValueKind::SAMPLES);
    for line in String::from_utf8(text)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let frames: Vec<FrameId> = stack
            .split(';')
            .map(|name| {
                let n = b.string(name);
                let f = b.function(Function::new(n, Side::User));
                b.frame(Frame::new(f))
            })
            .collect();
        let s = b.stack_of(&frames).unwrap();
        b.add_sample(s, LabelSetId::EMPTY, &[n.parse().unwrap()])
            .unwrap();
    }
    b.build()
}

/// The total an inferno flame graph states: `all (1,234 samples, 100%)`.
fn svg_total(svg: &str) -> i64 {
    let start = svg.find("<title>all (").expect("an all frame") + "<title>all (".len();
    let number: String = svg[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    number.parse().unwrap()
}

#[test]
fn flame_graphs_render_and_are_valid_xml() {
    let dir = scratch("svg");
    for (name, profile) in [("seamless", seamless()), ("mcount", mcount())] {
        let expected: i64 = totals(&profile).values().map(|v| v.0).sum();
        // Our folded stacks, drawn by inferno's renderer as inferno-flamegraph would.
        let folded = dir.join(format!("{name}.folded"));
        write(&profile, Format::Folded, &ExportOptions::default(), &folded);
        let mut svg = Vec::new();
        let mut options = inferno::flamegraph::Options::default();
        inferno::flamegraph::from_files(&mut options, &[folded], &mut svg).unwrap();
        assert_eq!(svg_total(&String::from_utf8(svg).unwrap()), expected);
        // Our own SVG, straight and inverted.
        for inverted in [false, true] {
            let path = dir.join(format!("{name}-{inverted}.svg"));
            let mut options = ExportOptions::default();
            options.inverted = inverted;
            write(&profile, Format::FlameGraph, &options, &path);
            let svg = std::fs::read_to_string(&path).unwrap();
            assert_eq!(svg_total(&svg), expected);
            if name == "seamless" {
                // Kernel frames are printed without their colouring annotation.
                assert!(svg.contains("137k:ksys_read (250 samples") && !svg.contains("_[k]"));
            }
            if run(
                "xmllint",
                &["--noout", path.to_str().unwrap()],
                "apt-get install libxml2-utils",
            )
            .is_none()
            {
                return;
            }
        }
    }
}

#[test]
fn graphviz_renders_the_dot_graph() {
    let dir = scratch("dot");
    for (name, profile) in [("seamless", seamless()), ("mcount", mcount())] {
        let dot = dir.join(format!("{name}.dot"));
        write(&profile, Format::Dot, &ExportOptions::default(), &dot);
        let text = std::fs::read_to_string(&dot).unwrap();
        if name == "mcount" {
            // leaf: 65 of 100 samples, all its own, called 40 times; b → leaf carries 3/4.
            assert!(
                text.contains("label=\"leaf\\n65.00%\\n(65.00%)\\n40×\""),
                "{text}"
            );
            assert!(text.contains("label=\"49.00%\\n30×\""), "{text}");
        }
        let svg = dir.join(format!("{name}.svg"));
        let Some(_) = run(
            "dot",
            &["-Tsvg", "-o", svg.to_str().unwrap(), dot.to_str().unwrap()],
            "apt-get install graphviz",
        ) else {
            return;
        };
        let svg = std::fs::read_to_string(&svg).unwrap();
        assert!(svg.contains("leaf") || svg.contains("ksys_read"));
    }
}

/// Where `.ci/run` installs speedscope's package (or PKGPROF_SPEEDSCOPE_SCHEMA).
fn speedscope_schema() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PKGPROF_SPEEDSCOPE_SCHEMA") {
        return Some(p.into());
    }
    let home = std::env::var_os("HOME")?;
    let p = Path::new(&home)
        .join(".cache/pkgprof-ci/npm/node_modules/speedscope/dist/release/file-format-schema.json");
    p.exists().then_some(p)
}

#[test]
fn speedscope_files_match_its_schema() {
    let dir = scratch("speedscope");
    let Some(schema) = speedscope_schema() else {
        if std::env::var_os("PKGPROF_NO_CONSUMERS").is_some() {
            eprintln!("NOTICE: speedscope's schema is not installed; check skipped");
            return;
        }
        panic!(
            "speedscope's schema is missing: run .ci/run (npm install speedscope into ~/.cache/pkgprof-ci/npm) or set PKGPROF_SPEEDSCOPE_SCHEMA"
        );
    };
    for (name, profile) in [("seamless", seamless()), ("mcount", mcount())] {
        let path = dir.join(format!("{name}.speedscope.json"));
        write(
            &profile,
            Format::Speedscope,
            &ExportOptions::default(),
            &path,
        );
        let check = "import json,jsonschema,sys\n\
             s=json.load(open(sys.argv[1]))\n\
             d=json.load(open(sys.argv[2]))\n\
             jsonschema.validate(d, {**s, '$ref': '#/definitions/FileFormat.File'})\n\
             print(len(d['profiles']), sum(sum(p['weights']) for p in d['profiles']))";
        let Some(out) = run(
            "python3",
            &[
                "-c",
                check,
                schema.to_str().unwrap(),
                path.to_str().unwrap(),
            ],
            "pip install jsonschema",
        ) else {
            return;
        };
        let expected: i64 = totals(&profile).values().map(|v| v.0).sum();
        let threads = if name == "seamless" { 2 } else { 1 };
        assert_eq!(out.trim(), format!("{threads} {expected}"));
    }
}

#[test]
fn firefox_profiles_have_the_processed_format_and_the_samples() {
    let profile = seamless();
    let mut out = Vec::new();
    export(
        &profile,
        Format::Firefox,
        &ExportOptions::default(),
        &mut out,
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    // fxprof-processed-profile 0.8 writes processed version 55; the Firefox Profiler upgrades
    // older processed versions when it loads them.
    assert_eq!(v["meta"]["preprocessedProfileVersion"], 55);
    let categories: Vec<&str> = v["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(categories.contains(&"Kernel") && categories.contains(&"User"));
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    let weights: i64 = threads
        .iter()
        .map(|t| {
            let samples = &t["samples"];
            let n = samples["length"].as_i64().unwrap();
            match samples["weight"].as_array() {
                Some(w) => w.iter().map(|x| x.as_i64().unwrap()).sum(),
                None => n,
            }
        })
        .sum();
    assert_eq!(weights, 850);
}

#[test]
fn json_reads_back_into_the_same_totals() {
    for profile in [seamless(), mcount()] {
        let mut out = Vec::new();
        json::write(&profile, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            (v["format"].as_str(), v["version"].as_u64()),
            (Some("pkgprof-profile"), Some(1))
        );
        // Self samples per function name, recomputed from the JSON tables alone.
        let functions = v["functions"].as_array().unwrap();
        let frames = v["frames"].as_array().unwrap();
        let stacks = v["stacks"].as_array().unwrap();
        let mut from_json: BTreeMap<String, i64> = BTreeMap::new();
        for s in v["samples"].as_array().unwrap() {
            let stack = &stacks[s["stack"].as_u64().unwrap() as usize];
            let frame = &frames[stack["frame"].as_u64().unwrap() as usize];
            let f = &functions[frame["function"].as_u64().unwrap() as usize];
            let name = match f["label"].as_str() {
                Some(l) => format!("{l}:{}", f["name"].as_str().unwrap()),
                None => f["name"].as_str().unwrap().to_owned(),
            };
            *from_json.entry(name).or_default() += s["values"][0].as_i64().unwrap();
        }
        let expected: BTreeMap<String, i64> = totals(&profile)
            .into_iter()
            .filter(|(_, (s, _))| *s > 0)
            .map(|(n, (s, _))| (n, s))
            .collect();
        assert_eq!(from_json, expected);
        assert_eq!(v["arcs"].as_array().unwrap().len(), profile.arcs().len());
    }
}
