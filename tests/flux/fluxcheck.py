"""End-to-end check of the Flux queries and Grafana dashboards on the real stack.

1. Starts the docker-free stack (scripts/stack/start.sh --auto-ports --with-prometheus,
   private run dir) unless --stack-env points at a running one. A missing stack FAILS.
2. Replays both captures of each two-host fixture through `ddshark -r … --otlp` into the
   real OpenTelemetry Collector → Telegraf → InfluxDB (host.name = <run>-<scenario>-a /
   -b), and waits until InfluxDB holds every span, exactly once.
3. Schema: the raw bucket's series count is bounded (hosts × writers × kinds × slots,
   far below the span count), only the bounded tags exist, and the per-span values are
   typed fields (sn & co. long, ids strings), no JSON `attributes` field.
4. Materialisation: the latency join (`ddshark join`, run by Telegraf) joins
   the spans as they stream in (here every second, 15 pushes after a sample's first
   span); its points (dds_latency_materialised.flux,
   dds_submessage_latency_materialised.flux, dds_lost, dds_samples, dds_repairs) must be
   exactly the per-sample / per-DATA_FRAG latencies, losses, sizes and repairs of
   `ddshark latency` (both directions), to the nanosecond, each sample once.
5. The ad-hoc joins flux-queries/dds_latency.flux and dds_submessage_latency.flux, with
   Grafana's variables bound (`option v = {…}` plus ${bucket}/${sender}/${receiver}/
   ${topic}), must give the same.
6. Every other flux-queries/*.flux and every panel and template-variable query of
   grafana/dashboards/*.json runs (Flux on InfluxDB, PromQL on Prometheus) and returns
   data; dashboards and provisioning files are checked for structure, the dashboards
   must be what grafana/build_dashboards.py generates, and Grafana's dashboard linter
   (built by scripts/stack/build.sh) must pass them in --strict mode.
7. The latency panels with the dashboard variable clock = corrected, on k_fastdds with its B
   side shifted (+12.345678 ms, 50 ppm): the raw ones minus the join's dds_clock_offset
   estimate, and `ddshark latency --offset auto` within the estimate's half-width; every row
   labelled 'corrected by the estimate …: every latency ± …' with uncertainty_ns =
   `ddshark latency --offset auto`'s latency_uncertainty_ns of its samples. On
   a_small_reliable (one clock: the estimate's bound holds 0) they are the raw ones and
   `--offset auto`'s, to the nanosecond, labelled 'not corrected: … holds 0', no ±.

usage: tests/flux/run.sh [--stack-env FILE] [--keep] [--scenario NAME ...] [--ddshark BIN]
The private stack's run dir: DDSHARK_FLUX_RUN_DIR, else a new /tmp/ddshark-stack-*, removed
after a run that passed (kept with its logs after a failure; the stack runs on with --keep).
Exit status 0 only if everything passed.
"""
import argparse
import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.error

from ddtools import stack
from ddtools.flux import bind_flux, bind_prom, parse_time_ns, rfc3339
from ddtools.influx import Influx
from ddtools.joincheck import (FAILURES, PEAKS_WINDOW, PEAKS_WINDOW_NS, check, check_latency, check_outcomes,
                               compare, directed, fail, flux_rows, latency_rows, log, wait_for_join, window_end)
from ddtools.paths import DASH_DIR, FLUX_DIR, PCAPS, PROV_DIR, REPO_ROOT, SPAN_SCHEMA_JSON, STACK_DIR

DEFAULT_SCENARIOS = ["a_small_reliable", "b_large_frag", "d_rustdds_interop", "e_mixed_robustness",
                     "f_ddsperf_cyclone0102", "g_dustdds_interop", "h_vlan_pcp", "i_late_start"]
# (the stack's ports are free ones: the check can run next to a developer's stack)
STACK_ENV = {
    # The latency join every second, 15 s after a sample's first span (the exports of a
    # fixture's two hosts follow each other within seconds).
    "DDSHARK_JOIN_PERIOD": "1s", "DDSHARK_JOIN_SETTLE_PUSHES": "15",
    # The fixtures are old captures: InfluxDB refuses points older than a bucket's retention.
    "DDSHARK_INFLUX_RAW_RETENTION": "0", "DDSHARK_INFLUX_LONG_RETENTION": "0",
}
# Measurement `spans` as the schema defines it (crates/span-schema, which generates this file):
# its bounded tags, and its typed fields with the ones every span without --otlp-lean carries.
with open(SPAN_SCHEMA_JSON) as _fh:
    SPAN_SCHEMA = json.load(_fh)
SPAN_TAGS = set(SPAN_SCHEMA["tags"])
SPAN_FIELDS = SPAN_SCHEMA["fields"]
SPAN_REQUIRED_FIELDS = set(SPAN_FIELDS) - set(SPAN_SCHEMA["optional_fields"])

# ------------------------------------------------------------------ ddshark
def ddshark_bin(args):
    if args.ddshark:
        return args.ddshark
    log("building ddshark")
    subprocess.run(["cargo", "build", "-q", "-p", "ddshark"], cwd=REPO_ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO_ROOT, "target"))
    return os.path.join(target, "debug", "ddshark")


# Options every replay gets besides its own (--ddshark-arg, e.g. --otlp-lean).
DDSHARK_EXTRA_ARGS = []


def export(binary, pcap, host, endpoint):
    p = subprocess.run([binary, "-r", pcap, "--no-tui", "--otlp", endpoint, "--host-name", host,
                        "--capture-interface", "eth0", "--interval", "1h", *DDSHARK_EXTRA_ARGS],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"export of {pcap} failed: {p.stderr[-2000:]}")
    m = re.search(r"(\d+) spans: (\d+) sent", p.stderr)
    if not m or m.group(1) != m.group(2):
        raise RuntimeError(f"export of {pcap} incomplete: {p.stderr[-1000:]}")
    return int(m.group(2))


# ------------------------------------------------------------------ checks
# Queries about the stack itself, or over ddshark's OTLP metrics (the SDK stamps them with
# the time of export): their data is at "now", not in the replayed captures' time range.
LIVE_QUERIES = {"writer_health.flux", "series_cardinality.flux", "exporter_health.flux",
                "topic_counters.flux", "join_health.flux"}


# The latency panels with ${clock} = corrected: a fixture's B side shifted as if B's clock
# read SHIFT_NS ahead of A's at the first frame and ran DRIFT_PPB fast (both captures read
# one clock), as the Rust stack test stack_clock_offset_equals_ddshark_latency shifts it.
SHIFTED_FIXTURE, SHIFT_NS, DRIFT_PPB = "k_fastdds", 12_345_678, 50_000
# A pair captured on one clock whose estimate (970 µs ± 1.045 ms) holds 0: the latency
# panels with ${clock} = corrected keep its raw latencies, as `ddshark latency --offset auto`.
KEPT_RAW_FIXTURE = "a_small_reliable"


def shifted_copy(src, dst, shift_ns, drift_ppb=0):
    """A copy of the little-endian pcap `src` with every timestamp t moved by shift_ns +
    (t - the first frame's) * drift_ppb / 1e9 (written with nanosecond timestamps); returns
    the first frame's time."""
    with open(src, "rb") as fh:
        data = fh.read()
    magic = int.from_bytes(data[:4], "little")
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise ValueError(f"{src}: not a little-endian pcap (magic {magic:#x})")
    scale = 1000 if magic == 0xA1B2C3D4 else 1
    out = [(0xA1B23C4D).to_bytes(4, "little") + data[4:24]]
    off, first = 24, None
    while off + 16 <= len(data):
        sec, frac, incl, orig = (int.from_bytes(data[off + i:off + i + 4], "little") for i in range(0, 16, 4))
        t = sec * 1_000_000_000 + frac * scale
        first = t if first is None else first
        t += shift_ns + (t - first) * drift_ppb // 1_000_000_000
        out.append(b"".join(x.to_bytes(4, "little") for x in (t // 1_000_000_000, t % 1_000_000_000, incl, orig)))
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    with open(dst, "wb") as fh:
        fh.write(b"".join(out))
    return first


def clock_estimate(influx, snd, rcv, stop):
    """The join's last dds_clock_offset of the pair up to stop: (t0, offset_ns, drift_ppb,
    half_width_ns) with rcv's clock ahead of snd's, or None."""
    rows = influx.query(
        f'from(bucket: "{influx.long_bucket}") |> range(start: 0, stop: {rfc3339(stop)}) '
        f'|> filter(fn: (r) => r._measurement == "dds_clock_offset") '
        f'|> filter(fn: (r) => r.host_a == "{snd}" and r.host_b == "{rcv}" or r.host_a == "{rcv}" and r.host_b == "{snd}") '
        '|> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value") |> group() '
        '|> sort(columns: ["_time"]) |> last(column: "offset_ns")')
    if not rows:
        return None
    r = rows[-1]
    sign = 1 if r["host_a"] == snd else -1
    return (parse_time_ns(r["_time"]), sign * int(r["offset_ns"]), sign * int(r["drift_ppb"]),
            int(r["half_width_ns"]))


def check_clock_correction(influx, binary, hosts, a_pcap, b_pcap, start, stop, true_offset):
    """On the shifted pair, the latency panels with ${clock} = corrected show `ddshark
    latency --offset auto`'s latencies within the estimate's half-width, and exactly the raw
    ones minus the join's last estimate (drift followed to each interval's end)."""
    scen = f"{SHIFTED_FIXTURE} (B +{SHIFT_NS} ns, {DRIFT_PPB} ppb)"
    compared = 0
    for level, query, summary in (("sample", "dds_latency_peaks.flux", "dds_latency_summary.flux"),
                                  ("submessage", "dds_submessage_latency_peaks.flux", None)):
        def run(*extra):
            p = subprocess.run([binary, "latency", a_pcap, b_pcap, "--level", level, "--format", "tsv",
                                "-q", *extra], capture_output=True, text=True, check=True)
            return list(csv.DictReader(io.StringIO(p.stdout), delimiter="\t"))
        # (a sample's rows with and without --offset auto: the same frames; --offset auto
        # moves t_send onto A's clock, the join's points keep the sender's)
        key = lambda r: (r["direction"], r["writer_guid"], r["sn"], r["frag_start"], r["frame_send"], r["frame_recv"])
        auto_rows = [r for r in run("--offset", "auto") if r["status"] == "ok"]
        auto = {key(r): int(r["latency_ns"]) for r in auto_rows}
        # (the ± `ddshark latency --offset auto` gives each corrected latency)
        auto_unc = {key(r): r["latency_uncertainty_ns"] for r in auto_rows}
        rows = [r for r in run() if r["status"] == "ok" and (level == "sample" or r["frag_start"])]
        for direction, snd, rcv, sign in (("A->B", hosts[0], hosts[1], 1), ("B->A", hosts[1], hosts[0], -1)):
            est = clock_estimate(influx, snd, rcv, stop)
            if not check(est, f"{scen} {direction}: no dds_clock_offset for {snd}, {rcv}"):
                return
            t0, offset, drift, half = est
            shift = sign * true_offset(t0)
            check(abs(offset - shift) <= half, f"{scen} {direction}: estimate {offset} ± {half} misses {shift}")
            v = {"bucket": influx.bucket, "long_bucket": influx.long_bucket, "sender": snd,
                 "receiver": rcv, "topic": ".*"}
            rows_of = {c: flux_rows(influx, query, start, stop, PEAKS_WINDOW, dict(v, clock=c))
                       for c in ("raw", "corrected")}
            peaks = {c: {(r["writer_id"], parse_time_ns(r["_time"])): float(r["_value"]) for r in rs}
                     for c, rs in rows_of.items()}
            check_correction_columns(scen, f"{query} {direction}", rows_of, corrected=(offset, half, drift))
            ahead = lambda t: offset + int(float(t - t0) * float(drift) / 1e9)
            compare(scen, f"{query} {direction} corrected = raw - the join's estimate ({offset} ns)",
                    {k: x - ahead(k[1]) for k, x in peaks["raw"].items()}, peaks["corrected"])
            want, want_unc = {}, {}
            for r in rows:
                if r["direction"] == direction and key(r) in auto:
                    k = (r["writer_guid"], window_end(int(r["t_send_ns"]), PEAKS_WINDOW_NS, stop))
                    want[k] = max(want.get(k, auto[key(r)]), auto[key(r)])
                    want_unc.setdefault(k, set()).add(auto_unc[key(r)])
            # The ± beside each corrected peak: `ddshark latency --offset auto`'s
            # latency_uncertainty_ns of every sample in the interval, to the nanosecond.
            got_unc = {(r["writer_id"], parse_time_ns(r["_time"])): {r.get("uncertainty_ns")}
                       for r in rows_of["corrected"]}
            compare(scen, f"{query} {direction} corrected: uncertainty_ns = ddshark latency --offset auto's "
                          f"latency_uncertainty_ns", {k: want_unc[k] for k in want_unc if k in got_unc},
                    {k: got_unc[k] for k in got_unc if k in want_unc})
            # (within the half-width, and what drift moves the offset within one interval)
            slack = half + abs(drift) * PEAKS_WINDOW_NS // 1_000_000_000 + 1
            got = peaks["corrected"]
            worst = max((abs(got[k] - want[k]) for k in set(want) & set(got)), default=None)
            compared += len(got)
            if check(set(want) == set(got) and (worst is None or worst <= slack),
                     f"{scen} {query} {direction} corrected vs ddshark latency --offset auto: "
                     f"{len(want)} / {len(got)} intervals, missing {sorted(set(want) - set(got))[:3]} "
                     f"extra {sorted(set(got) - set(want))[:3]}, worst {worst} ns > {slack} ns"):
                log(f"{scen} {query} {direction}: {len(got)} corrected peaks = ddshark latency "
                    f"--offset auto within {worst} ns (half-width {half} ns; estimate {offset} ns, "
                    f"drift {drift} ppb; true {shift} ns)")
            if summary:
                s_rows = {c: flux_rows(influx, summary, start, stop, "10s", dict(v, clock=c))
                          for c in ("raw", "corrected")}
                check_correction_columns(scen, f"{summary} {direction}", s_rows, corrected=(offset, half, drift))
                s = {c: {(r["series"], r["_time"]): float(r["_value"]) for r in rs}
                     for c, rs in s_rows.items()}
                want = {k: x - ahead(parse_time_ns(k[1])) for k, x in s["raw"].items()}
                close = {k for k, x in s["corrected"].items() if k in want and abs(x - want[k]) <= 1e-6 * max(1.0, abs(x))}
                compare(scen, f"{summary} {direction} corrected = raw - the join's estimate",
                        want, {k: want[k] if k in close else x for k, x in s["corrected"].items()})
    check(compared, f"{scen}: no corrected latencies to compare")


def human_ns(ns):
    """A duration as `ddshark latency` prints it (and the latency panels' clock_correction)."""
    a, sign = abs(ns), "-" if ns < 0 else ""
    if a < 1_000:
        return f"{sign}{a} ns"
    if a < 1_000_000:
        q = (a + 50) // 100
        return f"{sign}{q // 10}.{q % 10} µs"
    if a < 1_000_000_000:
        q = (a + 500) // 1000
        return f"{sign}{q // 1000}.{q % 1000:03} ms"
    q = (a + 500_000) // 1_000_000
    return f"{sign}{q // 1000}.{q % 1000:03} s"


def check_correction_columns(scen, what, rows_of, corrected=None, kept=None):
    """The latency panels' rows with ${clock} = raw carry no clock_correction nor
    uncertainty_ns; with corrected, every row says what was done: corrected = (offset, half,
    drift) of the join's estimate: 'corrected by the estimate …: every latency ± half' and
    uncertainty_ns = half; kept = (offset, half): 'not corrected: … holds 0' and no
    uncertainty_ns."""
    raw = [r for r in rows_of["raw"] if "clock_correction" in r or "uncertainty_ns" in r]
    check(not raw, f"{scen} {what} raw: {len(raw)} rows with clock_correction/uncertainty_ns: {raw[:1]}")
    if corrected:
        offset, half, _drift = corrected
        want = (f"corrected by the estimate {human_ns(offset)}", f": every latency ± {human_ns(half)}")
        bad = [r for r in rows_of["corrected"]
               if not (r.get("clock_correction", "").startswith(want[0]) and r["clock_correction"].endswith(want[1])
                       and r.get("uncertainty_ns") == str(half))]
    else:
        offset, half = kept
        want = (f"not corrected: the estimate {human_ns(offset)} ± {human_ns(half)} holds 0", "")
        bad = [r for r in rows_of["corrected"]
               if not r.get("clock_correction", "").startswith(want[0]) or r.get("uncertainty_ns")]
    # (as many rows as raw: an empty panel only where raw is empty too)
    if check(len(rows_of["corrected"]) == len(rows_of["raw"]) and not bad,
             f"{scen} {what} corrected: {len(bad)} of {len(rows_of['corrected'])} rows (raw: "
             f"{len(rows_of['raw'])}) do not say {want!r}{'' if kept else f' with uncertainty_ns {half}'}: "
             f"{bad[:1]}") and rows_of["corrected"]:
        log(f"{scen} {what} corrected: every row says {rows_of['corrected'][0]['clock_correction']!r}"
            + (f", uncertainty_ns {half}" if corrected else ", no uncertainty_ns"))


def check_kept_raw(influx, binary, scen, hosts, start, stop):
    """On a pair captured on one clock (the join's estimate holds 0, as `ddshark latency`'s
    does), the latency panels with ${clock} = corrected are the raw ones, to the nanosecond,
    and say that they were not corrected and why (`ddshark latency --offset auto` keeps the
    raw latencies there: docs/latency.md, "Correcting")."""
    a_pcap, b_pcap = (os.path.join(PCAPS, scen, f) for f in ("a.pcap", "b.pcap"))
    p = subprocess.run([binary, "latency", a_pcap, b_pcap, "--level", "sample", "--format", "tsv",
                        "-q", "--offset", "auto"], capture_output=True, text=True, check=True)
    auto = [r for r in csv.DictReader(io.StringIO(p.stdout), delimiter="\t") if r["status"] == "ok"]
    check(auto and not any(r["latency_uncertainty_ns"] for r in auto),
          f"{scen}: ddshark latency --offset auto corrected a one-clock pair (latency_uncertainty_ns given)")
    compared = 0
    for direction, snd, rcv in directed(hosts):
        est = clock_estimate(influx, snd, rcv, stop)
        if not check(est, f"{scen} {direction}: no dds_clock_offset for {snd}, {rcv}"):
            return
        _t0, offset, _drift, half = est
        check(abs(offset) <= half, f"{scen} {direction}: the join's estimate {offset} ± {half} excludes 0")
        v = {"bucket": influx.bucket, "long_bucket": influx.long_bucket, "sender": snd,
             "receiver": rcv, "topic": ".*"}
        for query, window, keyf in (
                ("dds_latency_peaks.flux", PEAKS_WINDOW, lambda r: (r["writer_id"], r["_time"])),
                ("dds_submessage_latency_peaks.flux", PEAKS_WINDOW, lambda r: (r["writer_id"], r["_time"])),
                ("dds_latency_summary.flux", "10s", lambda r: (r["series"], r["_time"]))):
            rows_of = {c: flux_rows(influx, query, start, stop, window, dict(v, clock=c))
                       for c in ("raw", "corrected")}
            if "submessage" in query and not rows_of["raw"]:
                continue  # (no DATA_FRAG in the pair)
            check_correction_columns(scen, f"{query} {direction}", rows_of, kept=(offset, half))
            got = {c: {keyf(r): r["_value"] for r in rs} for c, rs in rows_of.items()}
            compare(scen, f"{query} {direction} corrected = raw (the estimate {offset} ± {half} ns holds 0)",
                    got["raw"], got["corrected"])
            compared += len(got["corrected"])
            if query == "dds_latency_peaks.flux":
                # = `ddshark latency --offset auto`'s latencies, the largest per writer and interval
                want = {}
                for r in auto:
                    if r["direction"] == direction:
                        k = (r["writer_guid"], window_end(int(r["t_send_ns"]), PEAKS_WINDOW_NS, stop))
                        want[k] = max(want.get(k, int(r["latency_ns"])), int(r["latency_ns"]))
                compare(scen, f"{query} {direction} corrected = ddshark latency --offset auto (kept raw)",
                        want, {(r["writer_id"], parse_time_ns(r["_time"])): int(float(r["_value"]))
                               for r in rows_of["corrected"]})
    check(compared, f"{scen}: no latencies to compare with the clock kept raw")


def check_other_queries(influx, hosts, start, stop):
    gen = subprocess.run([sys.executable, os.path.join(FLUX_DIR, "build_adhoc.py"), "--check"],
                         capture_output=True, text=True)
    check(gen.returncode == 0, f"ad-hoc queries not generated from the task: {gen.stderr}")
    for f in sorted(os.listdir(FLUX_DIR)):
        if not f.endswith(".flux"):
            continue
        stop_f = time.time_ns() if f in LIVE_QUERIES else stop
        q = bind_flux(open(os.path.join(FLUX_DIR, f)).read(), start, stop_f, "1s",
                      {"bucket": influx.bucket, "long_bucket": influx.long_bucket,
                       "sender": hosts[0], "receiver": hosts[1], "topic": ".*", "clock": "raw"})
        try:
            n = len(influx.query(q))
        except RuntimeError as e:
            fail(f"{f}: {e}")
            continue
        check(n > 0, f"{f}: no data")
        log(f"{f}: {n} rows")


def check_topic_filter(influx, hosts, start, stop):
    """A concrete topic (regex-escaped as Grafana's ${topic:regex} does) filters."""
    for f in ("dds_latency.flux", "dds_latency_materialised.flux"):
        q = bind_flux(open(os.path.join(FLUX_DIR, f)).read(), start, stop, "1s",
                      {"bucket": influx.bucket, "long_bucket": influx.long_bucket,
                       "sender": hosts[0], "receiver": hosts[1],
                       "topic": re.escape("rt/chatter").replace("/", "\\/")})
        rows = influx.query(q)
        topics = {r["topic_name"] for r in rows}
        check(rows and topics == {"rt/chatter"}, f"{f} topic filter: got {topics}")


def check_transit(influx, spans, start, stop):
    """transit_loss.flux: one run per exported host, every span stored, no number missing."""
    q = bind_flux(open(os.path.join(FLUX_DIR, "transit_loss.flux")).read(), start, stop, "1s",
                  {"bucket": influx.bucket, "long_bucket": influx.long_bucket})
    got = {}
    for r in influx.query(q):
        if r["host"] in spans:
            got.setdefault(r["host"], []).append((int(r["stored"]), int(r["missing"]),
                                                  int(r["lost in transit"])))
    want = {h: [(n, 0, 0)] for h, n in spans.items()}
    check(got == want, f"transit_loss.flux: {got}, want (stored, missing, lost) {want}")


def check_schema(influx, spans, start, stop):
    """Bounded series, bounded tags, typed fields (deploy/telegraf/telegraf.conf)."""
    rng = f"range(start: {rfc3339(start)}, stop: {rfc3339(stop)})"
    b = influx.bucket
    def of_spans(package, call, args=""):
        """A function of InfluxDB's `package` over measurement spans in the checked range."""
        return influx.query(f'import "{package}"\n{call}(bucket: "{b}", {args}start: {rfc3339(start)}, '
                            f'stop: {rfc3339(stop)}, predicate: (r) => r._measurement == "spans")')
    card = of_spans("influxdata/influxdb", "influxdb.cardinality")
    series = int(card[0]["_value"]) if card else 0
    tag_sets = of_spans("influxdata/influxdb/schema", "schema.tagKeys")
    tags = {r["_value"] for r in tag_sets} - {"_start", "_stop", "_measurement", "_field"}
    check(tags <= SPAN_TAGS, f"schema: unexpected tags on spans: {sorted(tags - SPAN_TAGS)}")
    writers = influx.query(f'from(bucket: "{b}") |> {rng} |> filter(fn: (r) => r._measurement == '
                           f'"spans" and r._field == "sn") |> keep(columns: ["host.name", "writer_id", '
                           f'"span.name", "slot"]) |> group() |> distinct(column: "writer_id") |> count()')
    n_writers = int(writers[0]["_value"]) if writers else 0
    slots = of_spans("influxdata/influxdb/schema", "schema.tagValues", 'tag: "slot", ')
    n_slots = len(slots)
    bound = len(spans) * n_writers * 3 * max(n_slots, 1)
    total = sum(spans.values())
    check(0 < series <= bound,
          f"schema: {series} series for {total} spans ({len(spans)} hosts, {n_writers} writers, "
          f"{n_slots} slot values: bound {bound})")
    log(f"schema: {series} series for {total} spans ({len(spans)} hosts × {n_writers} writers × "
        f"3 kinds × {n_slots} slots ≥ {series})")
    fields = influx.query(f'from(bucket: "{b}") |> {rng} |> filter(fn: (r) => r._measurement == '
                          f'"spans") |> group(columns: ["_field"]) |> limit(n: 1) '
                          f'|> keep(columns: ["_field", "_value"])', types=True)
    ftype = {r["_field"]: r["_types"]["_value"] for r in fields}
    for f in sorted(SPAN_REQUIRED_FIELDS | (set(ftype) & set(SPAN_FIELDS))):
        want = SPAN_FIELDS.get(f)
        check(ftype.get(f) == want, f"schema: field {f} is {ftype.get(f)}, want {want}")
    check("attributes" not in ftype, "schema: spans still have the JSON field `attributes`")
    log(f"schema: fields {sorted(ftype.items())}")


def check_linter():
    linter = os.path.join(STACK_DIR, "bin", "dashboard-linter")
    if not check(os.access(linter, os.X_OK), f"{linter} missing: run scripts/stack/build.sh"):
        return
    for f in sorted(os.listdir(DASH_DIR)):
        if f.endswith(".json"):
            p = subprocess.run([linter, "lint", "--strict", os.path.join(DASH_DIR, f)],
                               capture_output=True, text=True)
            if check(p.returncode == 0, f"dashboard-linter {f}: {p.stdout[-2000:]}{p.stderr[-1000:]}"):
                log(f"dashboard-linter --strict {f}: clean")


def dashboard_structure(path, datasource_uids):
    d = json.load(open(path))
    # Data source variables (type "datasource") default to a provisioned data source.
    ds_vars = {f"${{{v['name']}}}": v.get("current", {}).get("value")
               for v in d["templating"]["list"] if v["type"] == "datasource"}
    for v in ds_vars.values():
        check(v in datasource_uids, f"{os.path.basename(path)}: data source variable default {v} "
                                    f"not provisioned")
    datasource_uids = set(datasource_uids) | {k for k, v in ds_vars.items() if v in datasource_uids}
    name = os.path.basename(path)
    for k in ("uid", "title", "panels", "templating", "schemaVersion", "time"):
        check(k in d, f"{name}: no {k}")
    ids = [p.get("id") for p in d["panels"]]
    check(len(ids) == len(set(ids)), f"{name}: duplicate panel ids")
    var_names = {v["name"] for v in d["templating"]["list"]}
    for p in d["panels"]:
        gp = p.get("gridPos", {})
        check(all(k in gp for k in "xywh") and gp["x"] + gp["w"] <= 24,
              f"{name} panel {p.get('title')}: bad gridPos {gp}")
        if p["type"] == "row":
            continue
        check(p.get("targets"), f"{name} panel {p['title']}: no targets")
        for t in p.get("targets", []):
            ds = t.get("datasource", p.get("datasource", {}))
            check(ds.get("uid") in datasource_uids,
                  f"{name} panel {p['title']}: datasource {ds} not provisioned")
            text = t.get("query") or t.get("expr") or ""
            check(text, f"{name} panel {p['title']}: empty query")
            for m in re.finditer(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", text):
                v = m.group(1) or m.group(2)
                check(v in var_names or v.startswith("__"),
                      f"{name} panel {p['title']}: unknown variable {v}")
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            check(v.get("datasource", {}).get("uid") in datasource_uids,
                  f"{name} variable {v['name']}: datasource not provisioned")
    return d


def check_provisioning():
    import yaml
    ds = yaml.safe_load(open(os.path.join(PROV_DIR, "datasources", "datasources.yaml")))
    uids = {}
    for d in ds.get("datasources", []):
        check(d.get("uid") and d.get("type") and d.get("url"), f"datasource {d} incomplete")
        uids[d["uid"]] = d
    check(uids.get("ddshark-influxdb", {}).get("jsonData", {}).get("version") == "Flux",
          "InfluxDB datasource is not in Flux mode")
    check("ddshark-prometheus" in uids, "no Prometheus datasource")
    prov = yaml.safe_load(open(os.path.join(PROV_DIR, "dashboards", "dashboards.yaml")))
    paths = [p.get("options", {}).get("path") for p in prov.get("providers", [])]
    check(paths and all(paths), f"dashboard provider without path: {prov}")
    compose = open(os.path.join(REPO_ROOT, "deploy", "docker-compose.yml")).read()
    for p in paths:
        check(f"../grafana/dashboards:{p}" in compose,
              f"docker-compose does not mount grafana/dashboards at {p}")
    return set(uids)


def check_dashboards(influx, prom_url, hosts, start, stop, uids):
    gen = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "grafana", "build_dashboards.py"),
                          "--check"], capture_output=True, text=True)
    check(gen.returncode == 0, f"dashboards not generated from flux-queries: {gen.stderr}")
    flux_files = {open(os.path.join(FLUX_DIR, f)).read() for f in os.listdir(FLUX_DIR)
                  if f.endswith(".flux")}
    values = {"bucket": influx.bucket, "long_bucket": influx.long_bucket, "sender": hosts[0],
              "receiver": hosts[1], "topic": ".*", "iface": ".*",
              "clock": "raw"}
    now = int(time.time())
    panels = 0
    files = sorted(f for f in os.listdir(DASH_DIR) if f.endswith(".json"))
    check(len(files) >= 3, f"dashboards: {files}")
    for f in files:
        d = dashboard_structure(os.path.join(DASH_DIR, f), uids)
        for v in d["templating"]["list"]:
            if v["type"] != "query":
                continue
            if v["datasource"]["type"] == "influxdb":
                res = influx.query(bind_flux(v["query"], start, stop, "1s", values))
                got = {r.get("_value") for r in res}
                check(got, f"{f} variable {v['name']}: no values")
                if v["name"] in ("sender", "receiver"):
                    check(set(hosts) <= got, f"{f} variable {v['name']}: {hosts} not in {got}")
            else:
                m = re.match(r"label_values\((\w+), *(\w+)\)", v["query"]["query"])
                ser = stack.prom_series(prom_url, m.group(1)) if m else []
                check(any(m.group(2) in s for s in ser), f"{f} variable {v['name']}: no values")
        for p in d["panels"]:
            for t in p.get("targets", []):
                panels += 1
                where = f"{f} / {p['title']} / {t['refId']}"
                if "query" in t:
                    check(t["query"] in flux_files, f"{where}: query is not a flux-queries file")
                    live = any(t["query"] == open(os.path.join(FLUX_DIR, q)).read() for q in LIVE_QUERIES)
                    try:
                        n = len(influx.query(bind_flux(t["query"], start, time.time_ns() if live else stop,
                                                       "1s", values)))
                    except (RuntimeError, KeyError) as e:
                        fail(f"{where}: {e}")
                        continue
                else:
                    try:
                        res = stack.prom_query_range(prom_url, bind_prom(t["expr"], values),
                                               now - 600, now)
                    except (RuntimeError, KeyError, urllib.error.URLError) as e:
                        fail(f"{where}: {e}")
                        continue
                    n = sum(len(s.get("values", [])) for s in res)
                check(n > 0, f"{where}: no data")
                log(f"panel {where}: {n} rows/points")
    log(f"{panels} panel queries checked")


def wait_for_spans(influx, expected, start, stop, timeout=120):
    q_tpl = ('from(bucket: "{b}") |> range(start: {s}, stop: {e}) '
             '|> filter(fn: (r) => r._measurement == "spans" and r._field == "end_time_unix_nano" '
             'and r["host.name"] == "{h}") |> group() |> count()')
    deadline = time.time() + timeout
    pending = dict(expected)
    while pending and time.time() < deadline:
        for h, n in list(pending.items()):
            res = influx.query(q_tpl.format(b=influx.bucket, s=rfc3339(start), e=rfc3339(stop), h=h))
            got = int(res[0]["_value"]) if res else 0
            if got == n:
                del pending[h]
            elif got > n:
                fail(f"{h}: {got} spans in InfluxDB, {n} exported")
                del pending[h]
        if pending:
            time.sleep(1)
    check(not pending, f"spans never all arrived in InfluxDB: {pending}")


def main():
    ap = argparse.ArgumentParser(prog="tests/flux/run.sh", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stack-env", help="stack.env of a running stack (default: start a private one)")
    ap.add_argument("--keep", action="store_true", help="leave the private stack running")
    ap.add_argument("--scenario", action="append", help="fixture(s) (default: all two-host ones)")
    ap.add_argument("--ddshark", help="ddshark binary (default: cargo build)")
    ap.add_argument("--ddshark-arg", action="append", default=[], metavar="ARG",
                    help="an option for every replay, e.g. --ddshark-arg=--otlp-lean (repeatable)")
    args = ap.parse_args()
    DDSHARK_EXTRA_ARGS.extend(args.ddshark_arg)
    t0 = time.time()
    with contextlib.ExitStack() as running:
        if args.stack_env:
            env = stack.read_env(args.stack_env)
        else:
            env = running.enter_context(stack.private(
                "DDSHARK_FLUX_RUN_DIR", "--with-prometheus", keep=args.keep,
                failed=lambda: bool(FAILURES), env=STACK_ENV))
        run_checks(args, env)
    log(f"done in {time.time() - t0:.0f} s: {len(FAILURES)} failure(s)")
    for f in FAILURES:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if FAILURES else 0


def run_checks(args, env):
    """Every check of the suite on the stack of env."""
    influx = Influx.from_env(env)
    binary = ddshark_bin(args)
    run_id = f"t{int(time.time())}"
    scenarios = args.scenario or [s for s in DEFAULT_SCENARIOS
                                  if os.path.exists(os.path.join(PCAPS, s, "b.pcap"))]
    check(scenarios, "no fixtures in tests/pcaps")
    spans, ranges = {}, {}
    for s in scenarios:
        hosts = (f"{run_id}-{s}-a", f"{run_id}-{s}-b")
        for pcap, h in zip(("a.pcap", "b.pcap"), hosts):
            spans[h] = export(binary, os.path.join(PCAPS, s, pcap), h, env["DDSHARK_OTLP_ENDPOINT"])
        rows = latency_rows(binary, *(os.path.join(PCAPS, s, f) for f in ("a.pcap", "b.pcap")), "sample")
        ts = [int(r["t_send_ns"]) for r in rows]
        # The time range Grafana would show: the capture, with a margin.
        ranges[s] = (hosts, min(ts) - 60_000_000_000, max(ts) + 60_000_000_000, min(ts), max(ts))
        log(f"exported {s}: {spans[hosts[0]]} + {spans[hosts[1]]} spans")
    lo = min(r[1] for r in ranges.values())
    hi = max(r[2] for r in ranges.values())
    wait_for_spans(influx, spans, lo, hi)
    check_schema(influx, spans, lo, hi)
    check_transit(influx, spans, lo, hi)
    wait_for_join(influx)
    # The same capture again under other host names (as bench-e2e replays it): the
    # participants' hosts must follow (their votes for the first names are stale).
    again = scenarios[0]
    again_hosts = (f"{run_id}-again-a", f"{run_id}-again-b")
    again_spans = {h: export(binary, os.path.join(PCAPS, again, pcap), h, env["DDSHARK_OTLP_ENDPOINT"])
                   for pcap, h in zip(("a.pcap", "b.pcap"), again_hosts)}
    log(f"exported {again} again as {again_hosts}")
    wait_for_spans(influx, again_spans, lo, hi)
    wait_for_join(influx)
    # Last (its capture is newer than the others: the join's 5 minutes of capture time
    # move on with it): the shifted pair.
    shifted = None
    if check(os.path.exists(os.path.join(PCAPS, SHIFTED_FIXTURE, "b.pcap")),
             f"no tests/pcaps/{SHIFTED_FIXTURE}: the clock-correction check needs it"):
        a_pcap = os.path.join(PCAPS, SHIFTED_FIXTURE, "a.pcap")
        b_pcap = os.path.join(env["DDSHARK_STACK_RUN_DIR"], f"{run_id}-{SHIFTED_FIXTURE}-b-shifted.pcap")
        first = shifted_copy(os.path.join(PCAPS, SHIFTED_FIXTURE, "b.pcap"), b_pcap, SHIFT_NS, DRIFT_PPB)
        hosts = (f"{run_id}-shifted-a", f"{run_id}-shifted-b")
        shifted_spans = {h: export(binary, pcap, h, env["DDSHARK_OTLP_ENDPOINT"])
                         for pcap, h in zip((a_pcap, b_pcap), hosts)}
        ts = [int(r["t_send_ns"]) for r in latency_rows(binary, a_pcap, b_pcap, "sample")]
        shifted = (hosts, a_pcap, b_pcap, min(ts) - 60_000_000_000, max(ts) + 60_000_000_000,
                   lambda t: SHIFT_NS + (t - first) * DRIFT_PPB // 1_000_000_000)
        log(f"exported {SHIFTED_FIXTURE} with B +{SHIFT_NS} ns and {DRIFT_PPB} ppb: "
            f"{shifted_spans[hosts[0]]} + {shifted_spans[hosts[1]]} spans")
        wait_for_spans(influx, shifted_spans, shifted[3], shifted[4])
        wait_for_join(influx)
    checks = [(s, r[0], r[1], r[2]) for s, r in ranges.items()]
    checks.append((again, again_hosts, ranges[again][1], ranges[again][2]))
    for s, hosts, start, stop in checks:
        check_latency(influx, binary, s, hosts, start, stop)
        check_outcomes(influx, binary, s, hosts, start, stop)
    if shifted:
        check_clock_correction(influx, binary, *shifted)
    # A pair on one clock: the correction's bound holds 0, the "corrected" panels stay raw.
    kept = ranges.get(KEPT_RAW_FIXTURE)
    if check(kept, f"{KEPT_RAW_FIXTURE} not among the scenarios: the kept-raw check needs it"):
        check_kept_raw(influx, binary, KEPT_RAW_FIXTURE, *kept[:3])
    first = ranges.get("a_small_reliable") or next(iter(ranges.values()))
    # Every query and panel must return data: a fixture with DATA_FRAG, loss and repairs.
    rich = ranges.get("h_vlan_pcp") or first
    check_other_queries(influx, rich[0], rich[1], rich[2])
    check_linter()
    check_topic_filter(influx, first[0], first[1], first[2])
    uids = check_provisioning()
    prom = env.get("DDSHARK_PROMETHEUS_URL")
    if check(prom, "no Prometheus in the stack (start.sh --with-prometheus)"):
        deadline = time.time() + 90
        while time.time() < deadline and not stack.prom_query_range(
                prom, "rate(node_network_receive_bytes_total[1m])", int(time.time()) - 120,
                int(time.time())):
            time.sleep(3)
        check_dashboards(influx, prom, rich[0], rich[1], rich[2], uids)


if __name__ == "__main__":
    sys.exit(main())
