// DDS payload (sample) size over time on host ${sender}: one point per sample
// (writer_id, sn) at its first DATA / first DATA_FRAG span; _value = serialized
// sample size in bytes (DATA_FRAG: sampleSize). One series per topic.
// Grafana variables: ${bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop.
import "experimental/json"

from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r._field == "attributes")
    |> filter(fn: (r) => r["host.name"] == "${sender}")
    |> filter(fn: (r) => r.fragment_starting_num == "0" or r.fragment_starting_num == "1")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/)
    |> group()
    |> map(fn: (r) => {
        a = json.parse(data: bytes(v: r._value))
        return {
            _time: r._time,
            writer_id: r.writer_id,
            sn: r.sn,
            topic_name: if exists r.topic_name then r.topic_name else "(unknown topic)",
            _value: if exists a.sample_size then int(v: a.sample_size) else 0,
        }
    })
    |> group(columns: ["writer_id", "sn"])
    |> first()
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
