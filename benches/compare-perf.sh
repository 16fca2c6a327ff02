#!/usr/bin/env bash
# Side by side: pkgmon against `perf record -g` at the same frequency, on fixed amounts of work
# (so that any sampling cost shows as longer runs), plus the bare workload.
#
#   bash benches/compare-perf.sh [FREQ]        (default 1000 Hz)
#
# Workloads: work (CPU loop, benches/../crates/collect-perf/tests/workloads/work.c, iterations
# chosen for about 1 s) and rw (read/write syscalls, benches/workloads/rw.c). For each it runs
# hyperfine (wall time, and the user+system CPU time of the whole process tree), then one more
# run of each profiler to read its lost-sample count. Needs root (or perf_event_paranoid <= 1),
# perf and hyperfine. On a shared machine, compare the CPU-time columns, not wall time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
freq="${1:-1000}"
runs="${RUNS:-5}"
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 1; }
command -v perf >/dev/null || { echo "needs perf" >&2; exit 1; }
cargo build -q --release -p pkgprof-cli --bin pkgmon --manifest-path "$root/Cargo.toml"
pkgmon="$root/target/release/pkgmon"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$work"
cd "$work"
cc -O2 -o work "$root/crates/collect-perf/tests/workloads/work.c"
cc -O2 -o rw "$root/benches/workloads/rw.c"
echo "work dir: $work; $(nproc) cpus; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| workload | tool | wall (s) | wall vs bare | CPU user+sys (s) | CPU vs bare | lost samples |\n'
printf '|---|---|---|---|---|---|---|\n'
for spec in "work 700" "rw 500000"; do
  set -- $spec
  cmd="./$1 $2"
  hyperfine -N -w 1 -r "$runs" --export-json "$1.json" \
    -n bare "$cmd" \
    -n pkgmon "$pkgmon -o pkgmon.out -F $freq -- $cmd" \
    -n "perf record -g" "perf record -q -F $freq -g -o perf.data -- $cmd" >/dev/null 2>&1
  rm -rf pkgmon.out
  pk_lost=$("$pkgmon" -o pkgmon.out -F "$freq" -- $cmd 2>&1 | sed -n 's/.* samples, \([0-9]*\) lost,.*/\1/p')
  perf record -F "$freq" -g -o perf.data -- $cmd >/dev/null 2>perf.err || true
  perf_lost=$(perf report -i perf.data --stats 2>/dev/null | awk '/LOST/ {s += $NF} END {print s + 0}')
  python3 - "$1.json" "$1" "$pk_lost" "$perf_lost" <<'PY'
import json, sys
data, name, pk_lost, perf_lost = sys.argv[1:]
res = {r["command"]: r for r in json.load(open(data))["results"]}
bare = res["bare"]
bw, bc = bare["mean"], bare["user"] + bare["system"]
for tool, lost in (("bare", "-"), ("pkgmon", pk_lost), ("perf record -g", perf_lost)):
    r = res[tool]
    cpu = r["user"] + r["system"]
    print(f"| {name} | {tool} | {r['mean']:.3f} ± {r['stddev']:.3f} | {100 * (r['mean'] / bw - 1):+.1f}% "
          f"| {cpu:.3f} | {100 * (cpu / bc - 1):+.1f}% | {lost} |")
PY
done
