//! The profile model → gprof's structures: the symbol table, the gmon sum and the sampled
//! stacks that [`crate::Analysis`] and the listings read, and that `--merge-out` writes, made
//! from a model whose functions carry their addresses (the model of a measurement that
//! [`crate::Seamless::build`] makes). The listing of a measurement is thus computed from its
//! model, the same value its exports and diffs read.
//!
//! What the model holds and this reads back:
//!
//! * every function with an address is a symbol, named `<label>:<name>` (`137u:read`,
//!   `kernel:schedule`) as the listings print it, a function entry or not as the model says;
//!   a last symbol `[end]` bounds the table, since gprof gives the last symbol of a table no
//!   samples;
//! * the histogram is value type [`HISTOGRAM`] when the model has it (beside sampled stacks),
//!   else `samples`: each sample counts at its innermost frame's address;
//! * the sampled stacks are the `samples` of a model that also has a [`HISTOGRAM`];
//! * the arcs are the model's arcs, from the caller's frame to the callee's.
//!
//! Function names are the model's text: a symbol name that is not UTF-8 is printed with
//! replacement characters where gprof would print its bytes.

use std::collections::BTreeMap;

use gmon_format::{
    AddressSize, Endian, HistogramUnit, SECONDS, Sum, sampled_sum, write_sampled_profile,
};
use profile_model::{Profile, Unit, ValueKind, ValueTypeId};

use crate::error::Result;
use crate::inclusive::SampledStack;
use crate::symbols::{RawSymbol, SymbolTable};

/// Samples counted by the function they hit, as a histogram counts them: gprof's flat
/// profile. A model keeps them under this name beside its sampled stacks (`samples`), which
/// may differ from them (stacks cut short, lost records).
pub const HISTOGRAM: ValueKind<'static> = ValueKind::new("histogram", Unit::Count);

/// The histogram unit of a value in nanoseconds ([`gprof_view_of`]): each count is a
/// nanosecond, so the listings print seconds.
pub const NANOSECONDS: HistogramUnit = HistogramUnit {
    prof_rate: 1_000_000_000,
    dimension: SECONDS.0,
    dimension_abbrev: SECONDS.1,
};

/// Where the synthetic address space of a merged measurement starts.
pub(crate) const SYNTHETIC_BASE: u64 = 0x10000;

/// What the gprof listings of a model read.
#[derive(Debug)]
#[non_exhaustive]
pub struct GprofView {
    /// The model's functions as a symbol table, in address order, `[end]` last.
    pub table: SymbolTable,
    /// The histogram (2-byte bins, one per sampled address) and arcs, in the table's
    /// addresses.
    pub sum: Sum,
    /// The sampled stacks, innermost frame first, for [`crate::apply_stacks`]; empty when the
    /// model has none.
    pub stacks: Vec<SampledStack>,
}

/// The gprof structures of `profile`, its histogram counted in `unit` (the rate and
/// dimension of the histograms it was made from; `None` when it had none: no histogram).
pub fn gprof_view(profile: &Profile, unit: Option<HistogramUnit>) -> GprofView {
    let histogram = profile.find_value_type(HISTOGRAM);
    let flat = histogram.or_else(|| profile.find_value_type(ValueKind::SAMPLES));
    let stacked = histogram.and_then(|_| profile.find_value_type(ValueKind::SAMPLES));
    let mut arcs: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for arc in profile.arcs() {
        if let (Some(from), Some(to)) = (address(profile, arc.caller), address(profile, arc.callee))
        {
            *arcs.entry((from, to)).or_default() += count(arc.count);
        }
    }
    view(profile, flat, stacked, arcs, unit)
}

/// The gprof structures of value type `value` of `profile` (such as `off-cpu` nanoseconds,
/// `pkgprof --value off-cpu --pid`): the flat profile counts the value at each stack's
/// innermost frame, in `unit` ([`NANOSECONDS`] for time), the stacks carry it for exact
/// inclusive times, and the arcs are the edges of those stacks, each counted once per stack
/// (where a value was spent need not be where the samples' call edges are).
pub fn gprof_view_of(profile: &Profile, value: ValueTypeId, unit: HistogramUnit) -> GprofView {
    let mut arcs: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for s in profile.samples() {
        if s.values[value.index()] <= 0 {
            continue;
        }
        let frames: Vec<u64> = (profile.stack_frames(s.stack))
            .filter_map(|f| address(profile, f))
            .collect();
        // Innermost first: each frame is called from the next.
        for pair in frames.windows(2) {
            *arcs.entry((pair[1], pair[0])).or_default() += 1;
        }
    }
    view(profile, Some(value), Some(value), arcs, Some(unit))
}

/// The address of `frame` if its function has one (the functions of a measurement's model).
fn address(profile: &Profile, frame: profile_model::FrameId) -> Option<u64> {
    profile.frame(frame).address
}

fn count(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The symbol table of `profile`'s functions, the histogram of value `flat` at each stack's
/// innermost frame, the stacks of value `stacked`, and `arcs`.
fn view(
    profile: &Profile,
    flat: Option<ValueTypeId>,
    stacked: Option<ValueTypeId>,
    arcs: BTreeMap<(u64, u64), u64>,
    unit: Option<HistogramUnit>,
) -> GprofView {
    let mut raw = Vec::new();
    let mut last = None;
    for (_, f) in profile.functions() {
        let Some(at) = f.address else { continue };
        let mut name = match f.label {
            Some(label) => format!("{}:", profile.string(label)),
            None => String::new(),
        };
        name.push_str(profile.string(f.name));
        raw.push(RawSymbol {
            name: name.into_bytes(),
            address: at,
            is_function: f.entry,
            // No listing of a merged table depends on the binding.
            is_static: false,
        });
        last = last.max(Some(at));
    }
    let address = |frame| address(profile, frame);
    for (_, frame) in profile.frames() {
        if profile.function(frame.function).address.is_some() {
            last = last.max(frame.address);
        }
    }
    // `[end]` follows the last symbol's last place used, 16-aligned.
    let end = last.map_or(SYNTHETIC_BASE, |l| {
        l.saturating_add(2).div_ceil(0x10) * 0x10
    });
    raw.push(RawSymbol {
        name: b"[end]".to_vec(),
        address: end,
        is_function: false,
        is_static: false,
    });
    let table = SymbolTable::from_symbols(raw, end + 0x10, AddressSize::U64, Endian::Little);

    let mut samples: Vec<(u64, u64)> = Vec::new();
    let mut stacks = Vec::new();
    for s in profile.samples() {
        if let Some(vt) = flat
            && let n @ 1.. = count(s.values[vt.index()])
            && let Some(at) = address(profile.stack(s.stack).frame)
        {
            samples.push((at, n));
        }
        if let Some(vt) = stacked
            && let n @ 1.. = count(s.values[vt.index()])
        {
            stacks.push(SampledStack {
                frames: profile.stack_frames(s.stack).filter_map(address).collect(),
                samples: n,
            });
        }
    }
    samples.sort_unstable_by_key(|&(at, _)| at);
    samples.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 += next.1;
        }
        same
    });
    GprofView {
        table,
        sum: sampled_sum(&samples, arcs, unit),
        stacks,
    }
}

impl GprofView {
    /// Each non-zero bin of the sum as (pc, samples): every bin is 2 bytes wide.
    fn pc_samples(&self) -> Vec<(u64, u64)> {
        (self.sum.histograms().iter())
            .flat_map(|h| {
                (h.bins.iter().enumerate())
                    .filter(|&(_, &n)| n > 0)
                    .map(|(i, &n)| (h.low_pc + 2 * i as u64, n))
            })
            .collect()
    }

    /// The sum as a GNU gmon.out file (64-bit, little-endian, in the measurement layout of
    /// [`write_sampled_profile`]), which GNU gprof reads with an image of [`GprofView::table`]
    /// ([`crate::write_symbol_image`]) to the same listing.
    ///
    /// Returns an error if the gmon writer refuses a record (it does not for a merged sum).
    pub fn write_gmon(&self) -> Result<Vec<u8>> {
        let samples = self.pc_samples();
        let arcs = (self.sum.arcs().iter()).map(|a| ((a.from_pc, a.self_pc), a.count));
        Ok(write_sampled_profile(
            Endian::Little,
            &samples,
            arcs,
            self.sum.unit(),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use gmon_format::SECONDS;
    use profile_model::{Arc, Frame, Function, LabelSetId, ProfileBuilder, Side};

    use super::*;

    const UNIT: HistogramUnit = HistogramUnit {
        prof_rate: 100,
        dimension: SECONDS.0,
        dimension_abbrev: SECONDS.1,
    };

    /// `7u:main` at 0x10000 calling `7k:read` at 0x11000 from 0x10004, a label `7u:here`
    /// inside main; histogram hits 3 in main and 2 in read; with `stacks`, one sampled stack
    /// (4 samples) main → read beside the histogram, else the histogram alone.
    fn model(stacks: bool) -> Profile {
        let mut b = ProfileBuilder::new();
        b.value_type(ValueKind::SAMPLES);
        if stacks {
            b.value_type(HISTOGRAM);
        }
        let function = |b: &mut ProfileBuilder, name, label, side, at, entry| {
            let (name, label) = (b.string(name), b.string(label));
            let f = b.function(Function::new(name, side).with_label(label).at(at, entry));
            move |b: &mut ProfileBuilder, at| b.frame(Frame::new(f).with_address(at))
        };
        let main = function(&mut b, "main", "7u", Side::User, 0x10000, true);
        let _here = function(&mut b, "here", "7u", Side::User, 0x10008, false);
        let read = function(&mut b, "read", "7k", Side::Kernel, 0x11000, true);
        let hist = |b: &mut ProfileBuilder, frame, n| {
            let stack = b.stack(None, frame);
            let values = if stacks { vec![0, n] } else { vec![n] };
            b.add_sample(stack, LabelSetId::EMPTY, &values).unwrap();
        };
        let (main_at, call_site, read_at) = (
            main(&mut b, 0x10000),
            main(&mut b, 0x10004),
            read(&mut b, 0x11000),
        );
        hist(&mut b, main_at, 3);
        hist(&mut b, read_at, 2);
        if stacks {
            let stack = b.stack_of(&[call_site, read_at]).unwrap();
            b.add_sample(stack, LabelSetId::EMPTY, &[4, 0]).unwrap();
        }
        b.add_arc(Arc::new(call_site, read_at, 1));
        b.build()
    }

    #[test]
    fn functions_become_symbols_and_samples_the_histogram() {
        for stacks in [false, true] {
            let view = gprof_view(&model(stacks), Some(UNIT));
            let symbols: Vec<(String, u64, bool)> = (view.table.symbols().iter())
                .map(|s| (s.name_lossy().into_owned(), s.address, s.is_function))
                .collect();
            let want = [
                ("7u:main", 0x10000, true),
                ("7u:here", 0x10008, false),
                ("7k:read", 0x11000, true),
                // The last place used is read's entry: [end] follows it, 16-aligned.
                ("[end]", 0x11010, false),
            ];
            assert_eq!(
                symbols,
                want.map(|(n, a, f)| (n.to_owned(), a, f)),
                "{stacks}"
            );
            let hits: Vec<(u64, u64)> = (view.sum.histograms().iter())
                .flat_map(|h| {
                    (h.bins.iter().enumerate())
                        .filter(|&(_, &n)| n > 0)
                        .map(|(i, &n)| (h.low_pc + 2 * i as u64, n))
                })
                .collect();
            assert_eq!(hits, [(0x10000, 3), (0x11000, 2)]);
            let arcs: Vec<(u64, u64, u64)> = (view.sum.arcs().iter())
                .map(|a| (a.from_pc, a.self_pc, a.count))
                .collect();
            assert_eq!(arcs, [(0x10004, 0x11000, 1)]);
            let want_stacks = if stacks {
                vec![SampledStack {
                    frames: vec![0x11000, 0x10004],
                    samples: 4,
                }]
            } else {
                Vec::new()
            };
            assert_eq!(view.stacks, want_stacks);
            assert_eq!(view.sum.unit(), Some(UNIT));
        }
    }

    #[test]
    fn another_value_is_listed_at_its_stacks_innermost_frames_with_their_edges_as_arcs() {
        let mut b = ProfileBuilder::new();
        b.value_type(ValueKind::SAMPLES);
        let off_cpu = b.value_type(ValueKind::OFF_CPU_TIME);
        let mut function = |name, label, side, at| {
            let (name, label) = (b.string(name), b.string(label));
            let f = b.function(Function::new(name, side).with_label(label).at(at, true));
            b.frame(Frame::new(f).with_address(at))
        };
        let main = function("main", "7u", Side::User, 0x10000);
        let read = function("read", "7k", Side::Kernel, 0x11000);
        let sleep = function("pipe_read", "7k", Side::Kernel, 0x12000);
        // CPU samples in main → read, with a call arc; 5 µs slept in read → pipe_read.
        let cpu = b.stack_of(&[main, read]).unwrap();
        b.add_sample(cpu, LabelSetId::EMPTY, &[4, 0]).unwrap();
        let slept = b.stack_of(&[main, read, sleep]).unwrap();
        b.add_sample(slept, LabelSetId::EMPTY, &[0, 5000]).unwrap();
        b.add_arc(Arc::new(main, read, 9));
        let view = gprof_view_of(&b.build(), off_cpu, NANOSECONDS);
        assert_eq!(view.pc_samples(), [(0x12000, 5000)]);
        let arcs: Vec<(u64, u64, u64)> = (view.sum.arcs().iter())
            .map(|a| (a.from_pc, a.self_pc, a.count))
            .collect();
        assert_eq!(arcs, [(0x10000, 0x11000, 1), (0x11000, 0x12000, 1)]);
        let want = SampledStack {
            frames: vec![0x12000, 0x11000, 0x10000],
            samples: 5000,
        };
        assert_eq!(view.stacks, [want]);
        assert_eq!(view.sum.unit(), Some(NANOSECONDS));
    }

    #[test]
    fn an_empty_model_is_an_empty_table() {
        let view = gprof_view(&ProfileBuilder::new().build(), None);
        let names: Vec<_> = view.table.symbols().iter().map(|s| s.address).collect();
        assert_eq!(names, [SYNTHETIC_BASE]);
        assert!(view.sum.histograms().is_empty() && view.sum.arcs().is_empty());
        assert!(view.stacks.is_empty());
    }
}
