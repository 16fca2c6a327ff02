#!/usr/bin/env bash
# Regenerates README's latency examples from real runs: the fcntl latency profile of two
# processes contending for one lock (pkgprof --latency, and its plot), the same program alone
# against contending (pkgprof --latency-diff, and its overlaid plot), and the DeBox table of a
# pipe reader whose writer sleeps 5 ms between writes (pkgprof --blocking), with its sleeps in
# the off-CPU call graph (pkgprof --value=off-cpu). The plots go to
# docs/img/ (checked by rsvg-convert in crates/latency/tests/render.rs); the text replaces the
# blocks between README's `<!-- readme-latency:NAME -->` and `<!-- /readme-latency:NAME -->`
# lines.
#
#   bash benches/readme-latency.sh            (root; builds the release pkgmon and pkgprof)
#   PKGMON=... PKGPROF=... bash benches/readme-latency.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/benches/lib.sh"
find_pkgmon
work="$(mktemp -d /tmp/readme-latency.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cc -O2 -g -fno-omit-frame-pointer -o "$work/latency" "$root/crates/pkgprof-cli/tests/workloads/latency.c"
cd "$work"
# Every run counts in the kernel (the default); glibc's fcntl64 pushes before its `syscall`,
# and the copy of each call site's first call, unwound by pkgmon, names take_lock and
# drop_lock behind it.
"$pkgmon" -o alone --latency -- ./latency lock 200 1 alone.own 2>> pkgmon.log
"$pkgmon" -o contended --latency -- ./latency lock 200 2 contended.own 2>> pkgmon.log
"$pkgmon" -o pipe --blocking -- ./latency pipe 200 pipe.own 2>> pkgmon.log
"$pkgprof" --latency --plot="$root/docs/img/latency-fcntl-contended.svg" --operation=fcntl contended
"$pkgprof" --latency-diff alone contended --plot="$root/docs/img/latency-fcntl-alone-vs-contended.svg" \
  --operation=fcntl
# The fcntl section of the contending processes' profile (the parent's: the launched pid).
parent="$(ls contended | sed -n 's/^gmon\.out\.\([0-9]*\)l\..*/\1/p' | sort -n | head -1)"
"$pkgprof" --latency --pid="$parent" contended | awk '/^fcntl:/ {on = 1} on && /^$/ {exit} on' > fcntl.txt
# The diff's table (the histograms it prints after are in the plot).
"$pkgprof" --latency-diff alone contended | awk '/^$/ {n++} n == 2 {exit} {print}' > diff.txt
reader="$(ls pipe | sed -n 's/^gmon\.out\.\([0-9]*\)l\..*/\1/p' | sort -n | head -1)"
# The calls that slept (the loader's one-off calls after them are left out).
"$pkgprof" --blocking --pid="$reader" pipe | python3 -c '
import re, sys
for line in sys.stdin:
    m = re.match(r"\s+\d+(\s+\S+){5}\s+(\d+)\s\s", line)
    if m and m.group(2) == "0":
        print("  ...")
        break
    print(line, end="")' > blocking.txt
# The same sleeps as the listing's off-CPU value: the call graph's entry of the reader.
"$pkgprof" --value=off-cpu -b -q --pid="$reader" pipe | python3 -c '
import sys
entries = sys.stdin.read().split("-----------------------------------------------\n")
for e in entries:
    if any(l.startswith("[") and "u:reader [" in l for l in e.splitlines()):
        print(e, end="")
        break
else:
    sys.exit("no reader in the off-CPU call graph")' > offcpu.txt
python3 - "$root/README.md" fcntl.txt diff.txt blocking.txt offcpu.txt <<'PY'
import re, sys
readme = sys.argv[1]
parts = {"fcntl": sys.argv[2], "diff": sys.argv[3], "blocking": sys.argv[4], "offcpu": sys.argv[5]}
text = open(readme).read()
for name, path in parts.items():
    body = open(path).read().rstrip("\n")
    block = re.compile(rf"(<!-- readme-latency:{name} -->\n```\n).*?(\n```\n<!-- /readme-latency:{name} -->)", re.S)
    if not block.search(text):
        sys.exit(f"README.md has no readme-latency:{name} block")
    text = block.sub(lambda m: m.group(1) + body + m.group(2), text)
open(readme, "w").write(text)
PY
echo "readme-latency: README.md and docs/img/latency-fcntl-*.svg rewritten from $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
