//! The offline path of `ddshark stats FILE`: any bytes as a pcap or pcapng file through the
//! file reader, the dissector and the state (participants, endpoints, sequence tracking,
//! windows), then the final snapshot. Small caps so that evictions happen. (Not the
//! snapshot's JSON: serde_json took half the time of each input and finds nothing of ours.)
#![no_main]

use ddshark::capture::file::FileSource;
use ddshark::pipeline::{run_inline, Engine, EngineConfig};
use ddshark::state::StateConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut source) = FileSource::from_bytes(data.to_vec(), "fuzz.pcap") else { return };
    let mut config = EngineConfig {
        state: StateConfig {
            max_participants: 4,
            max_writers: 8,
            max_readers: 8,
            // Room for about 4 samples of 65,536 fragments: the budget of all writers'
            // fragmented samples drops some.
            max_frag_bytes: 1 << 15,
            sweep_every_ns: 1_000_000,
            ..StateConfig::default()
        },
        ..EngineConfig::default()
    };
    config.dissector.fragments.max_datagrams = 8;
    config.dissector.fragments.max_bytes = 1 << 20;
    config.dissector.tcp.max_streams = 4;
    config.dissector.tcp.max_bytes = 1 << 20;
    let mut engine = Engine::new(config);
    let _ = run_inline(&mut source, &mut engine);
    let snapshot = engine.finish();
    assert!(snapshot.health.reconciles, "the counters reconcile");
});
