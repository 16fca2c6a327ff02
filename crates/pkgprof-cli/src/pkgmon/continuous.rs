//! `pkgmon --continuous -a`: always-on profiling of the whole machine, a measurement per time
//! window (collect_perf::Continuous), until SIGINT or SIGTERM.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use collect_perf::{Config, Continuous, ContinuousOptions, Sampler, preflight};
use safe_fs::{Dir, FileKind};

use super::{Args, STOP, catch_signals, dir_mode};

/// The default samples per second per CPU: a prime below 20, as Parca and Pyroscope use, so
/// that sampling does not run in lock-step with periodic work.
pub const DEFAULT_HZ: u64 = 19;

/// `--keep`: an age, a size, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keep {
    /// Windows older than this go.
    pub age: Option<Duration>,
    /// The oldest windows go while all take more bytes than this.
    pub bytes: Option<u64>,
}

/// Parses `--window`: a duration such as 60s, 10m or 1h, from 1 s on.
pub fn parse_window(text: &str) -> Result<Duration, String> {
    let d = parse_age(text)?;
    if d < Duration::from_secs(1) {
        return Err(format!("window `{text}` must be at least 1s"));
    }
    Ok(d)
}

fn parse_age(text: &str) -> Result<Duration, String> {
    let (num, unit) = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or((text, "s"), |i| text.split_at(i));
    let scale = match unit {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => {
            return Err(format!(
                "unknown unit `{unit}` in `{text}` (use s, m, h or d)"
            ));
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 60s or 24h"))?;
    let secs = v * scale;
    if !(secs.is_finite() && secs > 0.0 && secs < 1e10) {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `--keep`: comma-separated ages (24h) and sizes (2G, 500M, 64K, bytes with B).
pub fn parse_keep(text: &str) -> Result<Keep, String> {
    let mut keep = Keep::default();
    for part in text.split(',') {
        let size = part
            .strip_suffix(['K', 'M', 'G', 'T', 'B'])
            .map(|n| (n, part.as_bytes()[part.len() - 1]));
        match size {
            Some((n, unit)) => {
                let v: f64 = n
                    .parse()
                    .map_err(|_| format!("`{part}` is not a size such as 2G or 500M"))?;
                let scale = match unit {
                    b'K' => 1u64 << 10,
                    b'M' => 1 << 20,
                    b'G' => 1 << 30,
                    b'T' => 1 << 40,
                    _ => 1,
                } as f64;
                if !(v.is_finite() && v > 0.0 && v * scale < 1e19) {
                    return Err(format!("size `{part}` is out of range"));
                }
                keep.bytes = Some((v * scale) as u64);
            }
            None => keep.age = Some(parse_age(part)?),
        }
    }
    Ok(keep)
}

static PAUSE: AtomicBool = AtomicBool::new(false);

extern "C" fn on_pause(sig: libc::c_int) {
    PAUSE.store(sig == libc::SIGUSR1, Ordering::Relaxed);
}

/// SIGUSR1 pauses sampling, SIGUSR2 resumes it.
fn catch_pause_signals() {
    for sig in [libc::SIGUSR1, libc::SIGUSR2] {
        // Safety: installing a handler that only stores to an atomic, which is
        // async-signal-safe; the sigaction struct is fully initialized.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_pause as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Opens (creating if needed) a continuous directory: never through a link, never another
/// user's (without --trust-output), never a single measurement's directory.
fn open_dir(path: &Path, mode: u32, trust: bool) -> Result<Dir> {
    let dir = match path.file_name() {
        // `.`, `..` or `/`.
        None => super::output::open_path(path, trust)?,
        Some(name) => {
            let parent = super::output::open_parent(path, trust)
                .with_context(|| format!("cannot create {}", path.display()))?;
            match parent.create_subdir(name, mode) {
                Ok(d) => d,
                Err(e) if matches!(e.kind(), safe_fs::ErrorKind::Exists) => {
                    match parent.kind_of(name)? {
                        Some((FileKind::Symlink, _)) if !trust => bail!(
                            "{} is a symbolic link: pkgmon does not write through one as root; \
                             give the real directory, or --trust-output",
                            path.display()
                        ),
                        Some((FileKind::Symlink, _)) => Dir::open_following(path)?,
                        _ => parent.open_subdir(name)?,
                    }
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", path.display()));
                }
            }
        }
    };
    let st = dir.stat()?;
    // Safety: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if st.st_uid != me && !trust {
        bail!(
            "{} belongs to user {}, not to you (uid {me}): use a directory of your own, or \
             --trust-output",
            path.display(),
            st.st_uid
        );
    }
    if dir
        .entries()?
        .iter()
        .any(|n| n == gmon_format::MANIFEST_NAME)
    {
        bail!(
            "{} holds a single measurement, not a continuous run's windows; give --continuous \
             a directory of its own",
            path.display()
        );
    }
    Ok(dir)
}

/// Runs pkgmon --continuous; returns its exit status.
pub fn run(args: &Args) -> Result<u8> {
    let mut config = Config::default();
    config.frequency = args.freq.unwrap_or(DEFAULT_HZ);
    config.system_wide = true;
    config.user_only = args.user_only;
    config.user_stack_bytes = args.stack_size;
    config.stack_copier = args.stack_copy.copier(false);
    config.max_stack = args.max_stack;
    // Rings for about two seconds of samples with their stack copies, so that nothing is
    // lost while a window is put in place.
    let record = u64::from(config.user_stack_bytes) + 2048;
    config.mmap_pages = (config.frequency * record * 2)
        .div_ceil(4096)
        .clamp(64, 8192) as usize;
    // Counters of live processes a few times a window; exits come from taskstats.
    config.proc_poll_interval = Some((args.window / 4).max(Duration::from_secs(1)));
    let perms = preflight(&config)?;
    for w in &perms.warnings {
        eprintln!("pkgmon: warning: {w}");
    }
    let dir = open_dir(&args.dir, dir_mode(args.mode), args.trust_output)?;
    let mut opts = ContinuousOptions::default();
    opts.window = args.window;
    opts.keep_age = args.keep.age;
    opts.keep_bytes = args.keep.bytes;
    opts.mode = args.mode;
    opts.pause = Some(&PAUSE);
    opts.max_frames = usize::from(args.max_stack);
    let mut windows = Continuous::begin(dir, opts)
        .with_context(|| format!("cannot continue in {}", args.dir.display()))?;
    catch_signals();
    catch_pause_signals();
    let sampler = Sampler::system(&config)?;
    for note in sampler.notes() {
        eprintln!("pkgmon: note: {note}");
    }
    eprintln!(
        "pkgmon: profiling the whole machine at {} Hz per CPU, a window every {:?}, into {} \
         (SIGUSR1 pauses, SIGUSR2 resumes, Ctrl-C or SIGTERM stops)",
        config.frequency,
        args.window,
        args.dir.display()
    );
    let mut rec = sampler.run_continuous(&STOP, |_| {}, &mut windows)?;
    if STOP.load(Ordering::Relaxed) {
        eprintln!("pkgmon: stopped; writing the last window");
    }
    let done = windows
        .finish(&mut rec)
        .with_context(|| format!("cannot write into {}", args.dir.display()))?;
    for e in &done.errors {
        eprintln!("pkgmon: warning: a window was not written: {e}");
    }
    eprintln!(
        "pkgmon: {} samples, {} lost; windows written this run: {}",
        rec.sample_count,
        rec.lost_samples(),
        done.written
    );
    eprintln!(
        "pkgmon: report with: pkgprof --apps {}",
        super::shell_word(&args.dir.to_string_lossy())
    );
    Ok(0)
}
