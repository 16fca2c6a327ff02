//! The measurement-info file: random infos round trip, every info file among the fixtures
//! round-trips byte for byte, unknown content survives, versions, and bad lines named by line
//! and offset (the unit tests in src/labeled/info/ have the rest).

#[path = "../../../fuzz/src/info.rs"]
mod info_target;

use std::fs;
use std::path::Path;

use gmon_format::{
    ArcCounts, BoundaryKind, Comm, CounterSource, ErrorKind, Field, Mapping, MeasurementInfo,
    Rename, SampleRate, Section,
};

mod common;

use common::Rng;

fn info_bytes(info: &MeasurementInfo) -> Vec<u8> {
    let mut out = Vec::new();
    info.write(&mut out).expect("writes");
    out
}

fn random_info(rng: &mut Rng) -> MeasurementInfo {
    let mut info = MeasurementInfo::default();
    let text = |rng: &mut Rng| String::from_utf8_lossy(&rng.bytes(12)).into_owned();
    let p = &mut info.process;
    p.pid = rng.next() as u32;
    p.ppid = rng.maybe(|r| r.next() as u32);
    p.comm = rng.maybe(|r| Comm::new(r.bytes(20)).expect("short"));
    p.instances = rng.maybe(Rng::next);
    p.argv = rng.maybe(|r| (0..r.below(4)).map(|_| r.bytes(10)).collect());
    p.exe = rng.maybe(|r| r.bytes(30));
    p.exe_build_id = rng.maybe(|r| {
        let mut b = r.bytes(20);
        b.push(1);
        b
    });
    p.start_realtime_ns = rng.maybe(Rng::next);
    p.end_monotonic_ns = rng.maybe(Rng::next);
    if rng.chance(4) {
        p.extra.push(Field::new("future-key", "[1, 2] \"x\""));
    }
    let s = &mut info.sampling;
    s.event = rng.maybe(text);
    s.rate = rng.maybe(|r| {
        if r.chance(2) {
            SampleRate::Frequency(r.next())
        } else {
            SampleRate::Period(r.next())
        }
    });
    s.period_unit = rng.maybe(text);
    s.arcs = rng.maybe(|r| {
        if r.chance(2) {
            ArcCounts::Calls
        } else {
            ArcCounts::SampledEdges
        }
    });
    s.lost_samples = rng.maybe(Rng::next);
    s.lost_samples_by_cpu = (0..rng.below(3))
        .map(|_| (rng.below(300) as u32, rng.next()))
        .collect();
    s.truncated_stacks = rng.maybe(Rng::next);
    s.truncated_callchain_limit = rng.maybe(Rng::next);
    s.stack_size = rng.maybe(Rng::next);
    info.kernel.release = rng.maybe(text);
    info.kernel.symbols_file = rng.maybe(|r| format!("sym{}", r.below(100)));
    info.counters.major_faults = rng.maybe(Rng::next);
    info.counters.source = rng.maybe(|r| CounterSource::ALL[r.below(2) as usize]);
    info.counters.taskstats_refused = rng.chance(3);
    info.counters.perf_cpu_migrations = rng.maybe(Rng::next);
    for kind in BoundaryKind::ALL {
        if rng.chance(2) {
            info.boundary.entries.insert(kind, rng.next());
        }
    }
    info.boundary.kernel_only = rng.maybe(Rng::next);
    info.boundary.stacks_file = rng.maybe(|r| format!("gmon.out.{}s.x", r.below(100)));
    for _ in 0..rng.below(3) {
        let comm = Comm::new(rng.bytes(16)).expect("short");
        info.renames
            .push(Rename::new(rng.next(), rng.next() as u32, comm));
    }
    for _ in 0..rng.below(4) {
        let mut m = Mapping::new(rng.next(), rng.next());
        m.path = rng.maybe(|r| r.bytes(30));
        m.load_bias = rng.maybe(Rng::next);
        m.unmapped_ns = rng.maybe(Rng::next);
        info.mappings.push(m);
    }
    if rng.chance(4) {
        info.extra_sections.push(Section {
            name: "later".into(),
            fields: vec![Field::new("k", "v = w")],
        });
    }
    info
}

/// Every info file among the fixtures (the collector's keys included) reads and is written
/// back byte for byte.
#[test]
fn every_info_fixture_round_trips_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut stack = vec![root];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let data = fs::read(&path).expect("fixture");
            if !data.starts_with(b"pkgprof-info ") {
                continue;
            }
            let info =
                MeasurementInfo::parse(&data).unwrap_or_else(|e| panic!("{}", e.with_path(&path)));
            assert!(info_bytes(&info) == data, "{} changed", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 8, "only {seen} info fixtures");
}

#[test]
fn random_infos_round_trip() {
    let mut rng = Rng(7);
    for case in 0..3_000 {
        let info = random_info(&mut rng);
        let text = info_bytes(&info);
        let back = MeasurementInfo::parse(&text)
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{}", String::from_utf8_lossy(&text)));
        assert_eq!(back, info, "case {case}");
        info_target::run(&text);
    }
}

#[test]
fn unknown_fields_survive() {
    let text = "pkgprof-info 1.1\n\n[process]\npid = 1\nfuture-key = {nested = true}\n\n\
                [kernel]\nrelease = \"6.1\"\nmodules = 3\n\n[cgroup]\npath = \"/user.slice\"\n\n\
                [end]\n";
    let info = MeasurementInfo::parse(text.as_bytes()).expect("parses");
    assert_eq!(
        info.process.extra,
        [Field::new("future-key", "{nested = true}")]
    );
    assert_eq!(info.kernel.extra, [Field::new("modules", "3")]);
    assert_eq!(info.extra_sections[0].name, "cgroup");
    assert_eq!(String::from_utf8_lossy(&info_bytes(&info)), text);
}

#[test]
fn newer_major_refused_newer_minor_accepted() {
    let err = MeasurementInfo::parse(b"pkgprof-info 2.0\n\n[process]\npid = 1\n").expect_err("2.0");
    assert!(matches!(
        err.kind(),
        ErrorKind::UnsupportedInfoVersion { supported: 1, .. }
    ));
    assert_eq!(
        err.to_string(),
        "measurement-info version 2.0 is newer than this reader (major version 1); upgrade \
         pkgprof (at offset 0xd)"
    );
    let text = "pkgprof-info 1.4\n\n[process]\npid = 1\nnew = 2\n\n[end]\n";
    let info = MeasurementInfo::parse(text.as_bytes()).expect("1.4");
    assert_eq!(info.version(), (1, 4));
    assert_eq!(String::from_utf8_lossy(&info_bytes(&info)), text);
}

#[test]
fn malformed_lines_name_line_and_offset() {
    // One of each kind of bad line; the unit tests in src/labeled/info/ have the rest.
    for (text, line, offset) in [
        ("pkgprof-info 1.0\n[process]\npid = 1\nwhat\n", 4, 39),
        ("pkgprof-info 1.0\n[process]\npid = 1\n[open\n", 4, 35),
        ("pkgprof-info 1.0\n[process]\npid = 1\nppid = one\n", 4, 42),
        ("pkgprof-info 1.0\n[process]\npid = 1\nexe = \"x\n", 4, 41),
        (
            "pkgprof-info 1.0\n[process]\npid = 1\nppid = 1\nppid = 2\n",
            5,
            44,
        ),
        ("pkgprof-info 1.0\nppid = 1\n", 2, 17),
    ] {
        let err = MeasurementInfo::parse(text.as_bytes()).expect_err(text);
        let ErrorKind::Info { line: l, .. } = err.kind() else {
            panic!("{text:?}: {err:?}")
        };
        assert_eq!((*l, err.offset()), (line, Some(offset)), "{text:?}: {err}");
    }
}
