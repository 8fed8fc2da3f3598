#!/usr/bin/env bash
# Time `ddshark dissect` against `tshark` on the same capture and print the ratio.
# One run each, same machine, same file, output to /dev/null; both print one record
# per RTPS submessage. Usage: scripts/bench-dissect.sh [CAPTURE]
# Default capture: the Autoware mix made by `scripts/make-fixtures.sh --bench`
# ($BENCH_CAPTURE, scripts/lib.sh), else the largest fixture.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
file=${1:-$BENCH_CAPTURE}
[ -f "$file" ] || file=tests/pcaps/h_vlan_pcp/a.pcap
command -v tshark >/dev/null || { echo "bench-dissect: tshark is not installed (README setup installs it)" >&2; exit 1; }
cargo build --profile tuned -q -p ddshark
bin=target/tuned/ddshark
now() { date +%s%N; }
cat "$file" >/dev/null   # same page-cache state for every contender
t0=$(now); "$bin" dissect -q --format jsonl "$file" >/dev/null; t1=$(now)
"$bin" dissect -q --format text "$file" >/dev/null; t2=$(now)
tshark -n -r "$file" -Y rtps -T fields -e frame.number -e rtps.sm.id -e rtps.sm.wrEntityId \
  -e rtps.sm.seqNumber -e rtps.data_frag.number >/dev/null 2>&1; t3=$(now)
size=$(stat -c %s "$file")
frames=$("$bin" dissect --format text "$file" 2>&1 >/dev/null | sed -n 's/.*: \([0-9]*\) frames,.*/\1/p')
awk -v f="$file" -v s="$size" -v n="$frames" -v j=$((t1 - t0)) -v t=$((t2 - t1)) -v w=$((t3 - t2)) 'BEGIN {
  printf "capture: %s (%.1f MB, %d frames)\n", f, s / 1e6, n
  printf "ddshark dissect --format jsonl: %8.3f s  %10.0f frames/s  %7.1f MB/s\n", j / 1e9, n / (j / 1e9), s / 1e6 / (j / 1e9)
  printf "ddshark dissect --format text:  %8.3f s  %10.0f frames/s  %7.1f MB/s\n", t / 1e9, n / (t / 1e9), s / 1e6 / (t / 1e9)
  printf "tshark -T fields (rtps):        %8.3f s  %10.0f frames/s  %7.1f MB/s\n", w / 1e9, n / (w / 1e9), s / 1e6 / (w / 1e9)
  printf "ratio tshark / ddshark (jsonl): %.1fx\n", w / j
}'
