#!/usr/bin/env python3
"""Generate the ad-hoc join queries from the latency task, so both compute the same thing.

flux-queries/tasks/materialise_latency.flux is the one definition of DDS latency in Flux.
The ad-hoc queries (a window and two hosts picked in Grafana) are that pipeline with the
task's bounded window replaced by v.timeRangeStart/Stop, the hosts and the topic filtered
on tags before any pivot, and a result table instead of to():
  dds_latency.flux, dds_submessage_latency.flux, lost_samples.flux, payload_size.flux,
  retransmissions.flux

usage: flux-queries/build_adhoc.py [--check]
  --check   exit 1 if a generated file differs from what is in the repository
"""
import os
import sys

# Run as a file, not as a module of the package: the package is ddtools in scripts/.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
from ddtools.generated import write_generated  # noqa: E402
from ddtools.paths import FLUX_DIR  # noqa: E402

TASK = os.path.join(FLUX_DIR, "tasks", "materialise_latency.flux")
GENERATED = "// Generated from flux-queries/tasks/materialise_latency.flux by flux-queries/build_adhoc.py: edit the task.\n"
IMPORTS = 'import "array"\nimport "dict"\nimport "experimental"\nimport "strings"\n\n'
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
    "lost_samples.flux": '''// Lost samples from ${sender} to ${receiver}, ad hoc from the raw spans: samples of the
// sender host's writers (see dds_latency.flux) that ${receiver} never completed while its
// capture ran (its first span no later than the send time, its last one at least 1 s
// after), or saw only part of: `ddshark latency`'s "lost" and "incomplete". ${receiver}
// must have captured some span of the writer in the window to count as its receiver.
// Counted per v.windowPeriod at t_send, per topic; the task writes the same samples into
// ${long_bucket} (lost_samples_materialised.flux). Samples sent in the last moments of
// the time range may still be in flight.
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
''',
    "payload_size.flux": '''// DDS payload (sample) size over time of the samples ${sender}'s writers sent, ad hoc
// from the raw spans: one point per sample (writer_id, sn) at its first span on its
// writer's host (see dds_latency.flux; ${receiver} helps to tell whose writers are
// whose); _value = serialized sample size in bytes (DATA_FRAG: sampleSize). One series
// per topic; the task writes the same points into ${long_bucket}
// (payload_size_materialised.flux).
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop.
''',
    "retransmissions.flux": '''// Retransmissions (repairs) by ${sender}'s writers, ad hoc from the raw spans, with the
// definition of `ddshark latency` (repairs_sender): a DATA/DATA_FRAG span on the writer's
// host is a repair when the same DATA_FRAG (DATA: the sample) already went to the same
// destination, or to a multicast group, before it. Counted per v.windowPeriod at the
// time of the repair, per topic; the task writes the same counts per second into
// ${long_bucket} (retransmissions_materialised.flux).
// Grafana variables: ${bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
''',
}


def replace_once(text, old, new):
    if text.count(old) < 1:
        raise SystemExit(f"build_adhoc.py: the task no longer contains:\n{old}")
    return text.replace(old, new)


def ad_hoc_body(task):
    body = task[task.index("// How the pipeline stays cheap"):]
    # Parts that only make sense for the task's bounded window, and its outputs.
    for begin, end in (("// task only: begin", "// task only: end\n"), ("// output: begin", "// output: end\n")):
        while begin in body:
            a = body.index(begin)
            b = body.index(end, a) + len(end)
            body = body[:a] + body[b:]
    body = replace_once(body, "markTime = experimental.subDuration(d: 1h, from: readStart)\n",
                        "markTime = experimental.subDuration(d: 1h, from: v.timeRangeStart)\n")
    for kind, stop in (("SAMPLE", "readStop"), ("DATA_FRAG", "fragReadStop")):
        body = replace_once(body, f'''    |> range(start: readStart, stop: {stop})
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "{kind}")''', f'''    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r["span.name"] == "{kind}")''' + TAG_FILTERS)
    for start, stop in (("liveStart", "emitStop"), ("emitStart", "fragReadStop")):
        body = replace_once(body, f"    |> range(start: {start}, stop: {stop})\n",
                            "    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)\n")
    body = replace_once(body, '''sent = samplesH
    |> filter(fn: (r) => r.host == r.home and r._time >= emitStart and r._time < emitStop)''', '''sent = samplesH
    |> filter(fn: (r) => r.host == "${sender}" and r.host == r.home)''')
    body = replace_once(body, '''received = samplesH
    |> filter(fn: (r) => r.host != r.home)''', '''received = samplesH
    |> filter(fn: (r) => r.host == "${receiver}" and r.host != r.home)''')
    body = replace_once(body, '''        fragFirst
            |> filter(fn: (r) => r.host != r.home)''', '''        fragFirst
            |> filter(fn: (r) => r.host == "${receiver}")''')
    body = replace_once(body, '''fragSent = frags
    |> filter(fn: (r) => r.host == r.home)''', '''fragSent = frags
    |> filter(fn: (r) => r.host == "${sender}" and r.host == r.home)''')
    body = replace_once(body, '''    |> unique(column: "key")
    |> filter(fn: (r) => r._time >= emitStart and r._time < emitStop)
''', '''    |> unique(column: "key")
''')
    return body


TOPIC = '        topic_name: if exists r.wtopic then r.wtopic else "",\n'
PER_TOPIC = '    |> group(columns: ["topic_name"])\n    |> sort(columns: ["_time"])\n'
PER_WINDOW = "    |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)\n"


def tail(stream, columns, where=None, per_window=False):
    """An ad-hoc query's result: rows of one of the task's named streams (filtered by where),
    mapped to columns (name, Flux expression) and the topic, one table per topic."""
    text = stream + "\n"
    if where:
        text += f"    |> filter(fn: (r) => {where})\n"
    text += "    |> map(fn: (r) => ({\n"
    text += "".join(f"        {name}: {expr},\n" for name, expr in columns)
    text += TOPIC + "    }))\n" + PER_TOPIC
    return text + PER_WINDOW if per_window else text


# What each ad-hoc query returns from the task's named streams (the task writes the same
# rows into ${long_bucket} in its `// output` blocks).
SAMPLE = [("writer_id", "r.writer_id"), ("sn", "r.sn")]
TAILS = {
    "dds_latency.flux": tail("samplesPerReceiver", [("_time", "r._time"), ("_value", "r.t_recv - r.t_send")] + SAMPLE,
                             where='r.complete and r.receiver == "${receiver}"'),
    "lost_samples.flux": tail("lostSamples", [("_time", "r._time"), ("_value", "1")] + SAMPLE
                              + [("incomplete", "r.incomplete")],
                              where='r.receiver == "${receiver}"', per_window=True),
    "payload_size.flux": tail("sent", [("_time", "r._time"), ("_value", "r.size")] + SAMPLE),
    "retransmissions.flux": tail("repairsPerSecond", [("_time", "r._time"), ("_value", "r.repairs"),
                                                      ("writer_id", "r.writer_id")], per_window=True),
    "dds_submessage_latency.flux": tail("fragsPerReceiver", [("_time", "r.stime"), ("_value", "r.rt - r.sts")]
                                        + SAMPLE + [("fragment_starting_num", "r.fsn")],
                                        where='r.receiver == "${receiver}"'),
}


def generate():
    return {name: HEADERS[name] + GENERATED + IMPORTS + ad_hoc_body(open(TASK).read()) + "\n" + tail
            for name, tail in TAILS.items()}


def main():
    return write_generated({os.path.join(FLUX_DIR, name): text for name, text in generate().items()},
                           sys.argv[1:], "flux-queries/build_adhoc.py")


if __name__ == "__main__":
    sys.exit(main())
