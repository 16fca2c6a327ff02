#!/usr/bin/env bash
# What `pkgmon --blocking` costs a workload that switches tasks all the time: `perf bench sched
# pipe` (two processes passing a token through two pipes: each operation is a write, a read
# and a context switch in each process), both processes on CPU 0 (`taskset -c 0`), so each
# operation is on-CPU work, not the wake-up latency of an idle CPU (which, on this virtual
# machine, is most of an unpinned run and moves with anything else running). Rows: bare,
# `pkgmon --latency` (the system calls alone, in the kernel), `--blocking` (in the kernel: the
# `sched_switch` and `sched_waking` programs beside them), `--blocking --latency-path=ring`
# (every call and switch through the perf rings), and BASELINE's `--blocking` if given (an
# older pkgmon). Interleaved runs, medians; lost records (worst run) and pkgmon's warnings
# (all runs) beside.
#
#   bash benches/compare-blocking-switches.sh          (RUNS=7 LOOPS=100000)
#   PKGMON=path/to/pkgmon BASELINE=path/to/old/pkgmon bash benches/compare-blocking-switches.sh
#
# Needs root and perf (its `bench` command is the workload). Quote figures with the load
# average the script prints.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-7}"
loops="${LOOPS:-100000}"
. "$root/benches/lib.sh"
needs perf taskset
find_pkgmon
work="$(mktemp -d /tmp/compare-blocking.XXXXXX)"
trap 'rm -rf "$work"' EXIT
python3 - "$pkgmon" "${BASELINE:-}" "$runs" "$loops" "$work" <<'PY'
import os, re, shutil, statistics, subprocess, sys

pkgmon, baseline, runs, loops, work = sys.argv[1:6]
out = os.path.join(work, "pk.data")
cmd = ["taskset", "-c", "0", "perf", "bench", "sched", "pipe", "-l", loops]
tools = [
    ("bare", []),
    ("pkgmon --latency", [pkgmon, "-o", out, "--latency", "--"]),
    ("pkgmon --blocking", [pkgmon, "-o", out, "--blocking", "--"]),
    ("pkgmon --blocking --latency-path=ring", [pkgmon, "-o", out, "--blocking", "--latency-path=ring", "--"]),
] + ([("pkgmon --blocking (baseline)", [baseline, "-o", out, "--blocking", "--"])] if baseline else [])
per_op = {t: [] for t, _ in tools}
lost = {t: 0 for t, _ in tools}
warnings = {t: 0 for t, _ in tools}

def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])

print(f"{os.cpu_count()} cpus; load average at start: {loadavg()}; {runs} runs each, medians; "
      f"perf bench sched pipe -l {loops} on cpu 0")
print()
print("| tool | µs per operation | vs bare | lost records (worst run) | warnings (all runs) |")
print("|---|---|---|---|---|")
for _ in range(int(runs)):
    for tool, prefix in tools:
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.run(prefix + cmd, capture_output=True, text=True)
        m = re.search(r"([0-9.]+) usecs/op", p.stdout)
        if p.returncode != 0 or not m:
            sys.exit(f"{tool}: {p.stderr.strip()}")
        per_op[tool].append(float(m.group(1)))
        lm = re.search(r"samples, ([0-9]+) lost", p.stderr)
        lost[tool] = max(lost[tool], int(lm.group(1)) if lm else 0)
        warnings[tool] += p.stderr.count("warning:")
bare = statistics.median(per_op["bare"])
for tool, _ in tools:
    med = statistics.median(per_op[tool])
    extra = "-" if tool == "bare" else str(lost[tool])
    print(f"| {tool} | {med:.2f} | {100 * (med / bare - 1):+.1f}% | {extra} | {warnings[tool]} |")
print()
print(f"load average at end: {loadavg()}")
PY
