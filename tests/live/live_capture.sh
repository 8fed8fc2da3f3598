#!/usr/bin/env bash
# Live test: real Cyclone DDS traffic between two network namespaces, captured at
# the same time by tcpdump and by `ddshark -i`. ddshark's live counts must equal
# `ddshark stats` of tcpdump's file, and its DATA/DATA_FRAG count must equal what
# tshark finds in that file. Needs root. Never skips: a missing tool is an error.
#
# usage: tests/live/live_capture.sh [DDSHARK_BINARY]
# env:   TRAFFIC_DIR (default tests/traffic), VENV (/opt/dds-venv), NS_A, NS_B, NS_SW
#        (the namespaces: ddsk_hostA, ddsk_hostB, ddsk_sw), KEEP=1 keeps the work directory.
set -euo pipefail

LIB_TAG="live test"
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
live_dds_test live "${1:-}" tcpdump tshark ip ethtool ping python3
DD_PID=""
trap 'live_dds_cleanup "$DD_PID"' EXIT
trap 'exit 130' INT TERM

netns_setup 0 0
CAPTURE_EXTRA="--immediate-mode" capture_start "$NS_A" vethA "$WORK/tcpdump.pcap"
TD_PID=$CAP_PID
ip netns exec "$NS_A" "$DDSHARK" -i vethA --no-tui --immediate --format jsonl --interval 1s \
  --final-json "$WORK/live.json" >"$WORK/live.jsonl" 2>"$WORK/live.err" &
DD_PID=$!
NETNS_BG_PIDS+=("$DD_PID")
sleep 1.5
kill -0 "$DD_PID" 2>/dev/null || { cat "$WORK/live.err" >&2; die "ddshark -i did not start"; }

# Small reliable topics and large fragmented samples (DATA_FRAG + IP fragments), A -> B.
cyclone_small_large A A "$WORK"
sleep 1

kill -INT "$DD_PID"
kill_after 30 "$DD_PID"
wait "$DD_PID" || { rc=$?; cat "$WORK/live.err" >&2; die "ddshark -i exited with status $rc after SIGINT (137: still running 30 s after it)"; }
kill_after_off
DD_PID=""
capture_stop "$TD_PID"
[ -s "$WORK/live.json" ] || die "ddshark wrote no final snapshot"
[ -s "$WORK/live.jsonl" ] || die "ddshark printed no periodic JSON lines"

"$DDSHARK" stats "$WORK/tcpdump.pcap" -q --format json >"$WORK/ref.json"
tshark -r "$WORK/tcpdump.pcap" -Y rtps -T fields -E occurrence=a -E aggregator=, -e rtps.sm.id \
  >"$WORK/tshark_sm.txt" 2>/dev/null

python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
live = json.load(open(f"{w}/live.json"))
ref = json.load(open(f"{w}/ref.json"))
lines = [json.loads(l) for l in open(f"{w}/live.jsonl") if l.strip()]
errors = []
def eq(what, a, b):
    if a != b:
        errors.append(f"{what}: ddshark -i {a} != from tcpdump's file {b}")
# What tshark sees in tcpdump's file: DATA (0x15) + DATA_FRAG (0x16) submessages.
ts = 0
for line in open(f"{w}/tshark_sm.txt"):
    for sm in line.strip().split(","):
        if sm in ("0x15", "0x16"):
            ts += 1
eq("DATA+DATA_FRAG vs tshark", live["health"]["state"]["data_submessages"], ts)
for k in ("rtps_datagrams", "submessages"):
    eq(k, live["health"]["dissector"][k], ref["health"]["dissector"][k])
eq("ip.reassembled", live["health"]["dissector"]["ip"]["reassembled"], ref["health"]["dissector"]["ip"]["reassembled"])
for k in ("data_submessages", "new_samples", "repeat_submessages"):
    eq(k, live["health"]["state"][k], ref["health"]["state"][k])
topics = lambda s: {t["name"]: (t["samples"], t["bytes"], t["lost"], t["retransmitted"], t["writers"], t["readers"]) for t in s["topics"]}
eq("topics (samples, bytes, lost, retransmitted, writers, readers)", topics(live), topics(ref))
writers = lambda s: {x["guid"]: (x["topic"], x["samples"], x["bytes"]) for x in s["writers"]}
eq("writers", writers(live), writers(ref))
user = [t for t in live["topics"] if not t["builtin"] and t["samples"] > 0]
if len(user) < 4:
    errors.append(f"expected real traffic on several topics, got {[t['name'] for t in user]}")
if not any(t["data_frag_submessages"] > 0 for t in user):
    errors.append("no DATA_FRAG traffic was seen")
src = live["health"]["pipeline"]["sources"][0]
if src["queue_dropped"] != 0:
    errors.append(f"queue drops: {src['queue_dropped']}")
k = src.get("kernel") or {}
if k.get("dropped", 1) != 0:
    errors.append(f"kernel drops or no kernel stats: {k}")
if not live["health"]["reconciles"]:
    errors.append(f"live counters do not reconcile: {live['health']['checks']}")
if len(lines) < 3:
    errors.append(f"only {len(lines)} periodic JSON lines")
print(f"live: {len(user)} user topics, {sum(t['samples'] for t in user)} samples, "
      f"{live['health']['dissector']['rtps_datagrams']} datagrams, {ts} DATA/DATA_FRAG (tshark agrees), "
      f"kernel {k}, {len(lines)} JSON lines")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PY
echo "live test passed"
