// Per-topic DDS bandwidth seen on host ${sender}: serialized payload bytes of every
// DATA/DATA_FRAG span (retransmissions included: it is what the wire carries),
// summed per v.windowPeriod and converted to bit/s. One series per topic. The sum per
// interval is taken inside InfluxDB's storage (aggregateWindow right after the filters;
// a missing topic_name tag reads as "" there, as `exists` does here), so the cost follows
// the number of intervals and writers, not of spans.
// Grafana variables: ${bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop, v.windowPeriod.
windowSeconds = float(v: int(v: v.windowPeriod)) / 1000000000.0

from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r._field == "payload_size")
    |> filter(fn: (r) => r["host.name"] == "${sender}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
    |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value) * 8.0 / windowSeconds,
        topic_name: if exists r.topic_name then r.topic_name else "(unknown topic)"}))
    |> group(columns: ["topic_name", "_time"])
    |> sum()
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
