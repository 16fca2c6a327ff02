//! Small /proc and /proc/sys readers. Every read goes through the bounded reader with a cap
//! fitting the file, so that no file, whatever it turned into, can hang or flood the collector.

use std::fs;

use safe_fs::ReadOptions;

use crate::recording::ProcCounters;

/// Most bytes read of a small `/proc` or `/sys` text file (stat, status, io, a sysctl).
pub(crate) const SMALL: u64 = 1 << 20;

/// Most bytes read of a large one: a process's memory map or command line (`ARG_MAX` is
/// 2 MiB by default), the kernel's symbols (a few MiB).
pub(crate) const LARGE: u64 = 256 << 20;

/// A `/proc` or `/sys` text file of at most `max` bytes; None if it cannot be read.
pub(crate) fn text(path: &str, max: u64) -> Option<String> {
    safe_fs::read_text(path, &ReadOptions::procfs(max)).ok()
}

/// The same as bytes.
pub(crate) fn bytes(path: &str, max: u64) -> Option<Vec<u8>> {
    safe_fs::read(path, &ReadOptions::procfs(max))
        .ok()
        .map(safe_fs::Contents::into_vec)
}

/// Reads an integer sysctl such as `/proc/sys/kernel/perf_event_paranoid`.
pub(crate) fn sysctl_i64(path: &str) -> Option<i64> {
    text(path, SMALL)?.trim().parse().ok()
}

/// Online CPUs from `/sys/devices/system/cpu/online` (e.g. `0-3,6`).
pub(crate) fn online_cpus() -> Vec<i32> {
    let text = text("/sys/devices/system/cpu/online", SMALL).unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let mut it = part.splitn(2, '-');
        let a: Option<i32> = it.next().and_then(|s| s.parse().ok());
        let b: Option<i32> = it.next().and_then(|s| s.parse().ok());
        match (a, b) {
            (Some(a), Some(b)) => cpus.extend(a..=b),
            (Some(a), None) => cpus.push(a),
            _ => {}
        }
    }
    if cpus.is_empty() {
        // Safety: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
        cpus.extend(0..n as i32);
    }
    cpus
}

fn field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.trim_start_matches(':').split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The numeric fields of a `stat` text, split once; None if it has no `(comm)`. Field `n`
/// (numbered from 1, as proc(5) does) of the result is a number, 0 if absent.
fn stat_fields(stat: &str) -> Option<impl Fn(usize) -> u64 + '_> {
    // The fields after the parenthesised comm, which may itself hold spaces and parentheses,
    // start at field 3 (state).
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    Some(move |n: usize| {
        let field = n.checked_sub(3).and_then(|i| fields.get(i));
        field.and_then(|v| v.parse().ok()).unwrap_or(0)
    })
}

/// Reads the counters of `pid` (a live process or a zombie); None if `stat` is unreadable.
pub(crate) fn counters(pid: u32) -> Option<ProcCounters> {
    let stat = text(&format!("/proc/{pid}/stat"), SMALL)?;
    let status = text(&format!("/proc/{pid}/status"), SMALL).unwrap_or_default();
    let io = text(&format!("/proc/{pid}/io"), SMALL).unwrap_or_default();
    let schedstat = text(&format!("/proc/{pid}/schedstat"), SMALL).unwrap_or_default();
    parse_counters(stat, status, io, schedstat)
}

/// The counters in the texts of a process's `stat`, `status`, `io` and `schedstat` files;
/// None if `stat` has no `(comm)`.
pub(crate) fn parse_counters(
    stat: String,
    status: String,
    io: String,
    schedstat: String,
) -> Option<ProcCounters> {
    let (utime_ticks, stime_ticks, minflt, majflt) = {
        let num = stat_fields(&stat)?;
        (num(14), num(15), num(10), num(12))
    };
    Some(ProcCounters {
        utime_ticks,
        stime_ticks,
        minflt,
        majflt,
        voluntary_ctxt_switches: field(&status, "voluntary_ctxt_switches"),
        nonvoluntary_ctxt_switches: field(&status, "nonvoluntary_ctxt_switches"),
        rchar: field(&io, "rchar"),
        wchar: field(&io, "wchar"),
        read_bytes: field(&io, "read_bytes"),
        write_bytes: field(&io, "write_bytes"),
        stat,
        status,
        io,
        schedstat,
    })
}

/// Thread ids of `pid` from `/proc/PID/task`.
pub(crate) fn threads(pid: i32) -> std::io::Result<Vec<i32>> {
    let mut tids: Vec<i32> = fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Reads what the run keeps of a live process: counters, start time, comm and command line.
pub(crate) fn reading(pid: u32, time: u64) -> Option<crate::recording::ProcReading> {
    let counters = counters(pid)?;
    let cmdline = bytes(&format!("/proc/{pid}/cmdline"), LARGE).unwrap_or_default();
    parse_reading(pid, time, counters, &cmdline)
}

/// What [`reading`] keeps, from the counters and the bytes of `cmdline`; None if `stat` has
/// no `(comm)`.
pub(crate) fn parse_reading(
    pid: u32,
    time: u64,
    counters: ProcCounters,
    cmdline: &[u8],
) -> Option<crate::recording::ProcReading> {
    let open = counters.stat.find('(')?;
    let close = counters.stat.rfind(')')?;
    let comm = counters.stat.get(open + 1..close)?.to_owned();
    let (start_ticks, start_stack) = {
        let field = stat_fields(&counters.stat)?;
        (field(22), field(28))
    };
    let argv = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    Some(crate::recording::ProcReading {
        pid,
        time,
        start_ticks,
        start_stack,
        comm,
        argv,
        counters,
    })
}
