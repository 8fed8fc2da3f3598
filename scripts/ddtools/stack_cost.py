"""What the stack costs per sample observation (a sample seen on one host), against what
InfluxDB alone needs for it (standard library only).

  python3 -m ddtools.stack_cost observations FINAL_JSON…
      the sample observations of ddshark runs: the samples of every topic in each run's
      --final-json (one SAMPLE span each), summed
  python3 -m ddtools.stack_cost floor --stack-env F --points N --writers-from FINAL_JSON… [--out FILE]
      InfluxDB's floor: N minimal points (one per sample observation: one series per writer
      and host, 6 tags, 3 integer fields, gzip'd batches of 5,000, as the join writes) into a
      side bucket of the stack's influxd; prints and stores influxd's CPU µs per point

The floor is written after the stack has stored a replay, into the same influxd, so the two
figures come from one run on one machine state (docs/bench-e2e.md).
"""
import argparse
import gzip
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from . import say_as
from .influx import Influx
from .stack import read_env

log = say_as("stack-cost")

FLOOR_BUCKET = "ddshark_floor"
FLOOR_BATCH = 5_000
# Processes of the stack that watch it rather than carry the data (scripts/stack/start.sh
# starts them on request): not part of its cost.
OBSERVERS = ("prometheus", "node_exporter")


def process_cpu(pid):
    """CPU seconds (user + system) of pid so far, None when it is gone."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def stack_cpu(env):
    """{process name: CPU seconds so far} of every process whose pid the stack recorded
    (observers aside)."""
    pid_dir = os.path.join(env["DDSHARK_STACK_RUN_DIR"], "pids")
    out = {}
    for name in sorted(os.listdir(pid_dir)):
        if not name.endswith(".pid") or name[: -len(".pid")] in OBSERVERS:
            continue
        try:
            pid = int(open(os.path.join(pid_dir, name)).read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        cpu = process_cpu(pid)
        if cpu is not None:
            out[name[: -len(".pid")]] = cpu
    return out


def cpu_between(start, end):
    """{name: CPU seconds} spent between two stack_cpu readings (processes in both)."""
    return {n: end[n] - start[n] for n in end if n in start}


def observations(final_jsons):
    """Sample observations of ddshark runs: every topic's samples in each --final-json."""
    return sum(t.get("samples", 0) for path in final_jsons for t in json.load(open(path))["topics"])


def writer_series(final_jsons):
    """(host index, writer GUID, topic) of every writer the runs saw: the floor's series."""
    out = []
    for host, path in enumerate(final_jsons):
        for topic in json.load(open(path))["topics"]:
            for guid in topic.get("writer_guids", []):
                out.append((host, guid, topic["name"]))
    return out


def tag_value(text):
    """text as a line-protocol tag value."""
    for c in ("\\", ",", "=", " "):
        text = text.replace(c, "\\" + c)
    return text or "none"


def floor_lines(points, series):
    """`points` minimal points spread over `series`: per series a sample every millisecond."""
    series = series or [(0, "0" * 32, "none")]
    lines = []
    for i in range(points):
        host, guid, topic = series[i % len(series)]
        n = i // len(series)
        tags = (f"host.name=h{host},writer_id={guid},topic_name={tag_value(topic)},"
                f"receiver=h{1 - host % 2},vendor_id=1.16,domain_id=0")
        lines.append(f"floor,{tags} sn={n + 1}i,sample_size=64i,latency_ns={100_000 + n}i "
                     f"{1_000_000_000_000 + n * 1_000_000}")
    return lines


def write_floor(env, lines):
    """The lines into FLOOR_BUCKET (made anew), gzip'd batches of FLOOR_BATCH; influxd's CPU
    seconds spent meanwhile (and in the second after, for what it finishes late)."""
    influx = Influx.from_env(env)
    org_id = influx.org_id()
    buckets = influx.call("GET", f"/api/v2/buckets?orgID={org_id}&limit=100").get("buckets", [])
    for b in (b for b in buckets if b["name"] == FLOOR_BUCKET):
        influx.call("DELETE", f"/api/v2/buckets/{b['id']}")
    influx.call("POST", "/api/v2/buckets", {"orgID": org_id, "name": FLOOR_BUCKET, "retentionRules": []})
    pid = int(open(os.path.join(env["DDSHARK_STACK_RUN_DIR"], "pids", "influxd.pid")).read().split()[0])
    url = (f"{influx.url}/api/v2/write?org={urllib.parse.quote(influx.org)}&bucket={FLOOR_BUCKET}"
           f"&precision=ns")
    bodies = [gzip.compress("\n".join(lines[i:i + FLOOR_BATCH]).encode())
              for i in range(0, len(lines), FLOOR_BATCH)]
    before = process_cpu(pid)
    for body in bodies:
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Authorization": f"Token {influx.token}", "Content-Encoding": "gzip",
            "Content-Type": "text/plain; charset=utf-8"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
        except urllib.error.HTTPError as e:
            raise SystemExit(f"stack-cost: the floor's write into {FLOOR_BUCKET} failed: HTTP {e.code}: "
                             f"{e.read().decode(errors='replace')[:500]}")
    time.sleep(1)
    return process_cpu(pid) - before


def cmd_observations(a):
    print(observations(a.final_json))
    return 0


def cmd_floor(a):
    env = read_env(a.stack_env)
    lines = floor_lines(a.points, writer_series(a.writers_from))
    cpu = write_floor(env, lines)
    per_point_us = cpu / max(1, len(lines)) * 1e6
    result = {"points": len(lines), "influxd_cpu_s": round(cpu, 3), "us_per_point": round(per_point_us, 2)}
    log(f"floor: {len(lines):,} minimal points, influxd {cpu:.2f} s CPU, {per_point_us:.1f} µs per point")
    if a.out:
        json.dump(result, open(a.out, "w"))
    print(json.dumps(result))
    return 0


def main():
    p = argparse.ArgumentParser(prog="ddtools.stack_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("observations")
    o.add_argument("final_json", nargs="+")
    f = sub.add_parser("floor")
    f.add_argument("--stack-env", required=True)
    f.add_argument("--points", type=int, required=True)
    f.add_argument("--writers-from", nargs="+", default=[])
    f.add_argument("--out")
    a = p.parse_args()
    return {"observations": cmd_observations, "floor": cmd_floor}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
