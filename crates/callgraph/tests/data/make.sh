#!/usr/bin/env bash
# Regenerates the golden cases of the callgraph crate. Needs gcc and GNU gprof on PATH.
#
# cases/<name>/cmd holds gprof's arguments (run inside cases/<name>/), cases/<name>/stdout what
# gprof printed. Programs are compiled from src/ with gcc -pg and run to get real glibc gmon
# files; their timings vary from run to run, so regenerating changes the numbers.
#
# fixtures-flat/<name>.stdout is `gprof -b -p` on the shared fixtures under
# fixtures/programs/out/<name>/ (which this script does not rebuild).
#
# cases/diff-* come from the differential example (examples/flat_diff.rs) and are not rebuilt
# here; their cmd and stdout are re-recorded.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cases="$here/cases"
fixtures="$here/../../../../fixtures/programs/out"
mkdir -p "$cases" "$here/fixtures-flat"

build() { # name source flags... ; runs the program once per extra argument list in RUNS
    local name="$1" src="$2"
    shift 2
    local dir="$cases/$name" prog="${src%.c}"
    rm -rf "$dir"
    mkdir -p "$dir"
    (cd "$here/src" && gcc "$@" -o "$dir/$prog" "$src")
}

run() { # dir args... : run the program in dir, gmon.out stays there
    local dir="$cases/$1"
    shift
    (cd "$dir" && "./$(ls "$dir" | grep -v -e '\.' -e cmd -e stdout | head -1)" "$@")
}

build leaves-pie leaves.c -pg -O0
run leaves-pie
echo "-b -p leaves gmon.out" >"$cases/leaves-pie/cmd"

build leaves-nopie leaves.c -pg -O0 -no-pie
run leaves-nopie
echo "-b -p leaves gmon.out" >"$cases/leaves-nopie/cmd"

build leaves-o2 leaves.c -pg -O2
run leaves-o2
mv "$cases/leaves-o2/gmon.out" "$cases/leaves-o2/gmon.1"
run leaves-o2 2
mv "$cases/leaves-o2/gmon.out" "$cases/leaves-o2/gmon.2"
echo "-b -p leaves gmon.1" >"$cases/leaves-o2/cmd"

mkdir -p "$cases/leaves-o2-sum" "$cases/leaves-pie-z"
echo "-b -p ../leaves-o2/leaves ../leaves-o2/gmon.1 ../leaves-o2/gmon.2" >"$cases/leaves-o2-sum/cmd"
echo "-b -p -z ../leaves-pie/leaves ../leaves-pie/gmon.out" >"$cases/leaves-pie-z/cmd"

build clones-o2 clones.c -pg -O2
run clones-o2
echo "-b -p -z clones gmon.out" >"$cases/clones-o2/cmd"

build constprop-o2 constprop.c -pg -O2
run constprop-o2
echo "-b -p -z constprop gmon.out" >"$cases/constprop-o2/cmd"

rm -rf "$cases/bigendian"
mkdir -p "$cases/bigendian"
python3 "$here/src/bigendian.py" "$cases/bigendian"
echo "-b -p -z img gmon.out" >"$cases/bigendian/cmd"

for dir in "$cases"/*/; do
    # shellcheck disable=SC2046 # the arguments are words by design
    (cd "$dir" && gprof $(cat cmd) >stdout)
done

# Images gprof refuses: code outside `.text`, and a stripped one.
(cd "$here/errors" && gcc -nostdlib -static -Wl,--build-id=none -o notext notext.s &&
    gcc -nostdlib -static -Wl,--build-id=none -s -o stripped stripped.s)

for dir in "$fixtures"/*/; do
    name="$(basename "$dir")"
    prog="${name%-*}"
    (cd "$dir" && gprof -b -p "$prog" gmon.out) >"$here/fixtures-flat/$name.stdout"
done

# graph-cases/<name>/ come from the differential example in `report` mode (img.s is the
# image's source, linked with `gcc -nostdlib -static -no-pie -Wl,--build-id=none`); only their
# expected stdout is re-recorded here.
for dir in "$here"/graph-cases/*/; do
    # shellcheck disable=SC2046 # cmd holds the argument list
    (cd "$dir" && gprof $(cat cmd) >stdout)
done

{
    echo "gcc: $(gcc --version | head -1)"
    echo "gprof: $(gprof --version | head -1)"
    echo "glibc: $(ldd --version | head -1)"
} >"$here/VERSIONS"
