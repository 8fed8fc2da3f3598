// DDS submessage latency per DATA_FRAG (thesis 3.2.5), same definition as
// `ddshark latency --level submessage`:
//   t_send = start (first IP fragment) of the earliest span of (writer_id, sn,
//            fragment_starting_num) on the sender host;
//   t_recv = earliest end (last IP fragment of a complete datagram) of a span of the
//            same DATA_FRAG on the receiver host;
//   latency = t_recv - t_send (ns). DATA submessages come out with fragment_starting_num 0.
// Writers of the sender host only (majority vote per writer_id, as in dds_latency.flux).
// One row per DATA_FRAG: _time = t_send, _value = latency_ns; one series per topic.
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop.
import "join"
import "experimental/json"

spans = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans")
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")

ends = spans
    |> filter(fn: (r) => r._field == "end_time_unix_nano")
    |> group()
    |> map(fn: (r) => ({
        host: r["host.name"],
        writer_id: r.writer_id,
        sn: r.sn,
        topic_name: if exists r.topic_name then r.topic_name else "",
        fsn: r.fragment_starting_num,
        start: int(v: r._time),
        end: r._value,
    }))

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
    as: (l, r) => ({writer_id: l.writer_id, sn: l.sn, topic_name: l.topic_name}),
)

sendFrag = ends
    |> filter(fn: (r) => r.host == "${sender}")
    |> group(columns: ["writer_id", "sn", "fsn"])
    |> min(column: "start")
    |> group()

sentFrag = join.inner(
    left: sendFrag,
    right: sent,
    on: (l, r) => l.writer_id == r.writer_id and l.sn == r.sn,
    as: (l, r) => ({writer_id: l.writer_id, sn: l.sn, fsn: l.fsn, topic_name: r.topic_name, t_send: l.start}),
)

recvFrag = ends
    |> filter(fn: (r) => r.host == "${receiver}")
    |> group(columns: ["writer_id", "sn", "fsn"])
    |> min(column: "end")
    |> group()

join.inner(
    left: sentFrag,
    right: recvFrag,
    on: (l, r) => l.writer_id == r.writer_id and l.sn == r.sn and l.fsn == r.fsn,
    as: (l, r) => ({
        _time: time(v: l.t_send),
        _value: r.end - l.t_send,
        writer_id: l.writer_id,
        sn: l.sn,
        fragment_starting_num: l.fsn,
        topic_name: l.topic_name,
    }),
)
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
