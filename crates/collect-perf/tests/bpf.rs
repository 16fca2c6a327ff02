//! The BPF facility on the live kernel (root): a refused program's error carries the
//! verifier's words, and the in-kernel latency collection's enters and exits match
//! counting-mode perf events on the same process (OSprof's checksums) and a ring-buffer map
//! carries one record per entry, read through its mmap consumer; the wakers of a followed
//! sleeper are reported with their frames; a task-storage map holds a value per thread, and a
//! call still open at the end is counted from its live thread's value.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, MutexGuard};

use collect_perf::LatencyOptions;
use collect_perf::bpf::{
    Alu, Asm, Code, Cond, Helper, Map, MapKind, MapSlot, Program, Reg, RingBuf, Size,
    SyscallLatency, Wakers,
};

/// One test with programs at a time: the kernel does not run a tracepoint's program while
/// another runs on that CPU (it counts a miss), so one test's programs would make another's
/// wake-ups missing.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A shell that says it is ready, then reads two lines: its stdin, once it is ready.
fn reading_shell() -> (Child, ChildStdin) {
    let mut child = Command::new("/bin/sh")
        .args(["-c", "echo ready; read x; read y"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// `bpf_ringbuf_output(ring, &pid_tgid, 8, 0)` for the tasks of process `pid`.
fn ring_program(pid: u32) -> Code {
    let mut a = Asm::new();
    let out = a.label();
    a.call(Helper::GetCurrentPidTgid)
        .store(Size::DW, Reg::R10, -8, Reg::R0)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .jmp_imm(Cond::Ne, Reg::R0, pid as i32, out)
        .ld_map(Reg::R1, MapSlot(0))
        .mov(Reg::R2, Reg::R10)
        .alu_imm(Alu::Add, Reg::R2, -8)
        .mov_imm(Reg::R3, 8)
        .mov_imm(Reg::R4, 0)
        .call(Helper::RingbufOutput)
        .bind(out)
        .mov_imm(Reg::R0, 1)
        .exit();
    a.finish()
}

#[test]
fn a_refused_program_says_what_the_verifier_said() {
    let mut a = Asm::new();
    // R0 is never set: the verifier refuses to return it.
    a.mov_imm(Reg::R1, 0).exit();
    let err = Program::load_tracepoint("pkg_bad", &a.finish(), &[]).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("R0 !read_ok"), "{text}");
    assert!(text.contains("pkg_bad"), "{text}");
}

#[test]
fn maps_read_back_what_was_written() {
    let m = Map::create(MapKind::Hash, "pkg_test", 4, 8, 16).unwrap();
    m.update(&7u32.to_ne_bytes(), &42u64.to_ne_bytes()).unwrap();
    assert_eq!(
        m.lookup(&7u32.to_ne_bytes()).unwrap(),
        Some(42u64.to_ne_bytes().to_vec())
    );
    assert_eq!(m.keys().unwrap(), vec![7u32.to_ne_bytes().to_vec()]);
    assert_eq!(
        m.take(&7u32.to_ne_bytes()).unwrap(),
        Some(42u64.to_ne_bytes().to_vec())
    );
    assert_eq!(m.lookup(&7u32.to_ne_bytes()).unwrap(), None);
}

#[test]
fn enters_and_exits_counted_in_the_kernel_match_counting_events() {
    let _g = serial();
    // Three buckets per power of two: bounds that are not bits, searched in the kernel.
    let mut opts = LatencyOptions::default();
    opts.resolution = 3;
    opts.counting_events = true;
    let r = latency::Resolution::new(3).unwrap();
    let mut lat = SyscallLatency::load(&opts).unwrap();
    // A shell that says it is ready, waits for a line, then makes a few hundred system
    // calls. It is followed once it sleeps in its read: a running process is followed by the
    // programs and the counting events one after the other, so a call made in between would
    // be counted by one side only.
    let mut child = Command::new("/bin/sh")
        .args([
            "-c",
            "echo ready; read x; i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo $i >/dev/null; done",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap()
        .rsplit(')')
        .next()
        .is_some_and(|rest| rest.trim_start().starts_with('S'))
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    lat.follow(pid, true).unwrap();
    // Beside it, a program sending each of the shell's system-call entries through a ring
    // buffer: as many records as the in-kernel count.
    let mut ring = RingBuf::create("pkg_test_ring", 1 << 18).unwrap();
    let prog =
        Program::load_tracepoint("pkg_test_ring", &ring_program(pid), &[ring.map()]).unwrap();
    let tracefs = collect_perf::Tracefs::find_or_mount().unwrap();
    let attached = prog
        .attach(&tracefs.event("raw_syscalls", "sys_enter").unwrap())
        .unwrap();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(child.wait().unwrap().success());
    drop(attached);
    let counts = lat.finish().unwrap();
    let mut records = 0u64;
    ring.read(|r| {
        assert_eq!(r.len(), 8);
        assert_eq!(
            u64::from_ne_bytes(r.try_into().unwrap()) >> 32,
            u64::from(pid)
        );
        records += 1;
    });
    assert_eq!(records, counts.checks[0].received);
    for c in &counts.checks {
        assert!(c.received > 100, "{c:?}");
        assert_eq!(Some(c.received), c.counted, "{c:?}");
    }
    assert_eq!(counts.dropped, 0);
    // Each bucket holds only latencies between its bounds (Resolution's rule, in the kernel).
    let mut calls = 0;
    for (_, (_, _, _, b), c) in counts.buckets() {
        calls += c.count;
        assert!(
            c.min >= r.lower_bound(*b) && c.max < r.lower_bound(b + 1),
            "{b}: {c:?}"
        );
        assert!(
            c.total >= c.count * c.min && c.total <= c.count * c.max,
            "{c:?}"
        );
    }
    assert!(calls > 100 && calls <= counts.checks[1].received, "{calls}");
    assert!(
        counts
            .notes
            .iter()
            .all(|n| !n.contains("left out") && !n.contains("no start time")),
        "{:?}",
        counts.notes
    );
}

#[test]
fn a_call_still_open_at_the_end_is_counted_from_its_threads_value() {
    let _g = serial();
    let mut opts = LatencyOptions::default();
    opts.counting_events = true;
    let mut lat = SyscallLatency::load(&opts).unwrap();
    // Followed asleep in its first read (a call whose entry was not seen), then woken: it
    // reads the line and sleeps in `read y`'s read, a call the programs saw begin and that is
    // still open at the end. Its thread is alive, so only its task-storage value holds it.
    let (mut child, mut stdin) = reading_shell();
    let pid = child.id();
    let asleep = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('S'))
    };
    while !asleep() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    lat.follow(pid, true).unwrap();
    stdin.write_all(b"a\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    while !asleep() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let counts = lat.finish().unwrap();
    stdin.write_all(b"b\n").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // Every entry is in a bucket or unpaired: the open read among them, or the programs'
    // checksum fails with a note.
    assert!(
        counts.notes.iter().all(|n| !n.contains("checksum")),
        "{:?}",
        counts.notes
    );
    for c in &counts.checks {
        assert_eq!(Some(c.received), c.counted, "{c:?}");
    }
    let paired: u64 = counts.buckets().map(|(_, _, c)| c.count).sum();
    assert_eq!(counts.checks[0].received, paired + 1, "{:?}", counts.checks);
    assert_eq!(counts.checks[1].received, paired + 1, "{:?}", counts.checks);
}

#[test]
fn a_followed_sleeper_is_reported_with_its_waker_and_the_wakers_frames() {
    let _g = serial();
    let mut wakers = Wakers::load(8).unwrap();
    // The shell sleeps reading a pipe: this test's write wakes it.
    let (mut child, mut stdin) = reading_shell();
    let pid = child.id();
    wakers.follow(pid, true).unwrap();
    // Asleep once followed: its next switch-out is seen, and the write wakes it.
    for line in [&b"a\n"[..], b"b\n"] {
        while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap()
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('S'))
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        stdin.write_all(line).unwrap();
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let mut seen = Vec::new();
    wakers.read(|w| {
        if w.tid == pid {
            seen.push(w);
        }
    });
    let me = std::process::id();
    let by_me: Vec<_> = seen.iter().filter(|w| w.waker_pid == me).collect();
    assert!(!by_me.is_empty(), "{seen:?}");
    assert!(
        by_me
            .iter()
            .all(|w| !w.frames.is_empty() && w.frames.len() <= 8),
        "{by_me:?}"
    );
    assert!(seen.windows(2).all(|p| p[0].time <= p[1].time), "{seen:?}");
    assert_eq!(wakers.lost(), 0);
    assert!(wakers.recorded() >= seen.len() as u64);
}

#[test]
fn a_task_storage_value_is_the_threads_own() {
    let _g = serial();
    let store = Map::create_task_storage("pkg_test_task", 8).unwrap();
    let (mut child, mut stdin) = reading_shell();
    let pid = child.id();
    // At each system call of the child's thread: its value, created on first use, counts.
    let mut a = Asm::new();
    let out = a.label();
    a.call(Helper::GetCurrentPidTgid)
        .alu_imm(Alu::Rsh, Reg::R0, 32)
        .jmp_imm(Cond::Ne, Reg::R0, pid as i32, out)
        .call(Helper::GetCurrentTaskBtf)
        .mov(Reg::R2, Reg::R0)
        .ld_map(Reg::R1, MapSlot(0))
        .mov_imm(Reg::R3, 0)
        .mov_imm(Reg::R4, 1)
        .call(Helper::TaskStorageGet)
        .jmp_imm(Cond::Eq, Reg::R0, 0, out)
        .load(Size::DW, Reg::R1, Reg::R0, 0)
        .alu_imm(Alu::Add, Reg::R1, 1)
        .store(Size::DW, Reg::R0, 0, Reg::R1)
        .bind(out)
        .mov_imm(Reg::R0, 0)
        .exit();
    let prog = Program::load_raw_tracepoint("pkg_test_task", &a.finish(), &[&store]).unwrap();
    let attached = prog.attach_raw("sys_enter").unwrap();
    stdin.write_all(b"a\n").unwrap();
    // User space finds a task's value by a pidfd of it.
    let value = |pid: u32| {
        // Safety: pidfd_open takes a pid and flags; it returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        assert!(fd >= 0, "pidfd_open {pid}");
        // Safety: fd is a descriptor just opened and owned by nothing else.
        let fd =
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
        let key = std::os::fd::AsRawFd::as_raw_fd(&fd).to_ne_bytes();
        store
            .lookup(&key)
            .unwrap()
            .map(|v| u64::from_ne_bytes(v.try_into().unwrap()))
    };
    let mut calls = None;
    for _ in 0..1000 {
        calls = value(pid);
        if calls.is_some_and(|n| n >= 2) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(calls.is_some_and(|n| n >= 2), "{calls:?}");
    // This process made calls too, but has no value: the program never created one.
    assert_eq!(value(std::process::id()), None);
    drop(attached);
    stdin.write_all(b"b\n").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
