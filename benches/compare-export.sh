#!/usr/bin/env bash
# Export time on real recordings of about a million samples: `pkgprof --export=folded|pprof
# --pid` on what pkgmon recorded and on the perf.data `perf record -g` recorded of the same
# workload (benches/workloads/mix.c: THREADS threads alternating user work and read/write system
# calls for SECONDS, at the same frequency), against `perf script | inferno-collapse-perf`
# (folded stacks) on that same perf.data. On the perf.data pkgprof's figure includes the import
# (reading every record, unwinding, aggregating, writing a temporary measurement).
#
#   bash benches/compare-export.sh [FREQ [THREADS [SECONDS]]]   (default 10000 2 50)
#
# pkgprof's figure is the whole command: reading the measurement, symbolizing user and kernel
# addresses, building the model and writing the export. Needs root (or perf_event_paranoid <= 1),
# perf, hyperfine and inferno-collapse-perf (`cargo install inferno`; INFERNO=DIR for its bin
# directory). Run it on a quiet machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
freq="${1:-10000}"
threads="${2:-2}"
secs="${3:-50}"
runs="${RUNS:-5}"
export PATH="${INFERNO:+$INFERNO:}$PATH"
for tool in hyperfine perf inferno-collapse-perf; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
cargo build -q --release -p pkgprof-cli --manifest-path "$root/Cargo.toml"
bin="$root/target/release"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$work"
cd "$work"
cc -O2 -g -pthread -o mix "$root/benches/workloads/mix.c"
echo "work dir: $work; $(nproc) cpus; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

rm -rf pk && "$bin/pkgmon" -o pk -F "$freq" -- ./mix "$threads" "$secs" 2>pkgmon.err
grep -E 'samples' pkgmon.err
pid=$(sed -n 's/^pkgmon: pid \([0-9]*\) .*/\1/p' pkgmon.err | head -1)
perf record -q -F "$freq" -g -o perf.data -- ./mix "$threads" "$secs" 2>perf.err
perf report -i perf.data --stats 2>/dev/null | grep -E 'SAMPLE|LOST' || true

# The same folded stacks from both, to see they hold the same samples.
"$bin/pkgprof" --export=folded --pid "$pid" pk >pk.folded
perf script -i perf.data 2>/dev/null | inferno-collapse-perf >perf.folded
awk '{n += $NF} END {print "pkgprof folded: " NR " stacks, " n " samples"}' pk.folded
awk '{n += $NF} END {print "perf folded:    " NR " stacks, " n " samples"}' perf.folded

perf_pid=$(perf script -i perf.data -F pid 2>/dev/null | head -1 | tr -d ' ')
"$bin/pkgprof" --export=folded --pid "$perf_pid" perf.data >pk-perf.folded
awk '{n += $NF} END {print "pkgprof folded of perf.data: " NR " stacks, " n " samples"}' pk-perf.folded

hyperfine -w 1 -r "$runs" --export-markdown export.md \
  -n "pkgprof --export=folded --pid (pkgmon's)" "$bin/pkgprof --export=folded --pid $pid pk" \
  -n "pkgprof --export=pprof --pid (pkgmon's)" "$bin/pkgprof --export=pprof --pid $pid pk" \
  -n "pkgprof --export=folded --pid perf.data" "$bin/pkgprof --export=folded --pid $perf_pid perf.data" \
  -n "pkgprof --export=pprof --pid perf.data" "$bin/pkgprof --export=pprof --pid $perf_pid perf.data" \
  -n "perf script | inferno-collapse-perf" "perf script -i perf.data 2>/dev/null | inferno-collapse-perf"
cat export.md
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
