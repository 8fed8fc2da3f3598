//! OTLP export against the real OpenTelemetry Collector and InfluxDB 2, started by
//! `scripts/stack/start.sh` in a throwaway run dir on free ports.
//!
//! Needs the binaries that `scripts/stack/build.sh` caches (`common::stack::stack_dir`).
//! Without them these tests FAIL (they never skip): build them once with `scripts/stack/build.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::stack::{fresh_run_dir, metric_sum, scrape, stack_bin, RunningStack};
use common::{fixture, ns_of, read_tsv, repo_root};
use rtps_dissect::Guid;
use serde_json::Value;

/// One stack (influxd + telegraf + otelcol) in its own run dir, on free ports; stopped on
/// drop.
struct Stack {
    run: RunningStack,
    /// A collector this test restarted itself (not known to stop.sh).
    own_collector: Option<Child>,
}

impl std::ops::Deref for Stack {
    type Target = RunningStack;
    fn deref(&self) -> &RunningStack {
        &self.run
    }
}

/// The port of an address or URL in stack.env (`host:port`, `http://host:port/path`).
fn port_of(addr: &str) -> String {
    let after_host = addr.rsplit_once(':').map_or(addr, |(_, p)| p);
    after_host.split('/').next().unwrap_or("").to_string()
}

impl Stack {
    fn start(tag: &str) -> Stack {
        let run = RunningStack::start(&fresh_run_dir(&format!("otlp-test-{tag}")), &[]);
        Stack {
            run,
            own_collector: None,
        }
    }

    fn grpc(&self) -> String {
        self.var("DDSHARK_OTLP_ENDPOINT").to_string()
    }
    fn http(&self) -> String {
        self.var("DDSHARK_OTLP_HTTP_ENDPOINT").to_string()
    }

    /// SIGTERM the collector that start.sh started (by its recorded pid).
    fn kill_collector(&mut self) {
        if let Some(mut c) = self.own_collector.take() {
            let _ = c.kill();
            let _ = c.wait();
            return;
        }
        let pid = self.pid("otelcol");
        let st = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(st.success(), "kill {pid}");
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let t = Instant::now();
        while proc.exists() && t.elapsed() < Duration::from_secs(20) {
            // A zombie until start.sh's shell reaps it is fine: it listens no more.
            if std::fs::read_to_string(proc.join("stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Start the collector again with the same configuration (as a child of the test).
    fn restart_collector(&mut self) {
        let log = std::fs::File::create(self.run_dir.join("logs/otelcol-restarted.log")).unwrap();
        let child = Command::new(stack_bin("otelcol-ddshark"))
            .arg(format!(
                "--config={}",
                repo_root().join("deploy/otelcol/config.yaml").display()
            ))
            .current_dir(&self.run_dir)
            .envs([
                ("DDSHARK_OTELCOL_BIND", "127.0.0.1".to_string()),
                ("DDSHARK_OTLP_GRPC_PORT", port_of(&self.grpc())),
                ("DDSHARK_OTLP_HTTP_PORT", port_of(&self.http())),
                (
                    "DDSHARK_OTELCOL_HEALTH_PORT",
                    port_of(self.var("DDSHARK_OTELCOL_HEALTH_URL")),
                ),
                (
                    "DDSHARK_OTELCOL_METRICS_PORT",
                    port_of(self.var("DDSHARK_OTELCOL_METRICS_URL")),
                ),
                (
                    "DDSHARK_OTELCOL_PROM_PORT",
                    port_of(self.var("DDSHARK_OTELCOL_PROM_URL")),
                ),
                (
                    "DDSHARK_TELEGRAF_OTLP_ADDR",
                    self.var("DDSHARK_TELEGRAF_OTLP_ADDR").to_string(),
                ),
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting otelcol-ddshark");
        self.own_collector = Some(child);
        let url = self.var("DDSHARK_OTELCOL_HEALTH_URL").to_string();
        let t = Instant::now();
        loop {
            let ok = Command::new("curl")
                .args(["-fsS", "--max-time", "1", "-o", "/dev/null", &url])
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "restarted collector not healthy"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn count_spans(&self, host: &str) -> usize {
        let bucket = &self.influx.bucket;
        self.influx.query_count(&format!(
            r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "{host}" and r._field == "end_time_unix_nano")
  |> filter(fn: (r) => r["span.name"] != "SAMPLE")
  |> group() |> count()"#
        )) as usize
    }

    /// Waits until InfluxDB holds `n` spans of `host` (the collector batches).
    fn wait_spans(&self, host: &str, n: usize) -> usize {
        let t = Instant::now();
        loop {
            let c = self.count_spans(host);
            if c >= n || t.elapsed() > Duration::from_secs(40) {
                // Let late duplicates, if any, arrive before the caller counts.
                std::thread::sleep(Duration::from_millis(1500));
                return self.count_spans(host);
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Every DATA/DATA_FRAG span of `host` (`kind` "!SAMPLE"; "SAMPLE": the SAMPLE
    /// spans), one row each (tags and typed fields as columns), with `t_ns` = start.
    fn spans_of(&self, host: &str, kind: &str) -> Vec<SpanRow> {
        let kind = match kind.strip_prefix('!') {
            Some(k) => format!(r#"r["span.name"] != "{k}""#),
            None => format!(r#"r["span.name"] == "{kind}""#),
        };
        let bucket = &self.influx.bucket;
        let rows = self.influx.query(&format!(
            r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "{host}")
  |> filter(fn: (r) => {kind})
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({{r with t_ns: int(v: r._time)}}))
  |> group()"#
        ));
        rows.into_iter()
            .map(|r| {
                assert!(
                    !r.contains_key("attributes"),
                    "a span attribute landed in the JSON field `attributes` (not in Telegraf's \
                     span_dimensions): {r:?}"
                );
                SpanRow { cols: r }
            })
            .collect()
    }

    fn spans(&self, host: &str) -> Vec<SpanRow> {
        self.spans_of(host, "!SAMPLE")
    }

    /// `ddshark -r PCAP --otlp` (gRPC) into this stack as `host`; see `replay_to`.
    fn replay(&self, pcap: &Path, host: &str) -> PathBuf {
        self.replay_to(&self.grpc(), pcap, host, &[])
    }

    /// `ddshark -r PCAP --otlp ENDPOINT ARGS` as `host`, which must export cleanly; its
    /// final snapshot is written to RUN_DIR/HOST.json, the path returned.
    fn replay_to(&self, endpoint: &str, pcap: &Path, host: &str, args: &[&str]) -> PathBuf {
        let final_json = self.run_dir.join(format!("{host}.json"));
        let mut all = vec![
            "-r",
            pcap.to_str().unwrap(),
            "--no-tui",
            "--otlp",
            endpoint,
            "--host-name",
            host,
            "--final-json",
            final_json.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        let out = ddshark(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("0 dropped (queue full), 0 failed, 0 abandoned"),
            "{host}: export not clean:\n{err}"
        );
        final_json
    }

    /// Runs `flux` every 3 s until it returns rows, the same twice in a row (the collector
    /// and Telegraf batch), or `timeout` passed; its last rows, and whether they settled.
    fn settled(&self, flux: &str, timeout: Duration) -> (Vec<HashMap<String, String>>, bool) {
        let deadline = Instant::now() + timeout;
        let mut previous: Option<Vec<HashMap<String, String>>> = None;
        loop {
            let rows = self.influx.query(flux);
            if !rows.is_empty() && previous.as_ref() == Some(&rows) {
                return (rows, true);
            }
            if Instant::now() > deadline {
                return (rows, false);
            }
            previous = Some(rows);
            std::thread::sleep(Duration::from_secs(3));
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // (before the stack stops: stop.sh does not know this collector)
        if let Some(mut c) = self.own_collector.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One span as InfluxDB returns it pivoted: tags and fields are columns (CSV text; an
/// absent attribute is an empty cell).
struct SpanRow {
    cols: HashMap<String, String>,
}

impl SpanRow {
    fn tag(&self, k: &str) -> &str {
        self.cols.get(k).map(String::as_str).unwrap_or("")
    }
    fn int(&self, k: &str) -> Option<i64> {
        self.cols.get(k).and_then(|v| v.parse().ok())
    }
    /// An integer column as text ("" when absent or not an integer).
    fn int_text(&self, k: &str) -> String {
        self.int(k).map(|v| v.to_string()).unwrap_or_default()
    }
    fn str(&self, k: &str) -> Option<&str> {
        self.cols
            .get(k)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// `ddshark ARGS`, which must succeed.
fn ddshark(args: &[&str]) -> std::process::Output {
    let out = ddshark_status(args);
    assert!(
        out.status.success(),
        "ddshark {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `ddshark ARGS` whose export the collector cannot get: it must exit non-zero.
fn ddshark_refused(args: &[&str]) -> std::process::Output {
    let out = ddshark_status(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("spans not delivered"),
        "ddshark {args:?} exited 0 though nothing was delivered:\n{err}"
    );
    out
}

fn ddshark_status(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(args)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_HEADERS")
        .env_remove("OTEL_EXPORTER_OTLP_CERTIFICATE")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES")
        .output()
        .expect("running ddshark")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn guid_of(hex32: &str) -> Guid {
    let mut b = [0u8; 16];
    for (i, o) in b.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex32[2 * i..2 * i + 2], 16).expect("GUID hex");
    }
    Guid::from_bytes(b)
}

/// Checks every DATA/DATA_FRAG of the tshark oracle against the spans of `host`.
/// Returns (writer_id, sn) → trace ids seen.
fn check_host(
    stack: &Stack,
    host: &str,
    pcap: &Path,
    oracle_tsv: &str,
    expect_service: &str,
    shift_ns: &dyn Fn(u64) -> u64,
) -> Vec<(String, String, String, String)> {
    let oracle: Vec<_> = read_tsv(&fixture(oracle_tsv))
        .into_iter()
        .filter(|o| matches!(o["sm_kind"].as_str(), "DATA" | "DATA_FRAG") && o["in_icmp"] != "1")
        .collect();
    assert!(!oracle.is_empty(), "{oracle_tsv}: no DATA/DATA_FRAG");
    let got = stack.wait_spans(host, oracle.len());
    let spans = stack.spans(host);
    assert_eq!(got, spans.len());
    let mut by_key: HashMap<(i64, i64), Vec<&SpanRow>> = HashMap::new();
    for s in &spans {
        let frame = s.int("frame").expect("frame attribute");
        let idx = s
            .int("submessage_index")
            .expect("submessage_index attribute");
        by_key.entry((frame, idx + 1)).or_default().push(s);
    }
    let mut problems = Vec::new();
    let mut check = |what: &str, key: &str, want: String, have: String| {
        if want != have && problems.len() < 40 {
            problems.push(format!("{key}: {what}: want {want:?}, have {have:?}"));
        }
    };
    let iface = pcap.file_name().unwrap().to_string_lossy().into_owned();
    for o in &oracle {
        let frame: i64 = o["frame"].parse().unwrap();
        let idx: i64 = o["sm_idx"].parse().unwrap();
        let key = format!("{host} frame {frame} #{idx} {}", o["sm_kind"]);
        let found = by_key.get(&(frame, idx)).map(Vec::as_slice).unwrap_or(&[]);
        if found.len() != 1 {
            check("spans", &key, "1".into(), found.len().to_string());
            continue;
        }
        let s = found[0];
        let kind = o["sm_kind"].as_str();
        check("span.name", &key, kind.into(), s.tag("span.name").into());
        check(
            "writer_id",
            &key,
            o["writer_guid"].clone(),
            s.tag("writer_id").into(),
        );
        check("sn", &key, o["seq"].clone(), s.tag("sn").into());
        let fsn = if kind == "DATA" {
            "0".to_string()
        } else {
            o["frag_start"].clone()
        };
        check(
            "fragment_starting_num",
            &key,
            fsn,
            s.tag("fragment_starting_num").into(),
        );
        let shift = shift_ns(frame as u64);
        check(
            "start ns",
            &key,
            (ns_of(&o["t_first_ipfrag"]).unwrap() + shift).to_string(),
            s.tag("t_ns").into(),
        );
        check(
            "end ns",
            &key,
            (ns_of(&o["t_last_ipfrag"]).unwrap() + shift).to_string(),
            s.tag("end_time_unix_nano").into(),
        );
        let builtin = u8::from_str_radix(&o["writer_guid"][30..32], 16).unwrap() & 0xc0 == 0xc0;
        check(
            "traffic_type",
            &key,
            if builtin { "discovery" } else { "user" }.into(),
            s.tag("traffic_type").into(),
        );
        if !o["topic_tshark"].is_empty() {
            check(
                "topic_name",
                &key,
                o["topic_tshark"].clone(),
                s.tag("topic_name").into(),
            );
        }
        if !o["type_tshark"].is_empty() {
            check(
                "type_name",
                &key,
                o["type_tshark"].clone(),
                s.str("type_name").unwrap_or("").into(),
            );
        }
        if kind == "DATA_FRAG" {
            check(
                "sample_size",
                &key,
                o["sample_size"].clone(),
                s.int_text("sample_size"),
            );
            check(
                "frags_in_submessage",
                &key,
                o["frags_in_sm"].clone(),
                s.int_text("frags_in_submessage"),
            );
        } else {
            check(
                "frags_in_submessage",
                &key,
                "1".into(),
                s.int_text("frags_in_submessage"),
            );
        }
        if !o["data_len"].is_empty() {
            check(
                "payload_size",
                &key,
                o["data_len"].clone(),
                s.int_text("payload_size"),
            );
        }
        check(
            "src",
            &key,
            format!("{}:{}", o["src"], o["sport"]),
            s.str("src").unwrap_or("").into(),
        );
        check(
            "dst",
            &key,
            format!("{}:{}", o["dst"], o["dport"]),
            s.str("dst").unwrap_or("").into(),
        );
        check(
            "vendor_id",
            &key,
            o["vendor_id"].clone(),
            s.str("vendor_id").unwrap_or("").into(),
        );
        check("pcp", &key, o["pcp"].clone(), s.int_text("pcp"));
        check("vlan_id", &key, o["vlan_id"].clone(), s.int_text("vlan_id"));
        check(
            "capture.interface",
            &key,
            iface.clone(),
            s.tag("capture.interface").into(),
        );
        check(
            "service.name",
            &key,
            expect_service.into(),
            s.tag("service.name").into(),
        );
        let sn: i64 = o["seq"].parse().unwrap();
        let want_trace = hex(&otel_export::schema::trace_id(
            &guid_of(&o["writer_guid"]),
            sn,
        ));
        check("trace_id", &key, want_trace, s.tag("trace_id").into());
        // (span.kind is always Internal: Telegraf does not store it)
    }
    assert!(
        problems.is_empty(),
        "{host}: {} spans vs {} oracle DATA/DATA_FRAG; first problems:\n{}",
        spans.len(),
        oracle.len(),
        problems.join("\n")
    );
    assert_eq!(
        spans.len(),
        oracle.len(),
        "{host}: spans beyond the oracle's submessages"
    );
    spans
        .iter()
        .map(|s| {
            (
                s.tag("writer_id").to_string(),
                s.tag("sn").to_string(),
                s.tag("trace_id").to_string(),
                s.tag("span_id").to_string(),
            )
        })
        .collect()
}

/// Sender and receiver captures of two fixtures, exported as four hosts over
/// gRPC/HTTP with and without gzip: every DATA/DATA_FRAG is in InfluxDB exactly
/// once with the right attributes and ns timestamps; both sides of a sample
/// share one trace; span ids are unique.
#[test]
fn stack_two_hosts_every_submessage_exactly_once() {
    let stack = Stack::start("0");
    // The sender capture again, as a nanosecond pcap with sub-µs offsets per frame:
    // the exported timestamps must follow to the nanosecond.
    let ns_pcap = stack.run_dir.join("small-a-ns.pcap");
    write_ns_copy(&fixture("a_small_reliable/a.pcap"), &ns_pcap, sub_us_shift);
    let no_shift = |_: u64| 0u64;
    let runs: [Run; 6] = [
        (
            fixture("a_small_reliable/a.pcap"),
            "a_small_reliable/oracle_a_submsgs.tsv",
            "small-a",
            "grpc",
            "gzip",
            &no_shift,
        ),
        (
            fixture("a_small_reliable/b.pcap"),
            "a_small_reliable/oracle_b_submsgs.tsv",
            "small-b",
            "http",
            "none",
            &no_shift,
        ),
        (
            fixture("b_large_frag/a.pcap"),
            "b_large_frag/oracle_a_submsgs.tsv",
            "large-a",
            "http",
            "gzip",
            &no_shift,
        ),
        (
            fixture("b_large_frag/b.pcap"),
            "b_large_frag/oracle_b_submsgs.tsv",
            "large-b",
            "grpc",
            "none",
            &no_shift,
        ),
        (
            fixture("h_vlan_pcp/a.pcap"),
            "h_vlan_pcp/oracle_a_submsgs.tsv",
            "vlan-a",
            "grpc",
            "none",
            &no_shift,
        ),
        (
            ns_pcap.clone(),
            "a_small_reliable/oracle_a_submsgs.tsv",
            "small-a-ns",
            "grpc",
            "none",
            &sub_us_shift,
        ),
    ];
    let mut finals = Vec::new();
    for (path, _, host, proto, comp, _) in &runs {
        let endpoint = if *proto == "grpc" {
            stack.grpc()
        } else {
            stack.http()
        };
        let final_json = stack.replay_to(
            &endpoint,
            path,
            host,
            &[
                "--otlp-protocol",
                proto,
                "--otlp-compression",
                comp,
                "--service-name",
                "ddshark-e2e",
            ],
        );
        finals.push((*host, final_json));
    }
    let mut all = Vec::new();
    for (path, tsv, host, _, _, shift) in &runs {
        all.push((
            *host,
            check_host(&stack, host, path, tsv, "ddshark-e2e", *shift),
        ));
    }
    check_sample_spans(
        &stack,
        "small-a",
        "small-b",
        &fixture("a_small_reliable/a.pcap"),
        &fixture("a_small_reliable/b.pcap"),
    );
    // Span ids are unique over all hosts; trace id ↔ (writer, sn) is one to one.
    let mut span_ids = HashSet::new();
    let mut trace_of: HashMap<(String, String), String> = HashMap::new();
    let mut key_of: HashMap<String, (String, String)> = HashMap::new();
    let mut hosts_of: HashMap<String, HashSet<&str>> = HashMap::new();
    for (host, spans) in &all {
        for (w, sn, t, s) in spans {
            assert!(span_ids.insert(s.clone()), "span id {s} twice");
            let k = (w.clone(), sn.clone());
            assert_eq!(
                trace_of.entry(k.clone()).or_insert_with(|| t.clone()),
                t,
                "{k:?}: two traces"
            );
            assert_eq!(
                key_of.entry(t.clone()).or_insert_with(|| k.clone()),
                &k,
                "trace {t}: two samples"
            );
            hosts_of.entry(t.clone()).or_default().insert(host);
        }
    }
    // Samples captured on both sides share a trace: count them per fixture, as the oracle does.
    for (fixture_dir, a, b) in [
        ("a_small_reliable", "small-a", "small-b"),
        ("b_large_frag", "large-a", "large-b"),
    ] {
        let latency = read_tsv(&fixture(&format!("{fixture_dir}/oracle_latency.tsv")));
        let matched: HashSet<(String, String)> = latency
            .iter()
            .filter(|r| !r["t_send_first"].is_empty() && !r["t_recv_complete"].is_empty())
            .map(|r| (r["writer_guid"].clone(), r["seq"].clone()))
            .collect();
        let shared = hosts_of
            .iter()
            .filter(|(_, h)| h.contains(a) && h.contains(b))
            .count();
        assert!(
            shared > 0,
            "{fixture_dir}: no trace holds spans of both hosts"
        );
        assert!(
            !matched.is_empty(),
            "{fixture_dir}: oracle has no matched samples"
        );
        {
            for k in &matched {
                let t = trace_of
                    .get(k)
                    .unwrap_or_else(|| panic!("{fixture_dir}: {k:?} not exported"));
                let h = &hosts_of[t];
                assert!(
                    h.contains(a) && h.contains(b),
                    "{fixture_dir}: {k:?} not on both hosts: {h:?}"
                );
            }
        }
    }
    // --otlp-topic: only matching topics are exported (glob and re: patterns).
    let out = ddshark(&[
        "-r",
        fixture("a_small_reliable/a.pcap").to_str().unwrap(),
        "--no-tui",
        "--otlp",
        &stack.grpc(),
        "--host-name",
        "filtered",
        "--otlp-topic",
        "rt/c*",
        "--otlp-topic",
        "re:^DCPSPub.*",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let want = small_a_topics(&stack, "^(rt/c.*|DCPSPub.*)$");
    assert!(want > 0);
    // (offered = the 214 submessage spans + one SAMPLE span per sample)
    let counts = regex_lite_counts(&err);
    assert_eq!(counts.1 + counts.2, counts.0, "{err}");
    assert!(counts.0 > 214, "{err}");
    assert_eq!(stack.wait_spans("filtered", want), want);
    let bucket = &stack.influx.bucket;
    let rows = stack.influx.query(&format!(
        r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "filtered" and r._field == "end_time_unix_nano")
  |> filter(fn: (r) => not exists r.topic_name or not (r.topic_name =~ /^(rt\/c.*|DCPSPub.*)$/))
  |> group() |> count()"#
    ));
    assert!(
        rows.is_empty() || rows[0]["_value"] == "0",
        "unmatched topics exported: {rows:?}"
    );

    // Per-topic metrics: the last exported counters equal the final snapshot's.
    for (host, final_json) in finals {
        let snap: Value =
            serde_json::from_str(&std::fs::read_to_string(&final_json).unwrap()).unwrap();
        let want: BTreeMap<String, i64> = snap["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    t["samples"].as_i64().unwrap(),
                )
            })
            .collect();
        let long_bucket = &stack.influx.long_bucket;
        let rows = stack.influx.query(&format!(
            r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "ddshark.topic.samples" and r._field == "counter" and r["host.name"] == "{host}")
  |> group(columns: ["topic_name"]) |> sort(columns: ["_time"]) |> last() |> group()"#
        ));
        let have: BTreeMap<String, i64> = rows
            .iter()
            .map(|r| {
                (
                    r["topic_name"].clone(),
                    r["_value"].parse::<f64>().unwrap() as i64,
                )
            })
            .collect();
        assert_eq!(have, want, "{host}: ddshark.topic.samples");
    }
}

/// (offered, sent, filtered) of the exporter's summary line on stderr.
fn regex_lite_counts(stderr: &str) -> (u64, u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains(" spans: ") && l.contains(" sent, "))
        .unwrap_or_else(|| panic!("no exporter summary in {stderr}"));
    let num_before = |word: &str| -> u64 {
        let i = line
            .find(word)
            .unwrap_or_else(|| panic!("{word} in {line}"));
        line[..i]
            .trim_end()
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{word} in {line}"))
    };
    (
        num_before(" spans:"),
        num_before(" sent,"),
        num_before(" filtered,"),
    )
}

/// SAMPLE spans: on the two small fixture hosts, every sample `ddshark latency` matches
/// has its sender's SAMPLE span starting at t_send and its receiver's ending at t_recv,
/// complete, with typed fields.
fn check_sample_spans(stack: &Stack, a_host: &str, b_host: &str, a: &Path, b: &Path) {
    let out = ddshark(&[
        "latency",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "tsv",
        "-q",
    ]);
    let tsv = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = tsv.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let samples = |host: &str| -> HashMap<(String, String), SpanRow> {
        stack
            .spans_of(host, "SAMPLE")
            .into_iter()
            .map(|s| ((s.tag("writer_id").to_string(), s.tag("sn").to_string()), s))
            .collect()
    };
    let (sa, sb) = (samples(a_host), samples(b_host));
    let mut checked = 0;
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        if f[col("direction")] != "A->B" || f[col("status")] != "ok" {
            continue;
        }
        let key = (f[col("writer_guid")].to_string(), f[col("sn")].to_string());
        let s = sa
            .get(&key)
            .unwrap_or_else(|| panic!("{key:?}: no SAMPLE span on {a_host}"));
        let r = sb
            .get(&key)
            .unwrap_or_else(|| panic!("{key:?}: no SAMPLE span on {b_host}"));
        assert_eq!(s.tag("t_ns"), f[col("t_send_ns")], "{key:?}: t_send");
        assert_eq!(s.tag("start_ns"), f[col("t_send_ns")], "{key:?}: start_ns");
        assert_eq!(
            r.tag("end_time_unix_nano"),
            f[col("t_recv_ns")],
            "{key:?}: t_recv"
        );
        assert_eq!(r.int("fragments_missing"), Some(0), "{key:?}");
        assert_eq!(
            s.tag("repairs"),
            f[col("repairs_sender")],
            "{key:?}: repairs"
        );
        checked += 1;
    }
    assert!(checked > 100, "{checked} samples checked");
}

/// One replay: capture, oracle TSV, host.name, protocol, compression, time shift.
type Run<'a> = (
    PathBuf,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a dyn Fn(u64) -> u64,
);

/// Sub-microsecond offset of frame `n` (1-based) in the nanosecond copy.
fn sub_us_shift(frame: u64) -> u64 {
    (frame * 7919 + 1) % 1000
}

/// Copies a little-endian µs pcap as a ns pcap, adding `shift(frame)` ns to each frame.
fn write_ns_copy(src: &Path, dst: &Path, shift: fn(u64) -> u64) {
    let data = std::fs::read(src).unwrap();
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
    assert_eq!(
        u32_at(0),
        0xa1b2_c3d4,
        "{}: µs little-endian pcap expected",
        src.display()
    );
    let mut out = Vec::with_capacity(data.len());
    out.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    out.extend_from_slice(&data[4..24]);
    let (mut off, mut frame) = (24usize, 0u64);
    while off + 16 <= data.len() {
        frame += 1;
        let (sec, usec, incl) = (u32_at(off), u32_at(off + 4), u32_at(off + 8) as usize);
        let ns = u64::from(usec) * 1000 + shift(frame);
        assert!(ns < 1_000_000_000);
        out.extend_from_slice(&sec.to_le_bytes());
        out.extend_from_slice(&(ns as u32).to_le_bytes());
        out.extend_from_slice(&data[off + 8..off + 16 + incl]);
        off += 16 + incl;
    }
    std::fs::write(dst, out).unwrap();
}

/// Spans of host small-a whose topic matches `re` (a Flux regex).
fn small_a_topics(stack: &Stack, re: &str) -> usize {
    let bucket = &stack.influx.bucket;
    let rows = stack.influx.query(&format!(
        r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "small-a" and r._field == "end_time_unix_nano")
  |> filter(fn: (r) => r["span.name"] != "SAMPLE" and exists r.topic_name and r.topic_name =~ /{}/)
  |> group() |> count()"#,
        re.replace('/', "\\/")
    ));
    rows.first()
        .and_then(|r| r["_value"].parse().ok())
        .unwrap_or(0)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// The collector stops in the middle of a paced replay: ddshark keeps going,
/// reports drops, stays small, and spans flow again once the collector is back.
#[test]
fn stack_collector_restart_mid_run() {
    let mut stack = Stack::start("1");
    let pcap = fixture("b_large_frag/a.pcap");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args([
            "-r",
            pcap.to_str().unwrap(),
            "--no-tui",
            "--speed",
            "1",
            "--interval",
            "500ms",
            "--otlp",
            &stack.grpc(),
            "--host-name",
            "restart",
            "--otlp-queue",
            "64",
            "--otlp-batch",
            "16",
            "--otlp-timeout",
            "1s",
        ])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ddshark");
    let pid = child.id();
    let mut max_rss = 0u64;
    let sample = |until: Instant, max: &mut u64| {
        while Instant::now() < until {
            if let Some(r) = rss_kib(pid) {
                *max = (*max).max(r);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let t0 = Instant::now();
    sample(t0 + Duration::from_millis(1500), &mut max_rss);
    let before_kill = stack.count_spans("restart");
    stack.kill_collector();
    let killed_at = t0.elapsed();
    sample(t0 + Duration::from_millis(4500), &mut max_rss);
    assert!(
        child.try_wait().unwrap().is_none(),
        "ddshark stopped while the collector was down"
    );
    stack.restart_collector();
    let restarted_at = t0.elapsed();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(60) {
        sample(Instant::now() + Duration::from_millis(100), &mut max_rss);
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    // Spans given up while the collector was down make the run fail, saying so.
    assert!(
        out.status.success() || (out.status.code() == Some(1) && err.contains("OTLP export to")),
        "ddshark failed:\n{err}"
    );
    eprintln!("{err}");
    eprintln!("killed at {killed_at:?}, restarted at {restarted_at:?}, max RSS {max_rss} KiB, {before_kill} spans before the kill");
    assert!(
        err.contains("spans dropped (queue full)"),
        "no drop report:\n{err}"
    );
    let summary = err
        .lines()
        .rev()
        .find(|l| l.contains(" spans: ") && l.contains(" sent, "))
        .expect("final export summary");
    let num = |label: &str| -> u64 {
        let i = summary
            .find(label)
            .unwrap_or_else(|| panic!("{label} in {summary}"));
        summary[..i]
            .split_whitespace()
            .last()
            .unwrap()
            .trim_start_matches(':')
            .parse()
            .unwrap()
    };
    let (sent, dropped) = (num(" sent,"), num(" dropped (queue full)"));
    assert!(
        dropped > 0,
        "nothing dropped while the collector was down: {summary}"
    );
    assert!(sent > 0, "{summary}");
    assert!(max_rss < 100 * 1024, "ddshark RSS {max_rss} KiB >= 100 MiB");
    // Spans flow again: the last DATA_FRAG of the file (captured after the restart) is there.
    let oracle = read_tsv(&fixture("b_large_frag/oracle_a_submsgs.tsv"));
    let last_ns = oracle
        .iter()
        .filter(|o| matches!(o["sm_kind"].as_str(), "DATA" | "DATA_FRAG"))
        .filter_map(|o| ns_of(&o["t_first_ipfrag"]))
        .max()
        .unwrap();
    let n = stack.wait_spans("restart", sent as usize);
    assert!(
        n > before_kill,
        "no spans after the restart ({n} ≤ {before_kill})"
    );
    assert!(
        n as u64 <= sent,
        "InfluxDB has {n} spans, ddshark sent only {sent}"
    );
    let bucket = &stack.influx.bucket;
    let rows = stack.influx.query(&format!(
        r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "restart" and r._field == "end_time_unix_nano")
  |> group() |> map(fn: (r) => ({{r with t_ns: int(v: r._time)}})) |> max(column: "t_ns")"#
    ));
    let max_ns: u64 = rows[0]["t_ns"].parse().unwrap();
    assert_eq!(
        max_ns, last_ns,
        "the end of the replay did not reach InfluxDB"
    );
}

/// OTLP over TLS (gRPC and HTTP) to the real collector with a private CA given by
/// --otlp-certificate.
#[test]
fn stack_tls_with_private_ca() {
    let bin = stack_bin("otelcol-ddshark");
    let dir = std::env::temp_dir().join(format!("ddshark-otlp-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    common::tls::write_test_pki(&dir);
    // Three free ports (held together, so they differ, then let go for the collector).
    let held: Vec<std::net::TcpListener> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let port = |i: usize| held[i].local_addr().unwrap().port();
    let (grpc, http, metrics) = (port(0), port(1), port(2));
    drop(held);
    let config = format!(
        r#"receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{grpc}
        tls: {{cert_file: {d}/server.pem, key_file: {d}/server.key}}
      http:
        endpoint: 127.0.0.1:{http}
        tls: {{cert_file: {d}/server.pem, key_file: {d}/server.key}}
exporters:
  debug: {{verbosity: basic}}
service:
  pipelines:
    traces: {{receivers: [otlp], exporters: [debug]}}
    metrics: {{receivers: [otlp], exporters: [debug]}}
  telemetry:
    metrics:
      level: normal
      readers:
        - pull: {{exporter: {{prometheus: {{host: 127.0.0.1, port: {metrics}}}}}}}
"#,
        d = dir.display()
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let log = std::fs::File::create(dir.join("otelcol.log")).unwrap();
    struct Kill(Child, PathBuf);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
            if !std::thread::panicking() {
                let _ = std::fs::remove_dir_all(&self.1);
            }
        }
    }
    let _collector = Kill(
        Command::new(&bin)
            .arg(format!("--config={}", dir.join("config.yaml").display()))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("otelcol"),
        dir.clone(),
    );
    let t = Instant::now();
    let metrics_url = format!("http://127.0.0.1:{metrics}/metrics");
    while scrape(&metrics_url).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "TLS collector did not start: {}",
            std::fs::read_to_string(dir.join("otelcol.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let pcap = fixture("a_small_reliable/a.pcap");
    let ca = dir.join("ca.pem");
    for (proto, port) in [("grpc", grpc), ("http", http)] {
        let out = ddshark(&[
            "-r",
            pcap.to_str().unwrap(),
            "--no-tui",
            "--otlp",
            &format!("https://127.0.0.1:{port}"),
            "--otlp-protocol",
            proto,
            "--otlp-certificate",
            ca.to_str().unwrap(),
            "--otlp-no-metrics",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("422 spans: 422 sent, 0 filtered, 0 dropped (queue full), 0 failed"),
            "{proto} over TLS:\n{err}"
        );
        let transport = if proto == "grpc" { "grpc" } else { "http" };
        let t = Instant::now();
        while metric_sum(
            &metrics_url,
            "otelcol_receiver_accepted_spans",
            &[&format!("transport=\"{transport}\"")],
        ) < 422
        {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "collector did not count {proto} spans"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    // Without the CA the server is not trusted: nothing is sent, and the replay
    // still ends (after --otlp-flush-timeout), reporting what it gave up.
    let out = ddshark_refused(&[
        "-r",
        pcap.to_str().unwrap(),
        "--no-tui",
        "--otlp",
        &format!("https://127.0.0.1:{grpc}"),
        "--otlp-no-metrics",
        "--otlp-flush-timeout",
        "1s",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("422 spans: 0 sent"),
        "untrusted TLS server accepted:\n{err}"
    );
}

/// Timing and shared-memory flags reach InfluxDB as topic metrics: DEADLINE misses
/// (counter), the rate over the active time and the jitter (gauges), and the
/// `shared_memory_only` attribute, equal to the final snapshot's; and DDS Security traffic
/// per participant pair.
#[test]
fn stack_topic_timing_shared_memory_and_secured_metrics() {
    let stack = Stack::start("2");
    let finals: Vec<(&str, PathBuf)> = [
        ("k3_fastdds_deadline/a.pcap", "fastdds-deadline"),
        ("k2_fastdds_shm/a.pcap", "fastdds-shm"),
        ("m_fastdds_sros2/a.pcap", "fastdds-sros2"),
    ]
    .into_iter()
    .map(|(rel, host)| (host, stack.replay(&fixture(rel), host)))
    .collect();
    // ddshark's last export comes at exit: the measurement once it has settled (without
    // _stop, which is now() and so differs in every answer).
    let last = |measurement: &str, field: &str, host: &str| -> Vec<HashMap<String, String>> {
        let long_bucket = &stack.influx.long_bucket;
        let flux = format!(
            r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "{measurement}" and r._field == "{field}" and r["host.name"] == "{host}")
  |> group(columns: ["topic_name"]) |> sort(columns: ["_time"]) |> last() |> group()
  |> drop(columns: ["_start", "_stop"])"#
        );
        stack.settled(&flux, Duration::from_secs(30)).0
    };
    let (host, path) = &finals[0];
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let chatter = snap["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "rt/chatter")
        .unwrap();
    let misses = last("ddshark.topic.deadline_misses", "counter", host);
    let row = misses
        .iter()
        .find(|r| r["topic_name"] == "rt/chatter")
        .unwrap_or_else(|| panic!("no deadline_misses for rt/chatter: {misses:?}"));
    assert_eq!(
        row["_value"].parse::<f64>().unwrap() as u64,
        chatter["timing"]["deadline_misses"].as_u64().unwrap()
    );
    assert!(chatter["timing"]["deadline_misses"].as_u64().unwrap() >= 12);
    let rate = last("ddshark.topic.rate", "gauge", host);
    let row = rate
        .iter()
        .find(|r| r["topic_name"] == "rt/chatter")
        .unwrap_or_else(|| panic!("no rate for rt/chatter: {rate:?}"));
    let want = chatter["rate"]["hz"].as_f64().unwrap();
    assert!((row["_value"].parse::<f64>().unwrap() - want).abs() < 1e-6 * want);
    let jitter = last("ddshark.topic.period.jitter", "gauge", host);
    assert!(
        jitter.iter().any(|r| r["topic_name"] == "rt/chatter"),
        "no jitter: {jitter:?}"
    );

    let (host, _) = &finals[1];
    let rows = last("ddshark.topic.samples", "counter", host);
    let flagged: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.get("shared_memory_only").is_some_and(|v| v == "true"))
        .map(|r| r["topic_name"].as_str())
        .collect();
    assert_eq!(
        flagged,
        BTreeSet::from(["rt/camera/image_raw", "rt/imu"]),
        "{rows:?}"
    );

    // DDS Security (SROS2 default governance): one series per participant pair, its last
    // point = the final snapshot's pair totals (which tests/secured.rs holds to tshark's).
    let (host, path) = &finals[2];
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let pairs = snap["secured"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{pairs:?}");
    // All three measurements in one settled query: each settling takes a while.
    let long_bucket = &stack.influx.long_bucket;
    let flux = format!(
        r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement =~ /^ddshark[.]secured[.]/ and r._field == "counter" and r["host.name"] == "{host}")
  |> group(columns: ["_measurement", "src_participant", "dst_participant"]) |> sort(columns: ["_time"]) |> last() |> group()
  |> drop(columns: ["_start", "_stop"])"#
    );
    let rows = stack.settled(&flux, Duration::from_secs(30)).0;
    for (measurement, key) in [
        ("ddshark.secured.bytes", "bytes"),
        ("ddshark.secured.messages", "messages"),
        ("ddshark.secured.submessages", "sec_submessages"),
    ] {
        let of: Vec<&HashMap<String, String>> = rows
            .iter()
            .filter(|r| r["_measurement"] == measurement)
            .collect();
        let got: BTreeSet<(String, String, u64)> = of
            .iter()
            .map(|r| {
                (
                    r["src_participant"].clone(),
                    r["dst_participant"].clone(),
                    r["_value"].parse::<f64>().unwrap() as u64,
                )
            })
            .collect();
        let want: BTreeSet<(String, String, u64)> = pairs
            .iter()
            .map(|p| {
                (
                    p["src"].as_str().unwrap().to_string(),
                    p["dst"].as_str().unwrap().to_string(),
                    p["totals"][key].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{measurement}: {rows:?}");
        assert!(
            of.iter().all(|r| r.contains_key("src_participant_name")),
            "{measurement}: SPDP names: {rows:?}"
        );
    }
}

/// Waits until the latency join has joined every sample it was given: its `ddshark_join`
/// counters (raw bucket) pushed after this call, with nothing pending.
fn wait_for_the_join(stack: &Stack) {
    let t_called = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let bucket = &stack.influx.bucket;
        let st = stack.influx.query(&format!(
            r#"from(bucket:"{bucket}") |> range(start: -10m)
  |> filter(fn: (r) => r._measurement == "ddshark_join") |> last()
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({{r with t_ns: int(v: r._time)}}))"#
        ));
        let done = st.last().is_some_and(|r| {
            let n = |k: &str| r.get(k).and_then(|v| v.parse::<i64>().ok());
            n("t_ns").unwrap_or(0) > t_called
                && n("pending_samples") == Some(0)
                && n("pending_frags") == Some(0)
        });
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the latency join did not finish within 180 s: {st:?}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Two hosts, two clocks, live: the Fast DDS pair with B's clock 12.345678 ms ahead
/// (B's capture rewritten as in latency_clock.rs), replayed into the stack as two hosts.
/// Telegraf's latency join writes `dds_clock_offset` to the long bucket; its last point
/// must be `ddshark latency A B`'s clock_offset estimate and half-width (within 1 ns).
#[test]
fn stack_clock_offset_equals_ddshark_latency() {
    const SHIFT_NS: i64 = 12_345_678;
    let stack = Stack::start("3");
    let a = fixture("k_fastdds/a.pcap");
    let b = stack.run_dir.join("k_fastdds-b-shifted.pcap");
    common::shifted_copy(&fixture("k_fastdds/b.pcap"), &b, |t| t + SHIFT_NS);
    let (host_a, host_b) = ("clock-a", "clock-b");
    let mut spans = 0usize;
    for (path, host) in [(&a, host_a), (&b, host_b)] {
        stack.replay(path, host);
        spans += stack.wait_spans(host, 1);
    }
    assert!(spans > 0, "no spans reached InfluxDB");

    // Offline: ddshark latency's estimate (B's clock minus A's).
    let out = ddshark(&[
        "latency",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    let offline: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["kind"] == "clock_offset")
        .expect("ddshark latency printed no clock_offset");
    assert_eq!(offline["pair"], "B-A", "{offline}");
    let int = |v: &Value, k: &str| v[k].as_i64().unwrap_or_else(|| panic!("{k}: {v}"));
    let (off_ns, off_half, t_ref, drift) = (
        int(&offline, "offset_ns"),
        int(&offline, "half_width_ns"),
        int(&offline, "t_ref_ns"),
        int(&offline, "drift_ppb"),
    );
    let offline_at =
        |t: i64| off_ns + ((i128::from(t - t_ref) * i128::from(drift)) / 1_000_000_000) as i64;

    // Live: the join's last point once it has joined every sample.
    wait_for_the_join(&stack);
    // (its points reach InfluxDB with Telegraf's next flush: the last one, settled)
    let long_bucket = &stack.influx.long_bucket;
    let (rows, settled) = stack.settled(
        &format!(
            r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_clock_offset")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({{r with t_ns: int(v: r._time)}}))
  |> group() |> sort(columns: ["_time"]) |> last(column: "t_ns")
  |> drop(columns: ["_start", "_stop"])"#
        ),
        Duration::from_secs(30),
    );
    assert!(
        settled,
        "no settled dds_clock_offset point in {long_bucket}: {rows:?}"
    );
    let row = rows.into_iter().next().unwrap();
    let n = |k: &str| -> i64 {
        row.get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("dds_clock_offset without {k}: {row:?}"))
    };
    let pair = (row["host_a"].as_str(), row["host_b"].as_str());
    let sign = match pair {
        (x, y) if x == host_a && y == host_b => 1,
        (x, y) if x == host_b && y == host_a => -1,
        _ => panic!("dds_clock_offset for hosts {pair:?}"),
    };
    let (live, half, t_live) = (sign * n("offset_ns"), n("half_width_ns"), n("t_ns"));
    let offline = offline_at(t_live);
    eprintln!(
        "k_fastdds, B +{SHIFT_NS} ns: stack {live} ± {half} ns (samples {}+{}, builtin {}), \
         ddshark latency {offline} ± {off_half} ns",
        n("samples_a_to_b"),
        n("samples_b_to_a"),
        n("samples_builtin")
    );
    assert!(
        (live - offline).abs() <= 1 && (half - off_half).abs() <= 1,
        "stack {live} ± {half} ns, ddshark latency {offline} ± {off_half} ns"
    );
    // The interval holds the true offset (the shift; both captures read one clock).
    assert!(
        (live - SHIFT_NS).abs() <= half,
        "{live} ± {half} misses {SHIFT_NS}"
    );
}

/// The writers' hosts through the real stack, as `ddshark latency` decides them: the VLAN
/// pair (each host a participant on each of two VLANs of one NIC, tied only by their
/// Ethernet source and announced addresses) with B's clock 12.345678 ms ahead. The SAMPLE
/// spans' `src_ip`, `src_mac` (an integer) and `announced_ips` (a list with commas) pass
/// through the collector and Telegraf into the join, whose `dds_latency` points name, per
/// writer, the senders `ddshark latency A B` names (by the order of events alone it named A
/// for B's writers: join_clock.rs).
#[test]
fn stack_writers_hosts_equal_ddshark_latency() {
    let stack = Stack::start("6");
    let a = fixture("h_vlan_pcp/a.pcap");
    let b = stack.run_dir.join("h_vlan_pcp-b-shifted.pcap");
    common::shifted_copy(&fixture("h_vlan_pcp/b.pcap"), &b, |t| t + 12_345_678);
    let (host_a, host_b) = ("vlan-a", "vlan-b");
    for (path, host) in [(&a, host_a), (&b, host_b)] {
        stack.replay(path, host);
        assert!(
            stack.wait_spans(host, 1) > 0,
            "no spans of {host} in InfluxDB"
        );
    }
    let out = ddshark(&[
        "latency",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    let mut offline: BTreeSet<(String, String)> = BTreeSet::new();
    for v in String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "sample" && v["status"] == "ok")
    {
        let sender = match v["direction"].as_str() {
            Some("A->B") => host_a,
            Some("B->A") => host_b,
            other => panic!("direction {other:?}: {v}"),
        };
        offline.insert((
            v["writer_guid"].as_str().unwrap().to_string(),
            sender.to_string(),
        ));
    }
    assert!(
        offline.iter().any(|(_, s)| s == host_b),
        "ddshark latency names no writer on B: {offline:?}"
    );
    wait_for_the_join(&stack);
    let long_bucket = &stack.influx.long_bucket;
    let (rows, settled) = stack.settled(
        &format!(
            r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_latency" and r._field == "sn")
  |> filter(fn: (r) => r.sender == "{host_a}" or r.sender == "{host_b}")
  |> group(columns: ["writer_id", "sender"]) |> count() |> group()
  |> drop(columns: ["_start", "_stop"])"#
        ),
        Duration::from_secs(30),
    );
    assert!(
        settled,
        "no settled dds_latency points in {long_bucket}: {rows:?}"
    );
    let live: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r["writer_id"].clone(), r["sender"].clone()))
        .collect();
    eprintln!(
        "h_vlan_pcp, B +12.345678 ms: {} writers' senders, {} on B",
        live.len(),
        live.iter().filter(|(_, s)| s == host_b).count()
    );
    assert_eq!(
        live, offline,
        "(writer, sender) of the stack's dds_latency points"
    );
    // the evidence is stored with the spans, typed as the schema says
    let bucket = &stack.influx.bucket;
    let spans = stack.influx.query(&format!(
        r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "{host_b}")
  |> filter(fn: (r) => r["span.name"] == "SAMPLE")
  |> filter(fn: (r) => r._field == "src_ip" or r._field == "src_mac" or r._field == "announced_ips")
  |> group(columns: ["_field"]) |> last()"#
    ));
    let field = |k: &str| {
        spans
            .iter()
            .find(|r| r["_field"] == k)
            .map(|r| r["_value"].clone())
            .unwrap_or_else(|| panic!("no {k} on {host_b}'s SAMPLE spans: {spans:?}"))
    };
    assert!(field("src_ip").parse::<std::net::IpAddr>().is_ok());
    assert!(field("src_mac").parse::<i64>().is_ok_and(|m| m > 0));
    assert!(field("announced_ips")
        .split(',')
        .all(|ip| ip.parse::<std::net::IpAddr>().is_ok()));
}

/// RTPS over TCP: the `ddshark.tcp.*` metrics of a replayed Fast DDS TCP capture reach
/// the long bucket equal to the final snapshot's `health.dissector.tcp` counters.
#[test]
fn stack_tcp_metrics_equal_the_final_counters() {
    let stack = Stack::start("4");
    let host = "fastdds-tcp";
    let final_json = stack.replay(&fixture("l_fastdds_tcp/b.pcap"), host);
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(&final_json).unwrap()).unwrap();
    let tcp = &snap["health"]["dissector"]["tcp"];
    let counter = |k: &str| tcp[k].as_u64().unwrap_or_else(|| panic!("{k} in {tcp}"));
    // (metric, attribute, attribute value, the counter it must equal)
    let want: Vec<(&str, &str, &str, u64)> = vec![
        ("ddshark.tcp.streams", "", "", counter("streams_opened")),
        ("ddshark.tcp.bytes", "", "", counter("bytes")),
        ("ddshark.tcp.segments", "", "", counter("segments")),
        (
            "ddshark.tcp.messages",
            "framing",
            "rtcp",
            counter("rtps_rtcp"),
        ),
        ("ddshark.tcp.messages", "framing", "rti_tcp", 0),
        ("ddshark.tcp.out_of_order", "", "", counter("out_of_order")),
        (
            "ddshark.tcp.retransmitted",
            "",
            "",
            counter("retransmitted"),
        ),
        ("ddshark.tcp.gaps", "", "", counter("gaps")),
        ("ddshark.tcp.gap_bytes", "", "", counter("gap_bytes")),
        ("ddshark.tcp.resyncs", "", "", counter("resyncs")),
        (
            "ddshark.tcp.evictions",
            "reason",
            "idle",
            counter("streams_evicted_idle"),
        ),
        (
            "ddshark.tcp.evictions",
            "reason",
            "capacity",
            counter("streams_evicted_capacity"),
        ),
    ];
    assert!(
        counter("rtps_rtcp") > 450 && counter("bytes") > 100_000,
        "{tcp}"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut have = Vec::new();
        for (metric, key, value, _) in &want {
            let group = if key.is_empty() {
                String::new()
            } else {
                format!("\"{key}\"")
            };
            let long_bucket = &stack.influx.long_bucket;
            let rows = stack.influx.query(&format!(
                r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "{metric}" and r._field == "counter" and r["host.name"] == "{host}")
  |> group(columns: [{group}]) |> sort(columns: ["_time"]) |> last() |> group()"#
            ));
            let v = rows
                .iter()
                .find(|r| key.is_empty() || r.get(*key).map(String::as_str) == Some(*value))
                .map(|r| r["_value"].parse::<f64>().unwrap() as u64);
            have.push(v);
        }
        let expected: Vec<Option<u64>> = want.iter().map(|w| Some(w.3)).collect();
        if have == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ddshark.tcp.* in InfluxDB {have:?}, final counters {expected:?} ({want:?})"
        );
        std::thread::sleep(Duration::from_secs(3));
    }
}
