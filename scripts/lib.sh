# Shared by the scripts (source it; set LIB_TAG first to name the script in messages):
#   say MSG / die MSG    progress and fatal errors on stderr, as "[TAG] MSG"
#   REPO_ROOT            the repository
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
#   PYTHONPATH           scripts/ first: the Python tools are the package scripts/ddtools,
#                        run as `python3 -m ddtools.NAME` (scripts/ddtools/__init__.py)
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DDSHARK_CAPTURES=${DDSHARK_CAPTURES:-/var/tmp/ddshark-captures}
BENCH_CAPTURE=${BENCH_CAPTURE:-$DDSHARK_CAPTURES/j_autoware_mix/a.pcap}
BENCH_E2E_OUT=${BENCH_E2E_OUT:-/var/tmp/ddshark-bench-e2e}
DDSHARK_STACK_DIR=${DDSHARK_STACK_DIR:-$HOME/.cache/ddshark-stack}
DDSHARK_STACK_RUN_DIR=${DDSHARK_STACK_RUN_DIR:-$DDSHARK_STACK_DIR/run}
export PYTHONPATH="$REPO_ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}"
say() { printf '[%s] %s\n' "${LIB_TAG:-ddshark}" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "${LIB_TAG:-ddshark}" "$*" >&2; exit 1; }
