// Lost samples from ${sender} to ${receiver}, ad hoc from the raw spans: samples of the
// sender host's writers (see dds_latency.flux) that ${receiver} never completed while its
// capture ran (its first span no later than the send time, its last one at least 1 s
// after), or saw only part of: `ddshark latency`'s "lost" and "incomplete". ${receiver}
// must have captured some span of the writer in the window to count as its receiver.
// Counted per v.windowPeriod at t_send, per topic; the task writes the same samples into
// ${long_bucket} (lost_samples_materialised.flux). Samples sent in the last moments of
// the time range may still be in flight.
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
// Generated from flux-queries/tasks/materialise_latency.flux by flux-queries/build_adhoc.py: edit the task.
import "array"
import "dict"
import "experimental"
import "strings"

// How the pipeline stays cheap at tens of thousands of spans per run: no function call
// per span (Flux calls a function like int(), string() or dict.get() per row at ~20-60 µs
// each; comparisons, arithmetic and record building in map() are vectorized), no join.
// What is per writer (its host, topic and receivers) is computed on one row per writer
// and handed down to the writer's rows by fill(): a marker row per writer, sorted
// before them. Where a DATA_FRAG latency needs a start time in ns, stateDuration()
// after an anchor row gives it exactly.
markTime = experimental.subDuration(d: 1h, from: v.timeRangeStart)
// Streams of different columns meet in union(): drop() of a column no row has frees
// their record types (union() wants one type).
untyped = (tables=<-) => tables |> drop(columns: ["~"])

// One row per sample and host that saw it (its SAMPLE span): host, writer_id, slot, sn, _time and start (first IP fragment), end (complete), missing
// (DDS fragments that never arrived), size, repairs, subs (DATA/DATA_FRAG carrying it).
// (pivot() right after the storage read: InfluxDB's sorted pivot)
samplesRead = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "SAMPLE")
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/ or (r["host.name"] == "${receiver}" and not exists r.topic_name))
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
    |> filter(fn: (r) => r.host == "${sender}" and r.host == r.home)

// A receiver that saw nothing of a sample lost it only while its capture was running
// (as `ddshark latency` asks of a receiving capture): its first span no later than the
// send time, its last one at least lostGrace after it. first()/last() per series are
// answered by the storage engine, so the look-back costs little.
lostGraceNs = 1000000000
liveFromList = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r._field == "end_time_unix_nano")
    |> first()
    |> map(fn: (r) => ({host: r["host.name"], t: int(v: r._time)}))
    |> group(columns: ["host"])
    |> min(column: "t")
    |> map(fn: (r) => ({_value: r.host + "|" + string(v: r.t)}))
    |> group()
    |> findColumn(fn: (key) => true, column: "_value")
liveToList = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
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
    |> filter(fn: (r) => r.host == "${receiver}" and r.host != r.home)
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


// Lost samples: a receiver of the writer that never completed the sample within the
// horizon, while its capture ran (`ddshark latency`'s "lost"), or that saw only part of
// it ("incomplete").
lostSamples = samplesPerReceiver
    |> filter(fn: (r) => not r.complete and (r.incomplete or capturing(h: r.receiver, t: r.t_send)))


// Submessage level: one row per usable DATA_FRAG span (impossible numbers are ignored,
// as by ddshark), with its writer's home.
frags = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA_FRAG")
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/ or (r["host.name"] == "${receiver}" and not exists r.topic_name))
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
    |> filter(fn: (r) => r.host == "${sender}" and r.host == r.home)
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id"])
    |> sort(columns: ["_time", "slot"])
    |> unique(column: "key")
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
            |> filter(fn: (r) => r.host == "${receiver}")
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


lostSamples
    |> filter(fn: (r) => r.receiver == "${receiver}")
    |> map(fn: (r) => ({
        _time: r._time,
        _value: 1,
        writer_id: r.writer_id,
        sn: r.sn,
        incomplete: r.incomplete,
        topic_name: if exists r.wtopic then r.wtopic else "",
    }))
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
