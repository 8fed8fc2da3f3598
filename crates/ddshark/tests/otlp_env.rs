//! Every `OTEL_EXPORTER_OTLP_*` variable of the specification (generic and
//! `TRACES_`/`METRICS_`), `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME`, for
//! traces AND metrics, against the real OpenTelemetry Collector: each case runs
//! `ddshark -r … --otlp` with only environment variables, and checks what the
//! collector itself counted (its Prometheus metrics, per receiver and transport)
//! or wrote (its file exporter, for resource attributes).
//!
//! The collector (from `scripts/stack/build.sh`'s cache) listens on four OTLP
//! receivers: `otlp` (plain gRPC and HTTP, request metadata kept) and `otlp/mtls`
//! (gRPC and HTTP over TLS with a private CA, client certificates required).
//! Headers are seen through the batch processor, which batches per value of the
//! `x-ddshark-case` header and reports how many distinct values it saw.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::fixture;
use common::stack::{metric_sum, scrape, stack_bin};

/// Spans of tests/pcaps/a_small_reliable/a.pcap: its DATA/DATA_FRAG submessages and samples.
const SPANS: u64 = 422;

struct Collector {
    child: Child,
    dir: PathBuf,
    grpc: u16,
    http: u16,
    mtls_grpc: u16,
    mtls_http: u16,
    metrics: u16,
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Collector {
    fn start() -> Collector {
        let bin = stack_bin("otelcol-ddshark");
        let dir = std::env::temp_dir().join(format!("ddshark-otlp-env-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        common::tls::write_test_pki(&dir);
        let base = 21_000 + (std::process::id() % 400) as u16 * 10;
        let (grpc, http, mtls_grpc, mtls_http, metrics) =
            (base, base + 1, base + 2, base + 3, base + 4);
        let d = dir.display();
        let tls = format!("tls: {{cert_file: {d}/server.pem, key_file: {d}/server.key, client_ca_file: {d}/ca.pem}}");
        let config = format!(
            r#"receivers:
  otlp:
    protocols:
      grpc: {{endpoint: 127.0.0.1:{grpc}, include_metadata: true}}
      http: {{endpoint: 127.0.0.1:{http}, include_metadata: true}}
  otlp/mtls:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{mtls_grpc}
        {tls}
      http:
        endpoint: 127.0.0.1:{mtls_http}
        {tls}
processors:
  batch:
    metadata_keys: [x-ddshark-case]
exporters:
  file: {{path: {d}/out.jsonl}}
service:
  pipelines:
    traces: {{receivers: [otlp, otlp/mtls], processors: [batch], exporters: [file]}}
    metrics: {{receivers: [otlp, otlp/mtls], processors: [batch], exporters: [file]}}
  telemetry:
    metrics:
      level: detailed
      readers:
        - pull: {{exporter: {{prometheus: {{host: 127.0.0.1, port: {metrics}}}}}}}
"#
        );
        std::fs::write(dir.join("config.yaml"), config).unwrap();
        let log = std::fs::File::create(dir.join("otelcol.log")).unwrap();
        let child = Command::new(&bin)
            .arg(format!("--config={}", dir.join("config.yaml").display()))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("otelcol");
        let c = Collector {
            child,
            dir,
            grpc,
            http,
            mtls_grpc,
            mtls_http,
            metrics,
        };
        let t = Instant::now();
        while scrape(&c.metrics_url()).is_empty() {
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "collector did not start: {}",
                std::fs::read_to_string(c.dir.join("otelcol.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        c
    }

    fn metrics_url(&self) -> String {
        format!("http://127.0.0.1:{}/metrics", self.metrics)
    }

    /// Sum of a collector metric over the lines whose labels contain all of `labels`.
    fn metric(&self, name: &str, labels: &[&str]) -> u64 {
        metric_sum(&self.metrics_url(), name, labels)
    }

    fn spans(&self, receiver: &str, transport: &str) -> u64 {
        self.metric(
            "otelcol_receiver_accepted_spans",
            &[
                &format!("receiver=\"{receiver}\""),
                &format!("transport=\"{transport}\""),
            ],
        )
    }

    fn metric_points(&self, receiver: &str, transport: &str) -> u64 {
        self.metric(
            "otelcol_receiver_accepted_metric_points",
            &[
                &format!("receiver=\"{receiver}\""),
                &format!("transport=\"{transport}\""),
            ],
        )
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }
}

/// The collector's counters that one case moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    spans: u64,
    points: u64,
}

fn seen(c: &Collector, receiver: &str, transport: &str) -> Seen {
    Seen {
        spans: c.spans(receiver, transport),
        points: c.metric_points(receiver, transport),
    }
}

const OTEL_VARS: [&str; 3] = ["OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "HOSTNAME"];

/// `ddshark -r a_small_reliable --otlp` with exactly `env` as its OTEL variables; it
/// must succeed.
fn run(env: &[(&str, String)], extra: &[&str]) -> String {
    let (ok, err) = run_status(env, extra);
    assert!(ok, "ddshark with {env:?} failed:\n{err}");
    err
}

/// The same where the collector cannot get the spans: ddshark must exit non-zero.
fn run_refused(env: &[(&str, String)], extra: &[&str]) -> String {
    let (ok, err) = run_status(env, extra);
    assert!(
        !ok,
        "ddshark with {env:?} exited 0 though nothing was delivered:\n{err}"
    );
    assert!(err.contains("spans not delivered"), "{err}");
    err
}

fn run_status(env: &[(&str, String)], extra: &[&str]) -> (bool, String) {
    let pcap = fixture("a_small_reliable/a.pcap");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ddshark"));
    cmd.args(["-r", pcap.to_str().unwrap(), "--no-tui", "--otlp"])
        .args(["--otlp-flush-timeout", "5s"])
        .args(extra);
    for (k, _) in std::env::vars() {
        if k.starts_with("OTEL_") || OTEL_VARS.contains(&k.as_str()) {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running ddshark");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), err)
}

/// Waits until the collector counted `want` more spans and some metric points on
/// `receiver`/`transport` than `before`.
fn wait_for(c: &Collector, receiver: &str, transport: &str, before: Seen, case: &str) -> Seen {
    let t = Instant::now();
    loop {
        let now = seen(c, receiver, transport);
        if now.spans >= before.spans + SPANS && now.points > before.points {
            assert_eq!(
                now.spans,
                before.spans + SPANS,
                "{case}: spans counted twice"
            );
            return now;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{case}: the collector's {receiver}/{transport} counted {now:?}, before {before:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn v(s: impl Into<String>) -> String {
    s.into()
}

#[test]
fn every_otlp_variable_for_traces_and_metrics_against_the_collector() {
    let c = Collector::start();
    let grpc = format!("http://127.0.0.1:{}", c.grpc);
    let http = format!("http://127.0.0.1:{}", c.http);

    // ENDPOINT + PROTOCOL (generic): both signals follow them.
    let b = seen(&c, "otlp", "grpc");
    let err = run(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", grpc.clone()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", v("grpc")),
        ],
        &[],
    );
    assert!(err.contains(&format!("{SPANS} sent")), "{err}");
    wait_for(&c, "otlp", "grpc", b, "ENDPOINT+PROTOCOL=grpc");

    let b = seen(&c, "otlp", "http");
    run(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", http.clone()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", v("http/protobuf")),
        ],
        &[],
    );
    wait_for(&c, "otlp", "http", b, "ENDPOINT+PROTOCOL=http/protobuf");

    let b = seen(&c, "otlp", "http");
    run(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", http.clone()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", v("http/json")),
        ],
        &[],
    );
    wait_for(&c, "otlp", "http", b, "PROTOCOL=http/json");

    // TRACES_/METRICS_ ENDPOINT and PROTOCOL: each signal its own transport; the
    // signal endpoints are used as they are (HTTP: the full /v1/... URL).
    let (bg, bh) = (seen(&c, "otlp", "grpc"), seen(&c, "otlp", "http"));
    run(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", v("http://127.0.0.1:9")),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", grpc.clone()),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", v("grpc")),
            (
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                format!("{http}/v1/metrics"),
            ),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", v("http/protobuf")),
        ],
        &[],
    );
    let t = Instant::now();
    loop {
        let (g, h) = (seen(&c, "otlp", "grpc"), seen(&c, "otlp", "http"));
        if g.spans == bg.spans + SPANS && h.points > bh.points {
            assert_eq!(h.spans, bh.spans, "traces went to the metrics endpoint");
            assert_eq!(g.points, bg.points, "metrics went to the traces endpoint");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "signal endpoints: {g:?} {h:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (bg, bh) = (seen(&c, "otlp", "grpc"), seen(&c, "otlp", "http"));
    run(
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                format!("{http}/v1/traces"),
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", v("http/protobuf")),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", grpc.clone()),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", v("grpc")),
        ],
        &[],
    );
    let t = Instant::now();
    loop {
        let (g, h) = (seen(&c, "otlp", "grpc"), seen(&c, "otlp", "http"));
        if h.spans == bh.spans + SPANS && g.points > bg.points {
            assert_eq!(g.spans, bg.spans);
            assert_eq!(h.points, bh.points);
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "signal endpoints (swapped): {g:?} {h:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // COMPRESSION (generic and per signal), on both transports: the collector
    // decompresses and counts everything.
    for (endpoint, proto, transport) in [(&grpc, "grpc", "grpc"), (&http, "http/protobuf", "http")]
    {
        for vars in [
            vec![("OTEL_EXPORTER_OTLP_COMPRESSION", v("gzip"))],
            vec![
                ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", v("gzip")),
                ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", v("gzip")),
            ],
        ] {
            let b = seen(&c, "otlp", transport);
            let mut env = vec![
                ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", v(proto)),
            ];
            env.extend(vars);
            run(&env, &[]);
            wait_for(
                &c,
                "otlp",
                transport,
                b,
                &format!("COMPRESSION {proto} {env:?}"),
            );
        }
    }

    // HEADERS (generic, TRACES_, METRICS_): the batch processor batches per value of
    // x-ddshark-case, so each new value raises its metadata cardinality by one.
    let cardinality = || c.metric("otelcol_processor_batch_metadata_cardinality", &[]);
    for (i, vars) in [
        vec![("OTEL_EXPORTER_OTLP_HEADERS", v("x-ddshark-case=generic"))],
        vec![(
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            v("x-ddshark-case=traces-only"),
        )],
        vec![(
            "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
            v("x-ddshark-case=metrics-only"),
        )],
    ]
    .into_iter()
    .enumerate()
    {
        for (endpoint, proto) in [(&grpc, "grpc"), (&http, "http/protobuf")] {
            let before = cardinality();
            let mut env = vec![
                ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", v(proto)),
            ];
            env.extend(vars.iter().map(|(k, x)| (*k, format!("{x}-{proto}"))));
            run(&env, &[]);
            let t = Instant::now();
            while cardinality() <= before {
                assert!(
                    t.elapsed() < Duration::from_secs(20),
                    "HEADERS case {i} over {proto}: the collector saw no new x-ddshark-case value ({before})"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }

    // TIMEOUT: 1 ms cannot complete an export; a generous one can. Per signal too.
    for (var_t, var_m) in [
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"),
        (
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
        ),
    ] {
        let b = seen(&c, "otlp", "grpc");
        run(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", grpc.clone()),
                (var_t, v("20000")),
                (var_m, v("20000")),
            ],
            &[],
        );
        wait_for(&c, "otlp", "grpc", b, var_t);
    }
    let err = run_refused(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", http.clone()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", v("http/protobuf")),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", v("1")),
        ],
        &["--otlp-no-metrics"],
    );
    assert!(
        err.contains(&format!("{SPANS} spans: 0 sent")) || err.contains("failed"),
        "TRACES_TIMEOUT=1 did not time out:\n{err}"
    );

    // CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY (generic and per signal) over
    // mutual TLS on both transports; without the client identity the collector
    // refuses, without the CA we refuse the collector.
    let (ca, cert, key) = (c.path("ca.pem"), c.path("client.pem"), c.path("client.key"));
    for (port, proto, transport) in [
        (c.mtls_grpc, "grpc", "grpc"),
        (c.mtls_http, "http/protobuf", "http"),
    ] {
        let endpoint = format!("https://127.0.0.1:{port}");
        for prefix in ["OTEL_EXPORTER_OTLP_", "SIGNALS"] {
            let mut env = vec![
                ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", v(proto)),
            ];
            if prefix == "SIGNALS" {
                env.extend([
                    ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", ca.clone()),
                    ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", cert.clone()),
                    ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", key.clone()),
                    ("OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", ca.clone()),
                    (
                        "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
                        cert.clone(),
                    ),
                    ("OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", key.clone()),
                ]);
            } else {
                env.extend([
                    ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.clone()),
                    ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", cert.clone()),
                    ("OTEL_EXPORTER_OTLP_CLIENT_KEY", key.clone()),
                ]);
            }
            let b = seen(&c, "otlp/mtls", transport);
            run(&env, &[]);
            wait_for(
                &c,
                "otlp/mtls",
                transport,
                b,
                &format!("mTLS {proto} {prefix}"),
            );
        }
        let b = seen(&c, "otlp/mtls", transport);
        let err = run_refused(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", v(proto)),
                ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.clone()),
            ],
            &[],
        );
        assert!(
            err.contains(&format!("{SPANS} spans: 0 sent")),
            "no client identity, {proto}:\n{err}"
        );
        assert_eq!(seen(&c, "otlp/mtls", transport).spans, b.spans);
    }

    // INSECURE: for gRPC an endpoint without a scheme is plain text only when
    // INSECURE is true (generic and TRACES_/METRICS_).
    for vars in [
        vec![("OTEL_EXPORTER_OTLP_INSECURE", v("true"))],
        vec![
            ("OTEL_EXPORTER_OTLP_TRACES_INSECURE", v("true")),
            ("OTEL_EXPORTER_OTLP_METRICS_INSECURE", v("true")),
        ],
    ] {
        let b = seen(&c, "otlp", "grpc");
        let mut env = vec![
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("127.0.0.1:{}", c.grpc),
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", v("grpc")),
        ];
        env.extend(vars.clone());
        run(&env, &[]);
        wait_for(&c, "otlp", "grpc", b, &format!("INSECURE {vars:?}"));
    }

    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES reach the resource of spans
    // and metrics (the file exporter writes what the collector received).
    let b = seen(&c, "otlp", "grpc");
    run(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", grpc.clone()),
            ("OTEL_SERVICE_NAME", v("env-svc")),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                v("deployment.environment=env-test,host.name=env-host"),
            ),
        ],
        &[],
    );
    wait_for(&c, "otlp", "grpc", b, "resource");
    let t = Instant::now();
    loop {
        let out = std::fs::read_to_string(c.dir.join("out.jsonl")).unwrap_or_default();
        let with = |signal: &str| {
            out.lines().any(|l| {
                l.contains(signal)
                    && l.contains(r#"{"key":"service.name","value":{"stringValue":"env-svc"}}"#)
                    && l.contains(
                        r#"{"key":"deployment.environment","value":{"stringValue":"env-test"}}"#,
                    )
                    && l.contains(r#"{"key":"host.name","value":{"stringValue":"env-host"}}"#)
            })
        };
        if with("\"resourceSpans\"") && with("\"resourceMetrics\"") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "resource from OTEL_SERVICE_NAME/OTEL_RESOURCE_ATTRIBUTES not in the collector's output"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
