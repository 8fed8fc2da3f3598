//! The latency join's own OTLP intake behind the real OpenTelemetry Collector:
//! `ddshark -r` of each host of a two-host fixture → otelcol (deploy/otelcol/config.yaml,
//! its otlp_grpc/join exporter: persistent sending queue,
//! retries) → `ddshark join --otlp-grpc`. Its `dds_latency` points equal those of the join
//! fed the same captures' SAMPLE spans directly (which join_oracle.rs holds equal to
//! `ddshark latency`), to the ns; the same exports sent twice change nothing; a kill -9 of
//! the join loses nothing it acknowledged.
//!
//! Needs the collector that `scripts/stack/build.sh` caches (`common::stack::stack_bin`):
//! without it this test FAILS, naming how to build it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::stack::{fresh_run_dir, metric_sum, scrape, stack_bin, wait_for};
use common::{fixture, live_join, repo_root};

/// A child process, killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    fn signal(&mut self, sig: &str) {
        let st = Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// SIGTERM, and its exit awaited.
    fn stop(mut self) {
        self.signal("-TERM");
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if let Ok(Some(status)) = self.0.try_wait() {
                assert!(status.success(), "the join exited with {status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the join did not stop within 60 s of SIGTERM");
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Collector {
    _proc: Proc,
    otlp: u16,
    metrics: String,
}

impl Collector {
    fn start(dir: &Path, join_port: u16) -> Collector {
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
        let proc = Proc(child);
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
        Collector {
            _proc: proc,
            otlp,
            metrics: format!("http://127.0.0.1:{metrics}/metrics"),
        }
    }

    /// Waits until the join acknowledged every span the collector accepted.
    fn drained(&self) {
        let sent = || {
            metric_sum(
                &self.metrics,
                "otelcol_exporter_sent_spans",
                &["exporter=\"otlp_grpc/join\""],
            )
        };
        let accepted = || metric_sum(&self.metrics, "otelcol_receiver_accepted_spans", &[]);
        wait_for(
            "the join's acknowledgements",
            Duration::from_secs(120),
            || {
                let a = accepted();
                a > 0 && sent() == a
            },
        );
        let failed = metric_sum(
            &self.metrics,
            "otelcol_exporter_send_failed_spans",
            &["exporter=\"otlp_grpc/join\""],
        );
        assert_eq!(failed, 0, "{}", scrape(&self.metrics));
    }

    /// `ddshark -r PCAP --otlp` as `host`, which must export cleanly.
    fn replay(&self, pcap: &Path, host: &str) {
        let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
            .args([
                "-r",
                pcap.to_str().unwrap(),
                "--no-tui",
                "--host-name",
                host,
            ])
            .args(["--otlp", &format!("http://127.0.0.1:{}", self.otlp)])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains("0 dropped (queue full), 0 failed, 0 abandoned"),
            "{host}: export not clean:\n{err}"
        );
    }
}

/// `ddshark join --otlp-grpc 127.0.0.1:PORT`, its points on `out`: nothing is decided
/// before the end (60 pushes of 1 s to settle), so what arrives in any order is joined as
/// one input.
fn start_join(dir: &Path, port: u16, out: &Path, state: Option<&Path>) -> Proc {
    start_join_waiting(dir, port, out, state, ["60", "120"])
}

/// [`start_join`] with `--settle-pushes` and `--max-wait-pushes` given.
fn start_join_waiting(
    dir: &Path,
    port: u16,
    out: &Path,
    state: Option<&Path>,
    [settle, max_wait]: [&str; 2],
) -> Proc {
    let err = dir.join(format!(
        "join-{}.err",
        out.file_name().unwrap().to_string_lossy()
    ));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ddshark"));
    cmd.args(["join", "--otlp-grpc", &format!("127.0.0.1:{port}")])
        .args([
            "--period",
            "1s",
            "--settle-pushes",
            settle,
            "--max-wait-pushes",
            max_wait,
        ])
        .stdin(Stdio::null())
        .stdout(File::options().create(true).append(true).open(out).unwrap())
        .stderr(File::create(&err).unwrap());
    if let Some(state) = state {
        cmd.arg("--state").arg(state);
    }
    let proc = Proc(cmd.spawn().unwrap());
    wait_for(
        "the join's OTLP/gRPC server",
        Duration::from_secs(30),
        || std::fs::read_to_string(&err).is_ok_and(|t| t.contains("OTLP/gRPC on")),
    );
    proc
}

/// The distinct `dds_latency` points of line protocol (InfluxDB keeps one per series and
/// time), without their `topic_name` and `slot` (the spans fed directly carry none, and
/// the slot of `ddshark latency`'s sample, not that of the exporter's span).
fn latencies(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with("dds_latency,"))
        .map(|l| {
            let (tags, rest) = l.split_once(' ').unwrap_or((l, ""));
            let tags: Vec<&str> = tags
                .split(',')
                .filter(|t| !t.starts_with("topic_name=") && !t.starts_with("slot="))
                .collect();
            format!("{} {rest}", tags.join(","))
        })
        .collect()
}

/// The last `ddshark_join` point's `field`.
fn counter(text: &str, field: &str) -> u64 {
    let line = text
        .lines()
        .rfind(|l| l.starts_with("ddshark_join "))
        .unwrap_or("");
    line.split([' ', ','])
        .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
        .and_then(|v| v.trim_end_matches('i').parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {line:?}"))
}

fn hosts(name: &str) -> [(&'static str, PathBuf); 2] {
    [
        ("A", fixture(&format!("{name}/a.pcap"))),
        ("B", fixture(&format!("{name}/b.pcap"))),
    ]
}

fn expected(name: &str) -> BTreeSet<String> {
    let h = hosts(name);
    let want = latencies(&live_join(&[("A", &h[0].1), ("B", &h[1].1)]));
    assert!(want.len() > 20, "{name}: {} latencies", want.len());
    want
}

/// Each host replayed `times` times through the collector into the join; its output.
fn through_the_collector(name: &str, tag: &str, times: usize) -> String {
    let dir = fresh_run_dir(&format!("join-otlp-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let out = dir.join("points.lp");
    let join = start_join(&dir, port, &out, None);
    let collector = Collector::start(&dir, port);
    for _ in 0..times {
        for (host, pcap) in hosts(name) {
            collector.replay(&pcap, host);
        }
    }
    collector.drained();
    join.stop();
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    text
}

#[test]
fn otlp_intake_equals_the_line_protocol_join_to_the_ns() {
    for name in [
        "a_small_reliable",
        "b_large_frag",
        "d_rustdds_interop",
        "k_fastdds",
    ] {
        let got = through_the_collector(name, name, 1);
        let want = expected(name);
        let have = latencies(&got);
        let missing: Vec<_> = want.difference(&have).take(3).collect();
        let extra: Vec<_> = have.difference(&want).take(3).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{name}: {} latencies, {} expected; missing {missing:?}, extra {extra:?}",
            have.len(),
            want.len()
        );
        assert_eq!(
            (counter(&got, "rejected"), counter(&got, "otlp_refused")),
            (0, 0)
        );
        eprintln!("{name}: {} latencies equal", want.len());
    }
}

#[test]
fn the_same_exports_twice_change_nothing() {
    let name = "a_small_reliable";
    let got = through_the_collector(name, "twice", 2);
    assert_eq!(latencies(&got), expected(name));
    let spans = counter(&got, "spans");
    assert!(
        spans > 0 && counter(&got, "duplicates") * 2 == spans,
        "{got}"
    );
}

/// kill -9 of the join after it acknowledged one host's exports, again after the other
/// host's (each time a new join on the same state and port): nothing lost.
#[test]
fn a_killed_join_loses_nothing_it_acknowledged() {
    let name = "a_small_reliable";
    let dir = fresh_run_dir("join-otlp-kill");
    std::fs::create_dir_all(&dir).unwrap();
    let (port, state) = (free_port(), dir.join("join.state"));
    let out = dir.join("points.lp");
    let collector = Collector::start(&dir, port);
    for (host, pcap) in hosts(name) {
        let mut join = start_join(&dir, port, &out, Some(&state));
        collector.replay(&pcap, host);
        collector.drained();
        join.signal("-KILL");
    }
    // (this one decides as it goes: what waits is joined 3 pushes after it started)
    let join = start_join_waiting(&dir, port, &out, Some(&state), ["1", "3"]);
    wait_for(
        "the join's samples decided",
        Duration::from_secs(60),
        || {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            text.contains("ddshark_join ")
                && counter(&text, "samples") > 0
                && counter(&text, "pending_samples") == 0
                && counter(&text, "pending_frags") == 0
        },
    );
    join.stop();
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(latencies(&text), expected(name));
    let _ = std::fs::remove_dir_all(&dir);
}
