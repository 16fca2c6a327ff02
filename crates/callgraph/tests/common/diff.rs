//! The random differential generator shared by `examples/flat_diff.rs` and
//! `tests/differential.rs`: random images assembled with gcc, random gmon files, random
//! option sets (including symbol specifications), GNU gprof's stdout against ours.
//!
//! Each case assembles a random layout of text symbols (global and static functions, labels,
//! objects, weak symbols, aliases, dropped clone suffixes, `mcount`, odd sizes) with gcc,
//! writes one to three random gmon files (odd ranges, non-integral scales, several records,
//! sparse counts, arcs, random rates), runs gprof and compares its stdout with ours byte for
//! byte.
//!
//! Longer than 800 lines because a case is one sequence of random draws (`run_case`): the
//! order of the draws is what a seed reproduces, so the generator is kept in one place.
//!
//! In [`Mode::Flat`] arcs only go from non-callees into leaf functions and `gprof -b -p [-z]`
//! is compared. In [`Mode::Report`] the whole `gprof -b [-z] [-a] [-D] [-T]` report is compared
//! (flat profile, call graph, index), and arcs join any two blocks: forward edges of a random
//! DAG, back edges that close cycles, dense cycles, self-recursion, zero counts, calls from
//! labels and objects, arcs into non-functions. [`Mode::Symspecs`] adds one to four random
//! symbol specifications (`-p -P -q -Q -e -E -f -F -n -N -k`, with names that exist, names that
//! do not, file and line forms, empty specs, arc specs) to the report mode.
//!
//! Every case also runs `gprof -s` (with the same `-a`/`-D`) and compares the `gmon.sum` it
//! writes with ours, and in the report modes `gprof -r` (function ordering). In the report modes some 64-bit images get code bytes instead of NOP
//! padding: `call` instructions to other blocks (forward and backward), stray `E8` bytes and
//! random bytes, and then `-c` (static call graph) is added to both command lines. These draws
//! come from a second generator, so a seed still yields the same layouts and profiles.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use gmon_format::{AddressSize, Arc, Endian, Header, HistogramHeader, Layout, SECONDS, Writer};

use super::Flags;

/// What a run of the generator compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `gprof -b -p [-z] [-a] [-D]`, arcs into leaves only.
    Flat,
    /// The whole `-b` report with random call graphs.
    Report,
    /// The report with random symbol specifications.
    Symspecs,
}

/// Counts of a run.
#[derive(Debug, Default)]
pub struct Summary {
    /// Cases compared.
    pub run: u64,
    /// Cases where the outputs were identical.
    pub same: u64,
    /// Cases gprof refused, and pkgprof too (stdout not compared).
    pub gprof_failed: u64,
    /// Case numbers whose outputs differed; their directories are kept.
    pub differ: Vec<u64>,
    /// Whether the time budget ended the run early.
    pub timed_out: bool,
}

/// Runs cases `0..cases` of `seed` in `mode` under `dir` until `deadline`. Cases that differ
/// (and, with `keep`, all cases) stay in `dir/case-N` with `gprof.txt`, `ours.txt` and `cmd`.
///
/// Returns an error if a case cannot be set up (gcc missing, disk full).
pub fn run(
    cases: u64,
    seed: u64,
    mode: Mode,
    dir: &Path,
    deadline: Instant,
    keep: bool,
) -> Result<Summary, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut summary = Summary::default();
    for case in 0..cases {
        if Instant::now() > deadline {
            summary.timed_out = true;
            break;
        }
        let mut rng = case_rng(seed, case);
        let case_dir = dir.join(format!("case-{case}"));
        let _ = std::fs::create_dir_all(&case_dir);
        match run_case(&mut rng, &case_dir, mode) {
            Outcome::Same => {
                summary.same += 1;
                summary.run += 1;
                if !keep {
                    let _ = std::fs::remove_dir_all(&case_dir);
                }
            }
            Outcome::GprofFailed => {
                summary.gprof_failed += 1;
                if !keep {
                    let _ = std::fs::remove_dir_all(&case_dir);
                }
            }
            Outcome::Differs => {
                summary.run += 1;
                summary.differ.push(case);
            }
            Outcome::Setup(e) => return Err(format!("case {case}: {e}")),
        }
    }
    Ok(summary)
}

/// The generator state of one case: every case can be replayed alone from (seed, case).
pub fn case_rng(seed: u64, case: u64) -> Rng {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ ((case + 1) * 0x1234_5679));
    for _ in 0..4 {
        rng.next();
    }
    rng
}

/// xorshift64*: small, seedable, the same everywhere.
pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    GlobalFunc,
    StaticFunc,
    GlobalLabel,
    LocalLabel,
    Object,
    WeakFunc,
    /// `STT_GNU_IFUNC`, which gprof ignores.
    Ifunc,
}

struct Block {
    names: Vec<(String, Kind)>,
    size: u64,
    /// A global function that receives arcs (and never makes any but self calls).
    callee: bool,
    /// Safe to put arc sources in: a kept global symbol that is not a callee.
    caller: bool,
}

enum Outcome {
    Same,
    Differs,
    GprofFailed,
    Setup(String),
}

fn name(rng: &mut Rng, used: &mut Vec<String>) -> String {
    const STEMS: [&str; 10] = [
        "f", "g", "_h", "__k", "main", "work", "a_b", "zz", "_", "x1",
    ];
    loop {
        let mut n = (*rng.pick(&STEMS)).to_owned();
        if rng.chance(60) {
            let _ = write!(n, "{}", rng.below(40));
        }
        if rng.chance(10) {
            let suffix: &&str = rng.pick(&[".1", ".2.3", ".", ".cold", "$y", ".constprop.4"]);
            n.push_str(suffix);
        }
        if !used.contains(&n) {
            used.push(n.clone());
            return n;
        }
    }
}

fn run_case(rng: &mut Rng, dir: &Path, mode: Mode) -> Outcome {
    let report = mode != Mode::Flat;
    // Draws added later (code bytes, -c) use their own generator, so the original draws and
    // hence every earlier seed's layout stay the same.
    let mut code_rng = Rng(rng.0 ^ 0x5eed_c0de_0000_0001);
    code_rng.next();
    let bits32 = rng.chance(15);
    let mut used = Vec::new();
    let nblocks = rng.range(1, 25) as usize;
    let mut blocks = Vec::new();
    for i in 0..nblocks {
        let kind = if i == 0 {
            Kind::GlobalFunc
        } else {
            *rng.pick(&[
                Kind::GlobalFunc,
                Kind::GlobalFunc,
                Kind::GlobalFunc,
                Kind::StaticFunc,
                Kind::StaticFunc,
                Kind::GlobalLabel,
                Kind::LocalLabel,
                Kind::Object,
                Kind::WeakFunc,
                Kind::Ifunc,
            ])
        };
        let mut n = if rng.chance(4) && !used.iter().any(|u| u == "mcount") {
            used.push("mcount".to_owned());
            "mcount".to_owned()
        } else {
            name(rng, &mut used)
        };
        if kind == Kind::StaticFunc && rng.chance(40) {
            let suffixed = format!(
                "{n}{}",
                rng.pick(&[
                    ".part.0",
                    ".constprop.0",
                    ".cold",
                    ".12",
                    ".isra.0",
                    "$x",
                    ".constprop.1.3"
                ])
            );
            if !used.contains(&suffixed) {
                used.push(suffixed.clone());
                n = suffixed;
            }
        }
        let mut names = vec![(n, kind)];
        if rng.chance(12) {
            let alias_kind = *rng.pick(&[Kind::GlobalFunc, Kind::StaticFunc, Kind::GlobalLabel]);
            names.push((name(rng, &mut used), alias_kind));
        }
        let size = match rng.below(4) {
            0 => rng.range(1, 4),
            1 => rng.range(1, 16),
            2 => rng.range(8, 64),
            _ => rng.range(16, 400),
        };
        let plain_global = names
            .iter()
            .all(|(n, k)| *k == Kind::GlobalFunc && !n.contains(['.', '$']));
        let callee = plain_global && i > 0 && rng.chance(40);
        let caller = !callee
            && names
                .iter()
                .all(|(_, k)| matches!(k, Kind::GlobalFunc | Kind::GlobalLabel | Kind::WeakFunc));
        blocks.push(Block {
            names,
            size,
            callee,
            caller,
        });
    }
    let data_weak = rng.chance(30);
    let with_code = report && !bits32 && code_rng.chance(40);
    // Blocks a `call` may name: the first name of blocks that are not indirect functions.
    let targets: Vec<String> = blocks
        .iter()
        .filter(|b| b.names[0].1 != Kind::Ifunc)
        .map(|b| b.names[0].0.clone())
        .collect();

    let mut asm = String::from("\t.text\n\t.globl _start\n_start:\n\t.skip 16, 0x90\n");
    for b in &blocks {
        for (n, k) in &b.names {
            match k {
                Kind::GlobalFunc => {
                    let _ = writeln!(asm, "\t.globl \"{n}\"\n\t.type \"{n}\",@function");
                }
                Kind::StaticFunc => {
                    let _ = writeln!(asm, "\t.type \"{n}\",@function");
                }
                Kind::GlobalLabel => {
                    let _ = writeln!(asm, "\t.globl \"{n}\"");
                }
                Kind::LocalLabel => {}
                Kind::Object => {
                    let _ = writeln!(asm, "\t.type \"{n}\",@object");
                }
                Kind::WeakFunc => {
                    let _ = writeln!(asm, "\t.weak \"{n}\"\n\t.type \"{n}\",@function");
                }
                Kind::Ifunc => {
                    let _ = writeln!(asm, "\t.type \"{n}\",@gnu_indirect_function");
                }
            }
            let _ = writeln!(asm, "\"{n}\":");
        }
        if with_code && code_rng.chance(60) {
            code_bytes(&mut code_rng, &mut asm, b.size, &targets);
        } else {
            let _ = writeln!(asm, "\t.skip {}, 0x90", b.size);
        }
    }
    // gprof reads the end of the last symbol from past the end of its table, so whether that
    // symbol gets samples depends on its heap (see the crate's findings). Keep it out of reach
    // of every histogram: a sentinel well past the ranges generated below.
    let total: u64 = blocks.iter().map(|b| b.size).sum();
    let _ = writeln!(asm, "\t.skip {}, 0x90", 2 * total + 2048);
    asm.push_str(
        "\t.globl zz_sentinel\n\t.type zz_sentinel,@function\nzz_sentinel:\n\t.skip 16, 0x90\n",
    );
    if rng.chance(30) {
        // Code in another executable section, after `.text`.
        asm.push_str("\t.section mysec,\"ax\",@progbits\n");
        for _ in 0..rng.range(1, 3) {
            let n = name(rng, &mut used);
            if rng.chance(50) {
                let _ = writeln!(asm, "\t.globl \"{n}\"");
            }
            let _ = writeln!(
                asm,
                "\t.type \"{n}\",@function\n\"{n}\":\n\t.skip {}",
                rng.range(1, 40)
            );
        }
    }
    if data_weak {
        asm.push_str("\t.data\n\t.weak data_start\ndata_start:\n\t.long 0\n");
    }
    if rng.chance(40) {
        // Symbols gprof must ignore: data, weak objects, absolute values.
        asm.push_str("\t.data\n\t.globl gdata\ngdata:\n\t.long 1\nldata:\n\t.long 2\n");
        asm.push_str("\t.weak wobj\n\t.type wobj,@object\nwobj:\n\t.long 3\n");
        let _ = writeln!(
            asm,
            "\t.globl absx\n\t.set absx, {:#x}\n\t.set labs, {:#x}",
            0x40_1020 + rng.below(64),
            0x40_1010 + rng.below(64)
        );
        // A weak absolute symbol is kept, as global code.
        let _ = writeln!(
            asm,
            "\t.weak wabs\n\t.set wabs, {:#x}",
            0x40_1010 + rng.below(256)
        );
    }
    let s = dir.join("img.s");
    let img = dir.join("img");
    if let Err(e) = std::fs::write(&s, &asm) {
        return Outcome::Setup(e.to_string());
    }
    let mut cc = Command::new("gcc");
    if bits32 {
        cc.arg("-m32");
    }
    let status = cc
        .args([
            "-nostdlib",
            "-static",
            "-no-pie",
            "-Wl,--build-id=none",
            "-o",
        ])
        .arg(&img)
        .arg(&s)
        .output();
    match status {
        Ok(o) if o.status.success() => {}
        Ok(o) => return Outcome::Setup(format!("gcc: {}", String::from_utf8_lossy(&o.stderr))),
        Err(e) => return Outcome::Setup(format!("gcc: {e}")),
    }

    // Block addresses, as the assembler lays them out after the 16-byte `_start`.
    let text_start: u64 = if bits32 { 0x0804_9000 } else { 0x40_1000 };
    let text_start = match text_vma(&img) {
        Some(a) => a,
        None => text_start,
    };
    let mut starts = Vec::new();
    let mut at = text_start + 16;
    for b in &blocks {
        starts.push(at);
        at += b.size;
    }
    let text_end = at;

    let hz = *rng.pick(&[
        100u32,
        100,
        100,
        1000,
        60,
        1,
        7,
        250,
        1_000_000,
        24,
        3,
        0,
        4_000_000_000,
    ]);
    // One histogram range, maybe a second disjoint one with the same scale.
    let low = text_start
        .saturating_sub(rng.below(40))
        .wrapping_add(rng.below(3) * rng.below(20));
    let span_units = (text_end + rng.below(256)).saturating_sub(low) / 2 + 1;
    let scale_choice = *rng.pick(&[1.0f64, 2.0, 1.9968, 4.8, 0.5, 3.0, 7.3, 1.5]);
    let nbins = ((span_units as f64 / scale_choice) as u64).max(1);
    let high = low + span_units * 2 + rng.below(2);
    let dense = rng.below(100);
    let big = rng.chance(20);
    let all_zero = rng.chance(5);
    let bins = |rng: &mut Rng, n: u64| -> Vec<u16> {
        (0..n)
            .map(|_| {
                if all_zero || rng.below(100) >= dense {
                    0
                } else if big {
                    rng.range(1, 65535) as u16
                } else {
                    rng.range(1, 12) as u16
                }
            })
            .collect()
    };
    let second = rng.chance(15);
    let gap = 2 * rng.range(1, 8);
    let dimension = match rng.below(12) {
        0 => (*b"cycles-of-doom-", b'c'),
        1 => (*b"ms\0\0\0\0\0\0\0\0\0\0\0\0\0", b'm'),
        2 => (*b"ticks-and-tocks", b't'),
        _ => SECONDS,
    };
    let nfiles = *rng.pick(&[1usize, 1, 1, 2, 3]);
    let callees: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].callee).collect();
    let callers: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].caller).collect();
    let address_size = if bits32 {
        AddressSize::U32
    } else {
        AddressSize::U64
    };
    let mut gmons = Vec::new();
    for f in 0..nfiles {
        let mut w = Writer::new(Vec::new(), Layout::gnu(address_size, Endian::Little));
        let mut header = HistogramHeader {
            low_pc: low,
            high_pc: high,
            prof_rate: hz,
            dimension: dimension.0,
            dimension_abbrev: dimension.1,
        };
        let ok = w
            .header(&Header::Gnu {
                version: 1,
                spare: [0; 12],
            })
            .is_ok()
            && w.histogram(&header, bins(rng, nbins).into_iter()).is_ok();
        if !ok {
            return Outcome::Setup("writing gmon".into());
        }
        if second {
            // Same units per bin, starting past the first range.
            header.low_pc = high + gap + (high & 1);
            header.high_pc = header.low_pc + (high - low);
            if w.histogram(&header, bins(rng, nbins).into_iter()).is_err() {
                return Outcome::Setup("writing gmon".into());
            }
        }
        if report {
            if random_arcs(rng, &mut w, &blocks, &starts, text_start).is_err() {
                return Outcome::Setup("writing gmon".into());
            }
        } else if !callees.is_empty() {
            let narcs = rng.below(12);
            for _ in 0..narcs {
                let to = *rng.pick(&callees);
                let self_pc = starts[to] + rng.below(blocks[to].size);
                let from_pc = if rng.chance(15) {
                    self_pc // direct recursion
                } else if !callers.is_empty() && rng.chance(85) {
                    let from = *rng.pick(&callers);
                    starts[from] + rng.below(blocks[from].size)
                } else {
                    // Before the first symbol: dropped.
                    text_start.saturating_sub(rng.range(1, 64))
                };
                let count = if rng.chance(5) {
                    u64::from(u32::MAX)
                } else {
                    rng.range(0, 3000)
                };
                if w.arc(&Arc {
                    from_pc,
                    self_pc,
                    count,
                })
                .is_err()
                {
                    return Outcome::Setup("writing gmon".into());
                }
            }
        }
        let Ok(bytes) = w.finish() else {
            return Outcome::Setup("writing gmon".into());
        };
        let path = dir.join(format!("gmon{f}.out"));
        if let Err(e) = std::fs::write(&path, bytes) {
            return Outcome::Setup(e.to_string());
        }
        gmons.push(path);
    }

    let flags = Flags {
        display_unused: rng.chance(25),
        no_static: rng.chance(12),
        ignore_non_functions: rng.chance(12),
        traditional: report && rng.chance(30),
        static_call_graph: with_code && code_rng.chance(70),
    };
    let mut args: Vec<String> = vec!["-b".into()];
    if !report {
        args.push("-p".into());
    }
    for (on, flag) in [
        (flags.display_unused, "-z"),
        (flags.no_static, "-a"),
        (flags.ignore_non_functions, "-D"),
        (flags.traditional, "-T"),
        (flags.static_call_graph, "-c"),
    ] {
        if on {
            args.push(flag.into());
        }
    }
    let specs = if mode == Mode::Symspecs {
        random_specs(rng, &used)
    } else {
        Vec::new()
    };
    for (letter, text) in &specs {
        if "pPqQ".contains(*letter) {
            args.push(format!("-{letter}{text}"));
        } else {
            args.push(format!("-{letter}"));
            args.push(text.clone());
        }
    }
    let mut cmd = Command::new("gprof");
    cmd.args(&args);
    cmd.arg(&img).args(&gmons);
    let Ok(theirs) = cmd.output() else {
        return Outcome::Setup("cannot run gprof".into());
    };
    let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
    let _ = std::fs::write(
        dir.join("cmd"),
        format!(
            "gprof {} img {}\n",
            quoted.join(" "),
            (0..nfiles)
                .map(|f| format!("gmon{f}.out"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    );
    let gmon_refs: Vec<&Path> = gmons.iter().map(PathBuf::as_path).collect();
    let ours = if report {
        let specs: Vec<(char, Vec<u8>)> = specs
            .iter()
            .map(|(l, t)| (*l, t.as_bytes().to_vec()))
            .collect();
        super::report_output_with(&img, &gmon_refs, flags, &specs)
    } else {
        super::flat_output(&img, &gmon_refs, flags)
    };
    if !theirs.status.success() {
        // gprof refuses (a listing asked for lacks its data): so must we.
        let _ = std::fs::write(dir.join("gprof.txt"), &theirs.stderr);
        return match ours {
            Err(_) => Outcome::GprofFailed,
            Ok(out) => {
                let _ = std::fs::write(dir.join("ours.txt"), out);
                Outcome::Differs
            }
        };
    }
    let ours = ours.unwrap_or_else(String::into_bytes);
    let _ = std::fs::write(dir.join("gprof.txt"), &theirs.stdout);
    let _ = std::fs::write(dir.join("ours.txt"), &ours);
    if ours != theirs.stdout {
        return Outcome::Differs;
    }
    match compare_sums(dir, &img, &gmon_refs, flags) {
        Outcome::Same if report => compare_ordering(dir, &img, &gmon_refs, flags),
        other => other,
    }
}

/// Runs `gprof -r [-a] [-D] [-c]` and compares its function ordering with ours.
fn compare_ordering(dir: &Path, img: &Path, gmons: &[&Path], flags: Flags) -> Outcome {
    let mut cmd = Command::new("gprof");
    cmd.arg("-r");
    for (on, flag) in [
        (flags.no_static, "-a"),
        (flags.ignore_non_functions, "-D"),
        (flags.static_call_graph, "-c"),
    ] {
        if on {
            cmd.arg(flag);
        }
    }
    let Ok(theirs) = cmd.arg(img).args(gmons).output() else {
        return Outcome::Setup("cannot run gprof -r".into());
    };
    let ours = super::ordering_output(img, gmons, flags).unwrap_or_else(String::into_bytes);
    let _ = std::fs::write(dir.join("gprof.order"), &theirs.stdout);
    let _ = std::fs::write(dir.join("ours.order"), &ours);
    if theirs.status.success() && ours == theirs.stdout {
        Outcome::Same
    } else {
        Outcome::Differs
    }
}

/// Runs `gprof -s [-a] [-D]` in `dir` and compares the gmon.sum it writes with ours.
fn compare_sums(dir: &Path, img: &Path, gmons: &[&Path], flags: Flags) -> Outcome {
    let sum_path = dir.join("gmon.sum");
    let _ = std::fs::remove_file(&sum_path);
    let mut cmd = Command::new("gprof");
    cmd.arg("-s").current_dir(dir);
    if flags.no_static {
        cmd.arg("-a");
    }
    if flags.ignore_non_functions {
        cmd.arg("-D");
    }
    let Ok(theirs) = cmd.arg(img).args(gmons).output() else {
        return Outcome::Setup("cannot run gprof -s".into());
    };
    let theirs = if theirs.status.success() {
        std::fs::read(&sum_path).unwrap_or_default()
    } else {
        format!(
            "gprof -s failed: {}",
            String::from_utf8_lossy(&theirs.stderr)
        )
        .into_bytes()
    };
    let ours = super::sum_output(img, gmons, flags).unwrap_or_else(String::into_bytes);
    let _ = std::fs::write(dir.join("gprof.sum"), &theirs);
    let _ = std::fs::write(dir.join("ours.sum"), &ours);
    let _ = std::fs::remove_file(&sum_path);
    if ours == theirs {
        Outcome::Same
    } else {
        Outcome::Differs
    }
}

/// `size` bytes of code for one block: calls to random blocks (the linker fills in the
/// displacement, so both directions occur), stray `E8` bytes with random operands, NOPs and
/// random bytes.
fn code_bytes(rng: &mut Rng, asm: &mut String, size: u64, targets: &[String]) {
    let mut left = size;
    while left > 0 {
        if left >= 5 && !targets.is_empty() && rng.chance(25) {
            let _ = writeln!(asm, "\tcall \"{}\"", rng.pick(targets));
            left -= 5;
        } else if left >= 5 && rng.chance(10) {
            let _ = writeln!(
                asm,
                "\t.byte 0xe8, {}, {}, {}, {}",
                rng.below(256),
                rng.below(256),
                rng.below(3),
                0
            );
            left -= 5;
        } else {
            let b = if rng.chance(50) { 0x90 } else { rng.below(256) };
            let _ = writeln!(asm, "\t.byte {b}");
            left -= 1;
        }
    }
}

/// One to four random symbol specifications as (option letter, argument): names of the
/// image (some dropped by gprof's table rules), names that do not exist, file and line forms
/// (which match nothing, or everything for line 0, without debug information), empty specs,
/// arc specs with and without a slash; options repeat.
fn random_specs(rng: &mut Rng, used: &[String]) -> Vec<(char, String)> {
    let mut specs = Vec::new();
    for _ in 0..rng.range(1, 4) {
        let letter = *rng.pick(&['p', 'P', 'q', 'Q', 'e', 'E', 'f', 'F', 'n', 'N', 'k']);
        let arc = letter == 'k' || ("qQ".contains(letter) && rng.chance(30));
        let text = if arc {
            let (from, to) = (spec_text(rng, used), spec_text(rng, used));
            if rng.chance(5) {
                format!("{from}{to}")
            } else {
                format!("{from}/{to}")
            }
        } else {
            spec_text(rng, used)
        };
        // An attached optional argument cannot be empty: `-p` alone has no spec.
        if text.is_empty() && "pPqQ".contains(letter) {
            continue;
        }
        specs.push((letter, text));
    }
    specs
}

fn spec_text(rng: &mut Rng, used: &[String]) -> String {
    let fixed = [
        "",
        ":",
        "0",
        ":0",
        "7",
        "img.s",
        "img.s:main",
        "x.c",
        ":_start",
        "_start",
        "mcount",
        "zz_sentinel",
        "data_start",
        "etext",
        "nosuch",
        "main",
        "f1",
        "img.s:0",
    ];
    if used.is_empty() || rng.chance(30) {
        return (*rng.pick(&fixed)).to_owned();
    }
    let name = rng.pick(used).clone();
    // Names with a dot read as file names unless a colon says otherwise.
    if (name.contains('.') && rng.chance(70)) || rng.chance(10) {
        format!(":{name}")
    } else {
        name
    }
}

/// `text` as one shell word.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=+,".contains(&b))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Arcs for the full-report mode: a random DAG over the blocks (forward edges), back edges
/// that close cycles, sometimes a dense strongly connected core, self-recursion, zero and
/// huge counts, and a few arcs from outside every symbol (dropped by gprof).
fn random_arcs(
    rng: &mut Rng,
    w: &mut Writer<Vec<u8>>,
    blocks: &[Block],
    starts: &[u64],
    text_start: u64,
) -> Result<(), gmon_format::Error> {
    let n = blocks.len() as u64;
    let dense = rng.chance(20);
    let narcs = if dense {
        rng.range(10, 60)
    } else {
        rng.below(30)
    };
    let back = rng.below(40);
    let pc = |rng: &mut Rng, b: usize| starts[b] + rng.below(blocks[b].size);
    for _ in 0..narcs {
        let (mut from, mut to) = (rng.below(n) as usize, rng.below(n) as usize);
        if dense {
            let core = (n / 2).max(1);
            from = rng.below(core) as usize;
            to = rng.below(core) as usize;
        } else if from > to && !rng.chance(back) {
            std::mem::swap(&mut from, &mut to);
        }
        if rng.chance(10) {
            to = from;
        }
        let self_pc = pc(rng, to);
        let from_pc = if rng.chance(5) {
            text_start.saturating_sub(rng.range(1, 64))
        } else {
            pc(rng, from)
        };
        let count = match rng.below(100) {
            0..=9 => 0,
            10..=12 => u64::from(u32::MAX),
            13..=40 => rng.range(1, 5),
            _ => rng.range(1, 3000),
        };
        w.arc(&Arc {
            from_pc,
            self_pc,
            count,
        })?;
    }
    Ok(())
}

/// The address of `.text` in the linked image.
fn text_vma(img: &Path) -> Option<u64> {
    let out = Command::new("objdump").arg("-h").arg(img).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(".text"))?;
    u64::from_str_radix(line.split_whitespace().nth(3)?, 16).ok()
}
