// Retransmissions (repairs) on host ${sender}: a DATA/DATA_FRAG span whose
// (writer_id, sn, fragment_starting_num) was already sent to the same destination
// (attribute dst) is a repair. Counted per v.windowPeriod at the time of the first
// transmission, per topic.
// Grafana variables: ${bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop, v.windowPeriod.
import "experimental/json"

from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r._field == "attributes")
    |> filter(fn: (r) => r["host.name"] == "${sender}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/)
    |> group()
    |> map(fn: (r) => {
        a = json.parse(data: bytes(v: r._value))
        return {
            _time: r._time,
            key: r.writer_id + "/" + r.sn + "/" + r.fragment_starting_num + "/" + (if exists a.dst then string(v: a.dst) else ""),
            topic_name: if exists r.topic_name then r.topic_name else "(unknown topic)",
            _value: 1,
        }
    })
    |> group(columns: ["key", "topic_name"])
    |> reduce(
        identity: {_time: time(v: 0), _value: -1, first: true},
        fn: (r, accumulator) => ({
            _time: if accumulator.first or r._time < accumulator._time then r._time else accumulator._time,
            _value: accumulator._value + 1,
            first: false,
        }),
    )
    |> drop(columns: ["first", "key"])
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
