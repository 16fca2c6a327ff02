#!/usr/bin/env bash
# Side by side: pkgmon against `perf record -g` (frame-pointer callchains, perf's usual mode)
# and `perf record --call-graph dwarf` (stack copies, like pkgmon) on the same workloads.
#
#   bash benches/compare-perf.sh            (everything, about 25 minutes)
#   MEMORY_SECONDS=10 RUNS=3 bash benches/compare-perf.sh     (shorter)
#   PKGMON=path/to/pkgmon bash benches/compare-perf.sh       (a pkgmon already built)
#   PARTS="cpu" bash benches/compare-perf.sh                  (some of the parts below only)
#
# 1. CPU per sample at 1, 4 and 10 kHz. The workload is a fixed amount of CPU work (work.c) in
#    two sizes, about 1 and 4 s (13 s at 1 kHz, for as many extra samples as at 4). A profiler's cost per sample is its extra CPU time (user +
#    system of the whole process tree, over the bare workload) on the large run minus that on
#    the small one, divided by the extra samples: the fixed cost of starting and stopping
#    (perf's is about half a second) cancels out. RUNS rounds, each running every tool once
#    in turn; the figures are medians over the rounds. The cost is split in two: what the
#    sampled workload pays (its own CPU time, which work.c reports: the kernel's sampling
#    work, callchain walk and stack copy run in its context) and what the profiler's own
#    process spends (reading the rings, unwinding, writing). A last column adds the CPU of
#    making the call-graph listing from the recording (`pkgprof -b --pid` of pkgmon's directory,
#    `perf report --stdio --no-children -g` of perf's file): pkgmon unwinds and aggregates while
#    recording, perf record writes raw records and leaves that work to perf report.
#    `pkgmon --stack-size 0` runs beside them: pkgmon taking what perf -g takes (frame-pointer
#    callchains, no stack copy), so that each pkgmon mode is set against the perf mode that
#    records the same thing (ratios to both perf modes are shown); and `pkgmon --stack-copy
#    kernel`, the stacks copied by the kernel rather than by pkgmon's BPF program (root).
# 2. Peak memory (maximum RSS, /usr/bin/time -v) of a 10 s and a MEMORY_SECONDS run (default
#    60) at 4 kHz, of pkgmon and of `perf record -g`, on the same workload: memory that does
#    not grow with time shows the same peak for both lengths.
# 3. What the user stack copy costs pkgmon: a deep-stack workload (recursion.c of the truth
#    tests, 200 levels) at 4 kHz with --stack-size 0, 8192 and the default 65528.
# 4. (PARTS=split, not in the default set) What the sampled task pays at 10 kHz under pkgmon as
#    it is, with --stack-copy kernel, with --stack-size 0, with --stack-size 0 --max-stack 127
#    (perf's limit), and under `perf record -g`: the large workload's own CPU time over the bare
#    run's, RUNS interleaved
#    rounds, medians.
# 5. (PARTS=fault, not in the default set) Where the stack copy of each sample ends: the kernel's
#    page-fault exceptions (`perf stat -e exceptions:page_fault_kernel`: pkgmon and the
#    workload) while pkgmon samples work.c at 10 kHz with the default copy, with --stack-size
#    2048 (less than work.c's live stack, 3.5-8 KiB with the environment: that copy never
#    reaches the stack's end) and with no copy; and what such an exception costs here
#    (benches/workloads/stack-end-fault.c: a copy that runs into an unmapped page against one
#    that does not).
# 6. (PARTS=own, not in the default set) The profiler's own process while it records: the
#    runtime of its threads (/proc/PID/task/*/schedstat) from 1.5 to 7.5 s into a run of
#    work.c at 1, 4 and 10 kHz, per sample, RUNS interleaved rounds, medians. Start-up and the
#    work after the workload ends (pkgmon's listing files, perf's build-ids) are left out, and
#    so is the marginal method's noise: what a collector costs to keep running.
#
# Needs root (or perf_event_paranoid <= 1), perf, hyperfine and cc. On a shared machine the
# figures move with the load: the load average is printed with them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-5}"
memory_seconds="${MEMORY_SECONDS:-60}"
parts="${PARTS:-cpu memory stack}"
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

if [[ " $parts " == *" cpu "* ]]; then
echo
echo "## CPU per sample (marginal: large run minus small run), load average before: $(load)"
echo
# Rounds interleave the tools (bare, pkgmon, perf -g, perf dwarf; small then large), so a change
# of load during the run falls on all of them alike; each round gives each tool one marginal
# cost, and the table shows their median and range over RUNS rounds, and the median of the
# per-round ratios to perf -g.
python3 - "$pkgmon" "$pkgprof" "$runs" <<'PY'
import os, re, resource, statistics, subprocess, sys
pkgmon, pkgprof, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
small = 700
# About 12,000 samples more in the large run at 1 and 4 kHz, 30,000 at 10 kHz: at 1 kHz a 4 s
# run's 3,000 extra samples cost less than a run's noise.
large_at = {1000: 9100, 4000: 2800, 10000: 2800}
retries = 0
def cpu_run(cmd):
    """CPU seconds (user + system) of `cmd` and the processes it waited for, those of the
    workload alone (work.c writes them to WORK_CPU_OUT), and its stderr.
    perf 6.1 here aborts now and then in its build-id code ("assertion failed at
    util/build-id.c:1010") after recording: such a run is run again, and counted."""
    global retries
    env = dict(os.environ, WORK_CPU_OUT="work.cpu")
    for attempt in range(5):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode == 0:
            tree = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            return (tree, float(open("work.cpu").read())), done.stderr
        retries += 1
    sys.exit(f"failed 5 times: {' '.join(cmd)}\n{done.stderr}")
def report_cpu(tool, stderr):
    """CPU seconds of making the call-graph listing from the recording just made."""
    if tool.startswith("pkgmon"):
        pid = re.search(r"pkgprof -b --pid (\d+)", stderr).group(1)
        cmd = [pkgprof, "-b", "--pid", pid, "pk.run"]
    else:
        cmd = ["perf", "report", "-i", "perf.run", "--stdio", "--no-children", "-g"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
def samples(tool, stderr):
    """Samples the profiler took: pkgmon prints them; perf counts them in its data file."""
    if tool.startswith("pkgmon"):
        subprocess.run(["rm", "-rf", "pk.run"])
        return int(re.search(r" (\d+) samples, ", stderr).group(1))
    for attempt in range(3):
        stats = subprocess.run(["perf", "report", "-i", "perf.run", "--stats"],
                               capture_output=True, text=True).stdout
        found = re.search(r"SAMPLE events:\s*(\d+)", stats)
        if found:
            return int(found.group(1))
    sys.exit("perf report --stats gave no sample count")
def command(tool, hz, size):
    work = ["./work", str(size)]
    return {
        "bare": work,
        "pkgmon": [pkgmon, "-o", "pk.run", "-F", str(hz), "--"] + work,
        "pkgmon --stack-size 0": [pkgmon, "-o", "pk.run", "-F", str(hz), "--stack-size", "0", "--"] + work,
        "pkgmon --stack-copy kernel": [pkgmon, "-o", "pk.run", "-F", str(hz), "--stack-copy", "kernel", "--"] + work,
        "perf -g": ["perf", "record", "-q", "-F", str(hz), "-g", "-o", "perf.run", "--"] + work,
        "perf dwarf": ["perf", "record", "-q", "-F", str(hz), "--call-graph", "dwarf", "-o", "perf.run", "--"] + work,
    }[tool]
tools = ["pkgmon", "pkgmon --stack-copy kernel", "pkgmon --stack-size 0", "perf -g", "perf dwarf"]
print("| Hz | tool | CPU per sample (us): median | min - max | in the workload | in the profiler | extra samples (median) | vs perf -g (median of rounds) | vs perf dwarf (median of rounds) | with the listing made (us) | vs perf -g + perf report |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for hz in (1000, 4000, 10000):
    large = large_at[hz]
    per = {t: [] for t in tools}
    listed = {t: [] for t in tools}
    inside = {t: [] for t in tools}
    extra = {t: [] for t in tools}
    for _ in range(rounds):
        cpu, n, rep = {}, {}, {}
        for size in (small, large):
            cpu["bare", size], _ = cpu_run(command("bare", hz, size))
            for t in tools:
                cpu[t, size], err = cpu_run(command(t, hz, size))
                rep[t, size] = report_cpu(t, err)
                n[t, size] = samples(t, err)
        for t in tools:
            more = max(n[t, large] - n[t, small], 1)
            def marginal(part):
                return ((cpu[t, large][part] - cpu["bare", large][part])
                        - (cpu[t, small][part] - cpu["bare", small][part]))
            per[t].append(marginal(0) / more * 1e6)
            listed[t].append((marginal(0) + rep[t, large] - rep[t, small]) / more * 1e6)
            inside[t].append(marginal(1) / more * 1e6)
            extra[t].append(more)
    for t in tools:
        ratios = [a / b for a, b in zip(per[t], per["perf -g"]) if b > 0]
        ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
        ratios = [a / b for a, b in zip(per[t], per["perf dwarf"]) if b > 0]
        dwarf_ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
        ratios = [a / b for a, b in zip(listed[t], listed["perf -g"]) if b > 0]
        listed_ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
        own = [a - b for a, b in zip(per[t], inside[t])]
        print(f"| {hz} | {t} | {statistics.median(per[t]):.1f} | {min(per[t]):.1f} - {max(per[t]):.1f} "
              f"| {statistics.median(inside[t]):.1f} | {statistics.median(own):.1f} "
              f"| {int(statistics.median(extra[t]))} | {ratio} | {dwarf_ratio} "
              f"| {statistics.median(listed[t]):.1f} | {listed_ratio} |")
if retries:
    print(f"\n({retries} runs aborted by perf and run again)")
PY
fi
rm -rf pk.run perf.run perf.data work.cpu

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
if [[ " $parts " == *" split "* ]]; then
echo
echo "## The sampled task's CPU at 10 kHz, load average before: $(load)"
echo
python3 - "$pkgmon" "$runs" <<'PY'
import os, statistics, subprocess, sys
pkgmon, rounds = sys.argv[1], int(sys.argv[2])
env = dict(os.environ, WORK_CPU_OUT="work.cpu")
work = ["./work", "2800"]
variants = {
    "bare": work,
    "pkgmon": [pkgmon, "-o", "pk.split", "-F", "10000", "--"] + work,
    "pkgmon --stack-copy kernel": [pkgmon, "-o", "pk.split", "-F", "10000", "--stack-copy", "kernel", "--"] + work,
    "pkgmon --stack-size 0": [pkgmon, "-o", "pk.split", "-F", "10000", "--stack-size", "0", "--"] + work,
    "pkgmon --stack-size 0 --max-stack 127": [pkgmon, "-o", "pk.split", "-F", "10000", "--stack-size", "0", "--max-stack", "127", "--"] + work,
    "perf record -g": ["perf", "record", "-B", "-q", "-F", "10000", "-g", "-o", "perf.split", "--"] + work,
}
cpu = {name: [] for name in variants}
for _ in range(rounds):
    for name, cmd in variants.items():
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
        cpu[name].append(float(open("work.cpu").read()))
        subprocess.run(["rm", "-rf", "pk.split", "perf.split"])
bare = statistics.median(cpu["bare"])
print("| run | workload CPU (s), median | over bare (s) |\n|---|---|---|")
for name, values in cpu.items():
    print(f"| {name} | {statistics.median(values):.3f} | {statistics.median(values) - bare:+.3f} |")
PY
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
if [[ " $parts " == *" own "* ]]; then
echo
echo "## The profiler's own CPU while recording, load average before: $(load)"
echo
python3 - "$pkgmon" "$runs" <<'PY'
import glob, statistics, subprocess, sys, time
pkgmon, rounds = sys.argv[1], int(sys.argv[2])
t0, t1 = 1.5, 7.5
def runtime(pid):
    """Nanoseconds the process's threads have run (threads that ended meanwhile drop out)."""
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            total += int(open(f).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total
def command(tool, hz):
    work = ["./work", "9100"]
    return {
        "pkgmon": [pkgmon, "-o", "pk.own", "-F", str(hz), "--"] + work,
        "pkgmon --stack-copy kernel": [pkgmon, "-o", "pk.own", "-F", str(hz), "--stack-copy", "kernel", "--"] + work,
        "perf -g": ["perf", "record", "-q", "-F", str(hz), "-g", "-o", "perf.own", "--"] + work,
        "perf dwarf": ["perf", "record", "-q", "-F", str(hz), "--call-graph", "dwarf", "-o", "perf.own", "--"] + work,
    }[tool]
tools = ["pkgmon", "pkgmon --stack-copy kernel", "perf -g", "perf dwarf"]
print("| Hz | tool | own CPU while recording (ns a sample): median | min - max | vs perf -g |")
print("|---|---|---|---|---|")
for hz in (1000, 4000, 10000):
    per = {t: [] for t in tools}
    for _ in range(rounds):
        for t in tools:
            p = subprocess.Popen(command(t, hz), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            start = time.monotonic()
            time.sleep(t0)
            a, ta = runtime(p.pid), time.monotonic()
            time.sleep(start + t1 - time.monotonic())
            b, tb = runtime(p.pid), time.monotonic()
            if p.wait() != 0:
                sys.exit(f"failed: {' '.join(command(t, hz))}")
            subprocess.run(["rm", "-rf", "pk.own", "perf.own"])
            per[t].append((b - a) / (tb - ta) / hz)
    perf = statistics.median(per["perf -g"])
    for t in tools:
        m = statistics.median(per[t])
        print(f"| {hz} | {t} | {m:.0f} | {min(per[t]):.0f} - {max(per[t]):.0f} | {m / perf:.1f}x |")
PY
fi
echo
echo "load average after: $(load)"
