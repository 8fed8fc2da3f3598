// Lost samples from ${sender} to ${receiver}: samples of the sender host's writers
// (see dds_latency.flux) that never became complete on the receiver host (no span
// there, or not all DDS fragments), counted per v.windowPeriod at t_send, per topic.
// Samples sent in the last moments of the time range may still be in flight.
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
import "join"
import "experimental/json"

spans = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans")
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")

// One row per usable DATA/DATA_FRAG span (DATA_FRAGs with impossible numbers are
// ignored, as by ddshark and the tshark oracle).
ends = spans
    |> filter(fn: (r) => r._field == "end_time_unix_nano" or r._field == "attributes" or r._field == "span.name")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> group()
    |> map(fn: (r) => {
        a = json.parse(data: bytes(v: r.attributes))
        isData = r["span.name"] == "DATA"
        fs = int(v: r.fragment_starting_num)
        nf = if exists a.frags_in_submessage then int(v: a.frags_in_submessage) else 1
        ss = if exists a.sample_size then int(v: a.sample_size) else 0
        fz = if exists a.fragment_size then int(v: a.fragment_size) else 0
        total = if isData then 1 else if fz > 0 then (ss + fz - 1) / fz else 0
        return {
            host: r["host.name"],
            writer_id: r.writer_id,
            sn: r.sn,
            fsn: r.fragment_starting_num,
            topic_name: if exists r.topic_name then r.topic_name else "",
            start: int(v: r._time),
            end: r.end_time_unix_nano,
            nf: if isData then 1 else nf,
            total: total,
            usable: isData or (fs >= 1 and nf >= 1 and fz > 0 and ss > 0 and fs + nf - 1 <= total),
        }
    })
    |> filter(fn: (r) => r.usable)

firsts = (host) => ends
    |> filter(fn: (r) => r.host == host)
    |> group(columns: ["writer_id", "sn"])
    |> min(column: "start")
    |> group()

snd = firsts(host: "${sender}")
rcvFirst = firsts(host: "${receiver}")

// Writers of the sender host: most of their samples are seen there first.
senderWriters = join.inner(
    left: snd,
    right: rcvFirst,
    on: (l, r) => l.writer_id == r.writer_id and l.sn == r.sn,
    as: (l, r) => ({writer_id: l.writer_id, vote: if l.start < r.start then 1 else if l.start > r.start then -1 else 0}),
)
    |> group(columns: ["writer_id"])
    |> sum(column: "vote")
    |> group()
    |> filter(fn: (r) => r.vote > 0)

sent = join.inner(
    left: snd |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/),
    right: senderWriters,
    on: (l, r) => l.writer_id == r.writer_id,
    as: (l, r) => ({writer_id: l.writer_id, sn: l.sn, topic_name: l.topic_name, t_send: l.start}),
)

recv = ends
    |> filter(fn: (r) => r.host == "${receiver}")
    |> group(columns: ["writer_id", "sn", "fsn"])
    |> min(column: "end")
    |> group(columns: ["writer_id", "sn"])
    |> reduce(
        identity: {t_recv: 0, covered: 0, total: 1},
        fn: (r, accumulator) => ({
            t_recv: if r.end > accumulator.t_recv then r.end else accumulator.t_recv,
            covered: accumulator.covered + r.nf,
            total: r.total,
        }),
    )
    |> group()
    |> filter(fn: (r) => r.covered >= r.total)

join.left(
    left: sent,
    right: recv,
    on: (l, r) => l.writer_id == r.writer_id and l.sn == r.sn,
    as: (l, r) => ({
        _time: time(v: l.t_send),
        writer_id: l.writer_id,
        sn: l.sn,
        topic_name: l.topic_name,
        _value: if exists r.t_recv then 0 else 1,
    }),
)
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
