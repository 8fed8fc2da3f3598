//! ParameterLists in both endiannesses, decoded as every kind of discovery record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtps_dissect::discovery::decode_discovery;
use rtps_dissect::plist::ParameterList;
use rtps_dissect::types::{BuiltinWriter, VendorId};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let little = selector & 1 == 1;
    let list = ParameterList::new(body, little);
    let _ = list.byte_len();
    for p in list.iter().flatten() {
        let _ = p.string();
        let _ = p.string_seq();
        let _ = p.locator();
        let _ = p.duration_ns(0);
    }
    let vendor = VendorId([0x01, selector >> 4]);
    for role in [
        BuiltinWriter::Participant,
        BuiltinWriter::Publication,
        BuiltinWriter::Subscription,
        BuiltinWriter::Topic,
    ] {
        let _ = decode_discovery(role, vendor, Some(list), u32::from(selector >> 6), None);
    }
});
