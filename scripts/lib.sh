# Shared by the scripts (source it; set LIB_TAG first to name the script in messages):
#   say MSG / die MSG    progress and fatal errors on stderr, as "[TAG] MSG"
#   usage / usage_error MSG   the script's help (its leading comment) / a wrong argument
#   take_options TABLE ARGS...   `--name VALUE` options into variables, by a table
#   REPO_ROOT            the repository
#   FIXTURES             the bundled captures with their oracles ($REPO_ROOT/tests/pcaps)
#   DDSHARK_CAPTURES     where scripts/make-fixtures.sh writes its captures
#                        [/var/tmp/ddshark-captures]
#   BENCH_CAPTURE        the benchmarks' large capture (the Autoware mix that
#                        `scripts/make-fixtures.sh --bench` makes)
#                        [$DDSHARK_CAPTURES/j_autoware_mix/a.pcap]
#   BENCH_E2E_OUT        scripts/bench-e2e.sh's results and soak captures (scripts/bench-ingest.sh
#                        replays those) [/var/tmp/ddshark-bench-e2e]
#   DDSHARK_STACK_DIR    the stack's build cache (bin/: what scripts/stack/build.sh builds)
#                        [$HOME/.cache/ddshark-stack]
#   DDSHARK_STACK_RUN_DIR  the stack's default run dir (pids, logs, data, stack.env)
#                        [$DDSHARK_STACK_DIR/run]
#   TRAFFIC_BUILD_DIR    where tests/traffic builds its helpers (RustDDS, Dust DDS, vlan_tag.o)
#                        [${XDG_CACHE_HOME:-$HOME/.cache}/dds-traffic-build]
#   VENV                 the Python venv with cyclonedds (scripts/setup.sh --test makes it)
#                        [/opt/dds-venv]
#   PYTHONPATH           scripts/ first: the Python tools are the package scripts/ddtools,
#                        run as `python3 -m ddtools.NAME` (scripts/ddtools/__init__.py)
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FIXTURES="$REPO_ROOT/tests/pcaps"
DDSHARK_CAPTURES=${DDSHARK_CAPTURES:-/var/tmp/ddshark-captures}
BENCH_CAPTURE=${BENCH_CAPTURE:-$DDSHARK_CAPTURES/j_autoware_mix/a.pcap}
BENCH_E2E_OUT=${BENCH_E2E_OUT:-/var/tmp/ddshark-bench-e2e}
DDSHARK_STACK_DIR=${DDSHARK_STACK_DIR:-$HOME/.cache/ddshark-stack}
DDSHARK_STACK_RUN_DIR=${DDSHARK_STACK_RUN_DIR:-$DDSHARK_STACK_DIR/run}
TRAFFIC_BUILD_DIR=${TRAFFIC_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dds-traffic-build}
VENV=${VENV:-/opt/dds-venv}
export PYTHONPATH="$REPO_ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}"
say() { printf '[%s] %s\n' "${LIB_TAG:-ddshark}" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "${LIB_TAG:-ddshark}" "$*" >&2; exit 1; }
# usage: the script's help, its leading comment (the lines after #! up to the first that is
# not a comment); usage_error MSG: MSG naming --help on stderr, exit 2 (a wrong argument)
usage() { awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; }
usage_error() { printf '[%s] %s (see %s --help)\n' "${LIB_TAG:-ddshark}" "$*" "$0" >&2; exit 2; }
# take_options TABLE ARGS...: the scripts' `--name VALUE` loop from a table of lines
# "--name VAR" (VAR gets the next argument); -h/--help prints usage and exits 0, anything
# else (or a --name without its value) is a usage_error naming it
take_options() {
  local _table=$1 _opt _var _known
  shift
  while (($#)); do
    case "$1" in -h|--help) usage; exit 0 ;; esac
    _known=''
    while read -r _opt _var; do
      if [ "$_opt" = "$1" ]; then _known=$_var; break; fi
    done <<<"$_table"
    [ -n "$_known" ] || usage_error "unknown argument $1"
    [ $# -ge 2 ] || usage_error "$1 needs a value"
    printf -v "$_known" '%s' "$2"
    shift 2
  done
}

# stop_children PID...: SIGTERM to each of this shell's background processes (background shells
# ignore INT; ddshark and tcpdump stop cleanly on either), then waits for them all
stop_children() {
  local p
  for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# What a script needs, each a `die` naming how to get it when it is missing:
#   need_root WHY        root
#   need_tools TOOL...   the tools (scripts/setup.sh --test installs them)
#   need_ddshark BIN     an executable ddshark
#   need_cyclonedds      $VENV's python with cyclonedds
#   need_live_dds BIN TOOL...   all of them: root (network namespaces, live capture), the
#                        tools, ddshark at BIN, cyclonedds (the live tests with DDS traffic)
need_root() { [ "$(id -u)" = 0 ] || die "must run as root ($*): sudo $0"; }
need_tools() {
  local t
  for t in "$@"; do command -v "$t" >/dev/null || die "missing tool: $t (scripts/setup.sh --test installs it)"; done
}
need_ddshark() { [ -x "$1" ] || die "no ddshark binary at $1 (cargo build --release -p ddshark)"; }
need_live_dds() {
  need_root "network namespaces, live capture"
  need_ddshark "$1"
  shift
  need_tools "$@"
  need_cyclonedds
}
need_cyclonedds() {
  [ -x "$VENV/bin/python" ] || die "no Python venv at $VENV (scripts/setup.sh --test makes it)"
  "$VENV/bin/python" -c 'import cyclonedds' 2>/dev/null || die "cyclonedds is not installed in $VENV (scripts/setup.sh --test)"
}

# The live tests with DDS traffic (tests/live/), on the traffic generator's network
# (tests/traffic/netns_lib.sh: namespaces NS_A, NS_B, NS_SW):
#   live_dds_test NAME BIN TOOL...   need_live_dds; DDSHARK (BIN, or this checkout's release
#                        build), TRAFFIC_DIR [$REPO_ROOT/tests/traffic], WORK (a new
#                        /tmp/ddshark-NAME.XXXXXX); sources netns_lib.sh
#   live_dds_cleanup PID...   SIGINT to those ddshark processes (they write their results),
#                        the namespaces down, WORK removed unless KEEP=1
#   kill_after SECS PID... / kill_after_off   a stop that hangs fails instead of hanging the run
live_dds_test() {
  DDSHARK=${2:-$REPO_ROOT/target/release/ddshark}
  TRAFFIC_DIR=${TRAFFIC_DIR:-$REPO_ROOT/tests/traffic}
  local name=$1
  shift 2
  need_live_dds "$DDSHARK" "$@"
  [ -f "$TRAFFIC_DIR/netns_lib.sh" ] || die "traffic generator not found in $TRAFFIC_DIR"
  WORK=$(mktemp -d "/tmp/ddshark-$name.XXXXXX")
  # shellcheck source=tests/traffic/netns_lib.sh
  source "$TRAFFIC_DIR/netns_lib.sh"
}
# kill_after SECS PID...: kills (-9) those still running SECS from now, in the background, so a
# `wait` on one that does not end on its SIGINT returns 137 and fails the test instead of hanging
# the run; kill_after_off once they have been waited for.
kill_after() {
  local secs=$1
  shift
  (sleep "$secs" && kill -9 "$@" 2>/dev/null) &
  KILL_AFTER_PID=$!
}
kill_after_off() { kill "$KILL_AFTER_PID" 2>/dev/null || true; }
live_dds_cleanup() {
  local pid
  for pid in "$@"; do
    if [ -n "$pid" ]; then kill -INT "$pid" 2>/dev/null || true; fi
  done
  netns_teardown
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}

# A stack's run dir (scripts/stack/): each process's pid in RUN_DIR/pids/NAME.pid with its start
# time beside it in NAME.starttime, so that a recycled pid is never taken for the stack's.
#   stack_options ARG...   RUN_DIR from --run-dir DIR or --run-dir=DIR [DDSHARK_STACK_RUN_DIR];
#                          the other arguments in the array ARGS
#   stack_pid_alive NAME   the recorded process runs, is no zombie and has the recorded start time
#   stack_pid_record NAME PID   records PID as NAME's process
stack_options() {
  RUN_DIR="$DDSHARK_STACK_RUN_DIR"
  ARGS=()
  while (($#)); do
    case "$1" in
      --run-dir) RUN_DIR="${2:?--run-dir needs a directory}"; shift ;;
      --run-dir=*) RUN_DIR="${1#--run-dir=}" ;;
      *) ARGS+=("$1") ;;
    esac
    shift
  done
}
stack_pid_alive() {
  local pid st
  pid="$(cat "$RUN_DIR/pids/$1.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  st="$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1,20)" || return 1   # state, starttime
  [ -n "$st" ] && [ "${st%% *}" != Z ] || return 1
  [ "${st#* }" = "$(cat "$RUN_DIR/pids/$1.starttime" 2>/dev/null)" ]
}
stack_pid_record() {
  echo "$2" >"$RUN_DIR/pids/$1.pid"
  # field 22 of /proc/PID/stat (the 20th after the command's closing parenthesis)
  sed 's/^.*) //' "/proc/$2/stat" | cut -d' ' -f20 >"$RUN_DIR/pids/$1.starttime"
}

# The replay path of the live benches and tests (root): a veth pair between two network
# namespaces, MTU 9000, no IPv6; tcpreplay sends on IF_TX, the captures listen on IF_RX.
#   CAPTURE_FILTER            ddshark's default live filter for UDP
#                             (crates/ddshark/src/capture/live.rs), given to tcpdump alongside
#   veth_pair NS_TX IF_TX NS_RX IF_RX [ADDR_TX ADDR_RX]   (re)creates them (addresses in /24)
#   veth_del NS_TX NS_RX      removes them
#   rx_packets NS IF          the packets IF received so far
#   packet_sockets NS IF      the packet sockets bound to IF (a capture is open once its is)
#   wait_packet_sockets NS IF N [PID]   0 once N are bound; 1 if PID died or 10 s passed
CAPTURE_FILTER='udp or (ip[6:2] & 0x3fff != 0) or (ip6 and ip6[6] == 44) or (vlan and (udp or (ip[6:2] & 0x3fff != 0) or (ip6 and ip6[6] == 44)))'
veth_del() { ip netns del "$1" 2>/dev/null || true; ip netns del "$2" 2>/dev/null || true; }
veth_pair() {
  local ns
  veth_del "$1" "$3"   # leftovers of an interrupted run
  ip netns add "$1"
  ip netns add "$3"
  ip link add "$2" netns "$1" type veth peer name "$4" netns "$3"
  for ns in "$1" "$3"; do
    ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$ns" link set lo up
  done
  ip -n "$1" link set "$2" mtu 9000 up
  ip -n "$3" link set "$4" mtu 9000 up
  if [ $# -ge 6 ]; then
    ip -n "$1" addr add "$5/24" dev "$2"
    ip -n "$3" addr add "$6/24" dev "$4"
  fi
}
rx_packets() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_packets"; }
packet_sockets() {
  local ifindex
  ifindex=$(ip netns exec "$1" cat "/sys/class/net/$2/ifindex")
  # shellcheck disable=SC2016 # $5 is awk's
  ip netns exec "$1" awk -v ix="$ifindex" 'NR > 1 && $5 == ix { n++ } END { print n + 0 }' /proc/net/packet
}
wait_packet_sockets() {
  local i
  for i in $(seq 100); do
    if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then return 1; fi
    if [ "$(packet_sockets "$1" "$2")" -ge "$3" ]; then
      sleep 0.5   # the filter is attached right after the bind
      return 0
    fi
    sleep 0.1
    : "$i"
  done
  return 1
}
