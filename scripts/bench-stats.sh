#!/usr/bin/env bash
# Benchmark (not a timed test): `ddshark stats` over a large replay against a bare
# libpcap read of the same file and against tshark, printed as ratios, plus peak
# memory of `stats` as the file grows (it must stay flat).
#
# usage: scripts/bench-stats.sh [CAPTURE] [COPIES]
#   CAPTURE default: the Autoware mix of `scripts/make-fixtures.sh --bench`
#   (/var/tmp/ddshark-captures/j_autoware_mix/a.pcap), else the largest fixture.
#   COPIES (default 8): the large replay is CAPTURE repeated COPIES times, each copy
#   shifted in time after the previous one (editcap -t, mergecap -a).
# Targets (issue 3): within 2x the bare read, >= 50x faster than tshark, flat memory.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-/var/tmp/ddshark-captures/j_autoware_mix/a.pcap}
[ -f "$src" ] || src=tests/pcaps/b_large_frag/a.pcap
copies=${2:-16}
for t in tshark editcap mergecap capinfos /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "bench-stats: $t is missing (apt-get install tshark time)" >&2; exit 1; }
done
cargo build --release -q -p ddshark --bin ddshark --example pcap_read
bin=target/release/ddshark
read_bin=target/release/examples/pcap_read
work=$(mktemp -d /tmp/ddshark-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

dur=$(capinfos -u -M "$src" | sed -n 's/^Capture duration: *\([0-9.]*\) seconds/\1/p')
shift_s=$(awk -v d="$dur" 'BEGIN { printf "%d", d + 1 }')
make_big() { # make_big N OUT
  local n=$1 out=$2 parts=()
  for i in $(seq 0 $((n - 1))); do
    editcap -F pcap -t $((i * shift_s)) "$src" "$work/part$i.pcap"
    parts+=("$work/part$i.pcap")
  done
  mergecap -a -F pcap -w "$out" "${parts[@]}"
  rm -f "${parts[@]}"
}
big=$work/big.pcap
make_big "$copies" "$big"
small=$work/small.pcap
make_big 1 "$small"

timeit() { # timeit OUTFILE CMD... : prints "seconds maxrss_kb" (ns clock, RSS from time(1))
  local out=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$work/time" "$@" >"$out" 2>/dev/null
  t1=$(date +%s%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }') $(cat "$work/time")"
}
best() { # best of 3 runs of timeit
  local b="" r
  for _ in 1 2 3; do
    r=$(timeit /dev/null "$@")
    if [ -z "$b" ] || awk -v a="${r%% *}" -v b="${b%% *}" 'BEGIN{exit !(a < b)}'; then b=$r; fi
  done
  echo "$b"
}
# Warm the page cache, then measure.
cat "$big" "$small" >/dev/null
read_t=$(best "$read_bin" "$big")
stats_t=$(best "$bin" stats -q "$big")
stats_small=$(best "$bin" stats -q "$small")
tshark_t=$(timeit /dev/null tshark -n -r "$small" -Y rtps -T fields -e rtps.sm.wrEntityId -e rtps.sm.seqNumber -e rtps.data_frag.sample_size)
"$bin" stats -q "$big" >"$work/big.json"
frames=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["health"]["dissector"]["frames"])' "$work/big.json")
sframes=$(capinfos -c -M "$small" | sed -n 's/^Number of packets: *//p')
size=$(stat -c %s "$big"); ssize=$(stat -c %s "$small")
awk -v f="$src" -v n="$copies" -v s="$size" -v ss="$ssize" -v fr="$frames" -v sfr="$sframes" \
    -v r="$read_t" -v st="$stats_t" -v sm="$stats_small" -v ts="$tshark_t" 'BEGIN {
  split(r, R, " "); split(st, S, " "); split(sm, M, " "); split(ts, T, " ")
  printf "input: %s x%d = %.1f MB, %d frames\n", f, n, s / 1e6, fr
  printf "bare libpcap read:  %7.3f s  %9.0f frames/s  %7.1f MB/s  rss %6.1f MB\n", R[1], fr / R[1], s / 1e6 / R[1], R[2] / 1024
  printf "ddshark stats:      %7.3f s  %9.0f frames/s  %7.1f MB/s  rss %6.1f MB\n", S[1], fr / S[1], s / 1e6 / S[1], S[2] / 1024
  printf "ddshark stats (x1): %7.3f s  %9.0f frames/s  %7.1f MB/s  rss %6.1f MB\n", M[1], sfr / M[1], ss / 1e6 / M[1], M[2] / 1024
  printf "tshark (x1):        %7.3f s  %9.0f frames/s  %7.1f MB/s  rss %6.1f MB\n", T[1], sfr / T[1], ss / 1e6 / T[1], T[2] / 1024
  printf "ratio stats / bare read:      %.2fx  (target <= 2x)\n", S[1] / R[1]
  printf "ratio tshark / stats (MB/s):  %.0fx  (target >= 50x)\n", (s / S[1]) / (ss / T[1])
  printf "memory x%d vs x1:              %.2fx  (target: flat)\n", n, S[2] / M[2]
}'
