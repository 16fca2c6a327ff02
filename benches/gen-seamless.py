#!/usr/bin/env python3
"""Writes a synthetic pkgmon measurement directory for benchmarking `pkgprof --pid`.

usage: gen-seamless.py OUT_DIR [SAMPLES] [SEED]

One process (pid 4242, comm "bench") with this machine's real libc mapped (its .dynsym symbols,
build-id and program headers) and this machine's /proc/kallsyms as the snapshot, so the report
symbolizes against real-sized tables (some 3,000 libc and 120,000 kernel symbols). SAMPLES
(default 1,000,000) samples are split 60/40 between user (libc functions) and kernel, each with
a sampled call chain of 3 to 8 frames; the arcs are the chains' edges, counted once per sample,
as the collector writes them. Deterministic for a given SEED.
"""

import os
import random
import re
import struct
import subprocess
import sys

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LIBC_BASE = 0x7F00_0000_0000
PID, COMM = 4242, "bench"
HZ = 4000


def libc_functions():
    out = subprocess.run(
        ["nm", "-D", "--defined-only", LIBC], capture_output=True, text=True, check=True
    ).stdout
    addrs = sorted(
        {int(a, 16) for a, t, _ in (l.split()[:3] for l in out.splitlines() if len(l.split()) >= 3)
         if t in "TW" and int(a, 16) != 0}
    )
    return addrs


def libc_build_id():
    out = subprocess.run(["readelf", "-n", LIBC], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def libc_code_segment():
    out = subprocess.run(["readelf", "-lW", LIBC], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            return int(f[1], 16), int(f[2], 16), int(f[5], 16)  # offset, vaddr, memsz
    raise SystemExit("no executable segment in " + LIBC)


def kernel_functions(text):
    addrs = sorted(
        {int(a, 16) for a, t, *_ in (l.split() for l in text.splitlines()) if t in "Tt"}
    )
    return [a for a in addrs if a != 0]


def gmon(bins, arcs):
    """GNU gmon v1, 64-bit LE: one histogram record per run of pages, 2-byte bins."""
    out = bytearray(b"gmon" + struct.pack("<I", 1) + bytes(12))
    pages = sorted({a >> 12 for a in bins})
    runs = []
    for p in pages:
        if runs and runs[-1][1] + 1 >= p:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    for first, last in runs:
        lo, hi = first << 12, (last + 1) << 12
        counts = [bins.get(a, 0) for a in range(lo, hi, 2)]
        carried = 0
        while carried < max(counts):
            out += b"\0" + struct.pack("<QQII", lo, hi, len(counts), HZ) + b"seconds".ljust(15, b"\0") + b"s"
            out += struct.pack("<%dH" % len(counts), *(min(max(c - carried, 0), 65535) for c in counts))
            carried += 65535
    for (f, t), c in sorted(arcs.items()):
        out += b"\1" + struct.pack("<QQI", f, t, c)
    return bytes(out)


def main():
    out_dir = sys.argv[1]
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    os.makedirs(out_dir, exist_ok=True)
    with open("/proc/kallsyms") as f:
        kallsyms = f.read()
    kfuncs = kernel_functions(kallsyms)
    if not kfuncs:
        raise SystemExit("/proc/kallsyms shows no addresses (kptr_restrict); run as root")
    ufuncs = libc_functions()
    seg_off, seg_vaddr, seg_size = libc_code_segment()
    bias = LIBC_BASE
    # Hot sets with skewed weights, as real profiles have.
    uhot = rng.sample(ufuncs, min(400, len(ufuncs)))
    khot = rng.sample(kfuncs, 2000)
    uw = [1.0 / (i + 1) for i in range(len(uhot))]
    kw = [1.0 / (i + 1) for i in range(len(khot))]
    ubins, uarcs, kbins, karcs = {}, {}, {}, {}

    def pc_in(f):
        return (f + 2 * rng.randrange(0, 32)) & ~1

    # Call chains, innermost first, with fixed return addresses: only the sampled pc varies.
    user_chains = [
        [pc_in(bias + f) for f in rng.choices(uhot, uw, k=rng.randrange(3, 9))]
        for _ in range(5000)
    ]
    kernel_chains = [
        [pc_in(f) for f in rng.choices(khot, kw, k=rng.randrange(3, 9))] for _ in range(5000)
    ]
    for _ in range(samples):
        pcs = rng.choice(user_chains)
        edges = {(pcs[i + 1] + 5, pcs[i]) for i in range(len(pcs) - 1)}
        for e in edges:
            uarcs[e] = uarcs.get(e, 0) + 1
        if rng.random() < 0.6:
            pc = pc_in(pcs[0])
            ubins[pc] = ubins.get(pc, 0) + 1
        else:
            kchain = rng.choice(kernel_chains)
            pc = pc_in(kchain[0])
            kbins[pc] = kbins.get(pc, 0) + 1
            kedges = {(kchain[i + 1] + 5, kchain[i]) for i in range(len(kchain) - 1)}
            kedges.add((pcs[0], kchain[-1]))  # the boundary arc
            for e in kedges:
                karcs[e] = karcs.get(e, 0) + 1
    boot = "0b0e0c0d"
    with open(os.path.join(out_dir, "kallsyms." + boot), "w") as f:
        f.write(kallsyms)
    with open(os.path.join(out_dir, "gmon.out.%du.%s" % (PID, COMM)), "wb") as f:
        f.write(gmon(ubins, uarcs))
    with open(os.path.join(out_dir, "gmon.out.%dk.%s" % (PID, COMM)), "wb") as f:
        f.write(gmon(kbins, karcs))
    start = LIBC_BASE + seg_vaddr
    info = f"""pkgprof-info 1.0

[process]
pid = {PID}
comm = "{COMM}"
argv = ["bench"]

[sampling]
event = "cpu-clock"
frequency = {HZ}
arcs = sampled-edges

[kernel]
symbols-file = "kallsyms.{boot}"

[mapping]
start = {start:#x}
end = {start + seg_size:#x}
offset = {seg_off:#x}
bias = {bias:#x}
path = "{LIBC}"
build-id = {libc_build_id()}
"""
    with open(os.path.join(out_dir, "gmon.out.%d.%s" % (PID, COMM)), "w") as f:
        f.write(info)


main()
