// DDS payload (sample) size over time on host ${sender}: one point per sample
// (writer_id, sn) at its first span; _value = serialized sample size in bytes
// (DATA_FRAG: sampleSize). One series per topic.
// Grafana variables: ${bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop.
from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans")
    |> filter(fn: (r) => r["host.name"] == "${sender}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/)
    |> filter(fn: (r) => r._field == "sn" or r._field == "sample_size")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => ({_time: r._time, writer_id: r.writer_id, sn: r.sn, _value: r.sample_size,
        topic_name: if exists r.topic_name then r.topic_name else "(unknown topic)"}))
    |> group(columns: ["writer_id", "topic_name"])
    |> sort(columns: ["_time"])
    |> unique(column: "sn")
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
