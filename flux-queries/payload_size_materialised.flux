// DDS payload (sample) size over time of ${sender}'s writers, as materialised by the
// latency task into ${long_bucket} (measurement dds_samples: one point per sample at its
// first span on its writer's host, field sample_size = serialized bytes, DATA_FRAG:
// sampleSize). One series per topic; payload_size.flux is the same, ad hoc from the raw
// spans.
// Grafana variables: ${long_bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_samples")
    |> filter(fn: (r) => r.sender == "${sender}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> filter(fn: (r) => r._field == "sample_size")
    |> map(fn: (r) => ({_time: r._time, _value: r._value, writer_id: r.writer_id, topic_name: r.topic_name}))
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
