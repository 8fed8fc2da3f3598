#!/usr/bin/env bash
# Benchmark (not a timed test): `ddshark stats` against a bare libpcap read of the
# same file, on a small-frame replay and a large-frame replay, as medians of
# interleaved runs (read, stats, read, stats, ...: both see the same machine load),
# printed with their ratios; plus tshark on the large input and the peak memory of
# `stats` as the file grows (it must stay flat).
#
# usage: scripts/bench-stats.sh [LARGE_CAPTURE] [COPIES]
#   small-frame replay: tests/pcaps/a_small_reliable/a.pcap (Cyclone DDS, ROS 2-style
#     small topics, ~190 B frames) repeated 1024 times = 265k frames.
#   large-frame replay: LARGE_CAPTURE (default: the Autoware mix of
#     `scripts/make-fixtures.sh --bench`, $BENCH_CAPTURE (scripts/lib.sh),
#     else tests/pcaps/b_large_frag/a.pcap) repeated COPIES times (default 16).
#   Copies are shifted in time after each other (editcap -t, mergecap -a).
# environment: RUNS (interleaved runs per contender, default 7); BEFORE_BIN=path/to/other/ddshark
#   adds that build's `stats` as a third contender in the same interleaving (e.g. a build of
#   an older commit: git worktree add /tmp/old COMMIT && (cd /tmp/old && cargo build --profile tuned)).
# Targets (issue 11): stats <= 2x the bare read on BOTH replays; >= 50x tshark; flat memory.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
large_src=${1:-$BENCH_CAPTURE}
[ -f "$large_src" ] || large_src=tests/pcaps/b_large_frag/a.pcap
copies=${2:-16}
small_src=tests/pcaps/a_small_reliable/a.pcap
runs=${RUNS:-7}
for t in tshark editcap mergecap capinfos /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "bench-stats: $t is missing (apt-get install tshark time)" >&2; exit 1; }
done
cargo build --profile tuned -q -p ddshark --bin ddshark --example pcap_read
bin=target/tuned/ddshark
read_bin=target/tuned/examples/pcap_read
work=$(mktemp -d /tmp/ddshark-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# repeat SRC N OUT: N time-shifted copies of SRC back to back, by doubling.
repeat() {
  local src=$1 n=$2 out=$3 dur shift_s have=1
  dur=$(capinfos -u -M "$src" | sed -n 's/^Capture duration: *\([0-9.]*\) seconds/\1/p')
  shift_s=$(awk -v d="$dur" 'BEGIN { printf "%d", d + 1 }')
  cp "$src" "$work/rep.pcap"
  while [ $((have * 2)) -le "$n" ]; do
    editcap -F pcap -t $((have * shift_s)) "$work/rep.pcap" "$work/shifted.pcap"
    mergecap -a -F pcap -w "$work/rep2.pcap" "$work/rep.pcap" "$work/shifted.pcap"
    mv "$work/rep2.pcap" "$work/rep.pcap"
    have=$((have * 2))
  done
  [ "$have" -eq "$n" ] || { echo "bench-stats: COPIES must be a power of two" >&2; exit 1; }
  mv "$work/rep.pcap" "$out"
  rm -f "$work/shifted.pcap"
}
small=$work/small.pcap; repeat "$small_src" 1024 "$small"
large=$work/large.pcap; repeat "$large_src" "$copies" "$large"
large1=$work/large1.pcap; cp "$large_src" "$large1"

timeit() { # timeit CMD... : prints "seconds maxrss_kb"
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$work/time" "$@" >/dev/null 2>&1
  t1=$(date +%s%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }') $(cat "$work/time")"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Warm the page cache, then interleave.
cat "$small" "$large" "$large1" >/dev/null
: >"$work/t"
for i in $(seq 1 "$runs"); do
  for input in small large; do
    f=$work/$input.pcap
    echo "read $input $(timeit "$read_bin" "$f")" >>"$work/t"
    echo "stats $input $(timeit "$bin" stats -q "$f")" >>"$work/t"
    if [ -n "${BEFORE_BIN:-}" ]; then echo "before $input $(timeit "$BEFORE_BIN" stats -q "$f")" >>"$work/t"; fi
  done
done
med() { awk -v w="$1 $2" '$1 " " $2 == w { print $3 }' "$work/t" | median; }
rss() { awk -v w="$1 $2" '$1 " " $2 == w { print $4 }' "$work/t" | sort -n | tail -1; }
stats1=$(timeit "$bin" stats -q "$large1")
tshark_t=$(timeit tshark -n -r "$large1" -Y rtps -T fields -e rtps.sm.wrEntityId -e rtps.sm.seqNumber -e rtps.data_frag.sample_size)
frames() { capinfos -c -M "$1" | sed -n 's/^Number of packets: *//p'; }
sf=$(frames "$small"); lf=$(frames "$large"); lf1=$(frames "$large1")
ss=$(stat -c %s "$small"); ls=$(stat -c %s "$large"); ls1=$(stat -c %s "$large1")
awk -v runs="$runs" -v sf="$sf" -v lf="$lf" -v lf1="$lf1" -v ss="$ss" -v ls="$ls" -v ls1="$ls1" \
    -v rs="$(med read small)" -v st="$(med stats small)" -v rl="$(med read large)" -v sl="$(med stats large)" \
    -v rss_s="$(rss stats small)" -v rss_l="$(rss stats large)" -v s1="$stats1" -v ts="$tshark_t" \
    -v small_src="$small_src" -v large_src="$large_src" -v copies="$copies" 'BEGIN {
  split(s1, S1, " "); split(ts, T, " ")
  printf "small-frame replay: %s x1024 = %.1f MB, %d frames (%.0f B/frame)\n", small_src, ss / 1e6, sf, ss / sf
  printf "large-frame replay: %s x%d = %.1f MB, %d frames (%.0f B/frame)\n", large_src, copies, ls / 1e6, lf, ls / lf
  printf "medians of %d interleaved runs:\n", runs
  printf "  small  bare libpcap read %7.3f s  %5.2f us/frame\n", rs, rs * 1e6 / sf
  printf "  small  ddshark stats     %7.3f s  %5.2f us/frame  rss %5.1f MB\n", st, st * 1e6 / sf, rss_s / 1024
  printf "  large  bare libpcap read %7.3f s  %5.2f us/frame\n", rl, rl * 1e6 / lf
  printf "  large  ddshark stats     %7.3f s  %5.2f us/frame  rss %5.1f MB\n", sl, sl * 1e6 / lf, rss_l / 1024
  printf "ratio stats / bare read, small frames: %.2fx  (target <= 2x)\n", st / rs
  printf "ratio stats / bare read, large frames: %.2fx  (target <= 2x)\n", sl / rl
  printf "tshark x1 %.3f s vs stats x1 %.3f s: %.0fx  (target >= 50x)\n", T[1], S1[1], T[1] / S1[1]
  printf "memory x%d vs x1: %.2fx  (target: flat)\n", copies, rss_l / S1[2]
}'
if [ -n "${BEFORE_BIN:-}" ]; then
  awk -v rs="$(med read small)" -v bs="$(med before small)" -v rl="$(med read large)" -v bl="$(med before large)" \
      -v sf="$sf" -v lf="$lf" -v b="$BEFORE_BIN" 'BEGIN {
    printf "before (%s), same interleaving:\n", b
    printf "  small  stats %7.3f s  %5.2f us/frame  ratio %.2fx\n", bs, bs * 1e6 / sf, bs / rs
    printf "  large  stats %7.3f s  %5.2f us/frame  ratio %.2fx\n", bl, bl * 1e6 / lf, bl / rl
  }'
fi
