//! The collector going away in the middle of a replay.

use super::*;

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
