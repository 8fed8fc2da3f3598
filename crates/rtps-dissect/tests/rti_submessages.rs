//! RTI Connext's DATA_BATCH (0x18), HEARTBEAT_BATCH (0x19) and DATA_SESSION (0x14),
//! decoded from messages written out byte by byte from the documented layouts (the ones
//! Wireshark's RTPS dissector decodes; tshark 4.0 agrees with every value checked here).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{one, parse};
use rtps_dissect::{Submessage, SubmessageBody, SubmessageKind};

const HEADER: &str = "52545053 0201 0101 0102030405060708090a0b0c";

fn message(submessages: &str) -> Vec<u8> {
    common::message(HEADER, submessages)
}

/// (sn, size) of every sample piece of a submessage.
fn pieces(sm: &Submessage<'_>) -> Vec<(i64, u64)> {
    sm.sample_pieces().map(|p| (p.sn, p.sample_size)).collect()
}

/// Little-endian DATA_BATCH of writer 00000102: batchSN 1, firstSampleSN 1, three
/// samples of 8, 12 and 4 bytes without offsetSN (SNs 1, 2, 3).
const BATCH_LE: &str = concat!(
    "18 01 5c00",
    "0000 2000",         // extraFlags, octetsToInlineQos 32
    "00000000 00000102", // reader, writer
    "00000000 01000000", // batchSN 1
    "00000000 01000000", // firstSampleSN 1
    "02000000",          // offsetToLastSampleSN 2
    "03000000",          // batchSampleCount 3
    "18000000",          // octetsToSLEncapsulationId 24
    // SampleInfo: flags (big-endian, D), octetsToInlineQos, serializedDataLength
    "0008 0000 08000000",
    "0008 0000 0c000000",
    "0008 0000 04000000",
    "0001 0000", // CDR_LE
    "4040404040404040 414141414141414141414141 42424242",
);

#[test]
fn data_batch_little_endian_every_sample_with_its_sn_and_size() {
    let msg = message(BATCH_LE);
    let sm = one(&msg);
    assert_eq!(sm.kind, SubmessageKind::DataBatch);
    assert_eq!(sm.kind.name(), "DATA_BATCH");
    assert_eq!(sm.writer_sn(), Some(1), "the batch SN");
    assert_eq!(pieces(&sm), vec![(1, 8), (2, 12), (3, 4)]);
    assert!(sm.sample_pieces().all(|p| p.fragments.is_none()
        && p.payload_size == p.sample_size
        && p.writer.to_string() == "0102030405060708090a0b0c00000102"));
    let SubmessageBody::DataBatch {
        batch_sn,
        first_sample_sn,
        offset_to_last_sample_sn,
        sample_count,
        inline_qos,
        samples,
        ..
    } = sm.body()
    else {
        panic!("{:?}", sm.body())
    };
    assert_eq!((batch_sn, first_sample_sn), (1, 1));
    assert_eq!((offset_to_last_sample_sn, sample_count), (2, 3));
    assert!(inline_qos.is_none());
    let data: Vec<&[u8]> = samples.iter().map(|s| s.data).collect();
    assert_eq!(data, vec![&[0x40; 8][..], &[0x41; 12][..], &[0x42; 4][..]]);
}

#[test]
fn data_batch_big_endian_with_offset_sns() {
    // firstSampleSN 10, two samples with offsetSN 0 and 2: SNs 10 and 12.
    let msg = message(concat!(
        "18 00 0054",
        "0000 0020",
        "00000000 00000102",
        "00000000 0000000a",
        "00000000 0000000a",
        "00000002 00000002",
        "00000018",
        "000c 0000 00000008 00000000", // D|O, length 8, offsetSN 0
        "000c 0000 00000008 00000002", // D|O, length 8, offsetSN 2
        "0000 0000",
        "4040404040404040 4141414141414141",
    ));
    assert_eq!(pieces(&one(&msg)), vec![(10, 8), (12, 8)]);
}

#[test]
fn data_batch_sample_info_timestamp_inline_qos_and_key() {
    // Batch inline QoS (Q) with one PID_STATUS_INFO; sample 0 with a timestamp (T),
    // sample 1 with its own inline QoS (Q) and a key (K), sample 2 after it: SN 7, 8, 9.
    let msg = message(concat!(
        "18 03 7000",
        "0000 2000",
        "00000000 00000102",
        "00000000 07000000",
        "00000000 07000000",
        "02000000 03000000",
        "71000400 00000001 01000000", // batchInlineQos: STATUS_INFO, sentinel
        "2c000000",                   // octetsToSLEncapsulationId 44
        "0009 0000 04000000 11000000 00000080", // D|T, 4 bytes, timestamp 17.5 s
        "002a 0000 04000000 71000400 00000002 01000000", // K|D|Q, 4 bytes, inline QoS
        "0008 0000 04000000",
        "0001 0000",
        "aaaaaaaa bbbbbbbb cccccccc",
    ));
    let sm = one(&msg);
    let SubmessageBody::DataBatch {
        inline_qos,
        samples,
        ..
    } = sm.body()
    else {
        panic!("{:?}", sm.body())
    };
    assert!(inline_qos.is_some());
    let s: Vec<_> = samples.iter().collect();
    assert_eq!(s.len(), 3);
    assert_eq!(s.iter().map(|x| x.sn).collect::<Vec<_>>(), vec![7, 8, 9]);
    assert_eq!(s[0].timestamp.unwrap().seconds, 17);
    assert_eq!(s[0].timestamp.unwrap().to_ns(), Some(17_500_000_000));
    assert!(s[1].key && !s[0].key && !s[2].key);
    assert!(s[1].inline_qos.is_some());
    assert_eq!(s[2].data, &[0xcc; 4][..]);
}

#[test]
fn data_batch_cut_short_counts_every_announced_sample() {
    // The length claims 0x5c bytes; the capture holds the SampleInfo list and part of
    // the first sample: every sample is still counted with its announced size.
    let full = message(BATCH_LE);
    let msg = &full[..full.len() - 20];
    let sm = one(msg);
    assert!(sm.truncated);
    assert_eq!(pieces(&sm), vec![(1, 8), (2, 12), (3, 4)]);
    // Cut inside the SampleInfo list: undecodable, the fixed fields kept.
    let msg = &full[..20 + 4 + 52];
    let e = parse(msg).remove(0).unwrap_err();
    assert!(e.truncated());
    assert_eq!(e.writer().unwrap().to_string(), "00000102");
    assert_eq!(e.first_last_sns(), (Some(1), Some(3)));
}

#[test]
fn data_batch_malformed_lists_are_errors_not_panics() {
    // octetsToSLEncapsulationId past the end of the submessage.
    let msg = message(concat!(
        "18 01 2800 0000 2000 00000000 00000102 00000000 01000000",
        "00000000 01000000 00000000 01000000 ffffff7f",
    ));
    assert!(parse(&msg)[0].is_err());
    // A SampleInfo list that ends inside a SampleInfo.
    let msg = message(concat!(
        "18 01 2c00 0000 2000 00000000 00000102 00000000 01000000",
        "00000000 01000000 00000000 01000000 04000000 0008 0000",
    ));
    assert!(parse(&msg)[0].is_err());
    // A sample inline QoS without its sentinel.
    let msg = message(concat!(
        "18 01 4400 0000 2000 00000000 00000102 00000000 01000000",
        "00000000 01000000 00000000 01000000 10000000 000a 0000 00000000 71000400 00000001",
    ));
    assert!(parse(&msg)[0].is_err());
    // An offsetSN that overflows the SN.
    let msg = message(concat!(
        "18 01 3800 0000 2000 00000000 00000102 00000000 01000000",
        "ffffff7f ffffffff 00000000 01000000 0c000000 000c 0000 00000000 05000000 0000 0000",
    ));
    assert!(parse(&msg)[0].is_err());
}

#[test]
fn heartbeat_batch_names_the_sample_sns() {
    let msg = message(concat!(
        "19 01 2c00",
        "00000000 00000102",
        "00000000 01000000 00000000 0a000000", // firstBatchSN 1, lastBatchSN 10
        "00000000 01000000 00000000 0c000000", // firstSN 1, lastSN 12
        "03000000",
    ));
    let sm = one(&msg);
    assert_eq!(sm.kind.name(), "HEARTBEAT_BATCH");
    assert_eq!(sm.heartbeat_sns(), Some((1, 12)));
    assert_eq!(
        sm.writer_guid().unwrap().to_string(),
        "0102030405060708090a0b0c00000102"
    );
    assert!(matches!(
        sm.body(),
        SubmessageBody::HeartbeatBatch {
            first_batch_sn: 1,
            last_batch_sn: 10,
            first_sn: 1,
            last_sn: 12,
            count: 3,
            ..
        }
    ));
    assert_eq!(pieces(&sm), vec![]);
    // Cut after lastSN: the SNs are still named.
    let full = message(concat!(
        "19 01 2c00 00000000 00000102 00000000 01000000 00000000 0a000000",
        "00000000 01000000 00000000 0c000000",
    ));
    let e = parse(&full).remove(0).unwrap_err();
    assert_eq!(e.first_last_sns(), (Some(1), Some(12)));
    assert_eq!(e.count(), None);
}

#[test]
fn data_session_is_data_under_the_writer_sn() {
    // DATA_SESSION (D): session SN 5, the writer's ("virtual") SN 17, 12 payload bytes.
    let msg = message(concat!(
        "14 05 2800",
        "0000 1800",
        "00000000 00000102",
        "00000000 05000000",
        "00000000 11000000",
        "00010000 6162636465666768",
    ));
    let sm = one(&msg);
    assert_eq!(sm.kind.name(), "DATA_SESSION");
    assert_eq!(sm.writer_sn(), Some(17));
    assert_eq!(sm.session_sn(), Some(5));
    assert_eq!(pieces(&sm), vec![(17, 12)]);
    let SubmessageBody::Data {
        writer_sn, payload, ..
    } = sm.body()
    else {
        panic!("{:?}", sm.body())
    };
    assert_eq!(writer_sn, 17);
    assert_eq!(payload.unwrap().representation, Some(0x0001));
    // Too short for both SNs: an error keeping the ids.
    let msg = message("14 05 1400 0000 1800 00000000 00000102 00000000 05000000");
    let e = parse(&msg).remove(0).unwrap_err();
    assert_eq!(e.writer().unwrap().to_string(), "00000102");
    assert_eq!(e.writer_sn(), None);
}

#[test]
fn a_batch_does_not_stop_the_submessages_after_it() {
    let msg = message(&format!(
        "{BATCH_LE}07 01 1c00 00000000 00000102 00000000 01000000 00000000 03000000 01000000"
    ));
    let v = parse(&msg);
    assert_eq!(v.len(), 2);
    assert_eq!(v[1].as_ref().unwrap().heartbeat_sns(), Some((1, 3)));
}
