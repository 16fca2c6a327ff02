#!/usr/bin/env bash
# Side by side: GNU gprof -b against pkgprof -b on programs of N functions.
# For each N it generates the program (benches/gen-program.py), builds it with gcc -pg, runs it
# (or, with GENERATED=1, writes the benches' synthetic image and gmon.out instead, which takes
# seconds even for 240,000 functions), checks that both reports are byte-identical, records
# CPU time (user+sys) and peak memory with /usr/bin/time (RUNS runs each, default 3; the CPU
# time is the median), then times wall clock with hyperfine unless CPU_ONLY=1 (wall clock is
# only meaningful on a quiet machine). SKIP_GPROF=1 times pkgprof alone.
# Usage: [WORK=dir] bash benches/compare-gprof.sh [N...]   (default 20000 60000)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-3}"
cargo build -q --release -p pkgprof-cli --manifest-path "$root/Cargo.toml"
pkgprof="$root/target/release/pkgprof"
work="${WORK:-$(mktemp -d)}"
echo "work dir: $work; $(uptime)"

# Median user+sys seconds and the largest peak RSS of `runs` runs of "$@".
measure() {
  local times=() rss=0 out
  for _ in $(seq "$runs"); do
    out=$(/usr/bin/time -f '%U %S %M' "$@" 2>&1 >/dev/null | tail -n 1)
    read -r u s m <<<"$out"
    times+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')")
    [ "$m" -gt "$rss" ] && rss=$m
  done
  local median
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
  echo "cpu ${median} s, peak RSS $((rss / 1024)) MiB"
}

for n in "${@:-20000 60000}"; do
  for n in $n; do
    dir="$work/n$n${GENERATED:+-generated}"; mkdir -p "$dir"; cd "$dir"
    if [ -n "${GENERATED:-}" ]; then
      image=image
      [ -f gmon.out ] || cargo run -q --release --manifest-path "$root/Cargo.toml" \
        -p pkgprof-benches --example write_generated -- "$n" 1 "$dir"
    else
      image=prog
      if [ ! -f gmon.out ]; then
        python3 "$root/benches/gen-program.py" "$n" 1 > prog.c
        gcc -pg -O0 -o prog prog.c
        ./prog
      fi
    fi
    "$pkgprof" -b $image gmon.out > pkgprof.txt
    if [ -z "${SKIP_GPROF:-}" ]; then
      [ -f gprof.txt ] || gprof -b $image gmon.out > gprof.txt
      cmp gprof.txt pkgprof.txt || { echo "N=$n: outputs differ" >&2; exit 1; }
      echo "N=$n: outputs identical ($(wc -l < gprof.txt) lines)"
      echo "N=$n gprof:   $(measure gprof -b $image gmon.out)"
    fi
    echo "N=$n pkgprof: $(measure "$pkgprof" -b $image gmon.out)"
    if [ -z "${CPU_ONLY:-}" ]; then
      if [ -z "${SKIP_GPROF:-}" ]; then
        hyperfine -w 1 -r 5 -N "gprof -b $image gmon.out" "$pkgprof -b $image gmon.out"
      else
        hyperfine -w 1 -r 10 -N "$pkgprof -b $image gmon.out"
      fi
    fi
  done
done
