#!/usr/bin/env bash
# Start the docker-free ddshark telemetry stack on loopback:
#   influxd (fresh throwaway data dir, set up non-interactively with org/token, the
#     raw-span bucket (short retention) and the long bucket (materialised latencies,
#     per-topic counters))
#   the latency join (`ddshark-join`, this checkout's target/release/ddshark-join, rebuilt
#     when its sources changed): takes the spans, metrics and logs as OTLP from the collector
#     and writes them and the latencies it materialises to that influxd
#   otelcol-ddshark with deploy/otelcol/config.yaml: spans, metrics and logs to the join
#   optionally (--with-prometheus) prometheus + prometheus-node-exporter
# Credentials are made on first start (deploy/secrets.sh) and kept in RUN_DIR/secrets:
# InfluxDB's token and password, the OTLP bearer token, a private CA and the OTLP
# receivers' certificate. Whenever the OTLP receivers listen on anything but loopback
# they require TLS and the bearer token (deploy/otelcol/secure.yaml); stack.env then
# gives ddshark the https endpoint, OTEL_EXPORTER_OTLP_CERTIFICATE and
# OTEL_EXPORTER_OTLP_HEADERS.
# Binaries come from scripts/stack/build.sh (run it first, or pass --build).
#
# Usage: scripts/stack/start.sh [--run-dir DIR] [--with-prometheus] [--auto-ports] [--build]
#   --auto-ports  every port whose variable below is unset gets a free
#                 ephemeral port instead of its default (for parallel tests)
#
# Progress goes to stderr; stdout gets only `export VAR=...` lines (also
# written to RUN_DIR/stack.env), so `eval "$(scripts/stack/start.sh)"` works.
# Stop with: scripts/stack/stop.sh [--run-dir DIR]
#
# Environment (defaults in brackets):
#   DDSHARK_STACK_DIR           build cache with bin/    [$HOME/.cache/ddshark-stack]
#   DDSHARK_STACK_RUN_DIR       run dir (pids, logs, data) [$DDSHARK_STACK_DIR/run]
#   DDSHARK_STACK_BIND          listen address of every server [127.0.0.1]
#   DDSHARK_INFLUX_PORT         influxd HTTP API          [8086]
#   DDSHARK_INFLUX_ORG          organisation              [ddshark]
#   DDSHARK_INFLUX_TOKEN        operator token            [made on first start: secrets/influx-token]
#   DDSHARK_INFLUX_BUCKET       raw spans                 [ddshark]
#   DDSHARK_INFLUX_RAW_RETENTION  its retention (s, m, h, d; 0 = forever) [6h]
#   DDSHARK_INFLUX_LONG_BUCKET  latencies, per-topic counters [ddshark_long]
#   DDSHARK_INFLUX_LONG_RETENTION its retention           [30d]
#     (replaying old captures: set both retentions to 0, InfluxDB refuses points
#      older than a bucket's retention)
#   DDSHARK_INFLUX_USER         initial user              [ddshark]
#   DDSHARK_INFLUX_PASSWORD     its password              [made on first start: secrets/influx-password]
#   DDSHARK_STACK_SECRETS_DIR   where the credentials are kept [RUN_DIR/secrets]
#   DDSHARK_OTLP_BIND           listen address of the collector's OTLP receivers [DDSHARK_STACK_BIND];
#                               beyond loopback TLS and the bearer token are required
#   DDSHARK_OTLP_SECURE=1       require them on loopback too
#   DDSHARK_OTLP_TLS_SANS       more names in the OTLP certificate, e.g. DNS:stack.lab,IP:10.0.0.5
#                               (the bind address, or with 0.0.0.0 this host's addresses and name,
#                               are always in)
#   DDSHARK_OTLP_GRPC_PORT      collector OTLP/gRPC       [4317]
#   DDSHARK_OTLP_HTTP_PORT      collector OTLP/HTTP       [4318]
#   DDSHARK_OTELCOL_HEALTH_PORT collector health_check    [13133]
#   DDSHARK_OTELCOL_METRICS_PORT collector own metrics    [8888]
#   DDSHARK_OTELCOL_PROM_PORT   collector prometheus exporter [8889]
#   DDSHARK_JOIN_OTLP_PORT      the latency join's OTLP/gRPC intake [4320]
#   DDSHARK_STACK_SHARDS        latency join shards [1]: with N > 1 the collector is the
#                               routing tier (deploy/otelcol/routing.yaml on top of config.yaml,
#                               spans by trace id, docs/fleet.md) in front of N joins join-0 …
#                               join-N-1, each with its own pid, log, state (DDSHARK_JOIN_STATE.K)
#                               and OTLP port (DDSHARK_JOIN_OTLP_PORT + K; free ones with
#                               --auto-ports); 1: one join named join, as before
#   DDSHARK_STACK_RESOLVER      how the routing tier finds the shards [static]: static (the list
#                               of their ports, routing-static.yaml) or dns (routing-dns.yaml, as
#                               docker compose --scale join=N: the name `join` resolves to the
#                               shards' addresses 127.0.0.2 … 127.0.0.N+1 in the collector's own
#                               /etc/hosts (a mount namespace: root), all on DDSHARK_JOIN_OTLP_PORT,
#                               TLS and the bearer token required, each shard --shard-auto;
#                               the routing tier even with one shard)
#   DDSHARK_JOIN_BIN            the latency join (ddshark-join) [target/release/ddshark-join,
#                               rebuilt by cargo when its sources changed]
#   DDSHARK_JOIN_STATE          the join's state across its restarts [RUN_DIR/join.state]
#   DDSHARK_JOIN_PERIOD, DDSHARK_JOIN_SETTLE_PUSHES, DDSHARK_JOIN_MAX_WAIT_PUSHES,
#   DDSHARK_JOIN_MAX_PENDING, DDSHARK_JOIN_SAMPLE_WINDOW
#                               its --period [10s], --settle-pushes [3], --max-wait-pushes [30],
#                               --max-pending [500000], --sample-window [10s]
#   (a start begins afresh: InfluxDB's data and the join's state are removed)
#   DDSHARK_PROMETHEUS_PORT     prometheus (--with-prometheus) [9090]
#   DDSHARK_NODE_EXPORTER_PORT  node exporter (--with-prometheus) [9100]
#   DDSHARK_STACK_TIMEOUT       seconds to wait for health [60]
# Other DDSHARK_OTELCOL_* variables of deploy/otelcol/config.yaml (exporter
# lists, debug verbosity, ...) pass through.
set -euo pipefail

LIB_TAG=stack
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
BIN_DIR="$DDSHARK_STACK_DIR/bin"
stack_options "$@"
set -- "${ARGS[@]}"
WITH_PROMETHEUS=0
DO_BUILD=0
AUTO_PORTS=0
while (($#)); do
  case "$1" in
    --with-prometheus) WITH_PROMETHEUS=1 ;;
    --build) DO_BUILD=1 ;;
    --auto-ports) AUTO_PORTS=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage_error "unknown argument: $1" ;;
  esac
  shift
done

BIND="${DDSHARK_STACK_BIND:-127.0.0.1}"
HOST="$BIND"; [ "$HOST" = 0.0.0.0 ] && HOST=127.0.0.1
JOIN_PORT_GIVEN="${DDSHARK_JOIN_OTLP_PORT:+1}"
if [ "$AUTO_PORTS" = 1 ]; then
  # Nine distinct free ports (all bound at once, then released); the
  # servers bind them moments later.
  read -r AP1 AP2 AP3 AP4 AP5 AP6 AP7 AP8 AP9 < <(python3 -c '
import socket, sys
socks = []
for _ in range(9):
    s = socket.socket(); s.bind((sys.argv[1], 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
' "$BIND")
  : "${DDSHARK_INFLUX_PORT:=$AP1}" "${DDSHARK_OTLP_GRPC_PORT:=$AP2}" "${DDSHARK_OTLP_HTTP_PORT:=$AP3}"
  : "${DDSHARK_OTELCOL_HEALTH_PORT:=$AP4}" "${DDSHARK_OTELCOL_METRICS_PORT:=$AP5}" "${DDSHARK_OTELCOL_PROM_PORT:=$AP6}"
  : "${DDSHARK_PROMETHEUS_PORT:=$AP7}" "${DDSHARK_NODE_EXPORTER_PORT:=$AP8}"
  : "${DDSHARK_JOIN_OTLP_PORT:=$AP9}"
fi
INFLUX_PORT="${DDSHARK_INFLUX_PORT:-8086}"
INFLUX_ORG="${DDSHARK_INFLUX_ORG:-ddshark}"
INFLUX_BUCKET="${DDSHARK_INFLUX_BUCKET:-ddshark}"
INFLUX_LONG_BUCKET="${DDSHARK_INFLUX_LONG_BUCKET:-ddshark_long}"
RAW_RETENTION="${DDSHARK_INFLUX_RAW_RETENTION:-6h}"
LONG_RETENTION="${DDSHARK_INFLUX_LONG_RETENTION:-30d}"
INFLUX_USER="${DDSHARK_INFLUX_USER:-ddshark}"
OTLP_BIND="${DDSHARK_OTLP_BIND:-$BIND}"
OTLP_HOST="$OTLP_BIND"; [ "$OTLP_HOST" = 0.0.0.0 ] && OTLP_HOST=127.0.0.1
# Beyond loopback the OTLP receivers require TLS and the bearer token.
case "$OTLP_BIND" in
  127.*|::1|localhost) OTLP_SECURE="${DDSHARK_OTLP_SECURE:-0}" ;;
  *) OTLP_SECURE=1 ;;
esac
case "$OTLP_SECURE" in 0|1) ;; *) usage_error "DDSHARK_OTLP_SECURE must be 0 or 1" ;; esac
OTLP_GRPC_PORT="${DDSHARK_OTLP_GRPC_PORT:-4317}"
OTLP_HTTP_PORT="${DDSHARK_OTLP_HTTP_PORT:-4318}"
HEALTH_PORT="${DDSHARK_OTELCOL_HEALTH_PORT:-13133}"
METRICS_PORT="${DDSHARK_OTELCOL_METRICS_PORT:-8888}"
PROM_EXP_PORT="${DDSHARK_OTELCOL_PROM_PORT:-8889}"
PROMETHEUS_PORT="${DDSHARK_PROMETHEUS_PORT:-9090}"
NODE_EXPORTER_PORT="${DDSHARK_NODE_EXPORTER_PORT:-9100}"
JOIN_OTLP_PORT="${DDSHARK_JOIN_OTLP_PORT:-4320}"
SHARDS="${DDSHARK_STACK_SHARDS:-1}"
[[ "$SHARDS" =~ ^[1-9][0-9]*$ ]] && ((SHARDS <= 64)) ||
  usage_error "DDSHARK_STACK_SHARDS must be a number of join shards from 1 to 64, not '$SHARDS'"
# The joins' names (their pids/, logs/ and launch/ files) and OTLP ports.
JOIN_NAMES=(join)
JOIN_PORTS=("$JOIN_OTLP_PORT")
if ((SHARDS > 1)); then
  JOIN_NAMES=()
  JOIN_PORTS=()
  if [ "$AUTO_PORTS" = 1 ] && [ -z "$JOIN_PORT_GIVEN" ]; then
    read -r -a JOIN_PORTS < <(python3 -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(); s.bind((sys.argv[1], 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
' "$BIND" "$SHARDS")
  fi
  for ((k = 0; k < SHARDS; k++)); do
    JOIN_NAMES+=("join-$k")
    [ "${#JOIN_PORTS[@]}" -gt "$k" ] || JOIN_PORTS+=("$((JOIN_OTLP_PORT + k))")
  done
fi
RESOLVER="${DDSHARK_STACK_RESOLVER:-static}"
case "$RESOLVER" in
  static) ROUTING=$((SHARDS > 1 ? 1 : 0)) ;;
  dns)
    ROUTING=1
    [ "$(id -u)" = 0 ] || die "DDSHARK_STACK_RESOLVER=dns needs root (the collector's own /etc/hosts in a mount namespace)"
    [ "$HOST" = 127.0.0.1 ] || usage_error "DDSHARK_STACK_RESOLVER=dns puts the shards on 127.0.0.2 …: DDSHARK_STACK_BIND must be 127.0.0.1, not $BIND"
    # As compose: every shard behind the name join on one port, at its own address.
    JOIN_NAMES=()
    JOIN_HOSTS=()
    if [ "$AUTO_PORTS" = 1 ] && [ -z "$JOIN_PORT_GIVEN" ]; then
      JOIN_OTLP_PORT=$(python3 -c '
import socket, sys
for _ in range(50):
    s = socket.socket(); s.bind(("127.0.0.2", 0)); port = s.getsockname()[1]
    try:
        for k in range(1, int(sys.argv[1])):
            t = socket.socket(); t.bind((f"127.0.0.{2 + k}", port)); t.close()
    except OSError:
        continue
    print(port); break
' "$SHARDS")
    fi
    JOIN_PORTS=()
    for ((k = 0; k < SHARDS; k++)); do
      JOIN_NAMES+=("join-$k")
      JOIN_HOSTS+=("127.0.0.$((2 + k))")
      JOIN_PORTS+=("$JOIN_OTLP_PORT")
    done
    ;;
  *) usage_error "DDSHARK_STACK_RESOLVER must be static or dns, not '$RESOLVER'" ;;
esac
# (static: every join on this stack's address)
if [ "$RESOLVER" = static ]; then
  JOIN_HOSTS=()
  for k in "${!JOIN_NAMES[@]}"; do JOIN_HOSTS+=("$HOST"); done
fi
TIMEOUT="${DDSHARK_STACK_TIMEOUT:-60}"
INFLUX_URL="http://$HOST:$INFLUX_PORT"

mkdir -p "$RUN_DIR"
RUN_DIR="$(cd "$RUN_DIR" && pwd)"
PID_DIR="$RUN_DIR/pids"
LOG_DIR="$RUN_DIR/logs"
SECRETS_DIR="${DDSHARK_STACK_SECRETS_DIR:-$RUN_DIR/secrets}"

# ---- refuse to start twice in one run dir --------------------------------
for f in "$PID_DIR"/*.pid; do
  [ -e "$f" ] || continue
  n="$(basename "$f" .pid)"
  if stack_pid_alive "$n"; then
    die "a stack is already running in $RUN_DIR ($n pid $(cat "$PID_DIR/$n.pid")); stop it with scripts/stack/stop.sh --run-dir $RUN_DIR"
  fi
done
rm -rf "$PID_DIR" "$LOG_DIR" "$RUN_DIR/influxdb" "$RUN_DIR/prometheus-data" "$RUN_DIR/stack.env"
mkdir -p "$PID_DIR" "$LOG_DIR"

# ---- binaries -------------------------------------------------------------
if [ "$DO_BUILD" = 1 ]; then "$REPO_ROOT/scripts/stack/build.sh" >&2; fi
OTELCOL_BIN="$BIN_DIR/otelcol-ddshark"
INFLUXD_BIN="$BIN_DIR/influxd"
for b in "$OTELCOL_BIN" "$INFLUXD_BIN"; do
  [ -x "$b" ] || die "missing $b: run scripts/stack/build.sh first (or start.sh --build)"
done
if [ "$WITH_PROMETHEUS" = 1 ]; then
  PROMETHEUS_BIN="$(command -v prometheus || true)"
  NODE_EXPORTER_BIN="$(command -v prometheus-node-exporter || command -v node_exporter || true)"
  [ -n "$PROMETHEUS_BIN" ] || die "prometheus not found (apt-get install prometheus, or build.sh)"
  [ -n "$NODE_EXPORTER_BIN" ] || die "prometheus-node-exporter not found (apt-get install prometheus-node-exporter)"
fi

# ---- credentials (made once, kept across starts) ----------------------------
sans=()
case "$OTLP_BIND" in
  0.0.0.0|::)
    for a in $(hostname -I 2>/dev/null); do sans+=("IP:$a"); done
    sans+=("DNS:$(hostname)") ;;
  127.*|::1|localhost) ;;
  *[!0-9.]*) sans+=("DNS:$OTLP_BIND") ;;
  *) sans+=("IP:$OTLP_BIND") ;;
esac
# (the shards' certificate is the receivers' one: the routing tier checks the name join)
[ "$RESOLVER" = dns ] && sans+=("DNS:join")
"$REPO_ROOT/deploy/secrets.sh" "$SECRETS_DIR" "${sans[@]}" || die "making the credentials in $SECRETS_DIR failed"
INFLUX_TOKEN="${DDSHARK_INFLUX_TOKEN:-$(cat "$SECRETS_DIR/influx-token")}"
INFLUX_PASSWORD="${DDSHARK_INFLUX_PASSWORD:-$(cat "$SECRETS_DIR/influx-password")}"
OTLP_TOKEN="$(head -n1 "$SECRETS_DIR/otlp-token" | awk '{print $1}')"
[ -n "$INFLUX_TOKEN" ] && [ -n "$INFLUX_PASSWORD" ] && [ -n "$OTLP_TOKEN" ] || die "empty credentials in $SECRETS_DIR"

# ---- ports must be free ---------------------------------------------------
ports=()
for p in "$INFLUX_PORT" "$OTLP_GRPC_PORT" "$OTLP_HTTP_PORT" "$HEALTH_PORT" "$METRICS_PORT" "$PROM_EXP_PORT"; do
  ports+=("$BIND $p")
done
for k in "${!JOIN_NAMES[@]}"; do ports+=("${JOIN_HOSTS[$k]} ${JOIN_PORTS[$k]}"); done
[ "$WITH_PROMETHEUS" = 1 ] && ports+=("$BIND $PROMETHEUS_PORT" "$BIND $NODE_EXPORTER_PORT")
dups="$(printf '%s\n' "${ports[@]}" | sort | uniq -d)"
[ -z "$dups" ] || die "port(s) configured twice: $dups"
python3 - "${ports[@]}" <<'EOF' || die "port(s) in use, see above; set the DDSHARK_*_PORT variables"
import socket, sys
bad = []
for pair in sys.argv[1:]:
    host, p = pair.split()
    s = socket.socket()
    # Like the servers themselves (Go sets SO_REUSEADDR): TIME_WAIT
    # connections of a previous run must not count as "in use".
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, int(p)))
    except OSError as e:
        bad.append(p); print(f"[stack] port {host}:{p} unavailable: {e}", file=sys.stderr)
    finally:
        s.close()
sys.exit(1 if bad else 0)
EOF

# ---- process helpers ------------------------------------------------------
STARTED=()
cleanup_on_error() {
  local rc=$?
  if [ "$rc" != 0 ] && ((${#STARTED[@]})); then
    say "start failed; stopping what was started: ${STARTED[*]}"
    "$REPO_ROOT/scripts/stack/stop.sh" --run-dir "$RUN_DIR" >&2 || true
  fi
  exit "$rc"
}
trap cleanup_on_error EXIT

# launch NAME CWD CMD... : start detached from our stdio, record pid + starttime
launch() {
  local name="$1" cwd="$2"; shift 2
  say "starting $name: $*"
  # How to start it again as it was (scripts/stack/relaunch.sh): its environment (mode 0600:
  # it holds the tokens), directory and command.
  mkdir -p "$RUN_DIR/launch"
  ( umask 077
    { echo "# $name as scripts/stack/start.sh started it (scripts/stack/relaunch.sh runs this)"
      export -p
      printf 'cd %q\n' "$cwd"
      printf 'exec'; printf ' %q' "$@"; echo
    } >"$RUN_DIR/launch/$name.sh" )
  (cd "$cwd" && exec nohup "$@" </dev/null >"$LOG_DIR/$name.log" 2>&1) &
  stack_pid_record "$name" $!
  STARTED+=("$name")
}

# fail_with_log NAME MESSAGE: the end of NAME's log, then die
fail_with_log() {
  tail -n 30 "$LOG_DIR/$1.log" >&2 || true
  die "$2"
}

# wait_until NAME READY TIMED-OUT PROBE...: poll PROBE until it succeeds while NAME runs.
# NAME must still run half a second after PROBE first succeeds: another process may hold
# its port (a leftover or a parallel stack), and ours then exits on the bind error.
wait_until() {
  local name="$1" ready="$2" timed_out="$3" deadline=$((SECONDS + TIMEOUT))
  shift 3
  while :; do
    stack_pid_alive "$name" || fail_with_log "$name" "$name exited during start-up (log: $LOG_DIR/$name.log)"
    if "$@"; then
      sleep 0.5
      stack_pid_alive "$name" || fail_with_log "$name" \
        "$name exited right after start-up; is its port taken by another process? (log: $LOG_DIR/$name.log)"
      say "$name $ready"
      return 0
    fi
    ((SECONDS < deadline)) || fail_with_log "$name" "$name $timed_out"
    sleep 0.3
  done
}

# http_answers URL [EXPECT-SUBSTRING]
http_answers() {
  local body
  body="$(curl -fsS --max-time 2 "$1" 2>/dev/null)" && [[ "$body" == *"${2:-}"* ]]
}

# tcp_accepts HOST PORT
tcp_accepts() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# wait_http NAME URL [EXPECT-SUBSTRING]
wait_http() {
  wait_until "$1" "healthy ($2)" "not healthy after ${TIMEOUT}s ($2)" http_answers "$2" "${3:-}"
}

# wait_tcp NAME HOST PORT: something accepts connections there
wait_tcp() {
  wait_until "$1" "listening ($2:$3)" "not listening on $2:$3 after ${TIMEOUT}s" tcp_accepts "$2" "$3"
}

# ---- influxd --------------------------------------------------------------
mkdir -p "$RUN_DIR/influxdb"
# INFLUXD_CONFIG_PATH points at an empty dir so no user config is picked up.
INFLUXD_CONFIG_PATH="$RUN_DIR/influxdb" launch influxd "$RUN_DIR" \
  "$INFLUXD_BIN" \
  --http-bind-address "$BIND:$INFLUX_PORT" \
  --bolt-path "$RUN_DIR/influxdb/influxd.bolt" \
  --engine-path "$RUN_DIR/influxdb/engine" \
  --sqlite-path "$RUN_DIR/influxdb/influxd.sqlite" \
  --reporting-disabled \
  --ui-disabled \
  --log-level warn
wait_http influxd "$INFLUX_URL/health" '"pass"'

say "setting up InfluxDB (org=$INFLUX_ORG buckets=$INFLUX_BUCKET [$RAW_RETENTION], $INFLUX_LONG_BUCKET [$LONG_RETENTION] user=$INFLUX_USER)"
RAW_RETENTION_S="$(python3 -m ddtools.influx_setup seconds "$RAW_RETENTION")" \
  || die "DDSHARK_INFLUX_RAW_RETENTION: not a duration: $RAW_RETENTION"
setup_body="$(python3 -c 'import json,sys; print(json.dumps({"username":sys.argv[1],"password":sys.argv[2],"org":sys.argv[3],"bucket":sys.argv[4],"token":sys.argv[5],"retentionPeriodSeconds":int(sys.argv[6])}))' \
  "$INFLUX_USER" "$INFLUX_PASSWORD" "$INFLUX_ORG" "$INFLUX_BUCKET" "$INFLUX_TOKEN" "$RAW_RETENTION_S")"
setup_code="$(curl -sS -o "$LOG_DIR/influx-setup.json" -w '%{http_code}' \
  -X POST "$INFLUX_URL/api/v2/setup" -H 'Content-Type: application/json' --data "$setup_body")"
if [ "$setup_code" != 201 ]; then
  cat "$LOG_DIR/influx-setup.json" >&2 || true
  die "POST /api/v2/setup returned HTTP $setup_code"
fi
# A token check: list buckets with the token.
curl -fsS -o /dev/null -H "Authorization: Token $INFLUX_TOKEN" \
  "$INFLUX_URL/api/v2/buckets?org=$INFLUX_ORG&name=$INFLUX_BUCKET" \
  || die "InfluxDB token check failed"
python3 -m ddtools.influx_setup provision \
  --url "$INFLUX_URL" --org "$INFLUX_ORG" --token "$INFLUX_TOKEN" \
  --bucket "$INFLUX_BUCKET" --long-bucket "$INFLUX_LONG_BUCKET" --long-retention "$LONG_RETENTION" >&2 \
  || die "creating the long bucket failed"

# ---- the latency join (spans, metrics, logs → InfluxDB) ----
export DDSHARK_INFLUX_URL="$INFLUX_URL" DDSHARK_INFLUX_ORG="$INFLUX_ORG"
export DDSHARK_INFLUX_BUCKET="$INFLUX_BUCKET" DDSHARK_INFLUX_LONG_BUCKET="$INFLUX_LONG_BUCKET"
export DDSHARK_INFLUX_TOKEN="$INFLUX_TOKEN"
# The latency join is `ddshark-join` (crates/span-join): this checkout's release build unless
# DDSHARK_JOIN_BIN names one.
# It is rebuilt only when the sources it is built from changed (their digest is kept beside it
# in ddshark-join.sources): cargo goes by the files' times, which every checkout moves, and
# its fat-LTO release build takes minutes. A binary of other sources never runs.
if [ -z "${DDSHARK_JOIN_BIN:-}" ]; then
  DDSHARK_JOIN_BIN="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release/ddshark-join"
  join_sources=$(python3 -m ddtools.build_stamp span-join) ||
    die "cannot take the digest of ddshark-join's sources (python3 -m ddtools.build_stamp span-join)"
  join_stamp="$DDSHARK_JOIN_BIN.sources"
  if [ -x "$DDSHARK_JOIN_BIN" ] && [ "$(cat "$join_stamp" 2>/dev/null)" = "$join_sources" ]; then
    say "ddshark-join (the latency join): $DDSHARK_JOIN_BIN, built from the current sources"
  else
    command -v cargo >/dev/null ||
      die "$DDSHARK_JOIN_BIN is missing or built from other sources, and there is no cargo to build it (scripts/setup.sh installs Rust; or set DDSHARK_JOIN_BIN)"
    say "ddshark-join (the latency join): its sources changed: cargo build --release -p span-join --bin ddshark-join"
    rm -f "$join_stamp"
    (cd "$REPO_ROOT" && cargo build --release -q -p span-join --bin ddshark-join >&2) ||
      die "cargo build --release -p span-join --bin ddshark-join failed"
    # The digest taken before the build: sources edited meanwhile make the next start rebuild.
    echo "$join_sources" >"$join_stamp"
  fi
fi
[ -x "$DDSHARK_JOIN_BIN" ] || die "DDSHARK_JOIN_BIN=$DDSHARK_JOIN_BIN is not an executable"
"$DDSHARK_JOIN_BIN" --help >/dev/null 2>&1 ||
  die "DDSHARK_JOIN_BIN=$DDSHARK_JOIN_BIN does not run (--help failed)"
# (a fresh InfluxDB: nothing of an earlier run is carried over)
JOIN_STATE="${DDSHARK_JOIN_STATE:-$RUN_DIR/join.state}"
rm -rf "$JOIN_STATE" "$JOIN_STATE".journal-* "$JOIN_STATE".[0-9]*
# (the token in a file, never on a command line: DDSHARK_INFLUX_TOKEN may differ from the secrets' file)
JOIN_TOKEN_FILE="$SECRETS_DIR/influx-token"
if [ "$INFLUX_TOKEN" != "$(head -n1 "$JOIN_TOKEN_FILE" 2>/dev/null)" ]; then
  JOIN_TOKEN_FILE="$RUN_DIR/join-influx-token"
  (umask 077 && printf '%s\n' "$INFLUX_TOKEN" >"$JOIN_TOKEN_FILE")
fi
# The join answers an export once its raw points are in InfluxDB and its SAMPLE/DATA_FRAG
# spans in the state's journal (docs/latency.md, "Writing InfluxDB itself"). Shards: each its
# own state and port, and --shard K (the tag of what every shard writes, docs/fleet.md).
JOIN_ADDRS=()
# With the DNS resolver, as in compose: shards alike, each claiming a shard number and its
# state (--shard-auto), TLS and the bearer token on the intake.
for k in "${!JOIN_NAMES[@]}"; do
  shard_args=()
  state="$JOIN_STATE"
  if [ "$RESOLVER" = dns ]; then
    shard_args=(--shard-auto --otlp-token-file "$SECRETS_DIR/otlp-token"
      --otlp-tls-cert "$SECRETS_DIR/otlp.pem" --otlp-tls-key "$SECRETS_DIR/otlp.key")
  elif ((SHARDS > 1)); then
    shard_args=(--shard "$k")
    state="$JOIN_STATE.$k"
  fi
  launch "${JOIN_NAMES[$k]}" "$RUN_DIR" "$DDSHARK_JOIN_BIN" --otlp-grpc "${JOIN_HOSTS[$k]}:${JOIN_PORTS[$k]}" \
    "${shard_args[@]}" \
    --period "${DDSHARK_JOIN_PERIOD:-10s}" \
    --settle-pushes "${DDSHARK_JOIN_SETTLE_PUSHES:-3}" \
    --max-wait-pushes "${DDSHARK_JOIN_MAX_WAIT_PUSHES:-30}" \
    --max-pending "${DDSHARK_JOIN_MAX_PENDING:-500000}" \
    --sample-window "${DDSHARK_JOIN_SAMPLE_WINDOW:-10s}" \
    --state "$state" \
    --influx-url "$INFLUX_URL" --influx-org "$INFLUX_ORG" \
    --influx-token-file "$JOIN_TOKEN_FILE" \
    --raw-bucket "$INFLUX_BUCKET" --long-bucket "$INFLUX_LONG_BUCKET"
  JOIN_ADDRS+=("${JOIN_HOSTS[$k]}:${JOIN_PORTS[$k]}")
done
for k in "${!JOIN_NAMES[@]}"; do
  wait_tcp "${JOIN_NAMES[$k]}" "${JOIN_HOSTS[$k]}" "${JOIN_PORTS[$k]}"
done
export DDSHARK_JOIN_OTLP_ADDR="${JOIN_ADDRS[0]}"
# (the routing tier's static resolver: a YAML list)
DDSHARK_JOIN_SHARDS="[$(IFS=,; echo "${JOIN_ADDRS[*]}")]"
export DDSHARK_JOIN_SHARDS

# ---- collector ----------------------------------------------------------------
export DDSHARK_OTELCOL_BIND="$BIND" DDSHARK_OTLP_BIND="$OTLP_BIND"
export DDSHARK_OTLP_GRPC_PORT="$OTLP_GRPC_PORT" DDSHARK_OTLP_HTTP_PORT="$OTLP_HTTP_PORT"
export DDSHARK_OTELCOL_HEALTH_PORT="$HEALTH_PORT" DDSHARK_OTELCOL_METRICS_PORT="$METRICS_PORT"
export DDSHARK_OTELCOL_PROM_PORT="$PROM_EXP_PORT"
export DDSHARK_OTELCOL_FILE_PATH="${DDSHARK_OTELCOL_FILE_PATH:-$RUN_DIR/otelcol-export.jsonl}"
export DDSHARK_OTELCOL_STORAGE_DIR="${DDSHARK_OTELCOL_STORAGE_DIR:-$RUN_DIR/otelcol-queue}"
rm -rf "$DDSHARK_OTELCOL_STORAGE_DIR"
otelcol_configs=(--config="$REPO_ROOT/deploy/otelcol/config.yaml")
if [ "$ROUTING" = 1 ]; then
  otelcol_configs+=(--config="$REPO_ROOT/deploy/otelcol/routing.yaml"
    --config="$REPO_ROOT/deploy/otelcol/routing-$RESOLVER.yaml")
  say "routing tier: spans by trace id to $SHARDS join shards $DDSHARK_JOIN_SHARDS ($RESOLVER resolver)"
fi
otelcol_launcher=()
if [ "$RESOLVER" = dns ]; then
  export DDSHARK_JOIN_DNS_NAME=join DDSHARK_JOIN_DNS_PORT="$JOIN_OTLP_PORT"
  export DDSHARK_JOIN_CA_FILE="$SECRETS_DIR/ca.pem" DDSHARK_OTLP_TOKEN_FILE="$SECRETS_DIR/otlp-token"
  # The name join in the collector's /etc/hosts only (what `ip netns exec` does for a
  # namespace's hosts file: a bind mount in a mount namespace of its own).
  { cat /etc/hosts; for h in "${JOIN_HOSTS[@]}"; do echo "$h join"; done; } >"$RUN_DIR/hosts"
  # shellcheck disable=SC2016 # ($0 and $@ are the inner shell's)
  otelcol_launcher=(unshare --mount --propagation private
    sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$RUN_DIR/hosts")
fi
OTLP_SCHEME=http
if [ "$OTLP_SECURE" = 1 ]; then
  export DDSHARK_OTLP_TLS_CERT="$SECRETS_DIR/otlp.pem" DDSHARK_OTLP_TLS_KEY="$SECRETS_DIR/otlp.key"
  export DDSHARK_OTLP_TOKEN_FILE="$SECRETS_DIR/otlp-token"
  otelcol_configs+=(--config="$REPO_ROOT/deploy/otelcol/secure.yaml")
  OTLP_SCHEME=https
  say "OTLP receivers on $OTLP_BIND: TLS (CA $SECRETS_DIR/ca.pem) and a bearer token required"
fi
launch otelcol "$RUN_DIR" "${otelcol_launcher[@]}" "$OTELCOL_BIN" "${otelcol_configs[@]}"
wait_http otelcol "http://$HOST:$HEALTH_PORT/" ''
wait_http otelcol "http://$HOST:$METRICS_PORT/metrics" 'otelcol_'

# ---- prometheus + node exporter (optional) ------------------------------------
if [ "$WITH_PROMETHEUS" = 1 ]; then
  launch node_exporter "$RUN_DIR" "$NODE_EXPORTER_BIN" \
    --web.listen-address="$BIND:$NODE_EXPORTER_PORT"
  wait_http node_exporter "http://$HOST:$NODE_EXPORTER_PORT/metrics" 'node_network_receive_bytes_total'

  # deploy/prometheus/prometheus.yml names the docker-compose services; point
  # those targets at this run's loopback ports instead.
  sed -e "s#otelcol:8888#$HOST:$METRICS_PORT#g" \
      -e "s#otelcol:8889#$HOST:$PROM_EXP_PORT#g" \
      -e "s#host.docker.internal:9100#$HOST:$NODE_EXPORTER_PORT#g" \
      -e "s#influxdb:8086#$HOST:$INFLUX_PORT#g" \
      -e "s#localhost:9090#$HOST:$PROMETHEUS_PORT#g" \
      "$REPO_ROOT/deploy/prometheus/prometheus.yml" >"$RUN_DIR/prometheus.yml"
  mkdir -p "$RUN_DIR/prometheus-data"
  launch prometheus "$RUN_DIR" "$PROMETHEUS_BIN" \
    --config.file="$RUN_DIR/prometheus.yml" \
    --storage.tsdb.path="$RUN_DIR/prometheus-data" \
    --web.listen-address="$BIND:$PROMETHEUS_PORT"
  wait_http prometheus "http://$HOST:$PROMETHEUS_PORT/-/ready" ''
fi

# ---- report ---------------------------------------------------------------
# (it holds the credentials)
touch "$RUN_DIR/stack.env" && chmod 0600 "$RUN_DIR/stack.env"
{
  echo "export DDSHARK_STACK_RUN_DIR='$RUN_DIR'"
  echo "export DDSHARK_STACK_SECRETS_DIR='$SECRETS_DIR'"
  echo "export DDSHARK_INFLUX_URL='$INFLUX_URL'"
  echo "export DDSHARK_INFLUX_ORG='$INFLUX_ORG'"
  echo "export DDSHARK_INFLUX_BUCKET='$INFLUX_BUCKET'"
  echo "export DDSHARK_INFLUX_LONG_BUCKET='$INFLUX_LONG_BUCKET'"
  echo "export DDSHARK_INFLUX_TOKEN='$INFLUX_TOKEN'"
  echo "export DDSHARK_OTLP_ENDPOINT='$OTLP_SCHEME://$OTLP_HOST:$OTLP_GRPC_PORT'"
  echo "export DDSHARK_OTLP_HTTP_ENDPOINT='$OTLP_SCHEME://$OTLP_HOST:$OTLP_HTTP_PORT'"
  echo "export OTEL_EXPORTER_OTLP_ENDPOINT='$OTLP_SCHEME://$OTLP_HOST:$OTLP_GRPC_PORT'"
  if [ "$OTLP_SECURE" = 1 ]; then
    echo "export DDSHARK_OTLP_TOKEN='$OTLP_TOKEN'"
    echo "export OTEL_EXPORTER_OTLP_CERTIFICATE='$SECRETS_DIR/ca.pem'"
    echo "export OTEL_EXPORTER_OTLP_HEADERS='authorization=Bearer%20$OTLP_TOKEN'"
  fi
  echo "export DDSHARK_JOIN_OTLP_ADDR='$DDSHARK_JOIN_OTLP_ADDR'"
  echo "export DDSHARK_JOIN_SHARDS='$DDSHARK_JOIN_SHARDS'"
  echo "export DDSHARK_OTELCOL_HEALTH_URL='http://$HOST:$HEALTH_PORT/'"
  echo "export DDSHARK_OTELCOL_METRICS_URL='http://$HOST:$METRICS_PORT/metrics'"
  echo "export DDSHARK_OTELCOL_PROM_URL='http://$HOST:$PROM_EXP_PORT/metrics'"
  if [ "$WITH_PROMETHEUS" = 1 ]; then
    echo "export DDSHARK_PROMETHEUS_URL='http://$HOST:$PROMETHEUS_PORT'"
    echo "export DDSHARK_NODE_EXPORTER_URL='http://$HOST:$NODE_EXPORTER_PORT/metrics'"
  fi
} >"$RUN_DIR/stack.env"
say "stack up in $RUN_DIR (pids: $(cd "$PID_DIR" && for f in *.pid; do printf '%s=%s ' "${f%.pid}" "$(cat "$f")"; done))"
say "env (also in $RUN_DIR/stack.env):"
cat "$RUN_DIR/stack.env"
