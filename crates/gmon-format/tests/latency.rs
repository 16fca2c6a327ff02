//! Latency files: random files written and read back byte for byte, and the fuzz body on every
//! truncation and on random damage of them.

#![allow(clippy::unwrap_used)]

#[path = "../../../fuzz/src/latency.rs"]
mod latency_target;

use gmon_format::latency::{
    Blocking, BucketCount, EventCheck, LatencyFile, Operation, SleepSite, Waker,
};

mod common;

use common::Rng;

fn frames(rng: &mut Rng, kernel: bool) -> Vec<u64> {
    let base = if kernel {
        0xffff_ffff_8100_0000
    } else {
        0x5555_0000
    };
    (0..rng.below(5))
        .map(|_| base + rng.below(1 << 20))
        .collect()
}

fn random_file(rng: &mut Rng) -> LatencyFile {
    let mut f = LatencyFile::new(1 << rng.below(3), "x86_64");
    let sliced = rng.below(2) == 1;
    if sliced {
        f.slices = Some((1 + rng.below(1 << 30), rng.below(1 << 40)));
    }
    f.checks.push(EventCheck {
        event: "raw_syscalls:sys_enter".into(),
        received: rng.below(1000),
        counted: (rng.below(2) == 1).then(|| rng.below(1000)),
    });
    f.lost = rng.below(3);
    (f.unpaired_enters, f.unpaired_exits, f.dropped) = (rng.below(3), rng.below(3), rng.below(3));
    for _ in 0..rng.below(4) {
        let mut op = Operation {
            syscall: rng.below(460),
            site: frames(rng, false),
            ..Operation::default()
        };
        let mut key = (0u64, 0u32);
        for _ in 0..1 + rng.below(4) {
            key = if sliced && rng.below(2) == 1 {
                (key.0 + 1, rng.below(20) as u32)
            } else {
                (key.0, key.1 + 1 + rng.below(3) as u32)
            };
            let count = 1 + rng.below(100);
            op.buckets.push(BucketCount {
                slice: key.0,
                bucket: key.1,
                count,
                total_ns: count << key.1.min(40),
            });
            op.calls += count;
        }
        op.total_ns = op.buckets.iter().map(|b| b.total_ns).sum();
        (op.min_ns, op.max_ns, op.faults) = (1, op.total_ns, rng.below(9));
        if rng.below(2) == 1 {
            let mut b = Blocking {
                blocked_ns: rng.below(1 << 30),
                runnable_ns: rng.below(1 << 20),
                sleeps: rng.below(50),
                ..Blocking::default()
            };
            for _ in 0..rng.below(3) {
                b.sites.push(SleepSite {
                    frames: frames(rng, true),
                    count: rng.below(9),
                    blocked_ns: rng.below(1 << 30),
                });
                b.wakers.push(Waker {
                    pid: rng.below(1 << 22) as u32,
                    frames: frames(rng, true),
                    count: rng.below(9),
                    blocked_ns: rng.below(1 << 30),
                });
            }
            op.blocking = Some(b);
        }
        f.operations.push(op);
    }
    f
}

#[test]
fn random_files_round_trip_and_survive_damage() {
    let mut rng = Rng(0x001a_7ec7);
    for _ in 0..200 {
        let f = random_file(&mut rng);
        let text = f.to_text().unwrap();
        assert_eq!(LatencyFile::parse(text.as_bytes()).unwrap(), f);
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            latency_target::run(&bytes[..cut]);
            // Cut anywhere before the end, the file is refused, never read short.
            assert!(
                LatencyFile::parse(&bytes[..cut]).is_err(),
                "cut at {cut}:\n{text}"
            );
        }
        for _ in 0..20 {
            let mut damaged = bytes.to_vec();
            let at = rng.below(damaged.len() as u64) as usize;
            damaged[at] = rng.below(256) as u8;
            latency_target::run(&damaged);
        }
    }
}
