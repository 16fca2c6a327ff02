#!/usr/bin/env bash
# What `pkgmon --async` costs on a loopback TCP stream, beside the same tracepoints recorded
# by `perf record -e` and beside sampling alone:
#
#   bash benches/async-overhead.sh              (RUNS=5 runs of SECONDS_PER_RUN=3 s each, interleaved)
#   PKGMON=target/release/pkgmon bash benches/async-overhead.sh
#   RATE=125000000 bash benches/async-overhead.sh   (the stream paced at 1 Gbit/s)
#
# The workload is crates/pkgprof-cli/tests/workloads/netpair.c in `stream` mode: a sender
# writes 64 KiB at a time to a reader over loopback TCP for SECONDS and says how many bytes
# went through (with RATE, paced at RATE bytes/s by the socket: then the CPU time, not the
# throughput, is the cost). Each configuration runs it RUNS times, the configurations interleaved; the
# table gives the median throughput, the median CPU time of the whole command (profiler and
# workload, user + system, /usr/bin/time), what that adds to the bare run's, that added CPU
# as a multiple of sampling alone's (the question: does the ring path stay within 2x of
# sampling alone?), and the records lost (pkgmon's count; perf's "lost" chunks). The configurations:
#
#   bare            the workload alone
#   pkgmon -a       CPU-wide sampling (what --async samples), no tracepoints
#   pkgmon --async  sampling plus the attribution's tracepoints
#   perf -e TPs     perf record -a with the same tracepoints and filters, no sampling
#
# Needs root, perf and cc. The machine is shared: the load average is printed with the table.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-5}"
seconds="${SECONDS_PER_RUN:-3}"
stack="${STACK_SIZE:-8192}"
. "$root/benches/lib.sh"
needs perf cc /usr/bin/time
find_pkgmon
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O2 -fno-omit-frame-pointer -o "$work/netpair" "$root/crates/pkgprof-cli/tests/workloads/netpair.c"

# The tracepoints of collect-perf's asynchronous.rs, with its filters.
tps=(-e irq:softirq_entry --filter 'vec == 3' -e irq:softirq_exit --filter 'vec == 3'
     -e irq:irq_handler_entry -e irq:irq_handler_exit -e net:netif_receive_skb -e tcp:tcp_probe
     -e sock:sk_data_ready -e skb:skb_copy_datagram_iovec
     -e sock:sock_recv_length --filter 'ret > 0'
     -e sock:sock_send_length --filter 'protocol == 6 && ret >= 0')

# run NAME COMMAND...: one run; appends "NAME bytes/s cpu-s lost" to $work/results.
run() {
  local name="$1"; shift
  rm -rf "$work/m" "$work/m.old" "$work/perf.data"
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
    cat "$work/err" >&2; exit 1; }
  local bytes cpu lost
  bytes=$(awk '$1 == "bytes" {print $2}' "$work/pids")
  cpu=$(awk '{print $1 + $2}' "$work/time")
  lost=$(grep -oE '([0-9]+) records lost|lost ([0-9]+) chunks|, ([0-9]+) lost,' "$work/err" \
    | grep -oE '[0-9]+' | head -1 || true)
  echo "$name $(awk -v b="$bytes" -v s="$seconds" 'BEGIN {printf "%.0f", b / s}') $cpu ${lost:-0}" \
    >>"$work/results"
}

load_before="$(uptime | sed 's/.*load average: //')"
workload=("$work/netpair" stream "$seconds" "$work/pids" ${RATE:+"$RATE"})
for _ in $(seq "$runs"); do
  run bare "${workload[@]}"
  run "pkgmon -a" "$pkgmon" -a --stack-size "$stack" -o "$work/m" -- "${workload[@]}"
  run "pkgmon --async" "$pkgmon" --async --stack-size "$stack" -o "$work/m" -- "${workload[@]}"
  run "perf -e TPs" perf record -q -a -o "$work/perf.data" "${tps[@]}" -- "${workload[@]}"
done

echo "loopback TCP stream${RATE:+ paced at $RATE bytes/s}, $seconds s per run, median of $runs; pkgmon --stack-size $stack; load average before: $load_before, after: $(uptime | sed 's/.*load average: //')"
echo
echo "| configuration | MB/s | vs bare | CPU s (command, user+sys) | CPU added to bare | added / sampling alone's | records lost |"
echo "|---|---|---|---|---|---|---|"
python3 - "$work/results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    *name, rate, cpu, lost = line.split()
    rows.setdefault(" ".join(name), []).append((float(rate), float(cpu), int(lost)))
med = lambda name, i: statistics.median(r[i] for r in rows[name])
bare, bare_cpu = med("bare", 0), med("bare", 1)
sampling = med("pkgmon -a", 1) - bare_cpu
for name, rs in rows.items():
    rate, cpu = med(name, 0), med(name, 1)
    lost = max(r[2] for r in rs)
    added = cpu - bare_cpu
    ratio = f"{added / sampling:.2f}x" if name != "bare" and sampling > 0 else ""
    print(f"| {name} | {rate / 1e6:.0f} | {rate / bare:.2f}x | {cpu:.2f} | {added:+.2f} | {ratio} | {lost} |")
EOF
