use super::batch::ExportSeq;
use super::*;
use crate::schema::{SampleKind, TrafficType};
use rtps_dissect::{Guid, VendorId};

fn record() -> SpanRecord {
    SpanRecord {
        trace_id: [1; 16],
        span_id: [2; 8],
        kind: SampleKind::Data,
        start_ns: 1,
        end_ns: 1,
        traffic: TrafficType::User,
        topic: None,
        type_name: None,
        writer: Guid::from_bytes([3; 16]),
        sn: 1,
        fragment_starting_num: 0,
        frags_in_submessage: 1,
        fragment_size: None,
        sample_size: 1,
        payload_size: 1,
        pcp: None,
        vlan_id: None,
        vendor: VendorId([1, 16]),
        src: "127.0.0.1:7410".parse().unwrap(),
        dst: "127.0.0.1:7411".parse().unwrap(),
        domain_id: None,
        source_timestamp_ns: None,
        interface: None,
        frame: 1,
        frame_first: 1,
        ip_fragments: 1,
        submessage_index: 0,
        slot: 0,
        sample: None,
        announced_ips: None,
        export_seq: 0,
    }
}

#[test]
fn export_seq_numbers_requests_densely() {
    let mut seq = ExportSeq::default();
    let mut first = vec![record(); 3];
    let mut second = vec![record(); 2];
    seq.stamp(&mut first);
    seq.stamp(&mut second);
    let numbers: Vec<u64> = first.iter().chain(&second).map(|r| r.export_seq).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4]);
}
