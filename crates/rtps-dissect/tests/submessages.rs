//! Every RTPS 2.5 submessage and the discovery PIDs, decoded from hex written out
//! by hand from the spec's layouts (and, where noted, bytes seen in real captures).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{hexb, one, parse};
use rtps_dissect::discovery::{
    decode_discovery, DiscoveryRecord, Durability, EndpointKind, History, Liveliness, Ownership,
    Reliability,
};
use rtps_dissect::plist::ParameterList;
use rtps_dissect::rtps::{RtpsHeader, SubmessageIter};
use rtps_dissect::types::{BuiltinWriter, Locator, VendorId};
use rtps_dissect::{
    Dissector, Frame, FrameOutcome, LinkType, SkipReason, SubmessageBody, SubmessageKind,
};

const HEADER: &str = "52545053 0205 0110 0102030405060708090a0b0c";

fn message(submessages: &str) -> Vec<u8> {
    common::message(HEADER, submessages)
}

#[test]
fn header_fields() {
    let msg = message("");
    let h = RtpsHeader::parse(&msg).unwrap();
    assert_eq!(h.version, (2, 5));
    assert_eq!(h.vendor, VendorId::CYCLONE_DDS);
    assert_eq!(h.guid_prefix.to_string(), "0102030405060708090a0b0c");
    assert!(RtpsHeader::parse(&hexb("52545058 0909 0110 0102030405060708090a0b0c")).is_err());
    assert!(RtpsHeader::parse(&hexb("52545053 0205")).is_err());
}

#[test]
fn pad() {
    let msg = message("01 01 0000");
    assert_eq!(one(&msg).kind, SubmessageKind::Pad);
}

#[test]
fn acknack_little_endian_with_bitmap() {
    // reader 00000004 writer 00000003, base SN 5, 3 bits: 1,0,1 → SNs 5 and 7, count 9
    let msg = message("06 03 1c00 00000407 00000302 00000000 05000000 03000000 000000a0 09000000");
    let sm = one(&msg);
    match &sm.body() {
        SubmessageBody::AckNack {
            reader_sn_state,
            count,
            final_flag,
            ..
        } => {
            assert_eq!(reader_sn_state.iter().collect::<Vec<_>>(), vec![5, 7]);
            assert_eq!(*count, 9);
            assert!(*final_flag);
        }
        b => panic!("{b:?}"),
    }
    // without INFO_DST the writer's participant is unknown
    assert_eq!(sm.writer_guid(), None);
    assert_eq!(
        sm.reader_guid().unwrap().to_string(),
        "0102030405060708090a0b0c00000407"
    );
}

#[test]
fn acknack_addressed_by_info_dst_names_the_remote_writer() {
    let msg = message(concat!(
        "0e 01 0c00 a1a2a3a4a5a6a7a8a9aaabac",
        "06 01 1800 00000407 00000302 00000000 01000000 00000000 01000000"
    ));
    let v = parse(&msg);
    let ack = v[1].as_ref().unwrap();
    assert_eq!(
        ack.writer_guid().unwrap().to_string(),
        "a1a2a3a4a5a6a7a8a9aaabac00000302"
    );
}

#[test]
fn heartbeat_big_endian() {
    let msg = message("07 00 001c 00000000 00000302 00000000 00000001 00000000 0000000a 00000003");
    let sm = one(&msg);
    match sm.body() {
        SubmessageBody::Heartbeat {
            first_sn,
            last_sn,
            count,
            ..
        } => {
            assert_eq!((first_sn, last_sn, count), (1, 10, 3));
        }
        b => panic!("{b:?}"),
    }
    assert_eq!(
        sm.writer_guid().unwrap().to_string(),
        "0102030405060708090a0b0c00000302"
    );
}

#[test]
fn gap() {
    let msg = message("08 01 1c00 00000000 00000302 00000000 04000000 00000000 06000000 00000000");
    match one(&msg).body() {
        SubmessageBody::Gap {
            gap_start,
            gap_list,
            ..
        } => {
            assert_eq!(gap_start, 4);
            assert_eq!(gap_list.base, 6);
            assert_eq!(gap_list.iter().count(), 0);
        }
        b => panic!("{b:?}"),
    }
}

#[test]
fn info_ts_applies_to_following_data_and_invalidate_clears_it() {
    let msg = message(concat!(
        "09 01 0800 01000000 00000080", // 1.5 s
        "15 05 1c00 0000 1000 00000000 00000102 00000000 01000000 00010000 aabbccdd",
        "09 03 0000", // invalidate
        "15 05 1c00 0000 1000 00000000 00000102 00000000 02000000 00010000 aabbccdd",
    ));
    let v: Vec<_> = parse(&msg).into_iter().map(Result::unwrap).collect();
    assert_eq!(
        v[1].ctx.timestamp.and_then(|t| t.to_ns()),
        Some(1_500_000_000)
    );
    assert_eq!(v[3].ctx.timestamp, None);
}

#[test]
fn info_src_changes_the_source() {
    let msg = message(concat!(
        "0c 01 1400 00000000 0204 010f b1b2b3b4b5b6b7b8b9babbbc",
        "07 01 1c00 00000000 00000302 00000000 01000000 00000000 01000000 01000000"
    ));
    let v: Vec<_> = parse(&msg).into_iter().map(Result::unwrap).collect();
    assert_eq!(v[1].ctx.src_vendor, VendorId::FAST_DDS);
    assert_eq!(
        v[1].writer_guid().unwrap().prefix.to_string(),
        "b1b2b3b4b5b6b7b8b9babbbc"
    );
}

#[test]
fn info_reply_ip4_and_info_reply() {
    let msg = message("0d 01 0800 0a00c801 f11c0000 0f 01 0400 00000000");
    let v: Vec<_> = parse(&msg).into_iter().map(Result::unwrap).collect();
    assert_eq!(
        v[0].body(),
        SubmessageBody::InfoReplyIp4 {
            address: [0x0a, 0, 0xc8, 0x01],
            port: 7409
        }
    );
    assert_eq!(v[1].kind, SubmessageKind::InfoReply);
}

#[test]
fn nack_frag_and_heartbeat_frag() {
    let msg = message(concat!(
        "12 01 2000 00000407 00000302 00000000 07000000 02000000 02000000 00000080 05000000",
        "13 01 1800 00000000 00000302 00000000 07000000 0a000000 02000000"
    ));
    let v: Vec<_> = parse(&msg).into_iter().map(Result::unwrap).collect();
    match &v[0].body() {
        SubmessageBody::NackFrag {
            writer_sn,
            fragment_number_state,
            count,
            ..
        } => {
            assert_eq!(*writer_sn, 7);
            assert_eq!(fragment_number_state.iter().collect::<Vec<_>>(), vec![2]);
            assert_eq!(*count, 5);
        }
        b => panic!("{b:?}"),
    }
    match &v[1].body() {
        SubmessageBody::HeartbeatFrag {
            writer_sn,
            last_fragment_num,
            ..
        } => {
            assert_eq!((*writer_sn, *last_fragment_num), (7, 10));
        }
        b => panic!("{b:?}"),
    }
}

#[test]
fn data_with_inline_qos_status_info() {
    // Q|D flags, inline QoS: PID_STATUS_INFO (always big-endian value) = disposed|unregistered
    let msg = message(concat!(
        "15 07 2800 0000 1000 00000000 00000102 00000000 03000000",
        "7100 0400 00000003 0100 0000",
        "00010000 01020304"
    ));
    let sm = one(&msg);
    match &sm.body() {
        SubmessageBody::Data {
            inline_qos,
            payload,
            writer_sn,
            ..
        } => {
            assert_eq!(*writer_sn, 3);
            let st = inline_qos
                .unwrap()
                .find(0x0071)
                .unwrap()
                .status_info()
                .unwrap();
            assert_eq!(st, 3);
            assert_eq!(payload.unwrap().representation, Some(0x0001));
            assert_eq!(sm.payload_size(), Some(8));
        }
        b => panic!("{b:?}"),
    }
}

#[test]
fn data_frag_fields() {
    let msg = message(concat!(
        "16 01 2800 0000 1c00 00000000 00000102 00000000 05000000",
        "03000000 0200 0400 20000000",
        "0102030405060708"
    ));
    let sm = one(&msg);
    match &sm.body() {
        SubmessageBody::DataFrag {
            fragment_starting_num,
            fragments_in_submessage,
            fragment_size,
            sample_size,
            fragments,
            ..
        } => {
            assert_eq!(*fragment_starting_num, 3);
            assert_eq!(*fragments_in_submessage, 2);
            assert_eq!(*fragment_size, 4);
            assert_eq!(*sample_size, 32);
            assert_eq!(fragments.len(), 8);
        }
        b => panic!("{b:?}"),
    }
}

#[test]
fn security_and_vendor_submessages_are_kept_and_do_not_stop_the_rest() {
    let msg = message(concat!(
        "33 01 0400 deadbeef", // SRTPS_PREFIX, opaque
        "80 01 0400 01020304", // vendor specific
        "70 01 0000 ",         // unknown id, otnh 0 = to the end... (last)
    ));
    let v: Vec<_> = parse(&msg).into_iter().map(Result::unwrap).collect();
    assert_eq!(v[0].kind, SubmessageKind::SrtpsPrefix);
    assert!(matches!(v[0].body(), SubmessageBody::Security { .. }));
    // 0x80 from Cyclone (the header's vendor) has no meaning we know: vendor-specific.
    assert_eq!(v[1].kind, SubmessageKind::VendorSpecific(0x80));
    assert_eq!(v[1].kind.name(), "VENDOR_SPECIFIC");
    assert!(matches!(
        v[1].body(),
        SubmessageBody::VendorSpecific { known: None, .. }
    ));
    assert_eq!(v[2].kind, SubmessageKind::Unknown(0x70));
    assert_eq!(v[2].kind.name(), "UNKNOWN");
}

/// Bytes of a Fast DDS 2.9.1 statistics submessage as sent in tests/pcaps/k_fastdds.
const FASTDDS_STATISTICS: &str = "80 01 3800 \
    01000000 f31c0000 00000000 00000000 00000000 0ac80002 \
    0200046b 1e21461e 9400000000000000 e8401b0000000000 0000000000000000";

#[test]
fn vendor_submessages_take_their_meaning_from_the_sender_vendor() {
    use rtps_dissect::rtps::VendorSubmessage;
    let fast = hexb(&format!(
        "52545053 0203 010f 010f25e39f087b9800000000 {FASTDDS_STATISTICS}"
    ));
    let sm = one(&fast);
    assert_eq!(sm.kind, SubmessageKind::VendorSpecific(0x80));
    let SubmessageBody::VendorSpecific {
        known: Some(VendorSubmessage::FastDdsStatistics(st)),
        bytes,
    } = &sm.body()
    else {
        panic!("{:?}", sm.body())
    };
    assert_eq!(bytes.len(), 56);
    assert_eq!(st.destination.to_string(), "udpv4:10.200.0.2:7411");
    assert_eq!(st.timestamp.seconds, 1_795_424_258);
    assert_eq!(st.sequence, 148);
    assert_eq!(st.bytes, 0x1b_40e8);
    assert_eq!(st.bytes_high, 0);

    // The same id from RTI Connext is its CRC submessage.
    let rti = hexb("52545053 0201 0101 0102030405060708090a0b0c 80 00 0008 0000000112345678");
    let sm = one(&rti);
    match &sm.body() {
        SubmessageBody::VendorSpecific { known: Some(k), .. } => assert_eq!(k.name(), "RTI_CRC"),
        b => panic!("{b:?}"),
    }
}

#[test]
fn gap_naming_sn_zero_is_rejected() {
    // gapStart 0, gapList base 1: names no sample.
    let msg = message("08 01 1c00 00000000 00000302 00000000 00000000 00000000 01000000 00000000");
    let v = parse(&msg);
    let e = v[0].as_ref().expect_err("SN 0 names no sample");
    assert_eq!(e.kind(), SubmessageKind::Gap);
    assert_eq!(e.length, 28, "the header's length is kept");
    assert_eq!(e.writer().unwrap().to_string(), "00000302");
    // gapList base 0 is just as invalid.
    let msg = message("08 01 1c00 00000000 00000302 00000000 01000000 00000000 00000000 00000000");
    assert!(parse(&msg)[0].is_err());
}

#[test]
fn an_error_keeps_the_length_its_header_claims() {
    let msg = message("15 05 0800 0000 1000 00000000");
    let e = parse(&msg).remove(0).unwrap_err();
    assert_eq!(e.length, 8);
}

#[test]
fn a_data_cut_short_counts_only_the_bytes_present() {
    // octetsToNextHeader says 0x40 bytes, the message holds 24 + 4 of payload.
    let msg = message("15 05 4000 0000 1000 00000000 00001503 00000000 01000000 00010000 aabbccdd");
    let sm = one(&msg);
    assert!(sm.truncated);
    assert_eq!(sm.length, 0x40);
    assert_eq!(sm.payload_size(), Some(8));
}

#[test]
fn a_snaplen_cut_data_counts_its_bytes_on_the_wire() {
    let msg = message("15 05 4000 0000 1000 00000000 00001503 00000000 01000000 00010000 aabbccdd");
    let h = RtpsHeader::parse(&msg).unwrap();
    // The datagram held the whole 0x40-byte submessage; the capture kept less.
    let wire = 20 + 4 + 0x40;
    let sm = SubmessageIter::with_wire_len(&msg, &h, wire)
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(sm.payload_size(), Some(0x40 - 20));
}

#[test]
fn rti_ping_is_counted_apart_not_malformed() {
    let f = udp_frame(&hexb("52545053 0201 0101 4e444453 50494e47"));
    let mut d = Dissector::default();
    let out = d.process(&Frame {
        number: 1,
        ts_ns: 1,
        link: LinkType::Ethernet,
        data: &f,
        orig_len: f.len() as u32,
    });
    assert!(matches!(out, FrameOutcome::Skipped(SkipReason::RtiPing)));
    let st = d.stats();
    assert_eq!((st.rti_pings, st.malformed), (1, 0));
    assert!(st.reconciles());
}

#[test]
fn a_bad_submessage_does_not_lose_the_others() {
    // DATA with octetsToNextHeader 8 (too short for its fixed fields), then a HEARTBEAT
    let msg = message(concat!(
        "15 05 0800 0000 1000 00000000",
        "07 01 1c00 00000000 00000302 00000000 01000000 00000000 02000000 01000000"
    ));
    let v = parse(&msg);
    assert!(v[0].is_err());
    assert_eq!(
        v[0].as_ref().unwrap_err().reader().map(|r| r.to_string()),
        Some("00000000".into())
    );
    assert!(matches!(
        v[1].as_ref().unwrap().body(),
        SubmessageBody::Heartbeat { last_sn: 2, .. }
    ));
}

#[test]
fn length_past_the_end_is_decoded_lax_and_marked() {
    let msg = message("07 01 e803 00000000 00000302 00000000 01000000 00000000 05000000 01000000");
    let sm = one(&msg);
    assert!(sm.truncated);
    assert_eq!(sm.length, 1000);
}

#[test]
fn a_heartbeat_cut_short_still_names_the_sns_it_holds() {
    // Length 1000, 24 bytes present: the count is missing, both SNs are there (tshark
    // shows them and flags the submessage malformed).
    let msg = message("07 01 e803 00000000 00000302 00000000 01000000 00000000 05000000");
    let mut v = parse(&msg);
    assert_eq!(v.len(), 1);
    let e = v.remove(0).unwrap_err();
    assert!(e.truncated());
    assert_eq!(e.length, 1000);
    assert_eq!(e.body_bytes().len(), 24);
    assert_eq!(e.first_last_sns(), (Some(1), Some(5)));
    assert_eq!(e.count(), None);
    assert_eq!(e.writer().unwrap().to_string(), "00000302");
    // Cut inside lastSN: only firstSN is there.
    let msg = message("07 01 e803 00000000 00000302 00000000 01000000 00000000");
    let e = parse(&msg).remove(0).unwrap_err();
    assert_eq!(e.first_last_sns(), (Some(1), None));
    // A DATA_FRAG cut inside its writerSN keeps its entity ids only.
    let msg = message("16 01 e803 0000 1c00 00000000 00000302 00000000");
    let e = parse(&msg).remove(0).unwrap_err();
    assert!(e.truncated());
    assert_eq!(e.writer().unwrap().to_string(), "00000302");
    assert_eq!(e.writer_sn(), None);
}

fn spdp_plist(little: bool) -> Vec<u8> {
    // PID_PARTICIPANT_GUID, PID_PROTOCOL_VERSION, PID_VENDORID, PID_DOMAIN_ID,
    // PID_ENTITY_NAME "talker", PID_PARTICIPANT_LEASE_DURATION 10 s,
    // PID_DEFAULT_UNICAST_LOCATOR udpv4 10.0.0.1:7411, shm locator, Cyclone 0x8007, sentinel
    let le = "\
        5000 1000 0102030405060708090a0b0c 000001c1\
        1500 0400 0205 0000\
        1600 0400 0110 0000\
        0f00 0400 2a000000\
        6200 0c00 07000000 74616c6b657200 00\
        0200 0800 0a000000 00000000\
        3100 1800 01000000 f31c0000 00000000000000000000000 00a000001\
        3100 1800 10000000 00000000 000000000000000000000000 00000001\
        0780 0400 00000000\
        0100 0000";
    let s: String = le.split_whitespace().collect();
    let mut bytes = hexb(&s);
    if !little {
        swap_plist(&mut bytes);
    }
    bytes
}

/// Turn a little-endian PL into big-endian by swapping pid/len and 4-byte ints where the
/// test layout has them (u32 fields only; GUIDs, versions and strings' bytes unchanged).
fn swap_plist(b: &mut [u8]) {
    let mut off = 0;
    while off + 4 <= b.len() {
        let pid = u16::from_le_bytes([b[off], b[off + 1]]);
        let len = u16::from_le_bytes([b[off + 2], b[off + 3]]) as usize;
        b[off..off + 2].copy_from_slice(&pid.to_be_bytes());
        b[off + 2..off + 4].copy_from_slice(&(len as u16).to_be_bytes());
        let v = off + 4;
        let swap4 = |b: &mut [u8], at: usize| b[at..at + 4].reverse();
        match pid {
            0x000f | 0x0062 => swap4(b, v),
            0x0002 => {
                swap4(b, v);
                swap4(b, v + 4)
            }
            0x0031 => {
                swap4(b, v);
                swap4(b, v + 4)
            }
            _ => {}
        }
        if pid == 1 {
            break;
        }
        off = v + len;
    }
}

#[test]
fn spdp_participant_both_endiannesses() {
    for little in [true, false] {
        let pl = spdp_plist(little);
        let rec = decode_discovery(
            BuiltinWriter::Participant,
            VendorId::CYCLONE_DDS,
            Some(ParameterList::new(&pl, little)),
            0,
            None,
        );
        let Some(DiscoveryRecord::Participant(p)) = rec else {
            panic!("{rec:?}")
        };
        assert_eq!(p.guid_prefix.to_string(), "0102030405060708090a0b0c");
        assert_eq!(p.protocol_version, Some((2, 5)));
        assert_eq!(p.vendor, Some(VendorId::CYCLONE_DDS));
        assert_eq!(p.domain_id, Some(42));
        assert_eq!(p.entity_name.as_deref(), Some("talker"));
        assert_eq!(p.lease_ns, Some(Some(10_000_000_000)));
        assert_eq!(p.default_unicast.len(), 2);
        assert_eq!(p.default_unicast[0].to_string(), "udpv4:10.0.0.1:7411");
        assert!(p.default_unicast[1].is_shared_memory());
        assert!(!p.shared_memory_only());
        assert_eq!(
            p.vendor_pids,
            vec![(0x8007, "ADLINK_PARTICIPANT_VERSION_INFO")]
        );
    }
}

#[test]
fn sedp_publication_with_qos() {
    let s: String = "\
        5a00 1000 0102030405060708090a0b0c 00001503\
        5000 1000 0102030405060708090a0b0c 000001c1\
        0500 1000 0b000000 72742f636861747465720000\
        0700 2400 1d000000 7374645f6d7367733a3a6d73673a3a6464735f3a3a537472696e675f00000000\
        1a00 0c00 02000000 00000000 9a999919\
        1d00 0400 01000000\
        4000 0800 00000000 07000000\
        2300 0800 01000000 00000000\
        1b00 0c00 01000000 ffffff7f ffffffff\
        1f00 0400 01000000\
        2900 1400 02000000 02000000 61000000 02000000 6200 0000\
        7300 0800 02000000 00000200\
        2f00 1800 10000000 00000000 000000000000000000000000 00000001\
        0100 0000"
        .split_whitespace()
        .collect();
    let pl = hexb(&s);
    let rec = decode_discovery(
        BuiltinWriter::Publication,
        VendorId::CYCLONE_DDS,
        Some(ParameterList::new(&pl, true)),
        0,
        None,
    );
    let Some(DiscoveryRecord::Endpoint(e)) = rec else {
        panic!("{rec:?}")
    };
    assert_eq!(e.kind, EndpointKind::Writer);
    assert_eq!(e.guid.to_string(), "0102030405060708090a0b0c00001503");
    assert_eq!(e.topic, "rt/chatter");
    assert_eq!(e.type_name, "std_msgs::msg::dds_::String_");
    assert_eq!(e.qos.reliability, Some(Reliability::Reliable));
    assert_eq!(e.qos.durability, Some(Durability::TransientLocal));
    assert_eq!(e.qos.history, Some(History::KeepLast(7)));
    assert_eq!(e.qos.deadline_ns, Some(Some(1_000_000_000)));
    assert_eq!(e.qos.liveliness, Some(Liveliness::ManualByParticipant));
    assert_eq!(e.qos.liveliness_lease_ns, Some(None));
    assert_eq!(e.qos.ownership, Some(Ownership::Exclusive));
    assert_eq!(e.qos.partitions, vec!["a".to_string(), "b".to_string()]);
    assert_eq!(e.qos.data_representation, vec![0, 2]);
    assert!(e.shared_memory_only());
    assert_eq!(e.unicast_locators[0].kind, Locator::KIND_SHM);
}

#[test]
fn sedp_dispose_by_key_hash() {
    let rec = decode_discovery(
        BuiltinWriter::Publication,
        VendorId::CYCLONE_DDS,
        None,
        3,
        None,
    );
    assert!(matches!(
        rec,
        Some(DiscoveryRecord::Gone { status_info: 3, .. })
    ));
}

fn udp_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = hexb("ffffffffffff 020000000001 0800");
    let total = 20 + 8 + payload.len();
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[10, 0, 0, 1, 239, 255, 0, 1]);
    let ulen = 8 + payload.len();
    f.extend_from_slice(&[0x1c, 0xe8, 0x1c, 0xe8, (ulen >> 8) as u8, ulen as u8, 0, 0]);
    f.extend_from_slice(payload);
    f
}

#[test]
fn sedp_announcement_names_later_data() {
    // A Cyclone SEDP publication DATA (PL_CDR_LE) for rt/chatter, then a DATA of that writer.
    let plist: String = "\
        5a00 1000 0102030405060708090a0b0c 00001503\
        0500 1000 0b000000 72742f636861747465720000\
        0700 0800 04000000 54797000\
        0100 0000"
        .split_whitespace()
        .collect();
    let sedp = message(&format!(
        "15 05 {:02x}00 0000 1000 00000000 000003c2 00000000 01000000 00030000 {plist}",
        20 + 4 + plist.len() / 2
    ));
    let data =
        message("15 05 1c00 0000 1000 00000000 00001503 00000000 01000000 00010000 aabbccdd");
    let f1 = udp_frame(&sedp);
    let f2 = udp_frame(&data);
    let mut d = Dissector::default();
    let FrameOutcome::Rtps(dg) = d.process(&Frame {
        number: 1,
        ts_ns: 1,
        link: LinkType::Ethernet,
        data: &f1,
        orig_len: f1.len() as u32,
    }) else {
        panic!("not rtps")
    };
    assert_eq!(dg.discovery.len(), 1);
    let FrameOutcome::Rtps(dg) = d.process(&Frame {
        number: 2,
        ts_ns: 2,
        link: LinkType::Ethernet,
        data: &f2,
        orig_len: f2.len() as u32,
    }) else {
        panic!("not rtps")
    };
    let sm = dg.submessages[0].as_ref().unwrap();
    let info = dg.topic_of(&sm.writer_guid().unwrap()).unwrap();
    assert_eq!(&*info.topic, "rt/chatter");
    assert_eq!(&*info.type_name, "Typ");
    assert!(d.stats().reconciles());
}

#[test]
fn non_rtps_udp_is_skipped() {
    let f = udp_frame(b"hello, not rtps");
    let mut d = Dissector::default();
    let out = d.process(&Frame {
        number: 1,
        ts_ns: 1,
        link: LinkType::Ethernet,
        data: &f,
        orig_len: f.len() as u32,
    });
    assert!(matches!(out, FrameOutcome::Skipped(SkipReason::NotRtps)));
}

#[test]
fn discovery_sent_as_data_frag_is_reassembled() {
    let plist: String = "\
        5a00 1000 0102030405060708090a0b0c 00001503\
        0500 1000 0b000000 72742f636861747465720000\
        0700 0800 04000000 54797000\
        0100 0000"
        .split_whitespace()
        .collect();
    let mut sample = hexb("00030000");
    sample.extend(hexb(&plist));
    let size = sample.len(); // 60 bytes, sent as fragments of 32
    let frag = |num: u32, bytes: &[u8]| {
        message(&format!(
            "16 01 {:02x}00 0000 1c00 00000000 000003c2 00000000 07000000 {} 0100 2000 {} {}",
            32 + bytes.len(),
            hex::encode(num.to_le_bytes()),
            hex::encode((size as u32).to_le_bytes()),
            hex::encode(bytes)
        ))
    };
    let second = udp_frame(&frag(2, &sample[32..]));
    let first = udp_frame(&frag(1, &sample[..32]));
    let mut d = Dissector::default();
    // the second fragment first: nothing yet
    let FrameOutcome::Rtps(dg) = d.process(&Frame {
        number: 1,
        ts_ns: 1,
        link: LinkType::Ethernet,
        data: &second,
        orig_len: second.len() as u32,
    }) else {
        panic!("not rtps")
    };
    assert!(dg.discovery.is_empty());
    let FrameOutcome::Rtps(dg) = d.process(&Frame {
        number: 2,
        ts_ns: 2,
        link: LinkType::Ethernet,
        data: &first,
        orig_len: first.len() as u32,
    }) else {
        panic!("not rtps")
    };
    match &dg.discovery[..] {
        [DiscoveryRecord::Endpoint(e)] => assert_eq!(e.topic, "rt/chatter"),
        other => panic!("{other:?}"),
    }
    assert_eq!(d.stats().discovery_fragments.reassembled, 1);
}

/// `sample_piece` reads DATA and DATA_FRAG without inline QoS from their fixed fields
/// alone: over every flag combination, body lengths up to 64 bytes (short ones too),
/// cut and whole captures, and bytes whose octetsToInlineQos is often small, it gives
/// what the decoded body and `payload_size` give.
#[test]
fn sample_piece_agrees_with_the_decoded_body() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut pieces = 0u32;
    for id in [0x15u8, 0x16] {
        for flags in 0..=255u8 {
            for len in 0..64usize {
                let mut msg = hexb(HEADER);
                msg.extend([id, flags]);
                let claimed = if next() % 4 == 0 { len + 8 } else { len } as u16;
                if flags & 1 == 1 {
                    msg.extend(claimed.to_le_bytes());
                } else {
                    msg.extend(claimed.to_be_bytes());
                }
                msg.extend((0..len).map(|_| {
                    let r = next();
                    if r % 3 == 0 {
                        (r >> 8) as u8
                    } else {
                        ((r >> 8) % 5) as u8
                    }
                }));
                let h = RtpsHeader::parse(&msg).unwrap();
                let wire = msg.len() + usize::from(next() % 2 == 0) * 8;
                for sm in SubmessageIter::with_wire_len(&msg, &h, wire).flatten() {
                    let expected = match sm.body() {
                        SubmessageBody::Data {
                            writer, writer_sn, ..
                        } => Some((writer, writer_sn, None, sm.payload_size())),
                        SubmessageBody::DataFrag {
                            writer,
                            writer_sn,
                            fragment_starting_num,
                            fragments_in_submessage,
                            fragment_size,
                            sample_size,
                            ..
                        } => Some((
                            writer,
                            writer_sn,
                            Some((
                                fragment_starting_num,
                                fragments_in_submessage,
                                fragment_size,
                                sample_size,
                            )),
                            sm.payload_size(),
                        )),
                        _ => None,
                    };
                    let got = sm.sample_piece().map(|p| {
                        (
                            p.writer.entity,
                            p.sn,
                            p.fragments
                                .map(|r| (r.start, r.count, r.fragment_size, r.sample_size)),
                            Some(p.payload_size as usize),
                        )
                    });
                    assert_eq!(got, expected, "flags {flags:#04x}, {msg:02x?}");
                    if let Some(p) = sm.sample_piece() {
                        pieces += 1;
                        let whole = p
                            .fragments
                            .map_or(p.payload_size, |r| u64::from(r.sample_size));
                        assert_eq!(p.sample_size, whole);
                    }
                }
            }
        }
    }
    assert!(pieces > 1_000, "{pieces} pieces");
}
