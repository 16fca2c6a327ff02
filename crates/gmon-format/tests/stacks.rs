//! Sampled-stacks files: random files written and read back, and the fuzz body on every
//! truncation and on random damage of them.

#![allow(clippy::unwrap_used)]

#[path = "../../../fuzz/src/stacks.rs"]
mod stacks_target;

use gmon_format::{BoundaryKind, Stack, Stacks, StacksWriter};

mod common;

use common::Rng;

/// A stack's fields: samples, nanoseconds, boundary, truncated, kernel and user frames.
type Fields = (u64, u64, Option<BoundaryKind>, bool, Vec<u64>, Vec<u64>);

fn random_file(rng: &mut Rng) -> (Vec<u8>, Vec<Fields>) {
    let n = rng.below(6);
    let mut want = Vec::new();
    for _ in 0..n {
        let nk = rng.below(5) as usize;
        let nu = rng.below(5) as usize;
        let kernel: Vec<u64> = (0..nk)
            .map(|_| 0xffff_ffff_8000_0000 | rng.next() >> 34)
            .collect();
        let user: Vec<u64> = (0..nu).map(|_| rng.next() >> 17).collect();
        let boundary = match rng.below(BoundaryKind::ALL.len() as u64 + 1) {
            0 => None,
            k => Some(BoundaryKind::ALL[k as usize - 1]),
        };
        want.push((
            rng.next(),
            rng.next(),
            boundary,
            rng.below(2) == 0,
            kernel,
            user,
        ));
    }
    let mut w = StacksWriter::new(Vec::new(), n).unwrap();
    for (samples, ns, boundary, t, k, u) in &want {
        w.stack(&Stack {
            samples: *samples,
            nanoseconds: *ns,
            boundary: *boundary,
            user_truncated: *t,
            kernel: k,
            user: u,
        })
        .unwrap();
    }
    (w.finish().unwrap(), want)
}

#[test]
fn random_files_round_trip() {
    let mut rng = Rng(7);
    for case in 0..2000 {
        let (data, want) = random_file(&mut rng);
        let s = Stacks::parse(&data).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let got: Vec<_> = s
            .records()
            .map(|r| {
                let r = r.unwrap().1;
                (
                    r.samples,
                    r.nanoseconds,
                    r.boundary,
                    r.user_truncated,
                    r.kernel.to_vec(),
                    r.user.to_vec(),
                )
            })
            .collect();
        assert_eq!(got, want, "case {case}");
        stacks_target::run(&data);
    }
}

#[test]
fn fuzz_body_on_truncations_and_damage() {
    let mut rng = Rng(99);
    for _ in 0..300 {
        let (data, _) = random_file(&mut rng);
        for len in 0..=data.len() {
            stacks_target::run(&data[..len]);
        }
        let mut bad = data.clone();
        for _ in 0..=rng.below(4) {
            if bad.is_empty() {
                break;
            }
            let at = rng.below(bad.len() as u64) as usize;
            bad[at] = rng.next() as u8;
        }
        stacks_target::run(&bad);
    }
}
