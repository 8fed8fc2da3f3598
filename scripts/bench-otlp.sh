#!/usr/bin/env bash
# Sustained OTLP export rate of ddshark to the real OpenTelemetry Collector, and
# ddshark's memory at that rate.
#
# Builds a synthetic capture (the real discovery of tests/pcaps/a_small_reliable/a.pcap,
# then SPANS DATA submessages of its rt/cmd_vel writer, DATA_PER_DATAGRAM per UDP
# datagram), starts the stack (scripts/stack/start.sh) in a throwaway run dir on
# non-default ports, replays the capture with `ddshark -r … --no-tui --otlp …` (a
# replay waits for queue space while the collector accepts, so nothing is dropped
# and the run time is the export time), samples ddshark's RSS every 100 ms, and
# prints spans/s and the peak RSS. Stops the stack it started.
#
# Usage: scripts/bench-otlp.sh [--spans N] [--per-datagram K] [--sink debug|influxdb]
#                              [--protocol grpc|http] [--compression none|gzip]
#   --sink debug      collector traces pipeline → debug exporter (measures ddshark + the
#                     collector's OTLP receiver; the default)
#   --sink influxdb   collector → InfluxDB (the whole path; InfluxDB is the bottleneck)
# Extra ddshark options: DDSHARK_BENCH_ARGS="--otlp-queue 16384 --otlp-batch 2048".
# RUNS=N (default 1) repeats the export run; BEFORE_BIN=path/to/other/ddshark adds that
# build as a second contender, runs interleaved (before, this, before, this, …), e.g. the
# hand-encoded exporter of commit 9065944:
#   git worktree add /tmp/ddshark-9065944 9065944 && (cd /tmp/ddshark-9065944 && cargo build --profile tuned -p ddshark)
#   BEFORE_BIN=/tmp/ddshark-9065944/target/tuned/ddshark RUNS=3 scripts/bench-otlp.sh
# Each run also reports the collector's CPU per span (from /proc): on a 2-core machine
# ddshark and the collector share the cores, so their costs per span add up.
# Needs scripts/stack/build.sh to have run once. Takes ~1-2 minutes (+ a tuned build).
set -euo pipefail
LIB_TAG=bench
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SPANS=1000000
PER=6
SINK=debug
PROTO=grpc
COMP=none
take_options "
--spans SPANS
--per-datagram PER
--sink SINK
--protocol PROTO
--compression COMP" "$@"

WORK="$(mktemp -d /tmp/ddshark-bench-otlp.XXXXXX)"
RUN_DIR="$WORK/stack"
PCAP="$WORK/bench.pcap"

cleanup() {
  "$REPO_ROOT/scripts/stack/stop.sh" --run-dir "$RUN_DIR" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

say "building ddshark (profile tuned)"
(cd "$REPO_ROOT" && cargo build --profile tuned -q -p ddshark)
DDSHARK="$REPO_ROOT/target/tuned/ddshark"

say "writing $SPANS DATA submessages ($PER per datagram) to $PCAP"
python3 - "$REPO_ROOT/tests/pcaps/a_small_reliable/a.pcap" "$PCAP" "$SPANS" "$PER" <<'EOF'
import struct, sys
src, dst, spans, per = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(src, 'rb').read()
magic = struct.unpack('<I', data[:4])[0]
assert magic in (0xa1b2c3d4, 0xa1b23c4d), 'little-endian pcap expected'
scale = 1000 if magic == 0xa1b2c3d4 else 1     # to ns
linktype = struct.unpack('<I', data[20:24])[0]
assert linktype == 1, 'Ethernet expected'
out = open(dst, 'wb')
out.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, 262144, 1))
off, last_ns = 24, 0
while off + 16 <= len(data):
    sec, frac, incl, orig = struct.unpack('<IIII', data[off:off+16])
    ns = sec * 1_000_000_000 + frac * scale
    last_ns = max(last_ns, ns)
    out.write(struct.pack('<IIII', sec, frac * scale, incl, orig))
    out.write(data[off+16:off+16+incl])
    off += 16 + incl
# rt/cmd_vel writer of that capture, unicast to the subscriber.
prefix = bytes.fromhex('011049345ca38017552cd03f')
writer = bytes.fromhex('00000603')
src_ip, dst_ip, sport, dport = bytes([10,200,0,1]), bytes([10,200,0,2]), 59113, 57444
payload = b'\x00\x01\x00\x00' + bytes(range(48))
def csum(h):
    s = sum(struct.unpack('!10H', h))
    s = (s & 0xffff) + (s >> 16); s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
sn, t, ipid = 1000, last_ns + 1_000_000, 0
while spans > 0:
    k = min(per, spans)
    sec, frac = divmod(t, 1_000_000_000)
    rtps = b'RTPS\x02\x05\x01\x10' + prefix
    rtps += struct.pack('<BBHII', 0x09, 0x01, 8, sec, (frac << 32) // 1_000_000_000)
    for _ in range(k):
        body = struct.pack('<HH', 0, 16) + b'\x00\x00\x00\x00' + writer + struct.pack('<iI', sn >> 32, sn & 0xffffffff) + payload
        rtps += struct.pack('<BBH', 0x15, 0x05, len(body)) + body
        sn += 1
    udp = struct.pack('!HHHH', sport, dport, 8 + len(rtps), 0) + rtps
    ipid = (ipid + 1) & 0xffff
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), ipid, 0x4000, 64, 17, 0, src_ip, dst_ip)
    ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
    frame = b'\x02\x00\x00\x00\x00\x02' + b'\x02\x00\x00\x00\x00\x01' + b'\x08\x00' + ip + udp
    out.write(struct.pack('<IIII', sec, frac, len(frame), len(frame)))
    out.write(frame)
    spans -= k
    t += 20_000
out.close()
EOF
ls -l "$PCAP" >&2

say "baseline: ddshark without export"
# peak_rss PID: highest VmRSS (KiB) until PID exits, sampled every 100 ms
peak_rss() {
  local peak=0 r
  while kill -0 "$1" 2>/dev/null; do
    r=$(awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null || true)
    [ -n "$r" ] && [ "$r" -gt "$peak" ] && peak=$r
    sleep 0.1
  done
  echo "$peak"
}
t0=$(date +%s.%N)
"$DDSHARK" -r "$PCAP" --no-tui --interval 1h >/dev/null 2>"$WORK/base.err" &
BASE_PEAK=$(peak_rss $!)
wait $! || { cat "$WORK/base.err" >&2; exit 1; }
t1=$(date +%s.%N)
BASE_S=$(python3 -c "print(f'{$t1-$t0:.2f}')")

# Ports: a block unlikely to be in use.
B=$((21000 + RANDOM % 4000))
export DDSHARK_INFLUX_PORT=$B DDSHARK_OTLP_GRPC_PORT=$((B+1)) DDSHARK_OTLP_HTTP_PORT=$((B+2))
export DDSHARK_OTELCOL_HEALTH_PORT=$((B+3)) DDSHARK_OTELCOL_METRICS_PORT=$((B+4)) DDSHARK_OTELCOL_PROM_PORT=$((B+5))
if [ "$SINK" = debug ]; then
  export DDSHARK_OTELCOL_TRACES_EXPORTERS="[debug]" DDSHARK_OTELCOL_DEBUG_VERBOSITY=basic
fi
say "starting the stack (traces → $SINK)"
"$REPO_ROOT/scripts/stack/start.sh" --run-dir "$RUN_DIR" >/dev/null 2>"$WORK/start.log" || { cat "$WORK/start.log" >&2; exit 1; }
if [ "$PROTO" = grpc ]; then EP="http://127.0.0.1:$DDSHARK_OTLP_GRPC_PORT"; else EP="http://127.0.0.1:$DDSHARK_OTLP_HTTP_PORT"; fi

RUNS=${RUNS:-1}
case "$RUNS" in ''|*[!0-9]*|0) usage_error "RUNS must be a positive number" ;; esac
BEFORE_BIN=${BEFORE_BIN:-}
if [ -n "$BEFORE_BIN" ] && [ ! -x "$BEFORE_BIN" ]; then
  usage_error "BEFORE_BIN=$BEFORE_BIN is not an executable"
fi
COLLECTOR_PID=$(cat "$RUN_DIR/pids/otelcol.pid")
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
collector_metric() { # collector_metric REGEX: sum of the collector's own counters matching REGEX
  curl -s "http://127.0.0.1:$DDSHARK_OTELCOL_METRICS_PORT/metrics" | awk -v re="$1" '$0 ~ re {s+=$2} END{print s+0}'
}
printf 'ddshark OTLP export benchmark: %s synthetic DATA spans (+ the fixture'"'"'s), %s/%s, collector traces -> %s\n' "$SPANS" "$PROTO" "$COMP" "$SINK"
printf '  replay without export: %s s, peak RSS %s MiB\n' "$BASE_S" "$(awk -v k="$BASE_PEAK" 'BEGIN{printf "%.1f", k/1024}')"

# export_run LABEL BINARY RUN: one replay with export, one result line
export_run() {
  local label=$1 exe=$2 run=$3 t0 t1 c0 c1 usr sys peak summary sent dropped acc0 acc1
  acc0=$(collector_metric '^otelcol_receiver_accepted_spans_total')
  c0=$(cpu_ticks "$COLLECTOR_PID")
  t0=$(date +%s.%N)
  /usr/bin/time -o "$WORK/time" -f '%U %S %M' \
    "$exe" -r "$PCAP" --no-tui --interval 1h --otlp "$EP" --otlp-protocol "$PROTO" \
    --otlp-compression "$COMP" --host-name bench --otlp-flush-timeout 120s ${DDSHARK_BENCH_ARGS:-} >/dev/null 2>"$WORK/run.err" \
    || { cat "$WORK/run.err" >&2; exit 1; }
  t1=$(date +%s.%N)
  read -r usr sys peak <"$WORK/time"
  # With InfluxDB behind the collector: wait until the collector has written everything.
  if [ "$SINK" = influxdb ]; then
    local i out
    for i in $(seq 1 600); do
      out=$(collector_metric '^otelcol_exporter_(sent|send_failed)_spans_total.*exporter="otlp_grpc/join"')
      [ "$out" -ge "$(collector_metric '^otelcol_receiver_accepted_spans_total')" ] && break
      sleep 0.2; : "$i"
    done
    t1=$(date +%s.%N)
  fi
  c1=$(cpu_ticks "$COLLECTOR_PID")
  acc1=$(collector_metric '^otelcol_receiver_accepted_spans_total')
  summary=$(grep ' spans: ' "$WORK/run.err" | tail -1)
  sent=$(sed -E 's/.*spans: ([0-9]+) sent,.*/\1/' <<<"$summary")
  dropped=$(sed -E 's/.* ([0-9]+) dropped \(queue full\).*/\1/' <<<"$summary")
  python3 - "$label" "$run" "$t0" "$t1" "$sent" "$dropped" "$((acc1 - acc0))" "$usr" "$sys" "$peak" "$((c1 - c0))" "$(getconf CLK_TCK)" <<'PY'
import sys
label, run = sys.argv[1:3]
t0, t1, sent, dropped, acc, usr, sys_, peak, cticks, hz = map(float, sys.argv[3:13])
d = t1 - t0
n = max(sent, 1)
print(f"  {label:<7} run {run}: {sent/d:>9,.0f} spans/s ({int(sent)} sent in {d:.2f} s, {int(dropped)} dropped, "
      f"collector accepted {int(acc)}); ddshark {(usr+sys_)/n*1e6:.2f} us CPU/span, peak RSS {peak/1024:.1f} MiB; "
      f"collector {cticks/hz/n*1e6:.2f} us CPU/span")
PY
}

say "replaying with --otlp $EP ($PROTO, $COMP), $RUNS run(s)${BEFORE_BIN:+, interleaved with $BEFORE_BIN}"
for run in $(seq 1 "$RUNS"); do
  [ -n "$BEFORE_BIN" ] && export_run before "$BEFORE_BIN" "$run"
  export_run this "$DDSHARK" "$run"
done
