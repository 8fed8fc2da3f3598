// Series in the raw-span bucket ${bucket} and in the long bucket ${long_bucket} with data
// in the time range: the schema keeps it bounded by the deployment (hosts × interfaces ×
// topics × writers × kinds × slots), whatever the traffic.
// Grafana variables: ${bucket}, ${long_bucket}, v.timeRangeStart/Stop.
import "influxdata/influxdb"

union(
    tables: [
        influxdb.cardinality(bucket: "${bucket}", start: v.timeRangeStart, stop: v.timeRangeStop)
            |> map(fn: (r) => ({_value: r._value, bucket: "${bucket}"})),
        influxdb.cardinality(bucket: "${long_bucket}", start: v.timeRangeStart, stop: v.timeRangeStop)
            |> map(fn: (r) => ({_value: r._value, bucket: "${long_bucket}"})),
    ],
)
    |> group(columns: ["bucket"])
