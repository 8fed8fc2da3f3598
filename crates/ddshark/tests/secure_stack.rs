//! The secured ingest on the real stack: `scripts/stack/start.sh` with the OTLP receivers
//! beyond loopback (0.0.0.0) makes its credentials, and the collector then requires TLS
//! and the bearer token. An export without the token (or with a wrong one, or without
//! TLS) is refused by the collector, counted there, and ddshark exits non-zero; one with
//! the token (OTEL_EXPORTER_OTLP_HEADERS or --otlp-header) is stored in InfluxDB. A
//! restart keeps the credentials. Traffic goes to 127.0.0.1 only.
//!
//! Needs the binaries `scripts/stack/build.sh` caches (`scripts/setup.sh --test`); without
//! them this FAILS, naming them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::stack::{fresh_run_dir, RunningStack};
use common::{fixture, repo_root};

/// Spans `ddshark -r a_small_reliable/a.pcap --otlp` exports (DATA/DATA_FRAG and SAMPLE).
const SPANS: u64 = 422;

/// The secured stack: OTLP receivers beyond loopback (0.0.0.0).
fn secured_stack(run_dir: &Path) -> RunningStack {
    RunningStack::start(
        run_dir,
        &[
            ("DDSHARK_OTLP_BIND", "0.0.0.0"),
            ("DDSHARK_OTELCOL_BATCH_TIMEOUT", "200ms"),
        ],
    )
}

/// The spans of `host` in InfluxDB once they are `n` (or after a minute).
fn wait_spans(stack: &RunningStack, host: &str, n: u64) -> u64 {
    let t = Instant::now();
    loop {
        let c = stack.count_spans(host, ".*");
        if c >= n || t.elapsed() > Duration::from_secs(60) {
            return c;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `ddshark -r a.pcap --otlp ENDPOINT` with exactly `env` as its OTEL variables.
fn export(
    host: &str,
    endpoint: &str,
    protocol: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> Output {
    let pcap = fixture("a_small_reliable/a.pcap");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ddshark"));
    cmd.args(["-r", pcap.to_str().unwrap(), "--no-tui", "--otlp", endpoint])
        .args(["--otlp-protocol", protocol, "--host-name", host])
        .args(["--otlp-flush-timeout", "5s", "--otlp-no-metrics"])
        .args(extra);
    for (k, _) in std::env::vars() {
        if k.starts_with("OTEL_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied())
        .output()
        .expect("running ddshark")
}

fn refused(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{what}: ddshark exited 0 though the collector must refuse:\n{err}"
    );
    assert!(
        err.contains(&format!("{SPANS} of {SPANS} spans not delivered")),
        "{what}: the refusal is not reported:\n{err}"
    );
    err
}

fn accepted(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what}: ddshark failed:\n{err}");
    assert!(
        err.contains(&format!("{SPANS} spans: {SPANS} sent")),
        "{what}: not everything was sent:\n{err}"
    );
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn secured_ingest_refuses_without_the_token_and_stores_with_it() {
    let run_dir = fresh_run_dir("secure-test");
    let stack = secured_stack(&run_dir);

    // Beyond loopback the stack is secured, and says how to reach it.
    let grpc = stack.var("DDSHARK_OTLP_ENDPOINT").to_string();
    let http = stack.var("DDSHARK_OTLP_HTTP_ENDPOINT").to_string();
    assert!(grpc.starts_with("https://127.0.0.1:"), "{grpc}");
    assert!(http.starts_with("https://127.0.0.1:"), "{http}");
    let token = stack.var("DDSHARK_OTLP_TOKEN").to_string();
    let ca = stack.var("OTEL_EXPORTER_OTLP_CERTIFICATE").to_string();
    let headers = stack.var("OTEL_EXPORTER_OTLP_HEADERS").to_string();
    assert_eq!(token.len(), 64, "a 256-bit token: {token}");
    assert_eq!(headers, format!("authorization=Bearer%20{token}"));
    let secrets = PathBuf::from(stack.var("DDSHARK_STACK_SECRETS_DIR"));
    assert_eq!(mode(&secrets), 0o700);
    for f in [
        "otlp-token",
        "influx-token",
        "influx-password",
        "ca.key",
        "otlp.key",
    ] {
        assert_eq!(mode(&secrets.join(f)), 0o600, "{f}");
    }
    assert_eq!(mode(&run_dir.join("stack.env")), 0o600);

    // No token, a wrong token, no TLS: refused, counted by the collector, non-zero exit.
    let gone = |host: &str| stack.count_spans(host, ".*");
    let unauth_grpc = "rpc_response_status_code=\"UNAUTHENTICATED\"";
    let grpc_refusals =
        || stack.collector_metric("rpc_server_call_duration_seconds_count", &[unauth_grpc]);
    let http_refusals = || {
        stack.collector_metric(
            "http_server_request_duration_seconds_count",
            &["http_response_status_code=\"401\""],
        )
    };
    let before = grpc_refusals();
    let out = export(
        "sec-none",
        &grpc,
        "grpc",
        &[("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca)],
        &[],
    );
    let err = refused(&out, "gRPC without the token");
    assert!(
        err.contains("Unauthenticated")
            || err.contains("UNAUTHENTICATED")
            || err.contains("authorization"),
        "{err}"
    );
    assert!(
        grpc_refusals() > before,
        "the collector did not count the gRPC refusal"
    );

    let before = http_refusals();
    let wrong = "authorization=Bearer%20not-the-token";
    let out = export(
        "sec-wrong",
        &http,
        "http",
        &[
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca),
            ("OTEL_EXPORTER_OTLP_HEADERS", wrong),
        ],
        &[],
    );
    refused(&out, "HTTP with a wrong token");
    assert!(
        http_refusals() > before,
        "the collector did not count the HTTP refusal"
    );

    let plain = grpc.replacen("https://", "http://", 1);
    let out = export(
        "sec-plain",
        &plain,
        "grpc",
        &[("OTEL_EXPORTER_OTLP_HEADERS", &headers)],
        &[],
    );
    refused(&out, "gRPC without TLS");

    // With the token: stored.
    let out = export(
        "sec-env",
        &http,
        "http",
        &[
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
        ],
        &[],
    );
    accepted(&out, "HTTP with OTEL_EXPORTER_OTLP_HEADERS");
    let bearer = format!("authorization=Bearer {token}");
    let out = export(
        "sec-flag",
        &grpc,
        "grpc",
        &[],
        &["--otlp-certificate", &ca, "--otlp-header", &bearer],
    );
    accepted(&out, "gRPC with --otlp-header");
    assert_eq!(
        wait_spans(&stack, "sec-env", SPANS),
        SPANS,
        "HTTP export stored"
    );
    assert_eq!(
        wait_spans(&stack, "sec-flag", SPANS),
        SPANS,
        "gRPC export stored"
    );
    for host in ["sec-none", "sec-wrong", "sec-plain"] {
        assert_eq!(gone(host), 0, "{host}: refused spans reached InfluxDB");
    }

    // A restart keeps the credentials (remote exporters keep working).
    stack.stop();
    let again = secured_stack(&run_dir);
    assert_eq!(again.var("DDSHARK_OTLP_TOKEN"), token);
    assert_eq!(
        again.var("DDSHARK_INFLUX_TOKEN"),
        stack.var("DDSHARK_INFLUX_TOKEN")
    );
    let out = export(
        "sec-again",
        again.var("DDSHARK_OTLP_ENDPOINT"),
        "grpc",
        &[
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", &ca),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
        ],
        &[],
    );
    accepted(&out, "after a restart");
    assert_eq!(wait_spans(&again, "sec-again", SPANS), SPANS);
    std::mem::forget(stack);
}

/// Nothing secret in the deployment files: the credentials are made on first start.
#[test]
fn the_deployment_holds_no_credentials() {
    let root = repo_root();
    for f in [
        "deploy/docker-compose.yml",
        "deploy/otelcol/config.yaml",
        "deploy/otelcol/secure.yaml",
        "scripts/stack/start.sh",
        "grafana/provisioning/datasources/datasources.yaml",
    ] {
        let text = std::fs::read_to_string(root.join(f)).unwrap();
        for literal in [
            "ddshark-dev-token",
            "ddshark-dev-password",
            "PASSWORD:-admin",
        ] {
            assert!(!text.contains(literal), "{f} still holds {literal}");
        }
    }
}
