"""ddshark's Python tools for the stack and InfluxDB (standard library only; the Flux suite
also reads YAML). scripts/lib.sh puts scripts/ on PYTHONPATH; the commands run as
`python3 -m ddtools.NAME`.

Library:
  paths      the repository's folders and the machine's (the stack's cache), one default each
  influx     InfluxDB 2's HTTP API: Flux queries (the one annotated-CSV parser), buckets, tasks
  flux       RFC 3339 in ns, Grafana's variables bound into Flux and PromQL
  stack      a stack's stack.env, starting and stopping a private stack, its Prometheus

Commands:
  influx_setup   InfluxDB provisioning (scripts/stack/start.sh)
  otlp_smoke     spans sent as OTLP/HTTP and found in InfluxDB (scripts/stack/smoke.sh)
  fluxcheck      the Flux queries and dashboards against `ddshark latency` (tests/flux/run.sh)
  demo           the stack demo as a newcomer meets it (tests/flux/demo.sh)
  bench_e2e      measurements and report of scripts/bench-e2e.sh and scripts/bench-ingest.sh
"""
