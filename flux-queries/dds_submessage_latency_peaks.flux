// DDS submessage latency, the largest per writer and interval (v.windowPeriod), from the
// per-DATA_FRAG points the latency join writes into ${long_bucket}
// (dds_submessage_latency): the panel "per DATA_FRAG". Zoomed in, each point is one
// DATA_FRAG; wider, the slowest of its interval. The maximum is taken inside InfluxDB's
// storage, so the cost follows the number of intervals, not of DATA_FRAGs. Every
// DATA_FRAG's own row: dds_submessage_latency_materialised.flux.
// Series per topic (and writer): _time = end of the interval, _value = latency_ns.
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

from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_submessage_latency" and r._field == "latency_ns")
    |> filter(fn: (r) => r.sender == "${sender}" and r.receiver == "${receiver}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)
    // Samples a writer sent at one instant are points of different `slot`s (series): the
    // largest of them per interval.
    |> group(columns: ["topic_name", "writer_id"])
    |> sort(columns: ["_time", "_value"], desc: true)
    |> unique(column: "_time")
    |> keep(columns: ["_time", "_value", "topic_name", "writer_id"])
    |> filter(fn: (r) => "${clock}" == "raw" or length(arr: t0) > 0)
    |> map(fn: (r) => ({r with _value: r._value - ahead(t: r._time)}))
    |> sort(columns: ["_time"])
