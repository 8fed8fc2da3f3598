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
