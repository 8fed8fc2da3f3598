#!/usr/bin/env bash
# Benchmark (not a test): `ddshark -i IFACE -w FILE` at a sustained rate, against tcpdump
# capturing the same veth at the same time. A capture is replayed with tcpreplay into a
# private veth pair (namespaces ddsr_tx, ddsr_rx) for DURATION_S seconds at MBPS megabits/s;
# ddshark records into a ring of files (-C RING_MB -W 3, so the disk holds at most 3 files)
# while tcpdump counts what it captures (-w /dev/null). Printed: frames delivered to the
# veth, tcpdump's captured/kernel-dropped, ddshark's read/kernel-dropped, frames written,
# frames not written (queue full), files, and the CPU seconds of each tool.
#
# usage: sudo scripts/bench-record.sh [CAPTURE]
#   CAPTURE default: the Autoware mix of `scripts/make-fixtures.sh --bench`
#   ($BENCH_CAPTURE, scripts/lib.sh)
# environment: DURATION_S (60), MBPS (1080 = 135 MB/s, the Autoware mix per host), RING_MB
#   (1000), OUT_DIR (where the ring goes, default a temporary directory), BIN (ddshark binary,
#   default target/tuned/ddshark built here)
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION_S=${DURATION_S:-60}
MBPS=${MBPS:-1080}
RING_MB=${RING_MB:-1000}
NS_TX=ddsr_tx NS_RX=ddsr_rx IF_TX=ddsr_tx0 IF_RX=ddsr_rx0
LIB_TAG=bench-record
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
need_root "network namespaces, raw capture"
need_tools tcpreplay tcpdump jq ip
input=${1:-$BENCH_CAPTURE}
[ -f "$input" ] || die "no capture $input (sudo scripts/make-fixtures.sh --bench makes it)"
if [ -z "${BIN:-}" ]; then cargo build --profile tuned -q -p ddshark; BIN=$PWD/target/tuned/ddshark; fi

work=$(mktemp -d /tmp/ddsr-bench.XXXXXX)
out=${OUT_DIR:-$work}
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  veth_del "$NS_TX" "$NS_RX"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

veth_pair "$NS_TX" "$IF_TX" "$NS_RX" "$IF_RX"
hz=$(getconf CLK_TCK)
cpu_s() { awk -v hz="$hz" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo na; }

ip netns exec "$NS_RX" tcpdump -i "$IF_RX" -nn -s 262144 -B 65536 -w /dev/null "$CAPTURE_FILTER" 2>"$work/tcpdump.err" &
td=$!; pids+=("$td")
ip netns exec "$NS_RX" "$BIN" -i "$IF_RX" --no-tui --interval 10s -w "$out/rec.pcapng" -C "$RING_MB" -W 3 \
  --final-json "$work/dd.json" >"$work/dd.out" 2>"$work/dd.err" &
dd=$!; pids+=("$dd")
wait_packet_sockets "$NS_RX" "$IF_RX" 2 || true
sleep 1
before=$(rx_packets "$NS_RX" "$IF_RX")
ip netns exec "$NS_TX" tcpreplay -i "$IF_TX" --preload-pcap --mbps="$MBPS" --loop=0 --duration="$DURATION_S" \
  "$input" >"$work/replay.out" 2>&1 || true
delivered=$(( $(rx_packets "$NS_RX" "$IF_RX") - before ))
sleep 2
# `ip netns exec` execs its command: the pids are the tools'.
td_cpu=$(cpu_s "$td")
dd_cpu=$(cpu_s "$dd")
kill -INT "$td" "$dd"
wait "$td" || true
wait "$dd" || { cat "$work/dd.err" >&2; die "ddshark exited with an error"; }
pids=()

echo "bench-record: $(nproc) CPUs, $(uname -r); input $input; ${DURATION_S} s at ${MBPS} Mbit/s ($(grep -E '^(Actual|Rated):' "$work/replay.out" | tr '\n' ' '))"
echo "delivered to the veth:  $delivered frames"
awk '/packets captured/ { c = $1 } /dropped by kernel/ { k = $1 } END { printf "tcpdump:                %s captured, %s kernel drops\n", c, k }' "$work/tcpdump.err"
jq -r '.health.pipeline as $p | $p.sources[0] as $s | $p.recording as $r |
  "ddshark:                \($s.frames) read, \($s.kernel.dropped) kernel drops, \($s.queue_dropped) state-queue drops",
  "ddshark -w:             \($r.frames_written) frames written (\($r.bytes_written) bytes), \($r.queue_dropped) not written (writer queue full), \($r.not_written_other) otherwise; \($r.files_closed) files closed (ring of 3 x '"$RING_MB"' MB)"' "$work/dd.json"
echo "CPU seconds:            ddshark $dd_cpu, tcpdump $td_cpu"
