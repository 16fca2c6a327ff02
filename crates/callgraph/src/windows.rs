//! Summing the seamless models of several measurements (the time windows of a continuous
//! run): each model places its functions in a synthetic address space of its own
//! (`labeled/layout.rs`), so the same function sits at different places in different windows.
//! [`sum_seamless_models`] matches functions by label, name and object, gives each one place
//! in a new address space (wide enough for every window's frames in it), and adds the
//! windows' samples and arcs there, so that the gprof listings ([`crate::gprof_view`]) and the
//! exports read the sum as they read one measurement.

use std::collections::HashMap;

use profile_model::{
    Arc, Frame, Function, FunctionId, Label, LabelKey, LabelValue, Object, Profile, ProfileBuilder,
    StringId,
};

use crate::gprof_view::SYNTHETIC_BASE;

/// A function's identity across windows: its label, name and object path.
type Key = (String, String, String);

fn key(p: &Profile, f: &Function) -> Key {
    (
        f.label.map(|s| p.string(s).to_owned()).unwrap_or_default(),
        p.string(f.name).to_owned(),
        f.object
            .map(|o| p.string(p.object(o).path).to_owned())
            .unwrap_or_default(),
    )
}

/// The sum of seamless models (each made by [`crate::Seamless::build`]), functions matched
/// by label, name and object path and placed anew, in the order the models first name them;
/// samples keep their labels and times, and get the text labels given with their model
/// (`host`, `app`, say).
pub fn sum_seamless_models(models: &[(Profile, Vec<(String, String)>)]) -> Profile {
    // Each function's place: the widest extent any window gives it (its frames' offsets from
    // its start), and the alignment modulo 16 its first window gave it.
    let mut order: Vec<Key> = Vec::new();
    let mut extent: HashMap<Key, (u64, u64)> = HashMap::new();
    for (p, _) in models {
        let mut widest: HashMap<FunctionId, u64> = HashMap::new();
        for (_, fr) in p.frames() {
            if let (Some(at), Some(start)) = (fr.address, p.function(fr.function).address) {
                let w = widest.entry(fr.function).or_default();
                *w = (*w).max(at.saturating_sub(start));
            }
        }
        for (id, f) in p.functions() {
            let Some(start) = f.address else { continue };
            let k = key(p, f);
            let e = extent.entry(k.clone()).or_insert_with(|| {
                order.push(k);
                (0, start % 16)
            });
            e.0 = e.0.max(widest.get(&id).copied().unwrap_or(0) + 2);
        }
    }
    let mut place: HashMap<Key, u64> = HashMap::with_capacity(order.len());
    let mut next = SYNTHETIC_BASE;
    for k in order {
        let (width, align) = extent[&k];
        let at = next.next_multiple_of(16) + align;
        next = at + width.max(2);
        place.insert(k, at);
    }
    let mut sum = ProfileBuilder::new();
    for (p, labels) in models {
        sum.add_profile(
            &rebased(p, &place, labels),
            &profile_model::MergeOptions::default(),
        );
    }
    sum.build()
}

/// `p` with its functions at their places in `place`, frames at the same offsets from them,
/// and `extra` labels on every sample.
fn rebased(p: &Profile, place: &HashMap<Key, u64>, extra: &[(String, String)]) -> Profile {
    let mut b = ProfileBuilder::new();
    let mut strings: HashMap<StringId, StringId> = HashMap::new();
    let mut s = |b: &mut ProfileBuilder, id: StringId| {
        *strings.entry(id).or_insert_with(|| b.string(p.string(id)))
    };
    for (_, vt) in p.value_types() {
        b.value_type(vt);
    }
    if let Some(period) = p.period() {
        b.set_period(period);
    }
    let objects: Vec<_> = p
        .objects()
        .map(|(_, o)| {
            let mut obj = Object::new(s(&mut b, o.path));
            if let Some(id) = &o.build_id {
                obj = obj.with_build_id(id);
            }
            b.object(obj)
        })
        .collect();
    let mut moved: Vec<Option<(u64, u64)>> = Vec::with_capacity(p.functions().len());
    let functions: Vec<FunctionId> = p
        .functions()
        .map(|(_, f)| {
            let mut g = Function::new(s(&mut b, f.name), f.side);
            if let Some(x) = f.system_name {
                g = g.with_system_name(s(&mut b, x));
            }
            if let Some(o) = f.object {
                g = g.with_object(objects[o.index()]);
            }
            if let Some(x) = f.label {
                g = g.with_label(s(&mut b, x));
            }
            if let Some(x) = f.file {
                g = g.with_file(s(&mut b, x));
            }
            let new = f
                .address
                .and_then(|old| Some((old, *place.get(&key(p, f))?)));
            moved.push(new);
            g = match new {
                Some((_, at)) => g.at(at, f.entry),
                None => {
                    g.entry = f.entry;
                    g
                }
            };
            b.function(g)
        })
        .collect();
    let frames: Vec<_> = p
        .frames()
        .map(|(_, fr)| {
            let i = fr.function.index();
            let mut g = Frame::new(functions[i]);
            if let Some(at) = fr.address {
                g = g.with_address(match moved[i] {
                    Some((old, new)) => new + at.saturating_sub(old),
                    None => at,
                });
            }
            if let Some(line) = fr.line {
                g = g.with_line(line);
            }
            b.frame(g)
        })
        .collect();
    let mut stacks = Vec::with_capacity(p.stacks().len());
    for (_, node) in p.stacks() {
        let parent = node.parent.map(|q| stacks[q.index()]);
        stacks.push(b.stack(parent, frames[node.frame.index()]));
    }
    let extra: Vec<Label> = extra
        .iter()
        .map(|(k, v)| Label {
            key: LabelKey::Other(b.string(k)),
            value: LabelValue::Text(b.string(v)),
        })
        .collect();
    let label_sets: Vec<_> = p
        .label_sets()
        .map(|(_, set)| {
            let labels: Vec<Label> = (set.iter())
                .map(|l| Label {
                    key: match l.key {
                        LabelKey::Other(x) => LabelKey::Other(s(&mut b, x)),
                        k => k,
                    },
                    value: match l.value {
                        LabelValue::Text(x) => LabelValue::Text(s(&mut b, x)),
                        v => v,
                    },
                })
                .chain(extra.iter().copied())
                .collect();
            b.label_set(&labels)
        })
        .collect();
    for smp in p.samples() {
        // The values are as many as the value types declared above: this cannot fail.
        let _ = b.add_sample_at(
            stacks[smp.stack.index()],
            label_sets[smp.labels.index()],
            smp.values,
            smp.time,
        );
    }
    for a in p.arcs() {
        b.add_arc(Arc::new(
            frames[a.caller.index()],
            frames[a.callee.index()],
            a.count,
        ));
    }
    b.build()
}
