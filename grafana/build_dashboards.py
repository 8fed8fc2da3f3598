#!/usr/bin/env python3
"""Generate grafana/dashboards/*.json from flux-queries/*.flux.

Every InfluxDB panel embeds the text of one file of flux-queries/ verbatim, so the
dashboards, the Flux queries and `ddshark latency` give one answer (tests/flux/run.py
checks that the JSON is up to date and that every panel's query returns data).

usage: grafana/build_dashboards.py [--check]
  --check   exit 1 if a dashboard file differs from what would be generated
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLUX = os.path.join(ROOT, "flux-queries")
OUT = os.path.join(ROOT, "grafana", "dashboards")

INFLUX = {"type": "influxdb", "uid": "ddshark-influxdb"}
PROM = {"type": "prometheus", "uid": "ddshark-prometheus"}


def flux(name):
    with open(os.path.join(FLUX, name + ".flux")) as fh:
        return fh.read()


def tag_values_query(tag):
    return (
        'import "influxdata/influxdb/schema"\n\n'
        f'schema.tagValues(bucket: "${{bucket}}", tag: "{tag}", '
        'predicate: (r) => r._measurement == "spans", '
        "start: v.timeRangeStart, stop: v.timeRangeStop)\n"
    )


def var_bucket():
    return {
        "name": "bucket", "label": "bucket", "type": "textbox", "query": "ddshark",
        "current": {"text": "ddshark", "value": "ddshark"}, "hide": 0,
        "description": "InfluxDB bucket the collector writes spans into",
    }


def var_host(name, label, description):
    return {
        "name": name, "label": label, "type": "query", "datasource": INFLUX,
        "query": tag_values_query("host.name"), "definition": tag_values_query("host.name"),
        "refresh": 2, "sort": 1, "multi": False, "includeAll": False, "hide": 0,
        "description": description, "current": {}, "options": [],
    }


def var_topic():
    return {
        "name": "topic", "label": "topic", "type": "query", "datasource": INFLUX,
        "query": tag_values_query("topic_name"), "definition": tag_values_query("topic_name"),
        "refresh": 2, "sort": 1, "multi": True, "includeAll": True, "allValue": ".*",
        "hide": 0, "current": {"text": ["All"], "value": ["$__all"]}, "options": [],
        "description": "DDS topic(s); All also includes writers whose topic is unknown",
    }


def var_iface():
    q = {"query": "label_values(node_network_receive_bytes_total, device)", "refId": "iface"}
    return {
        "name": "iface", "label": "interface", "type": "query", "datasource": PROM,
        "query": q, "definition": q["query"], "refresh": 2, "sort": 1, "multi": True,
        "includeAll": True, "allValue": ".*", "hide": 0,
        "current": {"text": ["All"], "value": ["$__all"]}, "options": [],
        "description": "network interface (node_exporter device label)",
    }


class Board:
    def __init__(self, uid, title, description, variables):
        self.uid, self.title, self.description = uid, title, description
        self.variables = variables
        self.panels = []
        self.y = 0

    def row(self, title):
        self.panels.append({
            "id": len(self.panels) + 1, "type": "row", "title": title, "collapsed": False,
            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": [],
        })
        self.y += 1

    def panel(self, title, description, targets, unit, w=24, h=9, x=0, style="line",
              kind="timeseries", advance=True, legend_calcs=None):
        custom = {"drawStyle": style, "lineWidth": 1, "fillOpacity": 0, "showPoints": "auto",
                  "pointSize": 4, "spanNulls": False}
        if style == "points":
            custom.update({"showPoints": "always", "pointSize": 4})
        if style == "bars":
            custom.update({"fillOpacity": 60, "lineWidth": 1})
        p = {
            "id": len(self.panels) + 1, "type": kind, "title": title,
            "description": description,
            "gridPos": {"x": x, "y": self.y, "w": w, "h": h},
            "datasource": targets[0]["datasource"],
            "targets": targets,
            "fieldConfig": {"defaults": {"unit": unit, "custom": custom}, "overrides": []},
            "options": {
                "legend": {"showLegend": True, "displayMode": "table", "placement": "right",
                           "calcs": legend_calcs or ["min", "mean", "max"]},
                "tooltip": {"mode": "multi", "sort": "desc"},
            },
        }
        self.panels.append(p)
        if advance:
            self.y += h
        return p

    def json(self):
        return {
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": ["ddshark", "dds", "rtps"], "timezone": "utc", "editable": True,
            "graphTooltip": 1, "schemaVersion": 39, "version": 1, "refresh": "",
            "time": {"from": "now-15m", "to": "now"},
            "timepicker": {"refresh_intervals": ["5s", "10s", "30s", "1m", "5m"]},
            "fiscalYearStartMonth": 0, "liveNow": False, "weekStart": "",
            "annotations": {"list": [{
                "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
                "name": "Annotations & Alerts", "type": "dashboard"}]},
            "links": [], "templating": {"list": self.variables}, "panels": self.panels,
        }


def influx_target(name, ref="A"):
    return {"refId": ref, "datasource": INFLUX, "query": flux(name)}


def prom_target(expr, legend, ref="A"):
    return {"refId": ref, "datasource": PROM, "expr": expr, "legendFormat": legend,
            "range": True, "editorMode": "code"}


def latency_board():
    b = Board("ddshark-latency", "ddshark — DDS latency",
              "One-way DDS latency between two capture hosts (thesis 3.2.5), the same numbers "
              "as `ddshark latency`: first IP fragment at the sender -> last IP fragment at the "
              "receiver, per sample and per DATA_FRAG. Below: node_exporter interface bandwidth "
              "on the same time axis (thesis Fig. 4.11).",
              [var_bucket(),
               var_host("sender", "sender host", "host.name of the capture on the writers' host"),
               var_host("receiver", "receiver host", "host.name of the capture on the readers' host"),
               var_topic(), var_iface()])
    b.row("Latency ${sender} -> ${receiver}")
    b.panel("DDS-layer latency per topic",
            "Per sample (writer GUID, SN): first IP fragment of its first datagram on ${sender} "
            "-> last IP fragment of the last needed datagram on ${receiver}. One point per sample, "
            "at its send time. flux-queries/dds_latency.flux",
            [influx_target("dds_latency")], "ns", h=10, style="points",
            legend_calcs=["min", "mean", "max", "count"])
    b.panel("Network bandwidth per interface (node_exporter)",
            "Receive (+) and transmit (-) bit/s of the hosts' interfaces, on the same time axis "
            "as the latency above (thesis Fig. 4.11).",
            [prom_target('rate(node_network_receive_bytes_total{device=~"${iface:regex}"}[$__rate_interval]) * 8',
                         "{{instance}} {{device}} rx"),
             prom_target('-rate(node_network_transmit_bytes_total{device=~"${iface:regex}"}[$__rate_interval]) * 8',
                         "{{instance}} {{device}} tx", "B")],
            "bps", h=8)
    b.panel("DDS submessage latency (per DATA_FRAG)",
            "Per DATA_FRAG (writer GUID, SN, fragment starting number): first IP fragment on "
            "${sender} -> last IP fragment of the earliest complete datagram carrying it on "
            "${receiver}. DATA submessages have fragment_starting_num 0. "
            "flux-queries/dds_submessage_latency.flux",
            [influx_target("dds_submessage_latency")], "ns", h=10, style="points",
            legend_calcs=["min", "mean", "max", "count"])
    b.panel("Lost samples ${sender} -> ${receiver}",
            "Samples of ${sender}'s writers never complete on ${receiver}, per interval at send "
            "time. flux-queries/lost_samples.flux",
            [influx_target("lost_samples")], "short", h=7, style="bars", w=12,
            advance=False, legend_calcs=["sum"])
    b.panel("Retransmissions on ${sender}",
            "DATA/DATA_FRAG sent again to the same destination (repairs), per interval. "
            "flux-queries/retransmissions.flux",
            [influx_target("retransmissions")], "short", h=7, style="bars", w=12, x=12,
            legend_calcs=["sum"])
    return b


def traffic_board():
    b = Board("ddshark-traffic", "ddshark — DDS traffic",
              "Per-topic DDS traffic seen by ddshark on one host: payload size, bandwidth, "
              "sample rate, loss and repairs.",
              [var_bucket(),
               var_host("sender", "host", "host.name of the capture"),
               var_host("receiver", "peer host", "host.name of the other capture (loss panel)"),
               var_topic()])
    b.row("Traffic on ${sender}")
    b.panel("DDS payload size over time",
            "Serialized sample size, one point per sample at its first transmission. "
            "flux-queries/payload_size.flux",
            [influx_target("payload_size")], "decbytes", h=9, style="points")
    b.panel("Bandwidth per topic",
            "DDS payload bit/s per topic, retransmissions included. flux-queries/topic_bandwidth.flux",
            [influx_target("topic_bandwidth")], "bps", h=9, w=12, advance=False)
    b.panel("Sample rate per topic",
            "Samples/s per topic (each sample once). flux-queries/message_rate.flux",
            [influx_target("message_rate")], "short", h=9, w=12, x=12)
    b.row("Loss and repairs")
    b.panel("Lost samples ${sender} -> ${receiver}",
            "flux-queries/lost_samples.flux", [influx_target("lost_samples")], "short", h=8,
            w=8, style="bars", advance=False, legend_calcs=["sum"])
    b.panel("Retransmissions (repairs)", "flux-queries/retransmissions.flux",
            [influx_target("retransmissions")], "short", h=8, w=8, x=8, style="bars",
            advance=False, legend_calcs=["sum"])
    b.panel("ddshark per-topic counters (samples, bytes, lost, retransmitted)",
            "Increase per interval of ddshark's OTLP counters ddshark.topic.*. "
            "flux-queries/topic_counters.flux",
            [influx_target("topic_counters")], "short", h=8, w=8, x=16, legend_calcs=["sum"])
    return b


def health_board():
    b = Board("ddshark-health", "ddshark — capture and export health",
              "ddshark's own export counters (via OTLP into InfluxDB) and the collector's "
              "pipeline metrics (Prometheus).", [var_bucket()])
    b.panel("ddshark spans enqueued / sent / dropped / failed",
            "Cumulative counters of every ddshark instance, per host. Dropped or failed > 0 "
            "means spans are missing. flux-queries/exporter_health.flux",
            [influx_target("exporter_health")], "short", h=9, legend_calcs=["last"])
    b.panel("Collector: spans accepted / exported / failed per second",
            "OpenTelemetry Collector pipeline (its own Prometheus metrics).",
            [prom_target("sum(rate(otelcol_receiver_accepted_spans_total[$__rate_interval])) or vector(0)",
                         "accepted"),
             prom_target("sum(rate(otelcol_receiver_refused_spans_total[$__rate_interval])) or vector(0)",
                         "refused", "B"),
             prom_target("sum(rate(otelcol_exporter_sent_spans_total[$__rate_interval])) or vector(0)",
                         "exported", "C"),
             prom_target("sum(rate(otelcol_exporter_send_failed_spans_total[$__rate_interval])) or vector(0)",
                         "export failed", "D")],
            "short", h=8, w=12, advance=False)
    b.panel("Collector: export queue",
            "Items waiting in the exporters' sending queues, against their capacity.",
            [prom_target("sum by (exporter) (otelcol_exporter_queue_size)", "{{exporter}} size"),
             prom_target("sum by (exporter) (otelcol_exporter_queue_capacity)",
                         "{{exporter}} capacity", "B")],
            "short", h=8, w=12, x=12)
    return b


def main():
    check = "--check" in sys.argv[1:]
    os.makedirs(OUT, exist_ok=True)
    stale = []
    for board in (latency_board(), traffic_board(), health_board()):
        text = json.dumps(board.json(), indent=2, ensure_ascii=False) + "\n"
        path = os.path.join(OUT, board.uid + ".json")
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            if check:
                stale.append(path)
            else:
                with open(path, "w") as fh:
                    fh.write(text)
                print(f"wrote {path}", file=sys.stderr)
    if stale:
        print("out of date (run grafana/build_dashboards.py): " + " ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
