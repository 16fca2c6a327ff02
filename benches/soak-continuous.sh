#!/usr/bin/env bash
# The continuous collector's memory over a long run with processes starting and dying all the
# time, and whether its index accounts for every one of them.
#
#   bash benches/soak-continuous.sh                          (1 hour, ~100,000 processes)
#   SECONDS_TOTAL=300 WINDOW=30 bash benches/soak-continuous.sh      (shorter)
#   PKGMON=path/to/pkgmon bash benches/soak-continuous.sh          (a pkgmon already built)
#   BASELINE=path/to/old/pkgmon bash benches/soak-continuous.sh    (an older pkgmon beside it)
#
# `pkgmon --continuous -a` samples the whole machine (default 19 Hz, WINDOW-second windows)
# while benches/workloads/churn.c starts RATE (default 28) short-lived processes a second for
# SECONDS_TOTAL seconds (default 3600): in turn /bin/true, /bin/sh -c 'exit 0', a program
# that burns 3 ms, and a fork that burns 2 ms without exec. Every WINDOW seconds the script
# prints pkgmon's VmRSS, VmHWM, RssAnon and RssFile (/proc/<pid>/status) and the load. At the
# end (SIGINT: the last window is finished) every child (pid, fork and exit time, logged by
# churn before reaping it) must appear in the index as an instance line of its pid whose life
# overlaps the child's, with one application instance per program image.
#
# The memory bound (README, `pkgmon --help`), checked at the end: VmHWM at most MAX_HWM_MIB
# (default 256), and no growth: the lowest RssAnon of the last 10 status lines at most
# MAX_GROWTH_MIB (default 16) above the lowest of the first 10 after SETTLE seconds (default
# 300). The lowest, because a window's peak follows what the machine ran in it (a build of
# thousands of processes a minute) while what the collector keeps shows between the peaks.
# The slope of RssAnon after SETTLE (least squares, MiB a minute) is printed beside.
#
# With BASELINE, a second `pkgmon --continuous -a` (another build) samples the same machine at
# the same time, and its memory is printed beside: a before/after comparison on one workload.
#
# Needs root and cc. Output goes to OUT (default: a temporary directory, removed at the end).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${SECONDS_TOTAL:-3600}"
settle="${SETTLE:-300}"
max_hwm_mib="${MAX_HWM_MIB:-256}"
max_growth_mib="${MAX_GROWTH_MIB:-16}"
rate="${RATE:-28}"
window="${WINDOW:-60}"
. "$root/benches/lib.sh"
needs cc python3
find_pkgmon
scratch_dir "${OUT:-}"
cc -O2 -o "$work/churn" "$root/benches/workloads/churn.c"
rm -rf "$work/cont"

"$pkgmon" --continuous -a -o "$work/cont" --window "${window}s" 2>"$work/pkgmon.err" &
mon=$!
base=""
if [ -n "${BASELINE:-}" ]; then
  "$(realpath "$BASELINE")" --continuous -a -o "$work/base" --window "${window}s" 2>"$work/base.err" &
  base=$!
fi
sleep 2
"$work/churn" "$rate" "$seconds" "$work/children" &
churn=$!
status() {
  awk '/^(VmRSS|VmHWM|RssAnon|RssFile):/ { printf "%s %s  ", $1, $2 }' "/proc/$mon/status"
  if [ -n "$base" ]; then
    printf '| baseline: '
    awk '/^(VmRSS|VmHWM|RssAnon|RssFile):/ { printf "%s %s  ", $1, $2 }' "/proc/$base/status"
  fi
}
echo "pkgmon $pkgmon, pid $mon; $rate processes/s for $seconds s, ${window} s windows"
echo "start: $(status) load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$SECONDS
: >"$work/memory"
while kill -0 "$churn" 2>/dev/null; do
  sleep "$window" & wait $! || true
  kill -0 "$mon" 2>/dev/null || { echo "pkgmon died" >&2; cat "$work/pkgmon.err" >&2; exit 1; }
  echo "t=$((SECONDS - t0))s children=$(wc -l <"$work/children") $(status) load $(cut -d' ' -f1-3 /proc/loadavg)"
  awk -v t=$((SECONDS - t0)) '/^(RssAnon|VmHWM):/ { v[$1] = $2 }
    END { print t, v["RssAnon:"], v["VmHWM:"] }' "/proc/$mon/status" >>"$work/memory"
done
wait "$churn"
sleep 1
kill -INT "$mon"
wait "$mon" || { echo "pkgmon failed:" >&2; cat "$work/pkgmon.err" >&2; exit 1; }
if [ -n "$base" ]; then
  kill -INT "$base"
  wait "$base" || true
fi

failed=0
python3 - "$work/children" "$work/cont/index" <<'EOF' || failed=1
import collections, os, sys
children, total = [], None
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "total":
        total = int(f[1])
    else:
        children.append(tuple(int(x) for x in f))
windows, groups = [], collections.defaultdict(lambda: [None, None, 0])
def lines(index):
    """The index's lines, each window's instances (version 2: in DIR/wNNNNNNNN/instances)
    after its window line."""
    for line in open(index):
        yield line
        f = line.split()
        if f[0] == "window" and "instances=" in line:
            yield from open(os.path.join(os.path.dirname(index), f[2], "instances"))
for line in lines(sys.argv[2]):
    f = line.split()
    if f[0] == "window":
        kv = dict(x.split("=", 1) for x in f[5:])
        windows.append((int(f[1]), int(kv["samples"]), int(kv["lost"]), int(kv["rss-kib"])))
    elif f[0] == "instance":
        kv = dict(x.split("=", 1) for x in f[3:])
        # One application instance over the windows it spans: its earliest begin, latest end.
        g = groups[(int(kv["pid"]), f[2])]
        if "begin" in kv:
            g[0] = min(g[0] or 1 << 64, int(kv["begin"]))
        if "end" in kv:
            g[1] = max(g[1] or 0, int(kv["end"]))
        g[2] += int(kv["samples"])
by_pid = collections.defaultdict(list)
for (pid, appid), (begin, end, samples) in groups.items():
    by_pid[pid].append([appid, begin, end, samples])
# An instance without an end (its last window saw it running, or an exec replaced it in a
# window where it had no line) ended at the latest when its pid began another one.
for lines in by_pid.values():
    timed = sorted((l for l in lines if l[1] is not None), key=lambda l: l[1])
    for a, b in zip(timed, timed[1:]):
        if a[2] is None:
            a[2] = b[1]
# A child is found when an application instance of its pid overlaps its life (100 ms of
# slack for the clocks; an instance with no end ran on past the index). It is counted once
# when each of its program images is one application instance. Instances without any time
# (a file set whose process was never seen starting or named, `[unknown]`) are counted only
# for a child nothing else matched.
slack = 100_000_000
missing, double, sampled = [], [], 0
for pid, ticks, fork_ns, exit_ns in children:
    cands = by_pid.get(pid, [])
    lines = [l for l in cands if l[1] is not None
             and l[1] <= exit_ns + slack and (l[2] is None or l[2] >= fork_ns - slack)]
    if not lines:
        lines = [l for l in cands if l[1] is None and l[2] is None]
    if not lines:
        missing.append(pid)
        continue
    appids = {l[0] for l in lines}
    if len(appids) != len({a.split("#")[0] for a in appids}):
        double.append((pid, sorted(appids)))
    sampled += any(l[3] > 0 for l in lines)
rss = [w[3] for w in windows]
print(f"children: {total} started, {len(children)} logged, {len(children) - len(missing)} in the index, "
      f"{len(missing)} missing, {len(double)} counted twice, {sampled} with samples")
print(f"windows: {len(windows)}, samples {sum(w[1] for w in windows)}, lost {sum(w[2] for w in windows)}")
if rss:
    print(f"rss-kib at window ends: first {rss[0]}, max {max(rss)}, last {rss[-1]}, "
          f"median of the last half {sorted(rss[len(rss)//2:])[len(rss[len(rss)//2:])//2]}")
if missing:
    print("missing (first 10):", missing[:10])
if double:
    print("counted twice (first 10):", double[:10])
sys.exit(1 if missing or double or total != len(children) else 0)
EOF

# The memory bound README and `pkgmon --help` document.
python3 - "$work/memory" "$settle" "$max_hwm_mib" "$max_growth_mib" <<'EOF' || failed=1
import sys
rows = [tuple(int(x) for x in l.split()) for l in open(sys.argv[1]) if len(l.split()) == 3]
settle, max_hwm, max_growth = (int(x) for x in sys.argv[2:5])
hwm = max((r[2] for r in rows), default=0) / 1024
after = [(t, a / 1024) for t, a, _ in rows if t >= settle]
ok = hwm <= max_hwm
print(f"memory: VmHWM {hwm:.1f} MiB (bound {max_hwm})", end="")
if len(after) >= 20:
    early, late = min(a for _, a in after[:10]), min(a for _, a in after[-10:])
    n = len(after)
    mt, ma = sum(t for t, _ in after) / n, sum(a for _, a in after) / n
    slope = (sum((t - mt) * (a - ma) for t, a in after)
             / sum((t - mt) ** 2 for t, _ in after) * 60)
    ok = ok and late - early <= max_growth
    print(f"; RssAnon after {settle} s: lowest of the first 10 status lines {early:.1f} MiB, "
          f"of the last 10 {late:.1f} (growth bound +{max_growth}); slope {slope:+.3f} MiB/min; "
          f"range {min(a for _, a in after):.1f}..{max(a for _, a in after):.1f} MiB")
else:
    print(f"; too short to check growth ({len(after)} status lines after {settle} s, 20 needed)")
sys.exit(0 if ok else 1)
EOF
exit "$failed"
