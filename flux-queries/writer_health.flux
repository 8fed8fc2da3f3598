// Telegraf, the InfluxDB writer behind the collector (its own counters, measurement
// internal_write in ${bucket}): metrics written and dropped (buffer full while InfluxDB
// was slow) per output, and the buffer's fill level; the last value per v.windowPeriod.
// Dropped above zero means spans are missing in InfluxDB.
// Grafana variables: ${bucket}, v.timeRangeStart/Stop, v.windowPeriod.
from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "internal_write")
    |> filter(fn: (r) => r._field == "metrics_written" or r._field == "metrics_dropped" or r._field == "buffer_size")
    |> group(columns: ["alias", "_field"])
    |> aggregateWindow(every: v.windowPeriod, fn: last, createEmpty: false)
    |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value), series: (if exists r.alias then r.alias else "") + " " + r._field}))
    |> group(columns: ["series"])
