//! System tier: a pcapng captured on interfaces of two link types (Ethernet with ns
//! timestamps, Linux cooked with µs, as Wireshark writes a capture on several
//! interfaces; made by common/pcapng.rs) is read as tshark reads it: every frame's
//! time and every RTPS submessage, frame by frame. (libpcap refused such a file.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use ddshark::capture::file::FileSource;
use ddshark::dissect::dissect_source;

#[test]
fn a_two_link_type_pcapng_reads_as_tshark_reads_it() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("capture_tshark");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two_links.pcapng");
    let frames =
        common::pcapng::write_two_link_types(&common::fixture("a_small_reliable/a.pcap"), &file);
    let file_arg = file.to_str().unwrap();
    let stdout = common::tshark([
        "-n",
        "-T",
        "fields",
        "-E",
        "occurrence=a",
        "-E",
        "separator=/t",
        "-e",
        "frame.number",
        "-e",
        "frame.interface_id",
        "-e",
        "frame.time_epoch",
        "-e",
        "rtps.sm.id",
        "-r",
        file_arg,
    ]);
    // frame → (time, submessage ids) as tshark shows them.
    let mut theirs: BTreeMap<u64, (u64, Vec<u8>)> = BTreeMap::new();
    let mut interfaces = [0usize; 2];
    for line in stdout.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let frame: u64 = cols[0].parse().unwrap();
        interfaces[cols[1].parse::<usize>().unwrap()] += 1;
        let ids = cols[3]
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| u8::from_str_radix(s.trim_start_matches("0x"), 16).unwrap())
            .collect();
        theirs.insert(frame, (common::ns_of(cols[2]).unwrap(), ids));
    }
    assert_eq!(theirs.len() as u64, frames);
    assert!(interfaces[0] > 100 && interfaces[1] > 100, "{interfaces:?}");
    let mut source = FileSource::open(&file).unwrap();
    let mut ours: BTreeMap<u64, (u64, Vec<u8>)> = BTreeMap::new();
    dissect_source(&mut source, |r| {
        let e = ours.entry(r.frame).or_insert((r.ts_last_ns, Vec::new()));
        e.1.push(r.submessage_id);
        Ok(true)
    })
    .unwrap();
    let with_rtps: BTreeMap<u64, (u64, Vec<u8>)> = theirs
        .into_iter()
        .filter(|(_, (_, ids))| !ids.is_empty())
        .collect();
    assert!(with_rtps.len() > 200);
    assert_eq!(ours, with_rtps);
}
