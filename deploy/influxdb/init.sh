#!/bin/bash
# First-start provisioning inside the influxdb image (docker compose mounts this into
# /docker-entrypoint-initdb.d/; it runs once, after DOCKER_INFLUXDB_INIT_* created the
# org, the raw-span bucket and the admin token, with the influx CLI configured):
# the long bucket (materialised latencies, per-topic counters) and the tasks of
# flux-queries/tasks/ (mounted at /ddshark/tasks). The docker-free stack does the same
# with scripts/stack/influx_setup.py.
set -euo pipefail
long="${DDSHARK_INFLUX_LONG_BUCKET:-ddshark_long}"
influx bucket create --org "$DOCKER_INFLUXDB_INIT_ORG" --name "$long" \
  --retention "${DDSHARK_INFLUX_LONG_RETENTION:-30d}"
for f in /ddshark/tasks/*.flux; do
  sed -e "s/\${bucket}/$DOCKER_INFLUXDB_INIT_BUCKET/g" -e "s/\${long_bucket}/$long/g" "$f" >/tmp/ddshark-task.flux
  influx task create --org "$DOCKER_INFLUXDB_INIT_ORG" --file /tmp/ddshark-task.flux
done
