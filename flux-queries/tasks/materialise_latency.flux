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
//             host that saw most of its samples in the window first (ddshark does not
//             count samples two hosts saw at the same nanosecond; here the host name
//             decides such a tie);
//   t_recv  = on each other host, per DATA_FRAG the earliest end (last IP fragment of a
//             complete datagram) carrying it, then the latest of those; only samples
//             whose DATA_FRAGs cover all ceil(sample_size / fragment_size) fragments
//             (DATA: one) have a latency. Retransmissions and late fragments count
//             as they arrive: earliest complete copy per fragment.
//   submessage level: per DATA_FRAG, earliest start on the sender, earliest end on
//             the receiver.
// Windows: a run writes the samples whose t_send lies in [now - settle - emit,
// now - settle) and reads spans from `horizon` before to `horizon` (DATA_FRAG:
// `fragHorizon`) after that range;
// consecutive runs cover consecutive ranges (emit = every), once all spans are stored
// (settle covers ddshark's, the collector's and Telegraf's batching). A run over a
// window already done rewrites the same points. A copy or
// repair that reaches a host more than `horizon` after the first transmission is
// (DATA_FRAG: `fragHorizon`) is not seen by the task (the ad-hoc queries in
// flux-queries/ see the whole window).
import "array"
import "dict"
import "experimental"
import "strings"

option task = {name: "ddshark-latency", every: 10s}

settle = 20s
emit = 10s
// Spans read before the emitted range (earlier copies of a sample) and after it (the
// receivers' copies): DATA arrive within `horizon`; a DATA_FRAG sample of megabytes may
// take seconds to complete (measured: up to 10.3 s for a 3.2 MB point cloud replayed on
// this 2-core machine), so DATA_FRAG spans are read `fragHorizon` after it.
horizon = 2s
fragHorizon = 15s

emitStop = experimental.subDuration(d: settle, from: now())
emitStart = experimental.subDuration(d: emit, from: emitStop)
readStart = experimental.subDuration(d: horizon, from: emitStart)
readStop = experimental.addDuration(d: horizon, to: emitStop)
fragReadStop = experimental.addDuration(d: fragHorizon, to: emitStop)
emitStartNs = int(v: emitStart)
emitStopNs = int(v: emitStop)

// One row per DATA span: host, writer_id, topic_name, slot, sn, start, end. (Each branch
// has its own from() so that every tag and field filter is pushed down to storage.)
recentDataSpans = from(bucket: "${bucket}")
    |> range(start: readStart, stop: readStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA")
    |> filter(fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano")
// task only: begin
// Discovery writers re-send SPDP with the same SN every few seconds, and `ddshark latency`
// keeps a sample open until 10 s without news of it: their earlier copies count too.
earlierDiscovery = from(bucket: "${bucket}")
    |> range(start: experimental.subDuration(d: 10s, from: readStart), stop: readStart)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA" and r.traffic_type == "discovery")
    |> filter(fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano")
dataSpans = union(tables: [recentDataSpans, earlierDiscovery])
// task only: end
data = dataSpans
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
frags = from(bucket: "${bucket}")
    |> range(start: readStart, stop: fragReadStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA_FRAG")
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

// Per participant (GUID prefix): the host that saw most of its samples first, as a
// dictionary prefix -> host (a handful of entries: one per participant).
homeList = firstPerHost
    |> group(columns: ["writer_id"])
    |> sort(columns: ["start", "host"])
    |> unique(column: "sn")
    |> map(fn: (r) => ({prefix: strings.substring(v: r.writer_id, start: 0, end: 24), host: r.host, sn: r.sn}))
    |> group(columns: ["prefix", "host"])
    |> count(column: "sn")
    |> group(columns: ["prefix"])
    |> sort(columns: ["sn", "host"], desc: true)
    |> limit(n: 1)
    |> map(fn: (r) => ({_value: r.prefix + "|" + r.host}))
    |> group()
    |> findColumn(fn: (key) => true, column: "_value")
// (a placeholder entry first: an empty list would not type as a dictionary)
homes = dict.fromList(
    pairs: array.map(arr: array.concat(arr: ["-|-"], v: homeList), fn: (x) => {
        kv = strings.split(v: x, t: "|")
        return {key: kv[0], value: kv[1]}
    }),
)
homeOf = (w) => dict.get(dict: homes, key: strings.substring(v: w, start: 0, end: 24), default: "")

// Topic of each writer as its own host names it (receivers may not know it).
topicList = firstPerHost
    |> filter(fn: (r) => r.topic_name != "" and r.host == homeOf(w: r.writer_id))
    |> first(column: "sn")
    |> map(fn: (r) => ({_value: r.writer_id + "|" + r.topic_name}))
    |> group()
    |> findColumn(fn: (key) => true, column: "_value")
topics = dict.fromList(
    pairs: array.map(arr: array.concat(arr: ["--------------------------------|-"], v: topicList), fn: (x) => ({key: strings.substring(v: x, start: 0, end: 32), value: strings.substring(v: x, start: 33, end: strings.strlen(v: x))})),
)

// The first span of each sample on its writer's host, in the emit window.
sent = firstPerHost
    |> filter(fn: (r) => r.start >= emitStartNs and r.start < emitStopNs and r.host == homeOf(w: r.writer_id))

// Per receiving host and sample: the earliest complete copy of each DATA_FRAG (DATA:
// of the sample), then the latest of those, if they cover the whole sample.
recvData = data
    |> filter(fn: (r) => r.host != homeOf(w: r.writer_id))
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "sn")
    |> map(fn: (r) => ({writer_id: r.writer_id, sn: r.sn, col: "r|" + r.host, v: r.end}))
fragFirst = frags
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "key")
recvFrag = fragFirst
    |> filter(fn: (r) => r.host != homeOf(w: r.writer_id))
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
    |> map(fn: (r) => ({writer_id: r.writer_id, sn: r.sn, col: "r|" + r.host, v: r.t_recv}))

// Sender and receivers of a sample side by side without a join (joins are slow at this
// scale): one row per (writer, sn) with columns s (t_send), slot and r|<host> (t_recv
// per receiver), then one row per receiver again.
union(
    tables: [
        sent |> map(fn: (r) => ({writer_id: r.writer_id, sn: r.sn, col: "s", v: r.start})),
        sent |> map(fn: (r) => ({writer_id: r.writer_id, sn: r.sn, col: "slot", v: int(v: r.slot)})),
        recvData,
        recvFrag,
    ],
)
    |> group(columns: ["writer_id"])
    |> pivot(rowKey: ["sn"], columnKey: ["col"], valueColumn: "v")
    |> filter(fn: (r) => exists r.s)
    |> experimental.unpivot(otherColumns: ["sn", "s", "slot"])
    |> map(fn: (r) => ({
        _time: time(v: r.s),
        _measurement: "dds_latency",
        sender: homeOf(w: r.writer_id),
        receiver: strings.trimPrefix(v: r._field, prefix: "r|"),
        topic_name: dict.get(dict: topics, key: r.writer_id, default: ""),
        writer_id: r.writer_id,
        slot: string(v: r.slot),
        latency_ns: r._value - r.s,
        t_recv_ns: r._value,
        sn: r.sn,
    }))
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "receiver", "topic_name", "writer_id", "slot"],
        fieldFn: (r) => ({latency_ns: r.latency_ns, t_recv_ns: r.t_recv_ns, sn: r.sn}),
    )

// Submessage level: per DATA_FRAG, earliest start on the writer's host, earliest end
// elsewhere (side by side as above, per (sn, fragment_starting_num)).
fragSent = frags
    |> filter(fn: (r) => r.host == homeOf(w: r.writer_id))
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id"])
    |> sort(columns: ["start", "slot"])
    |> unique(column: "key")
    |> filter(fn: (r) => r.start >= emitStartNs and r.start < emitStopNs)

// (rowKey is the one string column `key`: pivot on (sn, fragment_starting_num) joins the
// two numbers without a separator, so (2, 11) and (21, 1) would meet.)
union(
    tables: [
        fragSent |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "s", v: r.start})),
        fragSent |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "slot", v: int(v: r.slot)})),
        fragSent |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "sn", v: r.sn})),
        fragSent |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "fsn", v: r.fsn})),
        fragFirst
            |> filter(fn: (r) => r.host != homeOf(w: r.writer_id))
            |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "r|" + r.host, v: r.end})),
    ],
)
    |> group(columns: ["writer_id"])
    |> pivot(rowKey: ["key"], columnKey: ["col"], valueColumn: "v")
    |> filter(fn: (r) => exists r.s)
    |> experimental.unpivot(otherColumns: ["key", "sn", "fsn", "s", "slot"])
    |> map(fn: (r) => ({
        _time: time(v: r.s),
        _measurement: "dds_submessage_latency",
        sender: homeOf(w: r.writer_id),
        receiver: strings.trimPrefix(v: r._field, prefix: "r|"),
        topic_name: dict.get(dict: topics, key: r.writer_id, default: ""),
        writer_id: r.writer_id,
        slot: string(v: r.slot),
        latency_ns: r._value - r.s,
        t_recv_ns: r._value,
        sn: r.sn,
        fragment_starting_num: r.fsn,
    }))
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "receiver", "topic_name", "writer_id", "slot"],
        fieldFn: (r) => ({latency_ns: r.latency_ns, t_recv_ns: r.t_recv_ns, sn: r.sn, fragment_starting_num: r.fragment_starting_num}),
    )
