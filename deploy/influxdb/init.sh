#!/bin/bash
# First-start provisioning inside the influxdb image (docker compose mounts this into
# /docker-entrypoint-initdb.d/; it runs once, after DOCKER_INFLUXDB_INIT_* created the
# org, the raw-span bucket and the admin token, with the influx CLI configured):
# the long bucket (materialised latencies, per-topic counters; the latency join
# writes them). The docker-free stack does the same with scripts/ddtools/influx_setup.py.
set -euo pipefail
long="${DDSHARK_INFLUX_LONG_BUCKET:-ddshark_long}"
influx bucket create --org "$DOCKER_INFLUXDB_INIT_ORG" --name "$long" \
  --retention "${DDSHARK_INFLUX_LONG_RETENTION:-30d}"
