//! A fault on the real stack (scripts/stack/start.sh: collector, the latency join writing
//! InfluxDB its spans, metrics and logs, InfluxDB): the join killed with SIGKILL in the middle
//! of a two-host replay and started again (scripts/stack/relaunch.sh). It loses no sample:
//! the latencies it materialises are those of `ddshark latency` on the same captures, every
//! one, to the ns; every span sent is stored, and nothing is dropped anywhere. (The long
//! version, every component in turn at the Autoware mix's rate: scripts/bench-faults.sh,
//! docs/faults.md.) And the join killed while InfluxDB hangs: nothing it acknowledged was
//! unwritten, so the transit check (flux-queries/transit_loss.flux) finds no span lost.
//!
//! Needs the binaries that `scripts/stack/build.sh` caches (`common::stack::stack_dir`);
//! without them this test fails, naming them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::fixture;
use common::stack::{fresh_run_dir, wait_for, RunningStack};

/// What these tests read of a stack (common::stack: start.sh on free ports, stopped on drop).
impl RunningStack {
    /// The latency join's last counters (its `ddshark_join` point) and when it was pushed.
    fn join_counters(&self) -> (HashMap<String, i64>, i64) {
        let rows = self.influx.query(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "ddshark_join") |> last() |> group()
  |> map(fn: (r) => ({{field: r._field, v: r._value, t: int(v: r._time)}}))
  |> keep(columns: ["field", "v", "t"])"#,
            self.influx.bucket
        ));
        let t = rows
            .iter()
            .filter_map(|r| r.get("t")?.parse().ok())
            .max()
            .unwrap_or(0);
        let counters = rows
            .iter()
            .filter_map(|r| Some((r.get("field")?.clone(), r.get("v")?.parse().ok()?)))
            .collect();
        (counters, t)
    }

    /// (writer, t_send) → latency_ns of the samples sent by `sender` and received by
    /// `receiver` that the join materialised.
    fn materialised(&self, sender: &str, receiver: &str) -> BTreeMap<(String, i64), i64> {
        let rows = self.influx.query(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_latency" and r._field == "latency_ns")
  |> filter(fn: (r) => r.sender == "{sender}" and r.receiver == "{receiver}")
  |> group() |> map(fn: (r) => ({{w: r.writer_id, t: int(v: r._time), v: r._value}}))
  |> keep(columns: ["w", "t", "v"])"#,
            self.influx.long_bucket
        ));
        rows.iter()
            .map(|r| {
                (
                    (r["w"].clone(), r["t"].parse().unwrap()),
                    r["v"].parse().unwrap(),
                )
            })
            .collect()
    }
}

/// scripts/stack/relaunch.sh of the stack's component `name`.
fn relaunch(stack: &RunningStack, name: &str) {
    let out = Command::new(common::repo_root().join("scripts/stack/relaunch.sh"))
        .arg("--run-dir")
        .arg(&stack.run_dir)
        .arg(name)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "relaunch.sh {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// (writer, t_send) → latency_ns per direction ("A->B", "B->A") of `ddshark latency`.
fn offline_latencies(a: &Path, b: &Path) -> HashMap<String, BTreeMap<(String, i64), i64>> {
    let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .arg("latency")
        .args([a, b])
        .args(["--level", "sample", "--format", "tsv", "-q"])
        .output()
        .expect("ddshark latency");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (dir, writer, status, t_send, lat) = (
        col("direction"),
        col("writer_guid"),
        col("status"),
        col("t_send_ns"),
        col("latency_ns"),
    );
    let mut out: HashMap<String, BTreeMap<(String, i64), i64>> = HashMap::new();
    for l in lines {
        let c: Vec<&str> = l.split('\t').collect();
        if c[status] == "ok" {
            out.entry(c[dir].to_string()).or_default().insert(
                (c[writer].to_string(), c[t_send].parse().unwrap()),
                c[lat].parse().unwrap(),
            );
        }
    }
    out
}

fn replay(stack: &RunningStack, pcap: &Path, host: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .arg("-r")
        .arg(pcap)
        .args(["--no-tui", "--speed", "0.5", "--otlp"])
        .arg(stack.var("DDSHARK_OTLP_ENDPOINT"))
        .args(["--host-name", host])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ddshark -r")
}

/// The exit summary's spans sent, after checking nothing was dropped or failed.
fn sent_of(child: Child, host: &str) -> u64 {
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{host}: ddshark failed:\n{err}");
    let summary = err
        .lines()
        .rev()
        .find(|l| l.contains(" spans: ") && l.contains(" sent, "))
        .unwrap_or_else(|| panic!("{host}: no export summary:\n{err}"));
    assert!(
        summary.contains(" 0 dropped (queue full), 0 failed,") && summary.contains(" 0 abandoned"),
        "{host}: {summary}"
    );
    let before = summary.split(" sent,").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn join_killed_mid_run_loses_no_accepted_sample() {
    // (pushes every second, so the join has pushed, and saved, before and after the kill)
    let stack = RunningStack::start(
        &fresh_run_dir("fault-join"),
        &[
            ("DDSHARK_JOIN_PERIOD", "1s"),
            ("DDSHARK_JOIN_SETTLE_PUSHES", "3"),
        ],
    );
    let (a, b) = (fixture("k_fastdds/a.pcap"), fixture("k_fastdds/b.pcap"));
    let (host_a, host_b) = ("fault-a", "fault-b");
    // 10.8 s of capture at half speed: ~22 s of replay.
    let replays = [replay(&stack, &a, host_a), replay(&stack, &b, host_b)];
    let victim = stack.pid("join");
    // Killed once it has read spans and pushed its counters (so a state was saved too).
    wait_for("the join reads spans", Duration::from_secs(60), || {
        stack.join_counters().0.get("spans").copied().unwrap_or(0) > 0
    });
    std::thread::sleep(Duration::from_millis(1500));
    let st = Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let killed_at = Instant::now();
    // Started again 5 s later, as start.sh started it (the collector holds the exports).
    std::thread::sleep(Duration::from_secs(5));
    relaunch(&stack, "join");
    let mut sent = 0;
    for (child, host) in replays.into_iter().zip([host_a, host_b]) {
        sent += sent_of(child, host);
    }
    assert!(
        killed_at.elapsed() > Duration::from_secs(3),
        "the replay ended before the join was back: no mid-run restart"
    );
    // Every span sent is stored (the join's fault touches none of them).
    let stored = || stack.count_spans(host_a, ".*") + stack.count_spans(host_b, ".*");
    wait_for(
        "InfluxDB holds every span sent",
        Duration::from_secs(90),
        || stored() >= sent,
    );
    assert_eq!(stored(), sent, "spans stored vs sent");
    // The join is done: a push after now finds nothing pending.
    let asked = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    wait_for(
        "the join has joined everything",
        Duration::from_secs(90),
        || {
            let (c, t) = stack.join_counters();
            t > asked && c.get("pending_samples") == Some(&0) && c.get("pending_frags") == Some(&0)
        },
    );
    std::thread::sleep(Duration::from_secs(3));
    let join_log = std::fs::read_to_string(stack.run_dir.join("logs/join.log")).unwrap_or_default();
    assert!(
        join_log.contains("ddshark-join: went on from"),
        "the restarted join did not read the state:\n{join_log}"
    );
    let (counters, _) = stack.join_counters();
    eprintln!("join after the kill: {counters:?}");
    // Everything it was handed, counted: SAMPLE and DATA_FRAG spans stored = spans it read
    // (more if the collector sent an export cut by the kill again), none rejected or dropped.
    let for_join = stack.count_spans(host_a, "SAMPLE|DATA_FRAG")
        + stack.count_spans(host_b, "SAMPLE|DATA_FRAG");
    let read = counters["spans"] as u64;
    assert!(
        read >= for_join,
        "the join read {read} spans, InfluxDB holds {for_join} SAMPLE/DATA_FRAG spans"
    );
    // (ddshark's metrics too: none refused, none InfluxDB refused)
    for k in [
        "rejected",
        "points_dropped",
        "early",
        "telemetry_rejected",
        "influx_points_rejected",
    ] {
        assert_eq!(counters.get(k), Some(&0), "{k}: {counters:?}");
    }
    // No accepted sample lost: the latencies are ddshark latency's, every one, to the ns.
    let offline = offline_latencies(&a, &b);
    let mut total = 0;
    for (dir, snd, rcv) in [("A->B", host_a, host_b), ("B->A", host_b, host_a)] {
        let want = offline.get(dir).cloned().unwrap_or_default();
        let got = stack.materialised(snd, rcv);
        let missing: Vec<_> = want
            .keys()
            .filter(|k| !got.contains_key(*k))
            .take(5)
            .collect();
        assert!(
            got == want,
            "{dir}: materialised {} latencies, ddshark latency {}; missing e.g. {missing:?}",
            got.len(),
            want.len()
        );
        total += got.len();
    }
    assert!(total > 500, "only {total} latencies: not the fixture's");
    eprintln!(
        "join killed mid-run: {sent} spans sent and stored, {read} read by the join, \
         {total} latencies equal to ddshark latency"
    );
}

/// `kill -SIGNAL pid`.
fn signal(pid: u32, signal: &str) {
    let st = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -{signal} {pid}");
}

/// A process stopped with SIGSTOP, continued when dropped (also when the test fails, so
/// the stack can be stopped).
struct Frozen(u32);

impl Frozen {
    fn new(pid: u32) -> Frozen {
        signal(pid, "STOP");
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

impl RunningStack {
    /// flux-queries/transit_loss.flux over all time, as Grafana runs it: per host its
    /// rows (one per ddshark run).
    fn transit_loss(&self) -> Vec<HashMap<String, String>> {
        let text =
            std::fs::read_to_string(common::repo_root().join("flux-queries/transit_loss.flux"))
                .unwrap();
        let flux = text
            .replace("${bucket}", &self.influx.bucket)
            .replace("${long_bucket}", &self.influx.long_bucket);
        self.influx.query(&format!(
            "option v = {{timeRangeStart: 1970-01-01T00:00:00Z, timeRangeStop: 2100-01-01T00:00:00Z, windowPeriod: 1s}}\n{flux}"
        ))
    }

    /// The spans the join acknowledged to the collector (its exporter's sent counter).
    fn sent_to_join(&self) -> u64 {
        self.collector_metric("otelcol_exporter_sent_spans_total", &["otlp_grpc/join"])
    }
}

/// The join killed (kill -9) while InfluxDB hangs: it answers an export only once the
/// export's raw points are written, so the collector counted nothing delivered that was not
/// in InfluxDB, and sends the rest again to the restarted join: every span sent is stored,
/// and the transit check (flux-queries/transit_loss.flux: holes in the spans' export_seq)
/// finds nothing lost in transit.
#[test]
fn a_join_killed_while_influxdb_hangs_loses_no_span() {
    let stack = RunningStack::start(&fresh_run_dir("fault-transit"), &[]);
    let host = "transit-a";
    // 10.8 s of capture at half speed: ~22 s of replay.
    let replay = replay(&stack, &fixture("k_fastdds/a.pcap"), host);
    wait_for(
        "spans stored before the fault",
        Duration::from_secs(60),
        || stack.count_spans(host, ".*") > 0,
    );
    // InfluxDB frozen: the join's writes hang, so it answers no export.
    let influxd = Frozen::new(stack.pid("influxd"));
    std::thread::sleep(Duration::from_secs(3));
    let before = stack.sent_to_join();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        stack.sent_to_join(),
        before,
        "the join acknowledged spans while InfluxDB could not take them"
    );
    signal(stack.pid("join"), "KILL");
    drop(influxd);
    relaunch(&stack, "join");
    let sent = sent_of(replay, host);
    // Stored: until nothing more arrives for 10 s (the collector retried what it had queued
    // while the join was down).
    let (mut stored, mut since) = (0, Instant::now());
    wait_for("InfluxDB settles", Duration::from_secs(120), || {
        let now = stack.count_spans(host, ".*");
        if now != stored {
            (stored, since) = (now, Instant::now());
        }
        since.elapsed() > Duration::from_secs(10)
    });
    assert_eq!(stored, sent, "spans stored vs sent");
    let rows: Vec<_> = stack
        .transit_loss()
        .into_iter()
        .filter(|r| r["host"] == host)
        .collect();
    assert_eq!(rows.len(), 1, "one ddshark run: {rows:?}");
    let count = |k: &str| -> u64 { rows[0][k].parse().unwrap() };
    assert_eq!(count("stored"), stored, "{rows:?}");
    assert_eq!(count("failed at ddshark"), 0, "{rows:?}");
    assert_eq!(count("lost in transit"), 0, "{rows:?}");
    eprintln!("the join killed while InfluxDB hung: {sent} spans sent, {stored} stored, none lost");
}
