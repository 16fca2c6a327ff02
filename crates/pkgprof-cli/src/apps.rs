//! Reports over a continuous directory (`pkgmon --continuous -a`): `--apps` (applications
//! and their instances, from the index), `--app NAME[#N]` and `--system` (the seamless
//! listing, or any export, of the selected windows summed), `--from`/`--to` (which windows).
//!
//! Windows are read and merged in parallel (rayon), each into its seamless model labelled by
//! command name (`make/u:main`), and summed with [`callgraph::sum_seamless_models`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use callgraph::{
    ObjectCache, ProcessLabels, ProcessSelection, Seamless, SeamlessOptions, sum_seamless_models,
};
use gmon_format::continuous::{ContinuousIndex, INDEX_NAME, IndexInstance, IndexWindow, unescape};
use profile_model::Profile;
use rayon::prelude::*;

use crate::options::Options;

/// The continuous directory the command line names, if its operand is one (holds an index).
pub(crate) fn continuous_dir(o: &Options) -> Option<PathBuf> {
    let dir = PathBuf::from(o.operands.first()?);
    dir.join(INDEX_NAME).is_file().then_some(dir)
}

/// Whether the command line asks for a report over a continuous directory.
pub(crate) fn wanted(o: &Options) -> bool {
    o.apps || o.app.is_some() || o.from.is_some() || o.to.is_some() || {
        o.system && continuous_dir(o).is_some()
    }
}

/// Reads the index of `dir`.
fn read_index(dir: &Path) -> Result<ContinuousIndex> {
    let path = dir.join(INDEX_NAME);
    let data = safe_fs::read(
        &path,
        &safe_fs::ReadOptions::untrusted(gmon_format::continuous::INDEX_MAX_BYTES),
    )
    .with_context(|| {
        format!(
            "{} is not a continuous directory (no readable index); `pkgmon --continuous \
                 -a -o DIR` writes one",
            dir.display()
        )
    })?;
    ContinuousIndex::parse(&data).map_err(|e| anyhow::Error::new(e.with_path(&path)))
}

/// The CLOCK_REALTIME ns `--from`/`--to` name: a window number (`12`, `w12`), a time before
/// the last window's end (`-30m`), or seconds since the epoch (`@1732426000`). A window
/// number gives its start for `--from` and its end for `--to`.
fn when(text: &str, index: &ContinuousIndex, to: bool) -> Result<u64> {
    let last_end = index.windows.last().map_or(0, |w| w.end_ns);
    if let Some(ago) = text.strip_prefix('-') {
        let (num, unit) = ago
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or((ago, "s"), |i| ago.split_at(i));
        let scale = match unit {
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            _ => bail!("`{text}': unknown unit `{unit}' (use s, m, h or d)"),
        };
        let v: f64 = num
            .parse()
            .with_context(|| format!("`{text}' is not -30m or the like"))?;
        return Ok(last_end.saturating_sub((v * scale) as u64));
    }
    if let Some(secs) = text.strip_prefix('@') {
        let v: f64 = secs
            .parse()
            .with_context(|| format!("`{text}' is not @SECONDS"))?;
        return Ok((v * 1e9) as u64);
    }
    let seq: u64 = text
        .trim_start_matches('w')
        .parse()
        .with_context(|| format!("`{text}' is not a window number, -AGE or @SECONDS"))?;
    let Some(w) = index.windows.iter().find(|w| w.seq == seq) else {
        bail!(
            "no window {seq} in the index (it holds {})",
            match (index.windows.first(), index.windows.last()) {
                (Some(a), Some(b)) => format!("windows {} to {}", a.seq, b.seq),
                _ => "no window".into(),
            }
        );
    };
    Ok(if to { w.end_ns } else { w.start_ns })
}

/// The index of the continuous directory `dir` and the windows `--from`/`--to` select (those
/// that overlap the span), with their instances read.
fn selected(o: &Options, dir: &Path) -> Result<(ContinuousIndex, Vec<usize>)> {
    let mut index = read_index(dir)?;
    let from = o
        .from
        .as_deref()
        .map(|t| when(t, &index, false))
        .transpose()?;
    let to = (o.to.as_deref())
        .map(|t| when(t, &index, true))
        .transpose()?;
    let picked: Vec<usize> = (0..index.windows.len())
        .filter(|&k| {
            let w = &index.windows[k];
            from.is_none_or(|f| w.end_ns > f) && to.is_none_or(|t| w.start_ns < t)
        })
        .collect();
    if picked.is_empty() {
        bail!("no window of the index falls between --from and --to");
    }
    for &k in &picked {
        index.windows[k]
            .read_instances(dir)
            .map_err(anyhow::Error::new)?;
    }
    Ok((index, picked))
}

/// `NAME[#N]` of `--app`: the application's name (escaped as in the index) and instance.
fn app_spec(text: &str) -> Result<(Vec<u8>, Option<u32>)> {
    let (name, number) = match text.rsplit_once('#') {
        Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            (name, Some(n.parse()?))
        }
        _ => (text, None),
    };
    let name = unescape(name)
        .filter(|n| !n.is_empty())
        .with_context(|| format!("--app: `{text}' is not NAME or NAME#N (escape bytes as %XX)"))?;
    Ok((name, number))
}

/// Runs the report for `o`.
pub(crate) fn run(
    o: &Options,
    report: callgraph::ReportOptions,
    out: &mut dyn Write,
) -> Result<()> {
    let Some(dir) = o.operands.first().map(PathBuf::from) else {
        bail!(
            "--apps, --app, --from and --to read a continuous directory: give it (pkgmon --continuous -o DIR)"
        );
    };
    if o.operands.len() > 1 {
        bail!(
            "give one continuous directory, not {} operands",
            o.operands.len()
        );
    }
    let (index, picked) = selected(o, &dir)?;
    let windows: Vec<&IndexWindow> = picked.iter().map(|&k| &index.windows[k]).collect();
    if o.apps {
        return write_apps(&dir, &index, &windows, out);
    }
    if o.line {
        let mut instructions = crate::instructions::Instructions::default();
        for s in build_windows(o, &dir, &windows)? {
            instructions.add(s.instructions);
        }
        let what = format!(
            "{}, windows {} to {} of {}",
            o.app.as_deref().unwrap_or("the system"),
            windows[0].seq,
            windows[windows.len() - 1].seq,
            dir.display()
        );
        return instructions.write(&what, o.print_path, out);
    }
    let exact = crate::seamless::exact_inclusive(o)?;
    let (seamless, unit) = sum(o, &dir, &windows)?;
    let view = callgraph::gprof_view(&seamless, unit);
    crate::seamless::write_listing(o, report, view, exact, out)
}

/// The profile model of `--app`/`--system` over the selected windows, as exports see it.
pub(crate) fn export_model(o: &Options) -> Result<Profile> {
    let Some(dir) = o.operands.first().map(PathBuf::from) else {
        bail!("give the continuous directory");
    };
    let (index, picked) = selected(o, &dir)?;
    let windows: Vec<&IndexWindow> = picked.iter().map(|&k| &index.windows[k]).collect();
    Ok(callgraph::export_view(&sum(o, &dir, &windows)?.0))
}

/// Files to write: name and bytes.
#[cfg(target_os = "linux")]
type Files = Vec<(String, Vec<u8>)>;

/// `--apps --export=FORMAT --output=DIR [--app=NAME[#N]]`: one profile per instance per
/// window (of the application or instance `--app` names, or of all), for fleet
/// back ends (Pyroscope, Parca), as `DIR/w<seq>.<app>#<n>.<ext>` (the name escaped as in the
/// index, `/` as `%2F`), each sample labelled `host`, `app`, `instance` (`app#n`) and
/// `container_id` and `cgroup_id` (when the process was running at the window's end and had
/// them) beside the model's own (`pid`, `comm`); returns
/// the files written.
#[cfg(target_os = "linux")]
pub(crate) fn export_instances(
    o: &Options,
    format: profile_export::Format,
) -> Result<Vec<PathBuf>> {
    let Some(dir) = o.operands.first().map(PathBuf::from) else {
        bail!("give the continuous directory");
    };
    let Some(out_dir) = o.output.as_ref().map(PathBuf::from) else {
        bail!("--apps --export writes one file per instance and window: give --output=DIRECTORY");
    };
    let (index, picked) = selected(o, &dir)?;
    let windows: Vec<&IndexWindow> = picked.iter().map(|&k| &index.windows[k]).collect();
    let target = safe_fs::Dir::open_following(&out_dir).with_context(|| {
        format!(
            "--output {} must be an existing directory",
            out_dir.display()
        )
    })?;
    let mut options = SeamlessOptions::default();
    options.stacks = true;
    options.labels = ProcessLabels::Comm;
    options.demangle = o.demangle && !o.traditional;
    options.object_path = o.object_path.iter().map(PathBuf::from).collect();
    let ext = match format.is_binary() {
        true => "pb.gz",
        false => "txt",
    };
    let cache = std::sync::Arc::new(ObjectCache::default());
    let files: Vec<Result<Files>> = windows
        .par_iter()
        .map(|w| -> Result<Files> {
            let wdir = dir.join(&w.dir);
            let m = gmon_format::scan(&wdir)
                .with_context(|| format!("cannot read window {}", wdir.display()))?;
            crate::seamless::check_complete(&m, o.force)?;
            drop(m);
            let mut done = Vec::new();
            let picked = picks(o, w)?;
            let chosen = |i: &&IndexInstance| picked.as_ref().is_none_or(|p| p.contains(i));
            for i in (w.instances.iter())
                .filter(|i| i.samples > 0)
                .filter(chosen)
            {
                let Some((pid, n)) = gmon_format::parse_process_label(&i.label) else {
                    continue;
                };
                let mut one = gmon_format::scan(&wdir)?;
                one.processes
                    .retain(|p| p.pid == pid && p.instance == n && p.comm.as_bytes() == i.app);
                if one.processes.is_empty() {
                    continue;
                }
                let pick = ProcessSelection::Pids(vec![(pid, n)]);
                let s = Seamless::build_sharing(&one, &pick, &options, Some(&cache))?;
                let mut labels = vec![
                    ("host".to_string(), index.host.clone()),
                    (
                        "app".to_string(),
                        String::from_utf8_lossy(&i.app).into_owned(),
                    ),
                    ("instance".to_string(), i.appid()),
                ];
                if let Some(c) = &i.container {
                    labels.push(("container_id".to_string(), c.clone()));
                }
                if let Some(id) = i.cgroup_id {
                    labels.push(("cgroup_id".to_string(), id.to_string()));
                }
                let model = callgraph::export_view(&sum_seamless_models(&[(s.model, labels)]));
                let mut bytes = Vec::new();
                let mut eo = profile_export::ExportOptions::default();
                eo.value = o.value.clone();
                profile_export::export(&model, format, &eo, &mut bytes)?;
                let name = format!("{}.{}.{ext}", w.dir, i.appid().replace('/', "%2F"));
                done.push((name, bytes));
            }
            Ok(done)
        })
        .collect();
    let mut written = Vec::new();
    for f in files {
        for (name, bytes) in f? {
            let mut file = target.create(0o644)?;
            file.write_all(&bytes)?;
            file.persist_replacing(&name)?;
            written.push(out_dir.join(name));
        }
    }
    Ok(written)
}

/// The file sets of window `w` that `--app` picks (all with `--system`).
fn picks<'w>(o: &Options, w: &'w IndexWindow) -> Result<Option<Vec<&'w IndexInstance>>> {
    let Some(spec) = &o.app else {
        return Ok(None);
    };
    let (name, number) = app_spec(spec)?;
    Ok(Some(
        (w.instances.iter())
            // An instance without samples in a window has no files there.
            .filter(|i| i.samples > 0 && i.app == name && number.is_none_or(|n| n == i.number))
            .collect(),
    ))
}

/// The windows' seamless models summed, and the histograms' unit.
fn sum(
    o: &Options,
    dir: &Path,
    windows: &[&IndexWindow],
) -> Result<(Profile, Option<gmon_format::HistogramUnit>)> {
    let mut models = Vec::new();
    let mut unit = None;
    for s in build_windows(o, dir, windows)? {
        unit = unit.or(s.unit);
        models.push((s.model, Vec::new()));
    }
    Ok((sum_seamless_models(&models), unit))
}

/// The seamless profiles of `--app` (or `--system`) in each of `windows` that has a file
/// set of it, built in parallel, with the instructions sampled for `-l`; warnings printed
/// once each.
///
/// Returns an error if no window has one.
fn build_windows(o: &Options, dir: &Path, windows: &[&IndexWindow]) -> Result<Vec<Seamless>> {
    if o.app.is_none() && !o.system {
        bail!("over a continuous directory, give --apps, --app=NAME[#N] or --system");
    }
    let mut options = SeamlessOptions::default();
    options.user = !o.kernel_only;
    options.kernel = !o.user_only;
    options.object_path = o.object_path.iter().map(PathBuf::from).collect();
    options.keep_unused = o.display_unused;
    options.demangle = o.demangle && !o.traditional;
    options.stacks = true;
    options.labels = ProcessLabels::Comm;
    options.instructions = o.line;
    let cache = std::sync::Arc::new(ObjectCache::default());
    let built: Vec<Result<Option<Seamless>>> = windows
        .par_iter()
        .map(|w| -> Result<Option<Seamless>> {
            let picked = picks(o, w)?;
            if picked.as_ref().is_some_and(Vec::is_empty) {
                return Ok(None);
            }
            let wdir = dir.join(&w.dir);
            let mut m = gmon_format::scan(&wdir)
                .with_context(|| format!("cannot read window {}", wdir.display()))?;
            crate::seamless::check_complete(&m, o.force)?;
            let selection = match &picked {
                None => ProcessSelection::System,
                Some(list) => {
                    let wanted: Vec<(u32, u32, &[u8])> = list
                        .iter()
                        .filter_map(|i| {
                            let (pid, n) = gmon_format::parse_process_label(&i.label)?;
                            Some((pid, n, i.app.as_slice()))
                        })
                        .collect();
                    m.processes.retain(|p| {
                        wanted.iter().any(|&(pid, n, app)| {
                            p.pid == pid && p.instance == n && p.comm.as_bytes() == app
                        })
                    });
                    ProcessSelection::Pids(wanted.iter().map(|&(p, n, _)| (p, n)).collect())
                }
            };
            let s = Seamless::build_sharing(&m, &selection, &options, Some(&cache))?;
            Ok(Some(s))
        })
        .collect();
    let mut profiles = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut stripped = Vec::new();
    for b in built {
        let Some(mut s) = b? else { continue };
        for w in std::mem::take(&mut s.warnings) {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        stripped.append(&mut s.stripped);
        profiles.push(s);
    }
    // A stripped program run in every window is said once, with its samples in all of them.
    warnings.extend(callgraph::stripped_warnings(&stripped));
    for w in &warnings {
        eprintln!("pkgprof: warning: {w}");
    }
    if profiles.is_empty() {
        bail!(
            "no file set of {} in the windows selected; `pkgprof --apps {}` lists the \
             applications",
            o.app.as_deref().unwrap_or("the system"),
            dir.display()
        );
    }
    Ok(profiles)
}

/// `HH:MM:SS` (UTC) of CLOCK_REALTIME ns, with the date when `date`.
fn clock(ns: u64, date: bool) -> String {
    let secs = ns / 1_000_000_000;
    let (days, rem) = (secs / 86400, secs % 86400);
    let time = format!("{:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60);
    if !date {
        return time;
    }
    // Days since 1970-01-01 to a civil date (proleptic Gregorian calendar).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {time}")
}

/// One instance over the selected windows.
#[derive(Default)]
struct Seen {
    samples: u64,
    cpu_ns: Option<u64>,
    begin: Option<u64>,
    end: Option<u64>,
    first: u64,
    last: u64,
    pids: Vec<u32>,
}

/// `--apps`: each application with its instances, by samples.
fn write_apps(
    dir: &Path,
    index: &ContinuousIndex,
    windows: &[&IndexWindow],
    out: &mut dyn Write,
) -> Result<()> {
    let total: u64 = windows.iter().map(|w| w.samples).sum();
    let lost: u64 = windows.iter().map(|w| w.lost).sum();
    let (start, end) = (windows[0].start_ns, windows[windows.len() - 1].end_ns);
    let mut apps: BTreeMap<&[u8], BTreeMap<u32, Seen>> = BTreeMap::new();
    for w in windows {
        for i in &w.instances {
            let s = apps.entry(&i.app).or_default().entry(i.number).or_default();
            if s.pids.is_empty() {
                s.first = w.start_ns;
            }
            s.last = w.end_ns;
            s.samples += i.samples;
            s.cpu_ns = s.cpu_ns.max(i.cpu_ns);
            s.begin = s.begin.or(i.begin_ns);
            s.end = i.end_ns.or(s.end);
            if !s.pids.contains(&i.pid) {
                s.pids.push(i.pid);
            }
        }
    }
    writeln!(
        out,
        "Continuous profile {} (host {}): windows {} to {}, {} to {} UTC ({:.0} s), {} Hz per CPU",
        dir.display(),
        index.host,
        windows[0].seq,
        windows[windows.len() - 1].seq,
        clock(start, true),
        clock(end, false),
        (end - start) as f64 / 1e9,
        index.frequency
    )?;
    writeln!(
        out,
        "{total} samples ({lost} lost); kernel work for no process and idle time are not in \
         any application.\n"
    )?;
    writeln!(
        out,
        "{:>9} {:>6} {:>9}  {:<19}  application / instance (pids)",
        "samples", "share", "cpu-s", "lifetime (UTC)"
    )?;
    let pct = |n: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * n as f64 / total as f64
        }
    };
    let mut rows: Vec<(&[u8], &BTreeMap<u32, Seen>, u64)> = apps
        .iter()
        .map(|(app, inst)| (*app, inst, inst.values().map(|s| s.samples).sum()))
        .collect();
    rows.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
    for (app, instances, samples) in rows {
        let cpu: u64 = instances.values().filter_map(|s| s.cpu_ns).sum();
        writeln!(
            out,
            "{samples:>9} {:>5.1}% {:>9.2}  {:<19}  {} ({} instance{})",
            pct(samples),
            cpu as f64 / 1e9,
            "",
            gmon_format::continuous::escape(app),
            instances.len(),
            if instances.len() == 1 { "" } else { "s" }
        )?;
        let mut list: Vec<(&u32, &Seen)> = instances.iter().collect();
        list.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0.cmp(b.0)));
        for (n, s) in list {
            let from = clock(s.begin.unwrap_or(s.first), false);
            let to = s.end.map_or("running".to_string(), |e| clock(e, false));
            let pids: Vec<String> = s.pids.iter().map(u32::to_string).collect();
            writeln!(
                out,
                "{:>9} {:>5.1}% {:>9}  {:<19}    {}#{n} ({})",
                s.samples,
                pct(s.samples),
                s.cpu_ns
                    .map_or("-".into(), |c| format!("{:.2}", c as f64 / 1e9)),
                format!("{from}-{to}"),
                gmon_format::continuous::escape(app),
                pids.join(",")
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_app_specs() {
        assert_eq!(clock(0, true), "1970-01-01 00:00:00");
        assert_eq!(
            clock(1_732_426_000_000_000_000, true),
            "2024-11-24 05:26:40"
        );
        assert_eq!(app_spec("make#3").unwrap(), (b"make".to_vec(), Some(3)));
        assert_eq!(app_spec("a%23b").unwrap(), (b"a#b".to_vec(), None));
        assert_eq!(app_spec("x#").unwrap(), (b"x#".to_vec(), None));
        assert!(app_spec("#2").is_err());
    }
}
