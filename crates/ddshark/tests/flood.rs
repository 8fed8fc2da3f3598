//! Floods of hostile traffic through the real binary: pcap files written here, read by
//! `ddshark stats`. IP fragments with random ids and offsets, 10k participants announcing
//! 100k endpoints, sequence numbers jumping up to 2^63 - 1, and writers whose DATA_FRAG
//! samples never complete (user data and discovery). For each: ddshark's peak RSS (its
//! `ru_maxrss`) stays within what the caps allow (docs/hostile-input.md), and every entry a
//! cap pushed out is counted in the stats JSON.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use ddshark::output::contract::stats::Document as StatsDocument;
use nix::sys::resource::{getrusage, UsageWho};
use serde_json::Value;

/// Set in the environment of the `rss_probe` copy of this binary: the capture to read.
const PROBE_ENV: &str = "DDSHARK_FLOOD_PROBE";

/// The run of `ddshark stats -q FILE` in a fresh copy of this test binary, whose only
/// child it is: `getrusage(RUSAGE_CHILDREN)` there is ddshark's own peak RSS.
#[test]
fn rss_probe() {
    let Ok(file) = std::env::var(PROBE_ENV) else {
        return; // a normal test run: nothing to probe
    };
    let out = Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(["stats", "-q", &file])
        .output()
        .expect("run ddshark");
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    assert!(
        out.status.success(),
        "ddshark stats {file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(format!("{file}.json"), &out.stdout).expect("write the stats");
    std::fs::write(format!("{file}.rss"), usage.max_rss().to_string()).expect("write the RSS");
}

/// `ddshark stats FILE` as JSON, and its peak RSS in MiB.
fn stats_and_peak_rss(file: &Path) -> (Value, f64) {
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "rss_probe", "--test-threads", "1", "--nocapture"])
        .env(PROBE_ENV, file)
        .output()
        .expect("run the probe");
    assert!(
        out.status.success(),
        "probe of {}: {}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let json = std::fs::read(format!("{}.json", file.display())).expect("stats written");
    let kib: f64 = std::fs::read_to_string(format!("{}.rss", file.display()))
        .expect("RSS written")
        .trim()
        .parse()
        .expect("a number");
    (
        serde_json::from_slice(&json).expect("stats JSON"),
        kib / 1024.0,
    )
}

fn dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("flood");
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A pcap file (Ethernet, µs), one frame every 10 µs: every idle timeout stays far away.
fn write_pcap(path: &Path, frames: impl IntoIterator<Item = Vec<u8>>) {
    let start_us: u64 = 1_795_000_000 * 1_000_000;
    common::write_eth_pcap(
        path,
        262_144,
        frames
            .into_iter()
            .enumerate()
            .map(|(i, f)| (start_us + i as u64 * 10, f)),
    );
}

/// Ethernet + IPv4 header (`payload_len` bytes follow) from 10.0.0.`src` to 10.0.0.2.
fn ipv4(src: u8, id: u16, frag_field: u16, protocol: u8, payload_len: usize) -> Vec<u8> {
    let mut f = vec![
        0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 8, 0,
    ];
    let total = (20 + payload_len) as u16;
    f.extend([0x45, 0]);
    f.extend(total.to_be_bytes());
    f.extend(id.to_be_bytes());
    f.extend(frag_field.to_be_bytes());
    f.extend([64, protocol, 0, 0, 10, 0, 0, src, 10, 0, 0, 2]);
    f
}

/// An unfragmented UDP datagram carrying `rtps`.
fn udp(rtps: &[u8]) -> Vec<u8> {
    let mut f = ipv4(1, 0, 0x4000, 17, 8 + rtps.len());
    f.extend(7410u16.to_be_bytes());
    f.extend(7400u16.to_be_bytes());
    f.extend(((8 + rtps.len()) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend(rtps);
    f
}

/// An RTPS message of participant `prefix` with these submessages.
fn rtps(prefix: [u8; 12], submessages: &[Vec<u8>]) -> Vec<u8> {
    let mut m = b"RTPS\x02\x03\x01\x0f".to_vec();
    m.extend(prefix);
    for s in submessages {
        m.extend(s);
    }
    m
}

fn prefix(n: u32) -> [u8; 12] {
    let mut p = [0x01, 0x0f, 0xf1, 0x0d, 0, 0, 0, 0, 0, 0, 0, 1];
    p[4..8].copy_from_slice(&n.to_be_bytes());
    p
}

const SPDP_WRITER: [u8; 4] = [0, 1, 0, 0xc2];
const SPDP_READER: [u8; 4] = [0, 1, 0, 0xc7];
const SEDP_PUB_WRITER: [u8; 4] = [0, 0, 3, 0xc2];
const SEDP_PUB_READER: [u8; 4] = [0, 0, 3, 0xc7];
const SEDP_SUB_WRITER: [u8; 4] = [0, 0, 4, 0xc2];
const SEDP_SUB_READER: [u8; 4] = [0, 0, 4, 0xc7];

fn sn_bytes(sn: i64) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&((sn >> 32) as i32).to_le_bytes());
    b[4..].copy_from_slice(&(sn as u32).to_le_bytes());
    b
}

/// DATA (little endian) from `writer` to `reader` with a serialized payload.
fn data(reader: [u8; 4], writer: [u8; 4], sn: i64, payload: &[u8]) -> Vec<u8> {
    let mut body = vec![0, 0, 16, 0];
    body.extend(reader);
    body.extend(writer);
    body.extend(sn_bytes(sn));
    body.extend(payload);
    let mut s = vec![0x15, 0x05];
    s.extend((body.len() as u16).to_le_bytes());
    s.extend(body);
    s
}

/// DATA_FRAG (little endian): `count` fragments from `start` of a `sample_size` sample.
fn data_frag(
    reader: [u8; 4],
    writer: [u8; 4],
    sn: i64,
    (start, fragment_size, sample_size): (u32, u16, u32),
    bytes: &[u8],
) -> Vec<u8> {
    let mut body = vec![0, 0, 28, 0];
    body.extend(reader);
    body.extend(writer);
    body.extend(sn_bytes(sn));
    body.extend(start.to_le_bytes());
    body.extend(1u16.to_le_bytes());
    body.extend(fragment_size.to_le_bytes());
    body.extend(sample_size.to_le_bytes());
    body.extend(bytes);
    let mut s = vec![0x16, 0x01];
    s.extend((body.len() as u16).to_le_bytes());
    s.extend(body);
    s
}

/// A PL_CDR_LE ParameterList.
fn plist(params: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut out = vec![0, 3, 0, 0];
    for (id, value) in params {
        let mut v = value.clone();
        v.resize(v.len().div_ceil(4) * 4, 0);
        out.extend(id.to_le_bytes());
        out.extend((v.len() as u16).to_le_bytes());
        out.extend(v);
    }
    out.extend([1, 0, 0, 0]);
    out
}

fn cdr_string(s: &str) -> Vec<u8> {
    let mut v = ((s.len() + 1) as u32).to_le_bytes().to_vec();
    v.extend(s.as_bytes());
    v.push(0);
    v
}

fn guid(prefix: [u8; 12], entity: [u8; 4]) -> Vec<u8> {
    [prefix.as_slice(), &entity].concat()
}

/// A cheap deterministic sequence of "random" numbers (xorshift64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn n(v: &Value, path: &str) -> u64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path} is not a number"))
}

/// Peak RSS of `ddshark stats` on a capture of one SPDP DATA: what any run costs.
/// Measured once per test process: the flood tests run in parallel, and each writing and
/// reading the same baseline files raced (one read a `.rss` file another had just emptied).
fn baseline_rss() -> f64 {
    static BASELINE: OnceLock<f64> = OnceLock::new();
    *BASELINE.get_or_init(measure_baseline_rss)
}

fn measure_baseline_rss() -> f64 {
    let path = dir().join("baseline.pcap");
    let spdp = plist(&[(0x0050, guid(prefix(0), [0, 0, 1, 0xc1]))]);
    write_pcap(
        &path,
        [udp(&rtps(
            prefix(0),
            &[data(SPDP_READER, SPDP_WRITER, 1, &spdp)],
        ))],
    );
    stats_and_peak_rss(&path).1
}

fn report(name: &str, rss: f64, base: f64, allowed: f64) {
    eprintln!(
        "flood {name}: peak RSS {rss:.1} MiB (baseline {base:.1} MiB, allowed baseline + {allowed:.0} MiB)"
    );
    assert!(
        rss <= base + allowed,
        "{name}: peak RSS {rss:.1} MiB above baseline {base:.1} + {allowed} MiB"
    );
}

/// 60,000 IP first and middle fragments with distinct ids in a scrambled order, each at a
/// random offset (so each one makes its datagram's buffer reach up to 64 KiB): the fragment
/// table's caps (4,096 datagrams, 64 MiB of buffers) hold, and every datagram that
/// entered it is reassembled, evicted (counted) or still held at the end.
#[test]
fn ip_fragments_with_random_ids() {
    let base = baseline_rss();
    let path = dir().join("ip_fragments.pcap");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let count: u32 = 60_000;
    let frames = (0..count).map(|i| {
        // Distinct (source, id) pairs in a scrambled order (an odd factor permutes u16).
        let id = (i as u16).wrapping_mul(40_503);
        let src = 10 + (i >> 16) as u8;
        let offset_units = (rng.next() % 8000) as u16; // × 8 bytes: up to 64,000
        let mut f = ipv4(src, id, 0x2000 | offset_units, 17, 64);
        f.extend([0x5a; 64]);
        f
    });
    write_pcap(&path, frames);
    let (s, rss) = stats_and_peak_rss(&path);
    let ip = &s["health"]["dissector"]["ip"];
    assert_eq!(n(ip, "fragments"), u64::from(count));
    assert!(n(ip, "in_progress") <= 4096);
    assert!(n(ip, "bytes_held") <= 64 << 20);
    assert!(n(ip, "evicted_capacity") > 0, "{ip}");
    assert_eq!(
        n(ip, "reassembled")
            + n(ip, "evicted_idle")
            + n(ip, "evicted_capacity")
            + n(ip, "inconsistent")
            + n(ip, "in_progress"),
        u64::from(count),
        "every datagram accounted for: {ip}"
    );
    report("ip_fragments", rss, base, 64.0 + 32.0);
}

/// 10,000 participants (SPDP) announcing 50,000 writers and 50,000 readers (SEDP), each
/// on a topic of its own: the participant (4,096), writer and reader (16,384 each) and
/// endpoint-topic (65,536) caps hold, and every participant and endpoint is either kept
/// or counted as evicted.
#[test]
fn ten_thousand_participants_announce_a_hundred_thousand_endpoints() {
    let base = baseline_rss();
    let path = dir().join("discovery.pcap");
    let participants: u32 = 10_000;
    let per_kind: u32 = 5;
    let mut frames = Vec::new();
    for p in 0..participants {
        let pre = prefix(p);
        let spdp = plist(&[
            (0x0050, guid(pre, [0, 0, 1, 0xc1])),
            (0x0062, cdr_string(&format!("flood participant {p}"))),
        ]);
        frames.push(udp(&rtps(pre, &[data(SPDP_READER, SPDP_WRITER, 1, &spdp)])));
        for e in 0..per_kind * 2 {
            let reader = e >= per_kind;
            let entity = [0, (e >> 8) as u8, e as u8, if reader { 0x07 } else { 0x02 }];
            let record = plist(&[
                (0x005a, guid(pre, entity)),
                (0x0050, guid(pre, [0, 0, 1, 0xc1])),
                (0x0005, cdr_string(&format!("rt/flood/p{p}/e{e}"))),
                (0x0007, cdr_string("flood::msg::Blob_")),
            ]);
            let (r, w) = if reader {
                (SEDP_SUB_READER, SEDP_SUB_WRITER)
            } else {
                (SEDP_PUB_READER, SEDP_PUB_WRITER)
            };
            let sn = i64::from(e % per_kind) + 1;
            frames.push(udp(&rtps(pre, &[data(r, w, sn, &record)])));
        }
    }
    write_pcap(&path, frames);
    let (s, rss) = stats_and_peak_rss(&path);
    let health = &s["health"];
    let state = &health["state"];
    let dissector = &health["dissector"];
    let endpoints = u64::from(participants * per_kind * 2);
    assert_eq!(
        n(dissector, "discovery_records"),
        u64::from(participants) + endpoints
    );
    assert!(n(dissector, "endpoints_known") <= 65_536);
    assert_eq!(
        n(dissector, "endpoints_known") + n(dissector, "endpoints_evicted"),
        endpoints,
        "every endpoint's topic kept or counted as evicted: {dissector}"
    );
    let kept = |key: &str| s[key].as_array().map_or(0, |a| a.len() as u64);
    assert!(kept("participants") <= 4096 && kept("writers") <= 16_384 && kept("readers") <= 16_384);
    assert_eq!(
        kept("participants")
            + n(state, "participants_evicted_capacity")
            + n(state, "participants_evicted_idle"),
        u64::from(participants),
        "every participant kept or counted as evicted: {state}"
    );
    // Writers: the announced ones and each participant's SPDP and two SEDP writers.
    assert_eq!(
        kept("writers") + n(state, "writers_evicted_capacity") + n(state, "writers_evicted_idle"),
        u64::from(participants * (per_kind + 3)),
        "every writer kept or counted as evicted: {state}"
    );
    assert_eq!(
        kept("readers") + n(state, "readers_evicted_capacity") + n(state, "readers_evicted_idle"),
        u64::from(participants * per_kind),
        "every reader kept or counted as evicted: {state}"
    );
    assert_eq!(health["reconciles"], true, "{health}");
    // Every entity table at its cap, and the final snapshot of them.
    report("discovery", rss, base, 192.0);
}

/// 4,000 writers each sending DATA whose sequence numbers jump up to 2^63 - 1 (and back,
/// and to invalid negatives): each writer's window stays at most 1,024 SNs, jumps beyond a
/// million SNs are counted as jumps (not as a quintillion lost samples), and the counters
/// reconcile.
#[test]
fn sequence_numbers_jump_to_two_to_the_63() {
    let base = baseline_rss();
    let path = dir().join("sn_jumps.pcap");
    let writers: u32 = 4_000;
    let sns: [i64; 11] = [
        1,
        2,
        1 << 31,
        (1 << 32) + 5,
        1 << 40,
        1 << 62,
        i64::MAX,
        3,
        i64::MAX - 1,
        -(1 << 40),
        0,
    ];
    let mut frames = Vec::new();
    for &sn in &sns {
        for w in 0..writers {
            let entity = [(w >> 16) as u8, (w >> 8) as u8, w as u8, 0x02];
            frames.push(udp(&rtps(
                prefix(7),
                &[data([0; 4], entity, sn, &[0, 1, 0, 0, 42, 0, 0, 0])],
            )));
        }
    }
    write_pcap(&path, frames);
    let (s, rss) = stats_and_peak_rss(&path);
    let summary = &s["summary"];
    let writers_json = s["writers"].as_array().expect("writers");
    let user: Vec<&Value> = writers_json
        .iter()
        .filter(|w| w["sn_jumps"].as_u64() > Some(0))
        .collect();
    assert_eq!(user.len() as u64, u64::from(writers));
    for w in &user {
        // 2 → 2^31, → 2^32 + 5, → 2^40, → 2^62, → 2^63 - 1
        assert_eq!(w["sn_jumps"], 5, "{w}");
    }
    assert_eq!(n(summary, "lost"), 0, "{summary}");
    assert_eq!(n(summary, "samples"), u64::from(writers) * 7);
    assert_eq!(s["health"]["reconciles"], true);
    report("sn_jumps", rss, base, 64.0);
}

/// Writers whose fragmented samples never complete: 8,000 user writers each sending the
/// first fragment of 20 samples of 4 GiB in 1-byte fragments (each tracked as 65,536
/// fragments: 8 KiB of flags), and an SEDP writer sending the first fragment of 1,000
/// discovery samples of 1 MiB. The per-writer cap (16 samples in progress) alone would let
/// them hold 1 GiB; the budget of all writers' fragmented samples (64 MiB) and the
/// discovery reassembly's caps hold, and every sample dropped from tracking is counted.
#[test]
fn data_frag_samples_that_never_complete() {
    let base = baseline_rss();
    let path = dir().join("data_frag.pcap");
    let writers: u32 = 8_000;
    let samples: i64 = 20;
    let mut frames = Vec::new();
    for sn in 1..=samples {
        for w in 0..writers {
            let entity = [(w >> 16) as u8, (w >> 8) as u8, w as u8, 0x02];
            let frag = data_frag([0; 4], entity, sn, (1, 1, u32::MAX), &[0]);
            frames.push(udp(&rtps(prefix(9), &[frag])));
        }
    }
    let discovery_samples: i64 = 1_000;
    for sn in 1..=discovery_samples {
        let frag = data_frag(
            SEDP_PUB_READER,
            SEDP_PUB_WRITER,
            sn,
            (1, 1024, 1 << 20),
            &[0; 1024],
        );
        frames.push(udp(&rtps(prefix(10), &[frag])));
    }
    write_pcap(&path, frames);
    let (s, rss) = stats_and_peak_rss(&path);
    let state = &s["health"]["state"];
    let started = u64::from(writers) * samples as u64 + discovery_samples as u64;
    // Dropped from tracking: all but those the budget holds at the end (at most 64 MiB
    // of 8 KiB flags, and the SEDP writer's last 16).
    let evicted = n(state, "frag_samples_evicted");
    let held_at_most = (64 << 20) / (8 << 10) + 16;
    assert!(
        evicted <= started && evicted + held_at_most >= started,
        "{evicted} of {started} evicted: {state}"
    );
    assert_eq!(n(&s["summary"], "incomplete"), started);
    let disc = &s["health"]["dissector"]["discovery_fragments"];
    assert!(n(disc, "in_progress") <= 256, "{disc}");
    assert_eq!(
        n(disc, "evicted") + n(disc, "in_progress") + n(disc, "reassembled"),
        discovery_samples as u64,
        "every discovery sample reassembled, held or counted as evicted: {disc}"
    );
    assert_eq!(s["health"]["reconciles"], true);
    // What the caps allow: the fragmented samples' 64 MiB, the discovery reassembly's
    // 16 MiB, and the table of 8,000 writers.
    report("data_frag", rss, base, 64.0 + 16.0 + 64.0);
}

/// A writer pushed out of the full writer table takes its count of fragmented samples
/// dropped from tracking with it no more: the counter only grows.
#[test]
fn dropped_fragmented_samples_stay_counted_after_their_writer_is_evicted() {
    use ddshark::capture::memory::{MemorySource, OwnedFrame};
    use ddshark::pipeline::{run_inline, Engine, EngineConfig};
    use ddshark::state::StateConfig;
    use rtps_dissect::LinkType;

    let mut frames = Vec::new();
    for w in 0..3u8 {
        for sn in 1..=20 {
            let frag = data_frag([0; 4], [0, 0, w, 0x02], sn, (1, 1, 1000), &[0]);
            let data = udp(&rtps(prefix(1), &[frag]));
            frames.push(OwnedFrame {
                ts_ns: 1_000_000 * frames.len() as u64,
                link: LinkType::Ethernet,
                orig_len: data.len() as u32,
                data,
            });
        }
    }
    let mut engine = Engine::new(EngineConfig {
        state: StateConfig {
            max_writers: 2,
            idle_timeout_ns: None,
            ..StateConfig::default()
        },
        ..EngineConfig::default()
    });
    run_inline(&mut MemorySource::new("frags", frames), &mut engine).expect("in memory");
    let snapshot = engine.finish();
    let state = &snapshot.health.state;
    assert_eq!(state.writers_evicted_capacity(), 1);
    // 20 samples each, 16 tracked at once: 4 dropped per writer, the evicted one's included.
    assert_eq!(state.frag_samples_evicted(), 3 * 4);
}

/// The budget of all writers' fragmented samples drops the samples that started first,
/// whichever their writer, and counts each; a sample that completes gives its room back.
#[test]
fn fragmented_samples_of_all_writers_share_one_budget() {
    use ddshark::capture::memory::{MemorySource, OwnedFrame};
    use ddshark::pipeline::{run_inline, Engine, EngineConfig};
    use ddshark::state::StateConfig;
    use rtps_dissect::LinkType;

    let mut frames = Vec::new();
    let mut push = |rtps_msg: Vec<u8>| {
        let data = udp(&rtps_msg);
        frames.push(OwnedFrame {
            ts_ns: 1_000_000 * frames.len() as u64,
            link: LinkType::Ethernet,
            orig_len: data.len() as u32,
            data,
        });
    };
    // 4 writers × 3 samples of 64,000 1-byte fragments (8,000 B of flags each), the first
    // fragment only; then a sample that completes (its 2 fragments), 10 times.
    for sn in 1..=3 {
        for w in 0..4u8 {
            let frag = data_frag([0; 4], [0, 0, w, 0x02], sn, (1, 1, 64_000), &[0]);
            push(rtps(prefix(1), &[frag]));
        }
    }
    for sn in 1..=10 {
        for start in 1..=2 {
            let frag = data_frag([0; 4], [0, 0, 9, 0x02], sn, (start, 1, 2), &[0]);
            push(rtps(prefix(1), &[frag]));
        }
    }
    let mut engine = Engine::new(EngineConfig {
        state: StateConfig {
            // Room for 5 of the large samples.
            max_frag_bytes: 5 * 8_100,
            idle_timeout_ns: None,
            ..StateConfig::default()
        },
        ..EngineConfig::default()
    });
    run_inline(&mut MemorySource::new("frags", frames), &mut engine).expect("in memory");
    let snapshot = engine.finish();
    // 12 started, 5 held: the first 7 dropped (the completed ones took no room for long).
    assert_eq!(snapshot.health.state.frag_samples_evicted(), 7);
    let json = serde_json::to_value(StatsDocument::of(&snapshot)).expect("snapshot JSON");
    assert_eq!(n(&json, "summary.incomplete"), 12);
}
