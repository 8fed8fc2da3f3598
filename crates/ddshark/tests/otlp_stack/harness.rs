//! The stack every scenario starts, and the ddshark runs and span rows they share.

use super::*;

/// One stack (influxd + the join + otelcol) in its own run dir, on free ports; stopped on
/// drop.
pub(crate) struct Stack {
    pub(crate) run: RunningStack,
    /// A collector this test restarted itself (not known to stop.sh).
    pub(crate) own_collector: Option<Child>,
}

impl std::ops::Deref for Stack {
    type Target = RunningStack;
    fn deref(&self) -> &RunningStack {
        &self.run
    }
}

/// The port of an address or URL in stack.env (`host:port`, `http://host:port/path`).
pub(crate) fn port_of(addr: &str) -> String {
    let after_host = addr.rsplit_once(':').map_or(addr, |(_, p)| p);
    after_host.split('/').next().unwrap_or("").to_string()
}

impl Stack {
    pub(crate) fn start(tag: &str) -> Stack {
        let run = RunningStack::start(&fresh_run_dir(&format!("otlp-test-{tag}")), &[]);
        Stack {
            run,
            own_collector: None,
        }
    }

    pub(crate) fn grpc(&self) -> String {
        self.var("DDSHARK_OTLP_ENDPOINT").to_string()
    }
    pub(crate) fn http(&self) -> String {
        self.var("DDSHARK_OTLP_HTTP_ENDPOINT").to_string()
    }

    /// SIGTERM the collector that start.sh started (by its recorded pid).
    pub(crate) fn kill_collector(&mut self) {
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
    pub(crate) fn restart_collector(&mut self) {
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
                    "DDSHARK_JOIN_OTLP_ADDR",
                    self.var("DDSHARK_JOIN_OTLP_ADDR").to_string(),
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

    pub(crate) fn count_spans(&self, host: &str) -> usize {
        let bucket = &self.influx.bucket;
        self.influx.query_count(&format!(
            r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "{host}" and r._field == "end_time_unix_nano")
  |> filter(fn: (r) => r["span.name"] != "SAMPLE")
  |> group() |> count()"#
        )) as usize
    }

    /// Waits until InfluxDB holds `n` spans of `host` (the collector batches).
    pub(crate) fn wait_spans(&self, host: &str, n: usize) -> usize {
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
    pub(crate) fn spans_of(&self, host: &str, kind: &str) -> Vec<SpanRow> {
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
                    "a span attribute landed in the JSON field `attributes` (not in the \
                     schema, span-schema's SPAN_ATTRIBUTES): {r:?}"
                );
                SpanRow { cols: r }
            })
            .collect()
    }

    pub(crate) fn spans(&self, host: &str) -> Vec<SpanRow> {
        self.spans_of(host, "!SAMPLE")
    }

    /// `ddshark -r PCAP --otlp` (gRPC) into this stack as `host`; see `replay_to`.
    pub(crate) fn replay(&self, pcap: &Path, host: &str) -> PathBuf {
        self.replay_to(&self.grpc(), pcap, host, &[])
    }

    /// `ddshark -r PCAP --otlp ENDPOINT ARGS` as `host`, which must export cleanly; its
    /// final snapshot is written to RUN_DIR/HOST.json, the path returned.
    pub(crate) fn replay_to(
        &self,
        endpoint: &str,
        pcap: &Path,
        host: &str,
        args: &[&str],
    ) -> PathBuf {
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
    /// and the join batch), or `timeout` passed; its last rows, and whether they settled.
    pub(crate) fn settled(
        &self,
        flux: &str,
        timeout: Duration,
    ) -> (Vec<HashMap<String, String>>, bool) {
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
pub(crate) struct SpanRow {
    pub(crate) cols: HashMap<String, String>,
}

impl SpanRow {
    pub(crate) fn tag(&self, k: &str) -> &str {
        self.cols.get(k).map(String::as_str).unwrap_or("")
    }
    pub(crate) fn int(&self, k: &str) -> Option<i64> {
        self.cols.get(k).and_then(|v| v.parse().ok())
    }
    /// An integer column as text ("" when absent or not an integer).
    pub(crate) fn int_text(&self, k: &str) -> String {
        self.int(k).map(|v| v.to_string()).unwrap_or_default()
    }
}

/// `ddshark ARGS`, which must succeed.
pub(crate) fn ddshark(args: &[&str]) -> std::process::Output {
    let out = ddshark_status(args);
    assert!(
        out.status.success(),
        "ddshark {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `ddshark ARGS` whose export the collector cannot get: it must exit non-zero.
pub(crate) fn ddshark_refused(args: &[&str]) -> std::process::Output {
    let out = ddshark_status(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("spans not delivered"),
        "ddshark {args:?} exited 0 though nothing was delivered:\n{err}"
    );
    out
}

pub(crate) fn ddshark_status(args: &[&str]) -> std::process::Output {
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
