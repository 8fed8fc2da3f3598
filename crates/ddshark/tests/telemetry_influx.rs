//! ddshark's OTLP metrics and logs written by the join (`ddshark join --otlp-grpc …
//! --influx-url …`) against Telegraf 1.39.3's layout of the same exports (issue 32: the
//! join takes them so that Telegraf can leave the stack): `scripts/stack/start.sh`'s influxd
//! and Telegraf, and a second real collector (deploy/otelcol/config.yaml) whose metrics and
//! logs pipelines export to both Telegraf and a join of the test's, which writes buckets of
//! its own in that influxd. `ddshark -r --otlp` of fixtures with topics, deadlines, shared
//! memory, DDS Security and RTPS over TCP goes through it (every `ddshark.*` metric), and an
//! OTLP/HTTP logs export with every kind of value. Then the join's long bucket holds exactly
//! Telegraf's `ddshark.*` points, its raw bucket exactly Telegraf's `logs` (every point, tag
//! and field, values to the last digit, times to the ns), and its counters say nothing was
//! refused.
//!
//! Needs the stack `scripts/stack/build.sh` caches (`common::stack::stack_bin`): without
//! it this test FAILS, naming how to build it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::fs::File;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::stack::{fresh_run_dir, metric_sum, scrape, stack_bin, RunningStack};
use common::{fixture, repo_root};

/// A child process, killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

const JOIN_BUCKETS: [&str; 2] = ["telemetry_raw", "telemetry_long"];

fn start_join(stack: &RunningStack, dir: &Path, port: u16) -> Proc {
    let err = File::create(dir.join("join.err")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(["join", "--otlp-grpc", &format!("127.0.0.1:{port}")])
        .args(["--period", "1s"])
        .args(["--influx-url", stack.var("DDSHARK_INFLUX_URL")])
        .arg("--influx-token-file")
        .arg(stack.run_dir.join("secrets/influx-token"))
        .args([
            "--raw-bucket",
            JOIN_BUCKETS[0],
            "--long-bucket",
            JOIN_BUCKETS[1],
        ])
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .unwrap();
    Proc(child)
}

/// The second collector: metrics and logs to Telegraf and to the join; (ddshark's) spans
/// nowhere.
fn start_collector(stack: &RunningStack, dir: &Path, join_port: u16) -> (Proc, u16, u16, String) {
    let deploy = repo_root().join("deploy/otelcol");
    let (grpc, http, health, metrics, prom) = (
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
    );
    let log = File::create(dir.join("otelcol.log")).unwrap();
    let both = "[otlp/telegraf, otlp/join]";
    let child = Command::new(stack_bin("otelcol-ddshark"))
        .arg(format!("--config={}", deploy.join("config.yaml").display()))
        .current_dir(dir)
        .env("DDSHARK_OTLP_GRPC_PORT", grpc.to_string())
        .env("DDSHARK_OTLP_HTTP_PORT", http.to_string())
        .env("DDSHARK_OTELCOL_HEALTH_PORT", health.to_string())
        .env("DDSHARK_OTELCOL_METRICS_PORT", metrics.to_string())
        .env("DDSHARK_OTELCOL_PROM_PORT", prom.to_string())
        .env(
            "DDSHARK_TELEGRAF_OTLP_ADDR",
            stack.var("DDSHARK_TELEGRAF_OTLP_ADDR"),
        )
        .env("DDSHARK_OTELCOL_TRACES_EXPORTERS", "[debug]")
        .env("DDSHARK_OTELCOL_METRICS_EXPORTERS", both)
        .env("DDSHARK_OTELCOL_LOGS_EXPORTERS", both)
        .env("DDSHARK_JOIN_OTLP_ADDR", format!("127.0.0.1:{join_port}"))
        .env("DDSHARK_OTELCOL_STORAGE_DIR", dir.join("queue"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{health}/");
    wait_for(
        "the collector's health check",
        Duration::from_secs(60),
        || {
            Command::new("curl")
                .args(["-fsS", "--max-time", "2", &url])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        },
    );
    (
        Proc(child),
        grpc,
        http,
        format!("http://127.0.0.1:{metrics}/metrics"),
    )
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

/// Both exporters of the collector sent every metric point and log record it accepted.
fn drained(metrics: &str) {
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
        let sent_by = |e: &str| metric_sum(metrics, sent, &[&format!("exporter=\"{e}\"")]);
        wait_for(sent, Duration::from_secs(120), || {
            let a = metric_sum(metrics, accepted, &[]);
            a > 0 && sent_by("otlp/join") == a && sent_by("otlp/telegraf") == a
        });
        for e in ["otlp/join", "otlp/telegraf"] {
            let f = metric_sum(metrics, failed, &[&format!("exporter=\"{e}\"")]);
            assert_eq!(f, 0, "{failed} {e}\n{}", scrape(metrics));
        }
    }
}

fn make_buckets(stack: &RunningStack) {
    let influx = &stack.influx;
    let orgs = Command::new("curl")
        .args(["-sS", "--fail-with-body"])
        .arg(format!("{}/api/v2/orgs?org={}", influx.url, influx.org))
        .arg("-H")
        .arg(format!("Authorization: Token {}", influx.token))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&orgs.stdout).unwrap();
    let org_id = v["orgs"][0]["id"].as_str().unwrap().to_string();
    for b in JOIN_BUCKETS {
        let body = serde_json::json!({"orgID": org_id, "name": b, "retentionRules": []});
        let out = Command::new("curl")
            .args(["-sS", "--fail-with-body", "-XPOST"])
            .arg(format!("{}/api/v2/buckets", influx.url))
            .arg("-H")
            .arg(format!("Authorization: Token {}", influx.token))
            .args(["-H", "Content-Type: application/json"])
            .args(["--data-binary", &body.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
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

/// The field types of the measurements `filter` picks in `bucket` (what `rows`' strings
/// cannot tell: 1 as an integer or as a float).
fn field_types(stack: &RunningStack, bucket: &str, filter: &str) -> Vec<String> {
    let flux = format!(
        r#"import "types"
from(bucket: "{bucket}") |> range(start: 0)
  |> filter(fn: (r) => {filter})
  |> map(fn: (r) => ({{_measurement: r._measurement, _field: r._field,
       t: if types.isType(v: r._value, type: "int") then "int"
          else if types.isType(v: r._value, type: "float") then "float"
          else if types.isType(v: r._value, type: "string") then "string"
          else if types.isType(v: r._value, type: "bool") then "bool" else "other"}}))
  |> group(columns: ["_measurement", "_field", "t"]) |> first(column: "t")
  |> group()"#
    );
    let mut rows: Vec<String> = stack
        .influx
        .query(&flux)
        .into_iter()
        .map(|r| format!("{} {} {}", r["_measurement"], r["_field"], r["t"]))
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
            JOIN_BUCKETS[0]
        ))
        .into_iter()
        .map(|r| (r["_field"].clone(), r["_value"].parse().unwrap()))
        .collect()
}

#[test]
fn the_joins_metrics_and_logs_equal_telegrafs_point_for_point() {
    let run_dir = fresh_run_dir("telemetry-influx");
    std::fs::create_dir_all(&run_dir).unwrap();
    let stack = RunningStack::start(&run_dir.join("stack"), &[]);
    make_buckets(&stack);
    let dir = run_dir.join("second");
    std::fs::create_dir_all(&dir).unwrap();
    let join_port = free_port();
    let _join = start_join(&stack, &dir, join_port);
    let (_collector, grpc, http, metrics) = start_collector(&stack, &dir, join_port);

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
    drained(&metrics);

    let metrics_filter = r#"r._measurement =~ /^ddshark\./"#;
    let logs_filter = r#"r._measurement == "logs""#;
    let (telegraf_raw, telegraf_long) = (&stack.influx.bucket, &stack.influx.long_bucket);
    let mut sizes = Vec::new();
    for (telegraf, join, filter) in [
        (telegraf_long, JOIN_BUCKETS[1], metrics_filter),
        (telegraf_raw, JOIN_BUCKETS[0], logs_filter),
    ] {
        let mut last: (Vec<String>, Vec<String>);
        let same = {
            let t = Instant::now();
            loop {
                last = (rows(&stack, telegraf, filter), rows(&stack, join, filter));
                if !last.0.is_empty() && last.0 == last.1 {
                    break true;
                }
                if t.elapsed() > Duration::from_secs(60) {
                    break false;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        };
        if !same {
            let only = |a: &[String], b: &[String]| -> Vec<String> {
                a.iter()
                    .filter(|r| !b.contains(r))
                    .take(5)
                    .cloned()
                    .collect()
            };
            panic!(
                "{filter}: Telegraf {} rows, the join {}; only Telegraf's: {:#?}\nonly the join's: {:#?}",
                last.0.len(),
                last.1.len(),
                only(&last.0, &last.1),
                only(&last.1, &last.0)
            );
        }
        assert_eq!(
            field_types(&stack, telegraf, filter),
            field_types(&stack, join, filter),
            "{filter}: field types"
        );
        sizes.push(last.0.len());
    }
    eprintln!(
        "equal: {} metric field rows (ddshark.*), {} log field rows",
        sizes[0], sizes[1]
    );
    // (every kind of ddshark metric went through: topics, secured, TCP, the exporter's own)
    let names = rows(
        &stack,
        JOIN_BUCKETS[1],
        r#"r._measurement =~ /^ddshark\.(topic|secured|tcp|otlp)\./"#,
    );
    for family in [
        "ddshark.topic.",
        "ddshark.secured.",
        "ddshark.tcp.",
        "ddshark.otlp.",
    ] {
        assert!(
            names
                .iter()
                .any(|r| r.contains(&format!("_measurement={family}"))),
            "no {family}* point"
        );
    }
    // 2 records, each with body, severity, … : at least 9 field rows
    assert!(sizes[1] >= 9, "{sizes:?}");
    let c = counters(&stack);
    assert_eq!(c.get("telemetry_rejected"), Some(&0), "{c:?}");
    assert_eq!(c.get("otlp_refused"), Some(&0), "{c:?}");
    assert!(c["telemetry_points"] > 0, "{c:?}");
    let _ = std::fs::remove_dir_all(&run_dir);
}
