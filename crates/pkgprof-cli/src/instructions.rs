//! `-l` over seamless profiles (`--pid`, `--system`, `--app`): the per-instruction listing,
//! SLEEPY's EIP view — every instruction samples were taken at, by samples, with its address
//! in its object, its object, its source line and its function and offset.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Result;
use callgraph::{Instruction, ObjectFile};

/// Where an instruction is: its label, function, address and object.
type Place = (String, String, Option<u64>, Option<ObjectFile>);

/// The instructions of several profiles (windows) summed by place: instances loaded at
/// other addresses meet at their object's address.
#[derive(Default)]
pub(crate) struct Instructions {
    summed: BTreeMap<Place, Instruction>,
}

impl Instructions {
    /// Adds the instructions of one profile.
    pub(crate) fn add(&mut self, instructions: Vec<Instruction>) {
        for i in instructions {
            let place = (
                i.label.clone(),
                i.function.clone(),
                i.address,
                i.object.clone(),
            );
            match self.summed.get_mut(&place) {
                Some(sum) => sum.samples += i.samples,
                None => {
                    self.summed.insert(place, i);
                }
            }
        }
    }

    /// Writes the listing: a header saying what it is (`what`, the selection), then one line
    /// per instruction, most samples first, its function last (C++ names are long), with its
    /// source line from the object's line tables; `full_paths` (`-L`) prints whole paths of
    /// sources and objects, else their file names.
    pub(crate) fn write(self, what: &str, full_paths: bool, out: &mut dyn Write) -> Result<()> {
        let mut rows: Vec<Instruction> = self.summed.into_values().collect();
        callgraph::add_sources(&mut rows);
        rows.sort_by(|a, b| {
            (b.samples.cmp(&a.samples)).then_with(|| {
                (&a.label, &a.function, a.address).cmp(&(&b.label, &b.function, b.address))
            })
        });
        let total: u64 = rows.iter().map(|r| r.samples).sum();
        writeln!(
            out,
            "Instructions sampled in {what}: {total} samples, each counted at the\n\
             instruction it was taken at (its stack's innermost frame). Addresses are the\n\
             object file's own (as objdump -d prints them), the kernel's for kernel code.\n"
        )?;
        writeln!(
            out,
            "{:>9} {:>7} {:>7}  {:<18}  {:<20}  {:<24}  function+offset",
            "samples", "share", "cumul.", "address", "object", "source"
        )?;
        let name = |p: &Path| -> String {
            match (full_paths, p.file_name()) {
                (false, Some(n)) => n.to_string_lossy().into_owned(),
                _ => p.display().to_string(),
            }
        };
        let pct = |n: u64| 100.0 * n as f64 / total.max(1) as f64;
        let mut cumulative = 0;
        for r in rows {
            cumulative += r.samples;
            let place = match r.offset {
                0 => format!("{}:{}", r.label, r.function),
                offset => format!("{}:{}+{offset:#x}", r.label, r.function),
            };
            let source = r.source.as_ref().map_or("-".to_string(), |(file, line)| {
                format!("{}:{line}", name(Path::new(file)))
            });
            let object = match (&r.object, r.address) {
                (Some(o), _) => name(&o.path),
                (None, Some(_)) => "[kernel]".to_string(),
                (None, None) => "-".to_string(),
            };
            writeln!(
                out,
                "{:>9} {:>6.2}% {:>6.2}%  {:<18}  {object:<20}  {source:<24}  {place}",
                r.samples,
                pct(r.samples),
                pct(cumulative),
                r.address.map_or("-".to_string(), |a| format!("{a:#x}")),
            )?;
        }
        Ok(())
    }
}
