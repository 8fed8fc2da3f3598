# Shared by the scripts (source it; set LIB_TAG first to name the script in messages):
#   say MSG / die MSG    progress and fatal errors on stderr, as "[TAG] MSG"
#   REPO_ROOT            the repository
#   DDSHARK_CAPTURES     where scripts/make-fixtures.sh writes its captures
#                        [/var/tmp/ddshark-captures]
#   BENCH_CAPTURE        the benchmarks' large capture (the Autoware mix that
#                        `scripts/make-fixtures.sh --bench` makes)
#                        [$DDSHARK_CAPTURES/j_autoware_mix/a.pcap]
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DDSHARK_CAPTURES=${DDSHARK_CAPTURES:-/var/tmp/ddshark-captures}
BENCH_CAPTURE=${BENCH_CAPTURE:-$DDSHARK_CAPTURES/j_autoware_mix/a.pcap}
say() { printf '[%s] %s\n' "${LIB_TAG:-ddshark}" "$*" >&2; }
die() { printf '[%s] ERROR: %s\n' "${LIB_TAG:-ddshark}" "$*" >&2; exit 1; }
