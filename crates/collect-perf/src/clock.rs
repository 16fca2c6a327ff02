//! The clocks a recording is stamped with, read from the live machine: `CLOCK_MONOTONIC` (the
//! perf events' clock) and `CLOCK_REALTIME` (to place the run in calendar time).

/// Now, on the perf events' clock.
pub(crate) fn monotonic_ns() -> u64 {
    now_ns(libc::CLOCK_MONOTONIC)
}

/// Now, in nanoseconds since the epoch.
pub(crate) fn realtime_ns() -> u64 {
    now_ns(libc::CLOCK_REALTIME)
}

fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
