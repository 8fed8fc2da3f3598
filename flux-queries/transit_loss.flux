// Spans lost between ddshark and InfluxDB, per host and ddshark run (service.instance.id).
// ddshark numbers the spans of a run as it puts them into export requests (export_seq: 0,
// 1, 2, … without gaps), so the numbers missing between a run's lowest and highest stored
// one are spans that never arrived ("missing"). Of those, ddshark counted the spans it gave
// up itself (ddshark.otlp.spans.failed, its last value in the range; the spans it dropped at
// its full queue got no number); the rest were lost after it — by the collector, Telegraf
// or InfluxDB — and no counter of theirs may show them ("lost in transit"; a Telegraf
// killed with its memory buffer is one). Checked only for runs whose first span (number 0)
// is in the range ("—" otherwise: widen the range): a SAMPLE span is numbered ~10 s of
// capture after its start, so a range that cut a run would count the spans on the other
// side of its start as missing; for the same reason a range ending before a run's end counts
// those captured after it (live ranges end now). A run's last request, lost whole, is out
// of sight, and so is a run whose first one was ("—").
// Grafana variables: ${bucket}, ${long_bucket}, v.timeRangeStart/Stop.
numbers = from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "spans" and r._field == "export_seq")
    |> group(columns: ["host.name", "service.instance.id"])
stored = numbers |> count() |> map(fn: (r) => ({r with _field: "stored"}))
lowest = numbers |> min() |> map(fn: (r) => ({r with _field: "lowest"}))
highest = numbers |> max() |> map(fn: (r) => ({r with _field: "highest"}))
failed = from(bucket: "${long_bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "ddshark.otlp.spans.failed" and r._field == "counter")
    |> group(columns: ["host.name", "service.instance.id"])
    |> last()
    |> map(fn: (r) => ({r with _field: "failed", _value: int(v: r._value)}))
union(tables: [stored, lowest, highest, failed])
    |> keep(columns: ["host.name", "service.instance.id", "_field", "_value"])
    |> group()
    |> pivot(rowKey: ["host.name", "service.instance.id"], columnKey: ["_field"], valueColumn: "_value")
    |> filter(fn: (r) => exists r.stored)
    |> map(fn: (r) => {
        missing = r.highest - r.lowest + 1 - r.stored
        failed = if exists r.failed then r.failed else 0
        whole = r.lowest == 0
        return {
            host: r["host.name"],
            run: r["service.instance.id"],
            stored: r.stored,
            missing: if whole then string(v: missing) else "—",
            "failed at ddshark": failed,
            "lost in transit": if whole then string(v: missing - failed) else "—",
        }
    })
    |> sort(columns: ["host", "run"])
