// DDS-layer latency per topic and interval (v.windowPeriod): the largest and the mean
// latency of the samples sent in each interval, from the per-second totals the latency
// join writes into ${long_bucket} (measurement dds_latency_1s: samples, latency_sum_ns,
// latency_max_ns per second, sender, receiver and topic), so its cost does not grow with
// the sample rate: the panel for long ranges at Autoware scale. Intervals are whole
// seconds (a sample counts in the second it was sent in).
// Series: "<topic> max" and "<topic> mean", in ns, at the end of each interval.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
seconds = from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_latency_1s")
    |> filter(fn: (r) => r.sender == "${sender}" and r.receiver == "${receiver}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> group(columns: ["topic_name", "_field"])

union(
    tables: [
        seconds
            |> filter(fn: (r) => r._field == "latency_max_ns")
            |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)
            |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value), series: r.topic_name + " max"})),
        seconds
            |> filter(fn: (r) => r._field == "latency_sum_ns" or r._field == "samples")
            |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
            |> pivot(rowKey: ["_time", "topic_name"], columnKey: ["_field"], valueColumn: "_value")
            |> map(fn: (r) => ({_time: r._time, _value: float(v: r.latency_sum_ns) / float(v: r.samples),
                series: r.topic_name + " mean"})),
    ],
)
    |> group(columns: ["series"])
    |> sort(columns: ["_time"])
