// The latency join, the InfluxDB writer behind the collector (its own counters, measurement
// ddshark_join in ${bucket}): points written, refused by InfluxDB, given up (stopped while
// InfluxDB could not take them), exports answered "retry later" for a full queue, points
// waiting, and ddshark's metric points and log records refused; the last value per
// v.windowPeriod (summed over the join shards). Refused or given up above zero means points
// are missing in InfluxDB.
// Grafana variables: ${bucket}, v.timeRangeStart/Stop, v.windowPeriod.
from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "ddshark_join")
    |> filter(fn: (r) => r._field == "influx_points_written" or r._field == "influx_points_rejected" or r._field == "influx_points_abandoned" or r._field == "influx_queue_full" or r._field == "influx_queued_points" or r._field == "telemetry_rejected")
    // (the last value per join shard, summed over the shards: tag shard, docs/fleet.md)
    |> group(columns: ["_field", "shard"])
    |> aggregateWindow(every: v.windowPeriod, fn: last, createEmpty: false)
    |> group(columns: ["_field", "_time"])
    |> sum()
    |> group(columns: ["_field"])
    |> sort(columns: ["_time"])
    |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value), series: r._field}))
    |> group(columns: ["series"])
