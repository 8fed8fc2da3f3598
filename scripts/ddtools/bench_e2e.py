"""Measurements and report of scripts/bench-e2e.sh (standard library only).

  python3 -m ddtools.bench_e2e rate --stack-env F --dir D --name N --rate R --loops L --host-a A --host-b B
                    --t-start NS --t-end NS --ddshark BIN --equality yes|no --adhoc yes|no
      after one replay: waits until InfluxDB holds every span ddshark sent, then measures
      (counts, cardinality, RSS, panel query times, latency equality) into D/result.json
  python3 -m ddtools.bench_e2e held --dir D        exit 0 if that rate held (nothing dropped, all stored,
                                   latencies equal)
  python3 -m ddtools.bench_e2e sample --stack-env F --out CSV --pids "P1 P2"
      every 15 s while the pids run: series cardinality, influxd RSS, spans stored
  python3 -m ddtools.bench_e2e cpu --stack-env F --out FILE   CPU seconds so far of the stack's processes
  python3 -m ddtools.bench_e2e report --out DIR --report FILE [--others TEXT]   the Markdown table
"""
import argparse
import csv
import glob
import json
import math
import os
import re
import sys
import time
import urllib.request

from . import joincheck, say_as, stack_cost
from .flux import bind_flux, rfc3339
from .influx import Influx
from .paths import DASH_DIR, FLUX_DIR
from .stack import read_env

log = say_as("bench-e2e")


class BenchInflux(Influx):
    """The stack's InfluxDB client with what the bench measures besides (made by bench_influx:
    panel queries over a soak's millions of spans may take minutes)."""

    def timed(self, flux):
        t0 = time.monotonic()
        try:
            rows = self.query(flux)
        except RuntimeError as e:
            return None, time.monotonic() - t0, str(e)
        return rows, time.monotonic() - t0, None

    def cardinality(self, bucket, start):
        r = self.query(f'import "influxdata/influxdb"\ninfluxdb.cardinality(bucket: "{bucket}", start: {start})')
        return int(r[0]["_value"]) if r else 0

    def span_count(self, host, start_ns=0):
        """The spans of host.name host stored since start_ns."""
        r = self.query(f'from(bucket: "{self.bucket}") |> range(start: {rfc3339(start_ns)}) '
                       f'|> filter(fn: (r) => r._measurement == "spans" and r._field == "end_time_unix_nano" '
                       f'and r["host.name"] == "{host}") |> group() |> count()')
        return int(r[0]["_value"]) if r else 0

    def raw_layout(self, hosts):
        """What the raw bucket holds of `hosts`: span points, their field values (one row
        each), and writer points (`dds_writers`)."""
        # (comparisons, not contains(): a predicate the storage engine answers)
        of_hosts = " or ".join(f'r["host.name"] == "{h}"' for h in hosts)

        def count(measurement, field_filter):
            r = self.query(f'from(bucket: "{self.bucket}") |> range(start: 0) '
                           f'|> filter(fn: (r) => r._measurement == "{measurement}"{field_filter} and '
                           f'({of_hosts})) |> group() |> count()')
            return int(r[0]["_value"]) if r else 0
        return (count("spans", ' and r._field == "end_time_unix_nano"'), count("spans", ""),
                count("dds_writers", ' and r._field == "sn"'))

    def adhoc_latency_seconds(self, sender, receiver):
        """Seconds flux-queries/dds_latency.flux takes over everything `sender` and `receiver`
        stored (Grafana's variables bound, all topics), and the rows it gave."""
        ends = []
        for fn, pick in (("first", "min"), ("last", "max")):
            r = self.query(f'from(bucket: "{self.bucket}") |> range(start: 0) '
                           f'|> filter(fn: (r) => r._measurement == "spans" and r._field == "sn" and '
                           f'(r["host.name"] == "{sender}" or r["host.name"] == "{receiver}")) |> {fn}() '
                           f'|> map(fn: (r) => ({{_value: int(v: r._time)}})) |> group() |> {pick}()')
            if not r:
                return None, 0
            ends.append(int(r[0]["_value"]))
        text = open(os.path.join(FLUX_DIR, "dds_latency.flux")).read()
        q = bind_flux(text, ends[0] - 60_000_000_000, ends[1] + 60_000_000_000, "1s",
                      {"bucket": self.bucket, "long_bucket": self.long_bucket, "sender": sender,
                       "receiver": receiver, "topic": ".*"})
        t0 = time.time()
        rows = self.query(q, timeout=600)
        return time.time() - t0, len(rows)

    def join_counters(self):
        """The latency join's counters, its last `ddshark_join` point: field → value."""
        r = self.query(f'from(bucket: "{self.bucket}") |> range(start: -6h) '
                       f'|> filter(fn: (r) => r._measurement == "ddshark_join") |> last()')
        return {x["_field"]: int(float(x["_value"])) for x in r}

    def writer_counters(self):
        """Telegraf's cumulative internal_write counters per output alias."""
        r = self.query(f'from(bucket: "{self.bucket}") |> range(start: -6h) '
                       f'|> filter(fn: (r) => r._measurement == "internal_write" and '
                       f'(r._field == "metrics_written" or r._field == "metrics_dropped" or r._field == "buffer_size")) '
                       f'|> group(columns: ["alias", "_field"]) |> last()')
        out = {}
        for x in r:
            out.setdefault(x.get("alias", ""), {})[x["_field"]] = int(float(x["_value"]))
        return out


def bench_influx(env):
    return BenchInflux.from_env(env, timeout=600)


def stack_cpu_since(env, start_file):
    """CPU seconds of the stack's processes since `ddtools.bench_e2e cpu` wrote start_file."""
    try:
        start = json.load(open(start_file))
    except (OSError, ValueError):
        return {}
    now = stack_cost.stack_cpu(env)
    return {n: round(now[n] - start[n], 2) for n in now if n in start}


# The collector's exporter of spans to the join: one join, or the routing tier's (docs/fleet.md).
JOIN_EXPORTER = re.compile(r'exporter="(otlp_grpc|load_balancing)/join"')


def collector_counters(url):
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    out = {"accepted": 0, "refused": 0, "sent": 0, "failed": 0}
    for line in text.splitlines():
        m = re.match(r'(otelcol_\w+)\{([^}]*)\} ([0-9.e+]+)', line)
        if not m:
            continue
        name, labels, v = m.group(1), m.group(2), float(m.group(3))
        if name == "otelcol_receiver_accepted_spans_total":
            out["accepted"] += v
        elif name == "otelcol_receiver_refused_spans_total":
            out["refused"] += v
        elif name == "otelcol_exporter_sent_spans_total" and JOIN_EXPORTER.search(labels):
            out["sent"] += v
        elif name == "otelcol_exporter_send_failed_spans_total" and JOIN_EXPORTER.search(labels):
            out["failed"] += v
    return {k: int(v) for k, v in out.items()}


def ddshark_summary(err_path, json_path):
    text = open(err_path).read() if os.path.exists(err_path) else ""
    # (ddshark's exit summary; older builds also printed "N rejected, ")
    m = re.search(r"(\d+) spans: (\d+) sent, (\d+) filtered, (\d+) dropped \(queue full\), (\d+) failed, "
                  r"(?:(\d+) rejected, )?(\d+) abandoned", text)
    s = dict(zip(("spans", "sent", "filtered", "dropped", "failed", "rejected", "abandoned"),
                 (int(x or 0) for x in m.groups()))) if m else {"error": text[-500:]}
    kernel = {}
    if os.path.exists(json_path):
        def walk(o, path=""):
            if isinstance(o, dict):
                for k, v in o.items():
                    walk(v, f"{path}.{k}" if path else k)
            elif isinstance(o, (int, float)) and re.search(r"(^|\.)(dropped|if_dropped|queue_dropped|received)$", path):
                kernel[path] = o
        walk(json.load(open(json_path)))
    s["capture"] = kernel
    return s


def tcpreplay_stats(path):
    text = open(path).read() if os.path.exists(path) else ""
    out = {}
    m = re.search(r"Actual: (\d+) packets \((\d+) bytes\) sent in ([0-9.]+) seconds", text)
    if m:
        out.update(packets=int(m.group(1)), bytes=int(m.group(2)), seconds=float(m.group(3)))
    m = re.search(r"Rated: ([0-9.]+) Bps, ([0-9.]+) Mbps, ([0-9.]+) pps", text)
    if m:
        out.update(mbps=float(m.group(2)), pps=float(m.group(3)))
    m = re.search(r"Failed packets:\s+(\d+)", text)
    if m:
        out["failed"] = int(m.group(1))
    return out


def rss_between(csv_path, t0_s, t1_s):
    vals = []
    for line in open(csv_path):
        try:
            t, kb = line.strip().split(",")
            if t0_s <= int(t) <= t1_s and kb:
                vals.append(int(kb))
        except ValueError:
            continue
    return {"max_mib": round(max(vals) / 1024, 1), "last_mib": round(vals[-1] / 1024, 1)} if vals else {}


def dashboard_queries():
    """(dashboard, panel title, refId, flux text) of every InfluxDB target of every panel,
    those of collapsed rows (the ad-hoc joins, run only when expanded) marked, each query
    once."""
    out, seen = [], set()
    for f in sorted(glob.glob(os.path.join(DASH_DIR, "*.json"))):
        d = json.load(open(f))
        panels = [(p, False) for p in d["panels"]]
        panels += [(c, True) for p in d["panels"] for c in p.get("panels", [])]
        for p, collapsed in panels:
            for t in p.get("targets", []):
                if "query" in t and t["query"] not in seen:
                    seen.add(t["query"])
                    title = p["title"] + (" [collapsed row]" if collapsed else "")
                    out.append((os.path.basename(f), title, t["refId"], t["query"]))
    return out


def compare(influx, binary, d, hosts, start, stop, adhoc=True):
    """Materialised (and, with adhoc, ad-hoc) latencies against `ddshark latency` on the
    two captures (ddtools.joincheck's comparison)."""
    out = {}
    a, b = os.path.join(d, "a.pcap"), os.path.join(d, "b.pcap")
    # (the ad-hoc submessage join is checked by tests/flux on every fixture; here it would
    # only add minutes per rate)
    for level, files in (("sample", joincheck.LATENCY_QUERIES["sample"][:2 if adhoc else 1]),
                         ("submessage", joincheck.LATENCY_QUERIES["submessage"][:1])):
        rows = joincheck.latency_rows(binary, a, b, level)
        for direction, snd, rcv in joincheck.directed(hosts):
            for f in files:
                # (the join is done before this runs; the wait is a safety net)
                deadline = time.time() + (600 if f.endswith("_materialised.flux") else 0)
                while True:
                    r = joincheck.compare_latencies(influx, rows, level, f, direction, snd, rcv, start, stop)
                    if r["error"] or r["flux"] >= r["ddshark"] or time.time() > deadline:
                        break
                    time.sleep(5)
                r["seconds_after_window"] = round(time.time() - stop / 1e9, 1)
                out[f"{f.removesuffix('.flux')} {direction}"] = r
                log(f"{f} {direction}: ddshark {r['ddshark']} flux {r['flux']} "
                    f"({'equal' if r['equal'] else 'DIFFERENT'}) in {r['seconds']:.2f} s")
    return out


def panel_times(influx, hosts, now_ns, minutes=5, collapsed=True):
    start = now_ns - minutes * 60 * 1_000_000_000
    values = {"bucket": influx.bucket, "long_bucket": influx.long_bucket, "sender": hosts[0],
              "receiver": hosts[1], "topic": ".*", "iface": ".*", "clock": "raw"}
    out = []
    for board, title, ref, flux in dashboard_queries():
        if not collapsed and title.endswith("[collapsed row]"):
            continue
        # (the latency panels once per value of the variable `clock`)
        for clock in ("raw", "corrected") if "${clock}" in flux else ("raw",):
            name = title.replace("${clock}", clock)
            # Grafana's $__interval for 5 minutes on a ~1000 px panel.
            res, secs, err = influx.timed(bind_flux(flux, start, now_ns, "1s", dict(values, clock=clock)))
            out.append({"dashboard": board, "panel": name, "ref": ref, "seconds": round(secs, 2),
                        "rows": len(res or []), "error": err})
            log(f"panel {board} / {name}: {secs:.2f} s, {len(res or [])} rows{' ERROR ' + err if err else ''}")
    return out


def cmd_rate(a):
    env = read_env(a.stack_env)
    influx = bench_influx(env)
    hosts = (a.host_a, a.host_b)
    res = {"name": a.name, "rate": a.rate, "loops": a.loops, "t_start": a.t_start, "t_end": a.t_end,
           "replay_s": round((a.t_end - a.t_start) / 1e9, 2)}
    res["ddshark"] = {s: ddshark_summary(os.path.join(a.dir, f"ddshark_{s}.err"),
                                         os.path.join(a.dir, f"ddshark_{s}.json")) for s in "ab"}
    res["tcpreplay"] = {s: tcpreplay_stats(os.path.join(a.dir, f"tcpreplay_{s}.log")) for s in "ab"}
    # Every span ddshark sent must arrive in InfluxDB, once.
    want = {h: res["ddshark"][s].get("sent", -1) for s, h in zip("ab", hosts)}
    t0 = time.time()
    stored = {}
    while time.time() - t0 < 300:
        stored = {h: influx.span_count(h, a.t_start - 60_000_000_000) for h in hosts}
        if all(stored[h] >= want[h] for h in hosts):
            break
        time.sleep(2)
    res["stored"] = stored
    res["ingest_wait_s"] = round(time.time() - t0, 1)
    log(f"{a.name}: sent {want}, stored {stored} (waited {res['ingest_wait_s']} s)")
    res["collector"] = collector_counters(env["DDSHARK_OTELCOL_METRICS_URL"])
    # Let the latency join take the last samples before reading its output.
    res["join"], _, res["join_wait_s"] = joincheck.await_join(influx, timeout=600, poll=2)
    log(f"{a.name}: latency join done {res['join_wait_s']} s after the spans were stored: {res['join']}")
    # (its last points reach InfluxDB with its next write)
    time.sleep(3)
    res["writer"] = influx.writer_counters()
    res["stack_cpu_s"] = stack_cpu_since(env, os.path.join(a.dir, "stack_cpu_start"))
    finals = [os.path.join(a.dir, f"ddshark_{s}.json") for s in "ab"]
    res["sample_observations"] = stack_cost.observations(finals)
    # InfluxDB's floor for as many sample observations, into the same influxd, after the
    # stack's CPU was read (the next rate's reading starts after it).
    floor_cpu = stack_cost.write_floor(env, stack_cost.floor_lines(res["sample_observations"],
                                                                   stack_cost.writer_series(finals)))
    res["floor_us_per_observation"] = round(floor_cpu / max(1, res["sample_observations"]) * 1e6, 2)
    res["cardinality"] = {"raw": influx.cardinality(influx.bucket, "-1h"),
                          "long": influx.cardinality(influx.long_bucket, "-30d")}
    res["influxd_rss"] = rss_between(os.path.join(os.path.dirname(a.dir), "influxd_rss.csv"),
                                     a.t_start // 1_000_000_000, int(time.time()))
    if a.equality == "yes":
        # The join is done: the panels below are timed on complete data.
        res["latency"] = compare(influx, a.ddshark, a.dir, hosts, a.t_start - 10_000_000_000,
                                 a.t_end + 10_000_000_000, adhoc=a.adhoc == "yes")
        # Lost samples, sample sizes, repairs per writer against `ddshark latency`.
        n0 = len(joincheck.FAILURES)
        joincheck.check_outcomes(Influx.from_env(env), a.ddshark, a.name, hosts,
                                 a.t_start - 10_000_000_000, a.t_end + 10_000_000_000,
                                 pcaps=[os.path.join(a.dir, f) for f in ("a.pcap", "b.pcap")], adhoc=False)
        res["outcomes"] = {"equal": len(joincheck.FAILURES) == n0, "failures": joincheck.FAILURES[n0:]}
    # (the soak's 5 minutes hold millions of spans: its ad-hoc joins over raw spans would
    # take longer than the bench; they are timed on the single replays)
    # ("last 5 minutes" as of the replay's end: the checks above may have taken minutes)
    res["panels"] = panel_times(influx, hosts, a.t_end + 10_000_000_000, collapsed=a.adhoc == "yes")
    json.dump(res, open(os.path.join(a.dir, "result.json"), "w"), indent=1)
    return 0


def held(res):
    problems = []
    for s in "ab":
        d = res["ddshark"][s]
        if "sent" not in d:
            problems.append(f"ddshark {s}: no summary")
            continue
        if d["dropped"] or d["failed"] or d["abandoned"]:
            problems.append(f"ddshark {s}: dropped {d['dropped']} failed {d['failed']} abandoned {d['abandoned']}")
        kd = sum(v for k, v in d["capture"].items() if k.endswith("dropped"))
        if kd:
            problems.append(f"ddshark {s}: capture drops {kd}")
    hosts = list(res["stored"])
    for s, h in zip("ab", hosts):
        if res["stored"][h] != res["ddshark"][s].get("sent"):
            problems.append(f"{h}: stored {res['stored'][h]} of {res['ddshark'][s].get('sent')}")
    for alias, c in res.get("writer", {}).items():
        if c.get("metrics_dropped"):
            problems.append(f"telegraf {alias}: dropped {c['metrics_dropped']}")
    for k, v in res.get("latency", {}).items():
        if not v["equal"]:
            problems.append(f"{k}: not equal to ddshark latency")
    if not res.get("outcomes", {}).get("equal", True):
        problems.append("lost samples / sample sizes / repairs: not equal to ddshark latency")
    return problems


def cmd_held(a):
    """Exit 0 if the rate held in throughput (nothing dropped, every span stored once): the
    bench goes on to the next rate. Latency differences
    are printed and reported in the table, they do not stop the bench."""
    res = json.load(open(os.path.join(a.dir, "result.json")))
    p = held(res)
    for x in p:
        log(f"{res['name']}: {x}")
    return 1 if [x for x in p if "latency" not in x] else 0


def cmd_sample(a):
    env = read_env(a.stack_env)
    influx = bench_influx(env)
    pids = [int(p) for p in a.pids.split()]
    influxd_pid = int(open(os.path.join(env["DDSHARK_STACK_RUN_DIR"], "pids", "influxd.pid")).read())
    with open(a.out, "w") as fh:
        fh.write("t_s,raw_series,long_series,influxd_rss_mib,spans_last_min,telegraf_buffer,join_pending,join_early\n")
        while any(os.path.exists(f"/proc/{p}") for p in pids):
            try:
                rss = int(re.search(r"VmRSS:\s+(\d+)", open(f"/proc/{influxd_pid}/status").read()).group(1))
                r = influx.query(f'from(bucket: "{influx.bucket}") |> range(start: -1m) |> filter(fn: (r) => '
                                 f'r._measurement == "spans" and r._field == "end_time_unix_nano") |> group() |> count()')
                w = influx.writer_counters().get("raw", {})
                j = joincheck.join_state(influx)
                fh.write(f"{int(time.time())},{influx.cardinality(influx.bucket, '-1h')},"
                         f"{influx.cardinality(influx.long_bucket, '-30d')},{rss / 1024:.1f},"
                         f"{r[0]['_value'] if r else 0},{w.get('buffer_size', '')},"
                         f"{j.get('pending_samples', '')},{j.get('early', '')}\n")
                fh.flush()
            except (RuntimeError, OSError, AttributeError) as e:
                log(f"sample: {e}")
            time.sleep(15)
    return 0


def cmd_cpu(a):
    json.dump(stack_cost.stack_cpu(read_env(a.stack_env)), open(a.out, "w"))
    return 0


def cmd_ingest(a):
    """One step of scripts/bench-ingest.sh: wait until InfluxDB holds every span the two
    replays sent (30 s at most after their end), write InfluxDB's floor for as many sample
    observations into the same influxd, then print the step's table row."""
    env = read_env(a.stack_env)
    influx = bench_influx(env)
    logs = [ddshark_summary(f, "") for f in a.ddshark_logs]
    sent = sum(x.get("sent", 0) for x in logs)
    dropped = sum(x.get("dropped", 0) + x.get("failed", 0) + x.get("abandoned", 0) for x in logs)
    stored, deadline = 0, time.time() + 30
    while True:
        # (from 1970: the spans carry the replayed captures' times, not the replay's)
        stored = sum(influx.span_count(a.host_prefix + h, 0) for h in "ab")
        if stored >= sent or time.time() > deadline:
            break
        time.sleep(1)
    after = time.time() - a.t_end / 1e9
    cpu_end = stack_cost.stack_cpu(env)
    start, replay_end = json.load(open(a.cpu_start)), json.load(open(a.cpu_replay_end))
    during = stack_cost.cpu_between(start, replay_end)
    total = stack_cost.cpu_between(start, cpu_end)
    names = sorted(total)
    observed = stack_cost.observations(a.final_json)
    floor_cpu = stack_cost.write_floor(env, stack_cost.floor_lines(observed, stack_cost.writer_series(a.final_json)))
    floor_us = floor_cpu / max(1, observed) * 1e6
    secs = max(1e-9, (a.t_end - a.t_start) / 1e9)
    per = {n: total[n] / max(1, observed) * 1e6 for n in names}
    stack_us = sum(per.values())
    j = influx.join_counters()
    join_lost = sum(j.get(k, 0) for k in ("influx_points_rejected", "influx_points_abandoned",
                                          "points_dropped", "telemetry_rejected"))
    held = stored >= sent and after <= 30 and dropped == 0 and join_lost == 0
    points, field_values, writer_points = influx.raw_layout([a.host_prefix + h for h in "ab"])
    adhoc_s, adhoc_rows = influx.adhoc_latency_seconds(a.host_prefix + "a", a.host_prefix + "b")
    adhoc = "—" if adhoc_s is None else f"{adhoc_s:.1f} s ({adhoc_rows:,} rows)"
    print(f"| ×{a.speed} | {observed / secs:,.0f} ({sent / secs:,.0f} spans) | "
          f"{f'{after:.0f} s' if stored >= sent else f'not within 30 s ({stored:,} of {sent:,})'}"
          f"{'' if held else ' (not held)'} | "
          f"{dropped} / {join_lost} | {sum(during.values()) / secs:.2f} cores | "
          f"{stack_us:.0f} µs ({' / '.join(f'{n} {per[n]:.1f}' for n in names)}) | "
          f"{floor_us:.1f} µs | {stack_us / max(1e-9, floor_us):.1f}× | "
          f"{(points + writer_points) / max(1, observed):.2f} ({points:,} + {writer_points:,} writer points; "
          f"{field_values / max(1, points):.2f} fields per span point) | {adhoc} |", flush=True)
    # The collector alone per span it took (the routing tier's cost, docs/fleet.md), and how
    # busy the machine was: other work on it slows every process and inflates CPU per unit.
    c = collector_counters(env["DDSHARK_OTELCOL_METRICS_URL"])
    log(f"×{a.speed}: collector {total.get('otelcol', 0):.2f} s of CPU for {c['accepted']:,} spans "
        f"taken ({c['sent']:,} sent on): {total.get('otelcol', 0) / max(1, c['accepted']) * 1e6:.1f} µs per span; "
        f"per process per sample observation: {', '.join(f'{n} {per[n]:.1f} µs' for n in names)}; "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0 if held else 1


# The Autoware workload: samples per second that one host sends.
AUTOWARE_SAMPLES_PER_S = 19_500
# What the live panels read per sample or span (the rest is per second, per topic or per
# export interval, so it does not grow with the sample rate and is copied once).
DENSE_LONG = ("dds_latency", "dds_samples", "dds_submessage_latency", "dds_lost", "dds_repairs")
DENSE_RAW_FIELDS = ("payload_size", "sn")


def cmd_dense(a):
    """The live panels at the Autoware workload's sample rate: the soak's points of host A that grow
    with the rate, written `copies` times (each copy k ns later) into side buckets, the
    rest once; then every live panel timed over the soak's last 5 minutes there."""
    env = read_env(a.stack_env)
    influx = bench_influx(env)
    res = json.load(open(os.path.join(a.dir, "result.json")))
    start, stop = res["t_start"] - 60_000_000_000, res["t_end"] + 60_000_000_000
    window = f"range(start: {rfc3339(start)}, stop: {rfc3339(stop)})"
    r = influx.query(f'from(bucket: "{influx.long_bucket}") |> {window} '
                     f'|> filter(fn: (r) => r._measurement == "dds_samples" and r._field == "sample_size" '
                     f'and r.sender == "{a.host_a}") |> group() |> count()')
    samples = int(r[0]["_value"]) if r else 0
    rate = samples / max(1e-9, res["replay_s"])
    copies = a.copies or max(1, math.ceil(AUTOWARE_SAMPLES_PER_S / max(1.0, rate)))
    dense = {"bucket": influx.bucket + "_dense", "long_bucket": influx.long_bucket + "_dense"}
    org = influx.org_id()
    for b in dense.values():
        for old in influx.call("GET", f"/api/v2/buckets?orgID={org}")["buckets"]:
            if old["name"] == b:
                influx.call("DELETE", f"/api/v2/buckets/{old['id']}")
        influx.call("POST", "/api/v2/buckets", {"orgID": org, "name": b, "retentionRules": []})
    log(f"dense: host {a.host_a} sent {samples:,} samples in {res['replay_s']} s ({rate:,.0f}/s); "
        f"{copies} copies reach {rate * copies:,.0f}/s (the Autoware workload: {AUTOWARE_SAMPLES_PER_S:,}/s)")
    def copy(which, predicate, shift_ns=0):
        """The points of bucket `which` that match, shift_ns later, into its side bucket."""
        src = influx.bucket if which == "bucket" else influx.long_bucket
        influx.query(f'from(bucket: "{src}") |> {window} |> filter(fn: (r) => {predicate}) '
                     f'|> timeShift(duration: {shift_ns}ns) |> to(bucket: "{dense[which]}") |> limit(n: 1)',
                     timeout=3600)

    t0 = time.monotonic()
    per_sample = " or ".join(f'r._measurement == "{m}"' for m in DENSE_LONG)
    fields = " or ".join(f'r._field == "{f}"' for f in DENSE_RAW_FIELDS)
    for k in range(copies):
        copy("long_bucket", f'({per_sample}) and r.sender == "{a.host_a}"', k)
        copy("bucket", f'r._measurement == "spans" and r["host.name"] == "{a.host_a}" and ({fields})', k)
    copy("long_bucket", f"not ({per_sample})")
    copy("bucket", 'r._measurement != "spans"')
    copy_s = time.monotonic() - t0
    dense_influx = bench_influx(dict(env, DDSHARK_INFLUX_BUCKET=dense["bucket"],
                                     DDSHARK_INFLUX_LONG_BUCKET=dense["long_bucket"]))
    r = dense_influx.query(f'from(bucket: "{dense["long_bucket"]}") |> {window} '
                           f'|> filter(fn: (r) => r._measurement == "dds_samples" and r._field == "sample_size") '
                           f'|> group() |> count()')
    out = {"copies": copies, "soak_samples_per_s": round(rate), "copy_s": round(copy_s, 1),
           "dense_samples": int(r[0]["_value"]) if r else 0,
           "dense_samples_per_s": round(rate * copies),
           "panels": panel_times(dense_influx, (a.host_a, a.host_b), res["t_end"] + 10_000_000_000,
                                     collapsed=False)}
    json.dump(out, open(os.path.join(a.dir, "dense.json"), "w"), indent=1)
    return 0


def cmd_report(a):
    results = []
    for d in sorted(glob.glob(os.path.join(a.out, "r*", "result.json")),
                    key=lambda p: float(json.load(open(p))["rate"])):
        results.append(json.load(open(d)))
    soak = os.path.join(a.out, "soak", "result.json")
    if os.path.exists(soak):
        results.append(json.load(open(soak)))
    prev_coll, prev_writer = {"accepted": 0, "sent": 0, "failed": 0}, 0
    lines = ["| run | replay | frames/s sent (A+B) | spans sent by ddshark (A+B) | dropped ddshark | "
             "collector accepted / exported / failed | Telegraf written / dropped | stored in InfluxDB | "
             "series raw / long | influxd RSS max | latency = `ddshark latency` (materialised; ad-hoc) | "
             "held |", "|" + "---|" * 12]
    for r in results:
        dd = r["ddshark"]
        sent = sum(dd[s].get("sent", 0) for s in "ab")
        dropped = sum(dd[s].get("dropped", 0) + dd[s].get("failed", 0) for s in "ab")
        kd = sum(v for s in "ab" for k, v in dd[s].get("capture", {}).items() if k.endswith("dropped"))
        pps = sum(r["tcpreplay"][s].get("pps", 0) for s in "ab")
        c = r["collector"]
        w = r.get("writer", {}).get("raw", {})
        written = w.get("metrics_written", 0)
        lat = r.get("latency", {})

        def eq(prefix):
            parts = [v for k, v in lat.items() if k.startswith(prefix + " ")]
            if not parts:
                return "—"
            n = sum(v["ddshark"] for v in parts)
            ok = all(v["equal"] for v in parts)
            return f"{'=' if ok else '≠'} {n}"
        latency = (f"samples {eq('dds_latency_materialised')}; {eq('dds_latency')} · "
                   f"DATA_FRAG {eq('dds_submessage_latency_materialised')}; {eq('dds_submessage_latency')}")
        if not lat:
            latency = "not compared (looped replay)"
        elif "outcomes" in r:
            latency += f" · lost, sizes, repairs {'=' if r['outcomes']['equal'] else '≠'}"
        lines.append(
            f"| {r['name']} ({r['rate']}×{', ' + str(r['loops']) + ' loops' if r['loops'] > 1 else ''}) "
            f"| {r['replay_s']} s | {pps:,.0f} | {sent:,} | {dropped} (kernel {kd}) "
            f"| {c['accepted'] - prev_coll['accepted']:,} / {c['sent'] - prev_coll['sent']:,} / "
            f"{c['failed'] - prev_coll['failed']} | {written - prev_writer:,} / {w.get('metrics_dropped', 0)} "
            f"| {sum(r['stored'].values()):,} | {r['cardinality']['raw']} / {r['cardinality']['long']} "
            f"| {r['influxd_rss'].get('max_mib', '?')} MiB | {latency} | {'yes' if not held(r) else 'no: ' + '; '.join(held(r))[:200]} |")
        prev_coll, prev_writer = c, written
    qlines = []
    if results:
        names = [f"{p['dashboard'].replace('.json', '')} / {p['panel']} ({p['ref']})" for p in results[0]["panels"]]
        qlines = ["| panel query (last 5 minutes, all topics) | " + " | ".join(r["name"] for r in results) + " |",
                  "|---|" + "---|" * len(results)]
        for i, n in enumerate(names):
            cells = []
            key = (results[0]["panels"][i]["dashboard"], results[0]["panels"][i]["panel"])
            for r in results:
                p = next((x for x in r["panels"] if (x["dashboard"], x["panel"]) == key), None)
                cells.append("not run" if p is None else "error" if p.get("error")
                             else f"{p.get('seconds', '?')} s ({p.get('rows', 0)} rows)")
            qlines.append(f"| {n} | " + " | ".join(cells) + " |")
        qlines.append("| ad-hoc `dds_latency.flux` over the run (A→B) | " + " | ".join(
            f"{r.get('latency', {}).get('dds_latency A->B', {}).get('seconds', '—')} s" for r in results) + " |")
        qlines.append("| `dds_latency_materialised.flux` over the run (A→B) | " + " | ".join(
            f"{r.get('latency', {}).get('dds_latency_materialised A->B', {}).get('seconds', '—')} s" for r in results) + " |")
    if results:
        qlines += ["", "Stack CPU from the replay's start until the latency join was done (seconds; "
                   "µs per sample observation, i.e. per sample seen on one host), against InfluxDB's floor "
                   "(`ddtools.stack_cost`: as many minimal points written into the same influxd): " + "; ".join(
                       f"{r['name']} ({r.get('sample_observations', 0):,} sample observations) " + ", ".join(
                           f"{n} {v} s ({v / max(1, r.get('sample_observations', 0)) * 1e6:.1f} µs)"
                           for n, v in r.get("stack_cpu_s", {}).items())
                       + f", total {sum(r.get('stack_cpu_s', {}).values()) / max(1, r.get('sample_observations', 0)) * 1e6:.1f} µs"
                       + f" = {sum(r.get('stack_cpu_s', {}).values()) / max(1, r.get('sample_observations', 0)) * 1e6 / max(1e-9, r.get('floor_us_per_observation', 0)):.1f}× the floor"
                       f" ({r.get('floor_us_per_observation', '?')} µs)"
                       for r in results) + ".",
                   "", "Latency join (`ddshark join`), when it was done: " + "; ".join(
                       f"{r['name']} {r.get('join', {}).get('samples', '?')} samples and "
                       f"{r.get('join', {}).get('frags', '?')} DATA_FRAGs joined since the stack started, "
                       f"{r.get('join', {}).get('early', '?')} early, {r.get('join_wait_s', '?')} s after "
                       f"the spans were stored" for r in results) + "."]
    soak_lines = []
    samples = os.path.join(a.out, "soak", "samples.csv")
    if os.path.exists(samples):
        rows = list(csv.DictReader(open(samples)))
        if rows:
            t0 = int(rows[0]["t_s"])
            soak_lines = ["| soak time | raw series | long series | influxd RSS | spans stored in the last minute | Telegraf buffer | latency join: samples pending / joined early |",
                          "|---|---|---|---|---|---|---|"]
            step = max(1, len(rows) // 12)
            for x in rows[::step] + ([rows[-1]] if (len(rows) - 1) % step else []):
                soak_lines.append(f"| {int(x['t_s']) - t0} s | {x['raw_series']} | {x['long_series']} | "
                                  f"{x['influxd_rss_mib']} MiB | {x['spans_last_min']} | {x['telegraf_buffer']} | "
                                  f"{x.get('join_pending', '')} / {x.get('join_early', '')} |")
    text = ["# End-to-end bench: live capture → OTLP → collector → latency join → InfluxDB → panels",
            "",
            f"`scripts/bench-e2e.sh` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): both sides of the "
            "Autoware-mix capture (j_autoware_mix) replayed live by tcpreplay into two network namespaces, "
            "`ddshark -i` on each exporting OTLP to the stack of `scripts/stack/start.sh`. "
            "Rates are multiples of the recorded speed; `held` means nothing was dropped anywhere, InfluxDB "
            "holds every span ddshark sent exactly once, and the latencies equal `ddshark latency` on the "
            "two captures tcpdump took during the run (count and values to the ns).",
            "",
            f"Machine: 2 cores shared with other work during the run ({a.others}).",
            "", *lines, "", "Dashboard panel queries (time to answer, rows):", "", *qlines, ""]
    if soak_lines:
        text += ["Soak (one pass of j_autoware_soak, no SN repeats) over time:", "", *soak_lines, ""]
    dense = os.path.join(a.out, "soak", "dense.json")
    if os.path.exists(dense) and results:
        d = json.load(open(dense))
        soak = results[-1]
        text += [f"The live panels at the Autoware rate (`ddtools.bench_e2e dense`): the soak's points of host A "
                 f"that grow with the sample rate (per-sample latencies, sizes, losses, repairs; the spans' "
                 f"`payload_size` and `sn`) written {d['copies']} times into side buckets (each copy k ns "
                 f"later), the rest once: {d['soak_samples_per_s']:,} samples/s × {d['copies']} = "
                 f"**{d['dense_samples_per_s']:,} samples/s** ({d['dense_samples']:,} samples; the Autoware workload: "
                 f"{AUTOWARE_SAMPLES_PER_S:,}/s per host). Each panel over the soak's last 5 minutes, all topics:",
                 "", "| panel | soak | soak at the Autoware rate |", "|---|---|---|"]
        for p in d["panels"]:
            mine = next((x for x in soak.get("panels", []) if (x["dashboard"], x["panel"]) == (p["dashboard"], p["panel"])), None)
            cell = lambda x: "—" if x is None else "error" if x.get("error") else f"{x['seconds']} s ({x['rows']} rows)"
            text.append(f"| {p['dashboard'].replace('.json', '')} / {p['panel']} ({p['ref']}) | {cell(mine)} | {cell(p)} |")
        text.append("")
    with open(a.report, "w") as fh:
        fh.write("\n".join(text))
    print("\n".join(text))
    return 0


def main():
    p = argparse.ArgumentParser(prog="python3 -m ddtools.bench_e2e", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rate")
    for k in ("stack-env", "dir", "name", "host-a", "host-b", "ddshark", "equality", "adhoc"):
        r.add_argument("--" + k, required=True)
    r.add_argument("--rate", type=float, required=True)
    r.add_argument("--loops", type=int, required=True)
    r.add_argument("--t-start", type=int, required=True)
    r.add_argument("--t-end", type=int, required=True)
    h = sub.add_parser("held")
    h.add_argument("--dir", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--stack-env", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--pids", required=True)
    d = sub.add_parser("dense")
    d.add_argument("--stack-env", required=True)
    d.add_argument("--dir", required=True)
    d.add_argument("--host-a", required=True)
    d.add_argument("--host-b", required=True)
    d.add_argument("--copies", type=int, default=0, help="default: to the Autoware workload's samples/s")
    g = sub.add_parser("ingest")
    g.add_argument("--stack-env", required=True)
    g.add_argument("--host-prefix", required=True)
    g.add_argument("--speed", required=True)
    g.add_argument("--t-start", type=int, required=True)
    g.add_argument("--t-end", type=int, required=True)
    g.add_argument("--cpu-start", required=True)
    g.add_argument("--cpu-replay-end", required=True)
    g.add_argument("--ddshark-logs", nargs=2, required=True)
    g.add_argument("--final-json", nargs=2, required=True)
    c = sub.add_parser("cpu")
    c.add_argument("--stack-env", required=True)
    c.add_argument("--out", required=True)
    rep = sub.add_parser("report")
    rep.add_argument("--out", required=True)
    rep.add_argument("--report", required=True)
    rep.add_argument("--others", default="")
    a = p.parse_args()
    return {"rate": cmd_rate, "held": cmd_held, "sample": cmd_sample, "cpu": cmd_cpu,
            "dense": cmd_dense, "ingest": cmd_ingest, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
