// Per-topic sample rate on host ${sender}: each sample (writer_id, sn) counted once,
// at its first copy (its SAMPLE span), per v.windowPeriod, in samples/s. One series per
// topic.
// Grafana variables: ${bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop, v.windowPeriod.
windowSeconds = float(v: int(v: v.windowPeriod)) / 1000000000.0

from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "SAMPLE" and r._field == "sn")
    |> filter(fn: (r) => r["host.name"] == "${sender}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/)
    |> map(fn: (r) => ({_time: r._time, _value: 1, topic_name: if exists r.topic_name then r.topic_name else "(unknown topic)"}))
    |> group(columns: ["topic_name"])
    |> aggregateWindow(every: v.windowPeriod, fn: count, createEmpty: false)
    |> map(fn: (r) => ({r with _value: float(v: r._value) / windowSeconds}))
