//! The million-sample profile the model and export benches measure: 2,000 functions, 20,000
//! call paths of depth 8 to 40 with some recursion, 32 threads of 4 processes.

use profile_model::{
    Frame, FrameId, Function, Label, LabelKey, LabelSetId, Profile, ProfileBuilder, Side, ValueKind,
};

/// Samples in the profile.
pub const SAMPLES: usize = 1_000_000;
const FUNCTIONS: u32 = 2_000;
const PATHS: usize = 20_000;

/// A small deterministic generator (xorshift64*), so every run builds the same profile.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % n
    }
}

/// The stacks samples fall in (function indices, outermost first: depth 8 to 40, with some
/// recursion) and, for each sample, which stack and which of 32 threads.
pub fn workload() -> (Vec<Vec<u32>>, Vec<(u32, u32)>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let paths = (0..PATHS)
        .map(|_| {
            let depth = 8 + rng.below(33) as usize;
            let mut path = vec![0];
            while path.len() < depth {
                let last = *path.last().expect("non-empty");
                // Mostly a callee near the caller (shared prefixes, like real programs).
                let next = if rng.below(10) == 0 {
                    last
                } else {
                    (last + 1 + rng.below(50) as u32) % FUNCTIONS
                };
                path.push(next);
            }
            path
        })
        .collect();
    let samples = (0..SAMPLES)
        .map(|_| (rng.below(PATHS as u64) as u32, rng.below(32) as u32))
        .collect();
    (paths, samples)
}

/// The profile: every sample's stack interned from its frames, as a reader does.
pub fn build(paths: &[Vec<u32>], samples: &[(u32, u32)]) -> Profile {
    let mut b = ProfileBuilder::new();
    b.value_type(ValueKind::SAMPLES);
    b.value_type(ValueKind::CPU_TIME);
    let frames: Vec<FrameId> = (0..FUNCTIONS)
        .map(|i| {
            let name = b.string(&format!("function_{i}"));
            let f = b.function(Function::new(name, Side::User));
            b.frame(Frame::new(f))
        })
        .collect();
    let threads: Vec<LabelSetId> = (0..32)
        .map(|t| {
            b.label_set(&[
                Label::number(LabelKey::Pid, 1000 + t / 8),
                Label::number(LabelKey::Tid, 2000 + t),
            ])
        })
        .collect();
    let mut stack_frames = Vec::new();
    for &(path, thread) in samples {
        stack_frames.clear();
        stack_frames.extend(paths[path as usize].iter().map(|&f| frames[f as usize]));
        let stack = b.stack_of(&stack_frames).expect("paths are not empty");
        b.add_sample(stack, threads[thread as usize], &[1, 1_000_000])
            .expect("two values");
    }
    b.build()
}
