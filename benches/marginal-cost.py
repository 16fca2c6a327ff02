#!/usr/bin/env python3
"""CPU per sample of any profiler commands side by side, by compare-perf.sh's method.

    python3 benches/marginal-cost.py ROUNDS HZ NAME=COMMAND [NAME=COMMAND ...]

e.g. two pkgmon builds against perf -g at 10 kHz, 5 rounds:

    python3 benches/marginal-cost.py 5 10000 \\
        "new=target/release/pkgmon -o {out} -F {hz} -- {work} {size}" \\
        "old=/tmp/old/pkgmon -o {out} -F {hz} -- {work} {size}" \\
        "perf-g=perf record -q -F {hz} -g -o {out} -- {work} {size}"

Each COMMAND is a shell command; {hz}, {size} (work units, ~700 a second), {work} (work.c,
built here) and {out} (where it writes: pkgmon's directory or perf's file) are filled in. A
round runs the bare workload and every command once on a small and a large workload; a
command's cost per sample is its extra CPU time (user + system of its whole process tree, over
the bare run) on the large run minus that on the small one, over the extra samples, so start-up
costs cancel out. "task" is the part the workload itself pays (work.c reports its own CPU time:
the kernel's sampling work runs in its context), "own" the rest. Samples are read from pkgmon's
summary, or from `perf report --stats` when {out} is a file. The ratios are medians of the
per-round ratios to the last command; the figures, medians over the rounds.
"""
import os, re, resource, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL, LARGE = 700, 2800


def main():
    if len(sys.argv) < 4 or any("=" not in a for a in sys.argv[3:]):
        sys.exit(__doc__)
    rounds, hz = int(sys.argv[1]), int(sys.argv[2])
    commands = dict(a.split("=", 1) for a in sys.argv[3:])
    scratch = tempfile.mkdtemp(prefix="marginal-cost.")
    work = os.path.join(scratch, "work")
    subprocess.run(["cc", "-O2", "-o", work,
                    os.path.join(ROOT, "crates/collect-perf/tests/workloads/work.c")], check=True)
    out = os.path.join(scratch, "out")
    cpu_file = os.path.join(scratch, "work.cpu")
    env = dict(os.environ, WORK_CPU_OUT=cpu_file)

    def run(cmd):
        """(CPU of the process tree, CPU of the workload, samples) of one run. perf 6.1 aborts
        now and then after recording (in its build-id code): such a run is run again."""
        for _ in range(5):
            subprocess.run(["rm", "-rf", out])
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode == 0:
                break
        else:
            sys.exit(f"failed 5 times: {cmd}\n{done.stderr}")
        samples = None
        if os.path.isdir(out):
            found = re.search(r" (\d+) samples, ", done.stderr)
            samples = int(found.group(1)) if found else None
        elif os.path.isfile(out):
            stats = subprocess.run(["perf", "report", "-i", out, "--stats"],
                                   capture_output=True, text=True).stdout
            found = re.search(r"SAMPLE events:\s*(\d+)", stats)
            samples = int(found.group(1)) if found else None
        subprocess.run(["rm", "-rf", out])
        tree = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return tree, float(open(cpu_file).read()), samples

    results = {name: [] for name in commands}
    for _ in range(rounds):
        cpu = {}
        for size in (SMALL, LARGE):
            cpu["bare", size] = run(f"{work} {size}")
            for name, cmd in commands.items():
                cpu[name, size] = run(cmd.format(hz=hz, size=size, work=work, out=out))
        for name in commands:
            n = (cpu[name, LARGE][2] or 0) - (cpu[name, SMALL][2] or 0)
            if n <= 0:
                sys.exit(f"{name}: no sample count (is {{out}} its output?)")

            def marginal(part):
                return ((cpu[name, LARGE][part] - cpu["bare", LARGE][part])
                        - (cpu[name, SMALL][part] - cpu["bare", SMALL][part])) / n * 1e6
            results[name].append((marginal(0), marginal(1), n))
    last = list(commands)[-1]
    print(f"{hz} Hz, {rounds} rounds, us a sample (median, all rounds); ratios to {last}")
    for name, rows in results.items():
        ratios = [a[0] / b[0] for a, b in zip(rows, results[last]) if b[0] > 0]
        ratio = statistics.median(ratios) if ratios else float("nan")
        total = statistics.median(r[0] for r in rows)
        task = statistics.median(r[1] for r in rows)
        print(f"{name:16} {total:6.2f}  task {task:6.2f}  own {total - task:6.2f}  "
              f"{ratio:.2f}x  samples {statistics.median(r[2] for r in rows):.0f}  "
              f"all {[round(r[0], 1) for r in rows]}")
    subprocess.run(["rm", "-rf", scratch])


if __name__ == "__main__":
    main()
