// InfluxDB task: materialises DDS latencies from the raw spans, incrementally.
// Created by scripts/stack/start.sh (and deploy/influxdb/init.sh in docker compose),
// with ${bucket} (raw spans) and ${long_bucket} (results, long retention) bound.
//
// Every run (every 5 s; now() = the run's scheduled time) reads the spans of a bounded
// window and writes, into ${long_bucket}:
//   measurement dds_latency             one point per sample (writer_id, sn) and receiver
//   measurement dds_submessage_latency  one point per DATA_FRAG (writer_id, sn,
//                                       fragment_starting_num) and receiver
// with _time = t_send, tags sender, receiver (host.name), topic_name, writer_id, slot
// (the slot of the sender's first span: with writer_id and _time it names the sample),
// fields latency_ns, t_recv_ns, sn (and fragment_starting_num). The series count is
// bounded by the deployment (host pairs × topics × writers × slots), and a point is
// fully determined by its sample, so a later run over an overlapping window rewrites
// the same points (same series and time): no duplicates.
//
// Definitions (those of `ddshark latency`, crates/ddshark/src/latency/join.rs):
//   t_send  = start (first IP fragment) of the earliest span of the sample on its
//             writer's host; the writer's host is, per participant (GUID prefix), the
//             host that saw most of its samples first (ties do not vote);
//   t_recv  = on each other host, per DATA_FRAG the earliest end (last IP fragment of a
//             complete datagram) carrying it, then the latest of those; only samples
//             whose DATA_FRAGs cover all ceil(sample_size / fragment_size) fragments
//             (DATA: one) have a latency. Retransmissions and late fragments count
//             as they arrive: earliest complete copy per fragment.
//   submessage level: per DATA_FRAG, earliest start on the sender, earliest end on
//             the receiver.
// Windows: a run writes the samples whose t_send lies in [now - settle - emit,
// now - settle) and reads spans from `horizon` before to `horizon` after that range,
// so each sample is written by emit / every = 2 runs, once all its spans are stored
// (settle covers ddshark's, the collector's and Telegraf's batching). A copy or
// repair that reaches a host more than `horizon` after the first transmission is
// not seen by the task (the ad-hoc queries in flux-queries/ see the whole window).
import "experimental"
import "join"
import "strings"

option task = {name: "ddshark-latency", every: 5s}

settle = 8s
emit = 10s
horizon = 2s

emitStop = experimental.subDuration(d: settle, from: now())
emitStart = experimental.subDuration(d: emit, from: emitStop)
readStart = experimental.subDuration(d: horizon, from: emitStart)
readStop = experimental.addDuration(d: horizon, to: emitStop)
emitStartNs = int(v: emitStart)
emitStopNs = int(v: emitStop)

raw = from(bucket: "${bucket}")
    |> range(start: readStart, stop: readStop)
    |> filter(fn: (r) => r._measurement == "spans")

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
    |> filter(fn: (r) => r.start >= emitStartNs and r.start < emitStopNs)
    |> group(columns: ["writer_id"])

// Per receiving host and sample: the earliest complete copy of each DATA_FRAG (DATA:
// of the sample), then the latest of those, if they cover the whole sample.
recvData = data
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "sn")
    |> map(fn: (r) => ({writer_id: r.writer_id, host: r.host, sn: r.sn, t_recv: r.end}))
fragFirst = frags
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "key")
recvFrag = fragFirst
    |> group(columns: ["writer_id", "host", "sn"])
    |> reduce(
        identity: {t_recv: 0, covered: 0, total: 1},
        fn: (r, accumulator) => ({
            t_recv: if r.end > accumulator.t_recv then r.end else accumulator.t_recv,
            covered: accumulator.covered + r.nf,
            total: r.total,
        }),
    )
    |> filter(fn: (r) => r.covered >= r.total)
    |> map(fn: (r) => ({writer_id: r.writer_id, host: r.host, sn: r.sn, t_recv: r.t_recv}))
recv = union(tables: [recvData, recvFrag])
    |> group(columns: ["writer_id"])

join.inner(
    left: sent,
    right: recv,
    on: (l, r) => l.sn == r.sn,
    as: (l, r) => ({
        _time: time(v: l.start),
        _measurement: "dds_latency",
        sender: l.host,
        receiver: r.host,
        topic_name: l.topic_name,
        writer_id: l.writer_id,
        slot: l.slot,
        latency_ns: r.t_recv - l.start,
        t_recv_ns: r.t_recv,
        sn: l.sn,
    }),
)
    |> filter(fn: (r) => r.sender != r.receiver)
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "receiver", "topic_name", "writer_id", "slot"],
        fieldFn: (r) => ({latency_ns: r.latency_ns, t_recv_ns: r.t_recv_ns, sn: r.sn}),
    )

// Submessage level: per DATA_FRAG, earliest start on the writer's host, earliest end elsewhere.
fragSent = join.inner(
    left: frags
        |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn), prefix: strings.substring(v: r.writer_id, start: 0, end: 24)}))
        |> group(columns: ["writer_id", "host"])
        |> sort(columns: ["start", "slot"])
        |> unique(column: "key")
        |> group(),
    right: homes,
    on: (l, r) => l.prefix == r.prefix and l.host == r.host,
    as: (l, r) => l,
)
    |> filter(fn: (r) => r.start >= emitStartNs and r.start < emitStopNs)
    |> group(columns: ["writer_id"])

join.inner(
    left: fragSent,
    right: fragFirst |> group(columns: ["writer_id"]),
    on: (l, r) => l.key == r.key,
    as: (l, r) => ({
        _time: time(v: l.start),
        _measurement: "dds_submessage_latency",
        sender: l.host,
        receiver: r.host,
        topic_name: l.topic_name,
        writer_id: l.writer_id,
        slot: l.slot,
        latency_ns: r.end - l.start,
        t_recv_ns: r.end,
        sn: l.sn,
        fragment_starting_num: l.fsn,
    }),
)
    |> filter(fn: (r) => r.sender != r.receiver)
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "receiver", "topic_name", "writer_id", "slot"],
        fieldFn: (r) => ({latency_ns: r.latency_ns, t_recv_ns: r.t_recv_ns, sn: r.sn, fragment_starting_num: r.fragment_starting_num}),
    )
