//! ddshark's OTLP metrics against its own final counters.

use super::*;

/// Timing and shared-memory flags reach InfluxDB as topic metrics: DEADLINE misses
/// (counter), the rate over the active time and the jitter (gauges), and the
/// `shared_memory_only` attribute, equal to the final snapshot's; and DDS Security traffic
/// per participant pair.
#[test]
fn stack_topic_timing_shared_memory_and_secured_metrics() {
    let stack = Stack::start("2");
    let finals: Vec<(&str, PathBuf)> = [
        ("k3_fastdds_deadline/a.pcap", "fastdds-deadline"),
        ("k2_fastdds_shm/a.pcap", "fastdds-shm"),
        ("m_fastdds_sros2/a.pcap", "fastdds-sros2"),
    ]
    .into_iter()
    .map(|(rel, host)| (host, stack.replay(&fixture(rel), host)))
    .collect();
    // ddshark's last export comes at exit: the measurement once it has settled (without
    // _stop, which is now() and so differs in every answer).
    let last = |measurement: &str, field: &str, host: &str| -> Vec<HashMap<String, String>> {
        let long_bucket = &stack.influx.long_bucket;
        let flux = format!(
            r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "{measurement}" and r._field == "{field}" and r["host.name"] == "{host}")
  |> group(columns: ["topic_name"]) |> sort(columns: ["_time"]) |> last() |> group()
  |> drop(columns: ["_start", "_stop"])"#
        );
        stack.settled(&flux, Duration::from_secs(30)).0
    };
    let (host, path) = &finals[0];
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let chatter = snap["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "rt/chatter")
        .unwrap();
    let misses = last("ddshark.topic.deadline_misses", "counter", host);
    let row = misses
        .iter()
        .find(|r| r["topic_name"] == "rt/chatter")
        .unwrap_or_else(|| panic!("no deadline_misses for rt/chatter: {misses:?}"));
    assert_eq!(
        row["_value"].parse::<f64>().unwrap() as u64,
        chatter["timing"]["deadline_misses"].as_u64().unwrap()
    );
    assert!(chatter["timing"]["deadline_misses"].as_u64().unwrap() >= 12);
    let rate = last("ddshark.topic.rate", "gauge", host);
    let row = rate
        .iter()
        .find(|r| r["topic_name"] == "rt/chatter")
        .unwrap_or_else(|| panic!("no rate for rt/chatter: {rate:?}"));
    let want = chatter["rate"]["hz"].as_f64().unwrap();
    assert!((row["_value"].parse::<f64>().unwrap() - want).abs() < 1e-6 * want);
    let jitter = last("ddshark.topic.period.jitter", "gauge", host);
    assert!(
        jitter.iter().any(|r| r["topic_name"] == "rt/chatter"),
        "no jitter: {jitter:?}"
    );

    let (host, _) = &finals[1];
    let rows = last("ddshark.topic.samples", "counter", host);
    let flagged: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.get("shared_memory_only").is_some_and(|v| v == "true"))
        .map(|r| r["topic_name"].as_str())
        .collect();
    assert_eq!(
        flagged,
        BTreeSet::from(["rt/camera/image_raw", "rt/imu"]),
        "{rows:?}"
    );

    // DDS Security (SROS2 default governance): one series per participant pair, its last
    // point = the final snapshot's pair totals (which tests/secured.rs holds to tshark's).
    let (host, path) = &finals[2];
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let pairs = snap["secured"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{pairs:?}");
    // All three measurements in one settled query: each settling takes a while.
    let long_bucket = &stack.influx.long_bucket;
    let flux = format!(
        r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement =~ /^ddshark[.]secured[.]/ and r._field == "counter" and r["host.name"] == "{host}")
  |> group(columns: ["_measurement", "src_participant", "dst_participant"]) |> sort(columns: ["_time"]) |> last() |> group()
  |> drop(columns: ["_start", "_stop"])"#
    );
    let rows = stack.settled(&flux, Duration::from_secs(30)).0;
    for (measurement, key) in [
        ("ddshark.secured.bytes", "bytes"),
        ("ddshark.secured.messages", "messages"),
        ("ddshark.secured.submessages", "sec_submessages"),
    ] {
        let of: Vec<&HashMap<String, String>> = rows
            .iter()
            .filter(|r| r["_measurement"] == measurement)
            .collect();
        let got: BTreeSet<(String, String, u64)> = of
            .iter()
            .map(|r| {
                (
                    r["src_participant"].clone(),
                    r["dst_participant"].clone(),
                    r["_value"].parse::<f64>().unwrap() as u64,
                )
            })
            .collect();
        let want: BTreeSet<(String, String, u64)> = pairs
            .iter()
            .map(|p| {
                (
                    p["src"].as_str().unwrap().to_string(),
                    p["dst"].as_str().unwrap().to_string(),
                    p["totals"][key].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{measurement}: {rows:?}");
        assert!(
            of.iter().all(|r| r.contains_key("src_participant_name")),
            "{measurement}: SPDP names: {rows:?}"
        );
    }
}

/// RTPS over TCP: the `ddshark.tcp.*` metrics of a replayed Fast DDS TCP capture reach
/// the long bucket equal to the final snapshot's `health.dissector.tcp` counters.
#[test]
fn stack_tcp_metrics_equal_the_final_counters() {
    let stack = Stack::start("4");
    let host = "fastdds-tcp";
    let final_json = stack.replay(&fixture("l_fastdds_tcp/b.pcap"), host);
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(&final_json).unwrap()).unwrap();
    let tcp = &snap["health"]["dissector"]["tcp"];
    let counter = |k: &str| tcp[k].as_u64().unwrap_or_else(|| panic!("{k} in {tcp}"));
    // (metric, attribute, attribute value, the counter it must equal)
    let want: Vec<(&str, &str, &str, u64)> = vec![
        ("ddshark.tcp.streams", "", "", counter("streams_opened")),
        ("ddshark.tcp.bytes", "", "", counter("bytes")),
        ("ddshark.tcp.segments", "", "", counter("segments")),
        (
            "ddshark.tcp.messages",
            "framing",
            "rtcp",
            counter("rtps_rtcp"),
        ),
        ("ddshark.tcp.messages", "framing", "rti_tcp", 0),
        ("ddshark.tcp.out_of_order", "", "", counter("out_of_order")),
        (
            "ddshark.tcp.retransmitted",
            "",
            "",
            counter("retransmitted"),
        ),
        ("ddshark.tcp.gaps", "", "", counter("gaps")),
        ("ddshark.tcp.gap_bytes", "", "", counter("gap_bytes")),
        ("ddshark.tcp.resyncs", "", "", counter("resyncs")),
        (
            "ddshark.tcp.evictions",
            "reason",
            "idle",
            counter("streams_evicted_idle"),
        ),
        (
            "ddshark.tcp.evictions",
            "reason",
            "capacity",
            counter("streams_evicted_capacity"),
        ),
    ];
    assert!(
        counter("rtps_rtcp") > 450 && counter("bytes") > 100_000,
        "{tcp}"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut have = Vec::new();
        for (metric, key, value, _) in &want {
            let group = if key.is_empty() {
                String::new()
            } else {
                format!("\"{key}\"")
            };
            let long_bucket = &stack.influx.long_bucket;
            let rows = stack.influx.query(&format!(
                r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "{metric}" and r._field == "counter" and r["host.name"] == "{host}")
  |> group(columns: [{group}]) |> sort(columns: ["_time"]) |> last() |> group()"#
            ));
            let v = rows
                .iter()
                .find(|r| key.is_empty() || r.get(*key).map(String::as_str) == Some(*value))
                .map(|r| r["_value"].parse::<f64>().unwrap() as u64);
            have.push(v);
        }
        let expected: Vec<Option<u64>> = want.iter().map(|w| Some(w.3)).collect();
        if have == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "ddshark.tcp.* in InfluxDB {have:?}, final counters {expected:?} ({want:?})"
        );
        std::thread::sleep(Duration::from_secs(3));
    }
}
