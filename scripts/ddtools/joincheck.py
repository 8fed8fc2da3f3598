"""The join checks: the live join's output (InfluxDB's points and the Flux queries over them)
against `ddshark latency` on the same captures, to the nanosecond. One module for the Flux
suite (tests/flux), the demo check and the benches (bench_e2e, bench_faults), so "equal"
means the same everywhere.

Failures of the `check`/`compare` kind are collected in FAILURES (the suite's exit status);
`compare_latencies` returns its verdict as a dict for the benches' reports.
"""
import csv
import io
import os
import re
import subprocess
import time
from collections import Counter

from . import say_as
from .flux import bind_flux, parse_time_ns, rfc3339
from .paths import FLUX_DIR, PCAPS

# The latency queries per level: the join's materialised points, then the ad-hoc join over
# the raw spans (the submessage level is per DATA_FRAG; DATA is the sample level).
LATENCY_QUERIES = {
    "sample": ("dds_latency_materialised.flux", "dds_latency.flux"),
    "submessage": ("dds_submessage_latency_materialised.flux", "dds_submessage_latency.flux"),
}

FAILURES = []


log = say_as("check")


def fail(msg):
    FAILURES.append(msg)
    log("FAIL: " + msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def latency_rows(binary, a, b, level):
    p = subprocess.run([binary, "latency", a, b, "--level", level, "--format", "tsv", "-q"],
                       capture_output=True, text=True, check=True)
    return list(csv.DictReader(io.StringIO(p.stdout), delimiter="\t"))


def latency_run(binary, a, b):
    """`ddshark latency` per sample (all statuses) and its count of samples the receiver
    was not expected to see (not in the rows)."""
    p = subprocess.run([binary, "latency", a, b, "--level", "sample", "--format", "tsv"],
                       capture_output=True, text=True, check=True)
    m = re.search(r"sender-only not expected at the receiver (\d+)", p.stderr)
    if not m:
        raise RuntimeError(f"ddshark latency: no statistics line in {p.stderr[-500:]}")
    return list(csv.DictReader(io.StringIO(p.stdout), delimiter="\t")), int(m.group(1))


def want_latencies(rows, level, direction):
    """{(writer, sn[, frag_start], t_send_ns): latency_ns} of `ddshark latency`'s ok rows in
    one direction (at level submessage: the fragment rows only); with t_send, a sample
    re-sent after a quiet window, as SPDP is, is one of its own."""
    want = {}
    for r in rows:
        if r["direction"] != direction or r["status"] != "ok":
            continue
        if level == "submessage" and not r["frag_start"]:
            continue
        k = (r["writer_guid"], r["sn"]) + ((r["frag_start"],) if level == "submessage" else ()) \
            + (int(r["t_send_ns"]),)
        want[k] = int(r["latency_ns"])
    return want


def flux_latencies(res, level):
    """The same keys and values from a materialised latency query's rows."""
    got = {}
    for r in res or []:
        k = (r["writer_id"], r["sn"]) + ((r["fragment_starting_num"],) if level == "submessage" else ()) \
            + (parse_time_ns(r["_time"]),)
        got[k] = int(r["_value"])
    return got


def directed(hosts):
    """(direction, sender, receiver) both ways for the pair `hosts` (A, B)."""
    return (("A->B", hosts[0], hosts[1]), ("B->A", hosts[1], hosts[0]))


def compare_latencies(influx, rows, level, query_file, direction, sender, receiver, start, stop):
    """One latency query (flux-queries/`query_file`, Grafana's variables bound) against
    `ddshark latency`'s ok rows of `direction` at `level`: the counts, what is missing, extra
    or different, and `equal` (same keys, same values to the ns, each once)."""
    text = open(os.path.join(FLUX_DIR, query_file)).read()
    q = bind_flux(text, start, stop, "1s", {"bucket": influx.bucket, "long_bucket": influx.long_bucket,
                                            "sender": sender, "receiver": receiver, "topic": ".*"})
    want = want_latencies(rows, level, direction)
    t0 = time.time()
    try:
        res, err = influx.query(q), None
    except RuntimeError as e:
        res, err = [], str(e)
    got = flux_latencies(res, level)
    missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
    diff = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    return {
        "ddshark": len(want), "flux": len(got), "rows": len(res), "missing": len(missing),
        "extra": len(extra), "differ": len(diff), "seconds": round(time.time() - t0, 2), "error": err,
        "equal": err is None and got == want and len(res) == len(got),
        "examples": [str(x) for x in missing[:3] + extra[:3]] + [str((k, want[k], got[k])) for k in diff[:3]],
    }


def check_latency(influx, binary, scen, hosts, start, stop, pcaps=None, levels=LATENCY_QUERIES):
    """Every latency query of `levels` both ways against `ddshark latency` on the fixture's
    captures (or `pcaps`), each a check."""
    a, b = pcaps or (os.path.join(PCAPS, scen, f) for f in ("a.pcap", "b.pcap"))
    for level, query_files in levels.items():
        rows = latency_rows(binary, a, b, level)
        for query_file in query_files:
            for direction, snd, rcv in directed(hosts):
                r = compare_latencies(influx, rows, level, query_file, direction, snd, rcv, start, stop)
                if check(r["equal"], f"{scen} {query_file} {direction}: {r}"):
                    log(f"{scen} {query_file:42} {direction}: {r['ddshark']} latencies identical to the ns")


def flux_rows(influx, name, start, stop, window, values):
    text = open(os.path.join(FLUX_DIR, name)).read()
    return influx.query(bind_flux(text, start, stop, window, values))


def long_points(influx, measurement, sender, start, stop, receiver=None):
    """Points of a materialised measurement, one row per point (fields pivoted)."""
    rcv = f' and r.receiver == "{receiver}"' if receiver else ""
    return influx.query(
        f'from(bucket: "{influx.long_bucket}") |> range(start: {rfc3339(start)}, stop: {rfc3339(stop)}) '
        f'|> filter(fn: (r) => r._measurement == "{measurement}" and r.sender == "{sender}"{rcv}) '
        f'|> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value") |> group()')


def compare(scen, what, want, got):
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    diff = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    ok = check(not missing and not extra and not diff,
               f"{scen} {what}: want {len(want)}, got {len(got)}; missing {missing[:5]} extra {extra[:5]} "
               f"differ {[(k, want[k], got[k]) for k in diff[:5]]}")
    if ok:
        log(f"{scen} {what}: {len(want)} identical")
    return ok


# dds_latency_summary.flux as it was before the per-second totals: over every sample's point.
SUMMARY_OVER_SAMPLES = """
lat = from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_latency" and r._field == "latency_ns")
    |> filter(fn: (r) => r.sender == "${sender}" and r.receiver == "${receiver}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> group(columns: ["topic_name"])
union(tables: [
    lat |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)
        |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value), series: r.topic_name + " max"})),
    lat |> aggregateWindow(every: v.windowPeriod, fn: mean, createEmpty: false)
        |> map(fn: (r) => ({_time: r._time, _value: r._value, series: r.topic_name + " mean"})),
])
    |> group(columns: ["series"])
"""


# The panels' interval in the checks of the storage-side aggregates: several samples per
# interval on the fixtures, so the largest is a real choice.
PEAKS_WINDOW, PEAKS_WINDOW_NS = "100ms", 100_000_000


def window_end(t, window_ns, stop):
    """The _time aggregateWindow gives a point at t: the end of its interval (the range's
    stop at most)."""
    return min((t // window_ns + 1) * window_ns, stop)


def largest_per_window(points, window_ns, stop, field):
    """The largest `field` per (topic, writer, end of aggregateWindow's interval)."""
    out = {}
    for p in points:
        k = (p.get("topic_name", ""), p["writer_id"], window_end(parse_time_ns(p["_time"]), window_ns, stop))
        out[k] = max(out.get(k, int(p[field])), int(p[field]))
    return out


def raw_span_values(influx, host, start, stop):
    """(topic, time, span kind, field, value) of every span's payload_size and SAMPLE sn."""
    rows = influx.query(
        f'from(bucket: "{influx.bucket}") |> range(start: {rfc3339(start)}, stop: {rfc3339(stop)}) '
        f'|> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "{host}" '
        f'and (r._field == "payload_size" or r._field == "sn")) |> group()')
    return [(r.get("topic_name", ""), parse_time_ns(r["_time"]), r.get("span.name", ""), r["_field"],
             int(r["_value"])) for r in rows]


def check_outcomes(influx, binary, scen, hosts, start, stop, pcaps=None, adhoc=True):
    """Lost samples, sample sizes and repairs: the join's dds_lost / dds_samples /
    dds_repairs points against `ddshark latency` on the same captures (the fixture's, or
    `pcaps`), and (adhoc) the ad-hoc queries over the raw spans against the materialised
    ones. Also used by ddtools.bench_e2e."""
    rows, not_expected = latency_run(binary, *(pcaps or (os.path.join(PCAPS, scen, f) for f in ("a.pcap", "b.pcap"))))
    values = {"bucket": influx.bucket, "long_bucket": influx.long_bucket, "topic": ".*", "clock": "raw"}
    extra_samples = 0
    for direction, snd, rcv in directed(hosts):
        mine = [r for r in rows if r["direction"] == direction]
        v = dict(values, sender=snd, receiver=rcv)
        # Loss: `ddshark latency`'s lost and incomplete rows, each sample once, same t_send.
        want = {(r["writer_guid"], r["sn"], int(r["t_send_ns"])): int(r["status"] == "incomplete")
                for r in mine if r["status"] in ("lost", "incomplete")}
        got = {(p["writer_id"], p["sn"], parse_time_ns(p["_time"])): int(p["incomplete"])
               for p in long_points(influx, "dds_lost", snd, start, stop, rcv)}
        compare(scen, f"dds_lost {direction}", want, got)
        # Sample sizes: every sample ddshark reports (any status), same t_send and size; the
        # join also has the samples the receiver was not expected to see.
        want = {(r["writer_guid"], r["sn"], int(r["t_send_ns"])): int(r["sample_size"]) for r in mine}
        points = long_points(influx, "dds_samples", snd, start, stop)
        got = {(p["writer_id"], p["sn"], parse_time_ns(p["_time"])): int(p["sample_size"]) for p in points}
        check(len(got) == len(points), f"{scen} dds_samples {direction}: {len(points)} points, "
                                       f"{len(got)} samples")
        extra_samples += len(set(got) - set(want))
        compare(scen, f"dds_samples {direction} (samples ddshark reports)", want,
                {k: x for k, x in got.items() if k in want})
        if adhoc:
            raw = {(r["writer_id"], r["sn"], parse_time_ns(r["_time"])): int(r["_value"])
                   for r in flux_rows(influx, "payload_size.flux", start, stop, "1s", v)}
            compare(scen, f"payload_size.flux {direction} = dds_samples", got, raw)
        # (the panel's rows carry no sn: compared as a multiset of (writer, t_send, size))
        mat = Counter((r["writer_id"], parse_time_ns(r["_time"]), int(r["_value"]))
                      for r in flux_rows(influx, "payload_size_materialised.flux", start, stop, "1s", v))
        compare(scen, f"payload_size_materialised.flux {direction} = dds_samples",
                Counter((k[0], k[2], x) for k, x in got.items()), mat)
        # Repairs: per writer, the sum of ddshark's repairs_sender.
        want = {}
        for r in mine:
            want[r["writer_guid"]] = want.get(r["writer_guid"], 0) + int(r["repairs_sender"])
        want = {k: x for k, x in want.items() if x}
        got = {}
        for p in long_points(influx, "dds_repairs", snd, start, stop):
            got[p["writer_id"]] = got.get(p["writer_id"], 0) + int(p["repairs"])
        got = {k: x for k, x in got.items() if x}
        compare(scen, f"dds_repairs {direction} (per writer)", want, got)
        # Latency per second, sender, receiver and topic: the totals of the (checked)
        # per-sample points; and the long-range panel over them = the same over every sample.
        want = {}
        for p in long_points(influx, "dds_latency", snd, start, stop, rcv):
            k = (p.get("topic_name", ""), parse_time_ns(p["_time"]) // 1_000_000_000)
            lat = int(p["latency_ns"])
            n, total, lo, hi = want.get(k, (0, 0, lat, lat))
            want[k] = (n + 1, total + lat, min(lo, lat), max(hi, lat))
        got = {(p.get("topic_name", ""), parse_time_ns(p["_time"]) // 1_000_000_000):
               (int(p["samples"]), int(p["latency_sum_ns"]), int(p["latency_min_ns"]), int(p["latency_max_ns"]))
               for p in long_points(influx, "dds_latency_1s", snd, start, stop, rcv)}
        compare(scen, f"dds_latency_1s {direction} = dds_latency per second", want, got)
        summary = {(r["series"], r["_time"]): float(r["_value"])
                   for r in flux_rows(influx, "dds_latency_summary.flux", start, stop, "10s", v)}
        per_sample = {(r["series"], r["_time"]): float(r["_value"])
                      for r in influx.query(bind_flux(SUMMARY_OVER_SAMPLES, start, stop, "10s", v))}
        # (means to a millionth: two float divisions)
        close = {k for k, x in summary.items() if k in per_sample and abs(x - per_sample[k]) <= 1e-6 * max(1.0, abs(x))}
        compare(scen, f"dds_latency_summary.flux {direction} = the same over every sample (10 s)",
                per_sample, {k: per_sample[k] if k in close else x for k, x in summary.items()})
        # The panels "per sample": the largest per writer and interval, taken in storage, = the
        # same over the (checked) per-sample points.
        for query, measurement, receiver, field in (
                ("dds_latency_peaks.flux", "dds_latency", rcv, "latency_ns"),
                ("dds_submessage_latency_peaks.flux", "dds_submessage_latency", rcv, "latency_ns"),
                ("payload_size_peaks.flux", "dds_samples", None, "sample_size")):
            want = largest_per_window(long_points(influx, measurement, snd, start, stop, receiver),
                                      PEAKS_WINDOW_NS, stop, field)
            got = {(r.get("topic_name", ""), r["writer_id"], parse_time_ns(r["_time"])): int(float(r["_value"]))
                   for r in flux_rows(influx, query, start, stop, PEAKS_WINDOW, v)}
            compare(scen, f"{query} {direction} = the largest {measurement} per writer and {PEAKS_WINDOW}",
                    want, got)
        # Bandwidth and sample rate, summed in storage, = the same over every span.
        spans = raw_span_values(influx, snd, start, stop)
        # (bandwidth: every span's payload bytes × 8; rate: one per SAMPLE span, by its `sn`)
        for query, reads, amount, scale in (
                ("topic_bandwidth.flux", lambda kind, field: field == "payload_size", lambda value: value, 8.0),
                ("message_rate.flux", lambda kind, field: kind == "SAMPLE" and field == "sn", lambda value: 1, 1.0)):
            want = {}
            for topic, t, kind, field, value in spans:
                if reads(kind, field):
                    k = (topic or "(unknown topic)", window_end(t, PEAKS_WINDOW_NS, stop))
                    want[k] = want.get(k, 0) + amount(value)
            want = {k: round(x * scale * 1e9 / PEAKS_WINDOW_NS, 6) for k, x in want.items()}
            got = {(r["topic_name"], parse_time_ns(r["_time"])): round(float(r["_value"]), 6)
                   for r in flux_rows(influx, query, start, stop, PEAKS_WINDOW, v)}
            compare(scen, f"{query} {direction} = the same over every span ({PEAKS_WINDOW})", want, got)
        # The panels: materialised and ad-hoc give the same rows (per topic and second).
        for mat, raw in (("lost_samples_materialised.flux", "lost_samples.flux"),
                         ("retransmissions_materialised.flux", "retransmissions.flux")) if adhoc else ():
            a = {(r["topic_name"], r["_time"]): int(float(r["_value"]))
                 for r in flux_rows(influx, mat, start, stop, "1s", v)}
            b = {(r["topic_name"], r["_time"]): int(float(r["_value"]))
                 for r in flux_rows(influx, raw, start, stop, "1s", v)}
            compare(scen, f"{raw} {direction} = {mat}", a, b)
    check(extra_samples == not_expected,
          f"{scen}: dds_samples has {extra_samples} samples ddshark does not report, ddshark counts "
          f"{not_expected} not expected at the receiver")


def join_state(influx):
    """The latency join's latest counters (its `ddshark_join` point, time_ns: when it was
    pushed), or {}."""
    rows = influx.query(f'from(bucket: "{influx.bucket}") |> range(start: -10m) '
                        f'|> filter(fn: (r) => r._measurement == "ddshark_join") |> last() '
                        f'|> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")')
    if not rows:
        return {}
    st = {k: int(v) for k, v in rows[-1].items() if re.fullmatch(r"-?\d+", v or "") and k != "table"}
    st["time_ns"] = parse_time_ns(rows[-1]["_time"])
    return st


def await_join(influx, timeout, poll):
    """Waits until a push of the latency join made after this call finds nothing
    pending (call it once InfluxDB holds every span). Returns its last counters, whether
    it got there, and the seconds waited."""
    t_called = time.time_ns()
    t0 = time.time()
    while True:
        st = join_state(influx)
        # (pending_senderless: samples waiting for their sender's span, counted
        # senderless once they give up)
        done = (st.get("time_ns", 0) > t_called and st.get("pending_samples") == 0
                and st.get("pending_frags") == 0 and st.get("pending_senderless", 0) == 0)
        if done or time.time() - t0 >= timeout:
            return st, done, round(time.time() - t0, 1)
        time.sleep(poll)


def wait_for_join(influx, timeout=180):
    """Until the latency join has joined every sample (checked)."""
    st, done, waited = await_join(influx, timeout, poll=1)
    ok = check(done, f"the latency join did not finish within {timeout} s: {st}")
    # (its points are written at its next push)
    time.sleep(3)
    if ok:
        log(f"latency join done in {waited:.0f} s: {st}")
    check(st.get("early", 0) == 0, f"the latency join joined {st.get('early')} samples early (bound)")
    # (every fixture's sender captured what it sent, also when it is exported again under
    # other host names right after: the old names must not take the new samples)
    check(st.get("senderless", 0) == 0,
          f"the latency join found {st.get('senderless')} samples/DATA_FRAGs without their sender")
