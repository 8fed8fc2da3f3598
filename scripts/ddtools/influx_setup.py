"""InfluxDB provisioning for the ddshark stack, over InfluxDB 2's HTTP API (standard
library only; the docker-free stack has no `influx` CLI).

  python3 -m ddtools.influx_setup seconds DURATION
      print DURATION (e.g. 6h, 30d, 90m, 3600, 0 = forever) in seconds
  python3 -m ddtools.influx_setup provision --url U --org O --token T --bucket RAW --long-bucket LONG
                            --long-retention DUR [--tasks DIR]
      create the long bucket and (--tasks) one task per DIR/*.flux (${bucket} and ${long_bucket}
      replaced by RAW and LONG); a task of the same name is replaced. The stack creates no
      task: the latency join materialises the latencies; --tasks and run-task are
      for measuring the Flux version, flux-queries/tasks/materialise_latency.flux
  python3 -m ddtools.influx_setup run-task --url U --org O --token T --name NAME --at TIME [--at TIME ...]
      run the task now as if scheduled at each TIME (RFC 3339 or ns since the epoch), in
      order, waiting for each run; exit 1 if a run fails (its log is printed)

Exit status 0 on success, 1 on an API error (the response is printed), 2 on bad usage.
"""
import argparse
import glob
import os
import re
import sys
import time

from .flux import rfc3339
from .influx import Influx

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def seconds(text):
    m = re.fullmatch(r"\s*(\d+)\s*([smhdw]?)\s*", text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (e.g. 6h, 30d, 0)")
    return int(m.group(1)) * UNITS[m.group(2) or "s"]


def provision(a):
    api = Influx(a.url, a.org, a.token)
    org_id = api.org_id()
    long_s = seconds(a.long_retention)
    buckets = [b for b in api.call("GET", f"/api/v2/buckets?orgID={org_id}")["buckets"]
               if b["name"] == a.long_bucket]
    rules = [{"type": "expire", "everySeconds": long_s}] if long_s else []
    if buckets:
        api.call("PATCH", f"/api/v2/buckets/{buckets[0]['id']}", {"retentionRules": rules})
    else:
        api.call("POST", "/api/v2/buckets", {"orgID": org_id, "name": a.long_bucket, "retentionRules": rules})
    print(f"[influx] bucket {a.long_bucket}: retention {a.long_retention}", file=sys.stderr)
    for path in sorted(glob.glob(os.path.join(a.tasks, "*.flux"))) if a.tasks else ():
        flux = open(path).read().replace("${bucket}", a.bucket).replace("${long_bucket}", a.long_bucket)
        m = re.search(r'option task = \{name: "([^"]+)"', flux)
        if not m:
            raise RuntimeError(f"{path}: no `option task = {{name: ...}}`")
        old = api.task(m.group(1))
        if old:
            api.call("DELETE", f"/api/v2/tasks/{old['id']}")
        t = api.call("POST", "/api/v2/tasks", {"orgID": org_id, "flux": flux, "status": "active"})
        print(f"[influx] task {t['name']} ({t['id']}) every {t.get('every')} from {os.path.basename(path)}",
              file=sys.stderr)


def at_time(text):
    """TIME as RFC 3339: as given, or from ns since the epoch."""
    return rfc3339(int(text)) if re.fullmatch(r"\d+", text) else text


def run_task(a):
    api = Influx(a.url, a.org, a.token)
    t = api.task(a.name)
    if not t:
        raise RuntimeError(f"no task named {a.name!r}")
    for at in a.at:
        run = api.call("POST", f"/api/v2/tasks/{t['id']}/runs", {"scheduledFor": at_time(at)})
        deadline = time.monotonic() + a.timeout
        while True:
            try:
                r = api.call("GET", f"/api/v2/tasks/{t['id']}/runs/{run['id']}")
            except RuntimeError as e:
                # Between leaving the queue and being recorded as finished, a run is
                # briefly unknown (HTTP 404): ask again.
                if "HTTP 404" not in str(e) or time.monotonic() > deadline:
                    raise
                r = {}
            if r.get("status") in ("success", "failed", "canceled"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"run {run['id']} of {a.name} not finished after {a.timeout} s")
            time.sleep(0.2)
        started, finished = r.get("startedAt", ""), r.get("finishedAt", "")
        print(f"[influx] {a.name} run for {at_time(at)}: {r['status']} ({started} → {finished})", file=sys.stderr)
        if r["status"] != "success":
            logs = api.call("GET", f"/api/v2/tasks/{t['id']}/runs/{run['id']}/logs").get("events", [])
            for e in logs:
                if not e.get("message", "").startswith("Started task from script"):
                    print(f"[influx]   {e.get('message')}", file=sys.stderr)
            return 1
    return 0


def main():
    p = argparse.ArgumentParser(prog="python3 -m ddtools.influx_setup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seconds")
    s.add_argument("duration")
    for name in ("provision", "run-task"):
        q = sub.add_parser(name)
        q.add_argument("--url", required=True)
        q.add_argument("--org", required=True)
        q.add_argument("--token", required=True)
        if name == "provision":
            q.add_argument("--bucket", required=True)
            q.add_argument("--long-bucket", required=True)
            q.add_argument("--long-retention", required=True)
            q.add_argument("--tasks")
        else:
            q.add_argument("--name", required=True)
            q.add_argument("--at", action="append", required=True)
            q.add_argument("--timeout", type=float, default=300)
    a = p.parse_args()
    try:
        if a.cmd == "seconds":
            print(seconds(a.duration))
            return 0
        if a.cmd == "provision":
            provision(a)
            return 0
        return run_task(a)
    except (RuntimeError, ValueError, OSError) as e:
        print(f"[influx] ERROR: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
