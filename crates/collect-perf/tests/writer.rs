//! The measurement writer without a live kernel: a recording built by hand (as perf-import or a
//! stream would feed one), aggregated with hand-made kernel symbols and written with a
//! hand-made machine snapshot, reads back through gmon-format with exactly what was put in.
//! Nothing here opens a perf event or reads the running machine's kernel.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use collect_perf::{
    AggregateOptions, KernelSymbols, MachineSnapshot, Recording, SideBand, SideRecord,
    WriteOptions, aggregate, write_measurement,
};
use gmon_format::{BoundaryKind, MeasurementInfo, Stacks, scan};

mod common;

/// The scratch directory, removed when the test passes.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

const KALLSYMS: &str = "ffffffff81000000 T entry_SYSCALL_64\n\
                        ffffffff81001000 T ksys_read\n\
                        ffffffff81002000 D some_data\n";

/// A process 4242 that execs `worker` (as a launched command is first seen) with one mapping, three user-mode samples in `main`
/// and two in the kernel's `ksys_read`, entered by a system call from 0x401150.
fn recording() -> Recording {
    let mut rec = Recording::default();
    rec.frequency = 1000;
    rec.start_time = 1_000;
    rec.start_realtime = 1_700_000_000_000_000_000;
    rec.end_time = 20_000_000;
    rec.user_stack_bytes = 8192;
    rec.max_stack = 127;
    let side = |time, kind| SideRecord { time, cpu: 0, kind };
    rec.side_band = vec![
        side(
            3_000,
            SideBand::Comm {
                pid: 4242,
                tid: 4242,
                comm: "worker".into(),
                exec: true,
            },
        ),
        side(
            4_000,
            SideBand::Mmap {
                pid: 4242,
                tid: 4242,
                addr: 0x401000,
                len: 0x1000,
                pgoff: 0x1000,
                build_id: Some(vec![0xab; 20]),
                prot: 5,
                flags: 2,
                filename: "/nonexistent/worker".into(),
            },
        ),
        side(
            19_000_000,
            SideBand::Exit {
                pid: 4242,
                ppid: 1,
                tid: 4242,
                ptid: 1,
            },
        ),
    ];
    for i in 0..3u64 {
        rec.push_sample(
            5_000_000 + i * 1_000_000,
            4242,
            4242,
            0,
            1_000_000,
            0x401100,
            true,
            None,
            &[],
            &[0x401100, 0x401200],
            &[],
        );
    }
    for i in 0..2u64 {
        rec.push_sample(
            10_000_000 + i * 1_000_000,
            4242,
            4242,
            1,
            1_000_000,
            0xffff_ffff_8100_1020,
            false,
            None,
            &[0xffff_ffff_8100_1020, 0xffff_ffff_8100_0010],
            &[0x401150, 0x401200],
            &[],
        );
    }
    rec
}

#[test]
fn a_hand_made_recording_and_machine_are_written_and_read_back() {
    let rec = recording();
    let agg = aggregate(
        &rec,
        &AggregateOptions::default(),
        KernelSymbols::parse(KALLSYMS.into()),
    );
    let dir =
        Scratch(std::env::temp_dir().join(format!("collect-perf-writer-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let mut machine = MachineSnapshot::default();
    machine.release = Some("6.1.0-elsewhere".into());
    machine.kernel_build_id = Some(vec![0x12, 0x34, 0x56, 0x78]);
    machine.boot_id = Some("0badc0de-1111-2222-3333-444455556666\n".into());
    let mut opts = WriteOptions::default();
    opts.dir = dir.0.clone();
    opts.machine = Some(machine);
    let summary = write_measurement(&rec, &agg, &opts).unwrap();
    assert_eq!((summary.processes, summary.samples), (1, 5));

    let ms = scan(&dir.0).unwrap();
    assert!(ms.skipped.is_empty(), "{:?}", ms.skipped);
    assert_eq!(ms.processes.len(), 1);
    let pf = &ms.processes[0];
    assert_eq!(pf.pid, 4242);
    let info = MeasurementInfo::parse(&std::fs::read(pf.info.as_ref().unwrap()).unwrap()).unwrap();
    // The machine is the snapshot given, not the one the test runs on.
    assert_eq!(info.kernel.release.as_deref(), Some("6.1.0-elsewhere"));
    assert_eq!(
        info.kernel.build_id.as_deref(),
        Some(&[0x12, 0x34, 0x56, 0x78][..])
    );
    assert_eq!(
        info.kernel.symbols_file.as_deref(),
        Some("kallsyms.0badc0de")
    );
    assert_eq!(
        std::fs::read_to_string(dir.0.join("kallsyms.0badc0de")).unwrap(),
        KALLSYMS
    );
    assert!(
        !std::fs::read_dir(&dir.0).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("vdso")),
        "no vDSO image was given"
    );
    // The process as the recording has it.
    assert_eq!(info.process.pid, 4242);
    assert_eq!(
        info.process.comm.as_ref().map(|c| c.to_string()),
        Some("worker".into())
    );
    let m = &info.mappings[0];
    assert_eq!(
        (m.start, m.end, m.file_offset),
        (0x401000, 0x402000, Some(0x1000))
    );
    assert_eq!(m.path.as_deref(), Some(&b"/nonexistent/worker"[..]));
    assert_eq!(m.build_id.as_deref(), Some(&[0xab; 20][..]));
    assert_eq!(
        m.load_bias, None,
        "the file is not there to read its segments"
    );
    // Three user samples in the user gmon; two in the kernel gmon, with the boundary arc from
    // the user call site into the entry code and the call between the two kernel frames; the
    // system-call boundary counted twice.
    let (user, _) = common::gmon(pf.user.as_ref().unwrap());
    let (kernel, arcs) = common::gmon(pf.kernel.as_ref().unwrap());
    assert_eq!((user, kernel), (3, 2));
    assert_eq!(
        arcs,
        [
            (0x401150, 0xffff_ffff_8100_0010, 2),
            (0xffff_ffff_8100_0010, 0xffff_ffff_8100_1020, 2)
        ]
    );
    assert_eq!(info.boundary.entries.get(&BoundaryKind::Syscall), Some(&2));
    assert_eq!(info.boundary.user_only, Some(3));
    let stacks = std::fs::read(pf.stacks.as_ref().unwrap()).unwrap();
    let records: Vec<_> = Stacks::parse(&stacks)
        .unwrap()
        .records()
        .map(|r| r.unwrap().1)
        .collect();
    assert_eq!(records.iter().map(|r| r.samples).sum::<u64>(), 5);
    assert!(
        records
            .iter()
            .any(|r| r.boundary == Some(BoundaryKind::Syscall) && r.samples == 2)
    );
}
