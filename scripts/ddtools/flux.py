"""Flux as Grafana sends it: RFC 3339 times in ns, Grafana's variables bound."""
import re
import time


def rfc3339(ns):
    """ns since the epoch as RFC 3339 with 9 decimals (UTC)."""
    s, f = divmod(int(ns), 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{f:09d}Z"


def parse_time_ns(s):
    """An RFC 3339 UTC time (InfluxDB's _time) as ns since the epoch."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z$", s)
    if not m:
        raise ValueError(s)
    base = int(time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))) - time.timezone
    frac = (m.group(2) or "").ljust(9, "0")[:9]
    return base * 1_000_000_000 + int(frac)


GRAFANA_VARIABLE = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\$(\w+)")


def bind_flux(text, start_ns, stop_ns, window, values):
    """Grafana's substitutions: ${var}, ${var:regex}, $var; `option v` after the imports."""
    def sub(m):
        name = m.group(1) or m.group(3)
        if name not in values:
            raise KeyError(f"unbound variable {m.group(0)}")
        return values[name]
    body = GRAFANA_VARIABLE.sub(sub, text)
    lines = body.split("\n")
    imports = [l for l in lines if l.startswith("import ")]
    rest = [l for l in lines if not l.startswith("import ")]
    opt = (f"option v = {{timeRangeStart: {rfc3339(start_ns)}, timeRangeStop: {rfc3339(stop_ns)}, "
           f"windowPeriod: {window}}}")
    return "\n".join(imports + [opt] + rest)


def bind_prom(expr, values):
    """Grafana's substitutions in PromQL, its interval variables as a 15 s scrape gives them."""
    def sub(m):
        name = m.group(1) or m.group(3)
        if name in ("__rate_interval", "__interval", "__range"):
            return {"__rate_interval": "1m", "__interval": "15s", "__range": "10m"}[name]
        if name not in values:
            raise KeyError(f"unbound variable {m.group(0)}")
        return values[name]
    return GRAFANA_VARIABLE.sub(sub, expr)
