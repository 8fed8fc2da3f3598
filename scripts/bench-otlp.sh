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
# Needs scripts/stack/build.sh to have run once. Takes ~1-2 minutes (+ a release build).
set -euo pipefail

SPANS=1000000
PER=6
SINK=debug
PROTO=grpc
COMP=none
while (($#)); do
  case "$1" in
    --spans) SPANS="$2"; shift ;;
    --per-datagram) PER="$2"; shift ;;
    --sink) SINK="$2"; shift ;;
    --protocol) PROTO="$2"; shift ;;
    --compression) COMP="$2"; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-otlp.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d /tmp/ddshark-bench-otlp.XXXXXX)"
RUN_DIR="$WORK/stack"
PCAP="$WORK/bench.pcap"
say() { printf '[bench] %s\n' "$*" >&2; }

cleanup() {
  "$ROOT/scripts/stack/stop.sh" --run-dir "$RUN_DIR" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

say "building ddshark (release)"
(cd "$ROOT" && cargo build --release -q -p ddshark)
DDSHARK="$ROOT/target/release/ddshark"

say "writing $SPANS DATA submessages ($PER per datagram) to $PCAP"
python3 - "$ROOT/tests/pcaps/a_small_reliable/a.pcap" "$PCAP" "$SPANS" "$PER" <<'EOF'
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
"$DDSHARK" -r "$PCAP" --no-tui --interval 3600 >/dev/null 2>"$WORK/base.err" &
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
"$ROOT/scripts/stack/start.sh" --run-dir "$RUN_DIR" >/dev/null 2>"$WORK/start.log" || { cat "$WORK/start.log" >&2; exit 1; }
if [ "$PROTO" = grpc ]; then EP="http://127.0.0.1:$DDSHARK_OTLP_GRPC_PORT"; else EP="http://127.0.0.1:$DDSHARK_OTLP_HTTP_PORT"; fi

say "replaying with --otlp $EP ($PROTO, $COMP)"
t0=$(date +%s.%N)
/usr/bin/time -o "$WORK/time" -f '%U %S %M' \
  "$DDSHARK" -r "$PCAP" --no-tui --interval 3600 --otlp "$EP" --otlp-protocol "$PROTO" \
  --otlp-compression "$COMP" --host-name bench --otlp-flush-timeout 120 ${DDSHARK_BENCH_ARGS:-} >/dev/null 2>"$WORK/run.err" \
  || { cat "$WORK/run.err" >&2; exit 1; }
read -r USR SYS PEAK <"$WORK/time"
t1=$(date +%s.%N)
SUMMARY=$(grep ' spans: ' "$WORK/run.err" | tail -1)
SENT=$(sed -E 's/.*spans: ([0-9]+) sent,.*/\1/' <<<"$SUMMARY")
DROPPED=$(sed -E 's/.* ([0-9]+) dropped \(queue full\).*/\1/' <<<"$SUMMARY")
# With InfluxDB behind the collector: wait until the collector has written everything.
if [ "$SINK" = influxdb ]; then
  for _ in $(seq 1 600); do
    M=$(curl -s "http://127.0.0.1:$DDSHARK_OTELCOL_METRICS_PORT/metrics")
    ACC=$(awk '/^otelcol_receiver_accepted_spans_total/{s+=$2} END{print s+0}' <<<"$M")
    OUT=$(awk '/^otelcol_exporter_(sent|send_failed)_spans_total\{.*exporter="influxdb"/{s+=$2} END{print s+0}' <<<"$M")
    [ "$OUT" -ge "$ACC" ] && break
    sleep 0.2
  done
  t2=$(date +%s.%N)
  E2E_S=$(python3 -c "print(f'{$t2-$t0:.2f}')")
  WRITTEN=$(awk '/^otelcol_exporter_sent_spans_total\{.*exporter="influxdb"/{s+=$2} END{print s+0}' <<<"$M")
  FAILED_W=$(awk '/^otelcol_exporter_send_failed_spans_total\{.*exporter="influxdb"/{s+=$2} END{print s+0}' <<<"$M")
  echo "  collector -> InfluxDB : $WRITTEN spans written, $FAILED_W failed, all written $E2E_S s after the start ($(python3 -c "print(f'{$WRITTEN/$E2E_S:,.0f}')") spans/s end to end)" >"$WORK/e2e.txt"
fi
ACCEPTED=$(curl -s "http://127.0.0.1:$DDSHARK_OTELCOL_METRICS_PORT/metrics" | awk '/^otelcol_receiver_accepted_spans_total/{s+=$2} END{print s+0}')
python3 - "$t0" "$t1" "$SENT" "$DROPPED" "$ACCEPTED" "$PEAK" "$BASE_S" "$SPANS" "$PROTO" "$COMP" "$SINK" "$BASE_PEAK" "$USR" "$SYS" <<'EOF'
import sys
t0, t1, sent, dropped, acc, peak, base, spans = map(float, sys.argv[1:9])
proto, comp, sink = sys.argv[9:12]
base_peak = float(sys.argv[12])
cpu = float(sys.argv[13]) + float(sys.argv[14])
d = t1 - t0
print(f"ddshark OTLP export benchmark: {int(spans)} synthetic DATA spans (+ the fixture's), {proto}/{comp}, collector traces -> {sink}")
print(f"  replay without export : {base:.2f} s ({spans/base:,.0f} submessages/s), peak RSS {base_peak/1024:.1f} MiB")
print(f"  replay with export    : {d:.2f} s, {int(sent)} spans sent, {int(dropped)} dropped, collector accepted {int(acc)}")
print(f"  sustained export rate : {sent/d:,.0f} spans/s")
print(f"  ddshark peak RSS      : {peak/1024:.1f} MiB (max resident set, /usr/bin/time)")
print(f"  ddshark CPU           : {cpu:.2f} s ({cpu/d*100:.0f}% of one core; the collector has the rest of the 2-core machine)")
EOF
[ -f "$WORK/e2e.txt" ] && cat "$WORK/e2e.txt"
