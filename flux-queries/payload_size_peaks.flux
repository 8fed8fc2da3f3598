// DDS payload (sample) size of ${sender}'s writers, the largest per writer and interval
// (v.windowPeriod), from the per-sample points the latency join writes into
// ${long_bucket} (dds_samples, field sample_size = serialized bytes; DATA_FRAG:
// sampleSize): the panel "payload size over time". Zoomed in, each point is one sample;
// wider, the largest of its interval. The maximum is taken inside InfluxDB's storage, so
// the cost follows the number of intervals, not of samples. Every sample's own row:
// payload_size_materialised.flux.
// Series per topic (and writer): _time = end of the interval, _value = bytes.
// Grafana variables: ${long_bucket}, ${sender}, ${topic}, v.timeRangeStart/Stop, v.windowPeriod.
from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "dds_samples" and r._field == "sample_size")
    |> filter(fn: (r) => r.sender == "${sender}")
    |> filter(fn: (r) => r.topic_name =~ /^${topic:regex}$/)
    |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)
    // Samples a writer sent at one instant are points of different `slot`s (series): the
    // largest of them per interval.
    |> group(columns: ["topic_name", "writer_id"])
    |> sort(columns: ["_time", "_value"], desc: true)
    |> unique(column: "_time")
    |> keep(columns: ["_time", "_value", "topic_name", "writer_id"])
    |> sort(columns: ["_time"])
