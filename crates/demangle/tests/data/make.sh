#!/bin/sh
# Regenerates the demangling corpus and the committed sample.
#
# Oracle: `c++filt -i` (binutils 2.40, no "verbose" expansions: std::ostream, not std::basic_ostream<...>), which prints exactly what
# GNU gprof 2.40 prints for a symbol (checked name by name against `gprof -b -z -p`
# with and without --no-demangle on a C++ -pg program; see README).
#
# Usage: make.sh [OUTDIR]   (default: a temporary directory; prints its path)
#   OUTDIR/corpus.txt  every distinct _Z symbol from /usr/lib/x86_64-linux-gnu/*.so*
#   OUTDIR/oracle.txt  c++filt -i's output for each line of corpus.txt
#   OUTDIR/rust.txt, rust-oracle.txt  the same for the Rust v0 names of the stable toolchain
# and rewrites sample.tsv here: every 25th corpus name and every 100th Rust name
# (sorted, deterministic) plus
# all names of the local test program, as "mangled<TAB>demangled" lines.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(mktemp -d)}
mkdir -p "$out"
LC_ALL=C; export LC_ALL
for f in /usr/lib/x86_64-linux-gnu/*.so*; do
    [ -f "$f" ] || continue
    nm -D --defined-only "$f" 2>/dev/null || true
    nm "$f" 2>/dev/null || true
done | awk '{print $NF}' | sed 's/@.*//' | grep '^_Z' | sort -u > "$out/corpus.txt"
c++filt -i < "$out/corpus.txt" > "$out/oracle.txt"
# Rust v0 names, if a Rust toolchain is installed: its compiler library exports thousands.
for f in "$HOME"/.rustup/toolchains/stable-*/lib/librustc_driver-*.so; do
    [ -f "$f" ] || continue
    nm -D --defined-only "$f" | awk '{print $NF}' | grep '^_R' || true
done | sort -u > "$out/rust.txt"
c++filt -i < "$out/rust.txt" > "$out/rust-oracle.txt"
{
    awk 'NR % 25 == 1' "$out/corpus.txt"
    awk 'NR % 100 == 1' "$out/rust.txt"
    if [ -f "$here/prog.txt" ]; then cat "$here/prog.txt"; fi
} | sort -u > "$out/sample-names.txt"
c++filt -i < "$out/sample-names.txt" | paste "$out/sample-names.txt" - > "$here/sample.tsv"
wc -l "$out/corpus.txt" "$here/sample.tsv" >&2
echo "$out"
