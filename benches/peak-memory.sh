#!/usr/bin/env bash
# Peak resident memory and time of `pkgprof` on hostile and special inputs (issue 8): damaged
# and absurd gmon files, special files (FIFO, /dev/zero, /dev/urandom, a directory) as every
# input (image, gmon file, @FILE, measurement files, objects an info file names, -A sources),
# and blow-up inputs (-w 999999999999, @FILEs naming each other, a 1M-bin kernel histogram
# over 1 GiB, a 1M-line kallsyms, a 1.5 GB sparse file, sparse measurement files, a manifest of 200,000 names, a
# perf.data whose feature section claims 1 GiB over holes, perf.data whose compressed record
# inflates to 200 or 300 MiB). Each run gets 20 s; prints one line
# per case and the largest peak, and exits 1 if any run hung or went over the budget (64 MiB).
# One case is real content, not a blow-up: 256K kernel functions all sampled, each listed; its
# budget adds 1 KiB per function listed (the gprof engine's cost, and GNU gprof's, is about
# 0.7 KiB a function).
# Run as root, it also runs the collector under a UDP flood, `pkgmon --async` on loopback
# datagrams nobody reads and that a reader reads one a millisecond of (tests/workloads/
# netpair.c `flood`, 10 s each, as fast as the sender sends): pkgmon keeps only what can still
# be attributed (README "Security"); as another user it says it skipped them.
#
# Usage: bash benches/peak-memory.sh [BUDGET_KIB]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
budget=${1:-65536}
cargo build -q --release -p pkgprof-cli --manifest-path "$root/Cargo.toml"
bin="$root/target/release/pkgprof"
prog="$root/fixtures/programs/out/cycle-pie"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 - "$prog/gmon.out" "$work" <<'PY'
import os, struct, sys
src, out = sys.argv[1], sys.argv[2]
data = open(src, 'rb').read()
os.makedirs(f"{out}/damaged")
n = 0
def put(b):
    global n
    open(f"{out}/damaged/case{n:05d}", 'wb').write(b); n += 1
for cut in range(0, len(data), 7):
    put(data[:cut])
for bit in range(0, 64 * 8):
    d = bytearray(data); d[bit // 8] ^= 1 << (bit % 8); put(bytes(d))
hdr = b"gmon" + struct.pack("<I", 1) + bytes(12)
put(hdr + b"\0" + bytes(16) + struct.pack("<II", 0xFFFFFFFF, 100) + b"seconds".ljust(15, b"\0") + b"s")
put(hdr + b"\2" + struct.pack("<I", 0xFFFFFFFF) + bytes(32))
put(struct.pack("<QQI", 0, 0x1000, 0xFFFFFFFF) + bytes(20))
put(struct.pack("<QQIII", 0, 0x1000, 0xFFFFFFFF, 0x51879, 100) + bytes(12))

# A measurement whose kernel profile has 1M bins (every one sampled) over 1 GiB of kernel text,
# and whose snapshot has 1M lines.
def measurement(d, bins, symbols, info_extra=""):
    os.makedirs(d)
    low = 0xffffffff80000000
    open(f"{d}/gmon.out.7.x", "w").write(
        'pkgprof-info 1.1\n\n[process]\npid = 7\ncomm = "x"\n\n[kernel]\n'
        'symbols-file = "kallsyms.00000001"\n' + info_extra + '\n[end]\n')
    rec = b"\0" + struct.pack("<QQII", low, low + (1 << 30), bins, 100) + b"seconds".ljust(15, b"\0") + b"s"
    open(f"{d}/gmon.out.7k.x", "wb").write(hdr + (rec + struct.pack("<H", 1) * bins if bins else b""))
    open(f"{d}/gmon.out.7u.x", "wb").write(hdr)
    step = (1 << 30) // max(symbols, 1)
    with open(f"{d}/kallsyms.00000001", "w") as f:
        for i in range(symbols):
            f.write("%016x T function_number_%d\n" % (low + i * step, i))
measurement(f"{out}/kernel-1M-bins", 1 << 20, 1024)
measurement(f"{out}/kallsyms-1M-lines", 0, 1 << 20)
measurement(f"{out}/both", 1 << 20, 1 << 18)
# An info file naming objects that are special files or outside the directory.
measurement(f"{out}/objects", 0, 16,
    '\n[mapping]\nstart = 0x1000\nend = 0x2000\npath = "%s/fifo"\n'
    '\n[mapping]\nstart = 0x3000\nend = 0x4000\npath = "/dev/zero"\n'
    '\n[mapping]\nstart = 0x5000\nend = 0x6000\npath = "../../../../etc/passwd"\n' % out)
# Sparse measurement files: a kernel profile claiming 4G bins, 8 GiB of holes after its
# header; a manifest listing a 20 GiB sparse snapshot with its size.
measurement(f"{out}/sparse-kernel", 0, 16)
rec = (b"\0" + struct.pack("<QQII", 0xffffffff80000000, 0xffffffffc0000000, 0xfffffff0, 100)
       + b"seconds".ljust(15, b"\0") + b"s")
with open(f"{out}/sparse-kernel/gmon.out.7k.x", "wb") as f:
    f.write(hdr + rec); f.truncate(len(hdr) + len(rec) + 2 * 0xfffffff0)
measurement(f"{out}/sparse-listed", 0, 16)
with open(f"{out}/sparse-listed/kallsyms.00000002", "wb") as f:
    f.truncate(20 << 30)
import hashlib
def manifest(d, entries):
    with open(f"{d}/manifest.sha256", "w") as m:
        m.write("# pkgprof-manifest 1.0\n")
        for name, size, sha in entries:
            m.write(f"# size {size} {name}\n{sha}  {name}\n")
        m.write(f"# end {len(entries)}\n")
def entry(d, n):
    data = open(f"{d}/{n}", "rb").read()
    return (n, len(data), hashlib.sha256(data).hexdigest())
listed = [entry(f"{out}/sparse-listed", n)
          for n in ("gmon.out.7.x", "gmon.out.7k.x", "gmon.out.7u.x", "kallsyms.00000001")]
manifest(f"{out}/sparse-listed", listed + [("kallsyms.00000002", 20 << 30, "0" * 64)])
# perf.data whose feature section claims 1 GiB over holes (it was read whole).
h = b"PERFILE2" + b"".join(struct.pack("<Q", v) for v in (104, 136, 104, 0, 104, 0, 0, 0))
with open(f"{out}/features.perf.data", "wb") as f:
    f.write(h + bytes([4]) + bytes(31) + struct.pack("<QQ", 4096, 1 << 30))
    f.truncate(4096 + (1 << 30))
# perf.data whose one compressed record (perf record -z) inflates to 200 MiB and 300 MiB (past
# the 256 MiB one may) of 2056-byte records, in zstd RLE blocks (4 bytes per 128 KiB), and to
# 200 MiB of 8-byte records (zstd -19, if installed). Each record was inflated whole, then all
# its records held for sorting.
def perf_data(path, data):
    rec = lambda t, body: struct.pack("<IHH", t, 0, 8 + len(body)) + body
    sample = rec(9, struct.pack("<QIIQ", 0x401000, 42, 42, 1000))
    attr = struct.pack("<IIQQQQQIIQ", 1, 64, 0, 1000000, 7, 0, 0, 0, 0, 0) + bytes(16)
    data = sample + rec(81, data) + sample
    with open(path, "wb") as f:
        f.write(b"PERFILE2" + struct.pack("<8Q", 104, 80, 104, 80, 184, len(data), 0, 0)
                + bytes(32) + attr + data)
def rle(n):
    z, left = bytes([0x28, 0xb5, 0x2f, 0xfd, 0, 0x38]), n
    while left:
        k = min(left, 128 << 10); left -= k
        z += struct.pack("<I", (left == 0) | 2 | (k << 3))[:3] + b"\x08"
    return z
perf_data(f"{out}/compressed-200M.perf.data", rle(200 << 20))
perf_data(f"{out}/compressed-300M.perf.data", rle(300 << 20))
import shutil, subprocess
if shutil.which("zstd"):
    z = subprocess.run(["zstd", "-19", "--no-check", "-c"], input=struct.pack("<IHH", 68, 0, 8)
                       * (200 << 17), stdout=subprocess.PIPE, check=True).stdout
    perf_data(f"{out}/compressed-8B.perf.data", z)
# An object, named by its path in an info file, whose symbol table claims 2.4 GiB over holes.
b = bytearray(open(f"{src.rsplit('/', 1)[0]}/cycle", "rb").read())
shoff, = struct.unpack_from("<Q", b, 0x28)
shnum, shstrndx = struct.unpack_from("<HH", b, 0x3c)
names = struct.unpack_from("<Q", b, shoff + shstrndx * 64 + 0x18)[0]
region = (len(b) + 4095) // 4096 * 4096
for i in range(shnum):
    h = shoff + i * 64
    at = names + struct.unpack_from("<I", b, h)[0]
    if b[at:b.index(0, at)] == b".symtab":
        struct.pack_into("<QQ", b, h + 0x18, region, 24 * (100 << 20))
with open(f"{out}/holey-object", "wb") as f:
    f.write(b); f.truncate(region + 24 * (100 << 20))
measurement(f"{out}/holey-object-m", 0, 16,
    '\n[mapping]\nstart = 0x1000\nend = 0x7000\nbias = 0x0\npath = "%s/holey-object"\n' % out)
open(f"{out}/holey-object-m/gmon.out.7u.x", "wb").write(
    hdr + b"\0" + struct.pack("<QQII", 0x1000, 0x7000, 3, 100) + b"seconds".ljust(15, b"\0") + b"s"
    + struct.pack("<HHH", 1, 1, 1))
# A kernel profile of 200,000 empty histograms, each at another rate (a warning each: 30 s).
measurement(f"{out}/rates", 0, 16)
with open(f"{out}/rates/gmon.out.7k.x", "wb") as f:
    f.write(hdr)
    for rate in range(1, 200001):
        f.write(b"\0" + struct.pack("<QQII", 0xffffffff80000000, 0xffffffff80000000, 0, rate)
                + b"seconds".ljust(15, b"\0") + b"s")
# A manifest of 200,000 names, none there (each was looked up among all before it: 57 s).
measurement(f"{out}/many-names", 0, 16)
manifest(f"{out}/many-names", [(f"gmon.out.{i}k.y", 0, "0" * 64) for i in range(200000)])
open(f"{out}/objects/gmon.out.7u.x", "wb").write(
    hdr + b"\0" + struct.pack("<QQII", 0x1000, 0x7000, 3, 100) + b"seconds".ljust(15, b"\0") + b"s"
    + struct.pack("<HHH", 1, 1, 1))
PY
mkfifo "$work/fifo"
mkdir "$work/dir"
truncate -s 1500M "$work/sparse"
# Measurements whose files are special: a FIFO as the kallsyms snapshot, /dev/zero as the
# user profile, /dev/urandom as the info file.
for what in kallsyms gmon info; do
  d="$work/special-$what"; cp -r "$work/objects" "$d"
  case $what in
    kallsyms) rm "$d/kallsyms.00000001"; mkfifo "$d/kallsyms.00000001" ;;
    gmon) rm "$d/gmon.out.7u.x"; ln -s /dev/zero "$d/gmon.out.7u.x" ;;
    info) rm "$d/gmon.out.7.x"; ln -s /dev/urandom "$d/gmon.out.7.x" ;;
  esac
done
# -A with the program's source replaced by a FIFO (found by base name through -I).
mkdir "$work/src"; mkfifo "$work/src/cycle.c"

max=0; worst=""; failed=0; count=0
run() { # name, args... (CASE_BUDGET_KIB in the environment overrides the budget for one run)
  local name=$1; shift
  local status=0 limit=${CASE_BUDGET_KIB:-$budget}
  /usr/bin/time -f '%M %e' -o "$work/rss" timeout 20 "$bin" "$@" > /dev/null 2>"$work/err" || status=$?
  local kib secs; read -r kib secs < <(tail -n 1 "$work/rss")
  count=$((count + 1))
  if [ "$kib" -gt "$max" ] && [ -z "${CASE_BUDGET_KIB:-}" ]; then max=$kib; worst=$name; fi
  local verdict=ok
  if [ "$status" -eq 124 ]; then verdict=HUNG; failed=1
  elif [ "$kib" -gt "$limit" ]; then verdict="OVER BUDGET"; failed=1; fi
  if [ "$name" != damaged ]; then
    printf '%-34s %8s KiB %6s s  exit %-3s %s\n' "$name" "$kib" "$secs" "$status" "$verdict"
  elif [ "$verdict" != ok ]; then
    printf '%-34s %8s KiB %6s s  exit %-3s %s\n' "damaged $*" "$kib" "$secs" "$status" "$verdict"
  fi
}
for f in "$work"/damaged/case*; do run damaged --dump --dump-layout=64le "$f"; done
echo "damaged gmon files: $(ls "$work/damaged" | wc -l) runs"
for special in "$work/fifo" /dev/zero /dev/urandom "$work/dir" "$work/sparse"; do
  tag=$(basename "$special")
  run "image = $tag" -b "$special" "$prog/gmon.out"
  run "gmon = $tag" -b "$prog/cycle" "$special"
  run "gmon = $tag (--dump)" --dump --dump-layout=64le "$special"
  run "@FILE = $tag" "@$special" -b "$prog/cycle" "$prog/gmon.out"
done
run "-w 999999999999" -b -w 999999999999 "$prog/cycle" "$prog/gmon.out"
# Response files naming each other: ten, each naming the next ten times (10^9 words at depth 9;
# 20 s and 251 MiB, still going, before gprof's limit of 2,000 @-files), and one naming itself.
mkdir "$work/at"; for i in 0 1 2 3 4 5 6 7 8; do
  for _ in 1 2 3 4 5 6 7 8 9 10; do printf '@%s ' "$work/at/f$((i + 1))"; done > "$work/at/f$i"
done; echo -b > "$work/at/f9"; echo "-b @$work/at/self" > "$work/at/self"
run "@FILE: ten naming the next ten times" "@$work/at/f0"
run "@FILE: naming itself" "@$work/at/self"
run "-A source = fifo" -A -I "$work/src" "$prog/cycle" "$prog/gmon.out"
run "--pid: kernel gmon of 1M bins/1 GiB" -b --pid 7 "$work/kernel-1M-bins"
run "--pid: kallsyms of 1M lines" -b --pid 7 "$work/kallsyms-1M-lines"
CASE_BUDGET_KIB=$((budget + 262144)) \
  run "--pid: 256K functions listed (content)" -b --pid 7 "$work/both"
run "--pid: objects fifo,/dev/zero,.." -b --pid 7 "$work/objects"
run "--pid: kernel gmon, 8 GiB of holes" -b --pid 7 "$work/sparse-kernel"
run "--pid: manifest lists 20 GiB sparse" -b --pid 7 "$work/sparse-listed"
run "--pid: manifest of 200,000 names" -b --pid 7 "$work/many-names"
run "perf.data: 1 GiB feature over holes" -b --system "$work/features.perf.data"
run "perf.data: zstd record of 200 MiB" -b --system "$work/compressed-200M.perf.data"
run "perf.data: zstd record of 300 MiB" -b --system "$work/compressed-300M.perf.data"
if [ -f "$work/compressed-8B.perf.data" ]; then
  run "perf.data: zstd, 200 MiB of 8 B recs" -b --system "$work/compressed-8B.perf.data"
fi
run "--pid: object's symbols over holes" -b --pid 7 "$work/holey-object-m"
run "--pid: histograms at 200,000 rates" -b --pid 7 "$work/rates"
for what in kallsyms gmon info; do
  run "--pid: $what is special" -b --pid 7 "$work/special-$what"
done
if [ "$(id -u)" -eq 0 ]; then
  cc -O2 -o "$work/netpair" "$root/crates/pkgprof-cli/tests/workloads/netpair.c"
  pkgprof=$bin; bin="$root/target/release/pkgmon"
  run "pkgmon --async: UDP flood, unread" --async -o "$work/flood" -- \
    "$work/netpair" flood 10 "$work/flood.pids"
  run "pkgmon --async: flood, 1 read/ms" --async -o "$work/flood-read" -- \
    "$work/netpair" flood 10 "$work/flood-read.pids" 1000
  echo "datagrams sent: $(grep sent "$work/flood.pids"), $(grep sent "$work/flood-read.pids")"
  bin=$pkgprof
else
  echo "pkgmon --async flood cases skipped: they need root (CPU-wide sampling, tracepoints)"
fi
echo "runs: $count  largest peak RSS but the content case: ${max} KiB ($worst); budget ${budget} KiB"
exit $failed
