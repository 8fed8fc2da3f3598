// Telegraf's latency join (deploy/telegraf/latency_join.star; its point ddshark_join in
// ${bucket}, one per push): samples and DATA_FRAGs waiting, joined early because the
// join was full (then latencies may be missing: raise DDSHARK_JOIN_MAX_PENDING), and
// points written; the last value per v.windowPeriod.
// Grafana variables: ${bucket}, v.timeRangeStart/Stop, v.windowPeriod.
from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "ddshark_join")
    |> filter(fn: (r) => r._field == "pending_samples" or r._field == "pending_frags" or r._field == "early"
        or r._field == "points")
    |> group(columns: ["_field"])
    |> aggregateWindow(every: v.windowPeriod, fn: last, createEmpty: false)
    |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value), series: r._field}))
    |> group(columns: ["series"])
