#!/bin/bash
# Report time of `pkgprof --pid` on a synthetic measurement of about 1,000,000 samples (this
# machine's libc and /proc/kallsyms as the symbol tables; see gen-seamless.py), and of GNU
# gprof on the same merged profile (`--merge-out`). Prints CPU times: the machine is shared.
#
# usage: benches/seamless-bench.sh [SAMPLES]   (needs root for /proc/kallsyms addresses)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
samples=${1:-1000000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$root/benches/gen-seamless.py" "$dir/m" "$samples" 1
cargo build --release -q -p pkgprof-cli --manifest-path "$root/Cargo.toml"
pkgprof="$root/target/release/pkgprof"
ls -l "$dir/m"
cd "$dir/m"
for args in "-b -p" "-b -q" "-b"; do
    /usr/bin/time -f "pkgprof $args --pid 4242: %e s wall, %U s user, %S s sys, %M KB max RSS" \
        "$pkgprof" $args --pid 4242 . >/dev/null
done
"$pkgprof" -b --pid 4242 --merge-out "$dir/merged.out" . | sed '1,/\f/d' >"$dir/ours.txt"
/usr/bin/time -f "gprof -b on the merged files: %e s wall, %U s user, %S s sys, %M KB max RSS" \
    gprof -b "$dir/merged.out.elf" "$dir/merged.out" >"$dir/gprof.txt"
cmp -s "$dir/ours.txt" "$dir/gprof.txt" && echo "listings identical ($(wc -l <"$dir/gprof.txt") lines)"
