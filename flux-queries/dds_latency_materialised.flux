// DDS-layer latency per sample, as materialised by the latency task
// (flux-queries/tasks/materialise_latency.flux) into ${long_bucket}: no join at query
// time, so it answers in about a second for minutes of Autoware-scale traffic. The
// numbers are those of dds_latency.flux and `ddshark latency --level sample`.
// One row per sample: _time = t_send (ns), _value = latency_ns, with writer_id, sn,
// topic_name; one series (table) per topic.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver} (host.name), ${topic} (regex,
// All = .*), v.timeRangeStart / v.timeRangeStop.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_latency")
    |> filter(fn: (r) => r.sender == "${sender}" and r.receiver == "${receiver}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> filter(fn: (r) => r._field == "latency_ns" or r._field == "sn")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => ({_time: r._time, _value: r.latency_ns, writer_id: r.writer_id, sn: r.sn, topic_name: r.topic_name}))
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
