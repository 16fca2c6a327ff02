#!/usr/bin/env bash
# Side by side: GNU gprof -b against pkgprof -b on generated programs of N functions.
# For each N it generates the program (benches/gen-program.py), builds it with gcc -pg, runs it,
# checks that both reports are byte-identical, then times both with hyperfine and records peak
# memory with /usr/bin/time. Usage: bash benches/compare-gprof.sh [N...]   (default 20000 60000)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
command -v hyperfine >/dev/null || apt-get install -y -qq hyperfine >/dev/null
cargo build -q --release -p pkgprof-cli --manifest-path "$root/Cargo.toml"
pkgprof="$root/target/release/pkgprof"
work="${WORK:-$(mktemp -d)}"
echo "work dir: $work"
for n in "${@:-20000 60000}"; do
  for n in $n; do
    dir="$work/n$n"; mkdir -p "$dir"; cd "$dir"
    if [ ! -f gmon.out ]; then
      python3 "$root/benches/gen-program.py" "$n" 1 > prog.c
      gcc -pg -O0 -o prog prog.c
      ./prog
    fi
    gprof -b prog gmon.out > gprof.txt
    "$pkgprof" -b prog gmon.out > pkgprof.txt
    cmp gprof.txt pkgprof.txt || { echo "N=$n: outputs differ" >&2; exit 1; }
    echo "N=$n: outputs identical ($(wc -l < gprof.txt) lines)"
    for tool in gprof "$pkgprof"; do
      /usr/bin/time -f "$(basename "$tool") peak RSS %M KiB" "$tool" -b prog gmon.out > /dev/null
    done
    hyperfine -w 1 -r 5 -N "gprof -b prog gmon.out" "$pkgprof -b prog gmon.out"
  done
done
