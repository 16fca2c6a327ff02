#!/usr/bin/env bash
# Report time on a real recording of about 1,000,000 samples: `pkgprof -b --pid` on what pkgmon
# recorded against `perf report` on what `perf record -g` recorded of the same workload
# (benches/workloads/mix.c: THREADS threads alternating user work and read/write system calls
# for SECONDS), at the same frequency.
#
#   bash benches/compare-perf-report.sh [FREQ [THREADS [SECONDS]]]   (default 10000 2 50)
#
# 10 kHz on 2 threads for 50 s is about 1,000,000 samples per recording. Needs root (or
# perf_event_paranoid <= 1), perf and hyperfine. Run it on a quiet machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
freq="${1:-10000}"
threads="${2:-2}"
secs="${3:-50}"
runs="${RUNS:-3}"
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 1; }
command -v perf >/dev/null || { echo "needs perf" >&2; exit 1; }
cargo build -q --release -p pkgprof-cli --manifest-path "$root/Cargo.toml"
bin="$root/target/release"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$work"
cd "$work"
cc -O2 -g -pthread -o mix "$root/benches/workloads/mix.c"
echo "work dir: $work; $(nproc) cpus; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

rm -rf pk && "$bin/pkgmon" -o pk -F "$freq" -- ./mix "$threads" "$secs" 2>pkgmon.err
grep -E 'samples|wrote' pkgmon.err
pid=$(sed -n 's/^pkgmon: pid \([0-9]*\) .*/\1/p' pkgmon.err | head -1)
perf record -q -F "$freq" -g -o perf.data -- ./mix "$threads" "$secs" 2>perf.err
perf report -i perf.data --stats 2>/dev/null | grep -E 'SAMPLE|LOST' || true
ls -l perf.data pk | sed -n '1,12p'

hyperfine -N -w 1 -r "$runs" --export-markdown report.md \
  -n "pkgprof -b --pid" "$bin/pkgprof -b --pid $pid pk" \
  -n "pkgprof -b --inclusive=stacks --pid" "$bin/pkgprof -b --inclusive=stacks --pid $pid pk" \
  -n "perf report --stdio" "perf report -i perf.data --stdio" \
  -n "perf report --stdio --no-children -g none" "perf report -i perf.data --stdio --no-children -g none"
cat report.md
for cmd in "$bin/pkgprof -b --pid $pid pk" "perf report -i perf.data --stdio"; do
  /usr/bin/time -f "%M KiB peak RSS, %U s user, %S s sys: ${cmd##*/}" $cmd >/dev/null
done
