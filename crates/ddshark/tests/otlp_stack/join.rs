//! The live join behind the stack against `ddshark latency`.

use super::*;

/// Waits until the latency join has joined every sample it was given: its `ddshark_join`
/// counters (raw bucket) pushed after this call, with nothing pending.
fn wait_for_the_join(stack: &Stack) {
    let t_called = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let bucket = &stack.influx.bucket;
        let st = stack.influx.query(&format!(
            r#"from(bucket:"{bucket}") |> range(start: -10m)
  |> filter(fn: (r) => r._measurement == "ddshark_join") |> last()
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({{r with t_ns: int(v: r._time)}}))"#
        ));
        let done = st.last().is_some_and(|r| {
            let n = |k: &str| r.get(k).and_then(|v| v.parse::<i64>().ok());
            n("t_ns").unwrap_or(0) > t_called
                && n("pending_samples") == Some(0)
                && n("pending_frags") == Some(0)
        });
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the latency join did not finish within 180 s: {st:?}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Two hosts, two clocks, live: the Fast DDS pair with B's clock 12.345678 ms ahead
/// (B's capture rewritten as in latency_clock.rs), replayed into the stack as two hosts.
/// The latency join writes `dds_clock_offset` to the long bucket; its last point
/// must be `ddshark latency A B`'s clock_offset estimate and half-width (within 1 ns).
#[test]
fn stack_clock_offset_equals_ddshark_latency() {
    const SHIFT_NS: i64 = 12_345_678;
    let stack = Stack::start("3");
    let a = fixture("k_fastdds/a.pcap");
    let b = stack.run_dir.join("k_fastdds-b-shifted.pcap");
    common::shifted_copy(&fixture("k_fastdds/b.pcap"), &b, |t| t + SHIFT_NS);
    let (host_a, host_b) = ("clock-a", "clock-b");
    let mut spans = 0usize;
    for (path, host) in [(&a, host_a), (&b, host_b)] {
        stack.replay(path, host);
        spans += stack.wait_spans(host, 1);
    }
    assert!(spans > 0, "no spans reached InfluxDB");

    // Offline: ddshark latency's estimate (B's clock minus A's).
    let out = ddshark(&[
        "latency",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    let offline: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["kind"] == "clock_offset")
        .expect("ddshark latency printed no clock_offset");
    assert_eq!(offline["pair"], "B-A", "{offline}");
    let int = |v: &Value, k: &str| v[k].as_i64().unwrap_or_else(|| panic!("{k}: {v}"));
    let (off_ns, off_half, t_ref, drift) = (
        int(&offline, "offset_ns"),
        int(&offline, "half_width_ns"),
        int(&offline, "t_ref_ns"),
        int(&offline, "drift_ppb"),
    );
    let offline_at =
        |t: i64| off_ns + ((i128::from(t - t_ref) * i128::from(drift)) / 1_000_000_000) as i64;

    // Live: the join's last point once it has joined every sample.
    wait_for_the_join(&stack);
    // (its points reach InfluxDB at its next push: the last one, settled)
    let long_bucket = &stack.influx.long_bucket;
    let (rows, settled) = stack.settled(
        &format!(
            r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_clock_offset")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({{r with t_ns: int(v: r._time)}}))
  |> group() |> sort(columns: ["_time"]) |> last(column: "t_ns")
  |> drop(columns: ["_start", "_stop"])"#
        ),
        Duration::from_secs(30),
    );
    assert!(
        settled,
        "no settled dds_clock_offset point in {long_bucket}: {rows:?}"
    );
    let row = rows.into_iter().next().unwrap();
    let n = |k: &str| -> i64 {
        row.get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("dds_clock_offset without {k}: {row:?}"))
    };
    let pair = (row["host_a"].as_str(), row["host_b"].as_str());
    let sign = match pair {
        (x, y) if x == host_a && y == host_b => 1,
        (x, y) if x == host_b && y == host_a => -1,
        _ => panic!("dds_clock_offset for hosts {pair:?}"),
    };
    let (live, half, t_live) = (sign * n("offset_ns"), n("half_width_ns"), n("t_ns"));
    let offline = offline_at(t_live);
    eprintln!(
        "k_fastdds, B +{SHIFT_NS} ns: stack {live} ± {half} ns (samples {}+{}, builtin {}), \
         ddshark latency {offline} ± {off_half} ns",
        n("samples_a_to_b"),
        n("samples_b_to_a"),
        n("samples_builtin")
    );
    assert!(
        (live - offline).abs() <= 1 && (half - off_half).abs() <= 1,
        "stack {live} ± {half} ns, ddshark latency {offline} ± {off_half} ns"
    );
    // The interval holds the true offset (the shift; both captures read one clock).
    assert!(
        (live - SHIFT_NS).abs() <= half,
        "{live} ± {half} misses {SHIFT_NS}"
    );
}

/// The writers' hosts through the real stack, as `ddshark latency` decides them: the VLAN
/// pair (each host a participant on each of two VLANs of one NIC, tied only by their
/// Ethernet source and announced addresses) with B's clock 12.345678 ms ahead. The SAMPLE
/// spans' `src_ip`, `src_mac` (an integer) and `announced_ips` (a list with commas) pass
/// through the collector into the join, whose `dds_latency` points name, per
/// writer, the senders `ddshark latency A B` names (by the order of events alone it named A
/// for B's writers: join_clock.rs).
#[test]
fn stack_writers_hosts_equal_ddshark_latency() {
    let stack = Stack::start("6");
    let a = fixture("h_vlan_pcp/a.pcap");
    let b = stack.run_dir.join("h_vlan_pcp-b-shifted.pcap");
    common::shifted_copy(&fixture("h_vlan_pcp/b.pcap"), &b, |t| t + 12_345_678);
    let (host_a, host_b) = ("vlan-a", "vlan-b");
    for (path, host) in [(&a, host_a), (&b, host_b)] {
        stack.replay(path, host);
        assert!(
            stack.wait_spans(host, 1) > 0,
            "no spans of {host} in InfluxDB"
        );
    }
    let out = ddshark(&[
        "latency",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    let mut offline: BTreeSet<(String, String)> = BTreeSet::new();
    for v in String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "sample" && v["status"] == "ok")
    {
        let sender = match v["direction"].as_str() {
            Some("A->B") => host_a,
            Some("B->A") => host_b,
            other => panic!("direction {other:?}: {v}"),
        };
        offline.insert((
            v["writer_guid"].as_str().unwrap().to_string(),
            sender.to_string(),
        ));
    }
    assert!(
        offline.iter().any(|(_, s)| s == host_b),
        "ddshark latency names no writer on B: {offline:?}"
    );
    wait_for_the_join(&stack);
    let long_bucket = &stack.influx.long_bucket;
    let (rows, settled) = stack.settled(
        &format!(
            r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_latency" and r._field == "sn")
  |> filter(fn: (r) => r.sender == "{host_a}" or r.sender == "{host_b}")
  |> group(columns: ["writer_id", "sender"]) |> count() |> group()
  |> drop(columns: ["_start", "_stop"])"#
        ),
        Duration::from_secs(30),
    );
    assert!(
        settled,
        "no settled dds_latency points in {long_bucket}: {rows:?}"
    );
    let live: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r["writer_id"].clone(), r["sender"].clone()))
        .collect();
    eprintln!(
        "h_vlan_pcp, B +12.345678 ms: {} writers' senders, {} on B",
        live.len(),
        live.iter().filter(|(_, s)| s == host_b).count()
    );
    assert_eq!(
        live, offline,
        "(writer, sender) of the stack's dds_latency points"
    );
    // the evidence is stored once per writer with its facts, typed as the schema says
    let bucket = &stack.influx.bucket;
    let spans = stack.influx.query(&format!(
        r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_writers" and r["host.name"] == "{host_b}")
  |> filter(fn: (r) => r._field == "src_ip" or r._field == "src_mac" or r._field == "announced_ips")
  |> group(columns: ["_field"]) |> last()"#
    ));
    let field = |k: &str| {
        spans
            .iter()
            .find(|r| r["_field"] == k)
            .map(|r| r["_value"].clone())
            .unwrap_or_else(|| panic!("no {k} in {host_b}'s dds_writers: {spans:?}"))
    };
    assert!(field("src_ip").parse::<std::net::IpAddr>().is_ok());
    assert!(field("src_mac").parse::<i64>().is_ok_and(|m| m > 0));
    assert!(field("announced_ips")
        .split(',')
        .all(|ip| ip.parse::<std::net::IpAddr>().is_ok()));
}
