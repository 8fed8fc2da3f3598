// Lost samples from ${sender} to ${receiver}, as materialised by the latency task
// (flux-queries/tasks/materialise_latency.flux) into ${long_bucket}: one dds_lost point
// per sample of ${sender}'s writers that ${receiver} (a host that captured the writer's
// traffic) never completed while its capture ran, or saw only part of (field
// incomplete = 1): `ddshark latency`'s "lost" and "incomplete" rows. No join at query
// time. Counted per v.windowPeriod at the send time, per topic; lost_samples.flux is the
// same, ad hoc from the raw spans.
// Grafana variables: ${long_bucket}, ${sender}, ${receiver}, ${topic}, v.timeRangeStart/Stop,
// v.windowPeriod.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_lost")
    |> filter(fn: (r) => r.sender == "${sender}" and r.receiver == "${receiver}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> filter(fn: (r) => r._field == "sn")
    |> group(columns: ["topic_name"])
    |> aggregateWindow(every: v.windowPeriod, fn: count, createEmpty: false)
