#!/usr/bin/env bash
# What a process's number of shared libraries costs pkgmon's own process a sample: the same
# CPU work (many-libs.c: 400 library calls a round) with its calls spread over 1 and over 400
# dlopened libraries, sampled at 10 kHz. pkgmon's CPU is the whole run's (user + system of the
# process tree) less the workload's own; its cost a sample is that of a large run (about 3 s)
# less that of a small one, over the extra samples, so that the fixed costs (the kernel's
# symbols, each library's unwind tables read once) cancel out. RUNS rounds, medians.
# Every frame of every sample is looked up among the process's live mappings.
#
#   bash benches/many-libraries.sh          PKGMON=path/to/pkgmon RUNS=5 LIBS="1 400"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-5}"
libs="${LIBS:-1 400}"
. "$root/benches/lib.sh"
needs cc python3
find_pkgmon
scratch_dir "${WORK:-}"
cd "$work"
max=1
for n in $libs; do [ "$n" -gt "$max" ] && max=$n; done
for i in $(seq 1 "$max"); do
  [ -e "libmany$i.so" ] || echo "cc -O2 -fPIC -shared -DN=$i -o libmany$i.so $root/benches/workloads/many-libs-lib.c"
done | xargs -P "$(nproc)" -I{} sh -c '{}'
cc -O2 -o many-libs "$root/benches/workloads/many-libs.c" -ldl
echo "work dir: $work; $(nproc) cpus; $(uname -r); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$pkgmon" "$runs" $libs <<'PY'
import os, re, resource, statistics, subprocess, sys
pkgmon, rounds, libs = sys.argv[1], int(sys.argv[2]), [int(n) for n in sys.argv[3:]]
env = dict(os.environ, WORK_CPU_OUT="work.cpu")
small, large = 8000, 32000
def run(n, size):
    """pkgmon's own CPU seconds (the tree's less the workload's) and its samples."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([pkgmon, "-o", "pk.run", "-F", "10000", "--", "./many-libs", str(n),
                           str(size)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tree = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    samples = int(re.search(r" (\d+) samples, ", done.stderr).group(1))
    subprocess.run(["rm", "-rf", "pk.run"], check=True)
    return tree - float(open("work.cpu").read()), samples
per = {n: [] for n in libs}
for r in range(rounds):
    for n in libs:
        (own_s, n_s), (own_l, n_l) = run(n, small), run(n, large)
        per[n].append(((own_l - own_s) / (n_l - n_s) * 1e6, n_l - n_s))
print("| libraries | pkgmon's own CPU, us a sample (marginal), median (range) | extra samples |")
print("|---|---|---|")
for n in libs:
    us = [x[0] for x in per[n]]
    print(f"| {n} | {statistics.median(us):.2f} ({min(us):.2f}-{max(us):.2f}) "
          f"| {statistics.median(x[1] for x in per[n]):.0f} |")
PY
