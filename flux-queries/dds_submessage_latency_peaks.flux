// DDS submessage latency, the largest per writer and interval (v.windowPeriod), from the
// per-DATA_FRAG points the latency join writes into ${long_bucket}
// (dds_submessage_latency): the panel "per DATA_FRAG". Zoomed in, each point is one
// DATA_FRAG; wider, the slowest of its interval. The maximum is taken inside InfluxDB's
// storage, so the cost follows the number of intervals, not of DATA_FRAGs. Every
// DATA_FRAG's own row: dds_submessage_latency_materialised.flux.
// Series per topic (and writer): _time = end of the interval, _value = latency_ns.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_submessage_latency" and r._field == "latency_ns")
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
