#!/usr/bin/env bash
# System test of `ddshark -w` (recording): a bundled capture is replayed with tcpreplay
# into a private veth pair while tcpdump and three `ddshark -i IFACE -w … --no-tui`
# capture the receiving end at the same time:
#   plain   -w rec.pcapng               every frame tcpdump captured, the same bytes in the
#                                       same order, readable by tshark, host and interface
#                                       names in the section/interface blocks, ns timestamps
#   size    -w size.pcapng -C 1         files of at most 1,000,000 bytes: size.pcapng,
#                                       size.pcapng1, …; together every frame
#   time    -w time-%s.pcapng -G 1s -W 2 two files of one second each, then ddshark stops
#                                       by itself (exit 0); they hold the first frames
#   full    -w on a 1 MiB tmpfs         the disk fills: ddshark stops with a message naming
#                                       the file and a non-zero exit
# Needs root (network namespaces, raw capture). Never skips: a missing tool is an error.
#
# usage: tests/live/record.sh [DDSHARK_BINARY]     env: KEEP=1 keeps the work directory
set -euo pipefail

LIB_TAG="record test"
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
DDSHARK=${1:-$REPO_ROOT/target/release/ddshark}
INPUT=${INPUT:-$FIXTURES/b_large_frag/a.pcap}
NS_TX=record_tx NS_RX=record_rx IF_TX=record_tx0 IF_RX=record_rx0
HOST=recorder-host

need_root "network namespaces, live capture"
need_tools tcpdump tcpreplay tshark capinfos ip jq
need_ddshark "$DDSHARK"
[ -f "$INPUT" ] || die "no capture $INPUT"

WORK=$(mktemp -d /tmp/ddshark-record.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  veth_del "$NS_TX" "$NS_RX"
  if mountpoint -q "$WORK/tiny" 2>/dev/null; then umount "$WORK/tiny" || true; fi
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

veth_pair "$NS_TX" "$IF_TX" "$NS_RX" "$IF_RX" 10.251.0.253 10.251.0.254

# Captures, all on the receiving veth.
ip netns exec "$NS_RX" tcpdump -i "$IF_RX" -nn -s 262144 -B 65536 --immediate-mode \
  -w "$WORK/tcpdump.pcap" "$CAPTURE_FILTER" 2>"$WORK/tcpdump.err" &
pids+=($!)
TD=$!
dd() { # dd NAME ARGS...: ddshark in the background, its pid in $! (via pids)
  local name=$1; shift
  ip netns exec "$NS_RX" "$DDSHARK" -i "$IF_RX" --no-tui --host-name "$HOST" --immediate \
    --final-json "$WORK/$name.json" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  pids+=($!)
}
dd plain -w "$WORK/rec.pcapng";               DD_PLAIN=$!
dd size -w "$WORK/size.pcapng" -C 1;           DD_SIZE=$!
dd time -w "$WORK/time-%s.pcapng" -G 1s -W 2;  DD_TIME=$!
mkdir "$WORK/tiny"
mount -t tmpfs -o size=1m record-tiny "$WORK/tiny"
dd full -w "$WORK/tiny/full.pcapng";            DD_FULL=$!

# Ready once five packet sockets are bound to the veth (then the filters get attached).
wait_packet_sockets "$NS_RX" "$IF_RX" 5 ||
  { cat "$WORK"/*.err >&2; die "the captures did not start ($(packet_sockets "$NS_RX" "$IF_RX") sockets)"; }
sleep 1

# About 4.5 s of real RTPS traffic (large fragmented samples), ~15 MB.
ip netns exec "$NS_TX" tcpreplay -i "$IF_TX" --pps=2500 --loop=4 "$INPUT" >"$WORK/replay.out" 2>&1 ||
  { cat "$WORK/replay.out" >&2; die "tcpreplay failed"; }
sleep 1.5

# -G 1s -W 2 stops by itself after its two files.
wait "$DD_TIME" || { cat "$WORK/time.err" >&2; die "ddshark -G 1s -W 2 exited with an error"; }
# The full disk stopped its ddshark with an error naming the file.
if wait "$DD_FULL"; then die "ddshark -w on a full disk exited 0"; fi
grep -q "tiny/full.pcapng: cannot write the recording: No space left on device" "$WORK/full.err" ||
  { cat "$WORK/full.err" >&2; die "no message naming the full disk's file"; }
grep -q "recorded 0 frames .* [1-9][0-9]* frames NOT written" "$WORK/full.err" ||
  { cat "$WORK/full.err" >&2; die "the full disk's frames are not counted as not written"; }
for p in "$DD_PLAIN" "$DD_SIZE" "$TD"; do kill -INT "$p"; done
kill_after 30 "$DD_PLAIN" "$DD_SIZE"
wait "$DD_PLAIN" || { rc=$?; cat "$WORK/plain.err" >&2; die "ddshark -w exited with status $rc after SIGINT (137: still running 30 s after it)"; }
wait "$DD_SIZE" || { rc=$?; cat "$WORK/size.err" >&2; die "ddshark -w -C 1 exited with status $rc after SIGINT (137: still running 30 s after it)"; }
kill_after_off
wait "$TD" || true
pids=()

# --- what tcpdump captured: the reference ------------------------------------------
grep -q "^0 packets dropped by kernel" "$WORK/tcpdump.err" || { cat "$WORK/tcpdump.err" >&2; die "tcpdump had kernel drops"; }
count() { tshark -r "$1" -T fields -e frame.number 2>/dev/null | wc -l; }
ref_frames=$(count "$WORK/tcpdump.pcap")
[ "$ref_frames" -gt 5000 ] || die "tcpdump captured only $ref_frames frames"
# Every frame's bytes and lengths, without timestamps (each socket stamps its own copy).
frames_of() { tcpdump -nn -t -xx -r "$1" 2>/dev/null; }
frames_of "$WORK/tcpdump.pcap" >"$WORK/ref.txt"

# --- plain -w -----------------------------------------------------------------------
rec=$WORK/rec.pcapng
[ -f "$rec" ] || die "no $rec (files: $(ls "$WORK"))"
[ ! -e "$rec.part" ] || die "$rec.part left behind"
jq -e '.health.pipeline.sources[0].kernel.dropped == 0' "$WORK/plain.json" >/dev/null ||
  die "ddshark had kernel drops: $(jq -c '.health.pipeline.sources[0].kernel' "$WORK/plain.json")"
read -r written not_written reconciles < <(jq -r '.health.pipeline.recording as $r |
  "\($r.frames_written) \($r.queue_dropped + $r.not_written_other) \(.health.reconciles)"' "$WORK/plain.json")
[ "$not_written" = 0 ] || die "ddshark -w did not write $not_written frames"
[ "$reconciles" = true ] || die "counters do not reconcile: $(jq -c '[.health.checks[] | select(.ok | not)]' "$WORK/plain.json")"
rec_frames=$(count "$rec")
[ "$rec_frames" = "$ref_frames" ] || die "tshark reads $rec_frames frames in $rec, tcpdump captured $ref_frames"
[ "$written" = "$ref_frames" ] || die "ddshark says it wrote $written frames, tcpdump captured $ref_frames"
frames_of "$rec" >"$WORK/rec.txt"
cmp -s "$WORK/ref.txt" "$WORK/rec.txt" || die "the recorded frames differ from tcpdump's (diff $WORK/ref.txt $WORK/rec.txt)"
capinfos "$rec" >"$WORK/capinfos.txt" 2>"$WORK/capinfos.err" || { cat "$WORK/capinfos.txt" >&2; die "capinfos cannot read $rec"; }
for want in "File type:.*pcapng" "host.name=$HOST" "Capture application:.*ddshark" \
  "Capture oper-sys:.*Linux" "Capture hardware:" "Name = $IF_RX" "Description = $IF_RX on host $HOST" \
  "Time precision = nanoseconds" "Encapsulation = Ethernet" "Capture length = 262144" \
  "Filter string = udp or .* or (vlan and"; do
  grep -q -- "$want" "$WORK/capinfos.txt" || { cat "$WORK/capinfos.txt" >&2; die "capinfos does not show '$want'"; }
done
grep -q "recorded $ref_frames frames" "$WORK/plain.err" || { cat "$WORK/plain.err" >&2; die "no end-of-recording line"; }

# --- -C 1: files of at most 1,000,000 bytes, together every frame --------------------
mapfile -t parts < <(cd "$WORK" && ls size.pcapng* | sort -V)
[ "${#parts[@]}" -ge 3 ] || die "-C 1 made ${#parts[@]} files: ${parts[*]}"
[ "${parts[0]}" = size.pcapng ] && [ "${parts[1]}" = size.pcapng1 ] || die "-C names: ${parts[*]}"
: >"$WORK/size.txt"
for f in "${parts[@]}"; do
  case "$f" in *.part) die "$f left behind" ;; esac
  s=$(stat -c %s "$WORK/$f")
  [ "$s" -le 1000000 ] || die "$f is $s bytes, more than -C 1 (1,000,000)"
  frames_of "$WORK/$f" >>"$WORK/size.txt"
done
cmp -s "$WORK/ref.txt" "$WORK/size.txt" || die "the -C files together differ from tcpdump's frames"

# --- -G 1s -W 2: two files, one second of capture time each, then a stop ------------
mapfile -t tparts < <(cd "$WORK" && ls time-*.pcapng)
[ "${#tparts[@]}" = 2 ] || die "-G 1s -W 2 made ${#tparts[@]} files: ${tparts[*]}"
: >"$WORK/time.txt"
n_time=0
for f in "${tparts[@]}"; do
  n_time=$((n_time + $(count "$WORK/$f")))
  span=$(capinfos -u -S "$WORK/$f" 2>/dev/null | awk '/Capture duration/ { print $3 }')
  awk -v s="$span" 'BEGIN { exit !(s < 1.0) }' || die "$f spans $span s (more than -G 1s)"
  frames_of "$WORK/$f" >>"$WORK/time.txt"
done
[ "$n_time" -gt 0 ] && [ "$n_time" -lt "$ref_frames" ] || die "-G 1s -W 2 holds $n_time of $ref_frames frames"
head -n "$(wc -l <"$WORK/time.txt")" "$WORK/ref.txt" | cmp -s - "$WORK/time.txt" ||
  die "the -G files do not hold the first frames tcpdump captured"

echo "record: $ref_frames frames replayed and captured; -w wrote all $written (tshark reads $rec_frames, bytes equal to tcpdump's);" \
  "-C 1: ${#parts[@]} files <= 1 MB; -G 1s -W 2: ${tparts[*]} then stopped by itself ($n_time frames); a full disk: an error naming the file"
