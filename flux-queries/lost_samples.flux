// Lost samples from ${sender} to ${receiver}: samples of the sender host's writers
// (see dds_latency.flux) that never became complete on the receiver host (no span
// there, or not all DDS fragments), counted per v.windowPeriod at t_send, per topic.
// Samples sent in the last moments of the time range may still be in flight.
// Tag filters before any pivot/join (as in dds_latency.flux).
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
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

sent = join.inner(
    left: firstPerHost
        |> map(fn: (r) => ({r with prefix: strings.substring(v: r.writer_id, start: 0, end: 24)}))
        |> group(),
    right: homes,
    on: (l, r) => l.prefix == r.prefix and l.host == r.host,
    as: (l, r) => l,
)
    |> filter(fn: (r) => r.host == "${sender}")
    |> group(columns: ["writer_id"])

// On ${receiver}: the earliest complete copy of each DATA_FRAG (DATA: of the sample),
// then the latest of those, if they cover the whole sample.
recvData = data
    |> filter(fn: (r) => r.host == "${receiver}")
    |> group(columns: ["writer_id"])
    |> sort(columns: ["end"])
    |> unique(column: "sn")
    |> map(fn: (r) => ({writer_id: r.writer_id, sn: r.sn, t_recv: r.end}))
recvFrag = frags
    |> filter(fn: (r) => r.host == "${receiver}")
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id"])
    |> sort(columns: ["end"])
    |> unique(column: "key")
    |> group(columns: ["writer_id", "sn"])
    |> reduce(
        identity: {t_recv: 0, covered: 0, total: 1},
        fn: (r, accumulator) => ({
            t_recv: if r.end > accumulator.t_recv then r.end else accumulator.t_recv,
            covered: accumulator.covered + r.nf,
            total: r.total,
        }),
    )
    |> filter(fn: (r) => r.covered >= r.total)
    |> map(fn: (r) => ({writer_id: r.writer_id, sn: r.sn, t_recv: r.t_recv}))
recv = union(tables: [recvData, recvFrag])
    |> group(columns: ["writer_id"])

join.left(
    left: sent,
    right: recv,
    on: (l, r) => l.sn == r.sn,
    as: (l, r) => ({
        _time: time(v: l.start),
        writer_id: l.writer_id,
        sn: l.sn,
        topic_name: l.topic_name,
        _value: if exists r.t_recv then 0 else 1,
    }),
)
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
