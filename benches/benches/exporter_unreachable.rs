//! The exporter with no collector listening (a closed loopback port): how long
//! `try_export` takes while every batch fails and the queue overflows (the capture
//! path must never wait on it), and how long shutdown takes with a full queue.
//! The functional checks (drops counted, queue bounded, every span accounted for)
//! are in crates/otel-export/tests/unreachable.rs.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ddshark_benches::{frames, spans};
use otel_export::{Exporter, ExporterConfig, FlushWait, Protocol, SpanRecord};

fn closed_port() -> u16 {
    // Bind, note the port, close: nothing listens there afterwards.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn unreachable_exporter(protocol: Protocol) -> Exporter {
    let endpoint = format!("http://127.0.0.1:{}", closed_port());
    let mut cfg = ExporterConfig::new(protocol, &endpoint).unwrap();
    cfg.queue_capacity = 1000;
    cfg.max_batch = 100;
    cfg.batch_timeout = Duration::from_millis(20);
    Exporter::start(cfg, true).unwrap()
}

fn bench(c: &mut Criterion) {
    let records: Vec<SpanRecord> = spans(&frames("h_vlan_pcp/a.pcap"));
    let mut group = c.benchmark_group("exporter_unreachable");
    for (label, protocol) in [("grpc", Protocol::Grpc), ("http", Protocol::HttpProtobuf)] {
        let exporter = unreachable_exporter(protocol);
        let handle = exporter.handle();
        group.throughput(Throughput::Elements(records.len() as u64));
        group.bench_function(format!("{label} try_export"), |b| {
            b.iter(|| {
                for r in &records {
                    handle.try_export(r.clone());
                }
            })
        });
        let _ = exporter.shutdown(FlushWait::AtMost(Duration::from_millis(500)), &mut |_| {});
    }
    group.sample_size(10);
    group.throughput(Throughput::Elements(1));
    for (label, protocol) in [("grpc", Protocol::Grpc), ("http", Protocol::HttpProtobuf)] {
        group.bench_function(format!("{label} shutdown with a full queue"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let exporter = unreachable_exporter(protocol);
                    let handle = exporter.handle();
                    for r in records.iter().cycle().take(2000) {
                        handle.try_export(r.clone());
                    }
                    let t = Instant::now();
                    let _ = exporter
                        .shutdown(FlushWait::AtMost(Duration::from_millis(500)), &mut |_| {});
                    total += t.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
