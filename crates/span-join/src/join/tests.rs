use super::*;
use crate::feed_line;
use std::collections::BTreeSet;

const W: &str = "0110aaaaaaaaaaaaaaaaaaaa000003c2";

/// A SAMPLE span of writer W as Telegraf hands it over.
fn sample(host: &str, sn: i64, start: i64, end: i64, missing: i64) -> String {
    format!(
        "spans,host.name={host},slot=0,span.name=SAMPLE,topic_name=rt/chatter,writer_id={W} \
         end_time_unix_nano={end}i,sn={sn}i,start_ns={start}i,fragments_missing={missing}i,\
         sample_size=100i,repairs=0i,submessages=1i {start}"
    )
}

fn frag(host: &str, sn: i64, fsn: i64, start: i64, end: i64) -> String {
    format!(
        "spans,host.name={host},slot=0,span.name=DATA_FRAG,topic_name=rt/blob,writer_id={W} \
         end_time_unix_nano={end}i,sn={sn}i,fragment_starting_num={fsn}i,frags_in_submessage=1i,\
         fragment_size=1000i,sample_size=3000i {start}"
    )
}

/// Pushes after 2 periods, once every other host's capture is 3 s past (a sample
/// window of 2 s and the 1 s grace).
fn settings() -> JoinSettings {
    JoinSettings {
        settle_pushes: 2,
        max_wait_pushes: 4,
        sample_window_ns: 2_000_000_000,
        ..JoinSettings::default()
    }
}

fn feed(join: &mut SpanJoin, lines: &[String]) {
    for l in lines {
        feed_line(join, l);
    }
}

/// The points of `measurement` in `out`, without the measurement name.
fn points<'a>(out: &'a LineWriter, measurement: &str) -> Vec<&'a str> {
    out.buf
        .lines()
        .filter_map(|l| l.strip_prefix(measurement).filter(|r| r.starts_with(',')))
        .collect()
}

#[test]
fn a_sample_seen_by_two_hosts_has_a_latency_from_the_first() {
    let mut join = SpanJoin::new(settings());
    feed(
        &mut join,
        &[
            sample("b", 1, 1_000_500, 1_002_000, 0),
            sample("a", 1, 1_000_000, 1_000_100, 0),
        ],
    );
    let mut out = LineWriter::default();
    join.push(&mut out);
    assert!(
        points(&out, "dds_latency").is_empty(),
        "joined before it settled: {}",
        out.buf
    );
    join.push(&mut out);
    assert_eq!(
        points(&out, "dds_latency"),
        vec![",receiver=b,sender=a,slot=0,topic_name=rt/chatter,writer_id=0110aaaaaaaaaaaaaaaaaaaa000003c2 latency_ns=2000i,t_recv_ns=1002000i,sn=1i 1000000"]
    );
    assert_eq!(points(&out, "dds_samples").len(), 1);
    assert_eq!(points(&out, "dds_repairs").len(), 1);
    assert_eq!(
        points(&out, "dds_latency_1s"),
        vec![",receiver=b,sender=a,topic_name=rt/chatter samples=1i,latency_sum_ns=2000i,latency_min_ns=2000i,latency_max_ns=2000i 0"]
    );
    assert_eq!(
        (
            join.counters.samples,
            join.counters.spans,
            join.pending_samples()
        ),
        (1, 2, 0)
    );
}

/// The same participants replayed under other host names a push later (as the
/// end-to-end bench and a user replaying one capture pair twice do): the old names'
/// votes neither take the new replay's samples nor its losses.
#[test]
fn a_replay_under_other_host_names_is_joined_under_the_new_names() {
    let mut join = SpanJoin::new(settings());
    let mut out = LineWriter::default();
    // many samples under a1 -> b1
    for sn in 1..=50 {
        let t = sn * 1_000_000;
        feed(
            &mut join,
            &[
                sample("a1", sn, t, t + 100, 0),
                sample("b1", sn, t + 500, t + 900, 0),
            ],
        );
    }
    join.push(&mut out);
    join.push(&mut out);
    assert_eq!(points(&out, "dds_latency").len(), 50);
    // the same writer again a push later, now as a2 -> b2 (spans arriving over a few
    // pushes, while a1 and b1 send none): two samples, one lost at b2
    let mut out = LineWriter::default();
    for line in [
        sample("a2", 1, 1_000_000, 1_000_100, 0),
        sample("b2", 1, 1_000_500, 1_000_900, 0),
        sample("a2", 2, 2_000_000, 2_000_100, 0),
        // b2 captured well past sample 2 (so it was lost there, not uncaptured)
        sample("b2", 3, 9_000_000_000, 9_000_000_100, 0),
        sample("a2", 3, 8_999_999_000, 8_999_999_100, 0),
    ] {
        feed(&mut join, &[line]);
        join.push(&mut out);
    }
    join.push(&mut out);
    join.push(&mut out);
    let latency = points(&out, "dds_latency");
    assert_eq!(latency.len(), 2, "{}", out.buf);
    assert!(
        latency
            .iter()
            .all(|p| p.starts_with(",receiver=b2,sender=a2,")),
        "{}",
        out.buf
    );
    let lost = points(&out, "dds_lost");
    assert_eq!(lost.len(), 1, "{}", out.buf);
    assert!(
        lost[0].starts_with(",receiver=b2,sender=a2,"),
        "{}",
        out.buf
    );
    assert_eq!(join.counters.senderless, 0);
    // a sample only b2 saw while a2 captures: a2's capture missed it, counted
    let mut out = LineWriter::default();
    feed(
        &mut join,
        &[
            sample("b2", 4, 9_100_000_500, 9_100_000_900, 0),
            sample("a2", 5, 19_200_000_000, 19_200_000_100, 0),
            sample("b2", 5, 19_200_000_500, 19_200_000_900, 0),
        ],
    );
    join.push(&mut out);
    join.push(&mut out);
    assert_eq!(points(&out, "dds_latency").len(), 1, "{}", out.buf);
    // (counted once no span of a2 came for it in max_wait_pushes)
    assert_eq!(join.counters.senderless, 0, "{}", out.buf);
    for _ in 0..4 {
        join.push(&mut out);
    }
    assert_eq!(join.counters.senderless, 1, "{}", out.buf);
}

#[test]
fn incomplete_and_missing_copies_are_lost_while_the_receiver_captured() {
    let mut join = SpanJoin::new(settings());
    let s = 1_000_000_000;
    feed(
        &mut join,
        &[
            // b saw sample 1 whole, sample 2 in part, sample 3 not at all, and captured
            // until 10 s; sample 4 was sent after b's capture ended (less the grace)
            sample("a", 1, s, s + 10, 0),
            sample("b", 1, s + 100, s + 200, 0),
            sample("a", 2, 2 * s, 2 * s + 10, 0),
            sample("b", 2, 2 * s + 100, 2 * s + 200, 1),
            sample("a", 3, 3 * s, 3 * s + 10, 0),
            sample("b", 9, 10 * s, 10 * s, 0),
            sample("a", 4, 9 * s + 500, 9 * s + 510, 0),
        ],
    );
    let mut out = LineWriter::default();
    join.push(&mut out);
    join.push(&mut out);
    let lost = points(&out, "dds_lost");
    assert_eq!(lost.len(), 2, "{}", out.buf);
    assert!(
        lost[0].ends_with("sn=2i,incomplete=1i 2000000000"),
        "{}",
        lost[0]
    );
    assert!(
        lost[1].ends_with("sn=3i,incomplete=0i 3000000000"),
        "{}",
        lost[1]
    );
    assert_eq!(points(&out, "dds_latency").len(), 1);
}

#[test]
fn a_second_of_latencies_is_rewritten_with_the_totals_as_its_samples_are_joined() {
    let mut join = SpanJoin::new(settings());
    let mut out = LineWriter::default();
    feed(
        &mut join,
        &[
            sample("a", 1, 5_000, 5_010, 0),
            sample("b", 1, 5_100, 5_300, 0),
        ],
    );
    join.push(&mut out);
    feed(
        &mut join,
        &[
            sample("a", 2, 7_000, 7_010, 0),
            sample("b", 2, 7_100, 7_900, 0),
        ],
    );
    join.push(&mut out);
    join.push(&mut out);
    let seconds = points(&out, "dds_latency_1s");
    assert_eq!(seconds.len(), 2, "{}", out.buf);
    assert!(seconds[0]
        .ends_with(" samples=1i,latency_sum_ns=300i,latency_min_ns=300i,latency_max_ns=300i 0"));
    assert!(seconds[1]
        .ends_with(" samples=2i,latency_sum_ns=1200i,latency_min_ns=300i,latency_max_ns=900i 0"));
}

#[test]
fn a_copy_a_whole_window_later_is_not_the_same_sample() {
    let mut join = SpanJoin::new(settings());
    let window = settings().sample_window_ns;
    feed(
        &mut join,
        &[
            sample("a", 1, 0, 10, 0),
            sample("b", 1, 5, 20, 0),
            sample("b", 1, window + 1, window + 2, 0),
        ],
    );
    let mut out = LineWriter::default();
    join.flush(&mut out);
    let latency = points(&out, "dds_latency");
    assert_eq!(latency.len(), 1);
    assert!(latency[0].contains("latency_ns=20i"), "{}", latency[0]);
}

#[test]
fn a_data_frag_goes_from_the_earliest_start_at_home_to_the_earliest_end_elsewhere() {
    let mut join = SpanJoin::new(settings());
    feed(
        &mut join,
        &[
            frag("a", 1, 2, 100, 110),
            frag("a", 1, 2, 90, 95),
            frag("b", 1, 2, 300, 400),
            frag("b", 1, 2, 250, 380),
            // impossible: fragment 4 of a 3-fragment sample (counted, not joined)
            frag("a", 1, 4, 100, 110),
        ],
    );
    let mut out = LineWriter::default();
    join.flush(&mut out);
    let sub = points(&out, "dds_submessage_latency");
    assert_eq!(sub.len(), 1, "{}", out.buf);
    assert!(sub[0].contains("receiver=b,sender=a"), "{}", sub[0]);
    assert!(
        sub[0].ends_with("latency_ns=290i,t_recv_ns=380i,sn=1i,fragment_starting_num=2i 90"),
        "{}",
        sub[0]
    );
    assert_eq!((join.counters.spans, join.counters.frags), (5, 1));
}

#[test]
fn a_full_table_joins_the_oldest_early_and_counts_it() {
    let mut join = SpanJoin::new(JoinSettings {
        max_pending: 2,
        ..settings()
    });
    feed(
        &mut join,
        &[
            sample("a", 1, 0, 1, 0),
            sample("b", 1, 5, 9, 0),
            sample("a", 2, 10, 11, 0),
            sample("a", 3, 20, 21, 0),
        ],
    );
    assert_eq!((join.counters.early, join.pending_samples()), (1, 2));
    let mut out = LineWriter::default();
    join.push(&mut out);
    assert_eq!(
        points(&out, "dds_latency").len(),
        1,
        "the early sample's points come with the next push"
    );
    assert!(out.buf.contains("early=1i"));
}

#[test]
fn lines_it_cannot_use_are_counted_not_fatal() {
    let mut join = SpanJoin::new(settings());
    for bad in [
        "spans,host.name=a,span.name=SAMPLE x=1i 5",
        "other,host.name=a y=1i 1",
        "spans x=\"open 1",
        "\u{fffd} garbage",
    ] {
        feed_line(&mut join, bad);
    }
    feed_line(&mut join, "");
    feed_line(&mut join, "# comment");
    assert_eq!((join.counters.spans, join.counters.rejected), (4, 4));
}

#[test]
fn writers_and_hosts_unseen_for_a_while_are_forgotten() {
    let mut join = SpanJoin::new(JoinSettings {
        forget_pushes: 3,
        ..settings()
    });
    feed(
        &mut join,
        &[sample("a", 1, 0, 1, 0), sample("b", 1, 5, 9, 0)],
    );
    let mut out = LineWriter::default();
    // (joined at push 2, which counts as its repairs' last news: gone after push 5)
    for _ in 0..6 {
        join.push(&mut out);
    }
    assert_eq!(
        join.counters.forgotten,
        3,
        "one writer and two hosts: {}",
        out.buf.lines().last().unwrap_or("")
    );
    assert!(join.writers.is_empty() && join.captures.is_empty() && join.repairs.is_empty());
}

#[test]
fn the_same_spans_give_the_same_points() {
    let lines: Vec<String> = (0..50)
        .flat_map(|i| {
            [
                sample("a", i, i * 1000, i * 1000 + 5, 0),
                sample("b", i, i * 1000 + 7, i * 1000 + 90, i % 7),
            ]
        })
        .chain((1..=3).map(|f| frag("c", 99, f, 5, 6)))
        .collect();
    let run = || {
        let mut join = SpanJoin::new(settings());
        let mut out = LineWriter::default();
        for chunk in lines.chunks(13) {
            feed(&mut join, chunk);
            join.push(&mut out);
        }
        join.flush(&mut out);
        out.buf
    };
    assert_eq!(run(), run());
}

/// One run's arrivals: spans and the pushes between them.
enum Step {
    Line(String),
    Push,
}

/// Two hosts' SAMPLE spans arriving a push or two apart (some incomplete, some
/// missing on one host, one sample seen by both at once), DATA_FRAGs, and an early
/// join (a small table).
fn arrivals() -> Vec<Step> {
    let mut steps = Vec::new();
    for i in 0..24i64 {
        let t = 1_000_000_000 + i * 250_000_000;
        steps.push(Step::Line(sample("a", i, t, t + 100, 0)));
        if i % 5 != 3 {
            steps.push(Step::Line(sample("b", i, t + 300, t + 9_000, i % 4 / 3)));
        }
        if i % 6 == 0 {
            steps.push(Step::Line(frag("a", i, 1, t, t + 10)));
            steps.push(Step::Line(frag("b", i, 1, t + 20, t + 400)));
        }
        if i % 3 == 2 {
            steps.push(Step::Push);
        }
    }
    steps.push(Step::Line(sample("b", 30, 99, 120, 0)));
    steps.push(Step::Line(sample("a", 30, 99, 110, 0)));
    steps
}

/// The points of `steps`, the join carried across a restart (state serialised and
/// read back) before step `restart_at` (None: no restart).
fn run_with_restart(steps: &[Step], restart_at: Option<usize>) -> String {
    let settings = JoinSettings {
        max_pending: 5,
        ..settings()
    };
    let mut join = SpanJoin::new(settings);
    let mut out = LineWriter::default();
    for (at, step) in steps.iter().enumerate() {
        if restart_at == Some(at) {
            let text = serde_json::to_string(&join.into_state()).unwrap();
            let state: JoinState = serde_json::from_str(&text).unwrap();
            join = SpanJoin::from_state(settings, state).unwrap();
        }
        match step {
            Step::Line(l) => feed_line(&mut join, l),
            Step::Push => {
                join.push(&mut out);
            }
        }
    }
    for _ in 0..4 {
        join.push(&mut out);
    }
    out.buf
}

#[test]
fn a_restart_anywhere_loses_no_accepted_span() {
    let steps = arrivals();
    let unbroken = run_with_restart(&steps, None);
    for kind in [
        "dds_latency,",
        "dds_lost,",
        "dds_submessage_latency,",
        "dds_latency_1s,",
    ] {
        assert!(
            unbroken.contains(kind),
            "the scenario has no {kind}: {unbroken}"
        );
    }
    let last = unbroken.lines().last().unwrap_or("");
    assert!(
        last.starts_with("ddshark_join") && !last.contains("early=0i"),
        "no early join: {last}"
    );
    for at in 0..steps.len() {
        assert_eq!(
            run_with_restart(&steps, Some(at)),
            unbroken,
            "restarted before step {at}"
        );
    }
}

#[test]
fn the_state_view_is_the_state() {
    let mut join = SpanJoin::new(JoinSettings {
        max_pending: 5,
        ..settings()
    });
    let mut out = LineWriter::default();
    for step in arrivals() {
        match step {
            Step::Line(l) => feed_line(&mut join, &l),
            Step::Push => {
                join.push(&mut out);
            }
        }
        let view = serde_json::to_string(&join.state_view()).unwrap();
        let settings = join.settings;
        let state = std::mem::take(&mut join).into_state();
        assert_eq!(view, serde_json::to_string(&state).unwrap());
        join = SpanJoin::from_state(settings, state).unwrap();
    }
}

#[test]
fn a_state_of_another_format_is_refused() {
    let mut join = SpanJoin::new(settings());
    feed(&mut join, &[sample("a", 1, 0, 1, 0)]);
    let mut value = serde_json::to_value(join.into_state()).unwrap();
    value["format"] = serde_json::json!(STATE_FORMAT + 1);
    let state: JoinState = serde_json::from_value(value).unwrap();
    assert_eq!(
        SpanJoin::from_state(settings(), state).unwrap_err(),
        StateError::Format {
            found: STATE_FORMAT + 1,
            expected: STATE_FORMAT
        }
    );
}

/// A SAMPLE span of `writer`.
fn sample_of(writer: &str, host: &str, sn: i64, start: i64) -> String {
    format!(
        "spans,host.name={host},slot=0,span.name=SAMPLE,topic_name=rt/t,writer_id={writer} \
         end_time_unix_nano={}i,sn={sn}i,start_ns={start}i,fragments_missing=0i,\
         sample_size=100i,repairs=0i,submessages=1i {start}",
        start + 1_000
    )
}

/// 64 hosts fill the clock table in the first second; 10 minutes later two other hosts
/// talk both ways. The 64, unseen for longer than the table's evidence spans, are
/// forgotten (counted) and the two get their offset; before, the full table kept them out.
#[test]
fn hosts_idle_longer_than_the_clock_evidence_are_forgotten_for_new_ones() {
    let s = 1_000_000_000i64;
    let mut join = SpanJoin::new(settings());
    let mut out = LineWriter::default();
    for k in 0..32i64 {
        let writer = format!("01{k:022x}000003c2");
        let t = k * 10_000_000;
        feed(
            &mut join,
            &[
                sample_of(&writer, &format!("h{}", 2 * k), 1, t),
                sample_of(&writer, &format!("h{}", 2 * k + 1), 1, t + 1_000_000),
            ],
        );
    }
    for _ in 0..4 {
        join.push(&mut out);
    }
    assert_eq!(join.clocks.index.len(), 64);
    let (wx, wy) = (
        "02aaaaaaaaaaaaaaaaaaaaaa000003c2",
        "03bbbbbbbbbbbbbbbbbbbbbb000003c2",
    );
    for sn in 0..200i64 {
        let t = 600 * s + sn * s / 10;
        let jitter = (sn % 7) * 100_000;
        feed(
            &mut join,
            &[
                sample_of(wx, "x", sn, t),
                sample_of(wx, "y", sn, t + 2_000_000 + jitter),
                sample_of(wy, "y", sn, t + 50_000_000),
                sample_of(wy, "x", sn, t + 51_000_000 + jitter),
            ],
        );
        if sn % 10 == 9 {
            join.push(&mut out);
        }
    }
    join.flush(&mut out);
    assert_eq!(join.counters.clock_hosts_forgotten, 64, "{}", out.buf);
    assert!(join.clocks.index.contains_key("x") && join.clocks.index.contains_key("y"));
    assert_eq!(join.clocks.index.len(), 2);
    let offsets = points(&out, "dds_clock_offset");
    assert!(
        offsets
            .iter()
            .any(|p| p.contains("host_a=x,host_b=y") || p.contains("host_a=y,host_b=x")),
        "no offset between x and y: {offsets:?}"
    );
    let last = out.buf.lines().last().unwrap_or("");
    assert!(last.contains("clock_hosts_forgotten=64i"), "{last}");
    // the state keeps the table as it is: a restarted join forgets nothing more
    let settings = join.settings;
    let state: JoinState =
        serde_json::from_str(&serde_json::to_string(&join.into_state()).unwrap()).unwrap();
    let again = SpanJoin::from_state(settings, state).unwrap();
    assert_eq!(again.clocks.index.len(), 2);
    assert_eq!(again.counters.clock_hosts_forgotten, 64);
}

#[test]
fn the_counters_point_has_the_schemas_fields() {
    let mut join = SpanJoin::new(settings());
    let mut out = LineWriter::default();
    join.push(&mut out);
    let line = out.buf.lines().last().unwrap_or("");
    let fields: Vec<&str> = line
        .strip_prefix("ddshark_join ")
        .unwrap_or_else(|| panic!("not the counters point: {line}"))
        .split(',')
        .filter_map(|f| f.split_once('=').map(|(k, _)| k))
        .collect();
    assert_eq!(fields, span_schema::JOIN_COUNTERS);
}

/// Host x runs participants 1 (10.0.0.1) and 2 (10.0.0.3, a path 4 ms slower), host y
/// participant 3 (10.0.0.2); y's clock is 12 ms behind x's. By the order of events alone
/// 2 lies above 1 above 3, so where the hosts split is undecided and each writer's host
/// falls back on the host that saw its samples first: y, for all three. What ties 1 and 2
/// on the wire, as the spans say it — 1's SPDP span announcing both addresses, or one
/// Ethernet source that both hosts saw — decides it, as `ddshark latency` does. Unreadable
/// values are no evidence, and no harm.
#[test]
fn the_addresses_on_the_spans_tie_a_hosts_participants() {
    const MS: i64 = 1_000_000;
    let writer = |p: u8, entity: &str| format!("{p:02x}{}{entity}", "ab".repeat(11));
    let span = |p: u8, entity: &str, host: &str, sn: i64, start: i64, extra: &str| {
        format!(
            "spans,host.name={host},slot=0,span.name=SAMPLE,topic_name=rt/t,writer_id={} \
             end_time_unix_nano={}i,sn={sn}i,start_ns={start}i,fragments_missing=0i,\
             sample_size=100i,repairs=0i,submessages=1i{extra} {start}",
            writer(p, entity),
            start + 1_000
        )
    };
    let senders = |announce: &str, mac: [&str; 2]| {
        let mut join = SpanJoin::new(settings());
        let mut out = LineWriter::default();
        let (x, y) = (|t: i64| t, |t: i64| t - 12 * MS);
        let extra = |ip: &str, mac: &str| format!(",src_ip=\"{ip}\"{mac}");
        // participant 1's SPDP sample, seen by both
        let spdp = format!("{}{announce}", extra("10.0.0.1", mac[0]));
        feed(
            &mut join,
            &[
                span(1, "000100c2", "x", 1, x(0), &spdp),
                span(1, "000100c2", "y", 1, y(MS), &spdp),
            ],
        );
        for sn in 1..=50i64 {
            let t = sn * 20 * MS;
            let (one, two) = (extra("10.0.0.1", mac[0]), extra("10.0.0.3", mac[1]));
            let three = extra("10.0.0.2", ",src_mac=9i");
            feed(
                &mut join,
                &[
                    span(1, "00000103", "x", sn, x(t), &one),
                    span(1, "00000103", "y", sn, y(t + MS), &one),
                    span(2, "00000103", "x", sn, x(t + MS), &two),
                    span(2, "00000103", "y", sn, y(t + 6 * MS), &two),
                    span(3, "00000103", "y", sn, y(t + 2 * MS), &three),
                    span(3, "00000103", "x", sn, x(t + 2 * MS + 100_000), &three),
                ],
            );
        }
        join.flush(&mut out);
        (1..=3u8)
            .map(|p| {
                let w = writer(p, "00000103");
                let senders: BTreeSet<&str> = points(&out, "dds_latency")
                    .into_iter()
                    .filter(|l| l.contains(&format!("writer_id={w}")))
                    .filter_map(|l| l.split(',').find_map(|t| t.strip_prefix("sender=")))
                    .collect();
                senders.into_iter().collect::<Vec<_>>().join("+")
            })
            .collect::<Vec<_>>()
    };
    let no_mac = [""; 2];
    assert_eq!(
        senders("", no_mac),
        ["y", "y", "y"],
        "by the order of events alone"
    );
    let announced = ",announced_ips=\"10.0.0.1,10.0.0.3,172.17.0.1\"";
    assert_eq!(senders(announced, no_mac), ["x", "x", "y"], "announced");
    let one_nic = [",src_mac=2485377892354i"; 2];
    assert_eq!(senders("", one_nic), ["x", "x", "y"], "one Ethernet source");
    let two_nics = [",src_mac=1i", ",src_mac=2i"];
    assert_eq!(
        senders("", two_nics),
        ["y", "y", "y"],
        "two Ethernet sources"
    );
    let unreadable = ",announced_ips=\"10.0.0.1;x,::g\",src_mac=-1i";
    assert_eq!(senders(unreadable, no_mac), ["y", "y", "y"], "unreadable");
}

/// Settings whose backstop in pushes never fires: what is joined is joined by capture time.
fn no_backstop() -> JoinSettings {
    JoinSettings {
        max_wait_pushes: 1_000,
        ..settings()
    }
}

/// Two robots at once: a → b on writer W, c → d on writer W2, c and d's capture time an
/// hour behind a and b's and going on. a's sample is joined as soon as b passed it: c and d
/// exchanged no traffic with a (no writer seen by both), so their captures are not waited
/// for; before, it waited for them until the backstop and was counted forced.
#[test]
fn a_sample_waits_only_for_the_hosts_that_exchanged_traffic_with_its_sender() {
    const S: i64 = 1_000_000_000;
    let w2 = "0220bbbbbbbbbbbbbbbbbbbb000003c2";
    let mut join = SpanJoin::new(no_backstop());
    let mut out = LineWriter::default();
    for k in 0..8i64 {
        let (t, behind) = (3_600 * S + k * S, k * S);
        feed(
            &mut join,
            &[
                sample_of(W, "a", k, t),
                sample_of(W, "b", k, t + 1_000_000),
                sample_of(w2, "c", k, behind),
                sample_of(w2, "d", k, behind + 2_000_000),
            ],
        );
        join.push(&mut out);
    }
    let latency = points(&out, "dds_latency");
    // each sample has its receiver's copy: due once settled (two pushes), both robots'
    for sender in ["sender=a,", "sender=c,"] {
        assert_eq!(
            latency.iter().filter(|p| p.contains(sender)).count(),
            7,
            "{}",
            out.buf
        );
    }
    assert_eq!(
        (join.counters.forced, join.counters.hosts_gone_quiet),
        (0, 0)
    );
}

/// b stops sending while a goes on: a's samples after b's last wait (b's spans may be held
/// up) until 5 minutes of the fleet's capture time passed without b, then b is quiet
/// (counted, in the counters point) and they are joined, lost at b; when b sends again it
/// is waited for again.
#[test]
fn a_host_silent_while_its_group_sends_is_quiet_after_5_minutes_of_capture_time() {
    const S: i64 = 1_000_000_000;
    let mut join = SpanJoin::new(no_backstop());
    let mut out = LineWriter::default();
    feed(
        &mut join,
        &[sample_of(W, "a", 0, 0), sample_of(W, "b", 0, 1_000_000)],
    );
    join.push(&mut out);
    let mut quiet_at = None;
    for k in 1..=310i64 {
        feed(&mut join, &[sample_of(W, "a", k, k * S)]);
        join.push(&mut out);
        if quiet_at.is_none() && join.quiet_hosts() == 1 {
            quiet_at = Some(k);
        }
    }
    // quiet once a's capture ran more than QUIET_NS past b's last span (at 1 ms)
    assert_eq!(quiet_at, Some(301), "{}", out.buf);
    assert_eq!(join.counters.hosts_gone_quiet, 1);
    assert!(
        out.buf
            .lines()
            .last()
            .unwrap_or("")
            .contains("quiet_hosts=1i"),
        "{}",
        out.buf
    );
    // what waited for b is joined (no point for b: its capture ended before), counted
    // forced; only the last sample still settles
    assert_eq!(join.counters.samples, 310, "{}", out.buf);
    assert_eq!(join.counters.forced, 309, "{}", out.buf);
    assert_eq!(join.pending_samples(), 1, "{}", out.buf);
    feed(&mut join, &[sample_of(W, "b", 311, 311 * S)]);
    join.push(&mut out);
    assert_eq!(join.quiet_hosts(), 0);
}

/// c and d (one robot) both stop while a and b go on: nothing c's last samples wait for can
/// come from anyone, so the pair is quiet after 10 s of the fleet's capture time, not 5
/// minutes, and c's last sample is joined with d's copy, as the end of the input would.
#[test]
fn a_group_that_stopped_is_quiet_after_ten_seconds_of_capture_time() {
    const S: i64 = 1_000_000_000;
    let w2 = "0220bbbbbbbbbbbbbbbbbbbb000003c2";
    let mut join = SpanJoin::new(no_backstop());
    let mut out = LineWriter::default();
    feed(
        &mut join,
        &[sample_of(w2, "c", 0, 0), sample_of(w2, "d", 0, 2_000_000)],
    );
    let mut quiet_at = None;
    for k in 0..20i64 {
        feed(
            &mut join,
            &[
                sample_of(W, "a", k, k * S),
                sample_of(W, "b", k, k * S + 1_000_000),
            ],
        );
        join.push(&mut out);
        if quiet_at.is_none() && join.quiet_hosts() == 2 {
            quiet_at = Some(k);
        }
    }
    assert_eq!(quiet_at, Some(11), "{}", out.buf);
    assert_eq!(join.counters.hosts_gone_quiet, 2);
    assert_eq!(
        points(&out, "dds_latency")
            .iter()
            .filter(|p| p.contains("sender=c,"))
            .count(),
        1,
        "{}",
        out.buf
    );
}

/// A sample's spans delivered twice, while it waits and again once it was joined (a batch
/// the routing tier sent again, docs/fleet.md), and across a restart of the join in between
/// (the state keeps what was joined lately): one latency, one sample in its second's total,
/// the copies counted `duplicates`. The same SN seen anew later (another sample of it, as
/// SPDP re-sends) is still joined.
#[test]
fn a_sample_delivered_again_after_its_join_counts_once() {
    for restart in [false, true] {
        let mut join = SpanJoin::new(settings());
        let spans = [
            sample("a", 1, 5_000, 5_010, 0),
            sample("b", 1, 5_100, 5_300, 0),
            frag("a", 2, 1, 6_000, 6_010),
            frag("b", 2, 1, 6_100, 6_200),
        ];
        feed(&mut join, &spans);
        feed(&mut join, &spans);
        let mut out = LineWriter::default();
        join.push(&mut out);
        join.push(&mut out);
        assert_eq!(points(&out, "dds_latency").len(), 1, "{}", out.buf);
        assert_eq!(points(&out, "dds_submessage_latency").len(), 1);
        assert_eq!(
            (
                join.pending_samples(),
                join.pending_frags(),
                join.joined.len()
            ),
            (0, 0, 4)
        );
        if restart {
            let settings = join.settings;
            let text = serde_json::to_string(&join.into_state()).unwrap();
            join = SpanJoin::from_state(settings, serde_json::from_str(&text).unwrap()).unwrap();
        }
        feed(&mut join, &spans);
        let mut again = LineWriter::default();
        for _ in 0..3 {
            join.push(&mut again);
        }
        for kind in [
            "dds_latency",
            "dds_latency_1s",
            "dds_samples",
            "dds_repairs",
            "dds_submessage_latency",
        ] {
            assert!(
                points(&again, kind).is_empty(),
                "{kind} again: {}",
                again.buf
            );
        }
        let c = join.counters;
        assert_eq!(
            (c.spans, c.duplicates, c.samples, c.frags, c.senderless),
            (12, 8, 1, 1, 0),
            "restart {restart}"
        );
        assert!(again.buf.contains("duplicates=8i,joined_remembered=4i"));

        // the same SN a sample window later: a sample of its own
        let later = settings().sample_window_ns;
        feed(
            &mut join,
            &[
                sample("a", 1, later + 5_000, later + 5_010, 0),
                sample("b", 1, later + 5_100, later + 5_400, 0),
            ],
        );
        let mut anew = LineWriter::default();
        join.push(&mut anew);
        join.push(&mut anew);
        let latency = points(&anew, "dds_latency");
        assert_eq!(latency.len(), 1, "{}", anew.buf);
        assert!(latency[0].contains("latency_ns=400i"), "{}", latency[0]);
    }
}

/// The spans of what was joined are remembered `max_wait_pushes` pushes and at most
/// `max_joined` of them: forgotten by age counted `joined_expired`, beyond the cap
/// `joined_evicted` (then a span delivered again counts again, as it says).
#[test]
fn the_joined_spans_remembered_are_bounded_and_every_one_forgotten_counted() {
    let mut join = SpanJoin::new(JoinSettings {
        max_joined: 3,
        ..settings()
    });
    let first = [
        sample("a", 1, 5_000, 5_010, 0),
        sample("b", 1, 5_100, 5_300, 0),
    ];
    feed(&mut join, &first);
    feed(
        &mut join,
        &[
            sample("a", 2, 6_000, 6_010, 0),
            sample("b", 2, 6_100, 6_300, 0),
        ],
    );
    let mut out = LineWriter::default();
    join.push(&mut out);
    join.push(&mut out);
    assert_eq!(points(&out, "dds_latency").len(), 2);
    assert_eq!(
        (
            join.joined.len(),
            join.counters.joined_evicted,
            join.counters.joined_expired
        ),
        (3, 1, 0)
    );
    // sn 1's span on a was pushed out: delivered again, it starts a sample of its own, joined
    // at the backstop (push 6, pushing b's sn 1 out); b's was still known
    feed(&mut join, &first);
    assert_eq!((join.counters.duplicates, join.pending_samples()), (1, 1));
    for _ in 0..4 {
        join.push(&mut out);
    }
    let c = join.counters;
    assert_eq!(
        (
            join.joined.len(),
            c.joined_evicted,
            c.joined_expired,
            c.forced
        ),
        (3, 2, 0, 1)
    );
    // max_wait_pushes (4) pushes after push 6, everything is forgotten by age
    for _ in 0..5 {
        join.push(&mut out);
    }
    let last = out.buf.lines().last().unwrap_or("");
    assert!(
        last.contains("joined_remembered=0i,joined_expired=3i,joined_evicted=2i"),
        "{last}"
    );
}

/// A host no other host the join knows shares a writer with waits for its peers: its
/// copies are not joined as sent by it (no receiver, nothing lost) while the sender's spans
/// are on their way (held by the routing tier while a shard was down); once they come, the
/// sample has its latency. With none ever coming, the backstop joins it (`forced`).
#[test]
fn a_host_with_no_known_peer_waits_for_its_peers_spans() {
    let mut join = SpanJoin::new(settings());
    let mut out = LineWriter::default();
    feed(&mut join, &[sample("b", 1, 5_100, 5_300, 0)]);
    for _ in 0..3 {
        join.push(&mut out);
    }
    assert!(points(&out, "dds_samples").is_empty(), "{}", out.buf);
    assert_eq!(join.pending_samples(), 1);
    feed(&mut join, &[sample("a", 1, 5_000, 5_010, 0)]);
    join.push(&mut out);
    let latency = points(&out, "dds_latency");
    assert_eq!(latency.len(), 1, "{}", out.buf);
    assert!(latency[0].contains("receiver=b,sender=a"), "{}", latency[0]);

    let mut alone = SpanJoin::new(settings());
    feed(&mut alone, &[sample("c", 1, 5_000, 5_010, 0)]);
    for _ in 0..settings().max_wait_pushes {
        alone.push(&mut out);
    }
    assert_eq!((alone.pending_samples(), alone.counters.forced), (0, 1));
}

/// A host that stays alone for longer than the backstop (a single-host deployment) waits
/// once, at its start: its later samples are joined once they settle, not forced after
/// the backstop each.
#[test]
fn a_host_alone_past_the_backstop_waits_no_more() {
    let mut join = SpanJoin::new(settings());
    let mut out = LineWriter::default();
    let waited = settings().max_wait_pushes.saturating_add(1);
    for sn in 1..=waited {
        let start = 5_000 + 1_000_000_000 * sn as i64;
        feed(&mut join, &[sample("c", sn as i64, start, start + 10, 0)]);
        join.push(&mut out);
    }
    let forced_at_start = join.counters.forced;
    assert!(forced_at_start > 0, "{}", out.buf);
    let start = 5_000 + 1_000_000_000 * (waited as i64 + 1);
    feed(&mut join, &[sample("c", 99, start, start + 10, 0)]);
    for _ in 0..settings().settle_pushes {
        join.push(&mut out);
    }
    assert_eq!(join.pending_samples(), 0, "{}", out.buf);
    assert_eq!(join.counters.forced, forced_at_start);
}
