//! Fuzz body for what the collector parses of the kernel's text and messages: a process's
//! `/proc` files (stat, status, io, schedstat, cmdline, maps), taskstats exit datagrams and
//! the kallsyms text it snapshots. Any bytes give a value or nothing, never a panic.

use collect_perf::{KernelSymbols, fuzzing};

/// Cuts `data` at `0xfe` bytes into the six `/proc` files; also reads it whole as a taskstats
/// datagram and as kallsyms text.
pub fn run(data: &[u8]) {
    let mut parts = data.split(|&b| b == 0xfe);
    let mut next = || String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let (stat, status, io, schedstat) = (next(), next(), next(), next());
    let cmdline = next();
    let maps = next();
    for m in fuzzing::proc_maps(&maps) {
        let collect_perf::SideBand::Mmap { addr, len, .. } = m else {
            panic!("a mapping that is not an mmap: {m:?}");
        };
        assert!(addr.checked_add(len).is_some(), "{addr:#x} + {len:#x}");
    }
    if let Some(r) = fuzzing::proc_reading(&stat, &status, &io, &schedstat, cmdline.as_bytes()) {
        assert!(stat.contains(&r.comm), "comm {:?} not in {stat:?}", r.comm);
    }
    for exit in fuzzing::taskstats_datagram(data) {
        let _ = exit;
    }
    let text = String::from_utf8_lossy(data).into_owned();
    let k = KernelSymbols::parse(text.clone());
    assert_eq!(k.text(), text);
}
