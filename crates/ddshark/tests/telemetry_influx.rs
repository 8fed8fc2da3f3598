//! ddshark's OTLP metrics and logs as the join writes them to InfluxDB, against what
//! Telegraf 1.39.3 (the stack's writer of them before the join took them, issue 32) stored
//! of the same replay: `scripts/stack/start.sh`'s stack (collector → join → influxd) takes
//! `ddshark -r --otlp` of fixtures with topics, deadlines, shared memory, DDS Security and
//! RTPS over TCP (every `ddshark.*` metric) and an OTLP/HTTP logs export with every kind of
//! value; then every field row of the join's `ddshark.*` and `logs` points (measurement,
//! tags, field, value) is one of Telegraf's and every one of Telegraf's is there.
//!
//! Telegraf's rows are `tests/golden/telemetry_telegraf.txt`, recorded when both wrote the
//! same exports into one influxd (the join's equal to every point, tag, field, value, type
//! and ns then: 2304 metric and 9 log field rows), without what differs between runs:
//! times (the SDK stamps wall-clock time), `start_time_unix_nano`, `service.instance.id`,
//! `otel.library.version` (ddshark's version) and the values of `ddshark.otlp.*` (the
//! exporter's own counters at each snapshot depend on its progress).
//!
//! Needs the stack `scripts/stack/build.sh` caches (`common::stack::stack_bin`): without
//! it this test FAILS, naming how to build it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::stack::{fresh_run_dir, metric_sum, scrape, wait_for, RunningStack};
use common::{fixture, repo_root};

/// The port of a URL (`http://127.0.0.1:4317`).
fn port_of(url: &str) -> u16 {
    url.rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

fn replay(otlp: u16, pcap: &Path, host: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args([
            "-r",
            pcap.to_str().unwrap(),
            "--no-tui",
            "--host-name",
            host,
        ])
        .args(["--otlp", &format!("http://127.0.0.1:{otlp}")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
}

/// An OTLP/JSON logs export with every kind of value a record can carry (the collector
/// turns it into the protobuf both receive): nested maps and lists, bytes, doubles small and
/// large, text to escape, trace context, a body that is a map.
fn logs_export() -> String {
    let t = 1_764_000_000_000_000_000u64;
    serde_json::json!({"resourceLogs": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "ddshark"}},
            {"key": "host.name", "value": {"stringValue": "ecu 1"}},
            {"key": "telemetry.sdk.language", "value": {"stringValue": "rust"}},
            {"key": "capture.interface", "value": {"stringValue": "eth0"}}
        ]},
        "scopeLogs": [{
            "scope": {"name": "ddshark", "version": "1.0"},
            "logRecords": [
                {"timeUnixNano": t.to_string(), "observedTimeUnixNano": (t + 7).to_string(),
                 "severityNumber": 13, "severityText": "WARN",
                 "body": {"stringValue": "queue \"full\" <dropped> & counted\n"},
                 "traceId": "0102030405060708090a0b0c0d0e0f10", "spanId": "1112131415161718",
                 "attributes": [
                    {"key": "count", "value": {"intValue": "42"}},
                    {"key": "ratio", "value": {"doubleValue": 0.1}},
                    {"key": "tiny", "value": {"doubleValue": 1.5e-9}},
                    {"key": "huge", "value": {"doubleValue": 2.5e22}},
                    {"key": "ok", "value": {"boolValue": true}},
                    {"key": "raw", "value": {"bytesValue": "3q2+7w=="}},
                    {"key": "list", "value": {"arrayValue": {"values": [
                        {"stringValue": "a,b"}, {"intValue": "1"}]}}},
                    {"key": "nested", "value": {"kvlistValue": {"values": [
                        {"key": "z", "value": {"stringValue": "tab\there"}},
                        {"key": "a", "value": {"doubleValue": 3.0}}]}}}
                 ]},
                {"timeUnixNano": (t + 1_000).to_string(), "severityNumber": 9,
                 "body": {"kvlistValue": {"values": [
                    {"key": "topic", "value": {"stringValue": "rt/chatter"}}]}},
                 "attributes": [{"key": "host.name", "value": {"stringValue": "ecu=2"}}],
                 "droppedAttributesCount": 2}
            ]}]
    }]})
    .to_string()
}

fn post_logs(http: u16) {
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "-XPOST"])
        .arg(format!("http://127.0.0.1:{http}/v1/logs"))
        .args(["-H", "Content-Type: application/json"])
        .args(["--data-binary", &logs_export()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Every field row of the measurements `filter` picks in `bucket` (its measurement, time,
/// tags, field, value as text), sorted.
fn rows(stack: &RunningStack, bucket: &str, filter: &str) -> Vec<String> {
    let flux = format!(
        r#"from(bucket: "{bucket}") |> range(start: 0)
  |> filter(fn: (r) => {filter})
  |> drop(columns: ["_start", "_stop"])
  |> map(fn: (r) => ({{r with _value: string(v: r._value)}}))
  |> group()"#
    );
    let mut rows: Vec<String> = stack
        .influx
        .query(&flux)
        .into_iter()
        .map(|r| {
            let mut kv: Vec<String> = r
                .into_iter()
                .filter(|(k, v)| !v.is_empty() && k != "result" && k != "table")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            kv.sort();
            kv.join(",")
        })
        .collect();
    rows.sort();
    rows
}

/// The last `ddshark_join` point of the join's raw bucket: field → value.
fn counters(stack: &RunningStack) -> HashMap<String, i64> {
    stack
        .influx
        .query(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "ddshark_join") |> last()"#,
            stack.influx.bucket
        ))
        .into_iter()
        .map(|r| (r["_field"].clone(), r["_value"].parse().unwrap()))
        .collect()
}

/// The collector sent every metric point and log record it accepted to the join, and none
/// failed.
fn drained(stack: &RunningStack) {
    let metrics = stack.var("DDSHARK_OTELCOL_METRICS_URL");
    for (accepted, sent, failed) in [
        (
            "otelcol_receiver_accepted_metric_points",
            "otelcol_exporter_sent_metric_points",
            "otelcol_exporter_send_failed_metric_points",
        ),
        (
            "otelcol_receiver_accepted_log_records",
            "otelcol_exporter_sent_log_records",
            "otelcol_exporter_send_failed_log_records",
        ),
    ] {
        let join = "exporter=\"otlp_grpc/join\"";
        wait_for(sent, Duration::from_secs(120), || {
            let a = metric_sum(metrics, accepted, &[]);
            a > 0 && metric_sum(metrics, sent, &[join]) == a
        });
        let f = metric_sum(metrics, failed, &[join]);
        assert_eq!(f, 0, "{failed}\n{}", scrape(metrics));
    }
}

/// A row without what differs between runs of the same replay (the module's docs); None
/// for a `start_time_unix_nano` row.
fn normalized(row: &str) -> Option<String> {
    if row.contains("_field=start_time_unix_nano") {
        return None;
    }
    let exporter_counter = row.contains("_measurement=ddshark.otlp.");
    let kept: Vec<String> = row
        .split(',')
        .filter(|kv| !kv.starts_with("_time=") && !kv.starts_with("service.instance.id="))
        .filter(|kv| !(exporter_counter && kv.starts_with("_value=")))
        .map(|kv| {
            if kv.starts_with("otel.library.version=") {
                "otel.library.version=*".to_string()
            } else {
                kv.to_string()
            }
        })
        .collect();
    // (one line per row: a value's line break written as \n; InfluxDB's CSV answer has it
    // as \r\n)
    Some(kept.join(",").replace("\r\n", "\\n").replace('\n', "\\n"))
}

#[test]
fn the_joins_metrics_and_logs_are_telegrafs() {
    let run_dir = fresh_run_dir("telemetry-influx");
    let stack = RunningStack::start(&run_dir, &[]);
    let grpc = port_of(stack.var("DDSHARK_OTLP_ENDPOINT"));
    let http = port_of(stack.var("DDSHARK_OTLP_HTTP_ENDPOINT"));
    for (fixture_dir, host) in [
        ("k3_fastdds_deadline", "a"),
        ("k2_fastdds_shm", "b"),
        ("m_fastdds_sros2", "a"),
        ("l2_fastdds_udp_tcp", "b"),
        ("b_large_frag", "a"),
    ] {
        replay(grpc, &fixture(&format!("{fixture_dir}/{host}.pcap")), host);
    }
    post_logs(http);
    drained(&stack);

    let golden_path = repo_root().join("crates/ddshark/tests/golden/telemetry_telegraf.txt");
    let golden: BTreeSet<String> = std::fs::read_to_string(&golden_path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let joins = || -> BTreeSet<String> {
        [
            (
                &stack.influx.long_bucket,
                r#"r._measurement =~ /^ddshark\./"#,
            ),
            (&stack.influx.bucket, r#"r._measurement == "logs""#),
        ]
        .into_iter()
        .flat_map(|(bucket, filter)| rows(&stack, bucket, filter))
        .filter_map(|r| normalized(&r))
        .collect()
    };
    let mut got = BTreeSet::new();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(60) {
        got = joins();
        if got == golden {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let only = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> Vec<String> {
        a.difference(b).take(5).cloned().collect()
    };
    assert!(
        got == golden,
        "{} rows of the join's, {} of Telegraf's ({}); only the join's: {:#?}\nonly Telegraf's: {:#?}",
        got.len(),
        golden.len(),
        golden_path.display(),
        only(&got, &golden),
        only(&golden, &got)
    );
    // (the join writes its counters once per push: wait for one that counts what came in)
    let mut c = counters(&stack);
    wait_for("the join's counters point", Duration::from_secs(60), || {
        c = counters(&stack);
        c.get("telemetry_points").is_some_and(|n| *n > 0)
    });
    assert_eq!(c.get("telemetry_rejected"), Some(&0), "{c:?}");
    assert_eq!(c.get("otlp_refused"), Some(&0), "{c:?}");
    assert!(c["telemetry_points"] > 0, "{c:?}");
}
