//! The fleet path (docs/fleet.md): `DDSHARK_STACK_SHARDS=2 scripts/stack/start.sh`, the
//! collector as the routing tier (deploy/otelcol/routing.yaml: spans by trace id) in front of
//! two join shards. Four hosts of two robots (the Fast DDS pair `k_fastdds` as A and B, the
//! RustDDS pair `d_rustdds_interop` as C and D, captured at other times) replayed at once,
//! and shard join-1 `kill -9`'d while the spans come in and started again 30 s later
//! (scripts/stack/relaunch.sh). Then every span the collector took is a raw point (sent −
//! stored = 0), every latency of each pair is its oracle's (`ddshark latency` on that pair's
//! captures) to the ns, the shards' per-second totals add up to the latencies (a span the
//! routing tier or the restarted shard delivered again is taken once), and both shards joined
//! samples.
//!
//! Twice: with the static resolver (`DDSHARK_STACK_SHARDS=2`, the shards' ports listed), and
//! as `docker compose up --scale join=2` runs it (`DDSHARK_STACK_RESOLVER=dns`): the routing
//! tier's DNS resolver (deploy/otelcol/routing-dns.yaml) finds the shards behind the name
//! `join` (127.0.0.2 and 127.0.0.3 in the collector's own /etc/hosts), on one port, each
//! with TLS and the bearer token on its intake and its shard and state claimed with
//! `--shard-auto`, the flags compose gives them.
//!
//! Needs the stack `scripts/stack/build.sh` caches (`common::stack::stack_bin`): without
//! it this test FAILS, naming how to build it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::stack::{fresh_run_dir, wait_for, wait_until, RunningStack};
use common::{fixtures, read_tsv, repo_root};

/// `12.345678900` (seconds) → ns.
fn ns_of(text: &str) -> Option<i64> {
    let (s, frac) = text.split_once('.')?;
    let frac = format!("{frac:0<9}");
    Some(s.parse::<i64>().ok()? * 1_000_000_000 + frac.get(..9)?.parse::<i64>().ok()?)
}

/// (writer, sn, "X->Y") → latency_ns of the oracle of the pair in `dir`, its hosts named
/// `names` instead of A and B.
fn oracle(dir: &Path, names: [&str; 2]) -> BTreeMap<(String, i64, String), i64> {
    let mut out = BTreeMap::new();
    for o in read_tsv(&dir.join("oracle_latency.tsv")) {
        let (Some(t_send), Some(t_recv)) =
            (ns_of(&o["t_send_first"]), ns_of(&o["t_recv_complete"]))
        else {
            continue;
        };
        let direction = o["direction"]
            .replace('A', "\0")
            .replace('B', names[1])
            .replace('\0', names[0]);
        out.insert(
            (
                o["writer_guid"].clone(),
                o["seq"].parse().unwrap(),
                direction,
            ),
            t_recv - t_send,
        );
    }
    out
}

/// How long the killed shard stays down.
const OUTAGE: Duration = Duration::from_secs(30);

#[test]
fn four_hosts_through_two_join_shards_lose_nothing_when_one_is_killed() {
    four_hosts_through_two_shards("fleet", "static");
}

#[test]
fn four_hosts_through_two_join_shards_found_by_dns_with_tls_lose_nothing_when_one_is_killed() {
    four_hosts_through_two_shards("fleet-dns", "dns");
}

/// One stack at a time: two at once on the test machine's two cores would test its load.
static ONE_STACK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn four_hosts_through_two_shards(name: &str, resolver: &str) {
    let _one = ONE_STACK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let run_dir = fresh_run_dir(name);
    // (pushes every second, as the stack's 10 s would make the test long; the backstop 120
    // pushes, longer than the outage and the routing tier's retry interval after it, as
    // docs/fleet.md asks of a deployment: the stack's 30 × 10 s)
    let stack = RunningStack::start(
        &run_dir,
        &[
            ("DDSHARK_STACK_SHARDS", "2"),
            ("DDSHARK_STACK_RESOLVER", resolver),
            ("DDSHARK_JOIN_PERIOD", "1s"),
            ("DDSHARK_JOIN_MAX_WAIT_PUSHES", "120"),
        ],
    );
    let endpoint = stack.var("DDSHARK_OTLP_ENDPOINT").to_string();
    let (ab, cd) = (
        fixtures().join("k_fastdds"),
        fixtures().join("d_rustdds_interop"),
    );
    let hosts = [
        ("A", ab.join("a.pcap")),
        ("B", ab.join("b.pcap")),
        ("C", cd.join("a.pcap")),
        ("D", cd.join("b.pcap")),
    ];
    let replays: Vec<_> = hosts
        .iter()
        .map(|(host, pcap)| {
            let child = Command::new(env!("CARGO_BIN_EXE_ddshark"))
                .arg("-r")
                .arg(pcap)
                .args(["--no-tui", "--host-name", host, "--otlp", &endpoint])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (*host, child)
        })
        .collect();
    // one shard gone while the spans come in: the routing tier holds its spans on disk
    wait_for(
        "the collector taking spans",
        Duration::from_secs(30),
        || stack.collector_metric("otelcol_receiver_accepted_spans", &[]) > 0,
    );
    let shard = stack.pid("join-1");
    let killed = std::time::Instant::now();
    let st = Command::new("kill")
        .args(["-KILL", &shard.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    for (host, child) in replays {
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{host}: {err}");
        assert!(
            err.contains("0 dropped (queue full), 0 failed, 0 abandoned"),
            "{host}: export not clean:\n{err}"
        );
    }
    std::thread::sleep(OUTAGE.saturating_sub(killed.elapsed()));
    let queued = stack.collector_metric(
        "otelcol_exporter_queue_size",
        &["exporter=\"load_balancing/join\""],
    );
    eprintln!(
        "spans held while join-1 was down {:.1} s: {queued}",
        killed.elapsed().as_secs_f64()
    );
    let st = Command::new(repo_root().join("scripts/stack/relaunch.sh"))
        .arg("--run-dir")
        .arg(&stack.run_dir)
        .arg("join-1")
        .status()
        .unwrap();
    assert!(st.success(), "relaunch.sh join-1");

    // sent − stored = 0: a raw point of every span the collector took
    let accepted = stack.collector_metric("otelcol_receiver_accepted_spans", &[]);
    assert!(accepted > 0);
    let stored = || {
        stack.influx.query_count(&format!(
            r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r._field == "end_time_unix_nano")
  |> group() |> count()"#,
            stack.influx.bucket
        ))
    };
    wait_for("a raw point of every span", Duration::from_secs(90), || {
        stored() == accepted
    });

    // every latency of each pair, to the ns, and nothing between the robots
    let mut want = oracle(&ab, ["A", "B"]);
    want.extend(oracle(&cd, ["C", "D"]));
    let long = stack.var("DDSHARK_INFLUX_LONG_BUCKET").to_string();
    let latencies = || -> BTreeMap<(String, i64, String), i64> {
        stack
            .influx
            .query(&format!(
                r#"from(bucket: "{long}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_latency" and (r._field == "latency_ns" or r._field == "sn"))
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> group() |> keep(columns: ["writer_id", "sender", "receiver", "sn", "latency_ns"])"#
            ))
            .into_iter()
            // (a point read while InfluxDB writes it may lack a field yet: read again later;
            // the comparison below takes the last read, made once all were there)
            .filter_map(|r| {
                let key = (
                    r["writer_id"].clone(),
                    r["sn"].parse().ok()?,
                    format!("{}->{}", r["sender"], r["receiver"]),
                );
                Some((key, r["latency_ns"].parse().ok()?))
            })
            .collect()
    };
    let mut got = BTreeMap::new();
    // (waited for without failing: what differs is named below, with the shards' counters)
    let waited = std::time::Instant::now();
    wait_until(Duration::from_secs(90), || {
        got = latencies();
        got.len() >= want.len()
    });
    eprintln!(
        "{} of {} latencies {:.1} s after the spans were stored",
        got.len(),
        want.len(),
        waited.elapsed().as_secs_f64()
    );
    let counters = stack.influx.query(&format!(
        r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "ddshark_join")
  |> filter(fn: (r) => r._field == "duplicates" or r._field == "forced" or r._field == "joined_evicted" or r._field == "senderless")
  |> group(columns: ["shard", "_field"]) |> max()"#,
        stack.influx.bucket
    ));
    let counters: Vec<String> = counters
        .iter()
        .map(|r| format!("shard {} {} {}", r["shard"], r["_field"], r["_value"]))
        .collect();
    eprintln!("join counters: {counters:?}");
    let wrong: Vec<_> = want
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(*v))
        .take(5)
        .map(|(k, v)| format!("{k:?}: oracle {v}, join {:?}", got.get(k)))
        .collect();
    assert!(wrong.is_empty(), "latencies differ: {wrong:?}");
    assert_eq!(got.len(), want.len(), "points the oracle does not have");

    // the shards' per-second totals add up to the latencies
    let totals = stack.influx.query(&format!(
        r#"from(bucket: "{long}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_latency_1s" and (r._field == "samples" or r._field == "latency_sum_ns"))
  |> group(columns: ["_field"]) |> sum()"#
    ));
    let total: HashMap<_, i64> = totals
        .iter()
        .map(|r| (r["_field"].clone(), r["_value"].parse().unwrap()))
        .collect();
    assert_eq!(
        total.get("samples"),
        Some(&(want.len() as i64)),
        "{totals:?}"
    );
    assert_eq!(
        total.get("latency_sum_ns"),
        Some(&want.values().sum::<i64>()),
        "{totals:?}"
    );

    // both shards joined samples
    let per_shard = stack.influx.query(&format!(
        r#"from(bucket: "{}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "ddshark_join" and r._field == "samples")
  |> group(columns: ["shard"]) |> max()"#,
        stack.influx.bucket
    ));
    let samples: BTreeMap<_, i64> = per_shard
        .iter()
        .map(|r| (r["shard"].clone(), r["_value"].parse().unwrap()))
        .collect();
    eprintln!(
        "samples joined per shard: {samples:?}; spans {accepted}; latencies {}",
        got.len()
    );
    assert_eq!(samples.len(), 2, "{per_shard:?}");
    assert!(samples.values().all(|&n| n > 0), "{samples:?}");

    // the component names this collector version knows (no deprecated alias)
    let log = std::fs::read_to_string(stack.run_dir.join("logs/otelcol.log")).unwrap();
    let deprecated: Vec<_> = log.lines().filter(|l| l.contains("deprecated")).collect();
    assert!(deprecated.is_empty(), "{deprecated:?}");
}
