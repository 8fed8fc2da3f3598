//! RTI's DATA_BATCH, HEARTBEAT_BATCH and DATA_SESSION bodies straight into the body
//! decoder: the first byte picks the kind and flags, the rest is the body. A body that
//! decodes must walk its samples without panicking, and a walk never yields more
//! samples than the SampleInfo list can hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtps_dissect::rtps::parse_body;
use rtps_dissect::{SubmessageBody, SubmessageKind, VendorId};

const IDS: [u8; 3] = [0x18, 0x19, 0x14];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let kind = SubmessageKind::from_id(IDS[usize::from(selector & 3) % IDS.len()]);
    let flags = selector >> 2;
    if let Ok(SubmessageBody::DataBatch { samples, .. }) =
        parse_body(kind, flags, body, VendorId::RTI_CONNEXT)
    {
        // Each SampleInfo takes at least 8 bytes.
        assert!(samples.iter().count() <= body.len() / 8);
        for s in samples.iter() {
            assert!(s.data.len() <= s.size as usize);
        }
    }
});
