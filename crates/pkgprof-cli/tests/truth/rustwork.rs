//! A Rust program, ground truth by construction as truth.h builds it for C: rustwork [SCALE]
//!
//!   main ── driver ─┬─ descend (direct recursion, depth 60, a 256-byte array a level) ── leaf
//!                   ├─ sorter ── slice::sort_by (the standard library's generic sort) ── compare
//!                   ├─ collect (an iterator chain collected into a Vec, closures inlined)
//!                   └─ leaf
//!
//! Rust's own start-up (`std::rt::lang_start`) sits between the C library's and `main`; the
//! standard library is built without frame pointers whatever the program is built with, and
//! `compare` runs under its sort's frames. Each instrumented function calls `truth_enter` first
//! and `truth_leave` last (named as truth.h's, so the harness counts them alike); at exit one
//! line per function goes to $TRUTH_OUT: `<name> <self ms> <inclusive ms>` after `total <ms>`.
//! Built by `rustc` with the crate name `rustwork`, so the names are the listing's.
use std::hint::black_box;
use std::io::Write;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

unsafe extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
const NAMES: [&str; 7] = [
    "rustwork::main",
    "rustwork::driver",
    "rustwork::descend",
    "rustwork::leaf",
    "rustwork::sorter",
    "rustwork::compare",
    "rustwork::collect",
];
const MAIN: usize = 0;
const DRIVER: usize = 1;
const DESCEND: usize = 2;
const LEAF: usize = 3;
const SORTER: usize = 4;
const COMPARE: usize = 5;
const COLLECT: usize = 6;

/// The shadow stack and the sums, as truth.h keeps them (one thread).
struct Truth {
    self_ms: [f64; 7],
    incl_ms: [f64; 7],
    since: [f64; 7],
    active: [u32; 7],
    stack: Vec<usize>,
    last: f64,
}

static mut TRUTH: Truth = Truth {
    self_ms: [0.0; 7],
    incl_ms: [0.0; 7],
    since: [0.0; 7],
    active: [0; 7],
    stack: Vec::new(),
    last: 0.0,
};
/// Work steps per millisecond of CPU time.
static mut STEPS_PER_MS: u64 = 0;

fn now() -> f64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // Safety: a valid out-pointer for the duration of the call.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.sec as f64 * 1e3 + ts.nsec as f64 / 1e6
}

fn truth() -> &'static mut Truth {
    // Safety: one thread, and no reference is held across calls.
    unsafe { &mut *std::ptr::addr_of_mut!(TRUTH) }
}

fn ms() -> u64 {
    // Safety: written once before any reader, on the only thread.
    unsafe { STEPS_PER_MS }
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn truth_enter(f: usize) {
    let t = now();
    let s = truth();
    if let Some(&top) = s.stack.last() {
        s.self_ms[top] += t - s.last;
    }
    s.last = t;
    s.stack.push(f);
    if s.active[f] == 0 {
        s.since[f] = t;
    }
    s.active[f] += 1;
}

#[unsafe(no_mangle)]
#[inline(never)]
pub fn truth_leave(f: usize) {
    let t = now();
    let s = truth();
    if let Some(top) = s.stack.pop() {
        s.self_ms[top] += t - s.last;
    }
    s.last = t;
    s.active[f] -= 1;
    if s.active[f] == 0 {
        s.incl_ms[f] += t - s.since[f];
    }
}

/// `n` steps of a multiply-add chain the optimizer cannot shorten, inlined into its caller.
#[inline(always)]
fn work(n: u64) -> u64 {
    let mut x = black_box(1u64);
    for _ in 0..n {
        x = black_box(
            x.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    x
}

#[inline(never)]
fn leaf(tenths: u64) -> u64 {
    truth_enter(LEAF);
    let r = work(ms() * tenths / 10);
    truth_leave(LEAF);
    r
}

#[inline(never)]
fn descend(depth: u32, from: &[u8; 256]) -> u64 {
    truth_enter(DESCEND);
    let mut here = [0u8; 256];
    here[depth as usize % 256] = from[0].wrapping_add(1);
    let here = black_box(here);
    let mut r = work(ms() / 10);
    r ^= match depth {
        0 => leaf(20),
        _ => descend(depth - 1, &here),
    };
    truth_leave(DESCEND);
    r
}

#[inline(never)]
fn compare(a: &u64, b: &u64) -> std::cmp::Ordering {
    truth_enter(COMPARE);
    black_box(work(ms() / 20));
    truth_leave(COMPARE);
    a.cmp(b)
}

#[inline(never)]
fn sorter() -> u64 {
    truth_enter(SORTER);
    let mut v: Vec<u64> = (0..24u64).map(|i| (i * 7919) % 101).collect();
    v.sort_by(compare);
    let r = v[3] ^ work(ms() * 2);
    truth_leave(SORTER);
    r
}

#[inline(never)]
fn collect() -> u64 {
    truth_enter(COLLECT);
    let v: Vec<u64> = (0..2000u64).map(|i| work(ms() / 500) ^ i).collect();
    let r = v.iter().fold(0, |a, b| a ^ b);
    truth_leave(COLLECT);
    r
}

#[inline(never)]
fn driver(scale: u32) -> u64 {
    truth_enter(DRIVER);
    let mut r = 0;
    for _ in 0..20 * scale {
        r ^= work(ms());
        r ^= descend(60, &[1; 256]);
        r ^= sorter();
        r ^= collect();
        r ^= leaf(15);
    }
    truth_leave(DRIVER);
    r
}

/// Steps per millisecond, the best of five measurements (their time is main's).
fn steps_per_ms() -> u64 {
    let n = 200_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t0 = now();
        black_box(work(n));
        let t = now() - t0;
        if t > 0.0 && t < best {
            best = t;
        }
    }
    if best == f64::MAX {
        n
    } else {
        (n as f64 / best) as u64
    }
}

fn report() {
    let s = truth();
    let mut out = format!("total {:.3}\n", now());
    for (i, name) in NAMES.iter().enumerate() {
        out += &format!("{name} {:.3} {:.3}\n", s.self_ms[i], s.incl_ms[i]);
    }
    match std::env::var_os("TRUTH_OUT") {
        Some(path) => std::fs::write(path, out).expect("cannot write $TRUTH_OUT"),
        None => std::io::stderr().write_all(out.as_bytes()).expect("stderr"),
    }
}

fn main() {
    truth_enter(MAIN);
    // Safety: written before any reader, on the only thread.
    unsafe { STEPS_PER_MS = steps_per_ms() };
    let scale = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    black_box(driver(scale));
    truth_leave(MAIN);
    report();
}
