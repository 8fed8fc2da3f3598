#!/usr/bin/env bash
# What the telemetry stack holds: the sample observations (a sample seen on one host) per
# second the collector → latency join → InfluxDB path takes without falling behind or
# dropping, and its CPU per sample observation against InfluxDB's floor in the same run.
#
# Starts the stack (scripts/stack/start.sh) in a throwaway run dir on free ports, then per
# step replays two hosts' captures at once with `ddshark -r FILE --speed S --duration D
# --otlp …` (paced by the capture's timestamps: no namespaces, no tcpreplay, no live
# capture, so the stack gets the cores) and reports: spans offered per second, how long
# after the replay's end InfluxDB held every span, spans dropped by ddshark and points the
# join lost (refused by InfluxDB, given up, dropped, metrics refused), the stack's CPU during the replay (cores) and its CPU per sample observation
# (every process of the stack's pids/: collector, join, influxd, …); then InfluxDB's floor:
# as many minimal points (one series per writer and host, 6 tags, 3 fields, gzip'd batches
# of 5,000) written into a side bucket of the same influxd, and its CPU per point
# (scripts/ddtools/stack_cost.py); the raw points per sample observation (span points and
# writer points, and fields per span point) and the time of the ad-hoc join over them
# (flux-queries/dds_latency.flux, A→B over the step's spans). Stops the stack it started.
# On stderr per step: the collector's CPU per span it took (with --shards > 1 the routing
# tier's, docs/fleet.md), each process's CPU per sample observation and the load average.
#
# Usage: scripts/bench-ingest.sh [--a FILE] [--b FILE] [--speeds "2 4 6"] [--duration 60]
#                                [--shards N] [--resolver static|dns] [--ddshark BIN]
#                                [-- DDSHARK_ARGS…]
#   --shards    join shards behind the routing tier (DDSHARK_STACK_SHARDS) [1: no routing tier]
#   --resolver  how the routing tier finds them (DDSHARK_STACK_RESOLVER) [static]
#   --a/--b     the two hosts' captures (default: the 5-minute soak bench-e2e captured,
#               $BENCH_E2E_OUT/soak/{a,b}.pcap (scripts/lib.sh); any two-host pair works, long
#               enough for --duration × speed seconds of traffic)
#   DDSHARK_ARGS  extra ddshark options, e.g. -- --otlp-lean
# Holding: every span stored within 30 s of the replay's end and nothing dropped. On a
# machine with fewer cores than the stack needs, the replays take cores too: the highest
# rate held is a lower bound. Needs scripts/stack/build.sh to have run once; runs under
# the bench lock of the other benches' convention when called through flock by the user.
set -euo pipefail

LIB_TAG=bench-ingest
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
A=$BENCH_E2E_OUT/soak/a.pcap
B=$BENCH_E2E_OUT/soak/b.pcap
SPEEDS="2 4 6"
DURATION=60
DDSHARK=""
SHARDS=1
RESOLVER=static
EXTRA=()
while (($#)); do
  case "$1" in
    --a) A="$2"; shift ;;
    --b) B="$2"; shift ;;
    --speeds) SPEEDS="$2"; shift ;;
    --duration) DURATION="$2"; shift ;;
    --ddshark) DDSHARK="$2"; shift ;;
    --shards) SHARDS="$2"; shift ;;
    --resolver) RESOLVER="$2"; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown argument $1" ;;
  esac
  shift
done
for f in "$A" "$B"; do
  [ -f "$f" ] || die "no capture $f (run sudo scripts/bench-e2e.sh once, or pass --a/--b)"
done
if [ -z "$DDSHARK" ]; then
  DDSHARK="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/tuned/ddshark"
  (cd "$REPO_ROOT" && cargo build --profile tuned -q -p ddshark -p span-join)
fi
# (absolute: the stack's scripts run the join from another directory)
DDSHARK_ABS="$(realpath -e -- "$DDSHARK" 2>/dev/null)" || die "--ddshark: no such file $DDSHARK"
DDSHARK=$DDSHARK_ABS
JOIN="$(dirname "$DDSHARK")/ddshark-join"
[ -x "$JOIN" ] || die "no $JOIN beside $DDSHARK (cargo build --profile tuned -p span-join)"

RUN="$(mktemp -d /tmp/ddshark-bench-ingest.XXXXXX)"
cleanup() { "$REPO_ROOT/scripts/stack/stop.sh" --run-dir "$RUN/stack" >/dev/null 2>&1 || true; rm -rf "$RUN"; }
trap cleanup EXIT
DDSHARK_INFLUX_RAW_RETENTION=0 DDSHARK_INFLUX_LONG_RETENTION=0 DDSHARK_JOIN_BIN="$JOIN" \
  DDSHARK_STACK_SHARDS="$SHARDS" DDSHARK_STACK_RESOLVER="$RESOLVER" \
  "$REPO_ROOT/scripts/stack/start.sh" --auto-ports --run-dir "$RUN/stack" >/dev/null
# shellcheck disable=SC1091
source "$RUN/stack/stack.env"

say "captures $A, $B; speeds $SPEEDS; ${DURATION} s each; $SHARDS join shard(s) ($RESOLVER); ddshark ${EXTRA[*]:-}"
say "run: $0 --a $A --b $B --speeds '$SPEEDS' --duration $DURATION --shards $SHARDS --resolver $RESOLVER${EXTRA[*]:+ -- ${EXTRA[*]}}"
printf '| speed | sample observations/s offered (spans/s) | stored after the replay | dropped (ddshark / lost by the join) | stack CPU during the replay | stack CPU per sample observation (per process) | InfluxDB floor per sample observation | stack ÷ floor | raw points per sample observation | ad-hoc dds_latency.flux A→B |\n|---|---|---|---|---|---|---|---|---|---|\n'
for S in $SPEEDS; do
  tag="ingest-x$S-"
  python3 -m ddtools.bench_e2e cpu --stack-env "$RUN/stack/stack.env" --out "$RUN/cpu0"
  t0=$(date +%s%N)
  pids=()
  for h in a b; do
    f=$A; [ "$h" = b ] && f=$B
    "$DDSHARK" -r "$f" --no-tui --speed "$S" --duration "${DURATION}s" --interval 1h \
      --otlp "$DDSHARK_OTLP_ENDPOINT" --host-name "$tag$h" --capture-interface eth0 "${EXTRA[@]}" \
      --final-json "$RUN/$h.json" >"$RUN/$h.out" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  t1=$(date +%s%N)
  python3 -m ddtools.bench_e2e cpu --stack-env "$RUN/stack/stack.env" --out "$RUN/cpu1"
  if ! python3 -m ddtools.bench_e2e ingest --stack-env "$RUN/stack/stack.env" --host-prefix "$tag" \
    --speed "$S" --t-start "$t0" --t-end "$t1" --cpu-start "$RUN/cpu0" --cpu-replay-end "$RUN/cpu1" \
    --ddshark-logs "$RUN/a.out" "$RUN/b.out" --final-json "$RUN/a.json" "$RUN/b.json"; then
    say "×$S not held: no higher speeds"
    break
  fi
done
