//! OTLP over TLS with a private CA.

use super::*;

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
