#!/usr/bin/env bash
# How fast pkgprof reports over a continuous directory, and what reading its windows in
# parallel (rayon) brings: each report on all CPUs against the same report on one
# (RAYON_NUM_THREADS=1), side by side with farm-bench (runs alternated, the ratio taken pair
# by pair).
#
#   bash benches/continuous-reports.sh                    (records ~2 minutes, then times)
#   DIR=/var/lib/pkgmon bash benches/continuous-reports.sh   (an existing directory)
#   SECONDS_TOTAL=300 WINDOW=5 bash benches/continuous-reports.sh
#   PKGMON=path/to/pkgmon bash benches/continuous-reports.sh (pkgprof beside it)
#
# Without DIR, `pkgmon --continuous -a` samples the whole machine at its defaults in
# WINDOW-second windows (default 2) for SECONDS_TOTAL seconds (default 120) while
# benches/workloads/churn.c starts 28 short-lived processes a second, so the directory has
# many windows and thousands of instances. The reports: `--apps`; the seamless listing of
# the whole machine (`-b --system`) and of the application with the most samples (`-b
# --app`); the per-instruction view of the machine (`-l --system`); a pprof export of the
# machine. Needs root (without DIR) and cc. Scratch goes to OUT (default: a temporary
# directory, removed at the end).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${SECONDS_TOTAL:-120}"
window="${WINDOW:-2}"
. "$root/benches/lib.sh"
needs cc farm-bench
find_pkgmon
scratch_dir "${OUT:-}"
dir="${DIR:-}"
if [ -z "$dir" ]; then
  dir="$work/cont"
  rm -rf "$dir"
  cc -O2 -o "$work/churn" "$root/benches/workloads/churn.c"
  "$pkgmon" --continuous -a -o "$dir" --window "${window}s" 2>"$work/pkgmon.err" &
  mon=$!
  sleep 2
  "$work/churn" 28 "$seconds" "$work/children"
  kill -INT "$mon"
  wait "$mon" || { echo "pkgmon failed:" >&2; cat "$work/pkgmon.err" >&2; exit 1; }
fi
"$pkgprof" --apps "$dir" >"$work/apps"
head -2 "$work/apps"
instances=$(grep -c '#[0-9]* (' "$work/apps" || true)
app=$(awk 'NR > 4 && / instances?\)$/ { print $4; exit }' "$work/apps")
echo "$(grep -c '^window ' "$dir/index") windows, $instances instances; --app $app"
echo "pkgprof $pkgprof; load $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
report() {
  local name="$1"
  shift
  echo
  echo "== $name: all CPUs (A) against RAYON_NUM_THREADS=1 (B)"
  farm-bench -n 5 --timeout 600 --vs "env RAYON_NUM_THREADS=1 $pkgprof $*" -- "$pkgprof" "$@"
}
report "--apps" --apps "$dir"
report "-b --system" -b --system "$dir"
report "-b --app $app" -b --app "$app" "$dir"
report "-l --system" -l --system "$dir"
report "--export=pprof --system" --export=pprof --system --output="$work/system.pb.gz" "$dir"
echo
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
