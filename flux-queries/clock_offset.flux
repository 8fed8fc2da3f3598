// The clock offset between ${sender} and ${receiver} as the latency join estimates it from
// the traffic (latency_core: NTP's estimate from the minimum one-way delay each way over the
// last 5 minutes, drift followed): ${receiver}'s clock minus ${sender}'s, with the interval
// that holds the true offset (where within it depends on the path's asymmetry, which traffic
// cannot show). Raw latencies (receiver's clock minus sender's) on ${sender} -> ${receiver}
// read this much too high (too low when negative); the latency panels subtract it when
// their variable clock is "corrected" and lower..upper excludes 0 (as `ddshark latency
// --offset auto`; when it holds 0 they stay raw and say so).
// Grafana variables: ${long_bucket}, ${sender}, ${receiver} (host.name),
// v.timeRangeStart / v.timeRangeStop.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_clock_offset")
    |> filter(fn: (r) => r.host_a == "${sender}" and r.host_b == "${receiver}" or r.host_a == "${receiver}" and r.host_b == "${sender}")
    |> filter(fn: (r) => r._field == "offset_ns" or r._field == "half_width_ns")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => {
        offset = if r.host_a == "${sender}" then r.offset_ns else - r.offset_ns
        return {_time: r._time, offset: offset, lower: offset - r.half_width_ns, upper: offset + r.half_width_ns}
    })
    |> group()
    |> sort(columns: ["_time"])
