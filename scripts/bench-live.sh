#!/usr/bin/env bash
# Benchmark (not a timed test): the highest frame rate `ddshark -i` captures without
# kernel drops, against tcpdump's on the same traffic, and their ratio (issue 3).
#
# A private veth pair joins two network namespaces of its own (ddsb_tx, ddsb_rx;
# addresses 10.250.0.253/.254, nothing routed anywhere else). Real RTPS traffic is
# replayed into ddsb_tx0 with tcpreplay at increasing rates (--pps steps, then
# --topspeed); for every step each tool captures on ddsb_rx0 alone, with the same
# BPF filter (ddshark's default without TCP: UDP and IP fragments, also inside one VLAN tag),
# the same snaplen and the same kernel buffer, and its libpcap kernel counters are
# read: ddshark's from its --final-json (health.pipeline.sources[].kernel), tcpdump's
# from its exit lines. ddshark's own queue drops (capture thread -> state thread,
# counted, never waited on) are reported apart from the kernel's.
#
# usage: sudo scripts/bench-live.sh [CAPTURE]
#   CAPTURE default: the Autoware mix of `scripts/make-fixtures.sh --bench`
#   ($BENCH_CAPTURE, scripts/lib.sh), else tests/pcaps/h_vlan_pcp/a.pcap
#   and tests/pcaps/b_large_frag/a.pcap merged. Addresses 10.200/10.210/10.220.0.0/24
#   of the fixtures are rewritten into 10.250.0.0/24 (tcprewrite --pnat).
# environment: RATES (frames/s steps, "top" = --topspeed; default
#   "20000 50000 100000 150000 200000 250000 300000 top"), STEP_S (seconds of traffic
#   per step, default 4), BUF_MIB (kernel buffer of both tools, default 64 = ddshark's),
#   CAPTURE_SHARE (percent of one CPU the capturing tool may use, 1-100; default: no limit).
# On a fast machine tcpreplay, not the capture, is the limit (the result then reads
# ">=", and "cpu-s" / the CPU-per-frame line tell the tools apart). To make the capture
# the bottleneck, share one CPU and tcpdump's default buffer:
#   BUF_MIB=2 taskset -c 1 scripts/bench-live.sh
# or give the capturing tool a core of its own and tcpreplay the other one:
#   BUF_MIB=2 CAPTURE_CPU=1 REPLAY_CPU=0 scripts/bench-live.sh
# The generator may not reach the rate where a tool starts to drop (here ~290 k small
# frames/s on the veth pair). To find that rate anyway, give the capturing tool a fixed
# share of its core (a cgroup CPU quota over a 10 ms period: the same budget for every
# tool and build, whatever its thread count), as if the core were that much slower:
#   BUF_MIB=8 CAPTURE_CPU=1 REPLAY_CPU=0 CAPTURE_SHARE=25 scripts/bench-live.sh
# To compare two builds in one run (steps interleaved), name the other binary:
#   BEFORE_BIN=/path/to/old/ddshark scripts/bench-live.sh   (tool "before")
# Needs root (namespaces, raw capture), tcpreplay (scripts/setup.sh --test installs it),
# tcpdump, jq. Bounded: every step is limited in time; the whole run takes ~2-3 min.
set -euo pipefail
cd "$(dirname "$0")/.."

RATES=${RATES:-"20000 50000 100000 150000 200000 250000 300000 top"}
STEP_S=${STEP_S:-4}
BUF_MIB=${BUF_MIB:-64}
CAPTURE_CPU=${CAPTURE_CPU:-}
REPLAY_CPU=${REPLAY_CPU:-}
BEFORE_BIN=${BEFORE_BIN:-}
CAPTURE_SHARE=${CAPTURE_SHARE:-}
NS_TX=ddsb_tx NS_RX=ddsb_rx IF_TX=ddsb_tx0 IF_RX=ddsb_rx0

LIB_TAG=bench-live
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
need_root "network namespaces, raw capture"
need_tools tcpreplay tcprewrite mergecap tcpdump jq ip timeout
case "$STEP_S" in ''|*[!0-9]*) die "STEP_S must be whole seconds" ;; esac
{ [ "$STEP_S" -ge 1 ] && [ "$STEP_S" -le 30 ]; } || die "STEP_S must be 1..30"
nsteps=0
for r in $RATES; do
  case "$r" in top) ;; ''|*[!0-9]*) die "bad rate '$r' in RATES" ;; esac
  nsteps=$((nsteps + 1))
done
{ [ "$nsteps" -ge 1 ] && [ "$nsteps" -le 16 ]; } || die "RATES: 1..16 steps"

cargo build --profile tuned -q -p ddshark
bin=$PWD/target/tuned/ddshark
tools="ddshark tcpdump"
if [ -n "$BEFORE_BIN" ]; then
  [ -x "$BEFORE_BIN" ] || die "BEFORE_BIN=$BEFORE_BIN is not an executable"
  tools="ddshark before tcpdump"
fi
for c in "$CAPTURE_CPU" "$REPLAY_CPU"; do
  case "$c" in '') ;; *[!0-9]*) die "CAPTURE_CPU/REPLAY_CPU must be a CPU number" ;; *) [ "$c" -lt "$(nproc)" ] || die "no CPU $c" ;; esac
done
# Command prefixes that pin (taskset execs its command: the pid stays the tool's).
capture_pin=() replay_pin=()
[ -n "$CAPTURE_CPU" ] && capture_pin=(taskset -c "$CAPTURE_CPU")
[ -n "$REPLAY_CPU" ] && replay_pin=(taskset -c "$REPLAY_CPU")
# CAPTURE_SHARE: a cgroup (v2, else v1's cpu controller) with a CPU quota; the capturing
# tool starts inside it (the wrapper joins it, then execs the tool: same pid).
capture_cgroup=""
if [ -n "$CAPTURE_SHARE" ]; then
  case "$CAPTURE_SHARE" in *[!0-9]*) die "CAPTURE_SHARE must be a percentage (1-100)" ;; esac
  { [ "$CAPTURE_SHARE" -ge 1 ] && [ "$CAPTURE_SHARE" -le 100 ]; } || die "CAPTURE_SHARE must be 1..100"
  quota_us=$((CAPTURE_SHARE * 100))   # of a 10 ms period
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    grep -qw cpu /sys/fs/cgroup/cgroup.controllers || die "CAPTURE_SHARE: the cgroup v2 cpu controller is not available"
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
    capture_cgroup=/sys/fs/cgroup/ddsb_capture
    mkdir -p "$capture_cgroup"
    echo "$quota_us 10000" >"$capture_cgroup/cpu.max"
  elif [ -d /sys/fs/cgroup/cpu ]; then
    capture_cgroup=/sys/fs/cgroup/cpu/ddsb_capture
    mkdir -p "$capture_cgroup"
    echo 10000 >"$capture_cgroup/cpu.cfs_period_us"
    echo "$quota_us" >"$capture_cgroup/cpu.cfs_quota_us"
  else
    die "CAPTURE_SHARE: no cgroup cpu controller (/sys/fs/cgroup)"
  fi
  # shellcheck disable=SC2016 # $$ and $@ are the wrapper's
  capture_pin+=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$capture_cgroup")
fi

work=$(mktemp -d /tmp/ddsb-bench.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  veth_del "$NS_TX" "$NS_RX"
  if [ -n "$capture_cgroup" ]; then rmdir "$capture_cgroup" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- input: real RTPS traffic, its addresses moved into 10.250.0.0/24 ----------------
bench_cap=$BENCH_CAPTURE
if [ $# -ge 1 ]; then
  inputs=("$1")
elif [ -f "$bench_cap" ]; then
  inputs=("$bench_cap")
else
  inputs=(tests/pcaps/h_vlan_pcp/a.pcap tests/pcaps/b_large_frag/a.pcap)
fi
for f in "${inputs[@]}"; do [ -f "$f" ] || die "no capture $f"; done
mergecap -F pcap -w "$work/merged.pcap" "${inputs[@]}"
tcprewrite --pnat=10.200.0.0/24:10.250.0.0/26,10.210.0.0/24:10.250.0.64/26,10.220.0.0/24:10.250.0.128/26 \
  -i "$work/merged.pcap" -o "$work/replay.pcap"
loop_frames=$(tcpdump -nn -r "$work/replay.pcap" 2>/dev/null | wc -l)
loop_match=$(tcpdump -nn -r "$work/replay.pcap" "$CAPTURE_FILTER" 2>/dev/null | wc -l)
[ "$loop_frames" -gt 0 ] || die "empty capture"

# --- the private veth pair -----------------------------------------------------------
veth_pair "$NS_TX" "$IF_TX" "$NS_RX" "$IF_RX" 10.250.0.253 10.250.0.254

# replay RATE OUT: sends STEP_S seconds of traffic; prints "offered achieved_pps delivered"
replay() {
  local rate=$1 out=$2 before after pace
  if [ "$rate" = top ]; then pace=(--topspeed); else pace=(--pps="$rate" --limit=$((rate * STEP_S))); fi
  before=$(rx_packets "$NS_RX" "$IF_RX")
  timeout $((STEP_S + 20)) "${replay_pin[@]}" ip netns exec "$NS_TX" tcpreplay -i "$IF_TX" --preload-pcap "${pace[@]}" \
    --loop=0 --duration="$STEP_S" "$work/replay.pcap" >"$out" 2>&1 || true
  after=$(rx_packets "$NS_RX" "$IF_RX")
  awk -v d=$((after - before)) '
    /^Actual:/ { n = $2 }
    /^Rated:/ { for (i = 1; i <= NF; i++) if ($i == "pps") p = $(i - 1) }
    END { printf "%d %.0f %d\n", n, p, d }' "$out"
}

# cpu_s PID: user+system CPU seconds the process has used so far (all its threads)
hz=$(getconf CLK_TCK)
cpu_s() { awk -v hz="$hz" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo na; }

# stop PID: SIGINT (both tools then report and exit), wait at most 30 s
stop() {
  local i
  kill -INT "$1" 2>/dev/null || true
  for i in $(seq 300); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; : "$i"; done
  if kill -0 "$1" 2>/dev/null; then
    echo "bench-live: pid $1 did not stop within 30 s of SIGINT; killed" >&2
    kill -KILL "$1" 2>/dev/null || true
  fi
  wait "$1" 2>/dev/null || true
}

# run_ddshark RATE [BINARY NAME]: writes to $work/line "offered pps delivered captured received kdropped ifdropped qdropped cpu_s"
run_ddshark() {
  local rate=$1 exe=${2:-$bin} name=${3:-ddshark} p r c
  local d=$work/$name.$rate
  rm -f "$d.json"
  # --duration only bounds a run whose SIGINT got lost.
  "${capture_pin[@]}" ip netns exec "$NS_RX" "$exe" -i "$IF_RX" --no-tui --duration $((STEP_S + 40))s -B "$BUF_MIB" \
    --final-json "$d.json" >"$d.out" 2>"$d.err" &
  p=$!; pids+=("$p")
  wait_packet_sockets "$NS_RX" "$IF_RX" 1 "$p" || { stop "$p"; echo "ddshark did not start; see below" >&2; cat "$d.err" >&2; return 1; }
  r=$(replay "$rate" "$d.replay")
  sleep 2   # drain what is still in the kernel ring
  c=$(cpu_s "$p")
  stop "$p"
  [ -s "$d.json" ] || { echo "ddshark wrote no --final-json; stderr:" >&2; cat "$d.err" >&2; return 1; }
  echo "$r $(jq -r '[.health.pipeline.sources[0] | .frames, (.kernel.received // "na"),
    (.kernel.dropped // "na"), (.kernel.if_dropped // "na"), .queue_dropped] | join(" ")' "$d.json") $c" >"$work/line"
}

run_before() { run_ddshark "$1" "$BEFORE_BIN" before; }

# run_tcpdump RATE: writes to $work/line "offered pps delivered captured received kdropped ifdropped qdropped(-) cpu_s"
run_tcpdump() {
  local rate=$1 d=$work/tcpdump.$1 p r i c
  timeout $((STEP_S + 40)) "${capture_pin[@]}" ip netns exec "$NS_RX" tcpdump -i "$IF_RX" -nn -s 262144 -B $((BUF_MIB * 1024)) \
    -w /dev/null "$CAPTURE_FILTER" >/dev/null 2>"$d.err" &
  p=$!; pids+=("$p")
  # the timeout wrapper's child is tcpdump; "listening on" = the capture is open
  for i in $(seq 100); do grep -q "listening on" "$d.err" && break; sleep 0.1; : "$i"; done
  wait_packet_sockets "$NS_RX" "$IF_RX" 1 "$p" || { stop "$p"; echo "tcpdump did not start:" >&2; cat "$d.err" >&2; return 1; }
  r=$(replay "$rate" "$d.replay")
  sleep 2
  c=$(cpu_s "$(pgrep -P "$p" | head -1)")
  stop "$p"
  echo "$r $(awk '
    / packets? captured/ { c = $1 } / packets? received by filter/ { v = $1 }
    / packets? dropped by kernel/ { k = $1 } / packets? dropped by interface/ { f = $1 }
    END { printf "%s %s %s %s -", c == "" ? "na" : c, v == "" ? "na" : v, k == "" ? "na" : k, f == "" ? "0" : f }' "$d.err") $c" >"$work/line"
}

echo "bench-live: $(nproc) CPUs, $(uname -r); input ${inputs[*]} ($loop_frames frames per loop, $loop_match match the filter)"
echo "bench-live: capture pinned to CPU ${CAPTURE_CPU:-(any)}${CAPTURE_SHARE:+ with ${CAPTURE_SHARE} % of it (cgroup quota)}, tcpreplay to CPU ${REPLAY_CPU:-(any)}${BEFORE_BIN:+; before = $BEFORE_BIN}"
echo "bench-live: $STEP_S s of traffic per step, kernel buffer $BUF_MIB MiB for both tools, ddshark $("$bin" --version 2>/dev/null | head -1), $(tcpdump --version 2>&1 | head -1), $(tcpreplay --version 2>&1 | head -1)"
echo
printf '%-6s %-8s | %9s %9s %9s | %9s %9s %8s %8s %7s | %9s %9s %6s %8s\n' \
  step tool offered "sent/s" delivered captured received k-drop if-drop q-drop expected left cpu-s "result"
res=$work/results
: >"$res"
declare -A bad=([ddshark]=0 [before]=0 [tcpdump]=0)
for rate in $RATES; do
  for tool in $tools; do
    if [ "${bad[$tool]}" -ge 2 ]; then
      printf '%-6s %-8s | skipped: kernel drops in the two previous steps\n' "$rate" "$tool"
      continue
    fi
    # not in $( ): the capture's pid must stay known to the cleanup trap
    "run_$tool" "$rate" || { printf '%-6s %-8s | FAILED\n' "$rate" "$tool"; continue; }
    read -r offered pps delivered captured received kdrop ifdrop qdrop cpu <"$work/line"
    # expected: frames of the replay that pass the filter, from the rx interface's count
    verdict=$(awk -v o="$offered" -v dl="$delivered" -v c="$captured" -v rv="$received" -v k="$kdrop" \
      -v f="$ifdrop" -v q="$qdrop" -v lf="$loop_frames" -v lm="$loop_match" '
      BEGIN {
        e = int(dl * lm / lf + 0.5)
        left = (rv == "na" || k == "na") ? "na" : rv - k - c
        kd = (k == "na") ? -1 : k + (f == "na" ? 0 : f)
        v = kd < 0 ? "no-stats" : (kd > 0 ? "DROPS" : "ok")
        if (v == "ok" && q != "-" && q > 0) v = "ok(q-drop)"
        printf "%d %s %s", e, left, v
      }')
    read -r expected left result <<<"$verdict"
    printf '%-6s %-8s | %9s %9s %9s | %9s %9s %8s %8s %7s | %9s %9s %6s %8s\n' \
      "$rate" "$tool" "$offered" "$pps" "$delivered" "$captured" "$received" "$kdrop" "$ifdrop" "$qdrop" "$expected" "$left" "$cpu" "$result"
    echo "$tool $rate $pps $result $qdrop $captured $cpu" >>"$res"
    case "$result" in ok*) bad[$tool]=0 ;; *) bad[$tool]=$((bad[$tool] + 1)) ;; esac
  done
done

# Highest achieved rate of a step that, like every step below it, had no kernel drop.
best() { # best TOOL [strict]: strict also needs no queue drop
  awk -v t="$1" -v strict="${2:-}" '
    $1 != t { next }
    { ok = ($4 == "ok" || (strict == "" && $4 == "ok(q-drop)")) }
    !ok { stopped = 1 }
    ok && !stopped && $3 > b { b = $3; last = NR }
    { n = NR }
    END { printf "%d %s", b, (last == n && b > 0) ? ">=" : "" }' "$res"
}
read -r bd bd_cap <<<"$(best ddshark)"
read -r bt bt_cap <<<"$(best tcpdump)"
read -r bq _ <<<"$(best ddshark strict)"
echo
echo "cpu-s = user+system CPU seconds of the capturing process during the step (startup included)"
echo "left = kernel received - dropped - captured (still in the ring at stop); expected = delivered frames that pass the filter"
echo "ddshark queue drops (capture thread -> state, not kernel drops): $(awk '$1 == "ddshark" { s += $5 } END { print s + 0 }' "$res") frames over all steps;" \
  "highest rate with neither kernel nor queue drops: ${bq} frames/s"
[ -n "$bd_cap$bt_cap" ] && echo "(>= : no drop even at the last step run; the generator, not the capture, was the limit)"
# CPU cost per frame at the fastest step each tool ran: a ceiling estimate that does
# not depend on the generator (frames/s one fully busy CPU would capture).
cost() { awk -v t="$1" '$1 == t && $7 != "na" && $7 > 0 && $3 >= p { p = $3; c = $7 * 1e6 / $6 }
  END { if (p) printf "%.2f us/frame (~%.0f frames per CPU-second)", c, 1e6 / c; else print "n/a" }' "$res"; }
echo "CPU per captured frame at the fastest step: ddshark $(cost ddshark), tcpdump $(cost tcpdump)${BEFORE_BIN:+, before $(cost before)}"
if [ -n "$BEFORE_BIN" ]; then
  read -r bb bb_cap <<<"$(best before)"
  read -r bbq _ <<<"$(best before strict)"
  echo "highest rate without kernel drops: ddshark ${bd_cap}${bd} frames/s, before ${bb_cap}${bb} frames/s"
  echo "highest rate with neither kernel nor queue drops: ddshark ${bq} frames/s, before ${bbq} frames/s"
fi
ratio=$(awk -v a="$bd" -v b="$bt" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
echo "highest rate without kernel drops: ddshark ${bd_cap}${bd} frames/s, tcpdump ${bt_cap}${bt} frames/s, ratio ${ratio}"
