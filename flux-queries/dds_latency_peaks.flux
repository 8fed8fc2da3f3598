// DDS-layer latency, the largest per writer and interval (v.windowPeriod), from the
// per-sample points the latency join writes into ${long_bucket} (dds_latency): the panel
// "per sample". Zoomed in until an interval holds at most one sample of a writer, each
// point is one sample; wider, each is the slowest sample of its interval. The maximum is
// taken inside InfluxDB's storage (aggregateWindow right after the filters), so its cost
// follows the number of intervals, not of samples: 5 minutes at Autoware's ~20k samples/s
// answer like 5 minutes of a few hundred (docs/bench-e2e.md). Every sample's own row:
// dds_latency_materialised.flux.
// Series per topic (and writer): _time = end of the interval, _value = latency_ns.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver} (host.name), ${topic} (regex,
// All = .*), v.timeRangeStart / v.timeRangeStop, v.windowPeriod.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_latency" and r._field == "latency_ns")
    |> filter(fn: (r) => r.sender == "${sender}" and r.receiver == "${receiver}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)
    // Samples a writer sent at one instant are points of different `slot`s (series): the
    // largest of them per interval.
    |> group(columns: ["topic_name", "writer_id"])
    |> sort(columns: ["_time", "_value"], desc: true)
    |> unique(column: "_time")
    |> keep(columns: ["_time", "_value", "topic_name", "writer_id"])
    |> sort(columns: ["_time"])
