// InfluxDB task: materialises DDS latencies, losses, sample sizes and repairs from the
// raw spans, incrementally, so that the dashboards never join raw spans.
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
//                                       and DATA/DATA_FRAG sent (submessages)
// with _time = t_send (dds_repairs: the second), tags sender, receiver (host.name),
// topic_name, writer_id, slot (the slot of the sender's first span: with writer_id and
// _time it names the sample), fields latency_ns, t_recv_ns, sn (and
// fragment_starting_num, incomplete, sample_size). The series count is bounded by the
// deployment (host pairs × topics × writers × slots), and a point is fully determined
// by its sample (or second), so a later run over an overlapping window rewrites the
// same points (same series and time): no duplicates.
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
//   receivers of a writer: the other hosts that captured any span of it in the window;
//             such a host lost a sample it never completed if its capture ran at t_send
//             (its first span at or before t_send, its last at least 1 s after: the
//             `--lost-grace-ns` of `ddshark latency`), and it saw part of it
//             ("incomplete") if some DATA_FRAGs but not all arrived. At most six
//             receivers per writer get points (a seventh host gets neither latency nor
//             loss points for that writer: the expansion below is a fixed union).
//   repairs: a DATA/DATA_FRAG span on the writer's host whose DATA_FRAG (DATA: sample)
//             already went to the same destination or to a multicast group before.
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
// How far back a receiving host's first span is looked for (is its capture running?).
liveStart = experimental.subDuration(d: 60s, from: emitStart)

// How the pipeline stays cheap at tens of thousands of spans per run: no function call
// per span (Flux calls a function like int(), string() or dict.get() per row at ~20-60 µs
// each; comparisons, arithmetic and record building in map() are vectorized), no join.
// What is per writer (its host, topic and receivers) is computed on one row per writer
// and handed down to the writer's spans by fill(): a marker row per writer, sorted
// before its spans. Start times stay `_time`; where a latency needs them as integers,
// stateDuration() after an anchor row gives them exactly.
markTime = experimental.subDuration(d: 1h, from: readStart)
// Streams of different columns meet in union(): drop() of a column no row has frees
// their record types (union() wants one type).
untyped = (tables=<-) => tables |> drop(columns: ["~"])

// One row per DATA span: host, writer_id, topic_name, slot, sn, _time (start), end.
// (Each branch has its own from() so that every tag and field filter is pushed down to
// storage.)
recentDataSpans = from(bucket: "${bucket}")
    |> range(start: readStart, stop: readStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA")
    |> filter(fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano" or r._field == "sample_size" or r._field == "dst")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
// task only: begin
// Discovery writers re-send SPDP with the same SN every few seconds, and `ddshark latency`
// keeps a sample open until 10 s without news of it: their earlier copies count too.
earlierDiscovery = from(bucket: "${bucket}")
    |> range(start: experimental.subDuration(d: 10s, from: readStart), stop: readStart)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA" and r.traffic_type == "discovery")
    |> filter(fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano" or r._field == "sample_size" or r._field == "dst")
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
dataSpans = union(tables: [recentDataSpans, earlierDiscovery])
// task only: end
// (pivot() right after the storage read: InfluxDB's sorted pivot)
data = dataSpans
    |> map(fn: (r) => ({
        _time: r._time,
        host: r["host.name"],
        writer_id: r.writer_id,
        topic_name: if exists r.topic_name then r.topic_name else "",
        slot: r.slot,
        sn: r.sn,
        fsn: 0,
        nf: 1,
        total: 1,
        end: r.end_time_unix_nano,
        size: if exists r.sample_size then r.sample_size else 0,
        dst: if exists r.dst then r.dst else "",
    }))

// One row per usable DATA_FRAG span (impossible numbers are ignored, as by ddshark).
frags = from(bucket: "${bucket}")
    |> range(start: readStart, stop: fragReadStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA_FRAG")
    |> filter(
        fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano" or r._field == "fragment_starting_num"
            or r._field == "frags_in_submessage" or r._field == "fragment_size" or r._field == "sample_size"
            or r._field == "dst",
    )
    |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
    |> map(fn: (r) => ({
        _time: r._time,
        host: r["host.name"],
        writer_id: r.writer_id,
        topic_name: if exists r.topic_name then r.topic_name else "",
        slot: r.slot,
        sn: r.sn,
        fsn: r.fragment_starting_num,
        nf: r.frags_in_submessage,
        // (ceil(sample_size / fragment_size); both branches are computed, hence the divisor)
        total: if exists r.fragment_size and exists r.sample_size and r.fragment_size > 0
            then (r.sample_size + r.fragment_size - 1) / (if r.fragment_size > 0 then r.fragment_size else 1) else 0,
        end: r.end_time_unix_nano,
        size: if exists r.sample_size then r.sample_size else 0,
        dst: if exists r.dst then r.dst else "",
    }))
    |> filter(fn: (r) => r.fsn >= 1 and r.nf >= 1 and r.total > 0 and r.fsn + r.nf - 1 <= r.total)

spans = union(tables: [data, frags])

// Per host and sample: its earliest span (ties: lowest slot).
firstPerHost = spans
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["_time", "slot"])
    |> unique(column: "sn")

// Per participant (GUID prefix): the host that saw most of its samples first; ties: the
// last host name. Counted per writer and host first, so that only small tables (one row
// per writer and host) are mapped or joined.
firstSeenCounts = spans
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

// One row per writer and host that captured any of its spans, with the writer's home.
writerHosts = join(
    tables: {
        w: firstPerHost
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
        t: firstPerHost
            |> filter(fn: (r) => r.topic_name != "")
            |> first(column: "sn")
            |> map(fn: (r) => ({writer_id: r.writer_id, host: r.host, topic_name: r.topic_name}))
            |> group(),
        h: writerHosts,
    },
    on: ["writer_id", "host"],
)
    |> filter(fn: (r) => r.host == r.home)

// Per writer, one marker row (at markTime, before every span) with columns home (its
// host), wtopic (its topic, if known) and r1 … r6: its receivers, the other hosts that
// captured any span of it in the window (so unicast traffic to a host that runs no
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

// Every span with its writer's home (and the rest).
spansH = spans
    |> withHome()

// The first span of each sample on its writer's host, in the emit window, with t_send
// in ns.
sent = firstPerHost
    |> filter(fn: (r) => r._time >= emitStart and r._time < emitStop)
    |> keep(columns: ["_time", "host", "writer_id", "slot", "sn", "size"])
    |> withReceivers()
    |> filter(fn: (r) => r.host == r.home)
    |> withStartNs()
    |> rename(columns: {ts: "t_send"})

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

// Per receiving host and sample: the earliest complete copy of each DATA_FRAG (DATA:
// of the sample), then the latest of those, if they cover the whole sample (rc = 1;
// rc = 0: it saw only part of it).
recvData = spansH
    |> filter(fn: (r) => r.fsn == 0 and r.host != r.home)
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "sn")
    |> map(fn: (r) => ({writer_id: r.writer_id, receiver: r.host, sn: r.sn, rsn: r.sn, rt: r.end, rc: 1, k: 0}))
fragFirst = spansH
    |> filter(fn: (r) => r.fsn >= 1)
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "key")
recvFrag = fragFirst
    |> filter(fn: (r) => r.host != r.home)
    |> group(columns: ["writer_id", "host", "sn"])
    |> reduce(
        identity: {t_recv: 0, covered: 0, total: 1},
        fn: (r, accumulator) => ({
            t_recv: if r.end > accumulator.t_recv then r.end else accumulator.t_recv,
            covered: accumulator.covered + r.nf,
            total: r.total,
        }),
    )
    |> map(fn: (r) => ({writer_id: r.writer_id, receiver: r.host, sn: r.sn, rsn: r.sn, rt: r.t_recv, rc: if r.covered >= r.total then 1 else 0, k: 0}))

// Sender and receivers of a sample side by side without a join (joins are slow at this
// scale): each sent sample once per receiver of its writer (k = 1), the receivers' own
// rows (k = 0) just before it, per writer and receiver in SN order; fill() hands the
// receiver's row down to the sample's.
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
        t_send: r.t_send,
        k: 1,
    }))
samplesPerReceiver = union(
    tables: [
        sent |> expectedAt(col: "r1") |> untyped(),
        sent |> expectedAt(col: "r2") |> untyped(),
        sent |> expectedAt(col: "r3") |> untyped(),
        sent |> expectedAt(col: "r4") |> untyped(),
        sent |> expectedAt(col: "r5") |> untyped(),
        sent |> expectedAt(col: "r6") |> untyped(),
        recvData |> untyped(),
        recvFrag |> untyped(),
    ],
)
    |> group(columns: ["writer_id", "receiver"])
    |> sort(columns: ["sn", "k"])
    |> fill(column: "rsn", usePrevious: true)
    |> fill(column: "rt", usePrevious: true)
    |> fill(column: "rc", usePrevious: true)
    // (no nulls left: the map below is vectorized)
    |> fill(column: "rsn", value: -1)
    |> fill(column: "rt", value: 0)
    |> fill(column: "rc", value: -1)
    |> filter(fn: (r) => r.k == 1)
    |> map(fn: (r) => ({
        _time: r._time,
        writer_id: r.writer_id,
        receiver: r.receiver,
        home: r.home,
        wtopic: r.wtopic,
        slot: r.slot,
        sn: r.sn,
        t_send: r.t_send,
        t_recv: r.rt,
        latency_ns: r.rt - r.t_send,
        complete: r.rsn == r.sn and r.rc == 1,
        incomplete: r.rsn == r.sn and r.rc == 0,
    }))

// output: begin
// dds_latency: one point per sample and receiver that completed it. (No map() here: to()
// takes the tags in column order, and each order would be a series of its own, so the
// tag columns are renamed and duplicate() appends them in one fixed order.)
samplesPerReceiver
    |> filter(fn: (r) => r.complete)
    |> fill(column: "wtopic", value: "")
    |> set(key: "_measurement", value: "dds_latency")
    |> rename(columns: {receiver: "~receiver", home: "~sender", slot: "~slot", wtopic: "~topic_name", writer_id: "~writer_id"})
    |> duplicate(column: "~receiver", as: "receiver")
    |> duplicate(column: "~sender", as: "sender")
    |> duplicate(column: "~slot", as: "slot")
    |> duplicate(column: "~topic_name", as: "topic_name")
    |> duplicate(column: "~writer_id", as: "writer_id")
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "receiver", "topic_name", "writer_id", "slot"],
        fieldFn: (r) => ({latency_ns: r.latency_ns, t_recv_ns: r.t_recv, sn: r.sn}),
    )
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
    |> rename(columns: {receiver: "~receiver", home: "~sender", slot: "~slot", wtopic: "~topic_name", writer_id: "~writer_id"})
    |> duplicate(column: "~receiver", as: "receiver")
    |> duplicate(column: "~sender", as: "sender")
    |> duplicate(column: "~slot", as: "slot")
    |> duplicate(column: "~topic_name", as: "topic_name")
    |> duplicate(column: "~writer_id", as: "writer_id")
    |> group(columns: ["_measurement", "sender", "receiver", "topic_name", "writer_id", "slot"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "receiver", "topic_name", "writer_id", "slot"],
        fieldFn: (r) => ({sn: r.sn, incomplete: if r.incomplete then 1 else 0}),
    )

// dds_samples: one point per sample on its writer's host, with its size (DATA: the
// serialized payload; DATA_FRAG: sampleSize). (Tags as for dds_latency.)
sent
    |> fill(column: "wtopic", value: "")
    |> set(key: "_measurement", value: "dds_samples")
    |> rename(columns: {host: "~sender", slot: "~slot", wtopic: "~topic_name", writer_id: "~writer_id"})
    |> duplicate(column: "~sender", as: "sender")
    |> duplicate(column: "~slot", as: "slot")
    |> duplicate(column: "~topic_name", as: "topic_name")
    |> duplicate(column: "~writer_id", as: "writer_id")
    |> group(columns: ["_measurement", "sender", "topic_name", "writer_id", "slot"])
    |> to(
        bucket: "${long_bucket}",
        tagColumns: ["sender", "topic_name", "writer_id", "slot"],
        fieldFn: (r) => ({sn: r.sn, sample_size: r.size}),
    )
// output: end

// Submessage level: per DATA_FRAG, earliest start on the writer's host (k = 0), earliest
// end elsewhere (k = 1), side by side per writer in (sn, fragment_starting_num) order.
fragSent = spansH
    |> filter(fn: (r) => r.fsn >= 1 and r.host == r.home)
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

// Repairs on the writer's host (`ddshark latency`'s repairs_sender): a DATA/DATA_FRAG
// span is a repair when the same DATA_FRAG (DATA: the sample) already went to the same
// destination, or to any multicast group, before it. Counted per second of the repair's
// own time as: all spans - first spans per (fragment, destination) + those first spans
// that follow a multicast send of the fragment (counting per sample would need a table
// per sample). Copies sent further apart than the window's look-back are not seen.
// (IPv4 224.0.0.0/4, IPv6 ff00::/8; dst is "a.b.c.d:port" or "[v6]:port")
senderSpans = spansH
    |> filter(fn: (r) => r.host == r.home)
    |> keep(columns: ["_time", "writer_id", "home", "wtopic", "sn", "fsn", "dst"])
    |> withStartNs()
    |> map(fn: (r) => ({
        _time: r._time,
        writer_id: r.writer_id,
        home: r.home,
        wtopic: r.wtopic,
        ts: r.ts,
        // (sn, fragment_starting_num) as one number, for sorting
        u: r.sn * 1048576 + r.fsn,
        dst: r.dst,
        mc: r.dst =~ /^(22[4-9]|23[0-9])\.|^\[[fF][fF]/,
    }))
// A fragment twice in one datagram (same start) is one send (Cyclone packs SPDP so): the
// rows that repeat the (fragment, start) of the row before, per destination.
sends = senderSpans
    |> group(columns: ["writer_id", "dst"])
    |> sort(columns: ["u", "ts"])
    |> duplicate(column: "u", as: "du")
    |> duplicate(column: "ts", as: "dt")
    |> difference(columns: ["du", "dt"], keepFirst: true)
    |> filter(fn: (r) => not (exists r.du and r.du == 0 and r.dt == 0))
firstPerDestination = senderSpans
    |> group(columns: ["writer_id", "dst"])
    |> sort(columns: ["_time"])
    |> unique(column: "u")
    |> group(columns: ["writer_id"])
multicastFirsts = firstPerDestination
    |> filter(fn: (r) => r.mc)
// First sends to a unicast destination after a multicast send of the same fragment:
// ordered by fragment and time, column m (the fragment of the latest multicast send so
// far) is carried down by fill(); where it is the row's own fragment, one came before.
afterMulticast = union(tables: [multicastFirsts |> map(fn: (r) => ({r with m: r.u})) |> untyped(), firstPerDestination |> filter(fn: (r) => not r.mc) |> untyped()])
    |> group(columns: ["writer_id"])
    |> sort(columns: ["u", "ts"])
    |> fill(column: "m", usePrevious: true)
    |> filter(fn: (r) => not r.mc and exists r.m and r.m == r.u)
// (aggregateWindow() counts per second in one pass; grouping by the second would make a
// table per writer and second)
perSecond = (tables=<-, col) => tables
    |> filter(fn: (r) => r._time >= emitStart and r._time < emitStop)
    |> group(columns: ["writer_id", "home", "wtopic"])
    |> sort(columns: ["_time"])
    |> aggregateWindow(every: 1s, fn: count, column: "u", timeSrc: "_start", createEmpty: false)
    |> map(fn: (r) => ({writer_id: r.writer_id, home: r.home, wtopic: r.wtopic, _time: r._time, col: col, v: r.u}))
// n: spans; a: sends; f: first sends per destination; g: of those, unicast after
// multicast; h, k: first sends to a multicast group, and first multicast sends of a
// fragment (h - k: further multicast groups after the first, also repairs)
repairsPerSecond = union(
    tables: [
        senderSpans |> perSecond(col: "n"),
        sends |> perSecond(col: "a"),
        firstPerDestination |> perSecond(col: "f"),
        afterMulticast |> perSecond(col: "g"),
        multicastFirsts |> perSecond(col: "h"),
        multicastFirsts |> sort(columns: ["_time"]) |> unique(column: "u") |> perSecond(col: "k"),
    ],
)
    |> group(columns: ["writer_id", "home", "wtopic"])
    |> pivot(rowKey: ["_time"], columnKey: ["col"], valueColumn: "v")
    |> map(fn: (r) => ({
        _time: r._time,
        writer_id: r.writer_id,
        home: r.home,
        wtopic: r.wtopic,
        submessages: r.n,
        repairs: r.a - (if exists r.f then r.f else 0) + (if exists r.g then r.g else 0)
            + (if exists r.h then r.h else 0) - (if exists r.k then r.k else 0),
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
