//! Fuzz body for the collector after the kernel: perf records decoded, processes replayed,
//! samples aggregated (stacks unwound through an ELF image from the bytes, read back from a
//! file as any mapped object is) and a measurement written. Whatever the records say, the
//! measurement written is complete, every file in it reads back, and pkgprof can report it.
//!
//! The bytes: a little-endian u32 giving the length of the image, the image, then the
//! records. Every file mapping of the records is pointed at the image, so no other file of the
//! machine is read.

use std::path::Path;

use collect_perf::{
    AggregateOptions, KernelSymbols, Output, SideBand, WriteOptions, aggregate, fuzzing,
    write_measurement_to,
};

/// A kernel-symbol snapshot for the kernel addresses of the records.
const KALLSYMS: &str = "ffffffff81000000 T _stext\nffffffff81000100 T entry_SYSCALL_64\n\
                        ffffffff81001000 t do_syscall_64\nffffffff81002000 T __x64_sys_read\n";

/// Splits `data` into the image and the records.
pub fn split(data: &[u8]) -> (&[u8], &[u8]) {
    let Some(len) = data.get(..4) else {
        return (&[], data);
    };
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let rest = &data[4..];
    rest.split_at(len.min(rest.len()))
}

/// Runs the collector on the records of `data` in `dir` (which must exist and be empty);
/// returns the labels and sample counts of the processes pkgprof reports.
pub fn run_in(dir: &Path, data: &[u8]) -> Vec<(String, u64, u64)> {
    let (image, records) = split(data);
    let object = dir.join("object");
    let measurement = dir.join("m");
    if safe_fs::replace_file(&object, image).is_err() {
        return Vec::new();
    }
    // The image straight, as the unwinder of a mapped object reads it.
    let _ = fuzzing::unwind_with_image(
        image,
        0x40_0000,
        (0x40_1000, 0x7ffe_0000, 0x7ffe_0100),
        records,
    );
    let mut rec = fuzzing::decode_records(records);
    for side in &mut rec.side_band {
        if let SideBand::Mmap { filename, .. } = &mut side.kind
            && filename.starts_with('/')
        {
            *filename = object.to_string_lossy().into_owned();
        }
    }
    let agg = aggregate(
        &rec,
        &AggregateOptions::default(),
        KernelSymbols::parse(KALLSYMS.to_owned()),
    );
    let mut opts = WriteOptions::default();
    opts.dir = measurement.clone();
    let out = Output::create(&measurement).expect("a new directory can be made");
    write_measurement_to(&rec, &agg, &opts, out).expect("what was aggregated can be written");
    let m = gmon_format::scan(&measurement).expect("the measurement can be listed");
    assert_eq!(
        m.verify().expect("the manifest reads"),
        gmon_format::Verification::Complete,
        "a measurement written whole is complete"
    );
    assert!(m.skipped.is_empty(), "{:?}", m.skipped);
    for p in &m.processes {
        if let Some(info) = &p.info {
            let text = std::fs::read(info).unwrap();
            gmon_format::MeasurementInfo::parse(&text).expect("the info file reads back");
        }
        if let Some(stacks) = &p.stacks {
            let bytes = std::fs::read(stacks).unwrap();
            let file = gmon_format::Stacks::parse(&bytes).expect("the stacks file reads back");
            for r in file.records() {
                r.expect("every stack reads back");
            }
        }
    }
    if m.processes.is_empty() && m.kernel_system.is_none() && m.kernel_other.is_none() {
        return Vec::new();
    }
    let options = callgraph::SeamlessOptions::default();
    match callgraph::Seamless::build(&m, &callgraph::ProcessSelection::System, &options) {
        Ok(s) => s
            .processes
            .iter()
            .map(|p| (p.label.clone(), p.user_samples, p.kernel_samples))
            .collect(),
        Err(e) => panic!("pkgprof cannot report what the collector wrote: {e}"),
    }
}

/// The same under the system's temporary directory, removed afterwards.
pub fn run(data: &[u8]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUN: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "pkgprof-fuzz-collector-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = run_in(&dir, data);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
