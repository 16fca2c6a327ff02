#!/usr/bin/env bash
# Peak resident memory of `pkgprof --dump` on damaged and hostile gmon files: every truncation
# of a real profile, single-bit flips, and headers that claim up to 4 GiB. Prints the largest
# peak seen (KiB) and the file that caused it. Usage: bash benches/peak-memory.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build -q --release -p pkgprof-cli --manifest-path "$root/Cargo.toml"
bin="$root/target/release/pkgprof"
src="$root/fixtures/programs/out/cycle-pie/gmon.out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$src" "$work" <<'PY'
import struct, sys
src, out = sys.argv[1], sys.argv[2]
data = open(src, 'rb').read()
n = 0
def put(b):
    global n
    open(f"{out}/case{n:05d}", 'wb').write(b); n += 1
for cut in range(0, len(data), 7):
    put(data[:cut])
for bit in range(0, 64 * 8):
    d = bytearray(data); d[bit // 8] ^= 1 << (bit % 8); put(bytes(d))
hdr = b"gmon" + struct.pack("<I", 1) + bytes(12)
put(hdr + b"\0" + bytes(16) + struct.pack("<II", 0xFFFFFFFF, 100) + b"seconds".ljust(15, b"\0") + b"s")
put(hdr + b"\2" + struct.pack("<I", 0xFFFFFFFF) + bytes(32))
put(struct.pack("<QQI", 0, 0x1000, 0xFFFFFFFF) + bytes(20))
put(struct.pack("<QQIII", 0, 0x1000, 0xFFFFFFFF, 0x51879, 100) + bytes(12))
PY
max=0; worst=""; count=0
for f in "$work"/case*; do
  /usr/bin/time -f '%M' -o "$work/rss" "$bin" --dump --layout 64le "$f" > /dev/null 2>&1 || true
  kib=$(tail -n 1 "$work/rss")
  count=$((count + 1))
  if [ "$kib" -gt "$max" ]; then max=$kib; worst=$f; fi
done
echo "files: $count  peak RSS: ${max} KiB ($(basename "$worst"))"
