#!/usr/bin/env bash
# End-to-end smoke test of the docker-free stack:
#   start influxd + the latency join + otelcol-ddshark on non-default ports in a temporary run dir,
#   POST three ddshark-like spans to the collector's OTLP/HTTP endpoint
#   (plain JSON, python3 standard library), check the collector's own
#   counters, query InfluxDB with Flux (POST /api/v2/query, Accept:
#   application/csv) and check that the spans arrived with the expected tags
#   and fields; then stop everything and remove the run dir.
#
# Usage: scripts/stack/smoke.sh [--with-prometheus] [--keep]
#   --keep   leave the run dir (logs, data) in place after stopping
# Needs the binaries from scripts/stack/build.sh. Ports are free ephemeral
# ones unless set with the DDSHARK_*_PORT variables start.sh reads.
set -euo pipefail
LIB_TAG=smoke
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
HERE="$REPO_ROOT/scripts/stack"
KEEP=0
START_ARGS=()
while (($#)); do
  case "$1" in
    --keep) KEEP=1 ;;
    --with-prometheus) START_ARGS+=(--with-prometheus) ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown argument: $1" ;;
  esac
  shift
done

# Ports: free ephemeral ports (start.sh --auto-ports) unless the
# DDSHARK_*_PORT variables are set, so the smoke test never collides with a
# stack on the default ports or with another smoke test.
export DDSHARK_INFLUX_TOKEN="${DDSHARK_INFLUX_TOKEN:-ddshark-smoke-token}"
# Short batch timeout: the spans should reach InfluxDB quickly.
export DDSHARK_OTELCOL_BATCH_TIMEOUT="${DDSHARK_OTELCOL_BATCH_TIMEOUT:-200ms}"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ddshark-smoke.XXXXXX")"
finish() {
  local rc=$?
  "$HERE/stop.sh" --run-dir "$RUN_DIR" || rc=1
  if [ "$rc" != 0 ]; then
    say "FAILED (rc=$rc); collector log tail:"
    tail -n 20 "$RUN_DIR/logs/otelcol.log" >&2 2>/dev/null || true
  fi
  if [ "$KEEP" = 1 ]; then
    say "run dir kept: $RUN_DIR"
  else
    rm -rf "$RUN_DIR"
  fi
  if [ "$rc" = 0 ]; then say "PASS"; else say "FAIL"; fi
  exit "$rc"
}
trap finish EXIT
t0=$SECONDS

say "starting stack in $RUN_DIR"
# (assign first: a failing command substitution inside `eval "$(...)"` would
# not stop the script)
stack_env="$("$HERE/start.sh" --run-dir "$RUN_DIR" --auto-ports "${START_ARGS[@]}")"
eval "$stack_env"
say "stack up in $((SECONDS - t0)) s"

TRACE_ID="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
python3 -m ddtools.otlp_smoke send --otlp-http "$DDSHARK_OTLP_HTTP_ENDPOINT" --trace-id "$TRACE_ID"

metric() { python3 -m ddtools.otlp_smoke metric --url "$DDSHARK_OTELCOL_METRICS_URL" "$@"; }
deadline=$((SECONDS + 30))
while :; do
  sent="$(metric --name otelcol_exporter_sent_spans_total --label exporter=otlp_grpc/join)"
  [ "$sent" = absent ] && sent="$(metric --name otelcol_exporter_sent_spans --label exporter=otlp_grpc/join)"
  [ "$sent" != absent ] && [ "$sent" -ge 3 ] && break
  if ((SECONDS >= deadline)); then say "collector did not report 3 spans sent to the join (got: $sent)"; exit 1; fi
  sleep 0.5
done
accepted="$(metric --name otelcol_receiver_accepted_spans_total --label receiver=otlp)"
[ "$accepted" = absent ] && accepted="$(metric --name otelcol_receiver_accepted_spans --label receiver=otlp)"
failed="$(metric --name otelcol_exporter_send_failed_spans_total --label exporter=otlp_grpc/join)"
say "collector: receiver accepted=$accepted, exporter otlp_grpc/join sent=$sent send_failed=$failed"
[ "$accepted" = 3 ] || { say "expected 3 accepted spans"; exit 1; }
case "$failed" in absent|0) ;; *) say "the otlp_grpc/join exporter failed to send spans"; exit 1 ;; esac

python3 -m ddtools.otlp_smoke check -v --influx "$DDSHARK_INFLUX_URL" --org "$DDSHARK_INFLUX_ORG" \
  --bucket "$DDSHARK_INFLUX_BUCKET" --token "$DDSHARK_INFLUX_TOKEN" --trace-id "$TRACE_ID"

if [ -n "${DDSHARK_PROMETHEUS_URL:-}" ]; then
  # Prometheus must have scraped the collector at least once.
  deadline=$((SECONDS + 30))
  until curl -fsS "$DDSHARK_PROMETHEUS_URL/api/v1/query?query=up%7Bjob%3D%22otelcol%22%7D" | grep -q '"value":\[[0-9.]*,"1"\]'; do
    if ((SECONDS >= deadline)); then say "prometheus never saw up{job=\"otelcol\"} == 1"; exit 1; fi
    sleep 1
  done
  say "prometheus scrapes the collector"
fi
say "smoke test done in $((SECONDS - t0)) s"
