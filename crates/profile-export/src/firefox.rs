//! The Firefox Profiler's processed profile format, written by fxprof-processed-profile (the
//! crate samply writes it with): a process per pid, a thread per tid, frames named as in the
//! listings, kernel frames in an orange `Kernel` category and user frames in a yellow `User`
//! one.
//!
//! Samples keep their recorded times (relative to the first); samples without one are laid
//! out one sampling interval apart in the model's order. A sample's weight is its value in
//! samples: a time value is divided by the period when the profile has one of that kind.

use std::io::{self, Write};

use fxprof_processed_profile::{
    self as fx, CategoryColor, CategoryPairHandle, CpuDelta, FrameFlags, FrameInfo,
    ReferenceTimestamp, SamplingInterval, StackHandle, ThreadHandle, Timestamp, WeightType,
};
use profile_model::{FunctionId, LabelKey, LabelValue, Profile, StackId, Unit, ValueTypeId};
use rustc_hash::FxHashMap;

use crate::names::{Names, is_kernel};
use crate::speedscope::thread_key;
use crate::{ExportOptions, Result, json_error};

/// Writes the processed profile of value type `vt`.
pub(crate) fn write(
    profile: &Profile,
    vt: ValueTypeId,
    options: &ExportOptions,
    note: Option<&str>,
    out: impl Write,
) -> Result<()> {
    let kind = profile.value_type(vt);
    let period = profile.period().filter(|p| p.value > 0);
    // Time values become sample counts when one sample is a known amount of that time.
    let divisor = period.filter(|p| p.kind == kind).map_or(1, |p| p.value);
    let interval = match period {
        Some(p) if p.kind.unit == Unit::Nanoseconds => SamplingInterval::from_nanos(p.value as u64),
        _ => SamplingInterval::from_millis(1),
    };
    let mut product = options
        .title
        .clone()
        .unwrap_or_else(|| format!("pkgprof {}", kind.name));
    if let Some(note) = note {
        product = format!("{product} ({note})");
    }
    let mut fxp = fx::Profile::new(
        &product,
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        interval,
    );
    let user: CategoryPairHandle = fxp.add_category("User", CategoryColor::Yellow).into();
    let kernel: CategoryPairHandle = fxp.add_category("Kernel", CategoryColor::Orange).into();
    let weight_type = match kind.unit {
        Unit::Bytes => WeightType::Bytes,
        _ => WeightType::Samples,
    };
    let names = Names::new(profile);
    let start = profile.samples().filter_map(|s| s.time).min().unwrap_or(0);

    let mut processes: FxHashMap<Option<i64>, fx::ProcessHandle> = FxHashMap::default();
    let mut threads: FxHashMap<(Option<i64>, Option<i64>), Thread> = FxHashMap::default();
    for sample in profile.samples() {
        let value = sample.values[vt.index()] / divisor;
        if value <= 0 {
            continue;
        }
        let key = thread_key(profile, sample.labels);
        let thread = threads.entry(key).or_insert_with(|| {
            let comm = profile
                .labels(sample.labels)
                .iter()
                .find_map(|l| match (l.key, l.value) {
                    (LabelKey::Comm, LabelValue::Text(s)) => Some(profile.string(s).to_owned()),
                    _ => None,
                });
            let name = comm.unwrap_or_else(|| product.clone());
            let pid = key.0.unwrap_or(0);
            let process = *processes.entry(key.0).or_insert_with(|| {
                fxp.add_process(&name, pid as u32, Timestamp::from_nanos_since_reference(0))
            });
            let tid = key.1.unwrap_or(pid);
            let handle = fxp.add_thread(
                process,
                tid as u32,
                Timestamp::from_nanos_since_reference(0),
                tid == pid,
            );
            fxp.set_thread_name(handle, &name);
            fxp.set_thread_samples_weight_type(handle, weight_type.clone());
            Thread {
                handle,
                frames: FxHashMap::default(),
                stacks: FxHashMap::default(),
                next_time: 0,
            }
        });
        let stack = thread.stack(&mut fxp, profile, &names, sample.stack, user, kernel);
        let time = match sample.time {
            Some(t) => t - start,
            None => {
                let t = thread.next_time;
                thread.next_time += interval.nanos();
                t
            }
        };
        let weight = i32::try_from(value).unwrap_or(i32::MAX);
        fxp.add_sample(
            thread.handle,
            Timestamp::from_nanos_since_reference(time),
            Some(stack),
            CpuDelta::ZERO,
            weight,
        );
    }
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut out, &fxp).map_err(json_error)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// A thread of the Firefox profile, with the frames and stacks interned in it so far.
struct Thread {
    handle: ThreadHandle,
    frames: FxHashMap<FunctionId, fx::FrameHandle>,
    stacks: FxHashMap<StackId, StackHandle>,
    /// The time of the next sample that has none, in nanoseconds.
    next_time: u64,
}

impl Thread {
    /// The thread's stack handle for model stack `stack`, interning what is new (callers
    /// first, without recursion: stacks can be thousands of frames deep).
    fn stack(
        &mut self,
        fxp: &mut fx::Profile,
        profile: &Profile,
        names: &Names,
        stack: StackId,
        user: CategoryPairHandle,
        kernel: CategoryPairHandle,
    ) -> StackHandle {
        if let Some(&h) = self.stacks.get(&stack) {
            return h;
        }
        let mut missing = vec![stack];
        let mut parent = None;
        while let Some(p) = profile.stack(*missing.last().expect("not empty")).parent {
            if let Some(&h) = self.stacks.get(&p) {
                parent = Some(h);
                break;
            }
            missing.push(p);
        }
        for node in missing.into_iter().rev() {
            let f = profile.frame(profile.stack(node).frame).function;
            let frame = *self.frames.entry(f).or_insert_with(|| {
                let name = fxp.intern_string(names.get(f));
                fxp.intern_frame(
                    self.handle,
                    FrameInfo {
                        frame: fx::Frame::Label(name),
                        category_pair: if is_kernel(profile, f) { kernel } else { user },
                        flags: FrameFlags::empty(),
                    },
                )
            });
            let h = fxp.intern_stack(self.handle, parent, frame);
            self.stacks.insert(node, h);
            parent = Some(h);
        }
        parent.expect("a stack has a frame")
    }
}
