// InfluxDB task: materialises DDS latencies, losses, sample sizes and repairs from the
// raw spans, incrementally, so that the dashboards never join raw spans.
//
// Raw only, and not the authoritative join: the writer's host here is the host that saw
// most of its samples first, which follows the clocks (hosts whose clocks differ by more
// than the one-way delay can swap sender and receiver), it estimates no clock offset, and
// its receivers are the hosts that saw the writer in the window. The authoritative
// latencies, losses and hosts are those of `ddshark join` and `ddshark latency`
// (latency_core's rules: docs/latency.md), which the dashboards' panels read.
// Created by scripts/stack/start.sh (and deploy/influxdb/init.sh in docker compose),
// with ${bucket} (raw spans) and ${long_bucket} (results, long retention) bound.
//
// Every run (every 10 s; now() = the run's scheduled time) reads the spans of a bounded
// window and writes, into ${long_bucket}:
//   measurement dds_latency             one point per sample (writer_id, sn) and receiver
//                                       that completed it
//   measurement dds_submessage_latency  one point per DATA_FRAG (writer_id, sn,
//                                       fragment_starting_num) and receiver
//   measurement dds_lost                one point per sample and receiver that never
//                                       completed it (field incomplete: 1 = saw part)
//   measurement dds_samples             one point per sample on its writer's host
//                                       (field sample_size)
//   measurement dds_repairs             per second and writer on its own host: repairs
//                                       and DATA/DATA_FRAG sent (submessages) of the
//                                       samples first sent in that second
// with _time = t_send (dds_repairs: the second), tags sender, receiver (host.name),
// topic_name, writer_id, slot (the slot of the sender's first span: with writer_id and
// _time it names the sample), fields latency_ns, t_recv_ns, sn (and
// fragment_starting_num, incomplete, sample_size). The series count is bounded by the
// deployment (host pairs × topics × writers × slots), and a point is fully determined
// by its sample (or second), so a later run over an overlapping window rewrites the
// same points (same series and time): no duplicates.
//
// The sample level reads SAMPLE spans: ddshark exports one per sample and host once the
// sample has been quiet for --otlp-sample-window (10 s), with what that host saw of it —
// start = its first IP fragment, end = when its last missing DDS fragment arrived in a
// complete datagram (fragments_missing = 0), repairs, size: the per-host half of
// `ddshark latency`'s join (crates/ddshark/src/latency/join.rs), so retransmissions and
// late fragments are already settled and this task only puts hosts side by side, on one
// row per sample and host. Definitions (those of `ddshark latency`):
//   t_send  = start of the sample's SAMPLE span on its writer's host; the writer's host
//             is, per participant (GUID prefix), the host that saw most of its samples
//             in the window first (ddshark does not count samples two hosts saw at the
//             same nanosecond; here the host name decides such a tie);
//   t_recv  = end of its SAMPLE span on another host, when complete there.
//   submessage level: per DATA_FRAG span, earliest start on the sender, earliest end on
//             the receiver.
//   receivers of a writer: the other hosts that saw any sample of it in the window;
//             such a host lost a sample it has no SAMPLE span of if its capture ran at
//             t_send (its first span at or before t_send, its last at least 1 s after:
//             the `--lost-grace-ns` of `ddshark latency`), and it saw part of it
//             ("incomplete") if its SAMPLE span misses fragments. At most six receivers
//             per writer get points (a seventh host gets neither latency nor loss points
//             for that writer: the expansion below is a fixed union). A host's SAMPLE
//             span pairs with the sender's that started at most --otlp-sample-window
//             before it (a sample re-sent after a quiet window, as SPDP is, is a sample
//             of its own, as for `ddshark latency`).
//   repairs: as counted by ddshark on the writer's host (a DATA/DATA_FRAG whose DDS
//             fragment already went to the same destination or to a multicast group).
// Windows: a run writes the samples whose t_send lies in [now - settle - emit,
// now - settle) and reads SAMPLE spans from `horizon` before to `horizon` after that
// range (a receiving host's SAMPLE span starts with the first fragment it got, so within
// the network latency of t_send), DATA_FRAG spans until `fragHorizon` after it;
// consecutive runs cover consecutive ranges (emit = every), once all spans are stored:
// settle covers the sample window, the time a large sample takes to complete, and
// ddshark's, the collector's and Telegraf's batching. A run over a window already done
// rewrites the same points.
import "array"
import "dict"
import "experimental"
import "strings"

option task = {name: "ddshark-latency", every: 10s}

settle = 30s
emit = 10s
horizon = 2s
// A DATA_FRAG of a sample of megabytes may arrive seconds after the first (measured: up
// to 10.3 s for a 3.2 MB point cloud replayed on a 2-core machine).
fragHorizon = 15s
emitStop = experimental.subDuration(d: settle, from: now())
emitStart = experimental.subDuration(d: emit, from: emitStop)
readStart = experimental.subDuration(d: horizon, from: emitStart)
readStop = experimental.addDuration(d: horizon, to: emitStop)
fragReadStop = experimental.addDuration(d: fragHorizon, to: emitStop)
// How far back a receiving host's first span is looked for (is its capture running?).
liveStart = experimental.subDuration(d: 60s, from: emitStart)

// How the pipeline stays cheap at tens of thousands of spans per run: no function call
// per span (Flux calls a function like int(), string() or dict.get() per row at ~20-60 µs
// each; comparisons, arithmetic and record building in map() are vectorized), no join.
// What is per writer (its host, topic and receivers) is computed on one row per writer
// and handed down to the writer's rows by fill(): a marker row per writer, sorted
// before them. Where a DATA_FRAG latency needs a start time in ns, stateDuration()
// after an anchor row gives it exactly.
markTime = experimental.subDuration(d: 1h, from: readStart)
// Streams of different columns meet in union(): drop() of a column no row has frees
// their record types (union() wants one type).
untyped = (tables=<-) => tables |> drop(columns: ["~"])

// One row per sample and host that saw it (its SAMPLE span): host, writer_id, slot, sn, _time and start (first IP fragment), end (complete), missing
// (DDS fragments that never arrived), size, repairs, subs (DATA/DATA_FRAG carrying it).
// (pivot() right after the storage read: InfluxDB's sorted pivot)
samplesRead = from(bucket: "${bucket}")
    |> range(start: readStart, stop: readStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "SAMPLE")
    |> filter(
        fn: (r) => r._field == "sn" or r._field == "start_ns" or r._field == "end_time_unix_nano"
            or r._field == "fragments_missing" or r._field == "sample_size" or r._field == "repairs"
            or r._field == "submessages",
    )
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
// (plain column references only: a vectorized map)
samples = samplesRead
    |> map(fn: (r) => ({
        _time: r._time,
        host: r["host.name"],
        writer_id: r.writer_id,
        slot: r.slot,
        sn: r.sn,
        start: r.start_ns,
        end: r.end_time_unix_nano,
        missing: r.fragments_missing,
        size: r.sample_size,
        repairs: r.repairs,
        subs: r.submessages,
    }))

// Per participant (GUID prefix): the host that saw most of its samples first; ties: the
// last host name. Counted per writer and host first, so that only small tables (one row
// per writer and host) are mapped or joined.
firstSeenCounts = samples
    |> group(columns: ["writer_id"])
    |> sort(columns: ["_time", "host"])
    |> unique(column: "sn")
    |> group(columns: ["writer_id", "host"])
    |> count(column: "sn")
    |> map(fn: (r) => ({writer_id: r.writer_id, prefix: strings.substring(v: r.writer_id, start: 0, end: 24), host: r.host, n: r.sn}))
    |> group()
participantHomes = firstSeenCounts
    |> group(columns: ["prefix", "host"])
    |> sum(column: "n")
    |> group(columns: ["prefix"])
    |> sort(columns: ["n", "host"], desc: true)
    |> limit(n: 1)
    |> map(fn: (r) => ({prefix: r.prefix, home: r.host}))
    |> group()

// One row per writer and host that saw any of its samples, with the writer's home.
writerHosts = join(
    tables: {
        w: samples
            |> group(columns: ["writer_id", "host"])
            |> first(column: "sn")
            |> map(fn: (r) => ({writer_id: r.writer_id, host: r.host, prefix: strings.substring(v: r.writer_id, start: 0, end: 24)}))
            |> group(),
        p: participantHomes,
    },
    on: ["prefix"],
)
// Topic of each writer as its own host names it (receivers may not know it).
writerTopics = join(
    tables: {
        t: samplesRead
            |> filter(fn: (r) => exists r.topic_name)
            |> group(columns: ["writer_id", "host.name"])
            |> first(column: "sn")
            |> map(fn: (r) => ({writer_id: r.writer_id, host: r["host.name"], topic_name: r.topic_name}))
            |> group(),
        h: writerHosts,
    },
    on: ["writer_id", "host"],
)
    |> filter(fn: (r) => r.host == r.home)

// Per writer, one marker row (at markTime, before every span) with columns home (its
// host), wtopic (its topic, if known) and r1 … r6: its receivers, the other hosts that
// saw any sample of it in the window (so unicast traffic to a host that runs no
// ddshark is nobody's loss). At most six receivers per writer get points. (The
// placeholder writer "~" has every column, so that each exists.)
markerCells = union(
    tables: [
        writerHosts
            |> group(columns: ["writer_id"])
            |> first(column: "home")
            |> map(fn: (r) => ({writer_id: r.writer_id, col: "home", v: r.home}))
            |> untyped(),
        writerTopics
            |> map(fn: (r) => ({writer_id: r.writer_id, col: "wtopic", v: r.topic_name}))
            |> untyped(),
        writerHosts
            |> filter(fn: (r) => r.host != r.home)
            |> group(columns: ["writer_id"])
            |> map(fn: (r) => ({writer_id: r.writer_id, host: r.host, k: 1}))
            |> cumulativeSum(columns: ["k"])
            |> filter(fn: (r) => r.k <= 6)
            |> map(fn: (r) => ({writer_id: r.writer_id, col: "r" + string(v: r.k), v: r.host}))
            |> untyped(),
        array.from(rows: [
            {writer_id: "~", col: "home", v: "~"}, {writer_id: "~", col: "wtopic", v: "~"},
            {writer_id: "~", col: "r1", v: "~"}, {writer_id: "~", col: "r2", v: "~"}, {writer_id: "~", col: "r3", v: "~"},
            {writer_id: "~", col: "r4", v: "~"}, {writer_id: "~", col: "r5", v: "~"}, {writer_id: "~", col: "r6", v: "~"},
        ])
            |> untyped(),
    ],
)
markers = markerCells
    |> group()
    |> pivot(rowKey: ["writer_id"], columnKey: ["col"], valueColumn: "v")
    |> map(fn: (r) => ({r with _time: markTime, marker: 1}))
    |> group(columns: ["writer_id"])

// withHome: the rows of `tables` (a column writer_id, no column marker), each with its
// writer's home and wtopic, grouped by writer; withReceivers: also r1 … r6.
// (row-by-row steps such as filter() cost per column: the streams carry only what the
// steps after them need)
homeMarkers = markers
    |> keep(columns: ["_time", "writer_id", "home", "wtopic", "marker"])
withHome = (tables=<-) => union(tables: [tables |> untyped(), homeMarkers |> untyped()])
    |> group(columns: ["writer_id"])
    |> sort(columns: ["_time"])
    |> fill(column: "home", usePrevious: true)
    |> fill(column: "wtopic", usePrevious: true)
    |> filter(fn: (r) => not exists r.marker)
    |> drop(columns: ["marker"])
withReceivers = (tables=<-) => union(tables: [tables |> untyped(), markers |> untyped()])
    |> group(columns: ["writer_id"])
    |> sort(columns: ["_time"])
    |> fill(column: "home", usePrevious: true)
    |> fill(column: "wtopic", usePrevious: true)
    |> fill(column: "r1", usePrevious: true)
    |> fill(column: "r2", usePrevious: true)
    |> fill(column: "r3", usePrevious: true)
    |> fill(column: "r4", usePrevious: true)
    |> fill(column: "r5", usePrevious: true)
    |> fill(column: "r6", usePrevious: true)
    |> filter(fn: (r) => not exists r.marker)
    |> drop(columns: ["marker"])

// withStartNs: the rows of `tables` with `ts`, their _time in ns (exact, no per-row call):
// the duration from an anchor row at markTime.
markTimeNs = int(v: markTime)
withStartNs = (tables=<-) => union(
    tables: [tables |> group() |> untyped(), array.from(rows: [{_time: markTime, base: markTimeNs, anchor: 1}]) |> untyped()],
)
    |> group()
    |> sort(columns: ["_time"])
    |> stateDuration(fn: (r) => true, column: "sinceMark", unit: 1ns)
    |> fill(column: "base", usePrevious: true)
    |> filter(fn: (r) => not exists r.anchor)
    |> map(fn: (r) => ({r with ts: r.base + r.sinceMark}))
    |> drop(columns: ["anchor", "base", "sinceMark"])

// Every row with its writer's home, topic and receivers.
samplesH = samples
    |> withReceivers()
// The samples first sent in the emit window, on their writer's host.
sent = samplesH
    |> filter(fn: (r) => r.host == r.home and r._time >= emitStart and r._time < emitStop)

// A receiver that saw nothing of a sample lost it only while its capture was running
// (as `ddshark latency` asks of a receiving capture): its first span no later than the
// send time, its last one at least lostGrace after it. first()/last() per series are
// answered by the storage engine, so the look-back costs little.
lostGraceNs = 1000000000
liveFromList = from(bucket: "${bucket}")
    |> range(start: liveStart, stop: emitStop)
    |> filter(fn: (r) => r._measurement == "spans" and r._field == "end_time_unix_nano")
    |> first()
    |> map(fn: (r) => ({host: r["host.name"], t: int(v: r._time)}))
    |> group(columns: ["host"])
    |> min(column: "t")
    |> map(fn: (r) => ({_value: r.host + "|" + string(v: r.t)}))
    |> group()
    |> findColumn(fn: (key) => true, column: "_value")
liveToList = from(bucket: "${bucket}")
    |> range(start: emitStart, stop: fragReadStop)
    |> filter(fn: (r) => r._measurement == "spans" and r._field == "end_time_unix_nano")
    |> last()
    |> map(fn: (r) => ({host: r["host.name"], t: r._value}))
    |> group(columns: ["host"])
    |> max(column: "t")
    |> map(fn: (r) => ({_value: r.host + "|" + string(v: r.t)}))
    |> group()
    |> findColumn(fn: (key) => true, column: "_value")
hostTimes = (list) => dict.fromList(
    pairs: array.map(arr: array.concat(arr: ["-|0"], v: list), fn: (x) => {
        kv = strings.split(v: x, t: "|")
        return {key: kv[0], value: int(v: kv[1])}
    }),
)
liveFrom = hostTimes(list: liveFromList)
liveTo = hostTimes(list: liveToList)
capturing = (h, t) => dict.get(dict: liveFrom, key: h, default: 9223372036854775807) <= t
    and t <= dict.get(dict: liveTo, key: h, default: 0) - lostGraceNs

// Every other host's SAMPLE spans of a writer (k = 1).
received = samplesH
    |> filter(fn: (r) => r.host != r.home)
    |> map(fn: (r) => ({_time: r._time, writer_id: r.writer_id, receiver: r.host, rsn: r.sn, sn: r.sn, rstart: r.start, rt: r.end, rmiss: r.missing, k: 1}))

// Sender and receivers of a sample side by side without a join (joins are slow at this
// scale): each sent sample once per receiver of its writer (k = 0), per writer and
// receiver in descending (SN, time) order, so that the receiver's row of a sample comes
// just before the sender's (it starts later); fill() hands it down. It is the sender's
// if it started no more than the sample window after it (else it belongs to a later
// re-send of the same SN).
expectedAt = (tables=<-, col) => tables
    |> rename(fn: (column) => if column == col then "receiver" else column)
    |> filter(fn: (r) => exists r.receiver)
    |> map(fn: (r) => ({
        _time: r._time,
        writer_id: r.writer_id,
        receiver: r.receiver,
        home: r.home,
        wtopic: r.wtopic,
        slot: r.slot,
        sn: r.sn,
        start: r.start,
        k: 0,
    }))
// ddshark's --otlp-sample-window, in ns.
sampleWindowNs = 10000000000
samplesPerReceiver = union(
    tables: [
        sent |> expectedAt(col: "r1") |> untyped(),
        sent |> expectedAt(col: "r2") |> untyped(),
        sent |> expectedAt(col: "r3") |> untyped(),
        sent |> expectedAt(col: "r4") |> untyped(),
        sent |> expectedAt(col: "r5") |> untyped(),
        sent |> expectedAt(col: "r6") |> untyped(),
        received |> untyped(),
    ],
)
    |> group(columns: ["writer_id", "receiver"])
    |> sort(columns: ["sn", "_time", "k"], desc: true)
    |> fill(column: "rsn", usePrevious: true)
    |> fill(column: "rstart", usePrevious: true)
    |> fill(column: "rt", usePrevious: true)
    |> fill(column: "rmiss", usePrevious: true)
    // (no nulls left: the map below is vectorized)
    |> fill(column: "rsn", value: -1)
    |> fill(column: "rstart", value: 0)
    |> fill(column: "rt", value: 0)
    |> fill(column: "rmiss", value: -1)
    |> filter(fn: (r) => r.k == 0)
    |> map(fn: (r) => ({
        _time: r._time,
        writer_id: r.writer_id,
        receiver: r.receiver,
        home: r.home,
        wtopic: r.wtopic,
        slot: r.slot,
        sn: r.sn,
        t_send: r.start,
        t_recv: r.rt,
        latency_ns: r.rt - r.start,
        complete: r.rsn == r.sn and r.rstart >= r.start and r.rstart - r.start < sampleWindowNs and r.rmiss == 0,
        incomplete: r.rsn == r.sn and r.rstart >= r.start and r.rstart - r.start < sampleWindowNs and r.rmiss > 0,
    }))

// output: begin
// dds_latency: one point per sample and receiver that completed it. experimental.to()
// writes the group key as tags and every other column as a field, with no function call
// per row (to()'s fieldFn costs one per point). (No map() before it: it would order the
// columns at random, and the tags are written in column order, each order a series of
// its own; so the tag columns are renamed and duplicate() appends them in one order.)
samplesPerReceiver
    |> filter(fn: (r) => r.complete)
    |> fill(column: "wtopic", value: "")
    |> set(key: "_measurement", value: "dds_latency")
    |> rename(columns: {receiver: "~receiver", home: "~sender", slot: "~slot", wtopic: "~topic_name", writer_id: "~writer_id", t_recv: "t_recv_ns"})
    |> duplicate(column: "~receiver", as: "receiver")
    |> duplicate(column: "~sender", as: "sender")
    |> duplicate(column: "~slot", as: "slot")
    |> duplicate(column: "~topic_name", as: "topic_name")
    |> duplicate(column: "~writer_id", as: "writer_id")
    |> keep(columns: ["_time", "_measurement", "sender", "receiver", "topic_name", "writer_id", "slot", "latency_ns", "t_recv_ns", "sn"])
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> experimental.to(bucket: "${long_bucket}")
// output: end

// Lost samples: a receiver of the writer that never completed the sample within the
// horizon, while its capture ran (`ddshark latency`'s "lost"), or that saw only part of
// it ("incomplete").
lostSamples = samplesPerReceiver
    |> filter(fn: (r) => not r.complete and (r.incomplete or capturing(h: r.receiver, t: r.t_send)))

// output: begin
// dds_lost: one point per sample and receiver that never completed it. (Tags as for
// dds_latency.)
lostSamples
    |> fill(column: "wtopic", value: "")
    |> set(key: "_measurement", value: "dds_lost")
    |> map(fn: (r) => ({r with incomplete: if r.incomplete then 1 else 0}))
    |> rename(columns: {receiver: "~receiver", home: "~sender", slot: "~slot", wtopic: "~topic_name", writer_id: "~writer_id"})
    |> duplicate(column: "~receiver", as: "receiver")
    |> duplicate(column: "~sender", as: "sender")
    |> duplicate(column: "~slot", as: "slot")
    |> duplicate(column: "~topic_name", as: "topic_name")
    |> duplicate(column: "~writer_id", as: "writer_id")
    |> keep(columns: ["_time", "_measurement", "sender", "receiver", "topic_name", "writer_id", "slot", "sn", "incomplete"])
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> experimental.to(bucket: "${long_bucket}")

// dds_samples: one point per sample on its writer's host, with its size (DATA: the
// serialized payload; DATA_FRAG: sampleSize). (Tags as for dds_latency.)
sent
    |> fill(column: "wtopic", value: "")
    |> set(key: "_measurement", value: "dds_samples")
    |> rename(columns: {host: "~sender", slot: "~slot", wtopic: "~topic_name", writer_id: "~writer_id", size: "sample_size"})
    |> duplicate(column: "~sender", as: "sender")
    |> duplicate(column: "~slot", as: "slot")
    |> duplicate(column: "~topic_name", as: "topic_name")
    |> duplicate(column: "~writer_id", as: "writer_id")
    |> keep(columns: ["_time", "_measurement", "sender", "topic_name", "writer_id", "slot", "sn", "sample_size"])
    |> group(columns: ["_measurement", "sender", "topic_name", "writer_id", "slot"])
    |> experimental.to(bucket: "${long_bucket}")
// output: end

// Submessage level: one row per usable DATA_FRAG span (impossible numbers are ignored,
// as by ddshark), with its writer's home.
frags = from(bucket: "${bucket}")
    |> range(start: readStart, stop: fragReadStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA_FRAG")
    |> filter(
        fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano" or r._field == "fragment_starting_num"
            or r._field == "frags_in_submessage" or r._field == "fragment_size" or r._field == "sample_size",
    )
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => ({
        _time: r._time,
        host: r["host.name"],
        writer_id: r.writer_id,
        slot: r.slot,
        sn: r.sn,
        fsn: r.fragment_starting_num,
        nf: r.frags_in_submessage,
        // (ceil(sample_size / fragment_size); both branches are computed, hence the divisor)
        total: if exists r.fragment_size and exists r.sample_size and r.fragment_size > 0
            then (r.sample_size + r.fragment_size - 1) / (if r.fragment_size > 0 then r.fragment_size else 1) else 0,
        end: r.end_time_unix_nano,
    }))
    |> filter(fn: (r) => r.fsn >= 1 and r.nf >= 1 and r.total > 0 and r.fsn + r.nf - 1 <= r.total)
    |> withHome()
// Per host and DATA_FRAG: its earliest complete copy.
fragFirst = frags
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "key")

// Submessage level: per DATA_FRAG, earliest start on the writer's host (k = 0), earliest
// end elsewhere (k = 1), side by side per writer in (sn, fragment_starting_num) order.
fragSent = frags
    |> filter(fn: (r) => r.host == r.home)
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id"])
    |> sort(columns: ["_time", "slot"])
    |> unique(column: "key")
    |> filter(fn: (r) => r._time >= emitStart and r._time < emitStop)
    |> withStartNs()
fragsPerReceiver = union(
    tables: [
        fragSent
            |> map(fn: (r) => ({
                writer_id: r.writer_id,
                key: r.key,
                k: 0,
                skey: r.key,
                stime: r._time,
                sts: r.ts,
                sslot: r.slot,
            }))
            |> untyped(),
        fragFirst
            |> filter(fn: (r) => r.host != r.home)
            |> map(fn: (r) => ({
                writer_id: r.writer_id,
                key: r.key,
                k: 1,
                receiver: r.host,
                home: r.home,
                wtopic: r.wtopic,
                sn: r.sn,
                fsn: r.fsn,
                rt: r.end,
            }))
            |> untyped(),
    ],
)
    |> group(columns: ["writer_id"])
    |> sort(columns: ["key", "k"])
    |> fill(column: "skey", usePrevious: true)
    |> fill(column: "stime", usePrevious: true)
    |> fill(column: "sts", usePrevious: true)
    |> fill(column: "sslot", usePrevious: true)
    |> filter(fn: (r) => r.k == 1 and exists r.skey and r.skey == r.key)

// output: begin
// dds_submessage_latency: one point per DATA_FRAG and receiver. (Tags as for dds_latency.)
fragsPerReceiver
    |> fill(column: "wtopic", value: "")
    |> set(key: "_measurement", value: "dds_submessage_latency")
    |> rename(columns: {stime: "_time", receiver: "~receiver", home: "~sender", sslot: "~slot", wtopic: "~topic_name", writer_id: "~writer_id"})
    |> duplicate(column: "~receiver", as: "receiver")
    |> duplicate(column: "~sender", as: "sender")
    |> duplicate(column: "~slot", as: "slot")
    |> duplicate(column: "~topic_name", as: "topic_name")
    |> duplicate(column: "~writer_id", as: "writer_id")
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "receiver", "topic_name", "writer_id", "slot"],
        fieldFn: (r) => ({latency_ns: r.rt - r.sts, t_recv_ns: r.rt, sn: r.sn, fragment_starting_num: r.fsn}),
    )
// output: end

// Repairs on the writer's host, as ddshark counted them per sample (`ddshark latency`'s
// repairs_sender), per second of the samples' first send.
// (aggregateWindow() sums per second in one pass; grouping by the second would make a
// table per writer and second)
perSecond = (tables=<-, col) => tables
    |> rename(fn: (column) => if column == col then "v" else column)
    |> keep(columns: ["_time", "writer_id", "home", "wtopic", "v"])
    |> group(columns: ["writer_id", "home", "wtopic"])
    |> sort(columns: ["_time"])
    |> aggregateWindow(every: 1s, fn: sum, column: "v", timeSrc: "_start", createEmpty: false)
    |> map(fn: (r) => ({writer_id: r.writer_id, home: r.home, wtopic: r.wtopic, _time: r._time, col: col, v: r.v}))
repairsPerSecond = union(tables: [sent |> perSecond(col: "repairs"), sent |> perSecond(col: "subs")])
    |> group(columns: ["writer_id", "home", "wtopic"])
    |> pivot(rowKey: ["_time"], columnKey: ["col"], valueColumn: "v")
    |> map(fn: (r) => ({
        _time: r._time,
        writer_id: r.writer_id,
        home: r.home,
        wtopic: r.wtopic,
        submessages: r.subs,
        repairs: r.repairs,
    }))

// output: begin
// dds_repairs: per second and writer on its own host, DATA/DATA_FRAG sent and repairs.
// (Tags as for dds_latency.)
repairsPerSecond
    |> fill(column: "wtopic", value: "")
    |> set(key: "_measurement", value: "dds_repairs")
    |> rename(columns: {home: "~sender", wtopic: "~topic_name", writer_id: "~writer_id"})
    |> duplicate(column: "~sender", as: "sender")
    |> duplicate(column: "~topic_name", as: "topic_name")
    |> duplicate(column: "~writer_id", as: "writer_id")
    |> group(columns: ["_measurement", "sender", "topic_name", "writer_id"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "topic_name", "writer_id"],
        fieldFn: (r) => ({repairs: r.repairs, submessages: r.submessages}),
    )
// output: end
