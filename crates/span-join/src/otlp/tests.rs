use super::*;
use crate::{feed_line, JoinSettings, LineWriter};
use opentelemetry_proto::tonic::common::v1::AnyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};

pub(crate) fn kv(key: &str, value: Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn s(text: &str) -> Value {
    Value::StringValue(text.into())
}

fn i(v: i64) -> Value {
    Value::IntValue(v)
}

/// A SAMPLE span as ddshark exports it (what the join reads, and a few it does not).
pub(crate) fn sample(writer: &str, sn: i64, start: u64, end: u64) -> Span {
    Span {
        name: "SAMPLE".into(),
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: vec![
            kv(attr::TRAFFIC_TYPE, s("user")),
            kv(attr::TOPIC_NAME, s("rt/chatter")),
            kv(attr::WRITER_ID, s(writer)),
            kv(attr::SN, i(sn)),
            kv(attr::EXPORT_SEQ, i(17)),
            kv(attr::SAMPLE_SIZE, i(1200)),
            kv(attr::SLOT, i(0)),
            kv(attr::START_NS, i(start as i64)),
            kv(attr::FRAGMENTS, i(1)),
            kv(attr::FRAGMENTS_MISSING, i(0)),
            kv(attr::SUBMESSAGES, i(1)),
            kv(attr::REPAIRS, i(0)),
            kv(attr::SRC_IP, s("10.0.0.1")),
            kv(attr::SRC_MAC, i(0x0242_ac11_0002)),
        ],
        ..Default::default()
    }
}

pub(crate) fn frag(writer: &str, sn: i64, fsn: i64, start: u64) -> Span {
    Span {
        name: "DATA_FRAG".into(),
        start_time_unix_nano: start,
        end_time_unix_nano: start + 10,
        attributes: vec![
            kv(attr::WRITER_ID, s(writer)),
            kv(attr::SN, i(sn)),
            kv(attr::SLOT, i(3)),
            kv(attr::FRAGMENT_STARTING_NUM, i(fsn)),
            kv(attr::FRAGS_IN_SUBMESSAGE, i(1)),
            kv(attr::FRAGMENT_SIZE, i(1024)),
            kv(attr::SAMPLE_SIZE, i(4000)),
        ],
        ..Default::default()
    }
}

pub(crate) fn request(host: &str, spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![kv(attr::HOST_NAME, s(host))],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

const W: &str = "0102030405060708090a0b0c00000103";
const T: u64 = 1_700_000_000_000_000_000;

#[test]
fn a_sample_span_becomes_the_join_input_its_line_does() {
    let req = request("a", vec![sample(W, 7, T, T + 500)]);
    let c = convert(&req);
    assert_eq!((c.refused, c.skipped, c.first_error), (0, 0, None));
    assert_eq!(
        c.spans,
        vec![JoinSpan::Sample(SampleSpan {
            host: "a",
            writer: W,
            topic: Some("rt/chatter"),
            slot: "0",
            sn: 7,
            span_start: T as i64,
            span_end: T as i64 + 500,
            start_ns: T as i64,
            fragments_missing: 0,
            sample_size: 1200,
            repairs: 0,
            submessages: 1,
            src_ip: Some("10.0.0.1"),
            src_mac: Some(0x0242_ac11_0002),
            announced_ips: None,
        })]
    );
}

/// Two hosts' spans fed directly and through their journal lines: the same join.
#[test]
fn the_journal_line_feeds_the_join_what_the_span_does() {
    let mut spans_a = vec![frag(W, 8, 1, T + 1000), frag(W, 8, 2, T + 1100)];
    let mut spans_b = vec![frag(W, 8, 1, T + 2000)];
    for k in 0..5u64 {
        spans_a.push(sample(W, 10 + k as i64, T + k * 1000, T + k * 1000 + 50));
        spans_b.push(sample(
            W,
            10 + k as i64,
            T + k * 1000 + 300,
            T + k * 1000 + 400,
        ));
    }
    let mut with_ips = sample(W, 20, T + 9000, T + 9100);
    with_ips
        .attributes
        .push(kv(attr::ANNOUNCED_IPS, s("10.0.0.1,192.168.1.5")));
    with_ips
        .attributes
        .push(kv(attr::TOPIC_NAME, s("rt/a b,c=\"d\\")));
    spans_a.push(with_ips);
    let reqs = [request("host a", spans_a), request("b", spans_b)];
    let mut direct = SpanJoin::new(JoinSettings::default());
    let mut lines = SpanJoin::new(JoinSettings::default());
    let mut journal = LineWriter::default();
    for req in &reqs {
        let c = convert(req);
        assert_eq!(c.refused, 0, "{:?}", c.first_error);
        for span in &c.spans {
            span.feed(&mut direct);
            journal_line(span, &mut journal);
        }
    }
    for line in journal.buf.lines() {
        feed_line(&mut lines, line);
    }
    assert_eq!(lines.counters.rejected, 0, "{}", journal.buf);
    assert_eq!(
        (
            direct.pending_samples(),
            direct.pending_frags(),
            direct.counters
        ),
        (
            lines.pending_samples(),
            lines.pending_frags(),
            lines.counters
        )
    );
    let (mut out_d, mut out_l) = (LineWriter::default(), LineWriter::default());
    direct.flush(&mut out_d);
    lines.flush(&mut out_l);
    assert!(out_d.buf.contains("dds_latency"), "{}", out_d.buf);
    assert_eq!(out_d.buf, out_l.buf);
}

#[test]
fn data_spans_are_skipped_and_unknown_names_refused() {
    let mut data = frag(W, 1, 1, T);
    data.name = "DATA".into();
    let mut odd = frag(W, 1, 1, T);
    odd.name = "GOSSIP".into();
    let req = request("a", vec![data, odd, frag(W, 1, 1, T)]);
    let c = convert(&req);
    assert_eq!((c.spans.len(), c.skipped, c.refused), (1, 1, 1));
    assert_eq!(
        c.first_error.map(|e| e.to_string()),
        Some(
            "span name \"GOSSIP\" is none the join takes (SAMPLE, DATA_FRAG; DATA is skipped)"
                .into()
        )
    );
}

/// Each bad span alone: refused with what is wrong, nothing taken.
#[test]
fn bad_spans_are_refused_naming_what_is_wrong() {
    let with = |f: &dyn Fn(&mut Span)| {
        let mut span = sample(W, 7, T, T + 5);
        f(&mut span);
        span
    };
    let set = |key: &'static str, v: Value| {
        move |span: &mut Span| {
            span.attributes.retain(|a| a.key != key);
            span.attributes.push(kv(key, v.clone()));
        }
    };
    let drop_attr =
        |key: &'static str| move |span: &mut Span| span.attributes.retain(|a| a.key != key);
    let cases: Vec<(Span, &str)> = vec![
        (
            with(&set(attr::SN, s("7"))),
            "SAMPLE span: attribute `sn` is a string, not an int",
        ),
        (
            with(&set(attr::WRITER_ID, i(3))),
            "SAMPLE span: attribute `writer_id` is an int, not a string",
        ),
        (
            with(&set(attr::SRC_MAC, Value::DoubleValue(1.5))),
            "SAMPLE span: attribute `src_mac` is a double, not an int",
        ),
        (
            with(&drop_attr(attr::WRITER_ID)),
            "SAMPLE span without the attribute `writer_id`",
        ),
        (
            with(&drop_attr(attr::SN)),
            "SAMPLE span without the attribute `sn`",
        ),
        (
            with(&drop_attr(attr::START_NS)),
            "SAMPLE span without the attribute `start_ns`",
        ),
        (
            with(&set(attr::WRITER_ID, s("ab\ncd"))),
            "SAMPLE span: attribute `writer_id` is empty or holds a line break",
        ),
        (
            with(&set(attr::TOPIC_NAME, s(""))),
            "SAMPLE span: attribute `topic_name` is empty or holds a line break",
        ),
        (
            with(&set(attr::SLOT, i(-1))),
            "SAMPLE span: attribute `slot` = -1 is out of range",
        ),
        (
            with(&set(attr::SLOT, i(MAX_SLOT + 1))),
            "SAMPLE span: attribute `slot` = 4096 is out of range",
        ),
    ];
    let absurd = |start: u64, end: u64| {
        let mut span = sample(W, 7, start, end);
        span.start_time_unix_nano = start;
        span.end_time_unix_nano = end;
        (span, format!("SAMPLE span: absurd timestamps (start {start} ns, end {end} ns: zero, beyond 2262, ending before the start or lasting more than a day)"))
    };
    let mut all: Vec<(Span, String)> = cases.into_iter().map(|(s, m)| (s, m.to_string())).collect();
    all.push(absurd(0, 0));
    all.push(absurd(T, T - 1));
    all.push(absurd(u64::MAX, u64::MAX));
    all.push(absurd(T, T + MAX_SPAN_NS as u64 + 1));
    for (span, message) in all {
        let req = request("a", vec![span]);
        let c = convert(&req);
        assert_eq!((c.spans.len(), c.refused), (0, 1), "{message}");
        assert_eq!(c.first_error.map(|e| e.to_string()), Some(message));
    }
}

#[test]
fn a_resource_without_a_host_refuses_its_spans() {
    let mut req = request("a", vec![sample(W, 1, T, T), frag(W, 2, 1, T)]);
    req.resource_spans[0].resource = None;
    let c = convert(&req);
    assert_eq!((c.spans.len(), c.refused), (0, 2));
    assert_eq!(
        c.first_error.map(|e| e.to_string()),
        Some("a resource without the string attribute `host.name`: its spans name no host".into())
    );
    let mut req = request("a", vec![sample(W, 1, T, T)]);
    if let Some(r) = req.resource_spans[0].resource.as_mut() {
        r.attributes = vec![kv(attr::HOST_NAME, Value::BoolValue(true))];
    }
    let c = convert(&req);
    assert_eq!(
        c.first_error.map(|e| e.to_string()),
        Some("resource span: attribute `host.name` is a bool, not a string".into())
    );
}

/// An empty resource without a host (found by the fuzz target: bytes `0a 00`) refuses nothing,
/// so the export is not answered with an error that names no refused span.
#[test]
fn an_empty_resource_without_a_host_refuses_nothing() {
    let req = decode(&[0x0a, 0x00]).expect("one empty ResourceSpans");
    let c = convert(&req);
    assert_eq!(
        (c.spans.len(), c.refused, c.first_error.is_none()),
        (0, 0, true)
    );
}

/// One bad span among good ones: the good ones are taken.
#[test]
fn a_bad_span_leaves_the_others() {
    let mut bad = frag(W, 1, 1, T);
    bad.attributes.retain(|a| a.key != attr::SN);
    let req = request("a", vec![frag(W, 1, 1, T), bad, sample(W, 1, T, T + 1)]);
    let c = convert(&req);
    assert_eq!((c.spans.len(), c.refused), (2, 1));
    assert_eq!(
        c.first_error.map(|e| e.to_string()),
        Some("DATA_FRAG span without the attribute `sn`".into())
    );
}

/// The same span twice (a resent export) is taken once: the join's output is that of one.
#[test]
fn a_resent_export_changes_nothing() {
    let reqs = [
        request("a", vec![sample(W, 1, T, T + 5), frag(W, 1, 1, T)]),
        request(
            "b",
            vec![sample(W, 1, T + 100, T + 200), frag(W, 1, 1, T + 50)],
        ),
    ];
    let run = |times: usize| {
        let mut join = SpanJoin::new(JoinSettings::default());
        for req in &reqs {
            for _ in 0..times {
                for span in convert(req).spans {
                    span.feed(&mut join);
                }
            }
        }
        let mut out = LineWriter::default();
        join.flush(&mut out);
        (out.buf, join.counters.duplicates)
    };
    let (once, none) = run(1);
    let (twice, dups) = run(2);
    assert_eq!((none, dups), (0, 4));
    let strip = |text: &str| -> Vec<String> {
        // (the counters point differs by the duplicates and spans it counts)
        text.lines()
            .filter(|l| !l.starts_with(span_schema::measurement::JOIN))
            .map(String::from)
            .collect()
    };
    assert!(once.contains("dds_latency"), "{once}");
    assert_eq!(strip(&once), strip(&twice));
}
