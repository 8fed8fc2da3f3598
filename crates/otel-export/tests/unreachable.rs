//! The exporter with no collector listening (a closed loopback port): drops are
//! counted, the queue stays bounded, shutdown returns (bounded, or waiting while spans are
//! delivered) and every span is accounted for.
//! How long `try_export` and shutdown take is measured by the `exporter_unreachable`
//! benchmark (benches/), never asserted here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use otel_export::schema::{span_id, trace_id};
use otel_export::{
    ExportStats, Exporter, ExporterConfig, FlushWait, Protocol, SampleKind, SpanRecord,
    TopicFilter, TrafficType,
};
use rtps_dissect::{Guid, VendorId};

fn closed_port() -> u16 {
    // Bind, note the port, close: nothing listens there afterwards.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn span(i: u64, topic: &str) -> SpanRecord {
    let writer = Guid::from_bytes([1, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 3]);
    SpanRecord {
        trace_id: trace_id(&writer, i as i64),
        span_id: span_id("h", "lo", i, i, 0),
        kind: SampleKind::Data,
        start_ns: 1_700_000_000_000_000_000 + i,
        end_ns: 1_700_000_000_000_000_000 + i,
        traffic: TrafficType::User,
        topic: Some(Arc::from(topic)),
        type_name: None,
        writer,
        sn: i as i64,
        fragment_starting_num: 0,
        frags_in_submessage: 1,
        fragment_size: None,
        sample_size: 64,
        payload_size: 64,
        pcp: None,
        vlan_id: None,
        vendor: VendorId::CYCLONE_DDS,
        src: "127.0.0.1:7410".parse().unwrap(),
        dst: "127.0.0.1:7411".parse().unwrap(),
        domain_id: Some(0),
        source_timestamp_ns: None,
        interface: None,
        frame: i,
        frame_first: i,
        ip_fragments: 1,
        submessage_index: 0,
        slot: 0,
        sample: None,
        announced_ips: None,
        export_seq: 0,
    }
}

fn accounted(s: &ExportStats) {
    assert_eq!(s.offered, s.filtered + s.dropped + s.enqueued, "{s:?}");
    assert_eq!(s.enqueued, s.sent + s.failed + s.abandoned, "{s:?}");
}

fn run(protocol: Protocol, wait: FlushWait) {
    let port = closed_port();
    let mut cfg = ExporterConfig::new(protocol, &format!("http://127.0.0.1:{port}")).unwrap();
    cfg.queue_capacity = 1000;
    cfg.max_batch = 100;
    cfg.batch_timeout = Duration::from_millis(20);
    cfg.topic_filter = TopicFilter::new(&["rt/*"]).unwrap();
    let exporter = Exporter::start(cfg, true).unwrap();
    let h = exporter.handle();
    let n = 200_000u64;
    for i in 0..n {
        let topic = if i % 10 == 0 { "other" } else { "rt/chatter" };
        let rec = span(i, topic);
        h.try_export(rec);
        if i % 1000 == 0 {
            let s = h.stats();
            assert!(s.queue_len <= 1000, "queue {} over capacity", s.queue_len);
        }
    }
    let s = h.stats();
    assert_eq!(s.offered, n);
    assert_eq!(s.filtered, n / 10);
    assert!(s.dropped > n / 2, "{s:?}");
    assert_eq!(s.sent, 0);
    // The first request fails once the crate's retries are spent (about 0.8 s).
    let waited = Instant::now();
    while h.stats().requests_failed == 0 && waited.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = exporter.shutdown(wait, &mut |_| {});
    accounted(&s);
    assert!(s.requests_failed > 0, "{s:?}");
    assert!(s.last_error.is_some());
    assert!(s.abandoned + s.failed > 0);
}

#[test]
fn grpc_collector_down_never_blocks() {
    run(
        Protocol::Grpc,
        FlushWait::AtMost(Duration::from_millis(500)),
    );
}

#[test]
fn http_collector_down_never_blocks() {
    run(
        Protocol::HttpProtobuf,
        FlushWait::AtMost(Duration::from_millis(500)),
    );
}

/// A replay's default: wait while spans are delivered. Nothing is, so it gives up (after
/// the stall time, or sooner once every span has failed) and counts the rest abandoned.
#[test]
fn waiting_while_delivering_ends_when_nothing_is_delivered() {
    run(
        Protocol::Grpc,
        FlushWait::WhileDelivering(Duration::from_secs(2)),
    );
}
