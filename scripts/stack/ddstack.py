"""The stack's environment and InfluxDB's Flux API, for the scripts and tests that talk to a
running stack (tests/flux/run.py, scripts/stack/otlp_smoke.py, scripts/bench_e2e.py).

  read_env(path)            stack.env (what scripts/stack/start.sh writes) as a dict
  parse_annotated_csv(text) InfluxDB's annotated CSV as row dicts
  Influx(env).query(flux)   run Flux, rows back
"""
import csv
import io
import json
import re
import urllib.error
import urllib.parse
import urllib.request


def read_env(path):
    """`export NAME='value'` lines of a stack.env as {NAME: value}."""
    env = {}
    with open(path) as fh:
        for line in fh:
            m = re.match(r"export (\w+)='(.*)'$", line.strip())
            if m:
                env[m.group(1)] = m.group(2)
    return env


def parse_annotated_csv(text, types=False):
    """InfluxDB's annotated CSV: tables separated by blank lines, each with a header row
    (after a #datatype row when asked for). Returns one dict per row of every table, without
    the unnamed first column; with types=True each row also has "_types": {column: InfluxDB
    data type}."""
    rows, header, dtypes = [], None, None
    for rec in csv.reader(io.StringIO(text)):
        if not rec or rec == [""]:
            header, dtypes = None, None
            continue
        if rec[0] == "#datatype":
            dtypes = rec
            continue
        if header is None:
            header = rec
            continue
        row = dict(zip(header, rec))
        row.pop("", None)
        if types and dtypes:
            row["_types"] = {k: t for k, t in zip(header, dtypes) if k}
        rows.append(row)
    return rows


class Influx:
    """InfluxDB 2 of a stack: its URL, org, token and buckets from a stack.env dict."""

    def __init__(self, env):
        self.url = env["DDSHARK_INFLUX_URL"].rstrip("/")
        self.org = env.get("DDSHARK_INFLUX_ORG", "ddshark")
        self.bucket = env.get("DDSHARK_INFLUX_BUCKET", "ddshark")
        self.long_bucket = env.get("DDSHARK_INFLUX_LONG_BUCKET", "ddshark_long")
        self.token = env["DDSHARK_INFLUX_TOKEN"]

    def query(self, flux, types=False, timeout=300):
        """Run Flux; returns a list of row dicts (all tables). Raises RuntimeError on errors.
        With types=True every row also has "_types": {column: InfluxDB data type}."""
        body = {"query": flux, "type": "flux",
                "dialect": {"annotations": ["datatype"] if types else [], "header": True}}
        req = urllib.request.Request(
            f"{self.url}/api/v2/query?org={urllib.parse.quote(self.org)}",
            data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"Token {self.token}", "Accept": "application/csv",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"HTTP {e.code}: {e.read().decode(errors='replace')[:2000]}")
        return parse_annotated_csv(text, types=types)
