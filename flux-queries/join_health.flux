// The latency join (`ddshark join`, between the collector and InfluxDB; its point
// ddshark_join in ${bucket}, one per push): samples and DATA_FRAGs waiting, joined early
// because the join was full (then latencies may be missing: raise DDSHARK_JOIN_MAX_PENDING),
// points made and dropped (InfluxDB could not take them), spans it could not use, its
// writes to InfluxDB (points refused by InfluxDB, requests retried, raw points waiting), samples and
// DATA_FRAGs their writer's host did not see (senderless: no point; pending_senderless
// still waiting for that host's span), samples joined before every host's capture had
// passed them (forced: a host's spans came too late or stopped; decided_at_end: the input
// ended first), hosts no longer waited for (quiet_hosts now, hosts_gone_quiet cumulative: their
// spans stopped while the fleet's capture time ran on), hosts the clock table forgot (unseen for 5 min of capture time) and clock
// evidence it could not hold, spans of joined samples forgotten before a redelivery could no
// longer come (joined_evicted: such a span delivered again counts twice); the last value per v.windowPeriod (summed over the join shards).
// Grafana variables: ${bucket}, v.timeRangeStart/Stop, v.windowPeriod.
from(bucket: "${bucket}")
    |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
    |> filter(fn: (r) => r._measurement == "ddshark_join")
    |> filter(fn: (r) => r._field == "pending_samples" or r._field == "pending_frags" or r._field == "early"
        or r._field == "points" or r._field == "points_dropped" or r._field == "rejected"
        or r._field == "senderless" or r._field == "pending_senderless" or r._field == "forced"
        or r._field == "decided_at_end" or r._field == "quiet_hosts" or r._field == "hosts_gone_quiet"
        or r._field == "clock_hosts_forgotten" or r._field == "joined_evicted"
        or r._field == "clock_cells_not_remembered" or r._field == "influx_points_rejected"
        or r._field == "influx_retries" or r._field == "influx_queued_points")
    // (the last value per join shard, summed over the shards: tag shard, docs/fleet.md)
    |> group(columns: ["_field", "shard"])
    |> aggregateWindow(every: v.windowPeriod, fn: last, createEmpty: false)
    |> group(columns: ["_field", "_time"])
    |> sum()
    |> group(columns: ["_field"])
    |> sort(columns: ["_time"])
    |> map(fn: (r) => ({_time: r._time, _value: float(v: r._value), series: r._field}))
    |> group(columns: ["series"])
