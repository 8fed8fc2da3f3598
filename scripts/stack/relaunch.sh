#!/usr/bin/env bash
# Start one component of a stack of scripts/stack/start.sh again, as start.sh started it
# (same command, environment and directory), after it stopped or was killed: what the fault
# bench (scripts/bench-faults.sh) and the system tests do after a kill -9. Its log goes on
# in RUN_DIR/logs/NAME.log; stop.sh stops it as before.
#
# usage: scripts/stack/relaunch.sh --run-dir DIR NAME     (NAME: influxd, telegraf, otelcol)
#   Refused while NAME still runs. Waits until the process has run for a second.
set -euo pipefail

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }
LIB_TAG=stack
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

RUN_DIR="$DDSHARK_STACK_RUN_DIR"
NAME=""
while (($#)); do
  case "$1" in
    --run-dir) RUN_DIR="${2:?--run-dir needs a directory}"; shift ;;
    --run-dir=*) RUN_DIR="${1#--run-dir=}" ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "relaunch.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$NAME" ] || { echo "relaunch.sh: one NAME only" >&2; exit 2; }; NAME="$1" ;;
  esac
  shift
done
[ -n "$NAME" ] || { usage >&2; exit 2; }
SCRIPT="$RUN_DIR/launch/$NAME.sh"
[ -f "$SCRIPT" ] || die "no $SCRIPT: $NAME was not started by scripts/stack/start.sh --run-dir $RUN_DIR"
PID_DIR="$RUN_DIR/pids"
if pid="$(cat "$PID_DIR/$NAME.pid" 2>/dev/null)" && [ -r "/proc/$pid/stat" ] &&
   [ "$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1)" != Z ] &&
   [ "$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f20)" = "$(cat "$PID_DIR/$NAME.starttime" 2>/dev/null)" ]; then
  die "$NAME still runs (pid $pid)"
fi
say "starting $NAME again ($SCRIPT)"
(exec nohup bash "$SCRIPT" </dev/null >>"$RUN_DIR/logs/$NAME.log" 2>&1) &
pid=$!
echo "$pid" >"$PID_DIR/$NAME.pid"
sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f20 >"$PID_DIR/$NAME.starttime"
sleep 1
[ -r "/proc/$pid/stat" ] && [ "$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1)" != Z ] ||
  { tail -n 20 "$RUN_DIR/logs/$NAME.log" >&2; die "$NAME exited right after its start (log: $RUN_DIR/logs/$NAME.log)"; }
say "$NAME running again (pid $pid)"
