#!/usr/bin/env bash
# The whole test suite: the README's second command, and what .ci/run runs.
# Sets up what it needs first (idempotent), then: format, lints, unit and
# integration tests on the real fixtures, a bounded fuzz run, and the tests against
# real parts (live capture in network namespaces, the real OTel Collector and
# InfluxDB 2, headless Chromium, tmux).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never
# Each step prints its name and the clock when it starts, its own duration when it ends, and
# the run closes (also on failure) with a table of every step's time: the log says where time goes.
start=$(date +%s)
step_names=() step_secs=()
step_name="" step_t0=$start
mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
step_end() { # the running step's duration, recorded
  [ -n "$step_name" ] || return 0
  local d=$(($(date +%s) - step_t0))
  step_names+=("$step_name") step_secs+=("$d")
  printf '=== %s: %s\n' "$step_name" "$(mmss "$d")" >&2
  step_name=""
}
step() {
  step_end
  step_name=$* step_t0=$(date +%s)
  printf '\n=== %s (at %ss)\n' "$*" $((step_t0 - start)) >&2
}
step_table() { # on exit: the table; a failed run names the step it stopped in
  local rc=$? i
  [ -z "$step_name" ] || step_name="$step_name [FAILED, exit $rc]"
  step_end
  printf '\n=== step times (total %s)\n' "$(mmss $(($(date +%s) - start)))" >&2
  for i in "${!step_names[@]}"; do
    printf '%8s  %s\n' "$(mmss "${step_secs[$i]}")" "${step_names[$i]}" >&2
  done
}
trap step_table EXIT

step "setup"
scripts/setup.sh --test --no-build

step "format and lints"
cargo fmt --all --check
# --all-features: the system-tier test targets are linted too.
cargo clippy --workspace --all-targets --all-features -- -D warnings

step "unit and integration tests (hermetic: Rust and libpcap only)"
cargo test --workspace --no-fail-fast 2>&1 | tee target/cargo-test.log
grep -q "test result:" target/cargo-test.log

step "system tests (the stack, root, tmux, Chromium: targets with required-features = system-tests)"
# Only the system targets, so the hermetic ones do not run twice: per package, every test
# target that requires its `system-tests` feature.
: >target/cargo-test-system.log
while read -r pkg targets; do
  # shellcheck disable=SC2086 # $targets is a list of --test flags
  cargo test -p "$pkg" --features "$pkg/system-tests" --no-fail-fast $targets 2>&1 |
    tee -a target/cargo-test-system.log
done < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    ts = [t["name"] for t in p["targets"] if "system-tests" in t.get("required-features", [])]
    if ts:
        print(p["name"], " ".join("--test " + t for t in ts))
')
grep -q "test result:" target/cargo-test-system.log

step "live capture in network namespaces (real Cyclone DDS traffic, tcpdump alongside)"
# The benches are type-checked by clippy's --all-targets above; building them in release as
# well cost ~9 minutes of a CI run and caught nothing clippy does not.
cargo build --release -q -p ddshark
tests/live/live_capture.sh target/release/ddshark

step "Debian package (cargo deb: contents, dependencies, the capture capabilities)"
tests/deb/check.sh

step "aarch64 cross build (Debian's cross gcc, arm64 libpcap), run under qemu-user against the x86_64 outputs"
tests/cross/aarch64.sh target/release/ddshark

step "recording (-w, -C, -G/-W, a full disk) against tcpdump on a replayed veth"
tests/live/record.sh target/release/ddshark

step "the README's two-host guide in network namespaces (ddshark -w on each host, then latency vs the oracle)"
tests/live/two_hosts.sh target/release/ddshark

step "Flux queries and dashboards on the real collector + InfluxDB"
tests/flux/run.sh

step "the stack demo: a bundled capture retimed to now, the dashboards as they open"
tests/flux/demo.sh --ddshark target/release/ddshark

step "the compose file through the Compose Specification's loader (compose-go)"
tests/compose/check.sh

step "fuzz (bounded: 30 s per target; scripts/bench-fuzz.sh runs each to 10 M executions)"
scripts/fuzz.sh "${FUZZ_SECONDS:-30}"

step_end
# One closing line over every cargo test binary of both tiers (the scripted checks above exit non-zero on failure).
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' \
  target/cargo-test.log target/cargo-test-system.log
# Public captures of other projects live outside the repository; say which cases did not run.
if grep -q "PUBLIC CAPTURES NOT CHECKED" target/cargo-test.log; then
  echo "NOTE: public captures absent, these cases were not checked:" >&2
  grep -E "^  public/" target/cargo-test.log | sort -u >&2
fi
