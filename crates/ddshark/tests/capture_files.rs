//! Savefiles as the pure-Rust reader reads them: a pcapng whose interfaces have
//! different link types and timestamp resolutions reads as the single-link capture it
//! was made from; standard input reads as the file; a cut-short pcapng is reported
//! and what came before it stands; a capture filter applies to every link type.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use ddshark::capture::file::FileSource;
use ddshark::capture::filter::FrameFilter;
use ddshark::capture::PacketSource;
use ddshark::dissect::{dissect_source, DissectSummary};
use ddshark::record::SubmessageRecord;
use rtps_dissect::LinkType;

const SOURCE: &str = "a_small_reliable/a.pcap";

fn dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("capture_files")
        .join(test);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn dissect(path: &std::path::Path) -> (Vec<SubmessageRecord>, DissectSummary) {
    let mut source = FileSource::open(path).unwrap();
    let mut records = Vec::new();
    let summary = dissect_source(&mut source, |r| {
        records.push(r.clone());
        Ok(true)
    })
    .unwrap();
    (records, summary)
}

#[test]
fn a_pcapng_of_two_link_types_reads_as_its_source() {
    let out = dir("two_links").join("two_links.pcapng");
    let frames = common::pcapng::write_two_link_types(&common::fixture(SOURCE), &out);
    let (want, want_summary) = dissect(&common::fixture(SOURCE));
    let (got, summary) = dissect(&out);
    assert!(want.len() > 500);
    assert_eq!(got, want, "every submessage, its frame, time and addresses");
    assert_eq!(summary.stats, want_summary.stats);
    assert_eq!(summary.stats.frames, frames);
    // The two interfaces' link types, frame by frame.
    let mut source = FileSource::open(&out).unwrap();
    assert_eq!(source.link_type(), Some(LinkType::Ethernet));
    let mut links = Vec::new();
    while let Some(f) = source.next_frame().unwrap() {
        links.push(f.link);
    }
    assert_eq!(links[0], LinkType::Ethernet);
    assert_eq!(links[1], LinkType::from_dlt(113));
}

#[test]
fn a_filter_applies_to_each_link_type() {
    let out = dir("filter").join("two_links.pcapng");
    common::pcapng::write_two_link_types(&common::fixture(SOURCE), &out);
    let mut source = FileSource::open(&out).unwrap();
    let mut udp = FrameFilter::compile("udp", source.link_type(), source.name()).unwrap();
    let mut arp = FrameFilter::compile("arp", source.link_type(), source.name()).unwrap();
    let (mut kept, mut by_link) = (0, [0usize; 2]);
    while let Some(f) = source.next_frame().unwrap() {
        if udp.matches(&f) {
            kept += 1;
            by_link[usize::from(f.link != LinkType::Ethernet)] += 1;
        }
        assert!(!(udp.matches(&f) && arp.matches(&f)));
    }
    let (_, summary) = dissect(&common::fixture(SOURCE));
    let udp_frames =
        summary.stats.frames - summary.stats.skipped_not_ip - summary.stats.skipped_not_udp;
    assert_eq!(kept, udp_frames);
    assert!(by_link[0] > 0 && by_link[1] > 0, "{by_link:?}");
}

#[test]
fn a_cut_short_pcapng_keeps_what_came_before() {
    let d = dir("cut");
    let whole = d.join("two_links.pcapng");
    common::pcapng::write_two_link_types(&common::fixture(SOURCE), &whole);
    let bytes = std::fs::read(&whole).unwrap();
    let cut = d.join("cut.pcapng");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 7]).unwrap();
    let (records, summary) = dissect(&cut);
    let err = summary.truncated.expect("the cut block is reported");
    assert!(
        err.contains("cut.pcapng") && err.contains("truncated"),
        "{err}"
    );
    assert!(!records.is_empty());
    let (all, _) = dissect(&whole);
    assert_eq!(records[..], all[..records.len()]);
}

#[test]
fn standard_input_reads_as_the_file() {
    let bin = env!("CARGO_BIN_EXE_ddshark");
    let file = common::fixture(SOURCE);
    let from_file = Command::new(bin)
        .args(["dissect", "-q", "--format", "jsonl"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(from_file.status.success());
    let mut child = Command::new(bin)
        .args(["dissect", "-q", "--format", "jsonl", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&bytes));
    let from_stdin = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(from_stdin.status.success());
    assert!(!from_file.stdout.is_empty());
    assert_eq!(from_stdin.stdout, from_file.stdout);
}

#[test]
fn files_that_are_not_captures_are_named_in_the_error() {
    let d = dir("not_captures");
    let empty = d.join("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    let text = d.join("notes.txt");
    std::fs::write(&text, b"these are not packets, just words in a file\n").unwrap();
    for (path, what) in [(&empty, "empty"), (&text, "unknown file format")] {
        let e = FileSource::open(path).err().unwrap().to_string();
        assert!(
            e.contains(&path.display().to_string()) && e.contains(what),
            "{e}"
        );
    }
    let e = FileSource::open(&d.join("absent.pcap"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("absent.pcap"), "{e}");
}

/// Hostile files: the two-link pcapng with bytes overwritten at pseudo-random places
/// (block lengths, interface ids, caplens, option lengths among them) and cut at
/// pseudo-random lengths. Every one opens or fails with an error, reads to its end or
/// to an error, and never panics or hands out a frame longer than the file.
#[test]
fn damaged_files_are_errors_not_panics() {
    let d = dir("damaged");
    let whole = d.join("two_links.pcapng");
    common::pcapng::write_two_link_types(&common::fixture(SOURCE), &whole);
    let original = std::fs::read(&whole).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let path = d.join("damaged.pcapng");
    let (mut opened, mut frames) = (0, 0u64);
    for round in 0..300 {
        let mut bytes = original.clone();
        // Damage within the first few blocks mostly, where the headers are.
        let span = if round % 2 == 0 { 512 } else { bytes.len() };
        for _ in 0..(1 + next() % 4) {
            let at = (next() as usize) % span;
            bytes[at] = next() as u8;
        }
        if round % 3 == 0 {
            bytes.truncate((next() as usize) % bytes.len());
        }
        std::fs::write(&path, &bytes).unwrap();
        let Ok(mut source) = FileSource::open(&path) else {
            continue;
        };
        opened += 1;
        while let Ok(Some(f)) = source.next_frame() {
            assert!(f.data.len() <= bytes.len());
            frames += 1;
        }
    }
    assert!(
        opened > 100 && frames > 10_000,
        "{opened} opened, {frames} frames"
    );
}

/// A pcapng block whose total length is below the 12 bytes of its type and two length
/// fields (here a process information block, found by the capture_file fuzz target) is
/// reported as malformed, naming the length; pcap-parser would subtract 12 from it.
#[test]
fn a_pcapng_block_shorter_than_its_header_is_an_error_not_a_panic() {
    fn block(kind: u32, body: &[u8]) -> Vec<u8> {
        let total = (12 + body.len()) as u32;
        [
            &kind.to_le_bytes()[..],
            &total.to_le_bytes(),
            body,
            &total.to_le_bytes(),
        ]
        .concat()
    }
    let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
    shb.extend(1u16.to_le_bytes());
    shb.extend(0u16.to_le_bytes());
    shb.extend((-1i64).to_le_bytes());
    let mut idb = 1u16.to_le_bytes().to_vec();
    idb.extend(0u16.to_le_bytes());
    idb.extend(262_144u32.to_le_bytes());
    let mut file = block(0x0a0d_0d0a, &shb);
    file.extend(block(1, &idb));
    // Process information block (0x80000001), total length 8.
    file.extend(0x8000_0001u32.to_le_bytes());
    file.extend(8u32.to_le_bytes());
    file.extend([0u8; 16]);
    let mut source = FileSource::from_bytes(file, "short-block.pcapng").unwrap();
    let err = source.next_frame().expect_err("an error").to_string();
    assert!(
        err.contains("short-block.pcapng") && err.contains("malformed block: total length 8"),
        "{err}"
    );
}
