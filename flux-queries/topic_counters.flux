// Per-topic counters of ddshark's state tracker on host ${sender} (OTLP metrics
// ddshark.topic.{samples,bytes,lost,retransmitted}, cumulative "counter" field):
// increase per v.windowPeriod, per topic and counter.
// Grafana variables: ${long_bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop, v.windowPeriod.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement =~ /^ddshark\.topic\./ and r._field == "counter")
    |> filter(fn: (r) => r["host.name"] == "${sender}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/)
    |> group(columns: ["topic_name", "_measurement"])
    |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)
    |> difference(nonNegative: true, keepFirst: true)
    |> map(fn: (r) => ({r with _value: float(v: r._value)}))
