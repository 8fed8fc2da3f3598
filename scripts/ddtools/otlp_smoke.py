"""Helpers for scripts/stack/smoke.sh (standard library only).

  python3 -m ddtools.otlp_smoke send  --otlp-http URL --trace-id HEX
      POST a few ddshark-like spans as OTLP/HTTP JSON to URL/v1/traces.
  python3 -m ddtools.otlp_smoke check --influx URL --org ORG --bucket B --token T --trace-id HEX
      Query InfluxDB with Flux (POST /api/v2/query, Accept: application/csv)
      until the spans arrived, check their tags and fields, print the layout.
  python3 -m ddtools.otlp_smoke metric --url METRICS_URL --name NAME [--label k=v]
      Print the summed value of a Prometheus-format metric.
"""
import argparse
import json
import sys
import time
import urllib.request

from .influx import Influx

# The spans the smoke test sends. Resource attributes: service.name,
# host.name, capture.interface; span attributes like ddshark's DATA/DATA_FRAG
# spans (the DATA_FRAGs with every attribute the latency join reads, which takes them).
# Ints stay ints in OTLP (intValue) so the test shows how the join stores them (the
# layout docs/span-schema.md describes): bounded tags, typed fields.
RESOURCE = {
    "service.name": "ddshark-smoke",
    "host.name": "smoke-host",
    "capture.interface": "lo",
}
SPANS = [
    # name, span_id, attributes
    ("DATA", "00000000000000a1", {
        "traffic_type": "user",
        "topic_name": "rt/chatter",
        "writer_id": "010f2a3b4c5d6e7f80910203.00000103",
        "sn": 42,
        "payload_size": 128,
        "pcp": 5,
        "shm": False,
        "ratio": 0.5,
    }),
    ("DATA_FRAG", "00000000000000a2", {
        "traffic_type": "user",
        "topic_name": "rt/chatter",
        "writer_id": "010f2a3b4c5d6e7f80910203.00000103",
        "sn": 43,
        "fragment_starting_num": 1,
        "payload_size": 1400,
        "pcp": 5,
        "slot": 0,
        "frags_in_submessage": 1,
        "fragment_size": 1400,
        "sample_size": 2000,
    }),
    ("DATA_FRAG", "00000000000000a3", {
        "traffic_type": "user",
        "topic_name": "rt/chatter",
        "writer_id": "010f2a3b4c5d6e7f80910203.00000103",
        "sn": 43,
        "fragment_starting_num": 2,
        "payload_size": 600,
        "pcp": 5,
        "slot": 0,
        "frags_in_submessage": 1,
        "fragment_size": 1400,
        "sample_size": 2000,
    }),
]
# The join's lean layout (docs/span-schema.md, "In InfluxDB: lean points"): these tags on every
# `spans` point (PCP: the frame's, a tag of its DATA/DATA_FRAG), these typed fields per kind
# (at most 8); what follows the writer (service, interface, traffic type, …) once in
# `dds_writers`. Attributes the schema does not know (shm, ratio) are not stored.
TAGS = ["host.name", "topic_name", "writer_id", "slot", "pcp"]
INT_FIELDS = {"DATA": ["sn", "payload_size"],
              "DATA_FRAG": ["sn", "fragment_starting_num", "payload_size", "frags_in_submessage",
                            "fragment_size", "sample_size"]}
WRITER_TAGS = ["service.name", "capture.interface", "traffic_type"]
MAX_FIELDS = 8


def otlp_value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}  # OTLP/JSON encodes int64 as a string
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def otlp_attrs(d):
    return [{"key": k, "value": otlp_value(v)} for k, v in d.items()]


def http(method, url, body=None, headers=None, timeout=10):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.status, resp.read().decode()


def cmd_send(a):
    now = time.time_ns()
    spans = []
    for i, (name, span_id, attrs) in enumerate(SPANS):
        start = now + i * 1000
        spans.append({
            "traceId": a.trace_id,
            "spanId": span_id,
            "name": name,
            "kind": 1,  # SPAN_KIND_INTERNAL
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 250),
            "attributes": otlp_attrs(attrs),
            "status": {},
        })
    payload = {"resourceSpans": [{
        "resource": {"attributes": otlp_attrs(RESOURCE)},
        "scopeSpans": [{"scope": {"name": "ddshark-smoke", "version": "0"}, "spans": spans}],
    }]}
    status, body = http("POST", a.otlp_http.rstrip("/") + "/v1/traces",
                        json.dumps(payload).encode(), {"Content-Type": "application/json"})
    if status != 200:
        sys.exit(f"OTLP/HTTP POST returned {status}: {body}")
    print(f"sent {len(spans)} spans, trace_id={a.trace_id}, response {status} {body.strip()}",
          file=sys.stderr)


def flux(a, query):
    try:
        return Influx(a.influx, a.org, a.token).query(query, types=True)
    except RuntimeError as e:
        sys.exit(f"Flux query failed: {e}")


def cmd_check(a):
    host = RESOURCE["host.name"]
    raw_q = (f'from(bucket: "{a.bucket}") |> range(start: -1h, stop: 1h) '
             f'|> filter(fn: (r) => (r._measurement == "spans" or r._measurement == "dds_writers") '
             f'and r["host.name"] == "{host}")')
    deadline = time.time() + a.timeout
    while True:
        rows = [r for r in flux(a, raw_q)]
        points = {(r["_time"], r.get("span.name")) for r in rows if r["_measurement"] == "spans"}
        if len(points) >= len(SPANS) or time.time() > deadline:
            break
        time.sleep(0.5)
    # One point per span: key (series, time); its fields are separate rows here.
    by_point = {}
    for r in rows:
        key = tuple(sorted((k, v) for k, v in r.items() if k not in
                           ("result", "table", "_start", "_stop", "_value", "_field", "_types")))
        by_point.setdefault(key, {})[r["_field"]] = (r["_value"], r["_types"]["_value"])
    by_span, writers = {}, []
    for key, fields in by_point.items():
        k = dict(key)
        if k["_measurement"] == "dds_writers":
            writers.append((k, fields))
            continue
        fsn = fields.get("fragment_starting_num", ("0",))[0]
        by_span[(k.get("span.name"), fields.get("sn", (None,))[0], fsn)] = (k, fields)
    errors = []
    if len(by_span) != len(SPANS):
        errors.append(f"expected {len(SPANS)} spans in InfluxDB, found {len(by_span)}")
    for name, span_id, attrs in SPANS:
        want_key = (name, str(attrs["sn"]), str(attrs.get("fragment_starting_num", 0)))
        if want_key not in by_span:
            errors.append(f"span {span_id}: no point {want_key}")
            continue
        key, fields = by_span[want_key]
        tags = {k: v for k, v in key.items() if k not in ("_time", "_measurement")}
        expect_tags = {"span.name": name}
        for k in TAGS:
            v = RESOURCE.get(k, attrs.get(k))
            if v is not None:
                expect_tags[k] = str(v)
        if tags != expect_tags:
            errors.append(f"span {span_id} tags {tags} != expected {expect_tags}")
        for k in INT_FIELDS[name]:
            if k in attrs and fields.get(k) != (str(attrs[k]), "long"):
                errors.append(f"span {span_id} field {k} {fields.get(k)} != ({attrs[k]}, long)")
        end = fields.get("end_time_unix_nano")
        if not end or end[1] != "long":
            errors.append(f"span {span_id} end_time_unix_nano {end} is not a long field")
        if len(fields) > MAX_FIELDS:
            errors.append(f"span {span_id}: {len(fields)} fields, more than {MAX_FIELDS}")
        if a.verbose and span_id == SPANS[0][1]:
            print("observed layout of one span (measurement 'spans'):", file=sys.stderr)
            print(f"  tags:   {json.dumps(tags, sort_keys=True)}", file=sys.stderr)
            for f, (v, t) in sorted(fields.items()):
                print(f"  field:  {f} ({t}) = {v}", file=sys.stderr)
    # The writer's facts: once (the spans agree on them), with the resource's.
    if len(writers) != 1:
        errors.append(f"expected 1 dds_writers point, found {len(writers)}")
    for tags, fields in writers:
        for k in WRITER_TAGS:
            want = RESOURCE.get(k, SPANS[0][2].get(k))
            if tags.get(k) != want:
                errors.append(f"dds_writers tag {k} {tags.get(k)!r} != {want!r}")
        if "pcp" in fields:
            errors.append(f"dds_writers field pcp {fields['pcp']}: a frame's, not a writer's")
        if a.verbose:
            print(f"writer facts: {json.dumps(tags, sort_keys=True)} {fields}", file=sys.stderr)
    if errors:
        print("SMOKE CHECK FAILED:\n  " + "\n  ".join(errors), file=sys.stderr)
        sys.exit(1)
    print(f"InfluxDB check OK: {len(by_span)} spans with expected tags and typed fields, "
          "the writer's facts once", file=sys.stderr)


def cmd_metric(a):
    want = dict(l.split("=", 1) for l in a.label)
    _, text = http("GET", a.url)
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(a.name):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        if name != a.name:
            continue
        lab = {}
        for part in labels.rstrip("}").split(","):
            if "=" in part:
                k, v = part.split("=", 1)
                lab[k.strip()] = v.strip().strip('"')
        if all(lab.get(k) == v for k, v in want.items()):
            total += float(value)
            seen = True
    print(int(total) if total.is_integer() else total) if seen else print("absent")


def main():
    p = argparse.ArgumentParser(prog="python3 -m ddtools.otlp_smoke", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--otlp-http", required=True)
    s.add_argument("--trace-id", required=True)
    c = sub.add_parser("check")
    for k in ("influx", "org", "bucket", "token", "trace-id"):
        c.add_argument(f"--{k}", required=True)
    c.add_argument("--timeout", type=float, default=30)
    c.add_argument("-v", "--verbose", action="store_true")
    m = sub.add_parser("metric")
    m.add_argument("--url", required=True)
    m.add_argument("--name", required=True)
    m.add_argument("--label", action="append", default=[])
    a = p.parse_args()
    {"send": cmd_send, "check": cmd_check, "metric": cmd_metric}[a.cmd](a)


if __name__ == "__main__":
    main()
