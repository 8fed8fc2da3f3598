// DDS-layer latency per topic and interval (v.windowPeriod): the largest and the mean
// latency of the samples sent in each interval, from the per-second totals the latency
// join writes into ${long_bucket} (measurement dds_latency_1s: samples, latency_sum_ns,
// latency_max_ns per second, sender, receiver and topic), so its cost does not grow with
// the sample rate: the panel for long ranges at Autoware scale. Intervals are whole
// seconds (a sample counts in the second it was sent in).
// Series: "<topic> max" and "<topic> mean", in ns, at the end of each interval.
// ${clock} = raw: receive time on ${receiver}'s clock minus send time on ${sender}'s, as
// captured. ${clock} = corrected: minus the clock offset (${receiver}'s clock minus
// ${sender}'s) the latency join estimated last up to v.timeRangeStop (dds_clock_offset, its
// drift followed to each interval's end); nothing when there is no estimate for the pair.
// docs/latency.md.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver}, ${topic},
// ${clock} (raw or corrected), v.timeRangeStart/Stop,
// v.windowPeriod.
// The latest estimate (one small query; `last` is taken in storage): its time t0 and, with
// ${receiver}'s clock ahead of ${sender}'s, offset_ns and drift_ppb.
estimate = from(bucket: "${long_bucket}")
    |> range(start: 0, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_clock_offset" and (r._field == "offset_ns" or r._field == "drift_ppb"))
    |> filter(fn: (r) => "${clock}" == "corrected")
    |> filter(fn: (r) => r.host_a == "${sender}" and r.host_b == "${receiver}" or r.host_a == "${receiver}" and r.host_b == "${sender}")
    |> last()
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> group()
    |> sort(columns: ["_time"], desc: true)
    |> limit(n: 1)
    |> map(fn: (r) => {
        sign = if r.host_a == "${sender}" then 1 else -1
        return {t0: int(v: r._time), offset_ns: sign * r.offset_ns, drift_ppb: sign * r.drift_ppb}
    })
t0 = estimate |> findColumn(fn: (key) => true, column: "t0")
offset = estimate |> findColumn(fn: (key) => true, column: "offset_ns")
drift = estimate |> findColumn(fn: (key) => true, column: "drift_ppb")
ahead = (t) => if length(arr: t0) == 0 then 0 else
    offset[0] + int(v: float(v: int(v: t) - t0[0]) * float(v: drift[0]) / 1000000000.0)

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
    |> filter(fn: (r) => "${clock}" == "raw" or length(arr: t0) > 0)
    |> map(fn: (r) => ({r with _value: r._value - float(v: ahead(t: r._time))}))
    |> group(columns: ["series"])
    |> sort(columns: ["_time"])
