#!/usr/bin/env bash
# The fuzz bench: every fuzz target to RUNS executions (default 10 M), one after the
# other, niced; the table (executions, exec/s, crashes, coverage, time per target) goes to
# target/fuzz-bench.md and its figures into docs/hostile-input.md.
# usage: scripts/bench-fuzz.sh [RUNS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000000}
shift || true
exec nice -n 10 scripts/fuzz.sh --runs "$runs" --table target/fuzz-bench.md "$@"
