//! pkgprof against special files and blow-up inputs (issue 8): every input it reads replaced
//! by a FIFO, a device, a directory or a huge sparse file, and the small inputs that used to
//! cost gigabytes. Each run must end within seconds with a clear message (or, for a file a
//! measurement can do without, a warning), under 64 MiB of peak memory.
//!
//! `benches/peak-memory.sh` runs the same kinds with a release build and prints the figures.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BUDGET_KIB: u64 = 64 * 1024;

/// A scratch directory, removed when the test passes.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("pkgprof-hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// One pkgprof run: exit code, stderr, peak RSS in KiB. Panics if it runs over 20 s.
#[allow(clippy::zombie_processes, reason = "reaped by wait4, for its rusage")]
fn pkgprof(args: &[&std::ffi::OsStr]) -> (i32, String, u64) {
    let err = tempfile_path();
    let child = Command::new(env!("CARGO_BIN_EXE_pkgprof"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let pid = child.id() as i32;
    let (status, rss) = loop {
        let mut status = 0;
        // Safety: an all-zero rusage is valid to be overwritten.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // Safety: polling our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage.ru_maxrss as u64);
        }
        if started.elapsed() > Duration::from_secs(20) {
            // Safety: killing our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("pkgprof {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = std::fs::read_to_string(&err).unwrap();
    let _ = std::fs::remove_file(&err);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    (code, stderr, rss)
}

fn tempfile_path() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    std::env::temp_dir().join(format!(
        "pkgprof-hostile-stderr-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

fn program() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/programs/out/cycle-pie")
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // Safety: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A GNU gmon.out header (version 1).
fn gmon_header() -> Vec<u8> {
    let mut h = b"gmon".to_vec();
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&[0; 12]);
    h
}

/// A histogram record of `bins` bins over [low, high), each counting 1.
fn histogram(low: u64, high: u64, bins: u32) -> Vec<u8> {
    let mut r = vec![0u8];
    r.extend_from_slice(&low.to_le_bytes());
    r.extend_from_slice(&high.to_le_bytes());
    r.extend_from_slice(&bins.to_le_bytes());
    r.extend_from_slice(&100u32.to_le_bytes());
    r.extend_from_slice(b"seconds\0\0\0\0\0\0\0\0s");
    for _ in 0..bins {
        r.extend_from_slice(&1u16.to_le_bytes());
    }
    r
}

const KERNEL_LOW: u64 = 0xffff_ffff_8000_0000;

/// A measurement directory of process 7: info file, user and kernel profiles and a kallsyms
/// snapshot of `symbols` functions spread over 1 GiB.
fn measurement(dir: &Path, kernel_bins: u32, symbols: u64, mappings: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("gmon.out.7.x"),
        format!(
            "pkgprof-info 1.1\n\n[process]\npid = 7\ncomm = \"x\"\n\n[kernel]\n\
             symbols-file = \"kallsyms.00000001\"\n{mappings}\n[end]\n"
        ),
    )
    .unwrap();
    let mut k = gmon_header();
    if kernel_bins > 0 {
        k.extend(histogram(KERNEL_LOW, KERNEL_LOW + (1 << 30), kernel_bins));
    }
    std::fs::write(dir.join("gmon.out.7k.x"), k).unwrap();
    let mut u = gmon_header();
    u.extend(histogram(0x1000, 0x7000, 3));
    std::fs::write(dir.join("gmon.out.7u.x"), u).unwrap();
    let mut f =
        std::io::BufWriter::new(std::fs::File::create(dir.join("kallsyms.00000001")).unwrap());
    let step = (1u64 << 30) / symbols.max(1);
    for i in 0..symbols {
        writeln!(f, "{:016x} T function_number_{i}", KERNEL_LOW + i * step).unwrap();
    }
    f.flush().unwrap();
}

#[test]
fn special_files_as_every_pkgprof_input_are_refused_quickly_and_cheaply() {
    let s = Scratch::new("special");
    let w = &s.0;
    let prog = program();
    let (image, gmon) = (prog.join("cycle"), prog.join("gmon.out"));
    mkfifo(&w.join("fifo"));
    std::fs::create_dir(w.join("dir")).unwrap();
    let sparse = std::fs::File::create(w.join("sparse")).unwrap();
    sparse.set_len(1500 << 20).unwrap();
    let specials = [
        w.join("fifo"),
        PathBuf::from("/dev/zero"),
        PathBuf::from("/dev/urandom"),
        w.join("dir"),
        w.join("sparse"),
    ];
    for special in &specials {
        let at = format!("@{}", special.display());
        for args in [
            vec!["-b".as_ref(), special.as_os_str(), gmon.as_os_str()],
            vec!["-b".as_ref(), image.as_os_str(), special.as_os_str()],
            vec![
                "--dump".as_ref(),
                "--dump-layout=64le".as_ref(),
                special.as_os_str(),
            ],
            vec![
                at.as_ref(),
                "-b".as_ref(),
                image.as_os_str(),
                gmon.as_os_str(),
            ],
        ] {
            let (code, err, rss) = pkgprof(&args);
            assert_eq!(code, 1, "{args:?}: {err}");
            assert!(
                err.contains(special.to_str().unwrap()),
                "{args:?}: the message names the file: {err}"
            );
            assert!(rss < BUDGET_KIB, "{args:?}: {rss} KiB");
        }
    }
    // An -A source that is a FIFO (found by its base name through -I) is passed over.
    std::fs::create_dir(w.join("src")).unwrap();
    mkfifo(&w.join("src/cycle.c"));
    let src = w.join("src");
    let (code, err, rss) = pkgprof(&[
        "-A".as_ref(),
        "-I".as_ref(),
        src.as_os_str(),
        image.as_os_str(),
        gmon.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(rss < BUDGET_KIB, "-A: {rss} KiB");
    // Measurement files and the objects an info file names.
    let objects = format!(
        "\n[mapping]\nstart = 0x1000\nend = 0x2000\npath = \"{}\"\n\
         \n[mapping]\nstart = 0x3000\nend = 0x4000\npath = \"/dev/zero\"\n\
         \n[mapping]\nstart = 0x5000\nend = 0x6000\npath = \"../../../../etc/passwd\"\n",
        w.join("fifo").display()
    );
    for what in ["objects", "kallsyms", "gmon", "info"] {
        let d = w.join(format!("m-{what}"));
        measurement(&d, 0, 16, &objects);
        let swap = |name: &str, with: &Path| {
            std::fs::remove_file(d.join(name)).unwrap();
            std::os::unix::fs::symlink(with, d.join(name)).unwrap();
        };
        match what {
            "kallsyms" => {
                std::fs::remove_file(d.join("kallsyms.00000001")).unwrap();
                mkfifo(&d.join("kallsyms.00000001"));
            }
            "gmon" => swap("gmon.out.7u.x", Path::new("/dev/zero")),
            "info" => swap("gmon.out.7.x", Path::new("/dev/urandom")),
            _ => {}
        }
        let (code, err, rss) =
            pkgprof(&["-b".as_ref(), "--pid".as_ref(), "7".as_ref(), d.as_os_str()]);
        assert!(rss < BUDGET_KIB, "{what}: {rss} KiB");
        match what {
            "objects" => {
                assert_eq!(code, 0, "{err}");
                assert!(err.contains("/dev/zero"), "{err}");
                assert!(err.contains("passwd"), "{err}");
            }
            "kallsyms" => {
                assert_eq!(code, 0, "{err}");
                assert!(err.contains("kallsyms.00000001"), "{err}");
                assert!(err.contains("kernel symbols are unavailable"), "{err}");
            }
            // A profile's name on a special file: passed over, and said so.
            _ => {
                let name = if what == "gmon" {
                    "gmon.out.7u.x"
                } else {
                    "gmon.out.7.x"
                };
                assert_eq!(code, 0, "{what}: {err}");
                assert!(
                    err.contains(&format!("{name}: not read: not a regular file")),
                    "{what}: {err}"
                );
            }
        }
    }
}

#[test]
fn blow_up_inputs_stay_under_64_mib() {
    let s = Scratch::new("blowup");
    let w = &s.0;
    let prog = program();
    // gprof clamps -w: a huge width prints the normal listing.
    let (code, err, rss) = pkgprof(&[
        "-b".as_ref(),
        "-w".as_ref(),
        "999999999999".as_ref(),
        prog.join("cycle").as_os_str(),
        prog.join("gmon.out").as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(rss < BUDGET_KIB, "-w: {rss} KiB");
    // A 2 MiB kernel profile of 1M sampled bins over 1 GiB (it cost 5 GB), and a 1M-line
    // kallsyms snapshot (278 MiB).
    for (tag, bins, symbols) in [("bins", 1u32 << 20, 1024u64), ("kallsyms", 0, 1 << 20)] {
        let d = w.join(tag);
        measurement(&d, bins, symbols, "");
        let (code, err, rss) =
            pkgprof(&["-b".as_ref(), "--pid".as_ref(), "7".as_ref(), d.as_os_str()]);
        assert_eq!(code, 0, "{tag}: {err}");
        assert!(rss < BUDGET_KIB, "{tag}: {rss} KiB");
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// A manifest naming a large file another user owns (so it is not mapped), with its real size
/// or a wrong one: the check reads it in a fixed buffer, or not at all. Checking copied it
/// whole (3 GiB and 16 s for a sparse file of 3 GiB).
#[test]
fn a_manifest_listing_a_huge_file_is_checked_in_little_memory() {
    let s = Scratch::new("manifest");
    let d = s.0.join("m");
    measurement(&d, 0, 16, "");
    let mut files = Vec::new();
    for name in [
        "gmon.out.7.x",
        "gmon.out.7k.x",
        "gmon.out.7u.x",
        "kallsyms.00000001",
    ] {
        files.push(gmon_format::ManifestEntry::of(
            name,
            &std::fs::read(d.join(name)).unwrap(),
        ));
    }
    // Process 8's profile: 100 MiB written (a sparse one is refused unread, as the next test
    // shows), owned by nobody, listed with a checksum it does not have.
    let big = d.join("gmon.out.8u.y");
    let mut f = std::fs::File::create(&big).unwrap();
    std::io::copy(&mut std::io::repeat(0).take(100 << 20), &mut f).unwrap();
    f.sync_all().unwrap();
    for (size, listed) in [(100u64 << 20, 100u64 << 20), (100 << 20, 3 << 30)] {
        assert_eq!(f.metadata().unwrap().len(), size);
        std::os::unix::fs::chown(&big, Some(65534), Some(65534)).unwrap();
        let mut manifest = files.clone();
        manifest.push(gmon_format::ManifestEntry {
            name: "gmon.out.8u.y".into(),
            size: listed,
            sha256: [0; 32],
        });
        let mut text = Vec::new();
        gmon_format::Manifest { files: manifest }
            .write(&mut text)
            .unwrap();
        std::fs::write(d.join("manifest.sha256"), text).unwrap();
        let (code, err, rss) = pkgprof(&["--system".as_ref(), d.as_os_str()]);
        assert_eq!(code, 1, "{listed}: {err}");
        let why = if size == listed {
            "its checksum differs from the manifest's"
        } else {
            "bytes, but the manifest lists"
        };
        assert!(err.contains("gmon.out.8u.y") && err.contains(why), "{err}");
        assert!(rss < BUDGET_KIB, "{listed}: {rss} KiB");
    }
}

/// A continuous directory whose index is huge (sparse), owned by another user or by the
/// reader: refused unread, not copied (it cost `pkgprof --apps` 0.9 and 1.8 GiB).
#[test]
fn a_huge_continuous_index_is_refused_unread() {
    let s = Scratch::new("index");
    let d = s.0.join("c");
    std::fs::create_dir(&d).unwrap();
    let index = d.join("index");
    let mut head = b"# pkgprof-continuous 2\n".to_vec();
    head.resize(4096, b'\n');
    std::fs::write(&index, head).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap()
        .set_len(900 << 20)
        .unwrap();
    for owner in [65534, 0] {
        std::os::unix::fs::chown(&index, Some(owner), None).unwrap();
        let (code, err, rss) = pkgprof(&["--apps".as_ref(), d.as_os_str()]);
        assert_eq!(code, 1, "{owner}: {err}");
        assert!(
            err.contains("index") && err.contains("more than the limit"),
            "{err}"
        );
        assert!(rss < BUDGET_KIB, "{owner}: {rss} KiB");
    }
}

/// A manifest of 200,000 names (22 MiB), none of them there: checked in linear time, and the
/// message lists the first problems and counts the others. Each name was looked up in all the
/// names before it (57 s for this one, hours for one at the 64 MiB limit), and every problem
/// was printed.
#[test]
fn a_manifest_of_many_names_is_checked_in_linear_time() {
    let s = Scratch::new("names");
    let d = s.0.join("m");
    measurement(&d, 0, 16, "");
    // Written line by line: a test that held it in memory would lend its size to the peak
    // memory of the pkgprof runs that other tests start meanwhile (vfork shares it).
    let mut m = std::io::BufWriter::new(std::fs::File::create(d.join("manifest.sha256")).unwrap());
    writeln!(m, "# pkgprof-manifest 1.0").unwrap();
    for i in 0..200_000 {
        let name = format!("gmon.out.{i}k.y");
        writeln!(m, "# size 0 {name}\n{}  {name}", "0".repeat(64)).unwrap();
    }
    writeln!(m, "# end 200000").unwrap();
    m.flush().unwrap();
    drop(m);
    let started = Instant::now();
    let (code, err, rss) = pkgprof(&["-b".as_ref(), "--pid".as_ref(), "7".as_ref(), d.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("gmon.out.0k.y: missing"), "{err}");
    // 199,980 more missing, and the 4 files of the directory that are not listed.
    assert!(
        err.contains("and 199984 more files missing, changed or not listed"),
        "{err}"
    );
    assert!(err.lines().count() < 30, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(rss < BUDGET_KIB, "{rss} KiB");
}

/// Sparse measurement files: a kernel profile whose histogram claims 4 billion bins, 8 GiB of
/// holes after its header, read without a manifest and listed in one with its true size, and
/// a snapshot of 20 GiB of holes listed in a manifest. Refused unread: the profile cost
/// `pkgprof --pid` 5 GiB resident and over 30 s, hashing the snapshot 110 s.
#[test]
fn sparse_measurement_files_are_refused_unread() {
    let s = Scratch::new("sparse");
    let d = s.0.join("m");
    measurement(&d, 0, 16, "");
    let mut k = gmon_header();
    let bins = 0xffff_fff0u32;
    let mut h = histogram(KERNEL_LOW, KERNEL_LOW + (1 << 30), 0);
    h[17..21].copy_from_slice(&bins.to_le_bytes());
    k.extend(h);
    let kernel = d.join("gmon.out.7k.x");
    std::fs::write(&kernel, &k).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&kernel)
        .unwrap();
    f.set_len(k.len() as u64 + 2 * u64::from(bins)).unwrap();
    let args = |d: &Path| -> Vec<std::ffi::OsString> {
        vec!["-b".into(), "--pid".into(), "7".into(), d.into()]
    };
    let run = |d: &Path| {
        let a = args(d);
        let a: Vec<&std::ffi::OsStr> = a.iter().map(|a| a.as_os_str()).collect();
        pkgprof(&a)
    };
    let (code, err, rss) = run(&d);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("gmon.out.7k.x: is a sparse file of"), "{err}");
    assert!(rss < BUDGET_KIB, "{rss} KiB");
    let mut files = Vec::new();
    for name in ["gmon.out.7.x", "gmon.out.7u.x", "kallsyms.00000001"] {
        files.push(gmon_format::ManifestEntry::of(
            name,
            &std::fs::read(d.join(name)).unwrap(),
        ));
    }
    let snapshot = d.join("kallsyms.00000002");
    std::fs::File::create(&snapshot)
        .unwrap()
        .set_len(20 << 30)
        .unwrap();
    for (name, size) in [
        ("gmon.out.7k.x", f.metadata().unwrap().len()),
        ("kallsyms.00000002", 20 << 30),
    ] {
        files.push(gmon_format::ManifestEntry {
            name: name.into(),
            size,
            sha256: [0; 32],
        });
    }
    let mut text = Vec::new();
    gmon_format::Manifest { files }.write(&mut text).unwrap();
    std::fs::write(d.join("manifest.sha256"), text).unwrap();
    let started = Instant::now();
    let (code, err, rss) = run(&d);
    assert_eq!(code, 1, "{err}");
    for name in ["gmon.out.7k.x", "kallsyms.00000002"] {
        assert!(err.contains(&format!("{name}: is a sparse file")), "{err}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(rss < BUDGET_KIB, "{rss} KiB");
}

/// A perf.data header (no attributes, no data) whose feature sections are `sections`, each an
/// offset and a size, at `path`.
fn perf_data_with_features(path: &Path, sections: &[(u64, u64)]) {
    let mut h = b"PERFILE2".to_vec();
    for v in [104u64, 136, 104, 0, 104, 0, 0, 0] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    // Features 1, 2, 3...: one bit each, as many as sections.
    let mut flags = [0u8; 32];
    for i in 1..=sections.len() {
        flags[i / 8] |= 1 << (i % 8);
    }
    h.extend_from_slice(&flags);
    for &(offset, size) in sections {
        h.extend_from_slice(&offset.to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
    }
    std::fs::write(path, h).unwrap();
}

/// perf.data whose feature sections claim more than the file holds: 1 GiB of holes (refused,
/// a perf.data has none), and two sections claiming one written range of 160 MiB (refused past
/// 256 MiB claimed in all). Each section was read whole: eleven of 4 GiB over one sparse range
/// of a 28 KiB file took pkgprof and root `pkgmon --import` to 23 GiB, then the kernel killed
/// them.
#[test]
fn perf_data_feature_sections_cost_no_more_than_the_file_holds() {
    let s = Scratch::new("perf-features");
    let sparse = s.0.join("sparse.data");
    perf_data_with_features(&sparse, &[(4096, 1 << 30)]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&sparse)
        .unwrap()
        .set_len(4096 + (1 << 30))
        .unwrap();
    let (code, err, rss) = pkgprof(&["-b".as_ref(), "--system".as_ref(), sparse.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is a sparse file"), "{err}");
    assert!(rss < BUDGET_KIB, "{rss} KiB");
    let dense = s.0.join("dense.data");
    perf_data_with_features(&dense, &[(4096, 160 << 20), (4096, 160 << 20)]);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&dense)
        .unwrap();
    let len = f.metadata().unwrap().len();
    std::io::copy(
        &mut std::io::repeat(0).take(4096 - len + (160 << 20)),
        &mut f,
    )
    .unwrap();
    drop(f);
    let (code, err, rss) = pkgprof(&["-b".as_ref(), "--system".as_ref(), dense.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the feature sections claim 335544320 bytes together"),
        "{err}"
    );
    assert!(rss < BUDGET_KIB, "{rss} KiB");
}

/// A perf.data of one cpu-clock attribute (samples carry ip, pid and tid, time) whose records
/// are two samples around one PERF_RECORD_COMPRESSED record of `inflated` bytes 0x08: a zstd
/// frame of RLE blocks, 4 bytes per 128 KiB, which inflate to records of 0x0808 bytes of type
/// 0x08080808 (a user type the import passes over).
fn perf_data_compressed(path: &Path, inflated: usize) {
    fn record(type_: u32, body: &[u8]) -> Vec<u8> {
        let mut r = type_.to_le_bytes().to_vec();
        r.extend(0u16.to_le_bytes());
        r.extend(u16::try_from(8 + body.len()).unwrap().to_le_bytes());
        r.extend(body);
        r
    }
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    let mut left = inflated;
    while left > 0 {
        let n = left.min(128 << 10);
        left -= n;
        let block = u32::from(left == 0) | (1 << 1) | ((n as u32) << 3);
        z.extend(&block.to_le_bytes()[..3]);
        z.push(8);
    }
    let mut sample = 0x40_1000u64.to_le_bytes().to_vec();
    sample.extend([42, 0, 0, 0, 42, 0, 0, 0]);
    sample.extend(1000u64.to_le_bytes());
    let mut data = record(9, &sample);
    data.extend(record(81, &z));
    data.extend(record(9, &sample));
    let mut f = b"PERFILE2".to_vec();
    for v in [104u64, 80, 104, 80, 184, data.len() as u64, 0, 0] {
        f.extend(v.to_le_bytes());
    }
    f.extend([0; 32]);
    // perf_event_attr of 64 bytes: software cpu-clock, period 1 ms, IP | TID | TIME; no ids.
    for v in [1u32, 64] {
        f.extend(v.to_le_bytes());
    }
    for v in [0u64, 1_000_000, 7] {
        f.extend(v.to_le_bytes());
    }
    f.extend([0; 32 + 16]);
    f.extend(data);
    std::fs::write(path, f).unwrap();
}

/// perf.data whose compressed record inflates to 200 MiB (a 6.5 KiB file) is read in 22 MiB,
/// and one inflating past 256 MiB is refused at its byte in as little, as soon as it has. A
/// compressed record was inflated whole, then all its records held for sorting: 432 MiB and
/// 270 MiB of pkgprof -b --system (release). perf compresses one flush of a ring per record.
#[test]
fn perf_data_compressed_records_are_inflated_a_chunk_at_a_time() {
    let s = Scratch::new("perf-compressed");
    let big = s.0.join("200m.data");
    perf_data_compressed(&big, 200 << 20);
    let (code, err, rss) = pkgprof(&["-b".as_ref(), "--system".as_ref(), big.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    assert!(rss < BUDGET_KIB, "{rss} KiB");
    let bomb = s.0.join("bomb.data");
    perf_data_compressed(&bomb, 300 << 20);
    let (code, err, rss) = pkgprof(&["-b".as_ref(), "--system".as_ref(), bomb.as_os_str()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the compressed record at byte 216 decompresses to more than 268435456 bytes"),
        "{err}"
    );
    assert!(rss < BUDGET_KIB, "{rss} KiB");
}

/// An object the info file names by its absolute path (a path its author chose), whose symbol
/// table claims 100M symbols (2.4 GiB) over holes: refused as sparse, its samples reported
/// under its file name. It was mapped and walked: 16 KiB on disk took `pkgprof --pid` 14 s and
/// 5.5 GiB with 7.5 GiB claimed.
#[test]
fn an_object_whose_symbols_are_holes_is_refused_unread() {
    let s = Scratch::new("holey-object");
    let object = s.0.join("holey");
    std::fs::copy(program().join("cycle"), &object).unwrap();
    common::claim_sections_over_holes(&object, &[b".symtab"], 24 * (100 << 20));
    let d = s.0.join("m");
    measurement(
        &d,
        0,
        16,
        &format!(
            "\n[mapping]\nstart = 0x1000\nend = 0x7000\nbias = 0x0\npath = \"{}\"\n",
            object.display()
        ),
    );
    let (code, err, rss) = pkgprof(&["-b".as_ref(), "--pid".as_ref(), "7".as_ref(), d.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("holey: is a sparse file"), "{err}");
    assert!(rss < BUDGET_KIB, "{rss} KiB");
}

/// A kernel profile of 200,000 empty histograms, each at another sampling rate (8 MiB): one
/// warning for the file. Each record gave a warning, looked up among all the others before it
/// was added: 30 s, and 200,000 lines printed.
#[test]
fn histograms_at_many_rates_give_one_warning_at_once() {
    let s = Scratch::new("rates");
    let d = s.0.join("m");
    measurement(&d, 0, 16, "");
    let mut k = std::io::BufWriter::new(std::fs::File::create(d.join("gmon.out.7k.x")).unwrap());
    k.write_all(&gmon_header()).unwrap();
    for rate in 1..=200_000u32 {
        let mut h = histogram(KERNEL_LOW, KERNEL_LOW, 0);
        h[21..25].copy_from_slice(&rate.to_le_bytes());
        k.write_all(&h).unwrap();
    }
    k.flush().unwrap();
    drop(k);
    let started = Instant::now();
    let (code, err, rss) = pkgprof(&["-b".as_ref(), "--pid".as_ref(), "7".as_ref(), d.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("gmon.out.7k.x")).count(),
        1,
        "{}",
        &err[..err.len().min(2000)]
    );
    // The user profile, read first, is at 100 Hz, as is one of the 200,000.
    assert!(
        err.contains("sampled at 1 Hz (and 199998 more"),
        "{}",
        &err[..err.len().min(2000)]
    );
    assert!(rss < BUDGET_KIB, "{rss} KiB");
}

/// Response files that name themselves or each other (`@FILE` in an `@FILE`) end with GNU
/// gprof's error after 2,000 of them, and so does a directory: ten files naming the next ten
/// times each (10⁹ words at depth 9) kept pkgprof reading for over 20 s at 251 MiB and
/// growing, one naming itself was taken for an image after 16 levels, a directory too.
#[test]
fn response_files_naming_each_other_are_refused_at_once() {
    let s = Scratch::new("response");
    let w = &s.0;
    std::fs::write(w.join("self"), format!("-b @{}", w.join("self").display())).unwrap();
    for i in 0..9 {
        let next = format!("@{} ", w.join(format!("f{}", i + 1)).display());
        std::fs::write(w.join(format!("f{i}")), next.repeat(10)).unwrap();
    }
    std::fs::write(w.join("f9"), "-b").unwrap();
    for (file, expected) in [
        ("self", "pkgprof: error: too many @-files encountered"),
        ("f0", "pkgprof: error: too many @-files encountered"),
        (".", "pkgprof: error: @-file refers to a directory"),
    ] {
        let at = format!("@{}", w.join(file).display());
        let (code, err, rss) = pkgprof(&[at.as_ref()]);
        assert_eq!(code, 1, "{file}: {err}");
        assert!(err.starts_with(expected), "{file}: {err}");
        assert!(rss < BUDGET_KIB, "{file}: {rss} KiB");
    }
}
