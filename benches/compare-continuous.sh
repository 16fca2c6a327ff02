#!/usr/bin/env bash
# What always-on profiling costs: the throughput a CPU benchmark loses while the whole machine
# is sampled, side by side with perf at the same rate.
#
#   bash benches/compare-continuous.sh                 (about 6 minutes)
#   SECONDS_PER_RUN=5 RUNS=2 bash benches/compare-continuous.sh     (shorter)
#   PKGMON=path/to/pkgmon bash benches/compare-continuous.sh       (a pkgmon already built)
#   RUNS=10 MEMORY_SECONDS=0 bash benches/compare-continuous.sh    (overhead only, 10 rounds)
#
# 1. Overhead. One copy of throughput.c per CPU keeps every CPU busy for SECONDS_PER_RUN
#    seconds and counts its units of work. Modes, interleaved RUNS times (so that a change in
#    the machine's other load hits every mode alike): bare; `pkgmon --continuous -a` at its
#    default 19 Hz per CPU (kernel and user stacks, 64 KiB stack copies, 10 s windows written
#    as it goes); `perf record -a -g -F 19` (frame-pointer callchains, the same rate); `perf
#    record -a -g -F 20` (the OpenTelemetry profiler's 20 Hz). A mode's loss in a round is
#    the loss of the summed throughput against that round's bare run; the table gives the
#    median over the rounds, the quartiles and the range, and how much the bare runs of
#    consecutive rounds differ (the noise floor). Beside it, the collector's own CPU time
#    (/proc/PID/stat utime + stime, read just before it is stopped) as a share of the
#    machine over its run: what it takes from the benchmark apart from the sampling work the
#    kernel does in the sampled tasks, and not moved by the machine's other load.
# 2. Memory. pkgmon's resident memory (VmRSS, from the index: read at the end of each window)
#    over a MEMORY_SECONDS run (default 120) with a short-lived process started every 10 ms
#    beside the load (MEMORY_SECONDS=0 skips it; benches/soak-continuous.sh is the long one).
#
# Needs root, perf and cc. On a shared machine the figures move with the load: the load
# average is printed beside them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-5}"
secs="${SECONDS_PER_RUN:-10}"
memory_seconds="${MEMORY_SECONDS:-120}"
. "$root/benches/lib.sh"
needs perf cc python3
find_pkgmon
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/throughput" "$root/benches/workloads/throughput.c"
cpus="$(nproc)"

# Runs the benchmark on every CPU; prints the summed units.
bench() {
  local pids=() total=0
  for i in $(seq "$cpus"); do
    "$work/throughput" "$secs" >"$work/out.$i" &
    pids+=($!)
  done
  wait "${pids[@]}"
  for f in "$work"/out.*; do total=$((total + $(cat "$f"))); done
  rm -f "$work"/out.*
  echo "$total"
}

# Runs the benchmark under mode $1; prints the summed units.
under() {
  local p units
  case "$1" in
    bare) echo "$(bench)/0"; return ;;
    pkgmon) rm -rf "$work/cont"
            "$pkgmon" --continuous -a -o "$work/cont" --window 10s 2>"$work/pkgmon.err" & p=$! ;;
    perf19) perf record -q -a -g -F 19 -o "$work/perf.data" 2>/dev/null & p=$! ;;
    perf20) perf record -q -a -g -F 20 -o "$work/perf.data" 2>/dev/null & p=$! ;;
  esac
  sleep 2
  units="$(bench)"
  # The collector's own CPU time (user + system ticks) over its run, read before it stops:
  # exact, where the throughput moves with the machine's other load.
  ticks="$(awk '{print $14 + $15}' "/proc/$p/stat")"
  kill -INT "$p"
  wait "$p" || true
  echo "$units/$ticks"
}

modes=(bare pkgmon perf19 perf20)
declare -A results
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$runs"); do
  for m in "${modes[@]}"; do
    results[$m]+="$(under "$m") "
  done
  echo "run $r done (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$cpus" "$secs" "$(getconf CLK_TCK)" "${results[bare]}" "${results[pkgmon]}" "${results[perf19]}" "${results[perf20]}" <<'EOF'
import statistics, sys
cpus, secs, hz = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = ["bare", "pkgmon --continuous -a (19 Hz)", "perf record -a -g -F 19", "perf record -a -g -F 20"]
pairs = [[tuple(int(v) for v in x.split("/")) for x in a.split()] for a in sys.argv[4:]]
runs = [[u for u, _ in p] for p in pairs]
ticks = [[t for _, t in p] for p in pairs]
bare = runs[0]
def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], q[2]
print(f"| mode ({cpus} CPUs busy, {secs} s runs, {len(bare)} rounds) | units per run (median) | "
      f"throughput lost vs the same round's bare run: median | quartiles | range | "
      f"collector's own CPU, share of the machine (median) |")
print("|---|---|---|---|---|---|")
# The collector runs 2 s before the benchmark and stops after it.
machine = (int(secs) + 2) * int(cpus)
for name, r, t in zip(names, runs, ticks):
    # Each round ran every mode once, back to back: a mode's loss is against that round's
    # bare run, so a change of the machine's other load between rounds cancels.
    lost = [100.0 * (1 - x / b) for x, b in zip(r, bare)]
    q1, q3 = quartiles(lost)
    own = statistics.median([100.0 * x / hz / machine for x in t])
    print(f"| {name} | {statistics.median(r):.0f} | {statistics.median(lost):+.2f}% | "
          f"{q1:+.2f}% .. {q3:+.2f}% | {min(lost):+.2f}% .. {max(lost):+.2f}% | {own:.2f}% |")
# The noise floor: how much bare runs of consecutive rounds differ.
steps = [100.0 * abs(b - a) / a for a, b in zip(bare, bare[1:])]
if steps:
    print(f"bare round to round: median change {statistics.median(steps):.2f}%, largest {max(steps):.2f}%")
EOF

if [ "$memory_seconds" -eq 0 ]; then exit 0; fi
# Memory over a longer run with process churn.
rm -rf "$work/mem"
"$pkgmon" --continuous -a -o "$work/mem" --window 10s 2>"$work/mem.err" & p=$!
( end=$((SECONDS + memory_seconds)); n=0
  while [ "$SECONDS" -lt "$end" ]; do /bin/true; n=$((n + 1)); sleep 0.01; done
  echo "$n" >"$work/churn" ) &
churn=$!
"$work/throughput" "$memory_seconds" >/dev/null &
wait "$churn"
kill -INT "$p"; wait "$p" || true
echo "memory: $(cat "$work/churn") short-lived processes in ${memory_seconds} s; pkgmon VmRSS (KiB) at each window's end:"
grep '^window' "$work/mem/index" | sed 's/.*rss-kib=//' | tr '\n' ' '; echo
echo "instances of true: $(grep -c ' true#' "$work/mem/index")"
