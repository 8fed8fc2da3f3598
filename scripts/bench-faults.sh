#!/usr/bin/env bash
# Fault bench: the two hosts of the Autoware mix (j_autoware_long: 120 s of the mix, both
# hosts' full captures) replayed by `ddshark -r FILE --speed S --otlp URL` into a private stack
# of scripts/stack/start.sh, while one component is killed (kill -9) KILL_AT seconds into the
# replay and started again (scripts/stack/relaunch.sh) OUTAGE seconds later; each of
# otelcol, the latency join (which writes the spans, metrics and logs to InfluxDB) and influxd
# in turn, each on a fresh stack.
#
# usage: scripts/bench-faults.sh [--components "otelcol join influxd"] [--speed 1]
#                                [--kill-at 20] [--outage 45] [--otlp-queue 600000] [--otlp-retry 120s]
#                                [--out DIR] [--ddshark BIN] [--report FILE]
#
# Per component (scripts/ddtools/bench_faults.py): spans ddshark made, sent, dropped and failed (its
# exit summary); the collector's accepted / sent / failed / not-queued spans summed over its
# lives (scraped every second); the spans InfluxDB stored; the latency join's counters
# (points written, rejected, retried); and the latencies it materialised against `ddshark latency` on the same two
# captures (count and values to the ns). The table goes to --report (default OUT/report.md;
# docs/faults.md keeps the current figures, updated by hand); raw results stay in --out.
#
# Needs the built stack (scripts/stack/build.sh) and the capture, made by
# tests/traffic/make_captures.sh (root, network namespaces: ~2.5 GB in $DDSHARK_CAPTURES) if
# absent. --otlp-queue and --otlp-retry are ddshark's (per host): the queue has to hold a
# host's spans for the collector's whole outage, and a failed export is tried again for
# longer than it (docs/faults.md).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIB_TAG=bench-faults
# shellcheck source=scripts/lib.sh
source "$REPO/scripts/lib.sh"

COMPONENTS="otelcol join influxd"
SPEED=1
KILL_AT=20
OUTAGE=45
OTLP_QUEUE=600000
OTLP_RETRY=120s
OUT=/var/tmp/ddshark-bench-faults
REPORT=""
DDSHARK=""
take_options "
--components COMPONENTS
--speed SPEED
--kill-at KILL_AT
--outage OUTAGE
--otlp-queue OTLP_QUEUE
--otlp-retry OTLP_RETRY
--out OUT
--report REPORT
--ddshark DDSHARK" "$@"
REPORT=${REPORT:-$OUT/report.md}
for c in $COMPONENTS; do
  case "$c" in otelcol|join|influxd) ;; *) die "--components: $c is not otelcol, join or influxd" ;; esac
done
for t in python3 curl; do command -v "$t" >/dev/null || die "missing $t"; done

CAP="$DDSHARK_CAPTURES/j_autoware_long"
if [ ! -f "$CAP/a.pcap" ] || [ ! -f "$CAP/b.pcap" ]; then
  say "no $CAP/{a,b}.pcap: generating it (tests/traffic/make_captures.sh j_autoware_long, 2 minutes, root)"
  flock /tmp/ddshark-netns.lock "$REPO/tests/traffic/make_captures.sh" "$DDSHARK_CAPTURES" j_autoware_long >&2
fi
if [ -z "$DDSHARK" ]; then
  DDSHARK="${CARGO_TARGET_DIR:-$REPO/target}/tuned/ddshark"
  say "building ddshark (profile tuned)"
  (cd "$REPO" && cargo build --profile tuned -q -p ddshark --bin ddshark)
fi
[ -x "$DDSHARK" ] || die "no ddshark binary at $DDSHARK"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

PIDS=()
STACK_RUN=""
cleanup() {
  local rc=$?
  stop_children "${PIDS[@]}"
  [ -n "$STACK_RUN" ] && [ -z "${KEEP_STACK:-}" ] && "$REPO/scripts/stack/stop.sh" --run-dir "$STACK_RUN" >&2 || true
  exit "$rc"
}
trap cleanup EXIT INT TERM

for c in $COMPONENTS; do
  d="$OUT/$c"
  rm -rf "$d" && mkdir -p "$d"
  ln -s "$CAP/a.pcap" "$d/a.pcap"
  ln -s "$CAP/b.pcap" "$d/b.pcap"
  STACK_RUN="$d/stack"
  say "$c: starting a stack in $STACK_RUN"
  # (the capture's times may be older than the raw bucket's retention)
  DDSHARK_INFLUX_RAW_RETENTION=0 DDSHARK_INFLUX_LONG_RETENTION=0 \
    "$REPO/scripts/stack/start.sh" --auto-ports --run-dir "$STACK_RUN" >/dev/null
  # shellcheck disable=SC1091
  source "$STACK_RUN/stack.env"
  pids=()
  for s in a b; do
    /usr/bin/time -f %M -o "$d/ddshark_$s.rss" "$DDSHARK" -r "$d/$s.pcap" --no-tui --speed "$SPEED" \
      --interval 5s --otlp "$DDSHARK_OTLP_ENDPOINT" --host-name "faults-$c-$s" \
      --otlp-queue "$OTLP_QUEUE" --otlp-retry "$OTLP_RETRY" --otlp-flush-timeout 300s --final-json "$d/ddshark_$s.json" \
      >"$d/ddshark_$s.out" 2>"$d/ddshark_$s.err" &
    pids+=($!)
  done
  PIDS+=("${pids[@]}")
  python3 -m ddtools.bench_faults scrape --stack-env "$STACK_RUN/stack.env" \
    --out "$d/collector.csv" --pid "${pids[0]}" &
  PIDS+=($!)
  scraper=$!
  sleep "$KILL_AT"
  victim="$(cat "$STACK_RUN/pids/$c.pid")"
  say "$c: kill -9 $victim ($KILL_AT s into the replay); back in $OUTAGE s"
  kill -KILL "$victim"
  sleep "$OUTAGE"
  "$REPO/scripts/stack/relaunch.sh" --run-dir "$STACK_RUN" "$c" >&2
  for p in "${pids[@]}"; do wait "$p" || true; done
  say "$c: replay done; counting"
  sleep 2
  kill "$scraper" 2>/dev/null || true
  python3 -m ddtools.bench_faults phase --stack-env "$STACK_RUN/stack.env" --dir "$d" \
    --component "$c" --host-a "faults-$c-a" --host-b "faults-$c-b" --ddshark "$DDSHARK" \
    --speed "$SPEED" --kill-at "$KILL_AT" --outage "$OUTAGE" --otlp-queue "$OTLP_QUEUE" || true
  cp -r "$STACK_RUN/logs" "$d/stack-logs" 2>/dev/null || true
  if [ -z "${KEEP_STACK:-}" ]; then
    "$REPO/scripts/stack/stop.sh" --run-dir "$STACK_RUN" >&2 || true
    rm -rf "$STACK_RUN/influxdb"
  fi
  STACK_RUN=""
done
python3 -m ddtools.bench_faults report --out "$OUT" --report "$REPORT"
say "report: $REPORT (raw results in $OUT)"
