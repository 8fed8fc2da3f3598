//! A fault on the real stack (scripts/stack/start.sh: collector, Telegraf with the latency
//! join, InfluxDB): the join (`ddshark-join`, Telegraf's outputs.execd child) killed with
//! SIGKILL in the middle of a two-host replay, started again by Telegraf. It loses no
//! sample it had accepted: the latencies it materialises are those of `ddshark latency` on
//! the same captures, every one, to the ns; it counts every span Telegraf stored, and
//! nothing is dropped anywhere. (The long version, every component in turn at the Autoware
//! mix's rate: scripts/bench-faults.sh, docs/faults.md.) And Telegraf killed with spans in
//! its memory buffer: the transit check (flux-queries/transit_loss.flux) counts exactly the
//! spans lost, sent − stored.
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
use common::stack::{fresh_run_dir, RunningStack};

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

    /// Telegraf's metrics_dropped per output alias (its internal_write), all it reported.
    fn telegraf_dropped(&self) -> BTreeMap<String, i64> {
        let rows = self.influx.query(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "internal_write" and r._field == "metrics_dropped")
  |> group(columns: ["alias"]) |> max() |> keep(columns: ["alias", "_value"])"#,
            self.influx.bucket
        ));
        rows.iter()
            .filter_map(|r| Some((r.get("alias")?.clone(), r.get("_value")?.parse().ok()?)))
            .collect()
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

/// The pids whose parent is `parent` and whose command line contains `what`.
fn children(parent: u32, what: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmd = std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(parent) && cmd.contains(what) && !stat.contains(") Z ") {
            out.push(pid);
        }
    }
    out
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
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
    let telegraf = stack.pid("telegraf");
    let joins = children(telegraf, "ddshark-join");
    assert_eq!(joins.len(), 1, "Telegraf's ddshark-join: {joins:?}");
    let victim = joins[0];
    // Killed once it has read spans and pushed its counters (so a state was saved too).
    wait_until("the join reads spans", Duration::from_secs(60), || {
        stack.join_counters().0.get("spans").copied().unwrap_or(0) > 0
    });
    std::thread::sleep(Duration::from_millis(1500));
    let st = Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let killed_at = Instant::now();
    // Telegraf starts it again (restart_delay 5 s).
    wait_until(
        "Telegraf restarts the join",
        Duration::from_secs(30),
        || {
            children(telegraf, "ddshark-join")
                .iter()
                .any(|&p| p != victim)
        },
    );
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
    wait_until(
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
    wait_until(
        "the join has joined everything",
        Duration::from_secs(90),
        || {
            let (c, t) = stack.join_counters();
            t > asked && c.get("pending_samples") == Some(&0) && c.get("pending_frags") == Some(&0)
        },
    );
    std::thread::sleep(Duration::from_secs(3));
    let telegraf_log =
        std::fs::read_to_string(stack.run_dir.join("logs/telegraf.log")).unwrap_or_default();
    assert!(
        telegraf_log.contains("ddshark-join: went on from"),
        "the restarted join did not read the state:\n{telegraf_log}"
    );
    let (counters, _) = stack.join_counters();
    eprintln!("join after the kill: {counters:?}");
    // Everything it was handed, counted: SAMPLE and DATA_FRAG spans stored = spans it read
    // (more if Telegraf handed a batch cut by the kill over again), none rejected or dropped.
    let for_join = stack.count_spans(host_a, "SAMPLE|DATA_FRAG")
        + stack.count_spans(host_b, "SAMPLE|DATA_FRAG");
    let read = counters["spans"] as u64;
    assert!(
        read >= for_join,
        "the join read {read} spans, InfluxDB holds {for_join} SAMPLE/DATA_FRAG spans"
    );
    for k in ["rejected", "points_dropped", "early"] {
        assert_eq!(counters.get(k), Some(&0), "{k}: {counters:?}");
    }
    let dropped = stack.telegraf_dropped();
    assert!(
        dropped.values().all(|&d| d == 0),
        "Telegraf dropped: {dropped:?}"
    );
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

    /// The spans the collector handed to Telegraf (its exporter's sent counter).
    fn sent_to_telegraf(&self) -> u64 {
        self.collector_metric("otelcol_exporter_sent_spans_total", &["telegraf"])
    }
}

/// Telegraf killed (kill -9) with spans in its memory buffer: spans the collector counted
/// delivered, InfluxDB never got and nothing counted lost. The transit check
/// (flux-queries/transit_loss.flux: holes in the spans' export_seq) counts exactly them:
/// sent − stored.
#[test]
fn transit_check_counts_what_a_killed_telegraf_lost() {
    let stack = RunningStack::start(&fresh_run_dir("fault-transit"), &[]);
    let host = "transit-a";
    // 10.8 s of capture at half speed: ~22 s of replay.
    let replay = replay(&stack, &fixture("k_fastdds/a.pcap"), host);
    wait_until(
        "spans stored before the fault",
        Duration::from_secs(60),
        || stack.count_spans(host, ".*") > 0,
    );
    // InfluxDB frozen: Telegraf accepts spans (the collector counts them sent) and keeps
    // them in its memory buffer, where the kill takes them. Deterministic: spans that
    // arrive after its first write hung on the frozen InfluxDB are in no write at all.
    let influxd = Frozen::new(stack.pid("influxd"));
    std::thread::sleep(Duration::from_secs(3));
    let before = stack.sent_to_telegraf();
    wait_until(
        "Telegraf accepts spans while InfluxDB is frozen",
        Duration::from_secs(30),
        || stack.sent_to_telegraf() >= before + 100,
    );
    signal(stack.pid("telegraf"), "KILL");
    drop(influxd);
    let relaunch = Command::new(common::repo_root().join("scripts/stack/relaunch.sh"))
        .arg("--run-dir")
        .arg(&stack.run_dir)
        .arg("telegraf")
        .output()
        .unwrap();
    assert!(
        relaunch.status.success(),
        "relaunch.sh telegraf: {}",
        String::from_utf8_lossy(&relaunch.stderr)
    );
    let sent = sent_of(replay, host);
    // Stored: until nothing more arrives for 10 s (the collector retried what it had queued
    // while Telegraf was down).
    let (mut stored, mut since) = (0, Instant::now());
    wait_until("InfluxDB settles", Duration::from_secs(120), || {
        let now = stack.count_spans(host, ".*");
        if now != stored {
            (stored, since) = (now, Instant::now());
        }
        since.elapsed() > Duration::from_secs(10)
    });
    assert!(
        stored < sent,
        "nothing lost ({stored} of {sent} stored): the kill found Telegraf's buffer empty"
    );
    let rows: Vec<_> = stack
        .transit_loss()
        .into_iter()
        .filter(|r| r["host"] == host)
        .collect();
    assert_eq!(rows.len(), 1, "one ddshark run: {rows:?}");
    let count = |k: &str| -> u64 { rows[0][k].parse().unwrap() };
    assert_eq!(count("stored"), stored, "{rows:?}");
    assert_eq!(count("failed at ddshark"), 0, "{rows:?}");
    assert_eq!(
        count("lost in transit"),
        sent - stored,
        "the transit check against sent − stored ({sent} − {stored}): {rows:?}"
    );
    eprintln!(
        "Telegraf killed with a full memory buffer: {sent} spans sent, {stored} stored, \
         {} counted lost in transit",
        sent - stored
    );
}
