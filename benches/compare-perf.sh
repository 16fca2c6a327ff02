#!/usr/bin/env bash
# Side by side: pkgmon against `perf record -g` (frame-pointer callchains, perf's usual mode)
# and `perf record --call-graph dwarf` (stack copies, like pkgmon) on the same workloads.
#
#   bash benches/compare-perf.sh            (everything, about 25 minutes)
#   MEMORY_SECONDS=10 RUNS=3 bash benches/compare-perf.sh     (shorter)
#   PKGMON=path/to/pkgmon bash benches/compare-perf.sh       (a pkgmon already built)
#   PARTS="cost" bash benches/compare-perf.sh                 (some of the parts below only)
#
# 1. (cost) CPU per sample at 1, 4 and 10 kHz, in two parts, each read where it is spent rather
#    than as a difference of whole runs (whose start-up and exit cost, half a second for perf,
#    varies more than a few thousand samples cost):
#    - in the workload: the sampling itself (the kernel's interrupt, callchain walk, stack copy,
#      pkgmon's BPF copier) runs in the sampled task's context, so it is the task's own CPU time
#      (work.c reports it) over the bare run's, per sample;
#    - in the profiler while recording: the runtime of the profiler's own threads
#      (/proc/PID/task/*/schedstat, polled every 10 ms) from the end of one of its bursts of
#      work to the end of another, 1 s into the run and before 0.85 of the bare run's length,
#      per sample of that stretch (reading the rings; pkgmon also unwinds and aggregates, perf
#      record writes raw records).
#    Their sum is the cost per sample; the whole run's extra CPU (the process tree's, over the
#    bare run: start-up and exit included) and the CPU of making the call-graph listing from the
#    recording (`pkgprof -b --pid` of pkgmon's directory, `perf report --stdio --no-children -g`
#    of perf's file) are shown beside it. The workload is work.c, 4 s of work (13 s at 1 kHz).
#    Beside pkgmon: `--stack-size 0` (what perf -g takes: frame-pointer callchains, no stack
#    copy) and `--stack-copy kernel` (the stacks copied by the kernel instead of pkgmon's BPF
#    program); against `perf record -g` and `perf record --call-graph dwarf` (stack copies,
#    like pkgmon). RUNS rounds, each running every tool at every rate once, in turn.
# 1b. (handler) What a sample costs inside the sampling interrupt, timed there: the cpu-clock
#    event's timer callback (perf_swevent_hrtimer, where the kernel writes perf's sample with
#    its callchain, or pkgmon's BPF copier writes its record) from the kernel's
#    hrtimer_expire_entry to its hrtimer_expire_exit tracepoint, every sample of a run, in TSC
#    cycles (trace_clock x86-tsc, calibrated against CLOCK_MONOTONIC). No run-to-run noise of
#    the workload here, which at 1 kHz is larger than what a sample costs; what it leaves out
#    is the interrupt's entry and exit (the same for every tool) and the caches the sampling
#    takes from the workload (in part 1's "in the workload"). work.c, 4 s of work at every
#    rate; RUNS rounds, the median of each tool's per-run means. Needs tracefs (mounted at
#    /sys/kernel/tracing) and x86-tsc; the two tracepoints add their own cost to every sample,
#    alike for every tool.
# 2. (memory) Peak memory (maximum RSS, /usr/bin/time -v) of a 10 s and a MEMORY_SECONDS run
#    (default 60) at 4 kHz, of pkgmon and of `perf record -g`, on the same workload: memory that
#    does not grow with time shows the same peak for both lengths.
# 3. (stack) What the user stack copy costs pkgmon: a deep-stack workload (recursion.c of the
#    truth tests, 200 levels) at 4 kHz with --stack-size 0, 8192 and the default 65528.
# 4. (fault, not in the default set) Where the stack copy of each sample ends: the kernel's
#    page-fault exceptions (`perf stat -e exceptions:page_fault_kernel`: pkgmon and the
#    workload) while pkgmon samples work.c at 10 kHz with the default copy, with --stack-size
#    2048 (less than work.c's live stack, 3.5-8 KiB with the environment: that copy never
#    reaches the stack's end) and with no copy; and what such an exception costs here
#    (benches/workloads/stack-end-fault.c: a copy that runs into an unmapped page against one
#    that does not).
#
# The figures of earlier methods (the marginal cost of a large run over a small one, the task's
# CPU at 10 kHz alone) came from this script as of e6b70c8: `git show e6b70c8:benches/compare-perf.sh`.
#
# Needs root (or perf_event_paranoid <= 1), perf, hyperfine and cc. On a shared machine the
# figures move with the load: the load average is printed with them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-5}"
memory_seconds="${MEMORY_SECONDS:-60}"
parts="${PARTS:-cost handler memory stack}"
. "$root/benches/lib.sh"
needs hyperfine perf cc /usr/bin/time python3
find_pkgmon
scratch_dir "${WORK:-}"
cd "$work"
cc -O2 -o work "$root/crates/collect-perf/tests/workloads/work.c"
cc -O2 -fno-omit-frame-pointer -o recursion "$root/crates/pkgprof-cli/tests/truth/recursion.c"
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "work dir: $work; $(nproc) cpus; $(uname -r); load average: $(load)"

# hyperfine's mean user + system seconds of each command, by name, from its JSON.
cpu_of() {
  python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["command"], r["user"] + r["system"])
PY
}

if [[ " $parts " == *" cost "* ]]; then
echo
echo "## CPU per sample, load average before: $(load)"
echo
# One run per tool and rate a round, in turn (bare, then each tool at 1, 4 and 10 kHz), so a
# change of load falls on all alike; medians over the rounds, ratios as medians of each round's.
PYTHONPATH="$root/benches" python3 - "$pkgmon" "$pkgprof" "$runs" <<'PY'
import glob, os, re, resource, statistics, subprocess, sys, time
import profilers
pkgmon, pkgprof, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
# Work units (~700 a second): at 1 kHz 13 s of work, for as many samples as 4 s at 4 kHz,
# since what a sample costs the task must stand out of the run's own noise.
size_at = {1000: 9100, 4000: 2800, 10000: 2800}
env = dict(os.environ, WORK_CPU_OUT="work.cpu")
retries = 0
def runtime(pid):
    """Nanoseconds the process's threads have run (its children are other processes)."""
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            total += int(open(f).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total
def own_rate(polls, t0, t1):
    """The profiler's runtime in ns a second between t0 and t1 s into the run, from polls
    (time, runtime) 10 ms apart. A profiler that works in bursts (pkgmon once a second or when
    a ring is a quarter full, perf -g when half its ring is) handles in each the samples since
    the last, so the stretch runs from the end of one burst to the end of another: runtime that
    rose, then held still. One that works all the time (perf --call-graph dwarf) is read at t0
    and t1."""
    ends = [i for i in range(1, len(polls) - 1)
            if polls[i - 1][1] < polls[i][1] == polls[i + 1][1] and t0 <= polls[i][0] <= t1]
    if len(ends) < 2:
        ends = [i for i, (t, _) in enumerate(polls) if t0 <= t <= t1]
    (ta, a), (tb, b) = polls[ends[0]], polls[ends[-1]]
    return (b - a) / (tb - ta)
def run(cmd, seconds):
    """(CPU of the process tree, CPU of the workload, the profiler's runtime while recording in
    ns a second, stderr) of one run of about `seconds`. perf 6.1 here aborts now and then in
    its build-id code ("assertion failed at util/build-id.c:1010") after recording: such a run
    is run again, and counted."""
    global retries
    for _ in range(5):
        subprocess.run(["rm", "-rf", "out.run", "work.cpu"])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        polls = []
        with open("stderr.txt", "w") as err:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
            start = time.monotonic()
            while p.poll() is None:
                polls.append((time.monotonic() - start, runtime(p.pid)))
                time.sleep(0.01)
            code = p.returncode
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        stderr = open("stderr.txt").read()
        if code == 0:
            tree = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            # From 1 s in (start-up done) to 0.85 of the bare run's length (before the
            # workload's end, when the profilers write their files).
            own = own_rate(polls, 1.0, 0.85 * seconds)
            return tree, float(open("work.cpu").read()), own, stderr
        retries += 1
    sys.exit(f"failed 5 times: {' '.join(cmd)}\n{stderr}")
def samples(tool, stderr):
    """Samples the profiler took: pkgmon prints them; perf counts them in its data file."""
    if tool.startswith("pkgmon"):
        return int(re.search(r" (\d+) samples, ", stderr).group(1))
    stats = subprocess.run(["perf", "report", "-i", "out.run", "--stats"],
                           capture_output=True, text=True).stdout
    found = re.search(r"SAMPLE events:\s*(\d+)", stats)
    if not found:
        sys.exit("perf report --stats gave no sample count")
    return int(found.group(1))
def listing_cpu(tool, stderr):
    """CPU seconds of making the call-graph listing from the recording: pkgmon has unwound and
    aggregated while recording, perf record left that to perf report."""
    if tool.startswith("pkgmon"):
        pid = re.search(r"pkgprof -b --pid (\d+)", stderr).group(1)
        cmd = [pkgprof, "-b", "--pid", pid, "out.run"]
    else:
        cmd = ["perf", "report", "-i", "out.run", "--stdio", "--no-children", "-g"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
def command(tool, hz):
    return profilers.command(tool, pkgmon, hz, ["./work", str(size_at[hz])])
tools, rates = profilers.TOOLS, profilers.RATES
rows = {(hz, t): [] for hz in rates for t in tools}
for _ in range(rounds):
    bare = {size: run(["./work", str(size)], size / 700) for size in sorted(set(size_at.values()))}
    for hz in rates:
        bare_tree, bare_task = bare[size_at[hz]][:2]
        for t in tools:
            tree, task, own, stderr = run(command(t, hz), bare_task)
            n = samples(t, stderr)
            listing = listing_cpu(t, stderr)
            rate = n / task  # samples a second of the workload's CPU: its core is its own
            in_task = (task - bare_task) / n * 1e6
            in_profiler = own / rate / 1e3
            rows[hz, t].append(dict(n=n, task=in_task, own=in_profiler, run=tree - bare_tree,
                                    listing=listing))
def med(hz, t, key):
    return statistics.median(r[key] for r in rows[hz, t])
def sums(hz, t):
    return [r["task"] + r["own"] for r in rows[hz, t]]
def ratio(hz, t, to):
    return statistics.median(a / b for a, b in zip(sums(hz, t), sums(hz, to)))
print("| Hz | tool | samples | in the workload (µs a sample) | in the profiler while recording | per sample | range | vs perf -g | vs perf dwarf | whole run over bare (s) | listing made (s) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for hz in rates:
    for t in tools:
        each = sums(hz, t)
        print(f"| {hz} | {t} | {int(med(hz, t, 'n'))} | {med(hz, t, 'task'):.1f} | {med(hz, t, 'own'):.2f} "
              f"| {statistics.median(each):.1f} | {min(each):.1f}-{max(each):.1f} "
              f"| {ratio(hz, t, 'perf -g'):.2f}x | {ratio(hz, t, 'perf dwarf'):.2f}x "
              f"| {med(hz, t, 'run'):+.3f} | {med(hz, t, 'listing'):.3f} |")
if retries:
    print(f"\n({retries} runs aborted by perf and run again)")
PY
fi
rm -rf out.run work.cpu stderr.txt

if [[ " $parts " == *" handler "* ]]; then
echo
echo "## Time in the sampling interrupt, load average before: $(load)"
echo
PYTHONPATH="$root/benches" python3 - "$pkgmon" "$runs" <<'PY'
import re, statistics, subprocess, sys, time
import profilers
pkgmon, rounds = sys.argv[1], int(sys.argv[2])
T = "/sys/kernel/tracing"
if "x86-tsc" not in open(f"{T}/trace_clock").read():
    sys.exit("needs tracefs at /sys/kernel/tracing with the x86-tsc trace clock")
target = next(l.split()[0] for l in open("/proc/kallsyms")
              if l.split()[2] == "perf_swevent_hrtimer")
if int(target, 16) == 0:
    sys.exit("needs kernel addresses in /proc/kallsyms (root)")
def put(name, value):
    with open(f"{T}/{name}", "w") as f:
        f.write(value)
def get(name):
    """A setting as it can be written back: the clock in use; a buffer not yet grown reads
    "7 (expanded: 1408)", of which the size it grows to."""
    text = open(f"{T}/{name}").read()
    if name == "trace_clock":
        return re.search(r"\[(\S+)\]", text).group(1)
    grown = re.search(r"\(expanded: (\d+)\)", text)
    return grown.group(1) if grown else text.strip()
saved = {n: get(n) for n in ("trace_clock", "buffer_size_kb", "tracing_on")}
events = ("events/timer/hrtimer_expire_entry", "events/timer/hrtimer_expire_exit")
line = re.compile(r"\[(\d+)\].*?\s(\d+): "
                  r"(hrtimer_expire_entry|hrtimer_expire_exit|tracing_mark_write): (?:hrtimer=(\S+))?")
def traced(cmd):
    """The callback's cycles of every sample of one run of cmd, and the TSC's cycles a second
    (from two trace marks written a known CLOCK_MONOTONIC time apart)."""
    put("tracing_on", "0")
    put("trace", "")
    put("trace_clock", "x86-tsc")
    put("buffer_size_kb", "65536")
    put(f"{events[0]}/filter", f"function == 0x{target}")
    for e in events:
        put(f"{e}/enable", "1")
    put("tracing_on", "1")
    t0 = time.monotonic(); put("trace_marker", "calibrate 0")
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    t1 = time.monotonic(); put("trace_marker", "calibrate 1")
    put("tracing_on", "0")
    for e in events:
        put(f"{e}/enable", "0")
    put(f"{events[0]}/filter", "0")
    open_at, cycles, marks = {}, [], []
    with open(f"{T}/trace") as f:
        for l in f:
            m = line.search(l)
            if not m:
                continue
            cpu, ts, kind, timer = m.group(1), int(m.group(2)), m.group(3), m.group(4)
            if kind == "tracing_mark_write":
                marks.append(ts)
            elif kind == "hrtimer_expire_entry":
                open_at[cpu] = (timer, ts)
            elif cpu in open_at and open_at[cpu][0] == timer:
                cycles.append(ts - open_at.pop(cpu)[1])
    put("trace", "")
    if len(marks) != 2 or not cycles:
        sys.exit(f"the trace lost events ({len(marks)} marks, {len(cycles)} samples): "
                 "a larger buffer_size_kb?")
    return cycles, (marks[1] - marks[0]) / (t1 - t0)
def command(tool, hz):
    return profilers.command(tool, pkgmon, hz, ["./work", "2800"])
tools, rates = profilers.TOOLS, profilers.RATES
rows = {(hz, t): [] for hz in rates for t in tools}
try:
    for _ in range(rounds):
        for hz in rates:
            for t in tools:
                subprocess.run(["rm", "-rf", "out.run"])
                cycles, per_second = traced(command(t, hz))
                us = sorted(c / per_second * 1e6 for c in cycles)
                rows[hz, t].append(dict(n=len(us), mean=statistics.fmean(us), p50=us[len(us) // 2],
                                        p99=us[int(0.99 * (len(us) - 1))]))
finally:
    put("tracing_on", "0")
    for e in events:
        put(f"{e}/enable", "0")
    put(f"{events[0]}/filter", "0")
    put("trace", "")
    for n, v in saved.items():
        put(n, v)
def med(hz, t, key):
    return statistics.median(r[key] for r in rows[hz, t])
print("| Hz | tool | samples timed | mean (µs a sample) | range of the rounds' means | median "
      "| 99th percentile | vs perf -g |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for hz in rates:
    for t in tools:
        means = [r["mean"] for r in rows[hz, t]]
        ratio = statistics.median(a["mean"] / b["mean"]
                                  for a, b in zip(rows[hz, t], rows[hz, "perf -g"]))
        print(f"| {hz} | {t} | {int(med(hz, t, 'n'))} | {statistics.median(means):.2f} "
              f"| {min(means):.2f}–{max(means):.2f} | {med(hz, t, 'p50'):.2f} "
              f"| {med(hz, t, 'p99'):.2f} "
              f"| {ratio:.2f}× |")
PY
rm -rf out.run
fi

if [[ " $parts " == *" memory "* ]]; then
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
fi

if [[ " $parts " == *" stack "* ]]; then
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
fi
if [[ " $parts " == *" fault "* ]]; then
echo
echo "## Page-fault exceptions in the kernel during a 10 kHz run, load average before: $(load)"
echo
cc -O2 -o stack-end-fault "$root/benches/workloads/stack-end-fault.c"
echo "| --stack-size | samples | page faults taken in the kernel (pkgmon and work) |"
echo "|---|---|---|"
for size in 65528 2048 0; do
  out=$(perf stat -x, -e exceptions:page_fault_kernel -- \
        "$pkgmon" -o pk.fault -F 10000 --stack-size $size -- ./work 1000 2>&1 >/dev/null)
  rm -rf pk.fault
  n=$(echo "$out" | sed -n 's/.* \([0-9]*\) samples, .*/\1/p')
  f=$(echo "$out" | awk -F, '$3 == "exceptions:page_fault_kernel" {print $1}')
  echo "| $size | $n | $f |"
done
echo
./stack-end-fault
fi
echo
echo "load average after: $(load)"
