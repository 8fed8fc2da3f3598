//! The pipeline driven from injected packet sources: real fixture frames held in
//! memory, replayed inline and through capture threads, with a slow sink that
//! forces queue drops, timestamps going backwards, extra sinks, the snapshot hub
//! and the discovery cache.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::fixture;
use ddshark::capture::file::FileSource;
use ddshark::capture::memory::{read_all, MemorySource, OwnedFrame};
use ddshark::output::contract::stats::Document as StatsDocument;
use ddshark::pipeline::{
    run_inline, run_threaded, CaptureInput, Engine, EngineConfig, RunOptions, Sink, SnapshotHub,
    SourceCtx,
};
use ddshark::state::snapshot::Snapshot;
use ddshark::stats_cmd::{stats_engine_config, stats_file, StatsOptions};
use rtps_dissect::Datagram;

fn frames_of(rel: &str) -> Vec<OwnedFrame> {
    read_all(&mut FileSource::open(&fixture(rel)).unwrap()).unwrap()
}

/// The parts of a snapshot that must not depend on how frames were fed.
fn essence(s: &Snapshot) -> serde_json::Value {
    let mut v = serde_json::to_value(StatsDocument::of(s)).unwrap();
    v["health"]["pipeline"] = serde_json::Value::Null;
    v
}

fn memory_input(name: &str, frames: Vec<OwnedFrame>, live: bool) -> CaptureInput {
    CaptureInput {
        source: Box::new(MemorySource::new(name, frames)),
        live,
        filter: None,
        size_hint: None,
    }
}

/// A replay gives the same result each run: topic figures that sum over writers
/// (rates, mean periods in floating point) must not follow the order of a hash map,
/// which is seeded anew for every map. Several writers per topic, fractional means.
#[test]
fn replays_give_the_same_report_to_the_last_bit() {
    let path = fixture("g_dustdds_interop/a.pcap");
    let report = || {
        let snapshot = stats_file(&path, &StatsOptions::default()).unwrap();
        serde_json::to_string(&StatsDocument::of(&snapshot)).unwrap()
    };
    let first = report();
    for _ in 0..8 {
        assert!(first == report(), "two replays of the same capture differ");
    }
}

#[test]
fn in_memory_inline_threaded_and_file_runs_agree() {
    let rel = "b_large_frag/b.pcap";
    let frames = frames_of(rel);
    let from_file = stats_file(&fixture(rel), &StatsOptions::default()).unwrap();

    let mut inline = Engine::new(stats_engine_config(&StatsOptions::default()));
    let mut src = MemorySource::new("mem", frames.clone());
    run_inline(&mut src, &mut inline).unwrap();
    let inline = inline.finish();

    let mut threaded = Engine::new(stats_engine_config(&StatsOptions::default()));
    let opts = RunOptions {
        batch_frames: 7,
        queue_batches: 2,
        ..RunOptions::default()
    };
    let threaded = run_threaded(
        vec![memory_input("mem", frames, false)],
        &mut threaded,
        &opts,
    )
    .unwrap();

    assert!(from_file.health.reconciles, "{:?}", from_file.health.checks);
    assert!(inline.health.reconciles, "{:?}", inline.health.checks);
    assert!(threaded.health.reconciles, "{:?}", threaded.health.checks);
    assert_eq!(essence(&from_file), essence(&inline));
    assert_eq!(essence(&from_file), essence(&threaded));
    // A replay blocks instead of dropping: nothing lost between the stages.
    assert_eq!(threaded.health.pipeline.queue_dropped, 0);
    let big = from_file
        .topics
        .iter()
        .find(|t| !t.builtin && t.totals.data_frag_submessages > 0)
        .expect("a fragmented topic");
    // A fragmented sample counts its whole size once.
    assert_eq!(
        big.totals.bytes,
        big.size.mean.unwrap() as u64 * big.totals.samples
    );
    assert!(big.ip_fragments_per_sample.unwrap() > 1.0);
}

/// Sleeps on every datagram: the state thread cannot keep up.
struct Slow;
impl Sink for Slow {
    fn on_datagram(&mut self, _d: &Datagram<'_>, _ctx: &SourceCtx<'_>) {
        std::thread::sleep(std::time::Duration::from_micros(300));
    }
}

#[test]
fn a_live_source_drops_and_counts_when_the_state_is_slow() {
    let frames = frames_of("a_small_reliable/a.pcap");
    let n = frames.len() as u64;
    let mut engine = Engine::new(EngineConfig::default());
    engine.add_sink(Box::new(Slow));
    let opts = RunOptions {
        batch_frames: 1,
        queue_batches: 1,
        ..RunOptions::default()
    };
    let snap = run_threaded(
        vec![memory_input("fast-nic", frames, true)],
        &mut engine,
        &opts,
    )
    .unwrap();
    let p = &snap.health.pipeline;
    assert!(p.queue_dropped > 0, "expected drops: {p:?}");
    assert_eq!(p.sources[0].frames, n);
    assert_eq!(p.frames_processed + p.queue_dropped, n);
    assert!(snap.health.reconciles, "{:?}", snap.health.checks);
}

#[test]
fn timestamps_going_backwards_are_tolerated() {
    let mut frames = frames_of("a_small_reliable/b.pcap");
    // Swap timestamps of neighbours here and there, and send one frame to 1970.
    for i in (10..frames.len() - 1).step_by(17) {
        let t = frames[i].ts_ns;
        frames[i].ts_ns = frames[i + 1].ts_ns;
        frames[i + 1].ts_ns = t;
    }
    frames[50].ts_ns = 0;
    let mut engine = Engine::new(stats_engine_config(&StatsOptions::default()));
    let mut src = MemorySource::new("mem", frames);
    run_inline(&mut src, &mut engine).unwrap();
    let snap = engine.finish();
    assert!(snap.health.state.ts_backwards() > 0);
    assert!(snap.health.reconciles, "{:?}", snap.health.checks);
    let reference = stats_file(
        &fixture("a_small_reliable/b.pcap"),
        &StatsOptions::default(),
    )
    .unwrap();
    let samples = |s: &Snapshot| -> HashMap<String, u64> {
        s.topics
            .iter()
            .map(|t| (t.name.clone(), t.totals.samples))
            .collect()
    };
    assert_eq!(samples(&snap), samples(&reference));
}

/// Counts what it sees, and keeps the snapshots it is given.
#[derive(Clone, Default)]
struct Counting {
    datagrams: Arc<AtomicU64>,
    snapshots: Arc<AtomicU64>,
}
impl Sink for Counting {
    fn on_datagram(&mut self, _d: &Datagram<'_>, _ctx: &SourceCtx<'_>) {
        self.datagrams.fetch_add(1, Ordering::Relaxed);
    }
    fn on_snapshot(&mut self, _s: &Arc<Snapshot>) {
        self.snapshots.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn extra_sinks_and_the_snapshot_hub_see_the_stream() {
    let counting = Counting::default();
    let hub = SnapshotHub::new();
    let mut engine = Engine::new(EngineConfig {
        report_ns: Some(1_000_000_000),
        ..EngineConfig::default()
    });
    engine.add_sink(Box::new(counting.clone()));
    engine.set_hub(hub.clone());
    let frames = frames_of("a_small_reliable/a.pcap");
    let snap = run_threaded(
        vec![memory_input("mem", frames, false)],
        &mut engine,
        &RunOptions::default(),
    )
    .unwrap();
    assert_eq!(
        counting.datagrams.load(Ordering::Relaxed),
        snap.health.dissector.rtps_datagrams
    );
    // ~7 s of capture: a snapshot per capture second.
    assert!(counting.snapshots.load(Ordering::Relaxed) >= 5);
    let latest = hub.latest().unwrap();
    assert_eq!(latest.summary.capture_time_ns, snap.summary.capture_time_ns);
    assert!(hub.version() >= 6);
}

#[test]
fn discovery_cache_names_writers_of_a_capture_started_late() {
    let dir = std::env::temp_dir().join(format!("ddshark-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cache = dir.join("discovery.json");
    let _ = std::fs::remove_file(&cache);
    // Without discovery, the late capture cannot name its writers.
    let late = stats_file(&fixture("i_late_start/a.pcap"), &StatsOptions::default()).unwrap();
    let unnamed: Vec<_> = late
        .writers
        .iter()
        .filter(|w| !w.builtin && w.totals.samples > 0)
        .collect();
    assert!(!unnamed.is_empty());
    assert!(unnamed.iter().all(|w| w.topic.is_none()));
    // The capture that saw discovery fills the cache ...
    let opts = StatsOptions {
        discovery_cache: Some(cache.clone()),
        ..StatsOptions::default()
    };
    stats_file(&fixture("i_late_start/discovery.pcap"), &opts).unwrap();
    assert!(cache.exists());
    // ... and the late capture then names every writer as the oracle does.
    let named = stats_file(&fixture("i_late_start/a.pcap"), &opts).unwrap();
    let oracle = std::fs::read_to_string(fixture("i_late_start/oracle_writer_topics.tsv")).unwrap();
    let mut checked = 0;
    for line in oracle.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (guid, topic) = (cols[0], cols[2]);
        if topic.is_empty() {
            continue;
        }
        if let Some(w) = named.writers.iter().find(|w| w.guid == guid) {
            assert_eq!(w.topic.as_deref(), Some(topic), "{guid}");
            assert!(w.from_cache);
            checked += 1;
        }
    }
    assert!(checked > 0);
    // Samples are the same, only attributed now.
    assert_eq!(late.summary.totals.samples, named.summary.totals.samples);
    std::fs::remove_dir_all(&dir).ok();
}
