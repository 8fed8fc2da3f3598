#!/usr/bin/env python3
"""Generate grafana/dashboards/*.json from flux-queries/*.flux.

Every InfluxDB panel embeds the text of one file of flux-queries/ verbatim, so the
dashboards, the Flux queries and `ddshark latency` give one answer (tests/flux/run.sh
checks that the JSON is up to date and that every panel's query returns data).

usage: grafana/build_dashboards.py [--check]
  --check   exit 1 if a dashboard file differs from what would be generated
"""
import json
import os
import sys

# Run as a file, not as a module of the package: the package is ddtools in scripts/.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
from ddtools.generated import write_generated  # noqa: E402
from ddtools.paths import DASH_DIR, FLUX_DIR  # noqa: E402

# Panels name their data source through dashboard variables (Grafana's dashboard linter
# wants templated data sources); the provisioned ones are the defaults.
INFLUX = {"type": "influxdb", "uid": "${influxdb_datasource}"}
PROM = {"type": "prometheus", "uid": "${prometheus_datasource}"}
PROVISIONED = {"${influxdb_datasource}": "ddshark-influxdb",
               "${prometheus_datasource}": "ddshark-prometheus"}


# Dashboards open on the last 15 minutes and refresh themselves every 10 s: live data
# (and the stack demo, scripts/stack/demo.sh) shows without touching the time picker.
TIME_FROM = "now-15m"
REFRESH = "10s"


def var_datasource(name, kind, label, default_name, default_uid):
    return {
        "name": name, "label": label, "type": "datasource", "query": kind,
        "current": {"text": default_name, "value": default_uid}, "hide": 0,
        "refresh": 1, "regex": "", "options": [], "multi": False, "includeAll": False,
        "description": label,
    }


def var_influx_ds():
    return var_datasource("influxdb_datasource", "influxdb", "Influxdb data source", "InfluxDB",
                          "ddshark-influxdb")


def var_prom_ds():
    return var_datasource("prometheus_datasource", "prometheus", "Prometheus data source", "Prometheus",
                          "ddshark-prometheus")


def flux(name):
    with open(os.path.join(FLUX_DIR, name + ".flux")) as fh:
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
        "name": "bucket", "label": "raw bucket", "type": "textbox", "query": "ddshark",
        "current": {"text": "ddshark", "value": "ddshark"}, "hide": 0,
        "description": "InfluxDB bucket the latency join writes the raw spans into (short retention)",
    }


def var_long_bucket():
    return {
        "name": "long_bucket", "label": "long bucket", "type": "textbox", "query": "ddshark_long",
        "current": {"text": "ddshark_long", "value": "ddshark_long"}, "hide": 0,
        "description": "InfluxDB bucket of the materialised latencies and per-topic counters "
                       "(long retention)",
    }


def var_host(name, label, description, sort=1):
    # Grafana opens a dashboard on the first value of each variable: the receiver's list is
    # sorted the other way round (sort 2, descending) so that with two hosts sender and
    # receiver open on different ones.
    return {
        "name": name, "label": label, "type": "query", "datasource": INFLUX,
        "query": tag_values_query("host.name"), "definition": tag_values_query("host.name"),
        "refresh": 2, "sort": sort, "multi": False, "includeAll": False, "hide": 0,
        "description": description, "current": {}, "options": [],
    }


def var_clock():
    # The latency panels' Flux reads it (flux-queries/dds_latency_peaks.flux and co.).
    return {
        "name": "clock", "label": "latency clock", "type": "custom", "query": "raw,corrected",
        "current": {"text": "raw", "value": "raw"}, "hide": 0, "multi": False,
        "includeAll": False,
        "options": [{"text": "raw", "value": "raw", "selected": True},
                    {"text": "corrected", "value": "corrected", "selected": False}],
        "description": "raw: receive time on the receiver's clock minus send time on the "
                       "sender's, as captured. corrected: as `ddshark latency --offset auto`, "
                       "minus the clock offset the latency join estimates from the traffic "
                       "(panel 'Clock offset') when its interval excludes 0, each latency "
                       "± the interval's half-width; raw when the interval holds 0 (the "
                       "clocks may agree); each series' clock_correction says which; empty "
                       "where there is no estimate for the pair. docs/latency.md",
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

    def row(self, title, collapsed=None):
        """A row; `collapsed` = panels made with attach=False, hidden until expanded
        (Grafana runs their queries only then)."""
        row = {
            "id": len(self.panels) + 1, "type": "row", "title": title,
            "collapsed": collapsed is not None,
            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": [],
        }
        self.panels.append(row)
        self.y += 1
        for p in collapsed or []:
            p["id"] = len(self.panels) + len(row["panels"]) + 1
            p["gridPos"]["y"] = self.y
            self.y += p["gridPos"]["h"]
            row["panels"].append(p)

    def panel(self, title, description, targets, unit, w=24, h=9, x=0, style="line",
              kind="timeseries", advance=True, legend_calcs=None, attach=True):
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
        if not attach:
            return p
        self.panels.append(p)
        if advance:
            self.y += h
        return p

    def flux_panel(self, title, description, query, unit, **kw):
        """A panel of one Flux query, flux-queries/QUERY.flux, named at its description's end."""
        ref = f"flux-queries/{query}.flux"
        return self.panel(title, f"{description} {ref}" if description else ref,
                          [influx_target(query)], unit, **kw)

    def peaks_panel(self, title, description, base, unit, row):
        """The points of flux-queries/BASE_peaks.flux (the largest per writer and interval; one
        point per ROW zoomed in); every ROW's value is in BASE_materialised.flux."""
        return self.flux_panel(
            title, f"{description} Every {row}'s row: flux-queries/{base}_materialised.flux.",
            f"{base}_peaks", unit, h=9, style="points")

    def json(self):
        return {
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": ["ddshark", "dds", "rtps"], "timezone": "utc", "editable": False,
            "graphTooltip": 1, "schemaVersion": 39, "version": 1, "refresh": REFRESH,
            "time": {"from": TIME_FROM, "to": "now"},
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


CLOCK_NOTE = ("${clock}: raw = receiver's clock minus sender's, as captured; corrected = as "
              "`ddshark latency --offset auto`: minus the clock offset below (the join's last "
              "estimate up to the range's end, drift followed) when its interval excludes 0, "
              "every latency then ± its half-width; raw when the interval holds 0 (the clocks may "
              "agree). Each series' label clock_correction says which, the offset and the ± "
              "(uncertainty_ns in the query's rows); the variable 'latency clock' picks.")


def latency_board():
    b = Board("ddshark-latency", "ddshark — DDS latency",
              "One-way DDS latency between two capture hosts, the same numbers "
              "as `ddshark latency`: first IP fragment at the sender -> last IP fragment at the "
              "receiver, per sample and per DATA_FRAG. The panels read the latencies the "
              "InfluxDB task materialises every few seconds (flux-queries/tasks/); the ad-hoc "
              "joins over the raw spans are in the collapsed row at the bottom. Also: "
              "node_exporter interface bandwidth on the same time axis.",
              [var_influx_ds(), var_prom_ds(), var_bucket(), var_long_bucket(),
               var_host("sender", "sender host", "host.name of the capture on the writers' host"),
               var_host("receiver", "receiver host", "host.name of the capture on the readers' host",
                        sort=2),
               var_clock(), var_topic(), var_iface()])
    b.row("Latency ${sender} -> ${receiver}")
    b.flux_panel("DDS-layer latency per topic (max and mean per interval) — ${clock}",
                 "Per sample (writer GUID, SN): first IP fragment of its first datagram on ${sender} "
                 "-> last IP fragment of the last needed datagram on ${receiver}; the largest and "
                 "the mean of the samples sent in each interval. " + CLOCK_NOTE,
                 "dds_latency_summary", "ns", h=9,
                 legend_calcs=["min", "mean", "max"])
    b.peaks_panel("DDS-layer latency per sample (the slowest per interval) — ${clock}",
                  "The latency of each sample (materialised by the latency join), the largest per "
                  "writer and interval: zoomed in, one point per sample at its send time; wider, the "
                  "slowest sample of each interval, taken inside InfluxDB so the panel stays fast at "
                  "Autoware's rate. " + CLOCK_NOTE, "dds_latency", "ns", "sample")
    b.flux_panel("Clock offset ${receiver} - ${sender} (estimated from the traffic)",
                 "With latency clock = raw the latency panels show receive time on ${receiver}'s "
                 "clock minus send time on ${sender}'s, so they read this offset too high; with "
                 "corrected they subtract its last estimate (drift followed) when lower..upper "
                 "excludes 0, and stay raw when it holds 0 (the clocks may agree). The latency join "
                 "estimates it from the samples seen on both hosts (NTP's estimate from the smallest "
                 "delay each way over the last 5 minutes, drift followed); the true offset lies "
                 "between lower and upper, where within depends on the path's asymmetry, which "
                 "traffic cannot show. docs/latency.md.",
                 "clock_offset", "ns", h=7, legend_calcs=["last"])
    b.panel("Network bandwidth per interface (node_exporter)",
            "Receive (+) and transmit (-) bit/s of the hosts' interfaces, on the same time axis "
            "as the latency above.",
            [prom_target('rate(node_network_receive_bytes_total{device=~"${iface:regex}"}[$__rate_interval]) * 8',
                         "{{instance}} {{device}} rx"),
             prom_target('-rate(node_network_transmit_bytes_total{device=~"${iface:regex}"}[$__rate_interval]) * 8',
                         "{{instance}} {{device}} tx", "B")],
            "bps", h=8)
    b.peaks_panel("DDS submessage latency per DATA_FRAG (the slowest per interval) — ${clock}",
                  "Per DATA_FRAG (writer GUID, SN, fragment starting number): first IP fragment on "
                  "${sender} -> last IP fragment of the earliest complete datagram carrying it on "
                  "${receiver} (materialised by the latency join), the largest per writer and "
                  "interval: zoomed in, one point per DATA_FRAG. " + CLOCK_NOTE,
                  "dds_submessage_latency", "ns", "DATA_FRAG")
    b.flux_panel("Lost samples ${sender} -> ${receiver}",
                 "Samples of ${sender}'s writers that ${receiver} never completed while capturing "
                 "(lost or incomplete, as `ddshark latency` says), per interval at send time "
                 "(materialised by the latency task).",
                 "lost_samples_materialised", "short", h=7, style="bars", w=12,
                 advance=False, legend_calcs=["sum"])
    b.flux_panel("Retransmissions on ${sender}",
                 "DATA/DATA_FRAG of ${sender}'s writers re-sent to a destination (or after a "
                 "multicast send) that already had them: repairs, per interval (materialised by the "
                 "latency task).",
                 "retransmissions_materialised", "short", h=7, style="bars", w=12,
                 x=12, legend_calcs=["sum"])
    b.row("Ad-hoc joins over the raw spans (for a window you pick; slower)", collapsed=[
        b.flux_panel("DDS-layer latency per sample (ad-hoc join) — raw (sender and receiver clocks as captured)",
                     "Joins the raw spans of ${sender} and ${receiver} at query time: the same numbers "
                     "as the materialised panel, for windows the task did not cover (e.g. spans "
                     "written before the task ran).",
                     "dds_latency", "ns", h=9, style="points",
                     legend_calcs=["min", "mean", "max", "count"], attach=False),
        b.flux_panel("DDS submessage latency per DATA_FRAG (ad-hoc join) — raw (sender and receiver clocks as captured)",
                     "",
                     "dds_submessage_latency", "ns", h=9, style="points",
                     legend_calcs=["min", "mean", "max", "count"], attach=False),
        b.flux_panel("Lost samples ${sender} -> ${receiver} (ad-hoc join)",
                     "", "lost_samples", "short", h=7,
                     style="bars", legend_calcs=["sum"], attach=False),
        b.flux_panel("Retransmissions on ${sender} (ad hoc)",
                     "", "retransmissions", "short",
                     h=7, style="bars", legend_calcs=["sum"], attach=False),
    ])
    return b


def traffic_board():
    b = Board("ddshark-traffic", "ddshark — DDS traffic",
              "Per-topic DDS traffic seen by ddshark on one host: payload size, bandwidth, "
              "sample rate, loss and repairs.",
              [var_influx_ds(), var_bucket(), var_long_bucket(),
               var_host("sender", "host", "host.name of the capture"),
               var_host("receiver", "peer host", "host.name of the other capture (loss panel)", sort=2),
               var_topic()])
    b.row("Traffic on ${sender}")
    b.peaks_panel("DDS payload size over time (the largest per interval)",
                  "Serialized sample size of ${sender}'s writers at each sample's first transmission "
                  "(materialised by the latency join), the largest per writer and interval: zoomed "
                  "in, one point per sample.", "payload_size", "decbytes", "sample")
    b.flux_panel("Bandwidth per topic",
                 "DDS payload bit/s per topic, retransmissions included.",
                 "topic_bandwidth", "bps", h=9, w=12, advance=False)
    b.flux_panel("Sample rate per topic",
                 "Samples/s per topic (each sample once).",
                 "message_rate", "short", h=9, w=12, x=12)
    b.row("Loss and repairs")
    b.flux_panel("Lost samples ${sender} -> ${receiver}",
                 "",
                 "lost_samples_materialised", "short", h=8, w=8, style="bars",
                 advance=False, legend_calcs=["sum"])
    b.flux_panel("Retransmissions (repairs)", "",
                 "retransmissions_materialised", "short", h=8, w=8, x=8,
                 style="bars", advance=False, legend_calcs=["sum"])
    b.flux_panel("ddshark per-topic counters (samples, bytes, lost, retransmitted)",
                 "Increase per interval of ddshark's OTLP counters ddshark.topic.*.",
                 "topic_counters", "short", h=8, w=8, x=16, legend_calcs=["sum"])
    b.row("Ad hoc over the raw spans (for a window you pick; slower)", collapsed=[
        b.flux_panel("DDS payload size over time (ad hoc)", "",
                     "payload_size", "decbytes", h=9, style="points", attach=False),
        b.flux_panel("Lost samples ${sender} -> ${receiver} (ad-hoc join)",
                     "", "lost_samples", "short", h=8,
                     style="bars", legend_calcs=["sum"], attach=False),
        b.flux_panel("Retransmissions (repairs, ad hoc)", "",
                     "retransmissions", "short", h=8, style="bars",
                     legend_calcs=["sum"], attach=False),
    ])
    return b


def health_board():
    b = Board("ddshark-health", "ddshark — capture and export health",
              "ddshark's own export counters (via OTLP into InfluxDB) and the collector's "
              "pipeline metrics (Prometheus), the latency join's writer and join counters and "
              "the series cardinality of both buckets.",
              [var_influx_ds(), var_prom_ds(), var_bucket(), var_long_bucket()])
    b.flux_panel("ddshark spans enqueued / sent / dropped / failed",
                 "Cumulative counters of every ddshark instance, per host. Dropped or failed > 0 "
                 "means spans are missing.",
                 "exporter_health", "short", h=9, legend_calcs=["last"])
    b.flux_panel("Spans lost in transit, per host and ddshark run",
                 "Every span carries its ddshark run's export_seq (0, 1, 2, … as ddshark puts spans "
                 "into requests): the numbers missing in the raw bucket, those ddshark counted failed, "
                 "and the rest, lost after ddshark (collector, join, InfluxDB). —: the run started "
                 "before the range (widen it).",
                 "transit_loss", "short", h=7, kind="table")
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
    b.flux_panel("Latency join (InfluxDB writer): written / refused / given up / queued",
                 "Cumulative points the latency join wrote into InfluxDB, InfluxDB refused, and it gave "
                 "up when stopping; exports answered 'retry later' for a full queue; points waiting; "
                 "ddshark's metric points and log records refused.",
                 "writer_health", "short", h=8, w=12, advance=False,
                 legend_calcs=["last"])
    b.flux_panel("Series cardinality per bucket",
                 "Series with data in the time range; bounded by the deployment, not the traffic.",
                 "series_cardinality", "short", h=8, w=12, x=12, kind="stat")
    b.flux_panel("Latency join: pending / joined early / points written, dropped / rejected / senderless / forced / quiet hosts / clock table",
                 "Samples and DATA_FRAGs waiting in the latency join (ddshark join), "
                 "samples joined early because it was full (> 0: latencies may be missing), the points "
                 "it wrote and could not deliver, the lines it could not use, the samples and "
                 "DATA_FRAGs the writer's host did not capture (senderless: no point; cumulative; "
                 "pending_senderless: still waiting for that host's span), the samples joined "
                 "before every host's capture had passed them (forced: a host's spans came too late "
                 "or stopped; decided_at_end: the input ended first; cumulative), the hosts no longer "
                 "waited for (quiet_hosts: now; hosts_gone_quiet: cumulative; their spans stopped "
                 "while the fleet's capture time ran on, 5 min, or 10 s when their whole robot "
                 "stopped), and the clock "
                 "table's hosts forgotten (unseen for 5 min of capture time: room for others) and "
                 "evidence it could not hold (clock_cells_not_remembered; cumulative), and the "
                 "spans of joined samples forgotten before a redelivery could no longer come "
                 "(joined_evicted: such a span delivered again counts twice; cumulative).",
                 "join_health", "short", h=8, legend_calcs=["last"])
    return b


def main():
    boards = (latency_board(), traffic_board(), health_board())
    return write_generated({os.path.join(DASH_DIR, b.uid + ".json"):
                            json.dumps(b.json(), indent=2, ensure_ascii=False) + "\n" for b in boards},
                           sys.argv[1:], "grafana/build_dashboards.py")


if __name__ == "__main__":
    sys.exit(main())
