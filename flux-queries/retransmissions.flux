// Retransmissions (repairs) on host ${sender}: a DATA/DATA_FRAG span whose
// (writer_id, sn, fragment_starting_num) was already sent to the same destination
// (field dst) is a repair. Counted per v.windowPeriod at the time of the repair, per
// topic (spans minus first transmissions, so no per-sample grouping is needed).
// Grafana variables: ${bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop, v.windowPeriod.
spans = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans")
    |> filter(fn: (r) => r["host.name"] == "${sender}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/)
    |> filter(fn: (r) => r._field == "sn" or r._field == "fragment_starting_num" or r._field == "dst")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => ({
        _time: r._time,
        writer_id: r.writer_id,
        key: string(v: r.sn) + "/" + string(v: r.fragment_starting_num) + "/" + r.dst,
        topic_name: if exists r.topic_name then r.topic_name else "(unknown topic)",
    }))
    |> group(columns: ["writer_id", "topic_name"])

union(
    tables: [
        spans |> map(fn: (r) => ({r with _value: 1})),
        spans |> sort(columns: ["_time"]) |> unique(column: "key") |> map(fn: (r) => ({r with _value: -1})),
    ],
)
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
