// DDS submessage latency per DATA_FRAG, ad hoc over the dashboard's time range, from the
// raw spans; same definition as `ddshark latency --level submessage` and the latency
// task's dds_submessage_latency (flux-queries/tasks/materialise_latency.flux):
//   t_send = start (first IP fragment) of the earliest span of (writer_id, sn,
//            fragment_starting_num) on ${sender};
//   t_recv = earliest end (last IP fragment of a complete datagram) of a span of the
//            same DATA_FRAG on ${receiver};
//   latency = t_recv - t_send (ns). DATA submessages are the sample level (dds_latency.flux).
// Writers of ${sender} only (as in dds_latency.flux). Tag filters before any pivot/join.
// One row per DATA_FRAG: _time = t_send, _value = latency_ns, with writer_id, sn,
// fragment_starting_num, topic_name; one series per topic.
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop.
import "join"
import "strings"

raw = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans")
    // Tag filters first: hosts, then the topic (the receiver may not know the topic
    // of a writer whose discovery it missed; the sender decides).
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/ or (r["host.name"] == "${receiver}" and not exists r.topic_name))

// One row per DATA span: host, writer_id, topic_name, slot, sn, start, end.
data = raw
    |> filter(fn: (r) => r["span.name"] == "DATA")
    |> filter(fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => ({
        host: r["host.name"],
        writer_id: r.writer_id,
        topic_name: if exists r.topic_name then r.topic_name else "",
        slot: r.slot,
        sn: r.sn,
        fsn: 0,
        nf: 1,
        total: 1,
        start: int(v: r._time),
        end: r.end_time_unix_nano,
    }))

// One row per usable DATA_FRAG span (impossible numbers are ignored, as by ddshark).
frags = raw
    |> filter(fn: (r) => r["span.name"] == "DATA_FRAG")
    |> filter(
        fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano" or r._field == "fragment_starting_num"
            or r._field == "frags_in_submessage" or r._field == "fragment_size" or r._field == "sample_size",
    )
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => {
        fz = if exists r.fragment_size then r.fragment_size else 0
        ss = if exists r.sample_size then r.sample_size else 0
        total = if fz > 0 then (ss + fz - 1) / fz else 0
        return {
            host: r["host.name"],
            writer_id: r.writer_id,
            topic_name: if exists r.topic_name then r.topic_name else "",
            slot: r.slot,
            sn: r.sn,
            fsn: r.fragment_starting_num,
            nf: r.frags_in_submessage,
            total: total,
            start: int(v: r._time),
            end: r.end_time_unix_nano,
        }
    })
    |> filter(fn: (r) => r.fsn >= 1 and r.nf >= 1 and r.total > 0 and r.fsn + r.nf - 1 <= r.total)

spans = union(tables: [data, frags])
    |> group(columns: ["writer_id", "host"])

// Per host and sample: its earliest span (ties: lowest slot).
firstPerHost = spans
    |> sort(columns: ["start", "slot"])
    |> unique(column: "sn")

// The host that saw each sample first; samples two hosts saw at the same instant do not vote.
earliest = firstPerHost
    |> group(columns: ["writer_id"])
    |> sort(columns: ["start", "host"])
    |> unique(column: "sn")
ties = join.inner(
    left: firstPerHost |> group(columns: ["writer_id"]),
    right: earliest,
    on: (l, r) => l.sn == r.sn and l.start == r.start,
    as: (l, r) => ({writer_id: l.writer_id, sn: l.sn, tie: l.host != r.host}),
)
    |> filter(fn: (r) => r.tie)
homes = join.left(
    left: earliest,
    right: ties,
    on: (l, r) => l.sn == r.sn,
    as: (l, r) => ({prefix: strings.substring(v: l.writer_id, start: 0, end: 24), host: l.host, sn: l.sn, tie: exists r.tie}),
)
    |> filter(fn: (r) => not r.tie)
    |> group(columns: ["prefix", "host"])
    |> count(column: "sn")
    |> group(columns: ["prefix"])
    |> sort(columns: ["sn", "host"], desc: true)
    |> limit(n: 1)
    |> keep(columns: ["prefix", "host"])
    |> group()

fragSent = join.inner(
    left: frags
        |> filter(fn: (r) => r.host == "${sender}")
        |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn), prefix: strings.substring(v: r.writer_id, start: 0, end: 24)}))
        |> group(columns: ["writer_id"])
        |> sort(columns: ["start", "slot"])
        |> unique(column: "key")
        |> group(),
    right: homes |> filter(fn: (r) => r.host == "${sender}"),
    on: (l, r) => l.prefix == r.prefix,
    as: (l, r) => l,
)
    |> group(columns: ["writer_id"])
fragRecv = frags
    |> filter(fn: (r) => r.host == "${receiver}")
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id"])
    |> sort(columns: ["end"])
    |> unique(column: "key")

join.inner(
    left: fragSent,
    right: fragRecv,
    on: (l, r) => l.key == r.key,
    as: (l, r) => ({
        _time: time(v: l.start),
        _value: r.end - l.start,
        writer_id: l.writer_id,
        sn: l.sn,
        fragment_starting_num: l.fsn,
        topic_name: l.topic_name,
    }),
)
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
