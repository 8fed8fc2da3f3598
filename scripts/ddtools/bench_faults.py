#!/usr/bin/env python3
"""Measurements and report of scripts/bench-faults.sh (standard library only).

  python3 -m ddtools.bench_faults scrape --stack-env F --out CSV --pid P
      every second while pid P runs: the collector's counters (a line per scrape; a kill
      -9 of the collector resets them, so the last line before it is what it had counted)
  python3 -m ddtools.bench_faults phase --stack-env F --dir D --component C --host-a A --host-b B
                        --ddshark BIN --speed S --kill-at S --outage S --otlp-queue N
      after one replay with C killed and started again: waits until InfluxDB holds the
      spans ddshark sent (or nothing more arrives) and the join is done, then counts at
      every component and compares the latencies with `ddshark latency` into D/result.json
  python3 -m ddtools.bench_faults report --out DIR --report FILE   the Markdown table of all phases
"""
import argparse
import csv
import json
import os
import re
import sys
import time
import urllib.request

from . import joincheck, say_as
from .bench_e2e import bench_influx, collector_counters, ddshark_summary
from .flux import bind_flux
from .paths import FLUX_DIR
from .stack import read_env


def cached_latency_rows(binary, a, b, level):
    """`ddshark latency` of the two captures, once per level for all phases (the same files)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a))), f"latency_{level}.json")
    if os.path.exists(path):
        return json.load(open(path))
    rows = joincheck.latency_rows(binary, a, b, level)
    json.dump(rows, open(path, "w"))
    return rows


COMPONENTS = {"otelcol": "collector", "join": "the latency join (writes InfluxDB)",
              "influxd": "InfluxDB"}


log = say_as("bench-faults")


def cmd_scrape(a):
    env = read_env(a.stack_env)
    with open(a.out, "w") as fh:
        w = csv.writer(fh)
        w.writerow(["t_s", "accepted", "refused", "sent", "failed", "enqueue_failed", "queue_size"])
        while os.path.exists(f"/proc/{a.pid}"):
            try:
                c = collector_counters(env["DDSHARK_OTELCOL_METRICS_URL"])
                c.update(extra_counters(env["DDSHARK_OTELCOL_METRICS_URL"]))
                w.writerow([int(time.time()), c["accepted"], c["refused"], c["sent"], c["failed"],
                            c["enqueue_failed"], c["queue_size"]])
                fh.flush()
            except OSError:
                pass  # (down: the kill)
            time.sleep(1)
    return 0


def extra_counters(url):
    """The collector's enqueue failures and queue size (traces, towards the join)."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out = {"enqueue_failed": 0, "queue_size": 0}
    for line in text.splitlines():
        m = re.match(r'(otelcol_\w+)\{([^}]*)\} ([0-9.e+]+)', line)
        if not m or 'exporter="otlp_grpc/join"' not in m.group(2):
            continue
        if m.group(1) == "otelcol_exporter_enqueue_failed_spans_total":
            out["enqueue_failed"] += int(float(m.group(3)))
        elif m.group(1) == "otelcol_exporter_queue_size" and "traces" in m.group(2):
            out["queue_size"] += int(float(m.group(3)))
    return out


def collector_lifetimes(path):
    """The collector's counters summed over its lives (a reset = a restart): per life its
    last scrape."""
    rows = list(csv.DictReader(open(path))) if os.path.exists(path) else []
    total, last = {}, None
    for r in rows:
        r = {k: int(v) for k, v in r.items()}
        if last is not None and r["accepted"] < last["accepted"]:
            for k in ("accepted", "refused", "sent", "failed", "enqueue_failed"):
                total[k] = total.get(k, 0) + last[k]
        last = r
    if last:
        for k in ("accepted", "refused", "sent", "failed", "enqueue_failed"):
            total[k] = total.get(k, 0) + last[k]
    total["lives"] = 1 + sum(1 for x, y in zip(rows, rows[1:]) if int(y["accepted"]) < int(x["accepted"]))
    return total


def cmd_phase(a):
    env = read_env(a.stack_env)
    influx = bench_influx(env)
    hosts = (a.host_a, a.host_b)
    res = {"component": a.component, "speed": a.speed, "kill_at_s": a.kill_at, "outage_s": a.outage,
           "otlp_queue": a.otlp_queue}
    res["ddshark"] = {s: ddshark_summary(os.path.join(a.dir, f"ddshark_{s}.err"),
                                         os.path.join(a.dir, f"ddshark_{s}.json")) for s in "ab"}
    for s in "ab":
        try:
            res["ddshark"][s]["max_rss_mib"] = round(int(open(os.path.join(a.dir, f"ddshark_{s}.rss")).read()) / 1024)
        except (OSError, ValueError):
            pass
    want = {h: res["ddshark"][s].get("sent", -1) for s, h in zip("ab", hosts)}
    # Until InfluxDB holds every span sent, or nothing more arrived for a minute.
    t0, last, stored = time.time(), None, {}
    while time.time() - t0 < 900:
        stored = {h: influx.span_count(h) for h in hosts}
        if all(stored[h] >= want[h] for h in hosts):
            break
        if stored != last:
            last, t_change = stored, time.time()
        elif time.time() - t_change > 60:
            break
        time.sleep(3)
    res["stored"] = stored
    res["ingest_wait_s"] = round(time.time() - t0, 1)
    log(f"{a.component}: sent {want}, stored {stored} (waited {res['ingest_wait_s']} s)")
    res["join"], res["join_done"], res["join_wait_s"] = joincheck.await_join(influx, timeout=600, poll=2)
    log(f"{a.component}: latency join {'done' if res['join_done'] else 'NOT done'}: {res['join']}")
    time.sleep(3)
    # (a last scrape: the collector's queue drained after the replay's end)
    try:
        c = collector_counters(env["DDSHARK_OTELCOL_METRICS_URL"])
        c.update(extra_counters(env["DDSHARK_OTELCOL_METRICS_URL"]))
        with open(os.path.join(a.dir, "collector.csv"), "a") as fh:
            csv.writer(fh).writerow([int(time.time()), c["accepted"], c["refused"], c["sent"], c["failed"],
                                     c["enqueue_failed"], c["queue_size"]])
    except OSError as e:
        log(f"collector: {e}")
    res["collector"] = collector_lifetimes(os.path.join(a.dir, "collector.csv"))
    res["latency"] = compare_latencies(influx, a.ddshark, a.dir, hosts)
    res["transit"] = transit_loss(influx, hosts)
    log(f"{a.component}: transit check {res['transit']}")
    json.dump(res, open(os.path.join(a.dir, "result.json"), "w"), indent=1)
    return 0


def transit_loss(influx, hosts):
    """flux-queries/transit_loss.flux over everything: per host (one ddshark run each) the
    spans missing in the raw bucket, ddshark's failed ones and the rest, lost in transit."""
    text = open(os.path.join(FLUX_DIR, "transit_loss.flux")).read()
    q = bind_flux(text, 0, 4_000_000_000_000_000_000, "1s",
                  {"bucket": influx.bucket, "long_bucket": influx.long_bucket})
    out = {}
    for r in influx.query(q):
        if r["host"] in hosts:
            row = out.setdefault(r["host"], {"runs": 0, "stored": 0, "missing": 0, "failed": 0, "lost": 0})
            row["runs"] += 1
            if r["missing"] == "—":
                row["unchecked"] = row.get("unchecked", 0) + 1
                continue
            for k, col in (("stored", "stored"), ("missing", "missing"), ("failed", "failed at ddshark"),
                           ("lost", "lost in transit")):
                row[k] += int(r[col])
    return out


def compare_latencies(influx, binary, d, hosts):
    """The latencies the join materialised against `ddshark latency` on the two captures
    (ddtools.joincheck's comparison), per level and direction; the join is done when it runs."""
    out = {}
    a, b = os.path.join(d, "a.pcap"), os.path.join(d, "b.pcap")
    for level, query_files in joincheck.LATENCY_QUERIES.items():
        f = query_files[0]
        rows = cached_latency_rows(binary, a, b, level)
        for direction, snd, rcv in joincheck.directed(hosts):
            r = joincheck.compare_latencies(influx, rows, level, f, direction, snd, rcv,
                                            0, 4_000_000_000_000_000_000)
            out[f"{f.removesuffix('.flux')} {direction}"] = r
            log(f"{f} {direction}: ddshark {r['ddshark']}, materialised {r['flux']} "
                f"({'equal' if r['equal'] else 'DIFFERENT'})")
    return out


def fmt(n):
    return f"{n:,}" if isinstance(n, int) else str(n)


def transit_cell(transit):
    """The transit check's spans lost after ddshark (and those ddshark counted failed)."""
    if transit is None:
        return "—"
    lost = sum(t["lost"] for t in transit.values())
    failed = sum(t["failed"] for t in transit.values())
    return fmt(lost) + (f" (+ {fmt(failed)} failed at ddshark)" if failed else "")


def cmd_report(a):
    lines = []
    results = []
    for c in COMPONENTS:
        p = os.path.join(a.out, c, "result.json")
        if os.path.exists(p):
            results.append(json.load(open(p)))
    lines.append("| component killed (kill -9, outage) | spans sent by ddshark (A + B) | dropped / failed at ddshark | "
                 "accepted / sent / failed at the collector | join: points written to InfluxDB, rejected | "
                 "stored in InfluxDB | lost (sent − stored) | counted by the transit check | join: spans read | "
                 "latencies materialised / `ddshark latency` (A→B) | submessage latencies |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        d = r["ddshark"]
        sent = sum(d[s].get("sent", 0) for s in "ab")
        drop = sum(d[s].get("dropped", 0) for s in "ab")
        fail = sum(d[s].get("failed", 0) + d[s].get("abandoned", 0) for s in "ab")
        stored = sum(r["stored"].values())
        col = r["collector"]
        jw = r["join"]
        lat = r["latency"].get("dds_latency_materialised A->B", {})
        sub = r["latency"].get("dds_submessage_latency_materialised A->B", {})
        lines.append(
            f"| {COMPONENTS.get(r['component'], r['component'])} ({r['outage_s']} s) | {fmt(sent)} | {fmt(drop)} / {fmt(fail)} | "
            f"{fmt(col.get('accepted'))} / {fmt(col.get('sent'))} / {fmt(col.get('failed'))}"
            f"{' (+' + fmt(col['enqueue_failed']) + ' not queued)' if col.get('enqueue_failed') else ''} | "
            f"{fmt(jw.get('influx_points_written'))}, {fmt(jw.get('influx_points_rejected'))} | {fmt(stored)} | {fmt(sent - stored)} | "
            f"{transit_cell(r.get('transit'))} | "
            f"{fmt(r['join'].get('spans'))} | {fmt(lat.get('flux'))} / {fmt(lat.get('ddshark'))}"
            f"{'' if lat.get('equal') else ' (missing ' + fmt(lat.get('missing')) + ', differ ' + fmt(lat.get('differ')) + ')'} | "
            f"{fmt(sub.get('flux'))} / {fmt(sub.get('ddshark'))} |")
    text = "\n".join(lines) + "\n"
    open(a.report, "w").write(text)
    print(text)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scrape")
    s.add_argument("--stack-env", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--pid", type=int, required=True)
    s = sub.add_parser("phase")
    for k in ("--stack-env", "--dir", "--component", "--host-a", "--host-b", "--ddshark"):
        s.add_argument(k, required=True)
    for k in ("--speed", "--kill-at", "--outage", "--otlp-queue"):
        s.add_argument(k, required=True)
    s = sub.add_parser("report")
    s.add_argument("--out", required=True)
    s.add_argument("--report", required=True)
    a = p.parse_args()
    return {"scrape": cmd_scrape, "phase": cmd_phase, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
