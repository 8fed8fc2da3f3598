// Per-topic sample rate on host ${sender}: each sample (writer_id, sn) counted once,
// at its first copy (its SAMPLE span), per v.windowPeriod, in samples/s. One series per
// topic. Counted inside InfluxDB's storage (aggregateWindow right after the filters), so
// the cost follows the number of intervals and writers, not of samples.
// Grafana variables: ${bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop, v.windowPeriod.
windowSeconds = float(v: int(v: v.windowPeriod)) / 1000000000.0

from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "SAMPLE" and r._field == "sn")
    |> filter(fn: (r) => r["host.name"] == "${sender}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> aggregateWindow(every: v.windowPeriod, fn: count, createEmpty: false)
    |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value) / windowSeconds,
        topic_name: if exists r.topic_name then r.topic_name else "(unknown topic)"}))
    |> group(columns: ["topic_name", "_time"])
    |> sum()
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
