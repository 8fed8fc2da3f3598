#!/usr/bin/env bash
# The README's two-host guide, followed end to end: two network namespaces stand for two
# hosts (A and B, joined by a bridge), real Cyclone DDS traffic flows both ways (small
# reliable topics A -> B, large fragmented samples B -> A), and on each "host"
#   ddshark -i IFACE --host-name NAME -w NAME.pcapng --no-tui
# records while it monitors. Then `ddshark latency a.pcapng b.pcapng` must give, for every
# sample, the latency tshark's oracle (tests/traffic/oracle.py, on the same two files)
# gives, and each file must name its host. Both namespaces share one kernel clock, so no
# offset is applied. Needs root. Never skips: a missing tool is an error.
#
# usage: tests/live/two_hosts.sh [DDSHARK_BINARY]     env: KEEP=1 keeps the work directory,
#        TRAFFIC_DIR (default tests/traffic), VENV (/opt/dds-venv), NS_A, NS_B, NS_SW
#        (the namespaces: record_hostA, record_hostB, record_sw)
set -euo pipefail

LIB_TAG="two-host test"
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
export NS_A=${NS_A:-record_hostA} NS_B=${NS_B:-record_hostB} NS_SW=${NS_SW:-record_sw}
live_dds_test two-hosts "${1:-}" tshark capinfos ip ethtool ping python3
DD_A="" DD_B=""
trap 'live_dds_cleanup "$DD_A" "$DD_B"' EXIT
trap 'exit 130' INT TERM

netns_setup 0 0

# On each host, as the README says.
ip netns exec "$NS_A" "$DDSHARK" -i vethA --host-name A -w "$WORK/a.pcapng" --no-tui --immediate \
  >"$WORK/a.out" 2>"$WORK/a.err" &
DD_A=$!
ip netns exec "$NS_B" "$DDSHARK" -i vethB --host-name B -w "$WORK/b.pcapng" --no-tui --immediate \
  >"$WORK/b.out" 2>"$WORK/b.err" &
DD_B=$!
for _ in $(seq 100); do
  grep -q "capturing on" "$WORK/a.err" 2>/dev/null && grep -q "capturing on" "$WORK/b.err" 2>/dev/null && break
  sleep 0.1
done
sleep 0.5
kill -0 "$DD_A" 2>/dev/null || { cat "$WORK/a.err" >&2; die "ddshark on host A did not start"; }
kill -0 "$DD_B" 2>/dev/null || { cat "$WORK/b.err" >&2; die "ddshark on host B did not start"; }

# Real DDS traffic both ways: small topics A -> B, large samples B -> A.
cyclone_small_large A B "$WORK"
sleep 1

kill -INT "$DD_A" "$DD_B"
kill_after 30 "$DD_A" "$DD_B"
wait "$DD_A" || { rc=$?; cat "$WORK/a.err" >&2; die "ddshark on host A exited with status $rc after SIGINT (137: still running 30 s after it)"; }
wait "$DD_B" || { rc=$?; cat "$WORK/b.err" >&2; die "ddshark on host B exited with status $rc after SIGINT (137: still running 30 s after it)"; }
kill_after_off
DD_A="" DD_B=""

for h in a b; do
  f=$WORK/$h.pcapng H=${h^^}
  [ -f "$f" ] || die "no $f"
  grep -q "NOT written" "$WORK/$h.err" && { cat "$WORK/$h.err" >&2; die "host $H did not record every frame"; }
  capinfos "$f" >"$WORK/$h.capinfos" 2>/dev/null || die "capinfos cannot read $f"
  grep -q "Capture comment:.*host.name=$H\$" "$WORK/$h.capinfos" || { cat "$WORK/$h.capinfos" >&2; die "$f does not name host $H"; }
  grep -q "Description = veth$H on host $H" "$WORK/$h.capinfos" || die "$f does not name its interface and host"
done

# Then, as the README says: the latency of every sample, and tshark's oracle on the same files.
"$DDSHARK" latency "$WORK/a.pcapng" "$WORK/b.pcapng" --format jsonl -q >"$WORK/latency.jsonl" 2>"$WORK/latency.err" ||
  { cat "$WORK/latency.err" >&2; die "ddshark latency failed"; }
python3 "$TRAFFIC_DIR/oracle.py" "$WORK/oracle" "$WORK/a.pcapng" "$WORK/b.pcapng" >"$WORK/oracle.log" 2>&1 ||
  { tail "$WORK/oracle.log" >&2; die "oracle.py failed"; }

python3 - "$WORK" <<'PY'
import csv, json, sys
w = sys.argv[1]
def ns(s):  # "sec.fraction" -> ns, exactly
    sec, _, frac = s.partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])
rows, offsets = {}, []
for line in open(f"{w}/latency.jsonl"):
    r = json.loads(line)
    if r.get("kind") == "sample":
        rows.setdefault((r["writer_guid"], r["sn"]), []).append(r)
    elif r.get("kind") == "clock_offset":
        offsets.append(r)
oracle = list(csv.DictReader(open(f"{w}/oracle/oracle_latency.tsv"), delimiter="\t"))
bad, complete, dirs = [], 0, set()
for o in oracle:
    key = (o["writer_guid"], int(o["seq"]))
    rs = rows.get(key, [])
    if len(rs) != 1:
        bad.append(f"{key}: {len(rs)} rows")
        continue
    r = rs[0]
    if r["direction"] != o["direction"] or r["t_send_ns"] != ns(o["t_send_first"]):
        bad.append(f"{key}: {r['direction']} {r['t_send_ns']} vs {o['direction']} {o['t_send_first']}")
        continue
    if o["t_recv_complete"]:
        complete += 1
        dirs.add(o["direction"])
        lat = r["latency_ns"]
        if r["status"] != "ok" or lat is None or f"{lat / 1000:.3f}" != o["latency_us"] or r["t_recv_ns"] != ns(o["t_recv_complete"]):
            bad.append(f"{key}: {r['status']} {lat} ns vs oracle {o['latency_us']} us")
    elif r["status"] == "ok":
        bad.append(f"{key}: ok here, incomplete for the oracle")
user = sum(1 for o in oracle if o["topic"] and not o["topic"].startswith("DCPS"))
errors = []
if bad:
    errors.append(f"{len(bad)} of {len(oracle)} samples differ from the oracle:\n" + "\n".join(bad[:20]))
if dirs != {"A->B", "B->A"}:
    errors.append(f"directions seen: {sorted(dirs)}")
# One kernel clock: the offset estimated from the traffic must have 0 in its interval.
if len(offsets) != 1 or offsets[0]["error"] is not None or abs(offsets[0]["offset_ns"]) > offsets[0]["half_width_ns"]:
    errors.append(f"clock offset estimate does not hold 0: {offsets}")
if complete < 50 or user < 50:
    errors.append(f"too little traffic: {complete} complete samples, {user} user samples")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
print(f"two hosts: {len(oracle)} samples ({complete} complete, both directions) agree with the oracle; "
      f"a.pcapng and b.pcapng name hosts A and B; estimated clock offset {offsets[0]['offset_ns']} ± {offsets[0]['half_width_ns']} ns")
PY
