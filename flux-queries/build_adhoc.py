#!/usr/bin/env python3
"""Generate the ad-hoc join queries from the latency task, so both compute the same thing.

flux-queries/tasks/materialise_latency.flux is the one definition of DDS latency in Flux.
The ad-hoc queries (a window and two hosts picked in Grafana) are that pipeline with the
task's bounded window replaced by v.timeRangeStart/Stop, the hosts and the topic filtered
on tags before any pivot, and a result table instead of to():
  dds_latency.flux, dds_submessage_latency.flux, lost_samples.flux

usage: flux-queries/build_adhoc.py [--check]
  --check   exit 1 if a generated file differs from what is in the repository
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TASK = os.path.join(HERE, "tasks", "materialise_latency.flux")
GENERATED = "// Generated from flux-queries/tasks/materialise_latency.flux by flux-queries/build_adhoc.py: edit the task.\n"
IMPORTS = 'import "array"\nimport "dict"\nimport "strings"\n\n'
TAG_FILTERS = '''
    |> filter(fn: (r) => r["host.name"] == "${sender}" or r["host.name"] == "${receiver}")
    |> filter(fn: (r) => (if exists r.topic_name then r.topic_name else "") =~ /^${topic:regex}$/ or (r["host.name"] == "${receiver}" and not exists r.topic_name))'''

HEADERS = {
    "dds_latency.flux": '''// DDS-layer latency per sample, ad hoc over the dashboard's time range, from the raw
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
''',
    "dds_submessage_latency.flux": '''// DDS submessage latency per DATA_FRAG, ad hoc over the dashboard's time range, from the
// raw spans; the latency task's pipeline for two hosts (see dds_latency.flux), same
// definition as `ddshark latency --level submessage`:
//   t_send = start of the earliest span of (writer_id, sn, fragment_starting_num) on ${sender};
//   t_recv = earliest end (last IP fragment of a complete datagram) of the same DATA_FRAG
//            on ${receiver}; latency = t_recv - t_send (ns).
// One row per DATA_FRAG: _time = t_send, _value = latency_ns, with writer_id, sn,
// fragment_starting_num, topic_name; one series per topic.
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop.
''',
    "lost_samples.flux": '''// Lost samples from ${sender} to ${receiver}: samples of the sender host's writers
// (see dds_latency.flux) that never became complete on the receiver host (no span
// there, or not all DDS fragments), counted per v.windowPeriod at t_send, per topic.
// Samples sent in the last moments of the time range may still be in flight.
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
''',
}


def replace_once(text, old, new):
    if text.count(old) < 1:
        raise SystemExit(f"build_adhoc.py: the task no longer contains:\n{old}")
    return text.replace(old, new)


def ad_hoc_body(task):
    body = task[task.index("// One row per DATA span"):]
    # Parts that only make sense for the task's bounded window.
    while "// task only: begin" in body:
        a = body.index("// task only: begin")
        b = body.index("// task only: end\n") + len("// task only: end\n")
        body = body[:a] + body[b:]
    body = replace_once(body, "data = dataSpans\n", "data = recentDataSpans\n")
    for kind, stop in (("DATA", "readStop"), ("DATA_FRAG", "fragReadStop")):
        body = replace_once(body, f'''    |> range(start: readStart, stop: {stop})
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "{kind}")''', f'''    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "{kind}")''' + TAG_FILTERS)
    body = replace_once(body, '''    |> filter(fn: (r) => r.start >= emitStartNs and r.start < emitStopNs and r.host == homeOf(w: r.writer_id))''',
                        '''    |> filter(fn: (r) => r.host == "${sender}" and r.host == homeOf(w: r.writer_id))''')
    body = replace_once(body, '''recvData = data
    |> filter(fn: (r) => r.host != homeOf(w: r.writer_id))''', '''recvData = data
    |> filter(fn: (r) => r.host == "${receiver}")''')
    body = replace_once(body, '''recvFrag = fragFirst
    |> filter(fn: (r) => r.host != homeOf(w: r.writer_id))''', '''recvFrag = fragFirst
    |> filter(fn: (r) => r.host == "${receiver}")''')
    body = replace_once(body, '''fragSent = frags
    |> filter(fn: (r) => r.host == homeOf(w: r.writer_id))''', '''fragSent = frags
    |> filter(fn: (r) => r.host == "${sender}" and r.host == homeOf(w: r.writer_id))''')
    body = replace_once(body, '''    |> filter(fn: (r) => r.start >= emitStartNs and r.start < emitStopNs)
''', "")
    body = replace_once(body, '''        fragFirst
            |> filter(fn: (r) => r.host != homeOf(w: r.writer_id))''', '''        fragFirst
            |> filter(fn: (r) => r.host == "${receiver}")''')
    return body


def result(part, value, extra=""):
    a = part.index("    |> filter(fn: (r) => exists r.s)\n    |> experimental.unpivot")
    recv = 'r["r|${receiver}"]'
    keep = "exists r.s" if value == "lost" else f"exists r.s and exists {recv}"
    val = f"if exists {recv} then 0 else 1" if value == "lost" else f"{recv} - r.s"
    tail = "    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)\n" if value == "lost" else ""
    return part[:a] + f"""    |> filter(fn: (r) => {keep})
    |> map(fn: (r) => ({{
        _time: time(v: r.s),
        _value: {val},
        writer_id: r.writer_id,
        sn: r.sn,{extra}
        topic_name: dict.get(dict: topics, key: r.writer_id, default: ""),
    }}))
    |> group(columns: ["topic_name"])
    |> sort(columns: ["_time"])
""" + tail


def generate():
    body = ad_hoc_body(open(TASK).read())
    i_sample = body.index("// Sender and receivers of a sample side by side")
    i_sub = body.index("// Submessage level:")
    common, sample, sub = body[:i_sample], body[i_sample:i_sub], body[i_sub:]
    return {
        "dds_latency.flux": result(sample, "latency"),
        "lost_samples.flux": result(sample, "lost"),
        "dds_submessage_latency.flux": result(sub, "latency", "\n        fragment_starting_num: r.fsn,"),
    }, common


def main():
    check = "--check" in sys.argv[1:]
    parts, common = generate()
    stale = []
    for name, tail in parts.items():
        text = HEADERS[name] + GENERATED + IMPORTS + common + tail
        path = os.path.join(HERE, name)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            if check:
                stale.append(path)
            else:
                open(path, "w").write(text)
                print(f"wrote {path}", file=sys.stderr)
    if stale:
        print("out of date (run flux-queries/build_adhoc.py): " + " ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
