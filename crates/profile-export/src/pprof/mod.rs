//! pprof's `profile.proto`, gzip-compressed: what `go tool pprof`, Pyroscope and Parca read.
//!
//! The model maps onto it almost one to one: value types become sample types (name and unit),
//! objects mappings (path, build-id in hex), functions functions (named as in the listings,
//! the symbol as stored in the object as `system_name`), frames locations (address, line), label sets labels
//! (numbers as `num`, text as `str`, keys as [`profile_model::Profile::label_key_name`] names
//! them), the period the period. Samples with the same stack and labels are summed into one.
//!
//! Arcs (mcount data) become samples of a `calls` value type with the two-frame stack
//! callee ← caller, so `go tool pprof -sample_index=calls` shows call counts on the edges;
//! every other value of those samples is zero.
//!
//! Samples, the bulk of a large profile, are encoded straight into bytes (a message's fields
//! may come in any order, so they follow the other tables), never as one struct each: a million
//! samples export in a fraction of a second.
//!
//! Several profiles can go into one file with a factor each: a diff is the new profile plus
//! the base negated and labelled `pprof::base=true`, which is what `go tool pprof -diff_base`
//! itself builds, so the numbers agree with it.

#[allow(missing_docs, clippy::all, rust_2018_idioms)]
mod proto;

use std::io::{self, Write};

use flate2::Compression;
use flate2::write::GzEncoder;
use profile_model::{LabelSetId, LabelValue, Profile, StackId, Unit, ValueKind, ValueTypeId};
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};
use rustc_hash::FxHashMap;

use crate::names::{Names, object_path};

/// Writes `profile` with `vt` as the default sample type.
pub(crate) fn write(
    profile: &Profile,
    vt: ValueTypeId,
    note: Option<&str>,
    out: impl Write,
) -> io::Result<()> {
    let mut encoder = Encoder::new(&[profile]);
    encoder.add(profile, 1, false);
    encoder.finish(profile.value_type(vt).name, note, out)
}

/// The label `go tool pprof -diff_base` puts on the base profile's samples.
pub(crate) const BASE_LABEL: &str = "pprof::base";

/// Builds one pprof profile from one or more model profiles, interning by content so that the
/// same function in two profiles is one pprof function.
pub(crate) struct Encoder {
    out: proto::Profile,
    strings: FxHashMap<String, i64>,
    /// Every value type of every profile to be added (and `calls` if one has arcs), so that
    /// each sample is written with all its columns.
    value_types: Vec<(String, Unit)>,
    mappings: FxHashMap<(i64, i64), u64>,
    functions: FxHashMap<(i64, i64, i64), u64>,
    locations: FxHashMap<(u64, u64, u64, i64), u64>,
    /// The samples, encoded: field 2 of `Profile`, one after another.
    samples: Vec<u8>,
    times: Option<(u64, u64)>,
}

impl Encoder {
    /// An encoder for `profiles`, which are then given to [`Encoder::add`].
    pub(crate) fn new(profiles: &[&Profile]) -> Self {
        let mut e = Encoder {
            out: proto::Profile::default(),
            strings: FxHashMap::default(),
            value_types: Vec::new(),
            mappings: FxHashMap::default(),
            functions: FxHashMap::default(),
            locations: FxHashMap::default(),
            samples: Vec::new(),
            times: None,
        };
        e.string("");
        for p in profiles {
            for (_, kind) in p.value_types() {
                e.value_type(kind);
            }
        }
        if profiles.iter().any(|p| !p.arcs().is_empty()) {
            e.value_type(ValueKind::CALLS);
        }
        e
    }

    /// Adds every sample and arc of `profile` (one of those given to [`Encoder::new`]), values
    /// multiplied by `factor`; with `base`, labelled as a `-diff_base` base.
    pub(crate) fn add(&mut self, profile: &Profile, factor: i64, base: bool) {
        let names = Names::new(profile);
        let width = self.value_types.len();
        let columns: Vec<usize> = profile
            .value_types()
            .map(|(_, k)| self.value_type(k))
            .collect();
        let locations: Vec<u64> = profile
            .frames()
            .map(|(_, frame)| {
                let f = frame.function;
                let function = profile.function(f);
                let name = self.string(names.get(f));
                let system_name =
                    self.string(profile.string(function.system_name.unwrap_or(function.name)));
                let file = function.file.map_or(0, |s| self.string(profile.string(s)));
                let mapping = self.mapping(profile, f);
                if file != 0 && mapping != 0 {
                    self.out.mapping[mapping as usize - 1].has_filenames = true;
                }
                let function_id = self.function(name, system_name, file);
                let line = frame.line.map_or(0, i64::from);
                self.location(mapping, frame.address.unwrap_or(0), function_id, line)
            })
            .collect();
        let base_label = base.then(|| proto::Label {
            key: self.string(BASE_LABEL),
            str: self.string("true"),
            ..proto::Label::default()
        });
        // Sum by (stack, labels): one hash of two integers per sample, values in one array.
        let mut rows: FxHashMap<(StackId, LabelSetId), usize> = FxHashMap::default();
        let mut keys: Vec<(StackId, LabelSetId)> = Vec::new();
        let mut values: Vec<i64> = Vec::new();
        for sample in profile.samples() {
            let row = *rows
                .entry((sample.stack, sample.labels))
                .or_insert_with(|| {
                    keys.push((sample.stack, sample.labels));
                    values.resize(values.len() + width, 0);
                    keys.len() - 1
                });
            let row = &mut values[row * width..(row + 1) * width];
            for (&column, &v) in columns.iter().zip(sample.values) {
                row[column] = row[column].saturating_add(v.saturating_mul(factor));
            }
            if let Some(t) = sample.time {
                let (lo, hi) = self.times.get_or_insert((t, t));
                (*lo, *hi) = ((*lo).min(t), (*hi).max(t));
            }
        }
        drop(rows);
        // In stack and label order, so that the same profile gives the same bytes.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_unstable_by_key(|&i| keys[i]);
        let mut label_cache: FxHashMap<LabelSetId, Vec<proto::Label>> = FxHashMap::default();
        let mut ids: Vec<u64> = Vec::new();
        let mut ids_of = None;
        for i in order {
            let (stack, labels) = keys[i];
            // Rows of one stack (its threads) come together: its frames are walked once.
            if ids_of != Some(stack) {
                ids.clear();
                ids.extend(
                    profile
                        .stack_frames(stack)
                        .map(|frame| locations[frame.index()]),
                );
                ids_of = Some(stack);
            }
            let set = label_cache
                .entry(labels)
                .or_insert_with(|| self.labels(profile, labels, base_label));
            let row = &values[i * width..(i + 1) * width];
            write_sample(&mut self.samples, &ids, row, set);
        }
        if let Some(calls) = (!profile.arcs().is_empty()).then(|| self.value_type(ValueKind::CALLS))
        {
            let label: Vec<proto::Label> = base_label.into_iter().collect();
            let mut row = vec![0; width];
            for arc in profile.arcs() {
                row[calls] = arc.count.saturating_mul(factor);
                let ids = [locations[arc.callee.index()], locations[arc.caller.index()]];
                write_sample(&mut self.samples, &ids, &row, &label);
            }
        }
        if self.out.period_type.is_none()
            && let Some(period) = profile.period()
        {
            self.out.period_type = Some(proto::ValueType {
                r#type: self.string(period.kind.name),
                unit: self.string(period.kind.unit.as_str()),
            });
            self.out.period = period.value;
        }
    }

    /// Writes the profile, gzip-compressed, with `default_value` as the default sample type
    /// and `note` as a comment.
    pub(crate) fn finish(
        mut self,
        default_value: &str,
        note: Option<&str>,
        out: impl Write,
    ) -> io::Result<()> {
        for (name, unit) in std::mem::take(&mut self.value_types) {
            let vt = proto::ValueType {
                r#type: self.string(&name),
                unit: self.string(unit.as_str()),
            };
            self.out.sample_type.push(vt);
        }
        self.out.default_sample_type = self.string(default_value);
        if let Some(note) = note {
            let note = self.string(note);
            self.out.comment.push(note);
        }
        if let Some((lo, hi)) = self.times {
            self.out.time_nanos = i64::try_from(lo).unwrap_or(i64::MAX);
            self.out.duration_nanos = i64::try_from(hi - lo).unwrap_or(i64::MAX);
        }
        let mut gz = GzEncoder::new(io::BufWriter::new(out), Compression::fast());
        gz.write_all(&self.out.encode_to_vec())?;
        gz.write_all(&self.samples)?;
        gz.finish()?.flush()
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.out.string_table.len() as i64;
        self.out.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        i
    }

    /// The column of a value type, declared if new.
    fn value_type(&mut self, kind: ValueKind<'_>) -> usize {
        match self
            .value_types
            .iter()
            .position(|(n, u)| n == kind.name && *u == kind.unit)
        {
            Some(i) => i,
            None => {
                self.value_types.push((kind.name.to_owned(), kind.unit));
                self.value_types.len() - 1
            }
        }
    }

    fn mapping(&mut self, profile: &Profile, f: profile_model::FunctionId) -> u64 {
        let Some(path) = object_path(profile, f) else {
            return 0;
        };
        let build_id = profile
            .function(f)
            .object
            .and_then(|o| profile.object(o).build_id.as_deref())
            .map_or(0, |id| {
                let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                self.string(&hex)
            });
        let filename = self.string(path);
        let next = self.out.mapping.len() as u64 + 1;
        let id = *self.mappings.entry((filename, build_id)).or_insert(next);
        if id == next {
            self.out.mapping.push(proto::Mapping {
                id,
                filename,
                build_id,
                has_functions: true,
                ..proto::Mapping::default()
            });
        }
        id
    }

    fn function(&mut self, name: i64, system_name: i64, filename: i64) -> u64 {
        let next = self.out.function.len() as u64 + 1;
        let id = *self
            .functions
            .entry((name, system_name, filename))
            .or_insert(next);
        if id == next {
            self.out.function.push(proto::Function {
                id,
                name,
                system_name,
                filename,
                ..proto::Function::default()
            });
        }
        id
    }

    fn location(&mut self, mapping_id: u64, address: u64, function_id: u64, line: i64) -> u64 {
        let next = self.out.location.len() as u64 + 1;
        let id = *self
            .locations
            .entry((mapping_id, address, function_id, line))
            .or_insert(next);
        if id == next {
            self.out.location.push(proto::Location {
                id,
                mapping_id,
                address,
                line: vec![proto::Line {
                    function_id,
                    line,
                    ..proto::Line::default()
                }],
                ..proto::Location::default()
            });
        }
        id
    }

    fn labels(
        &mut self,
        profile: &Profile,
        set: LabelSetId,
        extra: Option<proto::Label>,
    ) -> Vec<proto::Label> {
        let mut labels: Vec<proto::Label> = profile
            .labels(set)
            .iter()
            .map(|label| {
                let key = self.string(profile.label_key_name(label.key));
                match label.value {
                    LabelValue::Number(num) => proto::Label {
                        key,
                        num,
                        ..proto::Label::default()
                    },
                    LabelValue::Text(s) => proto::Label {
                        key,
                        str: self.string(profile.string(s)),
                        ..proto::Label::default()
                    },
                }
            })
            .collect();
        labels.extend(extra);
        labels
    }
}

/// Appends one `Sample` as field 2 of a `Profile`, unless all its values are zero: location
/// ids and values packed, labels as messages (zero fields left out, as protobuf does).
fn write_sample(buf: &mut Vec<u8>, location_ids: &[u64], values: &[i64], labels: &[proto::Label]) {
    if values.iter().all(|&v| v == 0) {
        return;
    }
    let packed = |xs: &mut dyn Iterator<Item = u64>| xs.map(encoded_len_varint).sum::<usize>();
    let ids_len = packed(&mut location_ids.iter().copied());
    let values_len = packed(&mut values.iter().map(|&v| v as u64));
    let label_lens: Vec<usize> = labels.iter().map(label_len).collect();
    let field = |len: usize| encoded_len_varint(len as u64) + len + 1;
    let mut len = field(ids_len) + field(values_len);
    len += label_lens.iter().map(|&l| field(l)).sum::<usize>();
    encode_key(2, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
    for (tag, content, items) in [
        (
            1,
            ids_len,
            &mut location_ids.iter().copied() as &mut dyn Iterator<Item = u64>,
        ),
        (2, values_len, &mut values.iter().map(|&v| v as u64)),
    ] {
        encode_key(tag, WireType::LengthDelimited, buf);
        encode_varint(content as u64, buf);
        for x in items {
            encode_varint(x, buf);
        }
    }
    for (label, len) in labels.iter().zip(label_lens) {
        encode_key(3, WireType::LengthDelimited, buf);
        encode_varint(len as u64, buf);
        for (tag, x) in label_fields(label) {
            if x != 0 {
                encode_key(tag, WireType::Varint, buf);
                encode_varint(x as u64, buf);
            }
        }
    }
}

fn label_fields(l: &proto::Label) -> [(u32, i64); 4] {
    [(1, l.key), (2, l.str), (3, l.num), (4, l.num_unit)]
}

fn label_len(l: &proto::Label) -> usize {
    label_fields(l)
        .iter()
        .filter(|(_, x)| *x != 0)
        .map(|&(_, x)| 1 + encoded_len_varint(x as u64))
        .sum()
}
