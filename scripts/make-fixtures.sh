#!/usr/bin/env bash
# Regenerate the real RTPS/DDS capture fixtures in tests/pcaps/ (and, with --bench,
# the large benchmark capture, which stays outside the repository).
#
# usage: sudo scripts/make-fixtures.sh [options] [SCENARIO...]
#
#   SCENARIO      default: a_small_reliable b_large_frag d_rustdds_interop
#                 e_mixed_robustness g_dustdds_interop h_vlan_pcp i_late_start
#                 f_ddsperf_cyclone0102   (e needs b: b is generated first if missing)
#   --workdir D   where make_captures.sh writes (default /var/tmp/ddshark-captures,
#                 or $DDSHARK_CAPTURES)
#   --copy-only   do not capture; copy/trim what is already in the work dir
#   --no-copy     capture only; leave tests/pcaps/ alone
#   --bench       also generate j_autoware_mix (Autoware mix, up to 40 MB per pcap) into
#                 the work dir; it is NEVER copied into tests/pcaps/. `--bench` alone
#                 (no SCENARIO) generates only j_autoware_mix.
#   --bench-soak  likewise j_autoware_soak: the same mix for J_SOAK_DURATION seconds
#                 (default 300; ~2.3 GB from host A), the input of the bench's soak
#                 (scripts/bench-e2e.sh); only what each host sent is kept.
#
# Public captures of other projects are never copied into the repository (the tests read
# them from outside it, see crates/ddshark/tests/common/public.rs).
#
# Installs nothing. Needs root (network namespaces) and what
# tests/traffic/make_captures.sh needs: tcpdump tshark iproute2 ethtool iputils-ping
# cyclonedds-tools clang, cargo, python3-venv (it creates $VENV=/opt/dds-venv with
# `pip install cyclonedds` if missing).
#
# Size policy (tests/pcaps/ stays around 25 MB): a pcap bigger than its scenario's limit
# (pcap_limit_kb below) is cut, together with its A/B partner, at the same capture time
# (editcap -B: the start with all discovery is kept, the end is lost) and oracle.py is
# re-run on the cut files with the same arguments, so pcap and oracle always match.
# Otherwise oracle files are copied unchanged. The reference tshark JSON tree of the
# first RTPS frames (oracle_a_sample.json, not an oracle.py output) is stored gzipped.
set -euo pipefail

LIB_TAG=make-fixtures
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TRAFFIC="$REPO_ROOT/tests/traffic"
MAKE_CAPTURES="$TRAFFIC/make_captures.sh"
ORACLE="$TRAFFIC/oracle.py"
DEST="$FIXTURES"
WORK=$DDSHARK_CAPTURES
MAX_PCAP_KB=${MAX_PCAP_KB:-4096}  # default size limit per pcap (see pcap_limit_kb)
MAX_LOGS_KB=${MAX_LOGS_KB:-256}   # copy logs/ files up to this size each

DEFAULT_SCENARIOS=(a_small_reliable b_large_frag d_rustdds_interop e_mixed_robustness
                   g_dustdds_interop h_vlan_pcp i_late_start f_ddsperf_cyclone0102)
BENCH_SCENARIO=j_autoware_mix
BENCH_SOAK_SCENARIO=j_autoware_soak

capture=1 copy=1 bench=0 bench_soak=0
SCENARIOS=()
while [ $# -gt 0 ]; do
  case $1 in
    --workdir) WORK=$2; shift 2 ;;
    --workdir=*) WORK=${1#*=}; shift ;;
    --copy-only) capture=0; shift ;;
    --no-copy) copy=0; shift ;;
    --bench) bench=1; shift ;;
    --bench-soak) bench_soak=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) usage_error "unknown option $1" ;;
    *) SCENARIOS+=("$1"); shift ;;
  esac
done
if [ ${#SCENARIOS[@]} -eq 0 ]; then
  if [ "$bench" = 1 ] || [ "$bench_soak" = 1 ]; then SCENARIOS=(); copy=0; else SCENARIOS=("${DEFAULT_SCENARIOS[@]}"); fi
fi
WORK=$(realpath -m "$WORK")

has() { local x; for x in "${@:2}"; do [ "$x" = "$1" ] && return 0; done; return 1; }

# extra oracle.py arguments per scenario (same as make_captures.sh uses)
oracle_args() {
  case $1 in
    h_vlan_pcp) echo "--ip-a 10.200.0.1,10.210.0.1,10.220.0.1 --ip-b 10.200.0.2,10.210.0.2,10.220.0.2" ;;
    *) echo "" ;;
  esac
}

# per-pcap size limit in KiB; MAX_PCAP_KB overrides the default for the others
pcap_limit_kb() {
  case $1 in
    b_large_frag) echo 8192 ;;          # the 2 MiB sample must stay: keep whole (~3.7 MB)
    d_rustdds_interop) echo 800 ;;      # ~2 s: discovery + ~2 images of 300 kB
    f_ddsperf_cyclone0102) echo 640 ;;  # ~2 s of 30 kB samples at 10 Hz
    h_vlan_pcp) echo 1024 ;;            # discovery on both VLANs + first lidar clouds
    i_late_start) echo 800 ;;           # ~3.5 s of traffic without SEDP (discovery.pcap whole)
    *) echo "$MAX_PCAP_KB" ;;
  esac
}

FAILED=()
run_capture() { # run_capture SCENARIO : make_captures.sh, one retry
  local s=$1 try
  for try in 1 2; do
    say "capturing $s (try $try) into $WORK"
    if "$MAKE_CAPTURES" "$WORK" "$s" >"$WORK/make_$s.log" 2>&1 && [ -s "$WORK/$s/summary.md" ]; then
      return 0
    fi
    say "$s failed (try $try), see $WORK/make_$s.log"
  done
  FAILED+=("$s")
  return 1
}

size_of() { stat -c %s "$1"; }

# cut_time PCAP LIMIT_BYTES : epoch time of the first frame at which the file would pass
# LIMIT_BYTES (16 B record header + caplen per frame, 24 B file header); empty if it never does
cut_time() {
  tshark -n -r "$1" -T fields -e frame.time_epoch -e frame.cap_len 2>/dev/null |
    awk -v lim="$2" 'BEGIN{s=24} {s += 16 + $2; if (s > lim) {print $1; exit}}'
}

# title and notes of an oracle summary.md, to re-run oracle.py the same way
summary_title() { sed -n '1s/^# //p' "$1"; }
summary_notes() { awk 'NR>1 && /^Oracle generated by/ {on=1; next} on && /^### / {exit} on' "$1" |
                  sed -e '/./,$!d' | sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}'; }

copy_scenario() { # copy_scenario SCENARIO
  local s=$1 src="$WORK/$1" dst="$DEST/$1" f limit cut=""
  [ -s "$src/summary.md" ] || { say "no capture for $s in $WORK, skipped"; return 1; }
  rm -rf "$dst"; mkdir -p "$dst"
  limit=$(($(pcap_limit_kb "$s") * 1024))
  # one cut time for the A/B pair: the earlier of the two files' limits
  local ta="" tb=""
  [ "$(size_of "$src/a.pcap")" -gt "$limit" ] && ta=$(cut_time "$src/a.pcap" "$limit")
  [ "$(size_of "$src/b.pcap")" -gt "$limit" ] && tb=$(cut_time "$src/b.pcap" "$limit")
  if [ -n "$ta" ] || [ -n "$tb" ]; then
    cut=$(printf '%s\n%s\n' "$ta" "$tb" | sed '/^$/d' | sort -g | head -1)
    say "$s: pcaps over $((limit / 1024)) KiB, cutting both at epoch $cut"
    editcap -F pcap -B "$cut" "$src/a.pcap" "$dst/a.pcap"
    editcap -F pcap -B "$cut" "$src/b.pcap" "$dst/b.pcap"
    local title notes extra=()
    title=$(summary_title "$src/summary.md")
    notes="$(summary_notes "$src/summary.md")
- TRIMMED for the repository by scripts/make-fixtures.sh: a.pcap and b.pcap hold only the frames captured before epoch $cut (editcap -B); the originals were $(size_of "$src/a.pcap") / $(size_of "$src/b.pcap") bytes. This oracle was re-run on the trimmed files."
    # shellcheck disable=SC2207
    extra=($(oracle_args "$s"))
    if [ -f "$src/oracle_writer_topics.tsv" ]; then
      extra+=(--discovery-tsv "$src/oracle_discovery/oracle_discovery_discovery.tsv")
    fi
    TZ=UTC python3 "$ORACLE" "$dst" "$dst/a.pcap" "$dst/b.pcap" --title "$title" --notes "$notes" \
      "${extra[@]}" >/dev/null 2>"$dst/oracle_stderr.txt" || say "oracle failed on trimmed $s"
    sed -i '/^wrote /d' "$dst/oracle_stderr.txt"
    [ -s "$dst/oracle_stderr.txt" ] || rm -f "$dst/oracle_stderr.txt"
    tshark -n -r "$dst/a.pcap" -Y "rtps && frame.number <= 60" -T json --no-duplicate-keys \
      2>/dev/null | gzip -9n >"$dst/oracle_a_sample.json.gz" || true
    echo "$cut" >"$dst/TRIMMED_AT_EPOCH"
  else
    cp --preserve=mode,timestamps "$src/a.pcap" "$src/b.pcap" "$dst/"
    for f in "$src"/oracle_* "$src/summary.md"; do
      [ -f "$f" ] && cp --preserve=mode,timestamps "$f" "$dst/"
    done
    [ -f "$dst/oracle_a_sample.json" ] && gzip -9n "$dst/oracle_a_sample.json"
  fi
  # i_late_start: discovery.pcap + its oracle (never trimmed)
  if [ -f "$src/discovery.pcap" ]; then
    cp --preserve=mode,timestamps "$src/discovery.pcap" "$dst/"
    cp -r --preserve=mode,timestamps "$src/oracle_discovery" "$dst/"
  fi
  # e_mixed_robustness: derived/ (snaplen, pcapng, nsec, truncated, dropped ipfrags) + oracles
  if [ -d "$src/derived" ]; then
    cp -r --preserve=mode,timestamps "$src/derived" "$dst/"
  fi
  # logs (small ones only)
  if [ -d "$src/logs" ]; then
    mkdir -p "$dst/logs"
    for f in "$src"/logs/*; do
      if [ "$(size_of "$f")" -le $((MAX_LOGS_KB * 1024)) ]; then cp --preserve=mode,timestamps "$f" "$dst/logs/"
      else echo "$(basename "$f") ($(size_of "$f") B) not copied" >>"$dst/logs/SKIPPED.txt"; fi
    done
  fi
  {
    echo "scenario: $s"
    echo "generated: $(sed -n 's/^started //p' "$src/logs/setup.txt" 2>/dev/null)"
    echo "command: sudo scripts/make-fixtures.sh $s   (runs: tests/traffic/make_captures.sh $WORK $s)"
    echo "host: $(uname -sr)"
    echo "tshark: $(tshark --version 2>/dev/null | head -1)"
    echo "tcpdump: $(tcpdump --version 2>&1 | head -1)"
    echo "python cyclonedds: $("$VENV/bin/pip" show cyclonedds 2>/dev/null | sed -n 's/^Version: //p')"
    echo "ddsperf (cyclonedds-tools): $(dpkg-query -W -f '${Version}' cyclonedds-tools 2>/dev/null)"
    echo "trimmed: $([ -n "$cut" ] && echo "yes, at epoch $cut (editcap -B)" || echo no)"
  } >"$dst/FIXTURE.txt"
  chmod -R a+rX "$dst"
}

# manifest: one line per capture file with its oracle counts
write_manifest() {
  local out="$DEST/MANIFEST.tsv" f dir base frames sm vend tsv
  printf 'file\tbytes\tframes\trtps_submsgs\tvendor_ids\n' >"$out"
  while IFS= read -r f; do
    dir=$(dirname "$f"); base=$(basename "$f")
    frames=$( (tshark -n -r "$f" -T fields -e frame.number 2>/dev/null || true) | wc -l)
    tsv=""
    case "$base" in
      a.pcap) tsv="$dir/oracle_a_submsgs.tsv" ;;
      b.pcap) tsv="$dir/oracle_b_submsgs.tsv" ;;
      discovery.pcap) tsv="$dir/oracle_discovery/oracle_discovery_submsgs.tsv" ;;
      *) n=${base//./_}; tsv=$(ls "$dir"/oracle_"$n"/oracle_*_submsgs.tsv "$dir"/oracle_*_submsgs.tsv 2>/dev/null | head -1 || true) ;;
    esac
    if [ -n "$tsv" ] && [ -f "$tsv" ]; then
      sm=$(($(wc -l <"$tsv") - 1))
      vend=$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++) if($i=="vendor_id") c=i; next} c && $c!="" {print $c}' "$tsv" |
             sort | uniq -c | sort -rn | awk '{printf "%s%s", (NR>1?",":""), $2}')
    else sm=""; vend=""; fi
    printf '%s\t%s\t%s\t%s\t%s\n' "${f#"$DEST"/}" "$(size_of "$f")" "$frames" "$sm" "$vend" >>"$out"
  done < <(find "$DEST" -type f \( -name '*.pcap' -o -name '*.pcapng' \) | sort)
}

# ------------------------------------------------------------------ main
[ "$(id -u)" = 0 ] || { say "must run as root (network namespaces)"; [ "$capture" = 0 ] || exit 1; }
mkdir -p "$WORK"
if [ "$capture" = 1 ]; then
  [ -x "$MAKE_CAPTURES" ] || { say "missing $MAKE_CAPTURES"; exit 1; }
  todo=("${SCENARIOS[@]}")
  # e_mixed_robustness derives a file from b_large_frag/b.pcap: b first
  if has e_mixed_robustness "${todo[@]}" && ! has b_large_frag "${todo[@]}" && [ ! -f "$WORK/b_large_frag/b.pcap" ]; then
    todo=(b_large_frag "${todo[@]}")
  fi
  if has e_mixed_robustness "${todo[@]}" && has b_large_frag "${todo[@]}"; then
    rest=(); for s in "${todo[@]}"; do [ "$s" = b_large_frag ] || rest+=("$s"); done
    todo=(b_large_frag "${rest[@]}")
  fi
  [ "$bench" = 1 ] && todo+=("$BENCH_SCENARIO")
  [ "$bench_soak" = 1 ] && todo+=("$BENCH_SOAK_SCENARIO")
  for s in "${todo[@]}"; do run_capture "$s" || true; done
fi
if [ "$copy" = 1 ]; then
  mkdir -p "$DEST"
  for s in "${SCENARIOS[@]}"; do
    [ "$s" = "$BENCH_SCENARIO" ] && { say "$s is the benchmark input: left in $WORK, not copied"; continue; }
    has "$s" "${FAILED[@]+"${FAILED[@]}"}" && { say "$s failed: not copied (old fixture kept if any)"; continue; }
    copy_scenario "$s" || true
  done
  write_manifest
  say "fixtures: $(du -sh "$DEST" | cut -f1) in $DEST (see MANIFEST.tsv)"
fi
[ "$bench" = 1 ] && say "benchmark input: $WORK/$BENCH_SCENARIO/{a,b}.pcap"
[ "$bench_soak" = 1 ] && say "soak input: $WORK/$BENCH_SOAK_SCENARIO/{a,b}_tx.pcap"
if [ ${#FAILED[@]} -gt 0 ]; then say "FAILED: ${FAILED[*]}"; exit 1; fi
say "done"
