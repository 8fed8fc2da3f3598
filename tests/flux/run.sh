#!/usr/bin/env bash
# Flux queries + Grafana dashboards against the real stack (InfluxDB, OpenTelemetry
# Collector, Prometheus, node_exporter), with ddshark's spans from the two-host fixtures.
# Starts a private stack (scripts/stack/start.sh, ports 247xx, below the ephemeral range) and stops it at the end;
# fails (never skips) when the stack cannot start. See tests/flux/run.py --help.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec python3 tests/flux/run.py "$@"
