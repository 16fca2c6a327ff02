//! Reading a measurement's files into the merge: each process's user and kernel gmon files
//! (histogram bins become hits, arcs become arcs, boundary arcs are drawn by kind of entry) and
//! its sampled stacks, every address resolved where it was recorded (see `resolve`).

use std::collections::BTreeMap;
use std::path::Path;

use gmon_format::{
    AddressSize, Arc, Endian, HistogramUnit, MeasurementInfo, ProcessFiles, Profile, ReadOptions,
    Record,
};

use super::state::{Builder, Loc, MappedRange, Side, Space, Target};
use super::{BoundaryKind, ProcessSummary, read_file};
use crate::error::{Error, Result};

/// The pseudo-function above the outermost frame found of a user stack cut short.
const TRUNCATED: &[u8] = b"[truncated]";

/// The pseudo-function above a function that is the outermost frame of complete stacks and
/// is called as well (see `add_roots`).
const ROOT: &[u8] = b"[root]";

/// User addresses lie below this, kernel addresses at or above (x86-64, arm64 and others).
const KERNEL_SPACE_START: u64 = 0x8000_0000_0000_0000;

/// The last component of a profile's path, which `async.moves` names it by.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The histogram bins (address of each bin, count) and arcs of one gmon file.
pub(super) type Contents = (Vec<(u64, u64)>, Vec<Arc>);

impl Builder {
    pub(super) fn read_gmon(&mut self, path: &Path) -> Result<Contents> {
        let data = read_file(path, crate::input::PROFILE_MAX_BYTES)?;
        let read = ReadOptions::new(AddressSize::U64, Endian::Little);
        let located = |e: gmon_format::Error| Error::from(e.with_path(path));
        let profile = Profile::parse(&data, &read).map_err(located)?;
        let mut bins = Vec::new();
        let mut arcs = Vec::new();
        // Histograms at another rate than the first profile's: how many, and the first such
        // rate. Said once per file after the loop (one warning per record, each looked up
        // among all before it, took 30 s and printed 200,000 lines for an 8 MiB file).
        let mut other_rates = (0u64, 0u32);
        for record in profile.records() {
            let (_, record) = record.map_err(located)?;
            match record {
                Record::Histogram(h) => {
                    let hh = &h.header;
                    let unit = HistogramUnit {
                        prof_rate: hh.prof_rate,
                        dimension: hh.dimension,
                        dimension_abbrev: hh.dimension_abbrev,
                    };
                    match self.unit {
                        None => self.unit = Some(unit),
                        Some(first) if first.prof_rate != unit.prof_rate => {
                            if other_rates.0 == 0 {
                                other_rates.1 = unit.prof_rate;
                            }
                            other_rates.0 += 1;
                        }
                        Some(_) => {}
                    }
                    let n = h.bins.len() as u128;
                    let span = u128::from(hh.high_pc.wrapping_sub(hh.low_pc));
                    for (i, count) in h.bins.iter().enumerate() {
                        if count == 0 {
                            continue;
                        }
                        let at = hh.low_pc.wrapping_add((i as u128 * span / n) as u64);
                        bins.push((at, u64::from(count)));
                    }
                }
                Record::Arc(a) => arcs.push(a),
                Record::BasicBlocks(_) => {}
            }
        }
        if let (n @ 1.., rate, Some(first)) = (other_rates.0, other_rates.1, self.unit) {
            let records = if n == 1 {
                String::new()
            } else {
                format!(" (and {} more of its histograms at other rates)", n - 1)
            };
            let w = format!(
                "{}: sampled at {rate} Hz{records}, the first profile at {} Hz; times use {} Hz",
                path.display(),
                first.prof_rate,
                first.prof_rate
            );
            // The same file may be read again (for another window or side).
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        Ok((bins, arcs))
    }

    /// Reads a process's info file and adds its address space (its mappings); returns the
    /// space and the info.
    pub(super) fn add_space(
        &mut self,
        files: &ProcessFiles,
        label: String,
    ) -> Result<(usize, Option<MeasurementInfo>)> {
        let info = match &files.info {
            Some(path) => {
                let data = read_file(path, crate::input::TEXT_MAX_BYTES)?;
                Some(MeasurementInfo::parse(&data).map_err(|e| e.with_path(path))?)
            }
            None => {
                self.warnings.push(format!(
                    "process {}: no measurement-info file; its addresses cannot be symbolized",
                    files.pid
                ));
                None
            }
        };
        let space = self.spaces.len();
        let mappings = info
            .as_ref()
            .map(|i| {
                i.mappings
                    .iter()
                    .enumerate()
                    .map(|(index, m)| MappedRange {
                        start: m.start,
                        end: m.end,
                        target: Target::Unresolved,
                        index,
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.spaces.push(Space {
            label,
            process: Some((files.pid, files.comm.to_string())),
            mappings,
            info: info.clone(),
            kernel: None,
            kernel_region: None,
            last_hit: usize::MAX,
        });
        Ok((space, info))
    }

    pub(super) fn add_process(
        &mut self,
        files: &ProcessFiles,
        label: String,
    ) -> Result<ProcessSummary> {
        let (space, info) = self.add_space(files, label.clone())?;
        let mut summary = ProcessSummary {
            label,
            files: Some(files.clone()),
            info,
            user_samples: 0,
            kernel_samples: 0,
            entries: BTreeMap::new(),
        };
        if let (true, Some(path)) = (self.options.user, &files.user) {
            let (bins, arcs) = self.read_gmon(path)?;
            for (at, count) in bins {
                summary.user_samples += count;
                let loc = self.user_loc(space, at, false);
                self.hit(loc, count);
            }
            let first = self.arcs.len();
            let mut roots = Vec::new();
            for a in arcs {
                // From 0: the outermost frame found of stacks that were cut short.
                let from = match a.from_pc {
                    0 => self.pseudo_loc(space, Side::User, TRUNCATED, 0),
                    gmon_format::ROOT_FROM_PC => {
                        roots.push(a);
                        continue;
                    }
                    pc => self.user_loc(space, pc, false),
                };
                let to = self.user_loc(space, a.self_pc, true);
                self.arc(from, to, a.count);
            }
            self.add_roots(space, first, &roots);
        }
        if let (true, Some(path)) = (self.options.kernel, &files.kernel) {
            self.spaces[space].kernel = self.kernel_symbols(space);
            self.add_kernel_profile(space, path, &mut summary)?;
        }
        // The header shows both sides' samples whatever the listing shows.
        for (shown, file, total) in [
            (self.options.user, &files.user, &mut summary.user_samples),
            (
                self.options.kernel,
                &files.kernel,
                &mut summary.kernel_samples,
            ),
        ] {
            if let (false, Some(path)) = (shown, file) {
                *total = self.read_gmon(path)?.0.iter().map(|&(_, n)| n).sum();
            }
        }
        // In the view as recorded, the kernel samples moved out and in (when the listing shows
        // no kernel side; `add_kernel_profile` counts them otherwise).
        if let (false, Some(path), Some(recorded)) =
            (self.options.kernel, &files.kernel, &self.recorded)
        {
            let (out, back) = recorded.balance(&file_name(path));
            summary.kernel_samples = summary.kernel_samples.saturating_sub(out) + back;
        }
        // The collector's own count of entries by kind, when it wrote one, is the full one
        // (boundary arcs are not read with --user).
        if let Some(info) = &summary.info
            && !info.boundary.entries.is_empty()
        {
            summary.entries = info.boundary.entries.clone();
            if let (Some(path), Some(recorded)) = (&files.kernel, &self.recorded) {
                recorded.recount_entries(&file_name(path), &mut summary.entries);
            }
        }
        if self.options.stacks {
            let Some(path) = &files.stacks else {
                return Err(Error::NoStacks {
                    label: gmon_format::process_label(files.pid, files.instance),
                    dir: self.dir.clone(),
                });
            };
            if self.spaces[space].kernel.is_none() && self.options.kernel {
                self.spaces[space].kernel = self.kernel_symbols(space);
            }
            let data = read_file(path, crate::input::PROFILE_MAX_BYTES)?;
            let located = |e: gmon_format::Error| Error::from(e.with_path(path));
            let stacks = gmon_format::Stacks::parse(&data).map_err(located)?;
            // The view as recorded: the stacks moved in are taken out, those taken here put
            // back.
            let kernel_name = files.kernel.as_deref().map(file_name);
            let recorded = self.recorded.take();
            let (mut out, back) = match (&recorded, &kernel_name) {
                (Some(r), Some(name)) => (r.stacks_out(name), r.stacks_back(name)),
                _ => Default::default(),
            };
            for record in stacks.records() {
                let (_, r) = record.map_err(located)?;
                let (kernel, user) = (r.kernel.to_vec(), r.user.to_vec());
                let mut samples = r.samples;
                if let Some(kind) = r
                    .boundary
                    .filter(|k| user.is_empty() && k.is_asynchronous())
                    && let Some(left) = out.get_mut(&(kind, kernel.clone()))
                {
                    let taken = samples.min(*left);
                    (samples, *left) = (samples - taken, *left - taken);
                }
                if samples > 0 {
                    self.add_stack(space, r.boundary, r.user_truncated, &kernel, &user, samples);
                }
            }
            for (frames, kind, n) in back {
                self.add_stack(space, Some(*kind), false, frames, &[], *n);
            }
            self.recorded = recorded;
            if let Some(path) = &files.latency {
                self.add_sleeps(space, path)?;
            }
        }
        Ok(summary)
    }

    pub(super) fn add_system_kernel(&mut self, label: &str, path: &Path) -> Result<ProcessSummary> {
        let space = self.spaces.len();
        self.spaces.push(Space {
            label: label.to_owned(),
            process: None,
            mappings: Vec::new(),
            info: None,
            kernel: None,
            kernel_region: None,
            last_hit: usize::MAX,
        });
        let mut summary = ProcessSummary {
            label: label.to_owned(),
            files: None,
            info: None,
            user_samples: 0,
            kernel_samples: 0,
            entries: BTreeMap::new(),
        };
        // Any process's snapshot will do: one measurement is one boot.
        let first = (0..space).find_map(|s| self.spaces[s].kernel);
        self.spaces[space].kernel = match first {
            Some(k) => Some(k),
            None => self.lone_snapshot(),
        };
        if self.options.kernel {
            self.add_kernel_profile(space, path, &mut summary)?;
        }
        Ok(summary)
    }

    /// The only `kallsyms.*` file of the directory, for system-wide files without processes.
    pub(super) fn lone_snapshot(&mut self) -> Option<usize> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .ok()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("kallsyms."))
            .collect();
        names.sort();
        let name = names.first()?.clone();
        self.load_kernel(&name)
    }

    pub(super) fn add_kernel_profile(
        &mut self,
        space: usize,
        path: &Path,
        summary: &mut ProcessSummary,
    ) -> Result<()> {
        let (mut bins, mut arcs) = self.read_gmon(path)?;
        let name = file_name(path);
        if let Some(recorded) = &self.recorded {
            let missing = recorded.take_out(&name, &mut bins, &mut arcs);
            if missing > 0 {
                self.warnings.push(format!(
                    "{}: {missing} counts of the asynchronous work async.moves says was moved \
                     into it are not in it; the view as recorded is not exact",
                    path.display()
                ));
            }
        }
        for (at, count) in bins {
            if count == 0 {
                continue;
            }
            summary.kernel_samples += count;
            let loc = self.kernel_loc(space, at);
            self.hit(loc, count);
        }
        for a in arcs {
            if a.count == 0 {
                continue;
            }
            let to = self.kernel_loc(space, a.self_pc);
            if a.from_pc >= KERNEL_SPACE_START {
                let from = self.kernel_loc(space, a.from_pc);
                self.arc(from, to, a.count);
                continue;
            }
            let name = self.symbol_name(to);
            // A gmon file keeps only the outermost kernel frame of a boundary.
            let kind = BoundaryKind::classify([Some(&*String::from_utf8_lossy(&name))]);
            *summary.entries.entry(kind).or_default() += a.count;
            // From 0: asynchronous work moved here, which no user code called.
            let user =
                self.options.user && !self.spaces[space].mappings.is_empty() && a.from_pc != 0;
            if let Some(pseudo) = self.pseudo_parent(space, kind) {
                self.arc(pseudo, to, a.count);
                if user {
                    let from = self.user_loc(space, a.from_pc, false);
                    self.arc(from, pseudo, a.count);
                }
            } else if user {
                let from = self.user_loc(space, a.from_pc, false);
                self.arc(from, to, a.count);
            }
            // Without the user side (or for work of no known process) the entry function
            // (or `[interrupt]`) keeps no caller, and gprof lists it as <spontaneous>.
        }
        self.put_back(space, &name, summary);
        Ok(())
    }

    /// Draws the arcs that count a function's entries as the root of complete stacks (from
    /// [`gmon_format::ROOT_FROM_PC`]) from `<pid>u:[root]`, for the functions that other
    /// functions call too (among this process's arcs, from `first` on): glibc's `clone3`
    /// roots every new thread's stacks and is what `pthread_create` calls. gprof's arithmetic
    /// shares a function's time among its callers by their arcs; without the roots counted,
    /// the few samples of `pthread_create` in `clone3` took every thread's time to
    /// `pthread_create`'s callers (pkgprof-cli's truth workload `threads`: `main` 99.9%
    /// inclusive where it measured 20.3%). A function that only roots stacks (`_start`) keeps
    /// no caller, and gprof lists it as <spontaneous>.
    fn add_roots(&mut self, space: usize, first: usize, roots: &[Arc]) {
        let same = |a: Loc, b: Loc| a.region == b.region && a.symbol == b.symbol;
        for a in roots {
            let to = self.user_loc(space, a.self_pc, true);
            let called = self.arcs[first..]
                .iter()
                .any(|&(from, t, _)| same(t, to) && !same(from, to));
            if called && a.count > 0 {
                let from = self.pseudo_loc(space, Side::User, ROOT, 0);
                self.arc(from, to, a.count);
            }
        }
    }

    /// The pseudo-function above the kernel frames of a boundary of `kind`, if it has one
    /// (`[interrupt]`, `[async net-rx]`); for asynchronous work in a space of no process
    /// (the attribution's residue) the residue's (`[async unattributed net-rx]`).
    pub(super) fn pseudo_parent(&mut self, space: usize, kind: BoundaryKind) -> Option<Loc> {
        let name = match (self.spaces[space].process.is_some(), kind.residue_parent()) {
            (false, Some(residue)) => residue,
            _ => kind.pseudo_parent()?,
        };
        Some(self.pseudo_loc(space, Side::Kernel, name.as_bytes(), u64::MAX))
    }

    /// Adds one record of a stacks file: kernel frames then user frames, each innermost
    /// first, with `[interrupt]` (or the kind's other pseudo-function) between them for an
    /// interrupt, as its arcs have it, and
    /// `[truncated]` beyond the user frames of a stack cut short, so that its outermost frame
    /// found is not taken for a root.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn add_stack(
        &mut self,
        space: usize,
        boundary: Option<BoundaryKind>,
        truncated: bool,
        kernel: &[u64],
        user: &[u64],
        samples: u64,
    ) {
        let locs = self.stack_locs(space, boundary, truncated, kernel, user);
        if let (true, Some(&leaf)) = (self.options.instructions, locs.first()) {
            let leaf = self.locs[leaf];
            *(self.leaves)
                .entry((leaf.region, leaf.symbol, leaf.offset))
                .or_default() += samples;
        }
        if !locs.is_empty() {
            self.stacks.push((locs, samples));
        }
    }

    /// Adds the sleeps of a latency file recorded with `--blocking`: per operation and sleep
    /// site, the site's kernel frames above the call site's user frames, with the time
    /// blocked there.
    fn add_sleeps(&mut self, space: usize, path: &Path) -> Result<()> {
        let data = read_file(path, crate::input::TEXT_MAX_BYTES)?;
        let file = gmon_format::latency::LatencyFile::parse(&data)
            .map_err(|e| Error::from(e.with_path(path)))?;
        for op in &file.operations {
            for site in op.blocking.iter().flat_map(|b| &b.sites) {
                let locs = self.stack_locs(space, None, false, &site.frames, &op.site);
                if !locs.is_empty() && site.blocked_ns > 0 {
                    self.off_cpu.push((locs, site.blocked_ns));
                }
            }
        }
        Ok(())
    }

    /// The places of a stack's frames, kernel then user, each innermost first, as indexes of
    /// [`Builder::locs`] (see `add_stack`).
    fn stack_locs(
        &mut self,
        space: usize,
        boundary: Option<BoundaryKind>,
        truncated: bool,
        kernel: &[u64],
        user: &[u64],
    ) -> Vec<usize> {
        let mut locs = Vec::with_capacity(kernel.len() + user.len() + 2);
        if self.options.kernel {
            for &a in kernel {
                locs.push(self.frame_id(space, Side::Kernel, a));
            }
        }
        if let (Some(kind), false, true) = (boundary, kernel.is_empty(), self.options.kernel)
            && let Some(pseudo) = self.pseudo_parent(space, kind)
        {
            locs.push(self.loc_id(pseudo));
        }
        if self.options.user {
            for &a in user {
                locs.push(self.frame_id(space, Side::User, a));
            }
            if truncated && !user.is_empty() {
                let end = self.pseudo_loc(space, Side::User, TRUNCATED, 0);
                locs.push(self.loc_id(end));
            }
        }
        locs
    }

    /// The location of a stack frame at `at` of `space`'s `side`: resolved the first time
    /// (an address resolves alike wherever it is seen in a space).
    fn frame_id(&mut self, space: usize, side: Side, at: u64) -> usize {
        if let Some(&id) = self.frame_ids.get(&(space, side, at)) {
            return id;
        }
        let loc = match side {
            Side::Kernel => self.kernel_loc(space, at),
            Side::User => self.user_loc(space, at, false),
        };
        let id = self.loc_id(loc);
        self.frame_ids.insert((space, side, at), id);
        id
    }

    /// The index of `loc` among the stacks' distinct locations, marked as used when first
    /// seen.
    fn loc_id(&mut self, loc: Loc) -> usize {
        if let Some(&id) = self.loc_ids.get(&loc) {
            return id;
        }
        self.mark(loc);
        self.locs.push(loc);
        self.loc_ids.insert(loc, self.locs.len() - 1);
        self.locs.len() - 1
    }

    pub(super) fn hit(&mut self, loc: Loc, count: u64) {
        self.mark(loc);
        *self.hist.entry((loc.region, loc.symbol)).or_default() += count;
    }

    pub(super) fn arc(&mut self, from: Loc, to: Loc, count: u64) {
        self.mark(from);
        self.mark(to);
        self.arcs.push((from, to, count));
    }

    pub(super) fn mark(&mut self, loc: Loc) {
        let r = &mut self.regions[loc.region];
        match loc.symbol {
            None => r.pseudo_used = true,
            Some(s) => {
                r.used.insert(s, ());
            }
        }
    }
}
