//! gmon.out with its image's symbols → the profile model: what a library user or an exporter
//! reads instead of gprof's working state.

use std::borrow::Cow;
use std::collections::HashMap;

use gmon_format::Sum;
use profile_model::{
    Arc, Frame, FrameId, Function, FunctionId, LabelSetId, Object, ObjectId, Period, Profile,
    ProfileBuilder, Side, ValueKind,
};

use crate::lines::SourceInfo;
use crate::symbols::SymbolTable;

/// How [`gmon_model`] names what it finds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelOptions {
    /// The image's path, recorded as the object every function is in. Default is `None`:
    /// functions in no known object.
    pub image: Option<String>,
    /// The image's build-id, recorded with its path. Default is `None`.
    pub build_id: Option<Vec<u8>>,
    /// Whether function names are demangled as gprof prints them, the symbol's own name kept
    /// as the function's system name. Default is true.
    pub demangle: bool,
    /// The source position of each symbol (see [`crate::symbol_sources`]), whose file becomes
    /// its function's file. Default is empty: files unknown.
    pub sources: Vec<Option<SourceInfo>>,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            image: None,
            build_id: None,
            demangle: true,
            sources: Vec::new(),
        }
    }
}

/// The name of the function that stands for addresses in no symbol of the image.
pub const UNKNOWN_FUNCTION: &str = "[unknown]";

/// The profile model of a summed gmon profile `sum` of the image whose symbols are `table`.
///
/// Each function of a symbol carries the symbol's address, and is an entry if the symbol is a
/// function (not a label or an object in code). Each non-zero histogram bin becomes one sample of value type [`ValueKind::SAMPLES`] with a
/// one-frame stack: the function whose symbol holds the bin's first address, at that address.
/// The period says how much CPU time a sample stands for (`1/hz` seconds). Each arc becomes an
/// [`Arc`] from the caller at the call site to the callee at its entry, resolved as gprof
/// resolves arc ends (a callee on a label or an object in code counts for the function before
/// it). Addresses in no symbol belong to the function [`UNKNOWN_FUNCTION`]. Only functions with
/// samples or arcs are in the model. Symbols whose name and file repeat in the image (static
/// functions of one name in files the image does not tell apart) stay separate functions, each
/// labelled with its address (`0x1139`).
///
/// The model keeps what was measured, not gprof's reading of it: a bin that straddles two
/// symbols goes whole to the first, where gprof's flat profile splits it by overlap, and
/// arcs with an end in no symbol are kept, where gprof drops them. Totals agree with gprof's:
/// the samples add up to every histogram count, and the arcs into each function to its calls.
pub fn gmon_model(table: &SymbolTable, sum: &Sum, options: &ModelOptions) -> Profile {
    let mut model = Model::new(table, options);
    model.set_period(sum);
    model.add_histogram(sum);
    model.add_arcs(sum);
    model.b.build()
}

/// The builder and the functions made so far, one per symbol.
struct Model<'t> {
    b: ProfileBuilder,
    table: &'t SymbolTable,
    options: &'t ModelOptions,
    /// Whether each symbol's name and file are those of another symbol too.
    repeated: Vec<bool>,
    object: Option<ObjectId>,
    functions: Vec<Option<FunctionId>>,
    unknown: Option<FunctionId>,
}

impl<'t> Model<'t> {
    /// A model of `table`'s symbols, with value type [`ValueKind::SAMPLES`].
    fn new(table: &'t SymbolTable, options: &'t ModelOptions) -> Self {
        let mut b = ProfileBuilder::new();
        b.value_type(ValueKind::SAMPLES);
        let object = options.image.as_deref().map(|path| {
            let path = b.string(path);
            let object = Object::new(path);
            b.object(match &options.build_id {
                Some(id) => object.with_build_id(id),
                None => object,
            })
        });
        // Each symbol's name and source file, and how many symbols have them.
        let keys: Vec<(&[u8], Option<&[u8]>)> = (table.symbols().iter().enumerate())
            .map(|(i, symbol)| {
                let source = options.sources.get(i).and_then(Option::as_ref);
                (symbol.name.as_slice(), source.map(|s| &*s.file))
            })
            .collect();
        let mut seen: HashMap<_, usize> = HashMap::new();
        for key in &keys {
            *seen.entry(key).or_default() += 1;
        }
        let repeated = keys.iter().map(|key| seen[key] > 1).collect();
        Model {
            b,
            table,
            options,
            repeated,
            object,
            functions: vec![None; table.len()],
            unknown: None,
        }
    }

    /// The period: CPU time per sample, `1/hz` of the profile's histograms.
    fn set_period(&mut self, sum: &Sum) {
        if let Some(unit) = sum.unit().filter(|u| u.prof_rate > 0) {
            self.b.set_period(Period {
                kind: ValueKind::CPU_TIME,
                value: 1_000_000_000 / i64::from(unit.prof_rate),
            });
        }
    }

    /// One one-frame sample per non-zero histogram bin, at the bin's first address.
    fn add_histogram(&mut self, sum: &Sum) {
        for h in sum.histograms() {
            let bins = h.bins.len() as u128;
            let span = u128::from(h.high_pc.wrapping_sub(h.low_pc));
            for (i, &count) in h.bins.iter().enumerate() {
                if count == 0 {
                    continue;
                }
                // The bin's first address, by exact integer division of the record's range.
                let address = h.low_pc.wrapping_add((span * i as u128 / bins) as u64);
                let frame = self.frame(self.table.lookup(address), address);
                let stack = self.b.stack(None, frame);
                let count = i64::try_from(count).unwrap_or(i64::MAX);
                // One value per value type: cannot fail.
                let _ = self.b.add_sample(stack, LabelSetId::EMPTY, &[count]);
            }
        }
    }

    /// One arc per arc of `sum`, from the caller at the call site to the callee at its entry.
    fn add_arcs(&mut self, sum: &Sum) {
        for arc in sum.arcs() {
            let caller = self.frame(self.table.lookup(arc.from_pc), arc.from_pc);
            let callee = self.frame(self.table.lookup_callee(arc.self_pc), arc.self_pc);
            let count = i64::try_from(arc.count).unwrap_or(i64::MAX);
            self.b.add_arc(Arc::new(caller, callee, count));
        }
    }

    /// The frame of symbol `symbol` (or of no symbol) at `address`.
    fn frame(&mut self, symbol: Option<usize>, address: u64) -> FrameId {
        let function = match symbol {
            Some(i) => match self.functions[i] {
                Some(f) => f,
                None => {
                    let f = self.symbol_function(i);
                    self.functions[i] = Some(f);
                    f
                }
            },
            None => match self.unknown {
                Some(f) => f,
                None => {
                    let function = self.function(UNKNOWN_FUNCTION);
                    let f = self.b.function(function);
                    self.unknown = Some(f);
                    f
                }
            },
        };
        self.b.frame(Frame::new(function).with_address(address))
    }

    fn symbol_function(&mut self, i: usize) -> FunctionId {
        let symbol = &self.table.symbols()[i];
        let raw = symbol.name_lossy().into_owned();
        let shown = match self.options.demangle {
            true => demangle::demangle(&raw),
            false => Cow::Borrowed(raw.as_str()),
        };
        let mut function = match shown {
            Cow::Owned(shown) if shown != raw => {
                let system = self.b.string(&raw);
                self.function(&shown).with_system_name(system)
            }
            _ => self.function(&raw),
        };
        if let Some(source) = self.options.sources.get(i).and_then(Option::as_ref) {
            function = function.with_file(self.b.string(&String::from_utf8_lossy(&source.file)));
        }
        if self.repeated[i] {
            function = function.with_label(self.b.string(&format!("{:#x}", symbol.address)));
        }
        self.b
            .function(function.at(symbol.address, symbol.is_function))
    }

    /// A function named `name` in the image.
    fn function(&mut self, name: &str) -> Function {
        let name = self.b.string(name);
        let function = Function::new(name, Side::User);
        match self.object {
            Some(object) => function.with_object(object),
            None => function,
        }
    }
}

#[cfg(test)]
mod tests {
    use gmon_format::{AddressSize, Endian, Profile as Gmon, ReadOptions};

    use super::*;
    use crate::test_util::functions;

    /// A GNU gmon file: one histogram over `[low, high)` at 100 Hz, then `arcs`
    /// (from, to, count).
    fn sum(low: u64, high: u64, bins: &[u16], arcs: &[(u64, u64, u32)]) -> Sum {
        let mut data = b"gmon\x01\0\0\0".to_vec();
        data.extend([0; 12]);
        data.push(0);
        data.extend(low.to_le_bytes());
        data.extend(high.to_le_bytes());
        data.extend((bins.len() as u32).to_le_bytes());
        data.extend(100u32.to_le_bytes());
        data.extend(b"seconds\0\0\0\0\0\0\0\0s");
        for b in bins {
            data.extend(b.to_le_bytes());
        }
        for &(from, to, count) in arcs {
            data.push(1);
            data.extend(from.to_le_bytes());
            data.extend(to.to_le_bytes());
            data.extend(count.to_le_bytes());
        }
        let mut sum = Sum::new();
        let options = ReadOptions::new(AddressSize::U64, Endian::Little);
        sum.add(&Gmon::parse(&data, &options).unwrap()).unwrap();
        sum
    }

    /// (name, system name, label, self samples) of every function.
    fn functions_of(p: &Profile) -> Vec<(String, Option<String>, Option<String>, i64)> {
        let samples = p.find_value_type(ValueKind::SAMPLES).unwrap();
        let totals = p.function_totals(samples);
        p.functions()
            .map(|(f, function)| {
                (
                    p.function_name(f).to_owned(),
                    function.system_name.map(|s| p.string(s).to_owned()),
                    function.label.map(|s| p.string(s).to_owned()),
                    totals.self_value(f),
                )
            })
            .collect()
    }

    #[test]
    fn bins_become_samples_and_arcs_stay_arcs() {
        // Two bytes per bin: bins 0-7 are f's, 8-15 g's; bin 7 starts in f.
        let table = functions(&[("f", 0x1000), ("_Z1gi", 0x100f)], 0x1020);
        let mut bins = [0u16; 16];
        (bins[0], bins[7], bins[9]) = (5, 2, 4);
        let sum = sum(
            0x1000,
            0x1020,
            &bins,
            &[(0x1004, 0x100f, 3), (0x9000, 0x1000, 1)],
        );
        let options = ModelOptions {
            image: Some("/bin/prog".into()),
            build_id: Some(vec![0xab]),
            ..ModelOptions::default()
        };
        let p = gmon_model(&table, &sum, &options);
        assert_eq!(
            functions_of(&p),
            [
                ("f".into(), None, None, 7),
                ("g(int)".into(), Some("_Z1gi".into()), None, 4),
                (UNKNOWN_FUNCTION.into(), None, None, 0),
            ]
        );
        let addresses: Vec<Option<u64>> = p
            .samples()
            .map(|s| p.frame(p.stack(s.stack).frame).address)
            .collect();
        assert_eq!(addresses, [Some(0x1000), Some(0x100e), Some(0x1012)]);
        let arcs: Vec<(&str, Option<u64>, &str, i64)> = p
            .arcs()
            .iter()
            .map(|a| {
                let (from, to) = (p.frame(a.caller), p.frame(a.callee));
                (
                    p.function_name(from.function),
                    from.address,
                    p.function_name(to.function),
                    a.count,
                )
            })
            .collect();
        assert_eq!(
            arcs,
            [
                ("f", Some(0x1004), "g(int)", 3),
                (UNKNOWN_FUNCTION, Some(0x9000), "f", 1)
            ]
        );
        // Each function starts where its symbol does; `[unknown]` is nowhere.
        let starts: Vec<(Option<u64>, bool)> =
            p.functions().map(|(_, f)| (f.address, f.entry)).collect();
        assert_eq!(
            starts,
            [(Some(0x1000), true), (Some(0x100f), true), (None, true)]
        );
        assert_eq!(p.period().map(|p| p.value), Some(10_000_000));
        let (_, object) = p.objects().next().unwrap();
        assert_eq!(
            (p.string(object.path), object.build_id.as_deref()),
            ("/bin/prog", Some(&[0xab][..]))
        );
    }

    #[test]
    fn repeated_names_stay_apart_and_names_can_stay_mangled() {
        let table = functions(
            &[("helper", 0x1000), ("_Z1gi", 0x1008), ("helper", 0x1010)],
            0x1020,
        );
        let sum = sum(
            0x1000,
            0x1020,
            &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0],
            &[],
        );
        let options = ModelOptions {
            demangle: false,
            ..ModelOptions::default()
        };
        let p = gmon_model(&table, &sum, &options);
        assert_eq!(
            functions_of(&p),
            [
                ("helper".into(), None, Some("0x1000".into()), 1),
                ("_Z1gi".into(), None, None, 2),
                ("helper".into(), None, Some("0x1010".into()), 3),
            ]
        );
    }
}
