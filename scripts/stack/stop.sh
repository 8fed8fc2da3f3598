#!/usr/bin/env bash
# Stop the processes that scripts/stack/start.sh started in a run dir, and
# only those: each RUN_DIR/pids/NAME.pid is checked against the start time
# recorded next to it, so a recycled pid is never signalled. Waits until every
# process is gone (SIGTERM, then SIGKILL after DDSHARK_STACK_STOP_TIMEOUT s).
#
# Usage: scripts/stack/stop.sh [--run-dir DIR] [--purge]
#   --purge   also delete the run dir (logs, InfluxDB data, credentials, stack.env)
set -euo pipefail

LIB_TAG=stack
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
stack_options "$@"
set -- "${ARGS[@]}"
PURGE=0
while (($#)); do
  case "$1" in
    --purge) PURGE=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown argument: $1" ;;
  esac
  shift
done
TIMEOUT="${DDSHARK_STACK_STOP_TIMEOUT:-20}"
PID_DIR="$RUN_DIR/pids"

if [ ! -d "$PID_DIR" ]; then
  say "nothing to stop in $RUN_DIR (no pids/)"
else
  # Collector first so it can flush its queue into the join, the join next (it
  # writes into InfluxDB), InfluxDB last.
  rc=0
  # (the join shards of DDSHARK_STACK_SHARDS: join-0, join-1, …)
  shards=()
  for f in "$PID_DIR"/join-*.pid; do [ -e "$f" ] && shards+=("$(basename "$f" .pid)"); done
  for name in otelcol join "${shards[@]}" prometheus node_exporter influxd; do
    [ -f "$PID_DIR/$name.pid" ] || continue
    pid="$(cat "$PID_DIR/$name.pid")"
    if ! stack_pid_alive "$name"; then
      say "$name (pid $pid) not running"
      rm -f "$PID_DIR/$name.pid" "$PID_DIR/$name.starttime"
      continue
    fi
    say "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + TIMEOUT))
    while stack_pid_alive "$name" && ((SECONDS < deadline)); do sleep 0.2; done
    if stack_pid_alive "$name"; then
      say "$name did not exit after ${TIMEOUT}s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 10))
      while stack_pid_alive "$name" && ((SECONDS < deadline)); do sleep 0.2; done
    fi
    if stack_pid_alive "$name"; then
      say "ERROR: $name (pid $pid) still running"
      rc=1
    else
      rm -f "$PID_DIR/$name.pid" "$PID_DIR/$name.starttime"
    fi
  done
  [ "$rc" = 0 ] || exit "$rc"
  rmdir "$PID_DIR" 2>/dev/null || true
  say "stopped (logs kept in $RUN_DIR/logs)"
fi

if [ "$PURGE" = 1 ] && [ -d "$RUN_DIR" ]; then
  # Only delete what start.sh creates; refuse anything that does not look like a run dir.
  if [ -d "$RUN_DIR/logs" ] || [ -f "$RUN_DIR/stack.env" ] || [ -d "$RUN_DIR/influxdb" ]; then
    rm -rf "$RUN_DIR/logs" "$RUN_DIR/influxdb" "$RUN_DIR/prometheus-data" "$RUN_DIR/pids" \
      "$RUN_DIR/secrets" "$RUN_DIR/stack.env" "$RUN_DIR/prometheus.yml" "$RUN_DIR/otelcol-export.jsonl"
    rmdir "$RUN_DIR" 2>/dev/null || true
    say "purged $RUN_DIR"
  fi
fi
