//! Helpers shared by the integration tests: fixture paths and the tshark oracle TSVs.
#![allow(dead_code)]

pub mod pcapng;
pub mod public;
pub mod rti;
pub mod signals;
pub mod stack;
pub mod tls;
pub mod tui;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use public::PUBLIC_PREFIX;

/// Runs the ddshark binary and returns its standard output, failing the test (with its
/// stderr) when it exits non-zero.
pub fn ddshark_stdout(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ddshark"))
        .args(args)
        .output()
        .expect("running ddshark");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Every capture with a tshark oracle, as (pcap, oracle submessage TSV) relative to
/// tests/pcaps (the discovery oracle sits beside the submessage one); `public/…` are the public
/// captures of other projects, read from outside the repository (see public.rs).
/// The dissector and the statistics are both checked on all of them; a missing file fails.
pub const ORACLE_CASES: &[(&str, &str)] = &[
    (
        "a_small_reliable/a.pcap",
        "a_small_reliable/oracle_a_submsgs.tsv",
    ),
    (
        "a_small_reliable/b.pcap",
        "a_small_reliable/oracle_b_submsgs.tsv",
    ),
    ("b_large_frag/a.pcap", "b_large_frag/oracle_a_submsgs.tsv"),
    ("b_large_frag/b.pcap", "b_large_frag/oracle_b_submsgs.tsv"),
    (
        "d_rustdds_interop/a.pcap",
        "d_rustdds_interop/oracle_a_submsgs.tsv",
    ),
    (
        "d_rustdds_interop/b.pcap",
        "d_rustdds_interop/oracle_b_submsgs.tsv",
    ),
    (
        "e_mixed_robustness/a.pcap",
        "e_mixed_robustness/oracle_a_submsgs.tsv",
    ),
    (
        "e_mixed_robustness/b.pcap",
        "e_mixed_robustness/oracle_b_submsgs.tsv",
    ),
    (
        "f_ddsperf_cyclone0102/a.pcap",
        "f_ddsperf_cyclone0102/oracle_a_submsgs.tsv",
    ),
    (
        "f_ddsperf_cyclone0102/b.pcap",
        "f_ddsperf_cyclone0102/oracle_b_submsgs.tsv",
    ),
    (
        "g_dustdds_interop/a.pcap",
        "g_dustdds_interop/oracle_a_submsgs.tsv",
    ),
    (
        "g_dustdds_interop/b.pcap",
        "g_dustdds_interop/oracle_b_submsgs.tsv",
    ),
    ("h_vlan_pcp/a.pcap", "h_vlan_pcp/oracle_a_submsgs.tsv"),
    ("h_vlan_pcp/b.pcap", "h_vlan_pcp/oracle_b_submsgs.tsv"),
    ("i_late_start/a.pcap", "i_late_start/oracle_a_submsgs.tsv"),
    ("i_late_start/b.pcap", "i_late_start/oracle_b_submsgs.tsv"),
    (
        "i_late_start/discovery.pcap",
        "i_late_start/oracle_discovery/oracle_discovery_submsgs.tsv",
    ),
    ("k_fastdds/a.pcap", "k_fastdds/oracle_a_submsgs.tsv"),
    ("k_fastdds/b.pcap", "k_fastdds/oracle_b_submsgs.tsv"),
    (
        "k2_fastdds_shm/a.pcap",
        "k2_fastdds_shm/oracle_a_submsgs.tsv",
    ),
    (
        "k2_fastdds_shm/b.pcap",
        "k2_fastdds_shm/oracle_b_submsgs.tsv",
    ),
    (
        "k3_fastdds_deadline/a.pcap",
        "k3_fastdds_deadline/oracle_a_submsgs.tsv",
    ),
    (
        "k3_fastdds_deadline/b.pcap",
        "k3_fastdds_deadline/oracle_b_submsgs.tsv",
    ),
    (
        "public/foxglove_ros2_talker_listener/talker-listener-rtps.pcapng",
        "public/foxglove_ros2_talker_listener/oracle_talker-listener_submsgs.tsv",
    ),
    (
        "public/ndpi_rti_connext/rtps.pcap",
        "public/ndpi_rti_connext/oracle_rtps_submsgs.tsv",
    ),
    (
        "public/nxp_dds_tsn_fastdds_vlan/capture.pcapng",
        "public/nxp_dds_tsn_fastdds_vlan/oracle_capture_submsgs.tsv",
    ),
    (
        "public/eprosima_nidr_rti_helloworld/capture.pcap",
        "public/eprosima_nidr_rti_helloworld/oracle_capture_submsgs.tsv",
    ),
];

/// Writes a pcap file (Ethernet, µs timestamps, snapshot length `snaplen`) of `frames`,
/// each with its capture time in µs since the epoch.
pub fn write_eth_pcap<B: AsRef<[u8]>>(
    path: &Path,
    snaplen: u32,
    frames: impl IntoIterator<Item = (u64, B)>,
) {
    let mut out = Vec::new();
    out.extend(0xa1b2_c3d4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend([0u8; 8]);
    out.extend(snaplen.to_le_bytes());
    out.extend(1u32.to_le_bytes());
    for (us, f) in frames {
        let f = f.as_ref();
        out.extend(((us / 1_000_000) as u32).to_le_bytes());
        out.extend(((us % 1_000_000) as u32).to_le_bytes());
        out.extend((f.len() as u32).to_le_bytes());
        out.extend((f.len() as u32).to_le_bytes());
        out.extend(f);
    }
    std::fs::write(path, out).expect("write pcap");
}

/// The workspace root (the scripts, deploy/ and tests/ are under it).
/// Every test finds a file of the repository from here, never from its own `../..`.
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // crates/ddshark → crates → the repository.
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// `tests/pcaps` at the workspace root.
pub fn fixtures() -> PathBuf {
    repo_root().join("tests/pcaps")
}

/// A fixture file: `public/…` from the public captures folder (see [`public::checkable`]),
/// anything else from `tests/pcaps`.
pub fn fixture(rel: &str) -> PathBuf {
    let p = match rel.strip_prefix(PUBLIC_PREFIX) {
        Some(rest) => public::public_path(rest),
        None => fixtures().join(rel),
    };
    assert!(
        p.exists(),
        "fixture {} is missing (see tests/pcaps/README.md)",
        p.display()
    );
    p
}

/// One TSV file as rows of column → value (empty cells kept as "").
pub fn read_tsv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t').chain(std::iter::repeat("")))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// "1795273347.497942000" → ns since the epoch, exactly.
pub fn ns_of(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (a, b) = s.split_once('.').unwrap_or((s, ""));
    let frac: String = format!("{b:0<9}").chars().take(9).collect();
    Some(a.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()?)
}

/// `ddshark latency CAPTURE_A CAPTURE_B… --level LEVEL --format tsv -q` with its default bounds.
pub fn latency_args(
    sender: &Path,
    receivers: &[PathBuf],
    level: ddshark::latency::Level,
) -> ddshark::latency::LatencyArgs {
    ddshark::latency::LatencyArgs {
        sender: sender.to_path_buf(),
        receivers: receivers.to_vec(),
        level,
        format: ddshark::latency::LatencyFormat::Tsv,
        offset_ns: 0,
        offset: None,
        html: None,
        discovery: Vec::new(),
        summary: false,
        user_only: false,
        window_ns: 10_000_000_000,
        max_pending: 1_000_000,
        max_bytes: 1 << 30,
        lost_grace_ns: 1_000_000_000,
        receiver_window_ns: 12_000_000_000,
        quiet: true,
    }
}

/// The headless browser of the HTML and screenshot tests: `$CHROMIUM` or `chromium`, which
/// must run (else the test fails naming how to install it).
pub fn chromium() -> String {
    let c = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into());
    let ok = std::process::Command::new(&c)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{c} not found: apt-get install chromium (or set CHROMIUM); scripts/setup.sh --test installs it"
    );
    c
}

/// Fails naming the first 20 of `bad` (the samples of `name` that differ from its oracle of
/// `total` samples) unless there are none.
pub fn assert_oracle_agrees(name: &str, bad: &[String], total: usize) {
    assert!(
        bad.is_empty(),
        "{name}: {} of {total} oracle samples differ:\n{}",
        bad.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// The HTML latency report (`ddshark latency --html`, with the discovery capture and the
/// summary) of the late-start two-host capture in `dir` (`…/i_late_start`: its paths are
/// named in the report as given).
pub fn late_start_report(dir: &Path) -> String {
    let args = ddshark::latency::LatencyArgs {
        format: ddshark::latency::LatencyFormat::Text,
        discovery: vec![dir.join("discovery.pcap")],
        summary: true,
        ..latency_args(
            &dir.join("a.pcap"),
            &[dir.join("b.pcap")],
            ddshark::latency::Level::Sample,
        )
    };
    let run = ddshark::latency::join_captures(&args, |_| Ok(())).unwrap();
    ddshark::output::latency_html::report(&run)
}

/// `src` (classic pcap, µs or ns) rewritten as a nanosecond pcap whose timestamps read
/// `clock`; returns the first frame's time.
pub fn shifted_copy(src: &Path, dst: &Path, clock: impl Fn(i64) -> i64) -> i64 {
    let b = std::fs::read(src).unwrap();
    let (le, nanos) = match &b[..4] {
        [0xd4, 0xc3, 0xb2, 0xa1] => (true, false),
        [0x4d, 0x3c, 0xb2, 0xa1] => (true, true),
        [0xa1, 0xb2, 0xc3, 0xd4] => (false, false),
        [0xa1, 0xb2, 0x3c, 0x4d] => (false, true),
        m => panic!("{}: not a classic pcap ({m:?})", src.display()),
    };
    let u32_at = |o: usize| {
        let f: [u8; 4] = b[o..o + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(f)
        } else {
            u32::from_be_bytes(f)
        }
    };
    let put = |out: &mut Vec<u8>, v: u32| {
        out.extend_from_slice(&if le { v.to_le_bytes() } else { v.to_be_bytes() })
    };
    let mut out = Vec::with_capacity(b.len());
    out.extend_from_slice(if le {
        &[0x4d, 0x3c, 0xb2, 0xa1]
    } else {
        &[0xa1, 0xb2, 0x3c, 0x4d]
    });
    out.extend_from_slice(&b[4..24]);
    let mut off = 24;
    let mut first = None;
    while off + 16 <= b.len() {
        let sec = i64::from(u32_at(off));
        let frac = i64::from(u32_at(off + 4));
        let t = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        first.get_or_insert(t);
        let moved = clock(t);
        put(
            &mut out,
            u32::try_from(moved.div_euclid(1_000_000_000)).unwrap(),
        );
        put(
            &mut out,
            u32::try_from(moved.rem_euclid(1_000_000_000)).unwrap(),
        );
        let incl = u32_at(off + 8) as usize;
        let end = (off + 16 + incl).min(b.len());
        out.extend_from_slice(&b[off + 8..end]);
        off = end;
    }
    std::fs::write(dst, out).unwrap();
    first.unwrap()
}

/// One host's halves of the latency join: the samples of one capture as its `SAMPLE`
/// spans state them (`ddshark latency`'s join run over that capture alone, as the
/// exporter runs it), in the order they are finalised.
pub fn host_samples(path: &Path) -> Vec<ddshark::latency::join::LocalSample> {
    host_sample_spans(path).into_iter().map(|s| s.0).collect()
}

/// A sample one capture saw and the SAMPLE span record ddshark's exporter makes of it.
pub type HostSample = (ddshark::latency::join::LocalSample, otel_export::SpanRecord);

/// [`host_samples`] with each sample's span record, made as the exporter makes it: by the
/// span mapper that saw every datagram up to the sample's end (SPDP announcements too).
pub fn host_sample_spans(path: &Path) -> Vec<HostSample> {
    use ddshark::capture::PacketSource;
    use ddshark::latency::extract::{observations, ExtractStats};
    use ddshark::latency::join::{Join, JoinConfig};
    let mut src = ddshark::capture::file::FileSource::open(path).unwrap();
    let mut dissector = rtps_dissect::Dissector::default();
    let mut mapper = otel_export::SpanMapper::new("host", Some("file"));
    let mut join = Join::new(JoinConfig {
        captures: 1,
        window_ns: span_schema::SAMPLE_WINDOW_NS,
        max_pending: 1_000_000,
        max_bytes: 1 << 30,
        lost: latency_core::LostRule::default(),
    });
    let (mut obs, mut rows, mut stats) = (Vec::new(), Vec::new(), ExtractStats::default());
    let (mut done, mut out) = (Vec::new(), Vec::new());
    let mut spans = |done: &mut Vec<_>, mapper: &mut otel_export::SpanMapper| {
        for s in done.drain(..) {
            let record = mapper.sample(&ddshark::sample_summary(&s));
            out.push((s, record));
        }
    };
    while let Ok(Some(frame)) = src.next_frame() {
        let ts = i64::try_from(frame.ts_ns).unwrap();
        for d in dissector.process(&frame).datagrams() {
            mapper.map(d, |_| {});
            observations(d, ddshark::latency::Level::Sample, 0, &mut stats, &mut obs);
        }
        for o in obs.drain(..) {
            join.push(0, o, &mut rows);
        }
        join.advance(ts, &mut rows);
        join.take_local(&mut done);
        spans(&mut done, &mut mapper);
    }
    join.finish(&mut rows);
    assert!(
        rows.is_empty(),
        "a join of one capture has no sender/receiver rows"
    );
    join.take_local(&mut done);
    spans(&mut done, &mut mapper);
    out
}

/// Hands `host`'s sample to the live join as the SAMPLE span ddshark exports for it.
pub fn add_sample_span(join: &mut span_join::SpanJoin, host: &str, (s, record): &HostSample) {
    add_sample_span_with(join, host, s, record, true);
}

/// [`add_sample_span`], with (`evidence`) or without the attributes the host rule ties a
/// host's participants by (`src_ip`, `src_mac`, `announced_ips`): spans as they were before.
pub fn add_sample_span_with(
    join: &mut span_join::SpanJoin,
    host: &str,
    s: &ddshark::latency::join::LocalSample,
    record: &otel_export::SpanRecord,
    evidence: bool,
) {
    let writer = s.key.writer.to_string();
    let slot = s.slot.to_string();
    let src_ip = record.src_ip().map(|ip| ip.to_string());
    let src_mac = record
        .sample
        .and_then(|t| t.src_mac)
        .map(|m| otel_export::schema::mac_number(&m));
    let announced = record.announced_ips.as_deref();
    join.add_sample(&span_join::SampleSpan {
        host,
        writer: &writer,
        topic: s.topic.as_deref(),
        slot: &slot,
        sn: s.key.sn,
        span_start: s.t_first,
        span_end: s.t_complete.unwrap_or(s.t_last),
        start_ns: s.t_first,
        fragments_missing: i64::from(s.units.saturating_sub(s.units_seen)),
        sample_size: i64::try_from(s.sample_size).unwrap(),
        repairs: i64::from(s.repairs),
        submessages: i64::from(s.submessages),
        src_ip: src_ip.as_deref().filter(|_| evidence),
        src_mac: src_mac.filter(|_| evidence),
        announced_ips: announced.filter(|_| evidence),
    });
}

/// The live join fed the SAMPLE spans of each `(host, capture)` in capture-time order, with
/// a push every 2 s of capture time and everything flushed at the end: its points, as line
/// protocol.
pub fn live_join(hosts: &[(&str, &Path)]) -> String {
    live_join_arriving(hosts, |_, t| t)
}

/// [`live_join`] with the spans arriving at `arrival(host index, t_first)` (capture time of
/// the first host's clock; ties in the order of `hosts`) instead of `t_first`: a push every
/// 2 s of arrival time, as if the join ran at the capture's speed.
pub fn live_join_arriving(hosts: &[(&str, &Path)], arrival: impl Fn(usize, i64) -> i64) -> String {
    live_join_with(hosts, arrival, true)
}

/// [`live_join_arriving`], with or without the host rule's address `evidence` on the spans.
pub fn live_join_with(
    hosts: &[(&str, &Path)],
    arrival: impl Fn(usize, i64) -> i64,
    evidence: bool,
) -> String {
    let mut join = span_join::SpanJoin::new(span_join::JoinSettings::default());
    let mut out = span_join::LineWriter::default();
    replay_with(&mut join, &mut out, hosts, arrival, evidence);
    join.flush(&mut out);
    out.buf
}

/// One replay of `hosts` into a running `join` (see [`live_join_arriving`]), without the
/// final flush: replays one after the other, as a stack sees them.
pub fn replay_into(
    join: &mut span_join::SpanJoin,
    out: &mut span_join::LineWriter,
    hosts: &[(&str, &Path)],
    arrival: impl Fn(usize, i64) -> i64,
) {
    replay_with(join, out, hosts, arrival, true);
}

fn replay_with(
    join: &mut span_join::SpanJoin,
    out: &mut span_join::LineWriter,
    hosts: &[(&str, &Path)],
    arrival: impl Fn(usize, i64) -> i64,
    evidence: bool,
) {
    const PUSH_NS: i64 = 2_000_000_000;
    let mut spans = Vec::new();
    for (i, (host, path)) in hosts.iter().enumerate() {
        spans.extend(
            host_sample_spans(path)
                .into_iter()
                .map(|s| (arrival(i, s.0.t_first), *host, s)),
        );
    }
    spans.sort_by_key(|(at, _, _)| *at);
    let mut next_push = spans.first().map_or(0, |(at, _, _)| *at) + PUSH_NS;
    for (at, host, (s, record)) in &spans {
        while *at >= next_push {
            join.push(out);
            next_push += PUSH_NS;
        }
        add_sample_span_with(join, host, s, record, evidence);
    }
}

/// Every fixture directory with captures of two hosts and their latency oracle.
pub fn pair_fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("tests/pcaps is missing (see tests/pcaps/README.md)")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.join("oracle_latency.tsv").exists()
                && p.join("a.pcap").exists()
                && p.join("b.pcap").exists()
        })
        .collect();
    v.sort();
    assert!(
        v.len() >= 4,
        "expected the two-host fixtures in tests/pcaps, found {v:?}"
    );
    v
}

/// `tshark ARGS`: its standard output. Panics naming how to install tshark when it cannot
/// run, and with its messages when it fails.
pub fn tshark<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> String {
    let out = std::process::Command::new("tshark")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("tshark cannot run ({e}): install it with scripts/setup.sh --test")
        });
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tshark's output is UTF-8")
}
