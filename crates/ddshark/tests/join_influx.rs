//! The join writing InfluxDB itself (`ddshark join --otlp-grpc … --influx-url …`) in the
//! lean layout (docs/span-schema.md, "In InfluxDB: lean points"): `scripts/stack/start.sh`'s
//! influxd, and beside the stack's own collector and join a second real collector
//! (deploy/otelcol/config.yaml) that exports every span to a join of the test's, which
//! writes its own buckets of that influxd. `ddshark -r` of both hosts of two fixtures goes
//! through it, with a kill -9 of the join and one of influxd on the way (each started again
//! as before). Then the join's raw bucket holds one `spans` point per span exported, each
//! kind with exactly the tags and fields `span_schema` gives it (at most 8), the writers'
//! facts in `dds_writers` once per writer and host (again only after the kills), its long
//! bucket every latency of the captures, and its counters say nothing was refused or dropped.
//!
//! Needs the stack `scripts/stack/build.sh` caches (`common::stack::stack_bin`): without
//! it this test FAILS, naming how to build it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs::File;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::stack::{fresh_run_dir, metric_sum, scrape, stack_bin, wait_for, RunningStack};
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

fn kill9(pid: u32) {
    let st = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    // (until it is gone)
    wait_for("the killed process to go", Duration::from_secs(10), || {
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    });
}

const JOIN_BUCKETS: [&str; 2] = ["join_raw", "join_long"];

fn start_join(stack: &RunningStack, dir: &Path, port: u16, n: usize) -> Proc {
    let err = File::create(dir.join(format!("join-{n}.err"))).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(["join", "--otlp-grpc", &format!("127.0.0.1:{port}")])
        .args(["--period", "1s", "--settle-pushes", "5"])
        .arg("--state")
        .arg(dir.join("join.state"))
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

/// The second collector: every span to the join.
fn start_collector(dir: &Path, join_port: u16) -> (Proc, u16, String) {
    let deploy = repo_root().join("deploy/otelcol");
    let (otlp, http, health, metrics, prom) = (
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
    );
    let log = File::create(dir.join("otelcol.log")).unwrap();
    let child = Command::new(stack_bin("otelcol-ddshark"))
        .arg(format!("--config={}", deploy.join("config.yaml").display()))
        .current_dir(dir)
        .env("DDSHARK_OTLP_GRPC_PORT", otlp.to_string())
        .env("DDSHARK_OTLP_HTTP_PORT", http.to_string())
        .env("DDSHARK_OTELCOL_HEALTH_PORT", health.to_string())
        .env("DDSHARK_OTELCOL_METRICS_PORT", metrics.to_string())
        .env("DDSHARK_OTELCOL_PROM_PORT", prom.to_string())
        .env("DDSHARK_OTELCOL_TRACES_EXPORTERS", "[otlp_grpc/join]")
        .env("DDSHARK_OTELCOL_METRICS_EXPORTERS", "[debug]")
        .env("DDSHARK_OTELCOL_LOGS_EXPORTERS", "[debug]")
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
        otlp,
        format!("http://127.0.0.1:{metrics}/metrics"),
    )
}

/// Replays `pcap` as `host`: the spans it sent.
fn replay(otlp: u16, pcap: &Path, host: &str) -> u64 {
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
    assert!(
        err.contains("0 dropped (queue full), 0 failed, 0 abandoned"),
        "{host}: export not clean:\n{err}"
    );
    let sent = err
        .split(" spans: ")
        .next()
        .and_then(|head| head.rsplit(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok());
    sent.unwrap_or_else(|| panic!("{host}: no span count in:\n{err}"))
}

/// The collector sent the join every span it accepted; how many.
fn drained(metrics: &str) -> u64 {
    let join = "exporter=\"otlp_grpc/join\"";
    let accepted = || metric_sum(metrics, "otelcol_receiver_accepted_spans", &[]);
    wait_for(
        "the collector's exports to the join",
        Duration::from_secs(180),
        || {
            let a = accepted();
            a > 0 && metric_sum(metrics, "otelcol_exporter_sent_spans", &[join]) == a
        },
    );
    let failed = metric_sum(metrics, "otelcol_exporter_send_failed_spans", &[join]);
    assert_eq!(failed, 0, "{}", scrape(metrics));
    accepted()
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

/// The field keys of `measurement`'s points in the join's raw bucket with tag `tag` =
/// `value`.
fn field_keys(stack: &RunningStack, measurement: &str, tag: &str, value: &str) -> Vec<String> {
    let mut keys: Vec<String> = stack
        .influx
        .query(&format!(
            r#"import "influxdata/influxdb/schema"
schema.fieldKeys(bucket: "{}", start: 0, predicate: (r) => r._measurement == "{measurement}" and r["{tag}"] == "{value}")"#,
            JOIN_BUCKETS[0]
        ))
        .into_iter()
        .map(|r| r["_value"].clone())
        .collect();
    keys.sort();
    keys
}

/// The tag keys of `measurement` in the join's raw bucket (InfluxDB's own columns left out).
fn tag_keys(stack: &RunningStack, measurement: &str) -> Vec<String> {
    let mut keys: Vec<String> = stack
        .influx
        .query(&format!(
            r#"import "influxdata/influxdb/schema"
schema.tagKeys(bucket: "{}", start: 0, predicate: (r) => r._measurement == "{measurement}")"#,
            JOIN_BUCKETS[0]
        ))
        .into_iter()
        .map(|r| r["_value"].clone())
        .filter(|k| !k.starts_with('_'))
        .collect();
    keys.sort();
    keys
}

fn sorted(v: Vec<&str>) -> Vec<String> {
    let mut v: Vec<String> = v.into_iter().map(String::from).collect();
    v.sort();
    v
}

/// The last `ddshark_join` point of the join's raw bucket: field → value.
fn counters(stack: &RunningStack) -> std::collections::HashMap<String, i64> {
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
fn the_joins_lean_points_through_kills_of_the_join_and_influxd() {
    let run_dir = fresh_run_dir("join-influx");
    std::fs::create_dir_all(&run_dir).unwrap();
    let stack = RunningStack::start(&run_dir.join("stack"), &[("DDSHARK_JOIN_PERIOD", "1s")]);
    make_buckets(&stack);
    let dir = run_dir.join("second");
    std::fs::create_dir_all(&dir).unwrap();
    let join_port = free_port();
    let mut join = start_join(&stack, &dir, join_port, 0);
    let (_collector, otlp, metrics) = start_collector(&dir, join_port);

    let (first, second) = ("b_large_frag", "a_small_reliable");
    let mut sent = 0;
    for host in ["a", "b"] {
        sent += replay(otlp, &fixture(&format!("{first}/{host}.pcap")), host);
    }
    drained(&metrics);
    // kill -9 of the join: what it acknowledged is in InfluxDB or its state and journal
    kill9(join.0.id());
    drop(join);
    sent += replay(otlp, &fixture(&format!("{second}/a.pcap")), "a");
    join = start_join(&stack, &dir, join_port, 1);
    // kill -9 of influxd while the join writes: it retries
    kill9(stack.pid("influxd"));
    sent += replay(otlp, &fixture(&format!("{second}/b.pcap")), "b");
    std::thread::sleep(Duration::from_secs(3));
    let st = Command::new(repo_root().join("scripts/stack/relaunch.sh"))
        .arg("--run-dir")
        .arg(&stack.run_dir)
        .arg("influxd")
        .status()
        .unwrap();
    assert!(st.success(), "relaunch.sh influxd");
    let accepted = drained(&metrics);

    // One `spans` point per span exported (2 × 361 + 2 × 422), exactly once.
    let count = |filter: &str| {
        stack.influx.query_count(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => {filter}) |> group() |> count()"#,
            JOIN_BUCKETS[0]
        ))
    };
    let mut stored = 0;
    wait_for("a spans point per span", Duration::from_secs(120), || {
        stored = count(r#"r._measurement == "spans" and r._field == "end_time_unix_nano""#);
        stored == sent
    });
    assert_eq!(sent, 1566);
    assert_eq!(accepted, sent, "the collector took every span ddshark sent");
    // Each kind with the tags and fields the schema gives it, at most 8 fields.
    // (PCP and VLAN are tags of tagged frames only: these captures have none)
    assert_eq!(
        tag_keys(&stack, "spans"),
        sorted(
            span_schema::raw_span_tags()
                .into_iter()
                .filter(|t| ![span_schema::attr::PCP, span_schema::attr::VLAN_ID].contains(t))
                .collect()
        )
    );
    for kind in span_schema::SpanKind::ALL {
        let want = sorted(
            span_schema::raw_span_fields(kind)
                .into_iter()
                .map(|(k, _)| k)
                .collect(),
        );
        let have = field_keys(&stack, "spans", "span.name", kind.name());
        assert_eq!(have, want, "{} fields", kind.name());
        assert!(
            have.len() <= span_schema::MAX_RAW_FIELDS,
            "{}: {have:?}",
            kind.name()
        );
    }
    // The writers' facts: a series per writer, host and run, written when first seen (again
    // only after the kills made the collector resend), with its type, vendor and addresses.
    let series = |r: &std::collections::HashMap<String, String>| {
        (
            r["host.name"].clone(),
            r["service.instance.id"].clone(),
            r["writer_id"].clone(),
        )
    };
    let spans_writers: std::collections::BTreeSet<_> = stack
        .influx
        .query(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r._field == "sn")
  |> last() |> group()"#,
            JOIN_BUCKETS[0]
        ))
        .iter()
        .map(series)
        .collect();
    assert!(!spans_writers.is_empty());
    let facts = stack.influx.query(&format!(
        r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_writers" and r._field == "src_ip")
  |> group()"#,
        JOIN_BUCKETS[0]
    ));
    let fact_writers: std::collections::BTreeSet<_> = facts.iter().map(series).collect();
    // (every writer of the spans has its facts; SAMPLE spans give each its source address)
    assert_eq!(fact_writers, spans_writers);
    for r in &facts {
        for tag in [
            "vendor_name",
            "traffic_type",
            "capture.interface",
            "service.name",
        ] {
            assert!(r.get(tag).is_some_and(|v| !v.is_empty()), "{tag}: {r:?}");
        }
    }
    assert!(
        facts.len() <= 3 * fact_writers.len(),
        "{} dds_writers points for {} writers",
        facts.len(),
        fact_writers.len()
    );
    // The joined points: one dds_latency per sample and receiver, as `ddshark latency`
    // finds them in these captures (join_otlp.rs holds them equal to it, value for value):
    // b_large_frag 44, a_small_reliable 208.
    let latencies = || {
        stack.influx.query_count(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_latency" and r._field == "latency_ns")
  |> group() |> count()"#,
            JOIN_BUCKETS[1]
        ))
    };
    wait_for(
        "the join's dds_latency points",
        Duration::from_secs(120),
        || latencies() == 252,
    );
    // (the counters point of a push after the join's queue emptied: the one read when the
    // latencies arrived may still count points waiting to be written, 845 in one CI run)
    let mut c = counters(&stack);
    wait_for(
        "the join's InfluxDB queue empty",
        Duration::from_secs(120),
        || {
            c = counters(&stack);
            c.get("influx_queued_points") == Some(&0)
        },
    );
    eprintln!("join counters once its queue emptied: {c:?}");
    for k in [
        "influx_points_rejected",
        "points_dropped",
        "rejected",
        "otlp_refused",
    ] {
        assert_eq!(c.get(k), Some(&0), "{k}: {c:?}");
    }
    assert!(c["influx_points_written"] > 1566, "{c:?}");
    // (the kill of influxd made the join retry)
    assert!(c["influx_retries"] > 0, "{c:?}");
    join.0.kill().unwrap();
    let _ = std::fs::remove_dir_all(&run_dir);
}
