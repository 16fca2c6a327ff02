#!/usr/bin/env bash
# Side by side: pkgmon against `perf record -g` (frame-pointer callchains, perf's usual mode)
# and `perf record --call-graph dwarf` (stack copies, like pkgmon) on the same workloads.
#
#   bash benches/compare-perf.sh            (everything, about 15 minutes)
#   MEMORY_SECONDS=10 RUNS=3 bash benches/compare-perf.sh     (shorter)
#   PKGMON=path/to/pkgmon bash benches/compare-perf.sh       (a pkgmon already built)
#
# 1. CPU per sample at 1, 4 and 10 kHz. The workload is a fixed amount of CPU work (work.c) in
#    two sizes, about 1 and 4 s. A profiler's cost per sample is its extra CPU time (user +
#    system of the whole process tree, over the bare workload) on the large run minus that on
#    the small one, divided by the extra samples: the fixed cost of starting and stopping
#    (perf's is about half a second) cancels out. Each figure is the mean of RUNS runs
#    (hyperfine).
# 2. Peak memory (maximum RSS, /usr/bin/time -v) of a 10 s and a MEMORY_SECONDS run (default
#    60) at 4 kHz, of pkgmon and of `perf record -g`, on the same workload: memory that does
#    not grow with time shows the same peak for both lengths.
# 3. What the user stack copy costs pkgmon: a deep-stack workload (recursion.c of the truth
#    tests, 200 levels) at 4 kHz with --stack-size 0, 8192 and the default 65528.
#
# Needs root (or perf_event_paranoid <= 1), perf, hyperfine and cc. On a shared machine the
# figures move with the load: the load average is printed with them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-5}"
memory_seconds="${MEMORY_SECONDS:-60}"
for tool in hyperfine perf cc /usr/bin/time python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
if [ -n "${PKGMON:-}" ]; then
  pkgmon="$(realpath "$PKGMON")"
else
  cargo build -q --release -p pkgprof-cli --bin pkgmon --manifest-path "$root/Cargo.toml"
  pkgmon="$root/target/release/pkgmon"
fi
if [ -n "${WORK:-}" ]; then
  work_dir="$WORK"
else
  work_dir="$(mktemp -d)"
  trap 'rm -rf "$work_dir"' EXIT
fi
mkdir -p "$work_dir"
cd "$work_dir"
cc -O2 -o work "$root/crates/collect-perf/tests/workloads/work.c"
cc -O2 -fno-omit-frame-pointer -o recursion "$root/crates/pkgprof-cli/tests/truth/recursion.c"
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "work dir: $work_dir; $(nproc) cpus; $(uname -r); load average: $(load)"

# Samples a profiler took: pkgmon prints them; perf counts them in its data file.
samples() {
  case "$1" in
    pkgmon) "$pkgmon" -o pk.out -F "$2" ${3:+--stack-size "$3"} -- ${@:4} 2>&1 >/dev/null |
              sed -n 's/.* \([0-9]*\) samples, .*/\1/p'; rm -rf pk.out ;;
    perf*) perf record -q -F "$2" $3 -o perf.data -- ${@:4} >/dev/null 2>&1
           perf report -i perf.data --stats 2>/dev/null |
             awk '/SAMPLE events:/ {for (i = 1; i < NF; i++) if ($i == "events:") {print $(i + 1); exit}}' ;;
  esac
}

# hyperfine's mean user + system seconds of each command, by name, from its JSON.
cpu_of() {
  python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["command"], r["user"] + r["system"])
PY
}

echo
echo "## CPU per sample (marginal: large run minus small run), load average before: $(load)"
echo
printf '| Hz | tool | extra CPU, small run (s) | extra CPU, large run (s) | extra samples | CPU per sample (us) | vs perf -g |\n'
printf '|---|---|---|---|---|---|---|\n'
small=700; large=2800
for hz in 1000 4000 10000; do
  declare -A cpu
  for size in $small $large; do
    hyperfine -N -w 1 -r "$runs" --export-json "cpu-$hz-$size.json" \
      -n bare "./work $size" \
      -n pkgmon "$pkgmon -o pk.run -F $hz -- ./work $size" \
      -n "perf -g" "perf record -q -F $hz -g -o perf.run -- ./work $size" \
      -n "perf dwarf" "perf record -q -F $hz --call-graph dwarf -o perf.run -- ./work $size" \
      --prepare 'rm -rf pk.run perf.run' >/dev/null 2>&1
    while read -r name seconds; do cpu["$name $size"]=$seconds; done < <(cpu_of "cpu-$hz-$size.json" | sed 's/^perf /perf_/')
  done
  rows=()
  for tool in pkgmon "perf -g" "perf dwarf"; do
    key=${tool/perf /perf_}
    case "$tool" in
      pkgmon) s_small=$(samples pkgmon $hz "" ./work $small); s_large=$(samples pkgmon $hz "" ./work $large) ;;
      "perf -g") s_small=$(samples perf $hz -g ./work $small); s_large=$(samples perf $hz -g ./work $large) ;;
      "perf dwarf") s_small=$(samples perf $hz "--call-graph dwarf" ./work $small); s_large=$(samples perf $hz "--call-graph dwarf" ./work $large) ;;
    esac
    rows+=("$tool|${cpu[bare $small]}|${cpu[bare $large]}|${cpu[$key $small]}|${cpu[$key $large]}|$s_small|$s_large")
  done
  python3 - "$hz" "${rows[@]}" <<'PY'
import sys
hz, rows = sys.argv[1], [r.split("|") for r in sys.argv[2:]]
per = {}
for tool, *v in rows:
    bs, bl, ts, tl, ss, sl = map(float, v)
    es, el = ts - bs, tl - bl
    per[tool] = ((el - es) / max(sl - ss, 1) * 1e6, es, el, int(sl - ss))
for tool, (p, es, el, n) in per.items():
    base = per["perf -g"][0]
    ratio = f"{p / base:.2f}x" if base > 0 else "-"
    print(f"| {hz} | {tool} | {es:.3f} | {el:.3f} | {n} | {p:.1f} | {ratio} |")
PY
  unset cpu
done
rm -rf pk.run perf.run perf.data

echo
echo "## Peak memory at 4 kHz: 10 s and ${memory_seconds} s of CPU work, load average before: $(load)"
echo
peak() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident/ {print $2}'; }
printf '| CPU work (s) | pkgmon peak RSS (MiB) | perf record -g peak RSS (MiB) | pkgmon / perf |\n|---|---|---|---|\n'
for seconds in 10 "$memory_seconds"; do
  pk_peak=$(peak "$pkgmon" -o pk.mem -F 4000 -- ./work $((seconds * 700)))
  perf_peak=$(peak perf record -q -F 4000 -g -o perf.mem -- ./work $((seconds * 700)))
  rm -rf pk.mem perf.mem
  python3 -c "import sys; s,a,b=sys.argv[1],float(sys.argv[2])/1024,float(sys.argv[3])/1024; print(f'| {s} | {a:.1f} | {b:.1f} | {a/b:.2f} |')" "$seconds" "$pk_peak" "$perf_peak"
done

echo
echo "## The user stack copy: recursion (200 levels) at 4 kHz, load average before: $(load)"
echo
hyperfine -N -w 1 -r "$runs" --export-json stack.json \
  -n bare "./recursion 3" \
  -n "stack 0" "$pkgmon -o pk.st -F 4000 --stack-size 0 -- ./recursion 3" \
  -n "stack 8192" "$pkgmon -o pk.st -F 4000 --stack-size 8192 -- ./recursion 3" \
  -n "stack 65528" "$pkgmon -o pk.st -F 4000 --stack-size 65528 -- ./recursion 3" \
  --prepare 'rm -rf pk.st' >/dev/null 2>&1
printf '| pkgmon | extra CPU (s) | samples | CPU per sample (us) | truncated stacks |\n|---|---|---|---|---|\n'
bare=$(cpu_of stack.json | awk '$1 == "bare" {print $2}')
for size in 0 8192 65528; do
  out=$("$pkgmon" -o pk.st -F 4000 --stack-size $size -- ./recursion 3 2>&1 >/dev/null); rm -rf pk.st
  n=$(echo "$out" | sed -n 's/.* \([0-9]*\) samples, .*/\1/p')
  t=$(echo "$out" | sed -n 's/.* \([0-9]*\) truncated stacks.*/\1/p')
  c=$(cpu_of stack.json | awk -v s="$size" '$1 == "stack" && $2 == s {print $3}')
  python3 -c "import sys; b,c,n=map(float,sys.argv[1:4]); print(f'| --stack-size {sys.argv[4]} | {c-b:.3f} | {int(n)} | {(c-b)/n*1e6:.1f} | {sys.argv[5]} |')" "$bare" "$c" "$n" "$size" "$t"
done
echo
echo "load average after: $(load)"
