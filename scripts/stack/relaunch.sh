#!/usr/bin/env bash
# Start one component of a stack of scripts/stack/start.sh again, as start.sh started it
# (same command, environment and directory), after it stopped or was killed: what the fault
# bench (scripts/bench-faults.sh) and the system tests do after a kill -9. Its log goes on
# in RUN_DIR/logs/NAME.log; stop.sh stops it as before.
#
# usage: scripts/stack/relaunch.sh --run-dir DIR NAME     (NAME: influxd, join, join-K (a shard), otelcol)
#   Refused while NAME still runs. Waits until the process has run for a second.
set -euo pipefail

LIB_TAG=stack
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

stack_options "$@"
set -- "${ARGS[@]}"
NAME=""
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    -*) usage_error "unknown argument: $1" ;;
    *) [ -z "$NAME" ] || usage_error "one NAME only"; NAME="$1" ;;
  esac
  shift
done
[ -n "$NAME" ] || usage_error "which component? (influxd, join, join-K, otelcol)"
SCRIPT="$RUN_DIR/launch/$NAME.sh"
[ -f "$SCRIPT" ] || die "no $SCRIPT: $NAME was not started by scripts/stack/start.sh --run-dir $RUN_DIR"
if stack_pid_alive "$NAME"; then
  die "$NAME still runs (pid $(cat "$RUN_DIR/pids/$NAME.pid"))"
fi
say "starting $NAME again ($SCRIPT)"
(exec nohup bash "$SCRIPT" </dev/null >>"$RUN_DIR/logs/$NAME.log" 2>&1) &
pid=$!
stack_pid_record "$NAME" "$pid"
sleep 1
stack_pid_alive "$NAME" ||
  { tail -n 20 "$RUN_DIR/logs/$NAME.log" >&2; die "$NAME exited right after its start (log: $RUN_DIR/logs/$NAME.log)"; }
say "$NAME running again (pid $pid)"
