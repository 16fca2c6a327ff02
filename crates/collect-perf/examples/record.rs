//! Samples a command and prints what was collected: `record [FREQ] -- COMMAND [ARGS...]`.

use std::ffi::OsString;
use std::process::ExitCode;

#[cfg(target_os = "linux")]
fn main() -> ExitCode {
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;

    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(sep) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: record [FREQ] -- COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let mut config = collect_perf::Config::default();
    if let Some(f) = args[..sep].first().and_then(|f| f.to_str()?.parse().ok()) {
        config.frequency = f;
    }
    let started = Instant::now();
    let result = collect_perf::Sampler::launch(&args[sep + 1..], &config)
        .and_then(|s| s.run(&AtomicBool::new(false)));
    let wall = started.elapsed();
    match result {
        Ok(r) => {
            let processes = collect_perf::replay(&r);
            let cpu_s = r.samples.iter().map(|s| s.period).sum::<u64>() as f64 / 1e9;
            println!(
                "wall {:.3} s, {} samples ({:.0}/s of wall time, {:.3} s of cpu), lost {}, throttled {}, {} processes, {} side-band records",
                wall.as_secs_f64(),
                r.samples.len(),
                r.samples.len() as f64 / wall.as_secs_f64(),
                cpu_s,
                r.lost_samples(),
                r.throttled,
                processes.processes.len(),
                r.side_band.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn main() -> ExitCode {
    ExitCode::from(2)
}
