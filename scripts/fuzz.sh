#!/usr/bin/env bash
# Bounded fuzz run of every parser target, seeded from the real fixtures.
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
# cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain take them.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
python3 fuzz/seed_corpus.py
mkdir -p target/fuzz-logs
for target in datagram parameter_list line_protocol tcp_stream; do
  echo "fuzz: $target for ${secs}s" >&2
  log=target/fuzz-logs/$target.log
  status=0
  (cd fuzz && cargo fuzz run "$target" "corpus/$target" -- \
     -max_total_time="$secs" -rss_limit_mb=2048 -max_len=131072 -print_final_stats=1) >"$log" 2>&1 || status=$?
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)" "$log" >&2 || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz: $target failed (exit $status); inputs in fuzz/artifacts/$target, log $log" >&2
    exit 1
  fi
done
echo "fuzz: no crash" >&2
