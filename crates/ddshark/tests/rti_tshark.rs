//! System tier: the byte-built RTI capture (common/rti.rs) through tshark, the oracle.
//! Every DATA_BATCH, HEARTBEAT_BATCH and DATA_SESSION agrees with tshark field by field,
//! and the samples in each batch (count, sizes, SNs) equal tshark's when tshark is told
//! to show every sample (`rtps.max_batch_samples_dissected:0`; it shows 16 by default).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::rti;
use ddshark::capture::file::FileSource;
use ddshark::dissect::dissect_source;

/// One submessage as tshark's PDML shows it: its id, then (field name, label, value)
/// of its fields in order.
#[derive(Debug, Default)]
struct TsharkSubmessage {
    id: String,
    fields: Vec<(String, String, String)>,
}

impl TsharkSubmessage {
    /// The value of the field shown as `label: value`.
    fn labelled(&self, label: &str) -> Option<i64> {
        self.fields
            .iter()
            .find(|(_, l, _)| l == label)
            .and_then(|(_, _, v)| v.parse().ok())
    }

    fn all(&self, name: &str) -> Vec<i64> {
        self.fields
            .iter()
            .filter(|(n, _, _)| n == name)
            .filter_map(|(_, _, v)| v.parse().ok())
            .collect()
    }
}

fn attr<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

/// Submessages per frame, from `tshark -T pdml`.
fn tshark_submessages(pcap: &Path) -> Vec<Vec<TsharkSubmessage>> {
    let pdml = common::tshark([
        "-n",
        "-o",
        "rtps.max_batch_samples_dissected:0",
        "-T",
        "pdml",
        "-r",
        pcap.to_str().unwrap(),
    ]);
    let mut frames: Vec<Vec<TsharkSubmessage>> = Vec::new();
    for line in pdml.lines() {
        let line = line.trim();
        if line.starts_with("<packet>") {
            frames.push(Vec::new());
        }
        let Some(name) = attr(line, "name") else {
            continue;
        };
        let frame = frames.last_mut().expect("a field outside a packet");
        if name == "rtps.sm.id" {
            frame.push(TsharkSubmessage {
                id: attr(line, "show").unwrap_or_default().to_string(),
                ..TsharkSubmessage::default()
            });
        } else if name.starts_with("rtps.") {
            if let Some(sm) = frame.last_mut() {
                let shown = attr(line, "showname").unwrap_or_default();
                let (label, value) = shown.split_once(": ").unwrap_or((shown, ""));
                let value = attr(line, "show").unwrap_or(value);
                sm.fields
                    .push((name.to_string(), label.to_string(), value.to_string()));
            }
        }
    }
    frames
}

#[test]
fn rti_batches_and_sessions_agree_with_tshark() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rti_tshark");
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("rti.pcap");
    rti::write_pcap(&pcap, 1_700_000_000, 0);
    let theirs = tshark_submessages(&pcap);
    let mut source = FileSource::open(&pcap).unwrap();
    let mut ours = Vec::new();
    dissect_source(&mut source, |r| {
        ours.push(r.clone());
        Ok(true)
    })
    .unwrap();
    assert_eq!(theirs.iter().map(Vec::len).sum::<usize>(), ours.len());
    let mut batch_samples = 0;
    for r in &ours {
        let t = &theirs[(r.frame - 1) as usize][r.sm_index];
        assert_eq!(
            t.id,
            format!("0x{:02x}", r.submessage_id),
            "frame {}",
            r.frame
        );
        match r.kind {
            "DATA_BATCH" => {
                let first = t.labelled("firstSampleSeqNumber").unwrap();
                assert_eq!(t.labelled("batchSeqNumber"), r.sn);
                assert_eq!(Some(first), r.first_sn);
                let sizes = t.all("rtps.data_batch.serialized_data_length");
                let offsets = t.all("rtps.data_batch.offset_sn");
                let batch = r.batch.as_ref().unwrap();
                assert_eq!(
                    batch.iter().map(|s| i64::from(s.size)).collect::<Vec<_>>(),
                    sizes,
                    "frame {}: sample sizes",
                    r.frame
                );
                // tshark names no sample SN: firstSampleSN + offsetSN, or consecutive.
                let sns: Vec<i64> = if offsets.is_empty() {
                    (first..).take(sizes.len()).collect()
                } else {
                    offsets.iter().map(|o| first + o).collect()
                };
                assert_eq!(batch.iter().map(|s| s.sn).collect::<Vec<_>>(), sns);
                assert_eq!(
                    t.labelled("batchSampleCount"),
                    Some(batch.len() as i64),
                    "frame {}",
                    r.frame
                );
                batch_samples += batch.len();
            }
            "HEARTBEAT_BATCH" => {
                assert_eq!(t.labelled("firstSeqNumber"), r.first_sn);
                assert_eq!(t.labelled("lastSeqNumber"), r.last_sn);
                assert_eq!(t.labelled("Count"), r.count.map(i64::from));
            }
            "DATA_SESSION" => {
                assert_eq!(t.labelled("writerSessionSeqNumber"), r.session_sn);
                assert_eq!(t.labelled("writerVirtualSeqNumber"), r.sn);
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(
        batch_samples,
        rti::samples().len() - 1,
        "all but the DATA_SESSION"
    );
}

/// The same RTPS messages over RTI's TCP transport (common/rti.rs: control messages both
/// ways, every message cut across 90-byte segments): tshark's RTI-TCP dissector finds the
/// same submessages, with the same batch sample sizes, and the same control messages.
/// (Without CRC: tshark 4.0 loses an RTI TCP stream whose CRC header straddles a segment.)
#[test]
fn rti_tcp_transport_agrees_with_tshark() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rti_tshark");
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("rti_tcp.pcap");
    rti::write_tcp_pcap(&pcap, 1_700_000_000, 0, rti::TcpWrap::RtiTcp { crc: false });
    let theirs: Vec<TsharkSubmessage> = tshark_submessages(&pcap).into_iter().flatten().collect();
    let mut source = FileSource::open(&pcap).unwrap();
    let mut ours = Vec::new();
    let summary = dissect_source(&mut source, |r| {
        ours.push(r.clone());
        Ok(true)
    })
    .unwrap();
    assert_eq!(
        theirs.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        ours.iter()
            .map(|r| format!("0x{:02x}", r.submessage_id))
            .collect::<Vec<_>>()
    );
    for (t, r) in theirs.iter().zip(&ours) {
        if let Some(batch) = &r.batch {
            let sizes: Vec<i64> = batch.iter().map(|s| i64::from(s.size)).collect();
            assert_eq!(t.all("rtps.data_batch.serialized_data_length"), sizes);
        }
        assert_eq!(r.tcp_framing, Some("rti_tcp"));
    }
    let kinds = common::tshark([
        "-n",
        "-T",
        "fields",
        "-e",
        "rtitcp.control.kind",
        "-r",
        pcap.to_str().unwrap(),
    ]);
    let kinds: Vec<&str> = kinds.split(['\n', ',']).filter(|k| !k.is_empty()).collect();
    let t = summary.stats.tcp;
    assert_eq!(kinds.len() as u64, t.control_messages(), "{kinds:?} {t:?}");
    let count = |low: &str| kinds.iter().filter(|k| k.ends_with(low)).count() as u64;
    assert_eq!(
        (count("01"), count("02"), count("06")),
        (
            t.rti_control_bind,
            t.rti_control_logical_port,
            t.rti_control_liveliness
        )
    );
}
