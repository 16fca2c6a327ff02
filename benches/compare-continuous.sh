#!/usr/bin/env bash
# What always-on profiling costs: how much longer a fixed amount of CPU work takes while the
# whole machine is sampled, side by side with perf at the same rate.
#
#   bash benches/compare-continuous.sh                         (about 25 minutes)
#   PAIRS=20 bash benches/compare-continuous.sh                (shorter, a wider interval)
#   PKGMON=path/to/pkgmon bash benches/compare-continuous.sh   (a pkgmon already built)
#   MEMORY_SECONDS=0 bash benches/compare-continuous.sh        (overhead only)
#
# 1. Overhead, by paired runs. Each collector is started once and left running:
#    `pkgmon --continuous -a` at its default 19 Hz per CPU (kernel and user stacks, 64 KiB
#    stack copies, 60 s windows written as it goes), paused and resumed with SIGUSR1/SIGUSR2
#    (its own on/off switch: the events go off); `perf record -a -g -F 19` and `-F 20` (the
#    OpenTelemetry profiler's 20 Hz), disabled and enabled through `--control`. Then PAIRS
#    times (default 100): one run with the collector off and one with it on, in a random
#    order, each a fixed amount of work (`throughput -n UNITS`, about WORK_SECONDS of CPU,
#    default 0.5) on every CPU at once, so the CPUs are saturated. Per pair: how much longer
#    the work took with sampling on, (on − off) / off, in wall time (the slowest CPU's copy) and
#    in the work's own CPU time (what the kernel's sampling adds in the sampled task; the
#    machine's other load moves it far less than the wall time: caches and the like only).
#    A first row with no collector at all (both runs of each pair alike: an A/A control)
#    shows what the method reads when there is nothing to find, the resolution of the
#    other rows. The table gives the median of the pairs'
#    differences with its 95% confidence interval (distribution-free: order statistics of the
#    binomial), and the collector's own CPU time while on and while off
#    (/proc/PID/task/*/schedstat, ns) as a share of the machine: on a saturated machine what
#    it runs is taken from the work, so "work CPU + collector share" is the overhead as a
#    throughput loss, with an interval that the machine's other load widens far less.
# 2. Memory. pkgmon's resident memory (VmRSS, from the index: read at the end of each window)
#    over a MEMORY_SECONDS run (default 120) with a short-lived process started every 10 ms
#    beside the load (MEMORY_SECONDS=0 skips it; benches/soak-continuous.sh is the long one).
#
# Needs root, perf, cc and python3. On a shared machine the wall-time interval widens with the
# other load: the load average is printed beside the figures.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
memory_seconds="${MEMORY_SECONDS:-120}"
. "$root/benches/lib.sh"
needs perf cc python3
find_pkgmon
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/throughput" "$root/benches/workloads/throughput.c"

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$pkgmon" "${PAIRS:-100}" "${WORK_SECONDS:-0.5}" <<'EOF'
import os, random, signal, statistics, subprocess, sys, time
from math import comb
work, pkgmon, pairs, work_seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
cpus = os.cpu_count()
bench = os.path.join(work, "throughput")

def run_work(units):
    """Every CPU does `units` at once; the slowest copy's wall ns and the copies' CPU ns."""
    ps = [subprocess.Popen([bench, "-n", str(units)], stdout=subprocess.PIPE) for _ in range(cpus)]
    out = [tuple(map(int, p.communicate()[0].split())) for p in ps]
    return max(w for w, _ in out), sum(c for _, c in out)

def cpu_ns(pid):
    """A process's CPU time in ns, all its threads (schedstat's first field)."""
    total = 0
    if pid is None:
        return 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        except OSError:
            pass
    return total

class Nothing:
    """No collector: both runs of a pair alike (A/A), what the method reads when there is no
    effect at all; its interval is the resolution of the others."""
    name = "nothing (A/A control)"
    pid = None
    def set(self, on):
        pass
    def stop(self):
        pass

class Pkgmon:
    name = "pkgmon --continuous -a (19 Hz)"
    def __init__(self):
        self.err = open(os.path.join(work, "pkgmon.err"), "w+")
        self.p = subprocess.Popen([pkgmon, "--continuous", "-a", "-o", os.path.join(work, "cont"),
                                   "--window", "60s"], stderr=self.err)
        # SIGUSR1 before its handler is installed would end it: wait for its banner.
        for _ in range(300):
            self.err.seek(0)
            if "profiling the whole machine" in self.err.read():
                break
            time.sleep(0.1)
        else:
            sys.exit("pkgmon did not start")
        self.pid = self.p.pid
        self.set(False)
    def set(self, on):
        self.p.send_signal(signal.SIGUSR2 if on else signal.SIGUSR1)
    def stop(self):
        self.p.send_signal(signal.SIGINT)
        self.p.wait()

class Perf:
    def __init__(self, hz):
        self.name = f"perf record -a -g -F {hz}"
        ctl, ack = os.path.join(work, "ctl"), os.path.join(work, "ack")
        for f in (ctl, ack):
            if os.path.exists(f):
                os.unlink(f)
            os.mkfifo(f)
        self.p = subprocess.Popen(["perf", "record", "-q", "-a", "-g", "-F", str(hz), "-D", "-1",
                                   "--control", f"fifo:{ctl},{ack}",
                                   "-o", os.path.join(work, "perf.data")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = self.p.pid
        self.ctl = open(ctl, "w")
        self.ack = open(ack, "r")
    def set(self, on):
        self.ctl.write("enable\n" if on else "disable\n")
        self.ctl.flush()
        self.ack.readline()
    def stop(self):
        self.p.send_signal(signal.SIGINT)
        self.p.wait()
        os.unlink(os.path.join(work, "perf.data"))

def interval(xs):
    """The median of xs and its 95% confidence interval from order statistics."""
    xs = sorted(xs)
    n = len(xs)
    # The largest k with P(Binomial(n, 1/2) < k) <= 2.5%: [x_k, x_(n-k+1)] covers the median.
    k, below = 0, 0.0
    while below + comb(n, k) / 2**n <= 0.025:
        below += comb(n, k) / 2**n
        k += 1
    return statistics.median(xs), xs[max(k - 1, 0)], xs[min(n - k, n - 1)]

# About WORK_SECONDS of CPU per copy, measured with nothing sampling.
_, c = run_work(20000)
units = max(1000, int(20000 * work_seconds * 1e9 / (c / cpus)))
print(f"{cpus} CPUs, {units} units per copy (~{work_seconds} s of CPU), {pairs} pairs per collector")
rows = []
for make in (Nothing, Pkgmon, lambda: Perf(19), lambda: Perf(20)):
    c = make()
    time.sleep(2)
    diffs_wall, diffs_cpu = [], []
    own = {True: [0, 0], False: [0, 0]}  # collector ns, machine ns
    for i in range(pairs):
        got = {}
        for on in random.sample([False, True], 2):
            c.set(on)
            time.sleep(0.2)
            t0, c0 = time.monotonic_ns(), cpu_ns(c.pid)
            got[on] = run_work(units)
            own[on][0] += cpu_ns(c.pid) - c0
            own[on][1] += (time.monotonic_ns() - t0) * cpus
        diffs_wall.append(100.0 * (got[True][0] / got[False][0] - 1))
        diffs_cpu.append(100.0 * (got[True][1] / got[False][1] - 1))
    c.set(False)
    c.stop()
    rows.append((c.name, interval(diffs_wall), interval(diffs_cpu),
                 100.0 * own[True][0] / own[True][1], 100.0 * own[False][0] / own[False][1]))
    print(f"{c.name} done (load {open('/proc/loadavg').read().split()[0]})", file=sys.stderr)
print(f"| collector ({pairs} pairs) | wall time of the work: median (95% CI) | the work's own CPU "
      f"time: median (95% CI) | collector's CPU, share of the machine: on / off | "
      f"work CPU + collector (on) |")
print("|---|---|---|---|---|")
f = lambda m: f"{m[0]:+.2f}% ({m[1]:+.2f} .. {m[2]:+.2f})"
for name, wall, cpu, on, off in rows:
    print(f"| {name} | {f(wall)} | {f(cpu)} | {on:.3f}% / {off:.3f}% | "
          f"{cpu[0] + on:+.2f}% ({cpu[1] + on:+.2f} .. {cpu[2] + on:+.2f}) |")
EOF
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

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
grep '^window' "$work/mem/index" | sed 's/.*rss-kib=\([0-9]*\).*/\1/' | tr '\n' ' '; echo
echo "instances of true: $(cat "$work"/mem/w*/instances | grep -c ' true#')"
