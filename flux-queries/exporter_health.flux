// ddshark's own export health, from the metrics every ddshark instance sends over
// OTLP (measurements ddshark.otlp.spans.{enqueued,sent,dropped,failed}, field
// "counter", cumulative): the last value per v.windowPeriod, per host and counter.
// Dropped or failed above zero means spans are missing in InfluxDB.
// Grafana variables: ${long_bucket}, v.timeRangeStart/Stop, v.windowPeriod.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement =~ /^ddshark\.otlp\.spans\./ and r._field == "counter")
    |> group(columns: ["host.name", "_measurement"])
    |> aggregateWindow(every: v.windowPeriod, fn: last, createEmpty: false)
    |> map(fn: (r) => ({r with series: r["host.name"] + " " + r._measurement}))
