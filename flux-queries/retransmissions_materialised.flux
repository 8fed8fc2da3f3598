// Retransmissions (repairs) by ${sender}'s writers, as materialised by the latency task
// into ${long_bucket} (measurement dds_repairs: per second and writer, field repairs =
// DATA/DATA_FRAG spans on the writer's host that re-send a DATA_FRAG (DATA: the sample)
// already sent to the same destination or to a multicast group, `ddshark latency`'s
// repairs_sender). Summed per v.windowPeriod and topic; retransmissions.flux is the same,
// ad hoc from the raw spans.
// Grafana variables: ${long_bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop, v.windowPeriod.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_repairs")
    |> filter(fn: (r) => r.sender == "${sender}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> filter(fn: (r) => r._field == "repairs")
    |> group(columns: ["topic_name"])
    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
