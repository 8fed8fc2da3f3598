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
import "internal/debug"
import "strings"

// One row per DATA span: host, writer_id, topic_name, slot, sn, start, end. (Each branch
// has its own from() so that every tag and field filter is pushed down to storage.)
recentDataSpans = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA")
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/ or (r["host.name"] == "${receiver}" and not exists r.topic_name))
    |> filter(fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano" or r._field == "sample_size" or r._field == "dst")
data = recentDataSpans
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
        size: if exists r.sample_size then r.sample_size else 0,
        dst: if exists r.dst then r.dst else "",
    }))

// One row per usable DATA_FRAG span (impossible numbers are ignored, as by ddshark).
frags = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA_FRAG")
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/ or (r["host.name"] == "${receiver}" and not exists r.topic_name))
    |> filter(
        fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano" or r._field == "fragment_starting_num"
            or r._field == "frags_in_submessage" or r._field == "fragment_size" or r._field == "sample_size"
            or r._field == "dst",
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
            size: ss,
            dst: if exists r.dst then r.dst else "",
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
    |> filter(fn: (r) => r.host == "${sender}" and r.host == homeOf(w: r.writer_id))

// Receivers of a writer: the other hosts that captured any span of it in the window (so
// unicast traffic to a host that runs no ddshark is nobody's loss), as a dictionary
// writer_id -> "|hostB|hostC".
receiverList = firstPerHost
    |> filter(fn: (r) => r.host != homeOf(w: r.writer_id))
    |> first(column: "sn")
    |> group(columns: ["writer_id"])
    |> reduce(identity: {l: ""}, fn: (r, accumulator) => ({l: accumulator.l + "|" + r.host}))
    |> map(fn: (r) => ({_value: r.writer_id + r.l}))
    |> group()
    |> findColumn(fn: (key) => true, column: "_value")
receivers = dict.fromList(
    pairs: array.map(arr: array.concat(arr: ["--------------------------------|-"], v: receiverList), fn: (x) => ({key: strings.substring(v: x, start: 0, end: 32), value: strings.substring(v: x, start: 32, end: strings.strlen(v: x))})),
)

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

// Per receiving host and sample: the earliest complete copy of each DATA_FRAG (DATA:
// of the sample), then the latest of those, if they cover the whole sample.
recvData = data
    |> filter(fn: (r) => r.host == "${receiver}")
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "sn")
    |> map(fn: (r) => ({writer_id: r.writer_id, key: string(v: r.sn) + "|" + r.host, col: "c", v: r.end}))
fragFirst = frags
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id", "host"])
    |> sort(columns: ["end"])
    |> unique(column: "key")
recvFragCover = fragFirst
    |> filter(fn: (r) => r.host == "${receiver}")
    |> group(columns: ["writer_id", "host", "sn"])
    |> reduce(
        identity: {t_recv: 0, covered: 0, total: 1},
        fn: (r, accumulator) => ({
            t_recv: if r.end > accumulator.t_recv then r.end else accumulator.t_recv,
            covered: accumulator.covered + r.nf,
            total: r.total,
        }),
    )
// complete (col c = t_recv), or seen but incomplete (col i)
recvFrag = recvFragCover
    |> map(fn: (r) => ({
        writer_id: r.writer_id,
        key: string(v: r.sn) + "|" + r.host,
        col: if r.covered >= r.total then "c" else "i",
        v: r.t_recv,
    }))

// Sender and receivers of a sample side by side without a join (joins are slow at this
// scale): per writer, one row per (sample, receiver) keyed "sn|receiver", with columns
// x (t_send) and y (slot) for every receiver of the writer (up to six per writer), c
// (t_recv) if that receiver completed the sample, i if it saw only part of it.
// (the receivers' list is looked up once per sample; only samples of writers with two or
// more receivers go through the further copies)
sentTo = sent
    |> map(fn: (r) => {
        l = dict.get(dict: receivers, key: r.writer_id, default: "")
        rs = strings.split(v: l, t: "|")
        return {writer_id: r.writer_id, sn: r.sn, start: r.start, slot: r.slot, n: length(arr: rs) - 1,
            rcv: if length(arr: rs) > 1 then rs[1] else "", all: l}
    })
    |> filter(fn: (r) => r.n >= 1)
sentToMore = sentTo
    |> filter(fn: (r) => r.n >= 2)
expectedAt = (k) => sentToMore
    |> filter(fn: (r) => r.n >= k)
    |> map(fn: (r) => ({writer_id: r.writer_id, sn: r.sn, start: r.start, slot: r.slot, n: r.n, rcv: strings.split(v: r.all, t: "|")[k], all: r.all}))
expected = union(tables: [sentTo, expectedAt(k: 2), expectedAt(k: 3), expectedAt(k: 4), expectedAt(k: 5), expectedAt(k: 6)])
samplesPerReceiver = union(
    tables: [
        expected |> map(fn: (r) => ({writer_id: r.writer_id, key: string(v: r.sn) + "|" + r.rcv, col: "x", v: r.start})),
        expected |> map(fn: (r) => ({writer_id: r.writer_id, key: string(v: r.sn) + "|" + r.rcv, col: "y", v: int(v: r.slot)})),
        recvData,
        recvFrag,
    ],
)
    |> group(columns: ["writer_id"])
    |> pivot(rowKey: ["key"], columnKey: ["col"], valueColumn: "v")
    |> filter(fn: (r) => exists r.x)
    |> map(fn: (r) => {
        kv = strings.splitN(v: r.key, t: "|", i: 2)
        return {
            writer_id: r.writer_id,
            sn: int(v: kv[0]),
            receiver: kv[1],
            t_send: r.x,
            slot: r.y,
            t_recv: r.c,
            incomplete: exists r.i,
        }
    })


// Lost samples: a receiver of the writer that never completed the sample within the
// horizon, while its capture ran (`ddshark latency`'s "lost"), or that saw only part of
// it ("incomplete").
lostSamples = samplesPerReceiver
    |> filter(fn: (r) => not exists r.t_recv and (r.incomplete or capturing(h: r.receiver, t: r.t_send)))


// Submessage level: per DATA_FRAG, earliest start on the writer's host, earliest end
// elsewhere (side by side as above, per (sn, fragment_starting_num)).
fragSent = frags
    |> filter(fn: (r) => r.host == "${sender}" and r.host == homeOf(w: r.writer_id))
    |> map(fn: (r) => ({r with key: string(v: r.sn) + "/" + string(v: r.fsn)}))
    |> group(columns: ["writer_id"])
    |> sort(columns: ["start", "slot"])
    |> unique(column: "key")

// (rowKey is the one string column `key`: pivot on (sn, fragment_starting_num) joins the
// two numbers without a separator, so (2, 11) and (21, 1) would meet.)
fragsPerReceiver = union(
    tables: [
        fragSent |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "s", v: r.start})),
        fragSent |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "slot", v: int(v: r.slot)})),
        fragSent |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "sn", v: r.sn})),
        fragSent |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "fsn", v: r.fsn})),
        fragFirst
            |> filter(fn: (r) => r.host == "${receiver}")
            |> map(fn: (r) => ({writer_id: r.writer_id, key: r.key, col: "r|" + r.host, v: r.end})),
    ],
)
    |> group(columns: ["writer_id"])
    |> pivot(rowKey: ["key"], columnKey: ["col"], valueColumn: "v")
    |> filter(fn: (r) => exists r.s)


// Repairs on the writer's host (`ddshark latency`'s repairs_sender): a DATA/DATA_FRAG
// span is a repair when the same DATA_FRAG (DATA: the sample) already went to the same
// destination, or to any multicast group, before it. Counted per second of the repair's
// own time as: all spans - first spans per (fragment, destination) + those first spans
// that follow a multicast send of the fragment (counting per sample would need a table
// per sample). Copies sent further apart than the window's look-back are not seen.
// (IPv4 224.0.0.0/4, IPv6 ff00::/8; dst is "a.b.c.d:port" or "[v6]:port")
isMulticast = (d) => d =~ /^(22[4-9]|23[0-9])\.|^\[[fF][fF]/
inEmitWindow = (r) => true
senderSpans = spans
    |> filter(fn: (r) => r.host == "${sender}" and r.host == homeOf(w: r.writer_id))
    |> map(fn: (r) => ({
        writer_id: r.writer_id,
        start: r.start,
        // (sn, fragment_starting_num) as one number, for sorting
        u: r.sn * 1048576 + r.fsn,
        ud: string(v: r.sn) + "/" + string(v: r.fsn) + "@" + r.dst,
        mc: isMulticast(d: r.dst),
    }))
    |> group(columns: ["writer_id"])
    |> sort(columns: ["start"])
// A fragment twice in one datagram (same start) is one send (Cyclone packs SPDP so).
sends = senderSpans
    |> map(fn: (r) => ({r with uds: r.ud + "#" + string(v: r.start)}))
    |> unique(column: "uds")
firstPerDestination = senderSpans
    |> unique(column: "ud")
multicastFirsts = firstPerDestination
    |> filter(fn: (r) => r.mc)
// First sends to a unicast destination after a multicast send of the same fragment:
// ordered by fragment and time, column m (the fragment of the latest multicast send so
// far) is carried down by fill(); where it is the row's own fragment, one came before.
afterMulticast = firstPerDestination
    |> map(fn: (r) => ({r with m: if r.mc then r.u else debug.null(type: "int")}))
    |> sort(columns: ["u", "start"])
    |> fill(column: "m", usePrevious: true)
    |> filter(fn: (r) => not r.mc and exists r.m and r.m == r.u)
perSecond = (tables=<-, col) => tables
    |> filter(fn: inEmitWindow)
    |> map(fn: (r) => ({writer_id: r.writer_id, second: r.start / 1000000000, n: 1}))
    |> group(columns: ["writer_id", "second"])
    |> sum(column: "n")
    |> map(fn: (r) => ({writer_id: r.writer_id, second: r.second, col: col, v: r.n}))
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
        multicastFirsts |> unique(column: "u") |> perSecond(col: "k"),
    ],
)
    |> group(columns: ["writer_id"])
    |> pivot(rowKey: ["second"], columnKey: ["col"], valueColumn: "v")
    |> map(fn: (r) => ({
        writer_id: r.writer_id,
        second: r.second,
        submessages: r.n,
        repairs: r.a - (if exists r.f then r.f else 0) + (if exists r.g then r.g else 0)
            + (if exists r.h then r.h else 0) - (if exists r.k then r.k else 0),
    }))


lostSamples
    |> filter(fn: (r) => r.receiver == "${receiver}")
    |> map(fn: (r) => ({
        _time: time(v: r.t_send),
        _value: 1,
        writer_id: r.writer_id,
        sn: r.sn,
        incomplete: r.incomplete,
        topic_name: dict.get(dict: topics, key: r.writer_id, default: ""),
    }))
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
