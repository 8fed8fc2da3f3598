// DDS submessage latency per DATA_FRAG, as materialised by the latency task into
// ${long_bucket} (measurement dds_submessage_latency); the numbers of
// dds_submessage_latency.flux and `ddshark latency --level submessage`.
// One row per DATA_FRAG: _time = t_send, _value = latency_ns, with writer_id, sn,
// fragment_starting_num, topic_name; one series per topic.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_submessage_latency")
    |> filter(fn: (r) => r.sender == "${sender}" and r.receiver == "${receiver}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> filter(fn: (r) => r._field == "latency_ns" or r._field == "sn" or r._field == "fragment_starting_num")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => ({_time: r._time, _value: r.latency_ns, writer_id: r.writer_id, sn: r.sn, fragment_starting_num: r.fragment_starting_num, topic_name: r.topic_name}))
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
