//! Two hosts' captures through the stack: every DATA/DATA_FRAG exactly once, the SAMPLE spans.

use super::*;

/// The distinct non-empty values of `field` per writer: from `rows` (writer_id → value).
fn values_per_writer<'a>(
    rows: impl Iterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (w, v) in rows {
        let set = out.entry(w.to_string()).or_default();
        if !v.is_empty() {
            set.insert(v.to_string());
        }
    }
    out
}

/// Checks every DATA/DATA_FRAG of the tshark oracle against the `spans` points of `host`
/// (found by start ns, writer, SN and fragment number: the lean points keep no frame
/// numbers; each with its frame's PCP and VLAN) and every writer's facts against its `dds_writers` points (each value its
/// DATA/DATA_FRAG carried, as the join writes a writer's point when a fact changes).
/// With `lean` (`--otlp-lean`) a sample's first DATA is checked against the sample's
/// SAMPLE point instead (same start, writer and SN, its datagram's end, PCP and VLAN).
/// Returns the (writer_id, sn) of its spans.
fn check_host(
    stack: &Stack,
    host: &str,
    pcap: &Path,
    oracle_tsv: &str,
    expect_service: &str,
    shift_ns: &dyn Fn(u64) -> u64,
    lean: bool,
) -> Vec<(String, String)> {
    let oracle: Vec<_> = read_tsv(&fixture(oracle_tsv))
        .into_iter()
        .filter(|o| matches!(o["sm_kind"].as_str(), "DATA" | "DATA_FRAG") && o["in_icmp"] != "1")
        .collect();
    assert!(!oracle.is_empty(), "{oracle_tsv}: no DATA/DATA_FRAG");
    // (frame and submessage index of the DATA that start a sample: copies of one SN further
    // apart than the sample window are samples of their own, as for the exporter's tracker)
    let mut first_data: HashSet<(String, String)> = HashSet::new();
    let submessage = |o: &HashMap<String, String>| (o["frame"].clone(), o["sm_idx"].clone());
    if lean {
        type Copy = (i64, i64, (String, String));
        let mut copies: BTreeMap<(&str, &str), Vec<Copy>> = BTreeMap::new();
        for o in oracle.iter().filter(|o| o["sm_kind"] == "DATA") {
            let t = |c: &str| ns_of(&o[c]).unwrap() as i64;
            copies
                .entry((o["writer_guid"].as_str(), o["seq"].as_str()))
                .or_default()
                .push((t("t_first_ipfrag"), t("t_last_ipfrag"), submessage(o)));
        }
        for list in copies.values_mut() {
            list.sort();
            let mut last_end: Option<i64> = None;
            for (_, end, at) in list.iter() {
                if last_end.is_none_or(|e| end - e > span_schema::SAMPLE_WINDOW_NS) {
                    first_data.insert(at.clone());
                }
                last_end = Some(last_end.map_or(*end, |e| e.max(*end)));
            }
        }
    }
    let expected_spans = oracle.len() - first_data.len();
    let got = stack.wait_spans(host, expected_spans);
    let spans = stack.spans(host);
    let mut samples_by_key: HashMap<(String, String, String), SpanRow> = HashMap::new();
    if lean {
        for s in stack.spans_of(host, "SAMPLE") {
            let key = (
                s.tag("t_ns").to_string(),
                s.tag("writer_id").to_string(),
                s.tag("sn").to_string(),
            );
            samples_by_key.insert(key, s);
        }
    }
    assert_eq!(got, spans.len());
    let fsn_of = |kind: &str, fsn: &str| {
        if kind == "DATA" {
            "0".to_string()
        } else {
            fsn.to_string()
        }
    };
    let mut by_key: HashMap<(String, String, String, String), Vec<&SpanRow>> = HashMap::new();
    for s in &spans {
        let fsn = fsn_of(s.tag("span.name"), &s.int_text("fragment_starting_num"));
        let key = (
            s.tag("t_ns").to_string(),
            s.tag("writer_id").to_string(),
            s.tag("sn").to_string(),
            fsn,
        );
        by_key.entry(key).or_default().push(s);
    }
    let mut oracle_by_key: BTreeMap<(String, String, String, String), Vec<_>> = BTreeMap::new();
    for o in &oracle {
        let frame: i64 = o["frame"].parse().unwrap();
        let shift = shift_ns(frame as u64);
        let key = (
            (ns_of(&o["t_first_ipfrag"]).unwrap() + shift).to_string(),
            o["writer_guid"].clone(),
            o["seq"].clone(),
            fsn_of(&o["sm_kind"], &o["frag_start"]),
        );
        oracle_by_key.entry(key).or_default().push(o);
    }
    let mut problems = Vec::new();
    let mut check = |what: &str, key: &str, want: String, have: String| {
        if want != have && problems.len() < 40 {
            problems.push(format!("{key}: {what}: want {want:?}, have {have:?}"));
        }
    };
    for (k, os) in &oracle_by_key {
        let found = by_key.get(k).map(Vec::as_slice).unwrap_or(&[]);
        let key = format!("{host} {k:?} frame {}", os[0]["frame"]);
        let carried = os
            .iter()
            .filter(|o| first_data.contains(&submessage(o)))
            .count();
        if found.len() + carried != os.len() {
            check("spans", &key, os.len().to_string(), found.len().to_string());
            continue;
        }
        let sample = samples_by_key.get(&(k.0.clone(), k.1.clone(), k.2.clone()));
        if carried > 0 && sample.is_none() {
            check("SAMPLE point", &key, "one".into(), "none".into());
            continue;
        }
        let rows = sample
            .into_iter()
            .take(carried)
            .chain(found.iter().copied());
        for (o, s) in os.iter().zip(rows) {
            let kind = o["sm_kind"].as_str();
            let kind = if first_data.contains(&submessage(o)) {
                "SAMPLE"
            } else {
                kind
            };
            check("span.name", &key, kind.into(), s.tag("span.name").into());
            let shift = shift_ns(o["frame"].parse().unwrap());
            check(
                "end ns",
                &key,
                (ns_of(&o["t_last_ipfrag"]).unwrap() + shift).to_string(),
                s.tag("end_time_unix_nano").into(),
            );
            if !o["topic_tshark"].is_empty() {
                check(
                    "topic_name",
                    &key,
                    o["topic_tshark"].clone(),
                    s.tag("topic_name").into(),
                );
            }
            // (tags of the frame, not facts of the writer: one writer of h_vlan_pcp sends on
            // VLAN 10 with PCP 5 and on VLAN 20 with PCP 2)
            for col in ["pcp", "vlan_id"] {
                check(col, &key, o[col].clone(), s.tag(col).into());
            }
            if kind == "DATA_FRAG" {
                check(
                    "sample_size",
                    &key,
                    o["sample_size"].clone(),
                    s.int_text("sample_size"),
                );
                check(
                    "frags_in_submessage",
                    &key,
                    o["frags_in_sm"].clone(),
                    s.int_text("frags_in_submessage"),
                );
            }
            if !o["data_len"].is_empty() && kind != "SAMPLE" {
                check(
                    "payload_size",
                    &key,
                    o["data_len"].clone(),
                    s.int_text("payload_size"),
                );
            }
        }
    }
    // The writers' facts.
    let bucket = &stack.influx.bucket;
    let facts: Vec<SpanRow> = stack
        .influx
        .query(&format!(
            r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "dds_writers" and r["host.name"] == "{host}")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> group()"#
        ))
        .into_iter()
        .map(|cols| SpanRow { cols })
        .collect();
    let iface = pcap.file_name().unwrap().to_string_lossy().into_owned();
    for f in &facts {
        let w = f.tag("writer_id");
        check(
            "capture.interface",
            w,
            iface.clone(),
            f.tag("capture.interface").into(),
        );
        check(
            "service.name",
            w,
            expect_service.into(),
            f.tag("service.name").into(),
        );
        let builtin = u8::from_str_radix(&w[30..32], 16).unwrap() & 0xc0 == 0xc0;
        check(
            "traffic_type",
            w,
            if builtin { "discovery" } else { "user" }.into(),
            f.tag("traffic_type").into(),
        );
    }
    let oracle_rows = |col: &'static str| {
        values_per_writer(
            oracle
                .iter()
                .map(move |o| (o["writer_guid"].as_str(), o[col].as_str())),
        )
    };
    let fact_rows = |col: &'static str| {
        values_per_writer(facts.iter().map(move |f| (f.tag("writer_id"), f.tag(col))))
    };
    check(
        "vendor_id",
        host,
        format!("{:?}", oracle_rows("vendor_id")),
        format!("{:?}", fact_rows("vendor_id")),
    );
    // (a type tshark names is one of the writer's facts)
    let types = fact_rows("type_name");
    for (w, want) in oracle_rows("type_tshark") {
        let have = types.get(&w).cloned().unwrap_or_default();
        if !want.is_subset(&have) {
            check("type_name", &w, format!("{want:?}"), format!("{have:?}"));
        }
    }
    assert!(
        problems.is_empty(),
        "{host}: {} spans vs {} oracle DATA/DATA_FRAG; first problems:\n{}",
        spans.len(),
        oracle.len(),
        problems.join("\n")
    );
    assert_eq!(
        spans.len(),
        expected_spans,
        "{host}: spans beyond the oracle's submessages"
    );
    spans
        .iter()
        .map(|s| (s.tag("writer_id").to_string(), s.tag("sn").to_string()))
        .collect()
}

/// Sender and receiver captures of two fixtures, exported as four hosts over
/// gRPC/HTTP with and without gzip: every DATA/DATA_FRAG is in InfluxDB exactly
/// once with the right attributes and ns timestamps, each writer's facts once in
/// `dds_writers`; the samples both sides matched are on both.
#[test]
fn stack_two_hosts_every_submessage_exactly_once() {
    let stack = Stack::start("0");
    // The sender capture again, as a nanosecond pcap with sub-µs offsets per frame:
    // the exported timestamps must follow to the nanosecond.
    let ns_pcap = stack.run_dir.join("small-a-ns.pcap");
    write_ns_copy(&fixture("a_small_reliable/a.pcap"), &ns_pcap, sub_us_shift);
    let no_shift = |_: u64| 0u64;
    let runs: [Run; 6] = [
        (
            fixture("a_small_reliable/a.pcap"),
            "a_small_reliable/oracle_a_submsgs.tsv",
            "small-a",
            "grpc",
            "gzip",
            &no_shift,
        ),
        (
            fixture("a_small_reliable/b.pcap"),
            "a_small_reliable/oracle_b_submsgs.tsv",
            "small-b",
            "http",
            "none",
            &no_shift,
        ),
        (
            fixture("b_large_frag/a.pcap"),
            "b_large_frag/oracle_a_submsgs.tsv",
            "large-a",
            "http",
            "gzip",
            &no_shift,
        ),
        (
            fixture("b_large_frag/b.pcap"),
            "b_large_frag/oracle_b_submsgs.tsv",
            "large-b",
            "grpc",
            "none",
            &no_shift,
        ),
        (
            fixture("h_vlan_pcp/a.pcap"),
            "h_vlan_pcp/oracle_a_submsgs.tsv",
            "vlan-a",
            "grpc",
            "none",
            &no_shift,
        ),
        (
            ns_pcap.clone(),
            "a_small_reliable/oracle_a_submsgs.tsv",
            "small-a-ns",
            "grpc",
            "none",
            &sub_us_shift,
        ),
    ];
    let mut finals = Vec::new();
    for (path, _, host, proto, comp, _) in &runs {
        let endpoint = if *proto == "grpc" {
            stack.grpc()
        } else {
            stack.http()
        };
        let final_json = stack.replay_to(
            &endpoint,
            path,
            host,
            &[
                "--otlp-protocol",
                proto,
                "--otlp-compression",
                comp,
                "--service-name",
                "ddshark-e2e",
            ],
        );
        finals.push((*host, final_json));
    }
    let mut all = Vec::new();
    for (path, tsv, host, _, _, shift) in &runs {
        all.push((
            *host,
            check_host(&stack, host, path, tsv, "ddshark-e2e", *shift, false),
        ));
    }
    check_sample_spans(
        &stack,
        "small-a",
        "small-b",
        &fixture("a_small_reliable/a.pcap"),
        &fixture("a_small_reliable/b.pcap"),
    );
    // The hosts that captured each sample (writer, sn): its trace id is SHA-256 of the two
    // (docs/span-schema.md), so the samples both sides captured are one trace each.
    let mut hosts_of: HashMap<(String, String), HashSet<&str>> = HashMap::new();
    for (host, spans) in &all {
        for k in spans {
            hosts_of.entry(k.clone()).or_default().insert(host);
        }
    }
    // Samples captured on both sides share a trace: count them per fixture, as the oracle does.
    for (fixture_dir, a, b) in [
        ("a_small_reliable", "small-a", "small-b"),
        ("b_large_frag", "large-a", "large-b"),
    ] {
        let latency = read_tsv(&fixture(&format!("{fixture_dir}/oracle_latency.tsv")));
        let matched: HashSet<(String, String)> = latency
            .iter()
            .filter(|r| !r["t_send_first"].is_empty() && !r["t_recv_complete"].is_empty())
            .map(|r| (r["writer_guid"].clone(), r["seq"].clone()))
            .collect();
        let shared = hosts_of
            .iter()
            .filter(|(_, h)| h.contains(a) && h.contains(b))
            .count();
        assert!(
            shared > 0,
            "{fixture_dir}: no trace holds spans of both hosts"
        );
        assert!(
            !matched.is_empty(),
            "{fixture_dir}: oracle has no matched samples"
        );
        {
            for k in &matched {
                let h = hosts_of
                    .get(k)
                    .unwrap_or_else(|| panic!("{fixture_dir}: {k:?} not exported"));
                assert!(
                    h.contains(a) && h.contains(b),
                    "{fixture_dir}: {k:?} not on both hosts: {h:?}"
                );
            }
        }
    }
    // --otlp-topic: only matching topics are exported (glob and re: patterns).
    let out = ddshark(&[
        "-r",
        fixture("a_small_reliable/a.pcap").to_str().unwrap(),
        "--no-tui",
        "--otlp",
        &stack.grpc(),
        "--host-name",
        "filtered",
        "--otlp-topic",
        "rt/c*",
        "--otlp-topic",
        "re:^DCPSPub.*",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let want = small_a_topics(&stack, "^(rt/c.*|DCPSPub.*)$");
    assert!(want > 0);
    // (offered = the 214 submessage spans + one SAMPLE span per sample)
    let counts = regex_lite_counts(&err);
    assert_eq!(counts.1 + counts.2, counts.0, "{err}");
    assert!(counts.0 > 214, "{err}");
    assert_eq!(stack.wait_spans("filtered", want), want);
    let bucket = &stack.influx.bucket;
    let rows = stack.influx.query(&format!(
        r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "filtered" and r._field == "end_time_unix_nano")
  |> filter(fn: (r) => not exists r.topic_name or not (r.topic_name =~ /^(rt\/c.*|DCPSPub.*)$/))
  |> group() |> count()"#
    ));
    assert!(
        rows.is_empty() || rows[0]["_value"] == "0",
        "unmatched topics exported: {rows:?}"
    );

    // Per-topic metrics: the last exported counters equal the final snapshot's.
    for (host, final_json) in finals {
        let snap: Value =
            serde_json::from_str(&std::fs::read_to_string(&final_json).unwrap()).unwrap();
        let want: BTreeMap<String, i64> = snap["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    t["samples"].as_i64().unwrap(),
                )
            })
            .collect();
        let long_bucket = &stack.influx.long_bucket;
        let rows = stack.influx.query(&format!(
            r#"from(bucket:"{long_bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "ddshark.topic.samples" and r._field == "counter" and r["host.name"] == "{host}")
  |> group(columns: ["topic_name"]) |> sort(columns: ["_time"]) |> last() |> group()"#
        ));
        let have: BTreeMap<String, i64> = rows
            .iter()
            .map(|r| {
                (
                    r["topic_name"].clone(),
                    r["_value"].parse::<f64>().unwrap() as i64,
                )
            })
            .collect();
        assert_eq!(have, want, "{host}: ddshark.topic.samples");
    }
}

/// (offered, sent, filtered) of the exporter's summary line on stderr.
fn regex_lite_counts(stderr: &str) -> (u64, u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains(" spans: ") && l.contains(" sent, "))
        .unwrap_or_else(|| panic!("no exporter summary in {stderr}"));
    let num_before = |word: &str| -> u64 {
        let i = line
            .find(word)
            .unwrap_or_else(|| panic!("{word} in {line}"));
        line[..i]
            .trim_end()
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{word} in {line}"))
    };
    (
        num_before(" spans:"),
        num_before(" sent,"),
        num_before(" filtered,"),
    )
}

/// `--otlp-lean`: a sample's first DATA is no span of its own — its SAMPLE point says its
/// start, end, PCP and VLAN — while every other DATA (retransmissions, repairs, re-sends
/// after the window) and every DATA_FRAG still is one; the writers' facts (vendor, type)
/// come from the SAMPLE spans as well, and the SAMPLE spans still give `ddshark latency`'s rows.
#[test]
fn stack_lean_carries_a_samples_first_data_in_its_sample_span() {
    let stack = Stack::start("lean");
    let no_shift = |_: u64| 0u64;
    let runs = [
        (
            "h_vlan_pcp/a.pcap",
            "h_vlan_pcp/oracle_a_submsgs.tsv",
            "lean-vlan-a",
        ),
        (
            "h_vlan_pcp/b.pcap",
            "h_vlan_pcp/oracle_b_submsgs.tsv",
            "lean-vlan-b",
        ),
        (
            "a_small_reliable/a.pcap",
            "a_small_reliable/oracle_a_submsgs.tsv",
            "lean-small-a",
        ),
        (
            "a_small_reliable/b.pcap",
            "a_small_reliable/oracle_b_submsgs.tsv",
            "lean-small-b",
        ),
        (
            "b_large_frag/a.pcap",
            "b_large_frag/oracle_a_submsgs.tsv",
            "lean-large-a",
        ),
    ];
    for (pcap, _, host) in &runs {
        stack.replay_to(
            &stack.grpc(),
            &fixture(pcap),
            host,
            &["--otlp-lean", "--service-name", "ddshark-e2e"],
        );
    }
    for (pcap, tsv, host) in &runs {
        check_host(
            &stack,
            host,
            &fixture(pcap),
            tsv,
            "ddshark-e2e",
            &no_shift,
            true,
        );
    }
    check_sample_spans(
        &stack,
        "lean-small-a",
        "lean-small-b",
        &fixture("a_small_reliable/a.pcap"),
        &fixture("a_small_reliable/b.pcap"),
    );
}

/// SAMPLE spans: on the two small fixture hosts, every sample `ddshark latency` matches
/// has its sender's SAMPLE span starting at t_send and its receiver's ending at t_recv,
/// complete, with typed fields.
fn check_sample_spans(stack: &Stack, a_host: &str, b_host: &str, a: &Path, b: &Path) {
    let out = ddshark(&[
        "latency",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "tsv",
        "-q",
    ]);
    let tsv = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = tsv.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let samples = |host: &str| -> HashMap<(String, String), SpanRow> {
        stack
            .spans_of(host, "SAMPLE")
            .into_iter()
            .map(|s| ((s.tag("writer_id").to_string(), s.tag("sn").to_string()), s))
            .collect()
    };
    let (sa, sb) = (samples(a_host), samples(b_host));
    let mut checked = 0;
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        if f[col("direction")] != "A->B" || f[col("status")] != "ok" {
            continue;
        }
        let key = (f[col("writer_guid")].to_string(), f[col("sn")].to_string());
        let s = sa
            .get(&key)
            .unwrap_or_else(|| panic!("{key:?}: no SAMPLE span on {a_host}"));
        let r = sb
            .get(&key)
            .unwrap_or_else(|| panic!("{key:?}: no SAMPLE span on {b_host}"));
        assert_eq!(s.tag("t_ns"), f[col("t_send_ns")], "{key:?}: t_send");
        assert_eq!(s.tag("start_ns"), f[col("t_send_ns")], "{key:?}: start_ns");
        assert_eq!(
            r.tag("end_time_unix_nano"),
            f[col("t_recv_ns")],
            "{key:?}: t_recv"
        );
        assert_eq!(r.int("fragments_missing"), Some(0), "{key:?}");
        assert_eq!(
            s.tag("repairs"),
            f[col("repairs_sender")],
            "{key:?}: repairs"
        );
        checked += 1;
    }
    assert!(checked > 100, "{checked} samples checked");
}

/// One replay: capture, oracle TSV, host.name, protocol, compression, time shift.
type Run<'a> = (
    PathBuf,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a dyn Fn(u64) -> u64,
);

/// Sub-microsecond offset of frame `n` (1-based) in the nanosecond copy.
fn sub_us_shift(frame: u64) -> u64 {
    (frame * 7919 + 1) % 1000
}

/// Copies a little-endian µs pcap as a ns pcap, adding `shift(frame)` ns to each frame.
fn write_ns_copy(src: &Path, dst: &Path, shift: fn(u64) -> u64) {
    let data = std::fs::read(src).unwrap();
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
    assert_eq!(
        u32_at(0),
        0xa1b2_c3d4,
        "{}: µs little-endian pcap expected",
        src.display()
    );
    let mut out = Vec::with_capacity(data.len());
    out.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    out.extend_from_slice(&data[4..24]);
    let (mut off, mut frame) = (24usize, 0u64);
    while off + 16 <= data.len() {
        frame += 1;
        let (sec, usec, incl) = (u32_at(off), u32_at(off + 4), u32_at(off + 8) as usize);
        let ns = u64::from(usec) * 1000 + shift(frame);
        assert!(ns < 1_000_000_000);
        out.extend_from_slice(&sec.to_le_bytes());
        out.extend_from_slice(&(ns as u32).to_le_bytes());
        out.extend_from_slice(&data[off + 8..off + 16 + incl]);
        off += 16 + incl;
    }
    std::fs::write(dst, out).unwrap();
}

/// Spans of host small-a whose topic matches `re` (a Flux regex).
fn small_a_topics(stack: &Stack, re: &str) -> usize {
    let bucket = &stack.influx.bucket;
    let rows = stack.influx.query(&format!(
        r#"from(bucket:"{bucket}") |> range(start: 0)
  |> filter(fn: (r) => r._measurement == "spans" and r["host.name"] == "small-a" and r._field == "end_time_unix_nano")
  |> filter(fn: (r) => r["span.name"] != "SAMPLE" and exists r.topic_name and r.topic_name =~ /{}/)
  |> group() |> count()"#,
        re.replace('/', "\\/")
    ));
    rows.first()
        .and_then(|r| r["_value"].parse().ok())
        .unwrap_or(0)
}
