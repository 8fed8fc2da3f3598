#!/usr/bin/env bash
# Flux queries + Grafana dashboards against the real stack (InfluxDB, OpenTelemetry
# Collector, Prometheus, node_exporter), with ddshark's spans from the two-host fixtures.
# Starts a private stack (scripts/stack/start.sh --auto-ports) and stops it at the end;
# fails (never skips) when the stack cannot start. See `tests/flux/run.sh --help`
# (tests/flux/fluxcheck.py; the join checks it shares with the benches: scripts/ddtools/joincheck.py).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$REPO_ROOT"
exec python3 tests/flux/fluxcheck.py "$@"
