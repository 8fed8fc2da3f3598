"""InfluxDB 2 over its HTTP API (standard library only): the one client and the one
annotated-CSV parser of the scripts and tests that talk to a stack.

  Influx.from_env(env)      a stack's InfluxDB (env: ddtools.stack.read_env of its stack.env)
  Influx(url, org, token)   any InfluxDB 2
  .query(flux)              run Flux, row dicts back (parse_annotated_csv)
  .call(method, path, body) the JSON API (buckets, tasks, orgs)
  parse_annotated_csv(text) InfluxDB's annotated CSV as row dicts
"""
import csv
import io
import json
import urllib.error
import urllib.parse
import urllib.request


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
    """An InfluxDB 2: its URL, org, token and the stack's two buckets (raw spans, and the
    long bucket the latency join writes to)."""

    def __init__(self, url, org, token, bucket="ddshark", long_bucket="ddshark_long", timeout=300):
        self.url = url.rstrip("/")
        self.org = org
        self.token = token
        self.bucket = bucket
        self.long_bucket = long_bucket
        self.timeout = timeout

    @classmethod
    def from_env(cls, env, **kw):
        """The InfluxDB of a stack.env (what scripts/stack/start.sh writes) read as a dict."""
        return cls(env["DDSHARK_INFLUX_URL"], env.get("DDSHARK_INFLUX_ORG", "ddshark"),
                   env["DDSHARK_INFLUX_TOKEN"], bucket=env.get("DDSHARK_INFLUX_BUCKET", "ddshark"),
                   long_bucket=env.get("DDSHARK_INFLUX_LONG_BUCKET", "ddshark_long"), **kw)

    def _request(self, method, path, body, accept, timeout):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Token {self.token}", "Accept": accept,
            "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path.split('?')[0]}: HTTP {e.code}: "
                               f"{e.read().decode(errors='replace')[:2000]}")

    def query(self, flux, types=False, timeout=None):
        """Run Flux; returns a list of row dicts (all tables). Raises RuntimeError on errors.
        With types=True every row also has "_types": {column: InfluxDB data type}."""
        body = {"query": flux, "type": "flux",
                "dialect": {"annotations": ["datatype"] if types else [], "header": True}}
        raw = self._request("POST", f"/api/v2/query?org={urllib.parse.quote(self.org)}", body,
                            "application/csv", timeout)
        return parse_annotated_csv(raw.decode(), types=types)

    def call(self, method, path, body=None, timeout=60):
        """One call of the JSON API; the decoded answer ({} when empty). RuntimeError on errors."""
        raw = self._request(method, path, body, "application/json", timeout)
        return json.loads(raw) if raw else {}

    def org_id(self):
        orgs = self.call("GET", f"/api/v2/orgs?org={urllib.parse.quote(self.org)}")["orgs"]
        if not orgs:
            raise RuntimeError(f"organization {self.org!r} not found")
        return orgs[0]["id"]

    def task(self, name):
        """The task called name, or None."""
        tasks = self.call("GET", f"/api/v2/tasks?org={urllib.parse.quote(self.org)}")["tasks"]
        return next((t for t in tasks if t["name"] == name), None)
