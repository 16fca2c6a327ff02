//! The command-line fuzz body (getopt, `@FILE`, symbol specifications), run over the command
//! lines of every golden case and over damaged copies of them.

#![allow(clippy::unwrap_used)]

#[path = "../../../fuzz/src/cmdline.rs"]
mod cmdline_target;

#[test]
fn every_golden_command_line_and_its_damaged_copies_parse_cleanly() {
    let cases = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cases");
    let mut seen = 0;
    for e in std::fs::read_dir(&cases).unwrap() {
        let cmd = e.unwrap().path().join("cmd");
        let Ok(text) = std::fs::read_to_string(&cmd) else {
            continue;
        };
        seen += 1;
        let args: Vec<&str> = text.split_whitespace().collect();
        let joined = args.join("\0");
        cmdline_target::run(joined.as_bytes());
        for cut in 0..joined.len().min(40) {
            cmdline_target::run(&joined.as_bytes()[..cut]);
        }
        let mut damaged = joined.clone().into_bytes();
        for b in damaged.iter_mut().step_by(3) {
            *b = b'-';
        }
        cmdline_target::run(&damaged);
    }
    assert!(seen > 100, "{seen} golden cases");
}

#[path = "../../../fuzz/src/collector.rs"]
mod collector_target;
#[path = "../../../fuzz/src/procfs.rs"]
mod procfs_target;

/// Hand-made perf records, laid out as collect-perf's events make them.
mod records {
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const FORK: u32 = 7;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const CONTEXT_KERNEL: u64 = -128i64 as u64;
    pub const CONTEXT_USER: u64 = -512i64 as u64;

    #[derive(Default)]
    pub struct B(Vec<u8>);

    impl B {
        pub fn u64(mut self, v: u64) -> Self {
            self.0.extend_from_slice(&v.to_ne_bytes());
            self
        }
        pub fn u32(mut self, v: u32) -> Self {
            self.0.extend_from_slice(&v.to_ne_bytes());
            self
        }
        pub fn bytes(mut self, v: &[u8]) -> Self {
            self.0.extend_from_slice(v);
            self
        }
        /// The record with its header, and for side-band records the `sample_id_all` trailer.
        pub fn finish(self, ty: u32, misc: u16, pid: u32, time: u64) -> Vec<u8> {
            let mut body = self;
            if ty != SAMPLE {
                body = body.u32(pid).u32(pid).u64(time).u32(0).u32(0).u64(1);
            }
            let mut out = ty.to_ne_bytes().to_vec();
            out.extend_from_slice(&misc.to_ne_bytes());
            out.extend_from_slice(&((body.0.len() + 8) as u16).to_ne_bytes());
            out.extend_from_slice(&body.0);
            out
        }
    }

    /// A fork or exit record of the single-threaded process `pid`, child of `ppid`.
    pub fn task(ty: u32, pid: u32, ppid: u32, time: u64) -> Vec<u8> {
        B::default()
            .u32(pid)
            .u32(ppid)
            .u32(pid)
            .u32(ppid)
            .u64(time)
            .finish(ty, 0, pid, time)
    }

    /// A sample of `pid` at `time`: kernel frames, then the user ip with its registers and a
    /// stack copy.
    pub fn sample(pid: u32, time: u64, kernel: &[u64], user: &[u64], stack: &[u8]) -> Vec<u8> {
        sample_with(pid, time, kernel, user, Some(stack))
    }

    /// The same sample with its stack copied by the BPF copier: its record (identifier 2),
    /// then the sample without a copy or the user part of its chain (as such runs ask the
    /// kernel), which the decoder walks over the copy; or, `past` the copy cut at its size,
    /// takes from the chain record the program writes after it.
    pub fn copied_sample(pid: u32, time: u64, user: &[u64], stack: &[u8], past: bool) -> Vec<u8> {
        let record = |code: u32, body: &[u8]| {
            B::default()
                .u64(2)
                .u32(0)
                .u32(0)
                .u32((16 + body.len()) as u32)
                .u64(SP)
                .u32(body.len() as u32)
                .u32(code)
                .bytes(body)
                .bytes(&[0; 4])
                .finish(SAMPLE, 2, pid, time)
        };
        let mut out = record(if past { 0 } else { 2 }, stack);
        if past {
            let chain: Vec<u8> = user.iter().flat_map(|a| a.to_ne_bytes()).collect();
            out.extend(record(3, &chain));
        }
        out.extend(sample_with(pid, time, &[], user, None));
        out
    }

    const SP: u64 = 0x7ffe_0000;

    fn sample_with(
        pid: u32,
        time: u64,
        kernel: &[u64],
        user: &[u64],
        stack: Option<&[u8]>,
    ) -> Vec<u8> {
        let ip = kernel.first().or(user.first()).copied().unwrap_or(0);
        let user_chain = if stack.is_some() { user } else { &[] };
        let contexts = usize::from(!kernel.is_empty()) + usize::from(!user_chain.is_empty());
        let mut b = B::default()
            .u64(1)
            .u64(ip)
            .u32(pid)
            .u32(pid)
            .u64(time)
            .u32(0)
            .u32(0)
            .u64(1_000_000)
            .u64((kernel.len() + user_chain.len() + contexts) as u64);
        if !kernel.is_empty() {
            b = b.u64(CONTEXT_KERNEL);
        }
        for &k in kernel {
            b = b.u64(k);
        }
        if !user_chain.is_empty() {
            b = b.u64(CONTEXT_USER);
        }
        for &u in user_chain {
            b = b.u64(u);
        }
        // ABI 64-bit; bx, bp, sp, ip.
        b = b
            .u64(2)
            .u64(0)
            .u64(SP + 0x40)
            .u64(SP)
            .u64(user.first().copied().unwrap_or(0));
        if let Some(stack) = stack {
            b = b
                .u64(stack.len() as u64)
                .bytes(stack)
                .u64(stack.len() as u64);
        }
        let misc = if kernel.is_empty() { 2 } else { 1 };
        b.finish(SAMPLE, misc, pid, time)
    }
}

/// A recording of a program (the fixture `cycle`, mapped as a PIE) and a child it forks: the
/// image first, then comm, mmap, samples in user and kernel mode, fork, exits.
fn collector_input() -> Vec<u8> {
    use object::{Object as _, ObjectSymbol as _};
    use records::*;
    let image = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/programs/out/cycle-pie/cycle"),
    )
    .unwrap();
    let file = object::File::parse(&image[..]).unwrap();
    let at = |name: &str| {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| s.address())
            .unwrap()
    };
    let base = 0x5555_5555_4000u64;
    let (main, a) = (base + at("main") + 4, base + at("ping") + 2);
    let mut out = (image.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&image);
    let mut stack = vec![0u8; 256];
    stack[0x48..0x50].copy_from_slice(&main.to_ne_bytes());
    let mut build_id = [0u8; 24];
    build_id[0] = 0;
    for pid in [100u32, 101] {
        let t = u64::from(pid) * 1000;
        if pid == 101 {
            out.extend(task(FORK, 101, 100, t));
        }
        out.extend(B::default().u32(pid).u32(pid).bytes(b"cycle\0\0\0").finish(
            COMM,
            1 << 13,
            pid,
            t + 1,
        ));
        out.extend(
            B::default()
                .u32(pid)
                .u32(pid)
                .u64(base)
                .u64(0x4000)
                .u64(0)
                .bytes(&build_id)
                .u32(5)
                .u32(2)
                .bytes(b"/fixture/cycle\0\0")
                .finish(MMAP2, 2, pid, t + 2),
        );
        for i in 0..20 {
            // The child's user-mode stacks come from the BPF copier.
            out.extend(match pid {
                100 => sample(pid, t + 10 + i, &[], &[a, main], &stack),
                _ => copied_sample(pid, t + 10 + i, &[a, main], &stack, i % 2 == 1),
            });
            out.extend(sample(
                pid,
                t + 40 + i,
                &[0xffff_ffff_8100_2010, 0xffff_ffff_8100_0110],
                &[a, main],
                &stack,
            ));
        }
        if pid == 101 {
            out.extend(task(EXIT, 101, 100, t + 90));
        }
    }
    // The parent last, after its child.
    out.extend(task(EXIT, 100, 1, 200_000));
    out
}

#[test]
fn the_collector_body_holds_on_a_recording_and_its_damaged_copies() {
    let data = collector_input();
    // `PKGPROF_FUZZ_SEEDS=DIR` saves the input as a seed for `cargo fuzz run collector DIR`.
    if let Some(seeds) = std::env::var_os("PKGPROF_FUZZ_SEEDS") {
        std::fs::write(std::path::Path::new(&seeds).join("recording"), &data).unwrap();
    }
    let dir = std::env::temp_dir().join(format!(
        "pkgprof-fuzz-collector-test-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Whole, every sample is reported: 20 in user and 20 in kernel mode per process.
    let reported = collector_target::run_in(&dir, &data);
    assert_eq!(
        reported,
        [("100".to_owned(), 20, 20), ("101".to_owned(), 20, 20)],
        "kept {}",
        dir.display()
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let (image, records) = collector_target::split(&data);
    let head = &data[..4 + image.len()];
    // Cut inside and between records, and damaged, a few dozen times (each run writes and
    // syncs a measurement).
    let step = records.len() / 24;
    for cut in (0..records.len()).step_by(step).chain([records.len() - 1]) {
        let mut d = head.to_vec();
        d.extend_from_slice(&records[..cut]);
        collector_target::run(&d);
    }
    for i in (0..records.len()).step_by(step + 13) {
        let mut d = data.clone();
        d[head.len() + i] ^= 0x5a;
        collector_target::run(&d);
    }
    // A damaged image: the collector reads it as any mapped object, and unwinds without it.
    for i in [0usize, 4, 18, 40, 64, 200] {
        let mut d = data.clone();
        d[4 + i] ^= 0xff;
        collector_target::run(&d);
    }
    let mut d = (100u32).to_le_bytes().to_vec();
    d.extend_from_slice(&image[..100]);
    d.extend_from_slice(records);
    collector_target::run(&d);
}

#[test]
fn the_procfs_body_holds_on_this_process_and_damaged_copies() {
    let mut data = Vec::new();
    for f in ["stat", "status", "io", "schedstat", "cmdline", "maps"] {
        data.extend(std::fs::read(format!("/proc/self/{f}")).unwrap_or_default());
        data.push(0xfe);
    }
    procfs_target::run(&data);
    for cut in (0..data.len()).step_by(13) {
        procfs_target::run(&data[..cut]);
    }
    for i in (0..data.len()).step_by(7) {
        let mut d = data.clone();
        d[i] = b')';
        procfs_target::run(&d);
    }
    let kallsyms = std::fs::read("/proc/kallsyms").unwrap_or_default();
    procfs_target::run(&kallsyms[..kallsyms.len().min(64 << 10)]);
}
