//! A stack that `scripts/stack/start.sh` started, as the system tests see it: where its
//! binaries are, its `stack.env`, and its InfluxDB (the one Flux client of the Rust tests;
//! the scripts' is `scripts/ddtools/influx.py`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The stack's build cache: `$DDSHARK_STACK_DIR` with scripts/lib.sh's default
/// (`$HOME/.cache/ddshark-stack`), the one place the Rust tests name it; its binaries are in
/// `bin/` (see `stack_bin`).
pub fn stack_dir() -> PathBuf {
    std::env::var_os("DDSHARK_STACK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/ddshark-stack")
        })
}

/// The stack binary `name` of `stack_dir()`'s `bin/`; fails, naming how to build it, when
/// it is missing (a system test never skips).
pub fn stack_bin(name: &str) -> PathBuf {
    let bin = stack_dir().join("bin").join(name);
    assert!(
        bin.is_file(),
        "{} is missing: the stack tests need the real collector and InfluxDB. \
         Build them once with `scripts/stack/build.sh` (scripts/setup.sh --test does), or \
         point DDSHARK_STACK_DIR at a cache that has bin/{name}.",
        bin.display()
    );
    bin
}

/// The `export NAME='value'` lines of a `stack.env` (empty when it is missing).
pub fn read_env(path: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
        .collect()
}

/// An InfluxDB 2, its operator token and the stack's two buckets.
pub struct Influx {
    pub url: String,
    pub org: String,
    pub token: String,
    /// Spans, logs and the join's counters (`DDSHARK_INFLUX_BUCKET`).
    pub bucket: String,
    /// Latencies and per-topic counters (`DDSHARK_INFLUX_LONG_BUCKET`).
    pub long_bucket: String,
}

impl Influx {
    /// The InfluxDB of a stack.env (see `read_env`).
    pub fn from_env(env: &HashMap<String, String>) -> Influx {
        let var = |k: &str| {
            env.get(k)
                .cloned()
                .unwrap_or_else(|| panic!("{k} missing from stack.env: {env:?}"))
        };
        Influx {
            url: var("DDSHARK_INFLUX_URL"),
            org: var("DDSHARK_INFLUX_ORG"),
            token: var("DDSHARK_INFLUX_TOKEN"),
            bucket: var("DDSHARK_INFLUX_BUCKET"),
            long_bucket: var("DDSHARK_INFLUX_LONG_BUCKET"),
        }
    }

    /// Runs a Flux query; the rows of every table of the answer. Panics, naming the query,
    /// when InfluxDB refuses it.
    pub fn query(&self, flux: &str) -> Vec<HashMap<String, String>> {
        let out = Command::new("curl")
            .args(["-sS", "--fail-with-body", "-XPOST"])
            .arg(format!("{}/api/v2/query?org={}", self.url, self.org))
            .arg("-H")
            .arg(format!("Authorization: Token {}", self.token))
            .args(["-H", "Content-Type: application/vnd.flux"])
            .args(["-H", "Accept: application/csv", "--data-binary", flux])
            .output()
            .expect("curl");
        let body = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "Flux query failed: {body}\n{flux}");
        parse_annotated_csv(&body)
    }

    /// The `_value` of the first row as an integer (a `count()`), 0 without rows.
    pub fn query_count(&self, flux: &str) -> u64 {
        self.query(flux)
            .first()
            .and_then(|r| r.get("_value"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

/// InfluxDB's annotated CSV (without annotations) → one map per row of every table; a
/// blank line ends a table, and the next starts with its header row.
pub fn parse_annotated_csv(body: &str) -> Vec<HashMap<String, String>> {
    let mut rows = Vec::new();
    let mut header: Option<Vec<String>> = None;
    for rec in csv_records(body) {
        if rec.iter().all(|f| f.is_empty()) {
            header = None;
            continue;
        }
        match &header {
            None => header = Some(rec),
            Some(h) => rows.push(h.iter().cloned().zip(rec).collect()),
        }
    }
    rows
}

/// RFC 4180 records (quoted fields with doubled quotes, CRLF or LF line ends).
fn csv_records(s: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rec = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            ',' => rec.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                rec.push(std::mem::take(&mut field));
                out.push(std::mem::take(&mut rec));
            }
            c => field.push(c),
        }
    }
    if !field.is_empty() || !rec.is_empty() {
        rec.push(field);
        out.push(rec);
    }
    out
}

/// What a Prometheus endpoint (the collector's own metrics) serves; empty while it does
/// not answer.
pub fn scrape(url: &str) -> String {
    Command::new("curl")
        .args(["-fsS", "--max-time", "5", url])
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// The sum of the Prometheus metric `name` at `url` over the series whose line contains
/// every one of `labels` (e.g. `transport="grpc"`).
pub fn metric_sum(url: &str, name: &str, labels: &[&str]) -> u64 {
    scrape(url)
        .lines()
        .filter(|l| l.starts_with(name) && labels.iter().all(|x| l.contains(x)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// An empty run dir for the stack of test `name`, `$TMPDIR/ddshark-NAME-PID` (one per test
/// process, so parallel runs do not share one).
pub fn fresh_run_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ddshark-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A stack `scripts/stack/start.sh --auto-ports` started in its own run dir (on free
/// ports), with its stack.env and its InfluxDB; stopped on drop, its run dir removed unless
/// the test failed.
pub struct RunningStack {
    pub run_dir: PathBuf,
    pub env: HashMap<String, String>,
    pub influx: Influx,
}

impl RunningStack {
    /// Starts it (in `run_dir` as it is: credentials made there before are kept) with `vars`
    /// besides the defaults (the caller's own DDSHARK_* and OTEL_*
    /// variables are not passed on, but for where the stack and the join binary are).
    /// Its buckets keep points forever: the fixtures are old captures, and InfluxDB refuses
    /// points older than a bucket's retention.
    /// Fails naming what start.sh said, the stack's binaries included.
    pub fn start(run_dir: &Path, vars: &[(&str, &str)]) -> RunningStack {
        for b in ["influxd", "otelcol-ddshark"] {
            stack_bin(b);
        }
        let mut cmd = Command::new(super::repo_root().join("scripts/stack/start.sh"));
        cmd.arg("--auto-ports").arg("--run-dir").arg(run_dir);
        for (k, _) in std::env::vars() {
            let keep = ["DDSHARK_STACK_DIR", "DDSHARK_JOIN_BIN", "CARGO_TARGET_DIR"];
            if (k.starts_with("DDSHARK_") || k.starts_with("OTEL_")) && !keep.contains(&k.as_str())
            {
                cmd.env_remove(k);
            }
        }
        let out = cmd
            .envs([
                ("DDSHARK_INFLUX_RAW_RETENTION", "0"),
                ("DDSHARK_INFLUX_LONG_RETENTION", "0"),
            ])
            .envs(vars.iter().copied())
            .output()
            .expect("running scripts/stack/start.sh");
        if !out.status.success() {
            stop(run_dir);
            panic!(
                "scripts/stack/start.sh failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let env = read_env(&run_dir.join("stack.env"));
        RunningStack {
            run_dir: run_dir.to_path_buf(),
            influx: Influx::from_env(&env),
            env,
        }
    }

    /// scripts/stack/stop.sh (the run dir stays).
    pub fn stop(&self) {
        stop(&self.run_dir);
    }

    /// The pid start.sh recorded for its component `name` (`pids/NAME.pid`).
    pub fn pid(&self, name: &str) -> u32 {
        let path = self.run_dir.join(format!("pids/{name}.pid"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{}: {text:?}: {e}", path.display()))
    }

    /// The spans of `host` in InfluxDB whose span.name matches `kinds` (a regex; `.*`: all).
    pub fn count_spans(&self, host: &str, kinds: &str) -> u64 {
        self.influx.query_count(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "{host}" and r._field == "end_time_unix_nano")
  |> filter(fn: (r) => r["span.name"] =~ /^({kinds})$/)
  |> group() |> count()"#,
            self.influx.bucket
        ))
    }

    /// The sum of the collector's own metric `name` over the series whose labels contain
    /// every one of `labels`.
    pub fn collector_metric(&self, name: &str, labels: &[&str]) -> u64 {
        metric_sum(self.var("DDSHARK_OTELCOL_METRICS_URL"), name, labels)
    }

    /// A variable of its stack.env.
    pub fn var(&self, k: &str) -> &str {
        self.env
            .get(k)
            .unwrap_or_else(|| panic!("{k} missing from stack.env: {:?}", self.env))
    }
}

impl Drop for RunningStack {
    fn drop(&mut self) {
        stop(&self.run_dir);
        if std::thread::panicking() {
            eprintln!("stack logs kept in {}", self.run_dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.run_dir);
        }
    }
}

/// scripts/stack/stop.sh --run-dir RUN_DIR.
fn stop(run_dir: &Path) {
    let _ = Command::new(super::repo_root().join("scripts/stack/stop.sh"))
        .arg("--run-dir")
        .arg(run_dir)
        .output();
}

/// Polls `ok` every 250 ms until it holds (true) or `timeout` has passed (false).
pub fn wait_until(timeout: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while !ok() {
        if t.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    true
}

/// Polls `ok` until it holds; fails naming `what` when it has not within `timeout`.
pub fn wait_for(what: &str, timeout: Duration, ok: impl FnMut() -> bool) {
    assert!(wait_until(timeout, ok), "{what}: not within {timeout:?}");
}
