// DDS-layer latency per sample, ad hoc over the dashboard's time range, from the raw
// spans (bucket ${bucket}): the latency task's pipeline (flux-queries/tasks/), for two
// hosts and the window you pick; the task writes the same numbers into ${long_bucket}
// for the live panels (dds_latency_materialised.flux). Same definitions as
// `ddshark latency --level sample`:
//   t_send = start (first IP fragment) of the earliest span of the sample (writer_id, sn)
//            on ${sender}, for the writers of ${sender} (per participant, the host that
//            saw most of its samples first);
//   t_recv = on ${receiver}, per DATA_FRAG the earliest end (last IP fragment of a
//            complete datagram) carrying it, then the latest of those; only samples
//            whose DATA_FRAGs cover all ceil(sample_size / fragment_size) fragments
//            (DATA: one) are complete;
//   latency = t_recv - t_send, in ns.
// Host and topic filters act on tags before any pivot; no join.
// One row per complete sample: _time = t_send (ns), _value = latency_ns, with writer_id,
// sn, topic_name; one series (table) per topic.
// Grafana variables: ${bucket}, ${sender}, ${receiver} (host.name), ${topic} (regex,
// All = .*) and v.timeRangeStart / v.timeRangeStop.
// Generated from flux-queries/tasks/materialise_latency.flux by flux-queries/build_adhoc.py: edit the task.
import "array"
import "dict"
import "strings"

// One row per DATA span: host, writer_id, topic_name, slot, sn, start, end. (Each branch
// has its own from() so that every tag and field filter is pushed down to storage.)
recentDataSpans = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "DATA")
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/ or (r["host.name"] == "${receiver}" and not exists r.topic_name))
    |> filter(fn: (r) => r._field == "sn" or r._field == "end_time_unix_nano")
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
    }))

// One row per usable DATA_FRAG span (impossible numbers are ignored, as by ddshark).
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
    |> filter(fn: (r) => r.host == "${sender}" and r.host == homeOf(w: r.writer_id))

// Per receiving host and sample: the earliest complete copy of each DATA_FRAG (DATA:
// of the sample), then the latest of those, if they cover the whole sample.
recvData = data
    |> filter(fn: (r) => r.host == "${receiver}")
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
    |> filter(fn: (r) => exists r.s and exists r["r|${receiver}"])
    |> map(fn: (r) => ({
        _time: time(v: r.s),
        _value: r["r|${receiver}"] - r.s,
        writer_id: r.writer_id,
        sn: r.sn,
        topic_name: dict.get(dict: topics, key: r.writer_id, default: ""),
    }))
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
