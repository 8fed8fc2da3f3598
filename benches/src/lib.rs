//! What the benchmarks share: the real fixture captures, read into memory first so
//! that only the stage measured runs in the timed loop.
#![allow(clippy::panic)]

use std::path::{Path, PathBuf};

use ddshark::capture::file::FileSource;
use ddshark::capture::memory::{read_all, OwnedFrame};
use otel_export::{SpanMapper, SpanRecord};
use rtps_dissect::{Dissector, FrameOutcome};

/// Fixtures every benchmark runs on: small reliable topics, a 2 MiB sample in 157
/// DATA_FRAGs (IP-fragmented), RustDDS 256-byte fragments, two 802.1Q VLANs.
pub const CAPTURES: &[&str] = &[
    "a_small_reliable/a.pcap",
    "b_large_frag/b.pcap",
    "d_rustdds_interop/a.pcap",
    "h_vlan_pcp/a.pcap",
];

/// `tests/pcaps/<rel>` at the workspace root.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/pcaps")
        .join(rel)
}

/// Every frame of a fixture, in memory.
pub fn frames(rel: &str) -> Vec<OwnedFrame> {
    let path = fixture(rel);
    let loaded = FileSource::open(&path).and_then(|mut file| read_all(&mut file));
    match loaded {
        Ok(frames) => frames,
        Err(e) => panic!("benchmark fixture {}: {e}", path.display()),
    }
}

/// Total captured bytes of the frames.
pub fn captured_bytes(frames: &[OwnedFrame]) -> u64 {
    frames.iter().map(|f| f.data.len() as u64).sum()
}

/// Every DATA/DATA_FRAG span of the frames, as the exporter's mapper makes them.
pub fn spans(frames: &[OwnedFrame]) -> Vec<SpanRecord> {
    let mut dissector = Dissector::default();
    let mut mapper = SpanMapper::new("bench-host", Some("eth0"));
    let mut out = Vec::new();
    for (number, f) in (1..).zip(frames) {
        if let FrameOutcome::Rtps(d) = dissector.process(&f.as_frame(number)) {
            mapper.map(&d, |s| out.push(s));
        }
    }
    out
}

/// Every frame through a fresh dissector, every submessage body decoded (the
/// dissector decodes on demand); returns the submessages found.
pub fn dissect_all(frames: &[OwnedFrame]) -> u64 {
    let mut d = Dissector::default();
    let mut submessages = 0u64;
    for (number, f) in (1..).zip(frames) {
        if let FrameOutcome::Rtps(dg) = d.process(&f.as_frame(number)) {
            for sm in dg.submessages.iter().flatten() {
                std::hint::black_box(sm.body());
            }
            submessages += dg.submessages.len() as u64;
        }
    }
    submessages
}
