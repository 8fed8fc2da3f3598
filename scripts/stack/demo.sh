#!/usr/bin/env bash
# Replay a bundled two-host capture into a running monitoring stack as if it happened now.
#
#   scripts/stack/demo.sh [--otlp URL] [--capture DIR] [--ddshark BIN]
#
# Host A's capture (DIR/a.pcap) is exported as host "demo-a", host B's (DIR/b.pcap) as
# "demo-b", both at once with `ddshark -r … --retime … --otlp URL`: the earlier of the two
# first frames is put at the current time and every frame keeps its distance to it, to the
# nanosecond, so latencies between the hosts are those recorded. The dashboards (last 15
# minutes, refreshing every 10 s) then show the capture, with sender demo-a and receiver demo-b;
# the latency join writes its latencies within about 30 s.
#
#   --otlp URL     the collector (default: $DDSHARK_OTLP_ENDPOINT from scripts/stack/start.sh,
#                  else $OTEL_EXPORTER_OTLP_ENDPOINT, else http://127.0.0.1:4317). A secured
#                  collector takes its CA and token from OTEL_EXPORTER_OTLP_CERTIFICATE and
#                  OTEL_EXPORTER_OTLP_HEADERS, as every ddshark export does.
#   --capture DIR  a two-host fixture (default: tests/pcaps/h_vlan_pcp: Autoware topics from
#                  Cyclone DDS on two VLANs, a fragmented point cloud, repairs, and a sample
#                  the receiver's capture ended before completing)
#   --ddshark BIN  (default: target/release/ddshark if built, else ddshark on PATH)
set -euo pipefail
LIB_TAG=demo
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$REPO_ROOT"

otlp=${DDSHARK_OTLP_ENDPOINT:-${OTEL_EXPORTER_OTLP_ENDPOINT:-http://127.0.0.1:4317}}
capture=tests/pcaps/h_vlan_pcp
bin=""
take_options "
--otlp otlp
--capture capture
--ddshark bin" "$@"
if [ -z "$bin" ]; then
  if [ -x target/release/ddshark ]; then bin=target/release/ddshark
  elif command -v ddshark >/dev/null; then bin=$(command -v ddshark)
  else die "no ddshark: run scripts/setup.sh, or give --ddshark BIN"
  fi
fi
for f in a.pcap b.pcap; do
  [ -r "$capture/$f" ] || die "$capture/$f not found"
done

# The capture time of each file's first frame (ns since the epoch).
first_ns() {
  local json
  json=$("$bin" stats "$1" --format json --quiet)
  grep -m1 -o '"first_ts_ns": *[0-9]*' <<<"$json" | grep -o '[0-9]*$'
}
first_a=$(first_ns "$capture/a.pcap")
first_b=$(first_ns "$capture/b.pcap")
[ -n "$first_a" ] && [ -n "$first_b" ] || die "no frames in $capture"
origin=$(( first_a < first_b ? first_a : first_b ))
now=$(date +%s%N)
# ns since the epoch → seconds with 9 decimals, as --retime takes them.
secs() { printf '%d.%09d' $(( $1 / 1000000000 )) $(( $1 % 1000000000 )); }
at_a=$(secs $(( now + first_a - origin )))
at_b=$(secs $(( now + first_b - origin )))

say "replaying $capture as demo-a and demo-b into $otlp, starting at $(date -u -d "@${at_a%.*}" +%H:%M:%S) UTC"
status=0
"$bin" -r "$capture/a.pcap" --no-tui --interval 1h --retime "$at_a" --otlp "$otlp" \
  --host-name demo-a --capture-interface eth0 >/dev/null &
pid_a=$!
"$bin" -r "$capture/b.pcap" --no-tui --interval 1h --retime "$at_b" --otlp "$otlp" \
  --host-name demo-b --capture-interface eth0 >/dev/null &
pid_b=$!
wait "$pid_a" || status=1
wait "$pid_b" || status=1
[ "$status" = 0 ] || die "a replay did not export every span (messages above)"
say "done. Grafana: http://127.0.0.1:3000/d/ddshark-latency (sender demo-a, receiver demo-b);"
say "the latency panels fill within about 30 s, when the latency join has written them."
