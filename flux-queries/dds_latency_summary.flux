// DDS-layer latency per topic and interval (v.windowPeriod): the largest and the mean
// latency of the samples sent in each interval, from the materialised latencies in
// ${long_bucket} (measurement dds_latency). For long time ranges at Autoware scale,
// where one point per sample is more than a browser can draw.
// Series: "<topic> max" and "<topic> mean", in ns, at the end of each interval.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
lat = from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_latency" and r._field == "latency_ns")
    |> filter(fn: (r) => r.sender == "${sender}" and r.receiver == "${receiver}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> group(columns: ["topic_name"])

union(
    tables: [
        lat |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)
            |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value), series: r.topic_name + " max"})),
        lat |> aggregateWindow(every: v.windowPeriod, fn: mean, createEmpty: false)
            |> map(fn: (r) => ({_time: r._time, _value: r._value, series: r.topic_name + " mean"})),
    ],
)
    |> group(columns: ["series"])
    |> sort(columns: ["_time"])
