//! Whole frames through the dissector. The first input byte picks the link type,
//! so one corpus exercises Ethernet/VLAN, cooked, loopback and raw IP; several
//! frames per input (split on a 4-byte length prefix) exercise IP reassembly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtps_dissect::{Dissector, DissectorConfig, Frame, LinkType};

const LINKS: [u32; 8] = [1, 0, 101, 108, 113, 276, 228, 229];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, mut rest)) = data.split_first() else { return };
    let link = LinkType::from_dlt(LINKS[usize::from(selector) % LINKS.len()]);
    let mut config = DissectorConfig::default();
    config.fragments.max_datagrams = 8;
    config.fragments.max_bytes = 1 << 20;
    config.tcp.max_streams = 4;
    config.tcp.max_bytes = 1 << 20;
    config.tcp.max_ahead_bytes = 1 << 16;
    let mut dissector = Dissector::new(config);
    let mut number = 0u64;
    while !rest.is_empty() {
        let (frame, tail) = if rest.len() >= 2 {
            let len = usize::from(u16::from_le_bytes([rest[0], rest[1]])).min(rest.len() - 2);
            (&rest[2..2 + len], &rest[2 + len..])
        } else {
            (rest, &[][..])
        };
        rest = tail;
        number += 1;
        let f = Frame { number, ts_ns: number * 1000, link, data: frame, orig_len: frame.len() as u32 };
        let outcome = dissector.process(&f);
        for d in outcome.datagrams() {
            for sm in d.submessages.iter().flatten() {
                // Bodies are checked on the walk and decoded on demand: whatever the
                // walk let through must decode.
                assert!(rtps_dissect::rtps::parse_body(
                    sm.kind,
                    sm.flags,
                    sm.body_bytes(),
                    sm.ctx.src_vendor
                )
                .is_ok());
                let _ = sm.sample_piece();
                // (DATA_BATCH: every SampleInfo walked, SNs computed)
                let _ = sm.sample_pieces().count();
                let _ = sm.session_sn();
                let _ = sm.heartbeat_sns();
                let _ = sm.writer_guid();
                let _ = sm.payload_size();
                if let rtps_dissect::SubmessageBody::AckNack { reader_sn_state, .. } = &sm.body() {
                    let _ = reader_sn_state.iter().count();
                }
            }
            for e in d.submessages.iter().filter_map(|r| r.as_ref().err()) {
                // Lax reads of what an undecodable submessage holds.
                let _ = (e.first_last_sns(), e.count(), e.writer_sn(), e.writer_guid());
            }
        }
    }
    dissector.finish();
    assert!(dissector.stats().reconciles());
});
