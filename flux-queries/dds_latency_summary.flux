// DDS-layer latency per topic and interval (v.windowPeriod): the largest and the mean
// latency of the samples sent in each interval, from the per-second totals the latency
// join writes into ${long_bucket} (measurement dds_latency_1s: samples, latency_sum_ns,
// latency_max_ns per second, sender, receiver and topic), so its cost does not grow with
// the sample rate: the panel for long ranges at Autoware scale. Intervals are whole
// seconds (a sample counts in the second it was sent in).
// Series: "<topic> max" and "<topic> mean", in ns, at the end of each interval.
// ${clock} = raw: receive time on ${receiver}'s clock minus send time on ${sender}'s, as
// captured. ${clock} = corrected: as `ddshark latency --offset auto`, minus the clock
// offset (${receiver}'s clock minus ${sender}'s) the latency join estimated last up to
// v.timeRangeStop (dds_clock_offset, its drift followed to each interval's end), but only
// when that estimate's interval excludes 0; else raw. Column clock_correction says which
// and why ("corrected by the estimate 12.346 ms …: every latency ± 596.4 µs", "not
// corrected: the estimate 970.0 µs ± 1.045 ms holds 0 …"), uncertainty_ns is the ± of
// the corrected latencies (the estimate's half-width; only when corrected). Nothing when
// there is no estimate for the pair. docs/latency.md.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver}, ${topic},
// ${clock} (raw or corrected), v.timeRangeStart/Stop,
// v.windowPeriod.
// The latest estimate (one small query; `last` is taken in storage): its time t0 and, with
// ${receiver}'s clock ahead of ${sender}'s, offset_ns, drift_ppb and half_width_ns (the true
// offset lies within ± that).
estimate = from(bucket: "${long_bucket}")
    |> range(start: 0, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_clock_offset" and (r._field == "offset_ns" or r._field == "drift_ppb" or r._field == "half_width_ns"
        or r._field == "min_a_to_b_ns" or r._field == "min_b_to_a_ns"))
    |> filter(fn: (r) => "${clock}" == "corrected")
    |> filter(fn: (r) => r.host_a == "${sender}" and r.host_b == "${receiver}" or r.host_a == "${receiver}" and r.host_b == "${sender}")
    |> last()
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> group()
    |> map(fn: (r) => {
        sign = if r.host_a == "${sender}" then 1 else -1
        return {t0: int(v: r._time), offset_ns: sign * r.offset_ns, drift_ppb: sign * r.drift_ppb, half_width_ns: r.half_width_ns,
            fwd: if sign == 1 then r.min_a_to_b_ns else r.min_b_to_a_ns, back: if sign == 1 then r.min_b_to_a_ns else r.min_a_to_b_ns}
    })
    // One estimate per join shard (tag shard, docs/fleet.md): the latest, or with several
    // shards and no drift the estimate from the smallest delay each way over all of them
    // (the minimum of the shards' minima: what one join would have estimated).
    |> reduce(identity: {n: 0, t0: 0, offset_ns: 0, drift_ppb: 0, half_width_ns: 0, fwd: 9223372036854775807, back: 9223372036854775807, drifting: false},
        fn: (r, accumulator) => {
            latest = r.t0 >= accumulator.t0
            return {n: accumulator.n + 1, t0: if latest then r.t0 else accumulator.t0,
                offset_ns: if latest then r.offset_ns else accumulator.offset_ns,
                drift_ppb: if latest then r.drift_ppb else accumulator.drift_ppb,
                half_width_ns: if latest then r.half_width_ns else accumulator.half_width_ns,
                fwd: if r.fwd < accumulator.fwd then r.fwd else accumulator.fwd,
                back: if r.back < accumulator.back then r.back else accumulator.back,
                drifting: accumulator.drifting or r.drift_ppb != 0}
        })
    |> map(fn: (r) => {
        merge = r.n > 1 and not r.drifting
        // (latency_core's rounding: the middle half away from zero, the half-width up)
        d = r.fwd - r.back
        s = r.fwd + r.back
        return {t0: r.t0, drift_ppb: r.drift_ppb,
            offset_ns: if not merge then r.offset_ns else if d >= 0 then (d + 1) / 2 else 0 - (1 - d) / 2,
            half_width_ns: if not merge then r.half_width_ns else if s >= 0 then (s + 1) / 2 else 0 - (0 - s) / 2}
    })
t0 = estimate |> findColumn(fn: (key) => true, column: "t0")
offset = estimate |> findColumn(fn: (key) => true, column: "offset_ns")
drift = estimate |> findColumn(fn: (key) => true, column: "drift_ppb")
half = estimate |> findColumn(fn: (key) => true, column: "half_width_ns")
// `ddshark latency --offset auto`'s rule (docs/latency.md, "Correcting"): correct only when
// the estimate's interval excludes 0; when it holds 0 the clocks may agree, and moving every
// latency by the estimate could make right latencies wrong: they stay raw, and say why.
applies = if length(arr: t0) == 0 then false else offset[0] > half[0] or offset[0] < 0 - half[0]
ahead = (t) => if not applies then 0 else
    offset[0] + int(v: float(v: int(v: t) - t0[0]) * float(v: drift[0]) / 1000000000.0)
// Durations as `ddshark latency` prints them: 596.4 µs, 12.346 ms, 37.000 s.
pad3 = (n) => if n < 10 then "00" + string(v: n) else if n < 100 then "0" + string(v: n) else string(v: n)
human = (ns) => {
    a = if ns < 0 then 0 - ns else ns
    sign = if ns < 0 then "-" else ""
    return if a < 1000 then sign + string(v: a) + " ns"
        else if a < 1000000 then sign + string(v: (a + 50) / 1000) + "." + string(v: (a + 50) / 100 % 10) + " µs"
        else if a < 1000000000 then sign + string(v: (a + 500) / 1000000) + "." + pad3(n: (a + 500) / 1000 % 1000) + " ms"
        else sign + string(v: (a + 500000) / 1000000000) + "." + pad3(n: (a + 500000) / 1000000 % 1000) + " s"
}
// The column clock_correction (a label of every series in Grafana): what was done and why;
// uncertainty_ns: the ± of every corrected latency (the estimate's half-width), only when
// corrected, as `ddshark latency --offset auto`'s latency_uncertainty_ns.
correction = if length(arr: t0) == 0 then ""
    else if applies then "corrected by the estimate " + human(ns: offset[0])
        + (if drift[0] == 0 then "" else " at " + string(v: time(v: t0[0])) + ", drifting "
            + (if drift[0] < 0 then "-" else "+") + human(ns: if drift[0] < 0 then 0 - drift[0] else drift[0]) + "/s")
        + ": every latency ± " + human(ns: half[0])
    else "not corrected: the estimate " + human(ns: offset[0]) + " ± " + human(ns: half[0])
        + " holds 0 (the clocks may agree): raw latencies"
uncertainty = if applies then half[0] else 0

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
    |> map(fn: (r) => ({r with _value: r._value - float(v: ahead(t: r._time)),
        clock_correction: correction, uncertainty_ns: uncertainty}))
    |> drop(fn: (column) => (column == "clock_correction" and "${clock}" == "raw")
        or (column == "uncertainty_ns" and not applies))
    |> group(columns: ["series"])
    |> sort(columns: ["_time"])
