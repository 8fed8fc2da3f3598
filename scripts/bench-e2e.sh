#!/usr/bin/env bash
# End-to-end bench of the live path at Autoware scale: two hosts in network namespaces,
# their captured traffic (the Autoware-mix two-host capture j_autoware_mix) replayed live
# by tcpreplay at 1×, 2×, 4× …, `ddshark -i` on each host exporting OTLP to the real
# stack (collector → latency join → InfluxDB), then a soak of
# --soak-seconds at --soak-rate on j_autoware_soak, the same mix captured for 300 s (so
# no sequence number repeats during the soak).
#
# usage: sudo scripts/bench-e2e.sh [--rates "1 2 4 8"] [--soak-seconds 300] [--soak-rate 1]
#                                   [--no-soak] [--dense-copies N] [--no-dense]
#                                   [--out DIR] [--ddshark BIN] [--report FILE]
#
# Per rate it reports (scripts/ddtools/bench_e2e.py): spans sent / dropped by ddshark, accepted /
# exported / failed by the collector, written / dropped by Telegraf, stored in InfluxDB
# (each DATA/DATA_FRAG once?), series cardinality of both buckets, influxd RSS over time,
# the time of every dashboard panel query ("last 5 minutes", all topics), the stack's CPU
# time per sample observation (a sample seen on one host) against InfluxDB's floor measured
# after it in the same influxd (scripts/ddtools/stack_cost.py), the latency join's counters, and the materialised latencies, lost
# samples, sample sizes and repairs (and, on the single replays, the ad-hoc Flux join)
# against `ddshark latency` on the two captures tcpdump took during the run (count and
# values to the ns). The soak also reports all of that every 15 s while it runs. After the
# soak the live panels are timed at the Autoware workload's rate (~19.5k samples/s per host): the
# soak's per-sample points of host A written N times into side buckets (--dense-copies;
# default: enough copies to reach that rate; ~1 min per copy). The table goes to --report
# (default OUT/report.md; docs/bench-e2e.md keeps the current figures, updated by hand);
# raw results (JSON, CSV, pcaps, logs) stay in --out.
#
# Needs root (namespaces), tcpreplay, tcpdump, the built stack (scripts/stack/build.sh)
# and the captures (generated with scripts/make-fixtures.sh --bench / --bench-soak if
# absent, which needs the traffic generator's tools; the soak's takes 5 minutes and
# ~2.3 GB in $DDSHARK_CAPTURES, and the soak's own captures as much again in --out).
# Runs under `flock /tmp/ddshark-netns.lock`; namespaces ddse_a / ddse_b, bridge ddse_br
# (10.251.0.0/24, the path to the stack's OTLP receiver), all removed on exit. The
# capture's own addresses (--a-ip/--b-ip, default 10.200.0.1/10.200.0.2) split it into
# what each host sent.
set -euo pipefail

LIB_TAG=bench-e2e
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ARGS=("$@")

RATES="1 2 4 8"
SOAK_SECONDS=300
SOAK_RATE=1
SOAK=1
DENSE=1
DENSE_COPIES=0
OUT=$BENCH_E2E_OUT
REPORT=""
DDSHARK=""
A_IP=10.200.0.1
B_IP=10.200.0.2
while (($#)); do
  case "$1" in
    --rates) RATES="$2"; shift ;;
    --soak-seconds) SOAK_SECONDS="$2"; shift ;;
    --soak-rate) SOAK_RATE="$2"; shift ;;
    --no-soak) SOAK=0 ;;
    --dense-copies) DENSE_COPIES="$2"; shift ;;
    --no-dense) DENSE=0 ;;
    --out) OUT="$2"; shift ;;
    --report) REPORT="$2"; shift ;;
    --ddshark) DDSHARK="$2"; shift ;;
    --a-ip) A_IP="$2"; shift ;;
    --b-ip) B_IP="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown argument $1" ;;
  esac
  shift
done
REPORT=${REPORT:-$OUT/report.md}

if [ -z "${DDSHARK_NETNS_LOCKED:-}" ]; then
  export DDSHARK_NETNS_LOCKED=1
  exec flock /tmp/ddshark-netns.lock "$0" "${ARGS[@]}"
fi

need_root "network namespaces"
need_tools tcpreplay tcpdump ip python3 curl

# ---- inputs -------------------------------------------------------------------------
CAP="$DDSHARK_CAPTURES/j_autoware_mix"
if [ ! -f "$CAP/a.pcap" ] || [ ! -f "$CAP/b.pcap" ]; then
  say "no $CAP/{a,b}.pcap: generating it (scripts/make-fixtures.sh --bench)"
  "$REPO_ROOT/scripts/make-fixtures.sh" --bench >&2
fi
SOAK_CAP="$DDSHARK_CAPTURES/j_autoware_soak"
if [ "$SOAK" = 1 ] && { [ ! -f "$SOAK_CAP/a_tx.pcap" ] || [ ! -f "$SOAK_CAP/b_tx.pcap" ]; }; then
  say "no $SOAK_CAP/{a,b}_tx.pcap: generating it (scripts/make-fixtures.sh --bench-soak, 5 minutes)"
  "$REPO_ROOT/scripts/make-fixtures.sh" --bench-soak >&2
fi
if [ -z "$DDSHARK" ]; then
  DDSHARK="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/tuned/ddshark"
  say "building ddshark (profile tuned)"
  (cd "$REPO_ROOT" && cargo build --profile tuned -q -p ddshark)
fi
[ -x "$DDSHARK" ] || die "no ddshark binary at $DDSHARK"

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# What each host sent (IP fragments included: they carry the source address).
tcpdump -r "$CAP/a.pcap" -w "$OUT/a_tx.pcap" "src host $A_IP" 2>/dev/null
tcpdump -r "$CAP/b.pcap" -w "$OUT/b_tx.pcap" "src host $B_IP" 2>/dev/null
for f in a_tx b_tx; do
  [ "$(tcpdump -r "$OUT/$f.pcap" 2>/dev/null | head -n 1 | wc -l)" = 1 ] \
    || die "$OUT/$f.pcap is empty: wrong --a-ip/--b-ip for this capture?"
done

# ---- namespaces ---------------------------------------------------------------------
NS_A=ddse_a NS_B=ddse_b BR=ddse_br MGMT_IP=10.251.0.1
PIDS=()
STACK_RUN="$OUT/stack"
cleanup() {
  local rc=$?
  stop_children "${PIDS[@]}"
  if [ -f "$STACK_RUN/stack.env" ] && [ -z "${KEEP_STACK:-}" ]; then
    "$REPO_ROOT/scripts/stack/stop.sh" --run-dir "$STACK_RUN" >&2 || true
  fi
  ip netns del "$NS_A" 2>/dev/null || true
  ip netns del "$NS_B" 2>/dev/null || true
  ip link del "$BR" 2>/dev/null || true
  exit "$rc"
}
trap cleanup EXIT INT TERM

ip netns del "$NS_A" 2>/dev/null || true
ip netns del "$NS_B" 2>/dev/null || true
ip link del "$BR" 2>/dev/null || true
ip netns add "$NS_A"
ip netns add "$NS_B"
# The wire between the two hosts.
ip link add ddse_wa netns "$NS_A" type veth peer name ddse_wb netns "$NS_B"
# The management path to the stack in the root namespace.
ip link add "$BR" type bridge
ip addr add "$MGMT_IP/24" dev "$BR"
ip link set "$BR" up
n=2
for ns in "$NS_A" "$NS_B"; do
  s=${ns#ddse_}
  ip link add "ddse_m${s}h" type veth peer name "ddse_m$s" netns "$ns"
  ip link set "ddse_m${s}h" master "$BR" up
  ip -n "$ns" addr add "10.251.0.$n/24" dev "ddse_m$s"
  ip -n "$ns" link set "ddse_m$s" up
  ip -n "$ns" link set lo up
  ip -n "$ns" link set "ddse_w$s" up
  n=$((n + 1))
done

# ---- stack --------------------------------------------------------------------------
say "starting the stack (OTLP on $MGMT_IP) in $STACK_RUN"
DDSHARK_OTLP_BIND="$MGMT_IP" "$REPO_ROOT/scripts/stack/start.sh" --auto-ports --run-dir "$STACK_RUN" >/dev/null
# shellcheck disable=SC1091
source "$STACK_RUN/stack.env"
INFLUXD_PID="$(cat "$STACK_RUN/pids/influxd.pid")"

# influxd RSS every 2 s for the whole bench.
(while kill -0 "$INFLUXD_PID" 2>/dev/null; do
   printf '%s,%s\n' "$(date +%s)" "$(awk '/VmRSS/ {print $2}' "/proc/$INFLUXD_PID/status" 2>/dev/null)"
   sleep 2
 done) >"$OUT/influxd_rss.csv" &
PIDS+=($!)

# run_rate NAME RATE LOOPS SECONDS A_TX B_TX: one replay of both sides (A_TX, B_TX; looped
# LOOPS times, for at most SECONDS if not empty), captured by ddshark and tcpdump.
run_rate() {
  local name="$1" rate="$2" loops="$3" d="$OUT/$1" a_tx="$5" b_tx="$6" s limit=()
  [ -n "${4:-}" ] && limit=(--duration "${4}s")
  rm -rf "$d" && mkdir -p "$d"
  local host_a="e2e-$name-a" host_b="e2e-$name-b" pids=() rp=()
  for s in a b; do
    local ns="ddse_$s" iface="ddse_w$s" host="e2e-$name-$s"
    ip netns exec "$ns" tcpdump -i "$iface" -w "$d/$s.pcap" --time-stamp-precision nano \
      -B 131072 -s 0 -n 2>"$d/tcpdump_$s.log" &
    pids+=($!)
    ip netns exec "$ns" "$DDSHARK" -i "$iface" --no-tui --interval 5s \
      --otlp "$DDSHARK_OTLP_ENDPOINT" --host-name "$host" --capture-interface "$iface" \
      --final-json "$d/ddshark_$s.json" >"$d/ddshark_$s.out" 2>"$d/ddshark_$s.err" &
    pids+=($!)
  done
  PIDS+=("${pids[@]}")
  sleep 3
  python3 -m ddtools.bench_e2e cpu --stack-env "$STACK_RUN/stack.env" --out "$d/stack_cpu_start"
  local t0; t0=$(date +%s%N)
  say "$name: replaying both sides at ${rate}× (loops: $loops)"
  ip netns exec "$NS_A" tcpreplay -i ddse_wa --multiplier "$rate" --loop "$loops" "${limit[@]}" "$a_tx" \
    >"$d/tcpreplay_a.log" 2>&1 &
  rp+=($!)
  ip netns exec "$NS_B" tcpreplay -i ddse_wb --multiplier "$rate" --loop "$loops" "${limit[@]}" "$b_tx" \
    >"$d/tcpreplay_b.log" 2>&1 &
  rp+=($!)
  if [ "$name" = soak ]; then
    python3 -m ddtools.bench_e2e sample --stack-env "$STACK_RUN/stack.env" \
      --out "$d/samples.csv" --pids "${rp[*]}" &
    pids+=($!)
  fi
  for p in "${rp[@]}"; do wait "$p" || true; done
  local t1; t1=$(date +%s%N)
  sleep 3
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  say "$name: replay took $(( (t1 - t0) / 1000000 )) ms; analysing"
  python3 -m ddtools.bench_e2e rate --stack-env "$STACK_RUN/stack.env" --dir "$d" \
    --name "$name" --rate "$rate" --loops "$loops" --host-a "$host_a" --host-b "$host_b" \
    --t-start "$t0" --t-end "$t1" --ddshark "$DDSHARK" --equality "$([ "$loops" = 1 ] && echo yes || echo no)" \
    --adhoc "$([ "$name" = soak ] && echo no || echo yes)"
}

for r in $RATES; do
  run_rate "r$r" "$r" 1 "" "$OUT/a_tx.pcap" "$OUT/b_tx.pcap"
  if ! python3 -m ddtools.bench_e2e held --dir "$OUT/r$r"; then
    say "r$r: not held (see $OUT/r$r/result.json); no higher rates"
    break
  fi
done
if [ "$SOAK" = 1 ]; then
  # (one pass of the 300 s capture: no SN repeats, so its latencies are compared too; at
  # rates above 1× it ends early, so --soak-seconds is then also the capture's length)
  run_rate soak "$SOAK_RATE" 1 "$SOAK_SECONDS" "$SOAK_CAP/a_tx.pcap" "$SOAK_CAP/b_tx.pcap"
  if [ "$DENSE" = 1 ]; then
    say "soak: the live panels at the Autoware workload's rate (side buckets)"
    python3 -m ddtools.bench_e2e dense --stack-env "$STACK_RUN/stack.env" --dir "$OUT/soak" \
      --host-a e2e-soak-a --host-b e2e-soak-b --copies "$DENSE_COPIES"
  fi
fi
python3 -m ddtools.bench_e2e report --out "$OUT" --report "$REPORT" \
  --others "$(uptime | sed 's/.*load average/load average/')"
say "report: $REPORT (raw results in $OUT)"
