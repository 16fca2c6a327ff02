#!/usr/bin/env bash
# The cost of system-call tracing, side by side: pkgmon --latency (counted in the kernel by its
# BPF programs, the default, and through the perf rings, --latency-path=ring) and --blocking
# (calls, sleeps and wakers counted in the kernel, the default, or through the perf rings: ring)
# against `perf trace -s` and `strace -c -w` (the tools that give per-call latency tables),
# pkgmon sampling alone, and the bare workload, on
#   - getpid: N getpid calls, nothing else (the worst case: the call costs ~100 ns), and
#   - postmark: N Postmark-like transactions on small files (create, write 4 KiB, read, delete:
#     7 system calls each), the workload OSprof measured its overhead on.
# Each workload times its own loop (benches/workloads/*.c print it), so the figures are the
# traced program's slowdown, without the tools' start-up and file writing: its CPU time per
# operation (pkgmon's programs and perf's tracepoints run in the traced task, and CPU time
# moves less than elapsed time on a loaded machine) and its elapsed time per operation (the
# figure for strace, whose tracer works while the traced task waits), then the whole run's
# wall time. Runs are interleaved (bare, pkgmon, ..., bare, pkgmon, ...) and the median of
# RUNS is taken. pkgmon's lost records (ring path), calls left out of a full map
# (BPF path) and checksum mismatches are counted.
#
# Where the BPF path's cost goes: the `floor:` rows run the workload under raw-tracepoint
# programs that each do one step more than the row before (benches/examples/latency_floor.rs):
# `empty` programs (the tracepoints' slow path and the programs' dispatch: the floor of this
# design), + the pid filter, + a clock read at enter and exit, + the per-thread start entry
# and a per-CPU log2 histogram, + the user call site. The step between two rows is its cost;
# `task storage` is the start-entry row done with one task-storage value per thread in place
# of the pid filter and the start entry (the lever: compare it with that row);
# pkgmon --latency (bpf) less pkgmon's sampling alone, less the last floor row, is the rest
# of pkgmon's programs (checksum counters, the hashed histogram key, the frame-pointer read,
# page-fault events).
#
# The Postmark-like files are on tmpfs (/dev/shm) by default: on this machine's shared ext4
# disk the bare workload's CPU per transaction jumps between ~24 and ~55 us from run to run
# (the other sessions' writes), far more than the effects measured; on tmpfs it stays within
# a few percent. Its calls are cheaper there, so a tracer's share is larger (the harder case).
# POSTMARK_DIR=DIR puts them in DIR instead.
#
#   bash benches/compare-latency.sh          (RUNS=5 GETPID_N=200000 POSTMARK_N=5000)
#   PKGMON=path/to/pkgmon bash benches/compare-latency.sh     (a pkgmon already built)
#   ONLY='bare|bpf|floor' bash benches/compare-latency.sh     (the rows whose tool matches)
#   BASELINE=path/to/old/pkgmon bash benches/compare-latency.sh (adds its --blocking and
#                                          --latency rows, interleaved: a before/after)
#
# Needs root, perf and strace. Quote figures with the load average the script prints.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-5}"
getpid_n="${GETPID_N:-200000}"
postmark_n="${POSTMARK_N:-5000}"
. "$root/benches/lib.sh"
needs perf strace
find_pkgmon
if [ -n "${LATENCY_FLOOR:-}" ]; then
  floor="$(realpath "$LATENCY_FLOOR")"
else
  cargo build -q --release -p pkgprof-benches --example latency_floor --manifest-path "$root/Cargo.toml"
  floor="$root/target/release/examples/latency_floor"
fi
work="$(mktemp -d /tmp/compare-latency.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/getpid" "$root/benches/workloads/getpid.c"
cc -O2 -o "$work/postmark" "$root/benches/workloads/postmark.c"
if [ -n "${POSTMARK_DIR:-}" ]; then
  files="$(mktemp -d "$POSTMARK_DIR/compare-latency.XXXXXX")"
elif [ -d /dev/shm ]; then
  files="$(mktemp -d /dev/shm/compare-latency.XXXXXX)"
else
  files="$work/files"
  mkdir -p "$files"
fi
trap 'rm -rf "$work" "$files"' EXIT
python3 - "$pkgmon" "$work" "$runs" "$getpid_n" "$postmark_n" "$floor" "${ONLY:-}" "$files" "${BASELINE:-}" <<'PY'
import os, re, shutil, statistics, subprocess, sys, time

pkgmon, work, runs, getpid_n, postmark_n, floor, only, files, baseline = sys.argv[1:10]
runs = int(runs)
out = os.path.join(work, "pk.data")
tools = [
    ("bare", []),
    ("pkgmon (sampling only)", [pkgmon, "-o", out, "--"]),
    ("pkgmon --latency (bpf)", [pkgmon, "-o", out, "--latency", "--latency-path=bpf", "--"]),
    ("pkgmon --latency (ring)", [pkgmon, "-o", out, "--latency", "--latency-path=ring", "--"]),
    ("pkgmon --blocking", [pkgmon, "-o", out, "--blocking", "--"]),
    ("pkgmon --blocking (ring)", [pkgmon, "-o", out, "--blocking", "--latency-path=ring", "--"]),
    ("perf trace -s", ["perf", "trace", "-s", "-o", os.path.join(work, "trace.txt"), "--"]),
    ("strace -c -w", ["strace", "-c", "-w", "-o", os.path.join(work, "strace.txt"), "--"]),
] + ([
    ("pkgmon --latency (bpf, baseline)", [baseline, "-o", out, "--latency", "--latency-path=bpf", "--"]),
    ("pkgmon --blocking (baseline)", [baseline, "-o", out, "--blocking", "--"]),
] if baseline else []) + [
    (f"floor: {label}", [floor, step, "--"])
    for step, label in [
        ("empty", "empty programs"),
        ("filter", "+ pid filter"),
        ("clock", "+ clock at enter, exit"),
        ("pair", "+ start entry, log2 array"),
        ("site", "+ user call site"),
        ("task", "start entry in task storage"),
    ]
]
tools = [t for t in tools if t[0] == "bare" or not only or re.search(only, t[0])]
workloads = [
    ("getpid", [os.path.join(work, "getpid"), getpid_n], int(getpid_n), 1),
    ("postmark", [os.path.join(work, "postmark"), files, postmark_n], int(postmark_n), 7),
]
own_re = re.compile(r"^(getpid|postmark): ([0-9.]+) (ns|us) per [a-z]+ \(cpu ([0-9.]+) ", re.M)
lost_re = re.compile(r"samples, ([0-9]+) lost")

failed = {}

def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])

fs = subprocess.run(["stat", "-f", "-c", "%T", files], capture_output=True, text=True).stdout.strip()
print(f"{os.cpu_count()} cpus; load average at start: {loadavg()}; {runs} runs each, medians; "
      f"postmark files on {fs}")
print()
print("| workload | tool | CPU per op | vs bare | added per system call | elapsed per op | whole run wall (s) | lost records | checksums |")
print("|---|---|---|---|---|---|---|---|---|")
for name, cmd, n, calls_per_op in workloads:
    per_op = {t: [] for t, _ in tools}
    elapsed = {t: [] for t, _ in tools}
    wall = {t: [] for t, _ in tools}
    lost = {t: 0 for t, _ in tools}
    mismatch = {t: 0 for t, _ in tools}
    unit = "ns"
    for _ in range(runs):
        for tool, prefix in tools:
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(out + ".old", ignore_errors=True)
            t0 = time.monotonic()
            p = subprocess.run(prefix + cmd, capture_output=True, text=True)
            wall[tool].append(time.monotonic() - t0)
            if p.returncode != 0:
                # perf trace has crashed on the Postmark-like loop (an assertion in its
                # build-id code): say so in the table rather than stop.
                failed.setdefault((name, tool), p.stderr.strip().splitlines()[:1])
                per_op[tool].append(float("nan"))
                elapsed[tool].append(float("nan"))
                continue
            m = own_re.search(p.stderr)
            if not m:
                sys.exit(f"{tool} {name}: no loop time in: {p.stderr}")
            unit = m.group(3)
            elapsed[tool].append(float(m.group(2)))
            per_op[tool].append(float(m.group(4)))
            if tool.startswith("pkgmon"):
                lm = lost_re.search(p.stderr)
                lost[tool] = max(lost[tool], int(lm.group(1)) if lm else 0)
                mismatch[tool] += p.stderr.count("records received but the kernel counted")
                mismatch[tool] += p.stderr.count("calls counted in the kernel, but")
                mismatch[tool] += p.stderr.count("checksum mismatch")
                left = re.search(r"([0-9]+) calls were left out", p.stderr)
                lost[tool] = max(lost[tool], int(left.group(1)) if left else 0)
            if tool.startswith("perf"):
                lost[tool] = max(lost[tool], sum(int(x) for x in re.findall(r"LOST ([0-9]+) events", p.stderr)))
    bare = statistics.median(per_op["bare"])
    for tool, _ in tools:
        ok = [v for v in per_op[tool] if v == v]
        if not ok:
            print(f"| {name} ({n}) | {tool} | failed: {' '.join(failed[(name, tool)])} | | | | | | |")
            continue
        med = statistics.median(ok)
        ns = (med - bare) * (1000 if unit == "us" else 1) / calls_per_op
        checks = "-"
        if tool.startswith("pkgmon --"):
            checks = "all match" if mismatch[tool] == 0 else f"{mismatch[tool]} mismatched"
        lost_s = "-" if tool in ("bare", "strace -c -w") or tool.startswith("floor") else str(lost[tool])
        print(f"| {name} ({n}) | {tool} | {med:.2f} {unit} | {100 * (med / bare - 1):+.1f}% "
              f"| {'-' if tool == 'bare' else f'{ns:.0f} ns'} "
              f"| {statistics.median([v for v in elapsed[tool] if v == v]):.2f} {unit} "
              f"| {statistics.median(wall[tool]):.2f} "
              f"| {lost_s} | {checks} |")
print()
print(f"load average at end: {loadavg()}")
PY
