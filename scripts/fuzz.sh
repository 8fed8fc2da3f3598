#!/usr/bin/env bash
# Fuzz every parser target, seeded from the real fixtures, bounded by time (the test suite)
# or by executions (scripts/bench-fuzz.sh).
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET]        (default 60)
#        scripts/fuzz.sh --runs N [SECONDS] [--table FILE] [TARGET...]
# (with both, a target stops at whichever comes first)
# --table writes a Markdown row per target: executions, exec/s, crashes, coverage, time.
# Built with debug assertions and overflow checks (-a), without AddressSanitizer (-s none):
# every crate of ours denies unsafe code, so an overflow or a failed assertion is what a
# bug looks like here, and without ASan the same minutes run 2-3x more inputs.
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain take them.
set -euo pipefail
LIB_TAG=fuzz
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
secs="" runs="" table=""
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --table) table=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    [0-9]*) secs=$1; shift ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] ||
  targets=(datagram parameter_list rti_submessages tcp_stream line_protocol otlp_intake capture_file)
export RUSTC_BOOTSTRAP=1 CARGO_INCREMENTAL=0
command -v cargo-fuzz >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
build=(--debug-assertions --sanitizer none)
python3 fuzz/seed_corpus.py
(cd fuzz && cargo fuzz build "${build[@]}" >/dev/null)
[ -n "$runs" ] || secs=${secs:-60}
limit=() bound=""
[ -z "$runs" ] || limit+=(-runs="$runs") bound="$runs executions"
[ -z "$secs" ] || limit+=(-max_total_time="$secs") bound="${bound:+$bound or }${secs}s"
if [ -n "$table" ]; then
  { echo "| target | executions | exec/s | crashes | coverage (edges / features) | corpus | peak RSS | time |"
    echo "|---|---|---|---|---|---|---|---|"; } >"$table"
fi
mkdir -p target/fuzz-logs
for target in "${targets[@]}"; do
  say "$target for $bound"
  log=target/fuzz-logs/$target.log
  mkdir -p "fuzz/corpus/$target"
  status=0 t0=$(date +%s)
  (cd fuzz && cargo fuzz run "${build[@]}" "$target" "corpus/$target" -- \
     "${limit[@]}" -rss_limit_mb=2048 -max_len=131072 -print_final_stats=1) >"$log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - t0 ))
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)" "$log" >&2 || true
  if [ -n "$table" ]; then
    stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1 || true; }
    last=$(grep -E "^#[0-9]+[[:space:]]" "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\).*/\1 \/ \2|\3/p' <<<"$last")
    crashes=$([ "$status" -eq 0 ] && echo 0 || echo "1 (fuzz/artifacts/$target)")
    printf '| %s | %s | %s | %s | %s | %s | %s MiB | %s |\n' "$target" \
      "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" "$crashes" \
      "${cov%%|*}" "${cov##*|}" "$(stat peak_rss_mb)" \
      "$(printf '%dm%02ds' $((elapsed / 60)) $((elapsed % 60)))" >>"$table"
  fi
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    say "$target failed (exit $status); inputs in fuzz/artifacts/$target, log $log"
    [ -n "$runs" ] || exit 1
    failed=1
  fi
done
[ -z "$table" ] || cat "$table"
[ -z "${failed:-}" ] || exit 1
say "no crash"
