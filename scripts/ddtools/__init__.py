"""ddshark's Python tools for the stack and InfluxDB (standard library only; the Flux suite
also reads YAML). scripts/lib.sh puts scripts/ on PYTHONPATH; the commands run as
`python3 -m ddtools.NAME`.

Library:
  say_as     say(msg) for one tool: "[TAG] msg" on stderr (scripts/lib.sh's say)
  paths      the repository's folders and the machine's (the stack's cache), one default each
  influx     InfluxDB 2's HTTP API: Flux queries (the one annotated-CSV parser), buckets, tasks
  flux       RFC 3339 in ns, Grafana's variables bound into Flux and PromQL
  stack      a stack's stack.env, starting and stopping a private stack, its Prometheus
  generated  generated files written, or compared with --check (dashboards, ad-hoc Flux)
  joincheck  the live join's points and the Flux queries against `ddshark latency`, to the ns:
             one comparison for the Flux suite (tests/flux/fluxcheck.py), the demo check
             (tests/flux/democheck.py) and the benches

Commands:
  influx_setup   InfluxDB provisioning (scripts/stack/start.sh)
  otlp_smoke     spans sent as OTLP/HTTP and found in InfluxDB (scripts/stack/smoke.sh)
  bench_e2e      measurements and report of scripts/bench-e2e.sh and scripts/bench-ingest.sh
  build_stamp    the digest of the sources a crate's binary is built from (scripts/stack/start.sh)
"""
import sys


def say_as(tag):
    """The say(msg) of one tool: "[tag] msg" on stderr, flushed, as scripts/lib.sh's say."""
    def say(msg):
        print(f"[{tag}] {msg}", file=sys.stderr, flush=True)
    return say
