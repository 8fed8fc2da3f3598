"""The stack demo, as a newcomer meets it: a private stack on free ports, the README's demo
command (scripts/stack/demo.sh) replaying a bundled two-host capture into it with its
timestamps moved to now, then every dashboard opened as Grafana opens it: its own time range
(the last 15 minutes, ending now), its host variables filled from their own queries and sort
order (sender demo-a, receiver demo-b), and every panel outside the collapsed rows run against
the stack (Flux on InfluxDB, PromQL on Prometheus) and required to show data.

  tests/flux/demo.sh [--ddshark BIN]     (scripts/test.sh runs it; needs the built stack)
"""
import argparse
import json
import os
import subprocess
import sys
import time

from ddtools import joincheck, say_as, stack
from ddtools.flux import bind_flux, bind_prom, rfc3339
from ddtools.influx import Influx
from ddtools.paths import DASH_DIR, REPO_ROOT, STACK_SCRIPTS

HOSTS = ("demo-a", "demo-b")


log = say_as("demo")


def relative_ns(expr, now_ns):
    """Grafana's `now-15m` → ns."""
    if expr == "now":
        return now_ns
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    assert expr.startswith("now-") and expr[-1] in units, expr
    return now_ns - int(expr[4:-1]) * units[expr[-1]] * 1_000_000_000


def spans_per_host(influx, start, stop):
    rows = influx.query(
        f'from(bucket: "{influx.bucket}") |> range(start: {rfc3339(start)}, stop: {rfc3339(stop)}) '
        '|> filter(fn: (r) => r._measurement == "spans" and r._field == "end_time_unix_nano") '
        '|> group(columns: ["host.name"]) |> count()')
    return {r["host.name"]: int(r["_value"]) for r in rows}


def open_dashboard(path, influx, prom_url):
    """Runs the dashboard as Grafana opens it; returns the number of panel queries checked."""
    d = json.load(open(path))
    name = os.path.basename(path)
    joincheck.check(d.get("refresh") == "10s", f"{name}: refresh {d.get('refresh')!r}, not 10s")
    now = time.time_ns()
    start, stop = relative_ns(d["time"]["from"], now), relative_ns(d["time"]["to"], now)
    values = {}
    for v in d["templating"]["list"]:
        if v["type"] == "textbox":
            values[v["name"]] = v["query"]
        elif v["type"] == "custom":
            values[v["name"]] = v["current"]["value"]
        elif v["type"] == "query" and v["datasource"]["type"] == "influxdb":
            got = sorted({r["_value"] for r in influx.query(
                bind_flux(v["query"], start, stop, "1s", values))}, reverse=v.get("sort") == 2)
            if v.get("multi") and v.get("includeAll"):
                values[v["name"]] = ".*"
            elif joincheck.check(got, f"{name}: variable {v['name']} has no values"):
                values[v["name"]] = got[0]
        elif v["type"] == "query":
            values[v["name"]] = ".*"
    if "sender" in values:
        joincheck.check((values["sender"], values.get("receiver")) == HOSTS,
                   f"{name}: opens on sender {values['sender']}, receiver {values.get('receiver')}, "
                   f"not {HOSTS}")
    queries = 0
    for p in d["panels"]:  # the collapsed rows keep their panels inside the row
        for t in p.get("targets", []):
            queries += 1
            where = f"{name} / {p['title']} / {t['refId']}"
            try:
                if "query" in t:
                    n = len(influx.query(bind_flux(t["query"], start, stop, "1s", values)))
                else:
                    res = stack.prom_query_range(prom_url, bind_prom(t["expr"], values),
                                                start // 1_000_000_000, stop // 1_000_000_000)
                    n = sum(len(s.get("values", [])) for s in res)
            except (RuntimeError, KeyError) as e:
                joincheck.fail(f"{where}: {e}")
                continue
            joincheck.check(n > 0, f"{where}: no data")
            log(f"{where}: {n} rows/points")
    return queries


def main():
    ap = argparse.ArgumentParser(prog="tests/flux/demo.sh", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ddshark", help="ddshark binary (default: target/release/ddshark, built by cargo)")
    args = ap.parse_args()
    binary = args.ddshark or os.path.join(REPO_ROOT, "target", "release", "ddshark")
    if not args.ddshark:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "ddshark"], cwd=REPO_ROOT, check=True)
    with stack.private("DDSHARK_DEMO_RUN_DIR", "--with-prometheus",
                       failed=lambda: bool(joincheck.FAILURES)) as env:
        influx = Influx.from_env(env)
        t0 = time.time_ns()
        demo = subprocess.run([os.path.join(STACK_SCRIPTS, "demo.sh"),
                               "--otlp", env["DDSHARK_OTLP_ENDPOINT"], "--ddshark", binary],
                              cwd=REPO_ROOT, env=dict(os.environ, **env), capture_output=True, text=True,
                              timeout=600)
        joincheck.check(demo.returncode == 0, f"demo.sh failed: {demo.stderr[-2000:]}")
        sent = [int(x.split(" spans")[0].rsplit(" ", 1)[-1]) for x in demo.stderr.splitlines()
                if " spans: " in x and " sent" in x]
        joincheck.check(len(sent) == 2, f"demo.sh: no export summaries: {demo.stderr[-2000:]}")
        # The spans are stored at now (not at the capture's recorded time).
        deadline, got = time.time() + 120, {}
        while time.time() < deadline:
            got = spans_per_host(influx, t0 - 60_000_000_000, time.time_ns() + 60_000_000_000)
            if sorted(got.get(h, 0) for h in HOSTS) == sorted(sent):
                break
            time.sleep(1)
        joincheck.check(sorted(got.get(h, 0) for h in HOSTS) == sorted(sent),
                   f"spans stored around now per host {got}, sent {sent}")
        joincheck.wait_for_join(influx)
        queries = sum(open_dashboard(os.path.join(DASH_DIR, f), influx, env["DDSHARK_PROMETHEUS_URL"])
                      for f in sorted(os.listdir(DASH_DIR)) if f.endswith(".json"))
        log(f"{queries} panel queries of the dashboards as they open, {got} spans")
    if joincheck.FAILURES:
        log(f"FAILED: {len(joincheck.FAILURES)} checks")
        for f in joincheck.FAILURES:
            log("  " + f)
        return 1
    log("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
