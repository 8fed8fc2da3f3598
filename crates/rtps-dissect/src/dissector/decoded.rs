//! The discovery content of a datagram's submessages, and the cache of discovery DATA
//! decoded lately.

use super::*;
use crate::types::BuiltinWriter;

/// What a discovery DATA's record is decoded from.
struct DecodeInput<'a> {
    writer: Guid,
    sn: SequenceNumber,
    vendor: VendorId,
    status: u32,
    key: Option<Guid>,
    payload: Option<&'a [u8]>,
}

/// Discovery DATA decoded lately, by writer and SN, in a fixed number of slots (a
/// newer entry takes its slot's place): periodic SPDP announcements and SEDP repairs
/// repeat the same bytes, and cloning the record costs a fraction of decoding it again.
#[derive(Default)]
pub(super) struct DecodedDiscovery {
    slots: Vec<Option<Decoded>>,
}

struct Decoded {
    writer: Guid,
    sn: SequenceNumber,
    vendor: VendorId,
    status: u32,
    key: Option<Guid>,
    payload: Option<Vec<u8>>,
    record: Option<DiscoveryRecord>,
}

impl Decoded {
    fn matches(&self, i: &DecodeInput<'_>) -> bool {
        self.writer == i.writer
            && self.sn == i.sn
            && self.vendor == i.vendor
            && self.status == i.status
            && self.key == i.key
            && self.payload.as_deref() == i.payload
    }
}

/// Slots of [`DecodedDiscovery`].
const DECODED_SLOTS: usize = 64;
/// Larger payloads are decoded every time (the cache holds at most 64 × 4 KiB).
const DECODED_MAX_PAYLOAD: usize = 4096;

impl DecodedDiscovery {
    fn get_or_decode(
        &mut self,
        input: &DecodeInput<'_>,
        decode: impl FnOnce() -> Option<DiscoveryRecord>,
    ) -> Option<DiscoveryRecord> {
        if input.payload.map_or(0, <[u8]>::len) > DECODED_MAX_PAYLOAD {
            return decode();
        }
        if self.slots.is_empty() {
            self.slots.resize_with(DECODED_SLOTS, || None);
        }
        // A fixed seed: which entries share a slot, and so what a replay costs, is the
        // same on every run (a crafted collision only costs a decode).
        let index = (std::hash::BuildHasher::hash_one(
            &foldhash::fast::FixedState::with_seed(0),
            (input.writer, input.sn),
        ) as usize)
            % DECODED_SLOTS;
        let Some(slot) = self.slots.get_mut(index) else {
            return decode();
        };
        if let Some(hit) = slot.as_ref().filter(|d| d.matches(input)) {
            return hit.record.clone();
        }
        let record = decode();
        *slot = Some(Decoded {
            writer: input.writer,
            sn: input.sn,
            vendor: input.vendor,
            status: input.status,
            key: input.key,
            payload: input.payload.map(<[u8]>::to_vec),
            record: record.clone(),
        });
        record
    }
}

/// The discovery records of one message's submessages; the endpoints' topics go into
/// `topics`. `list` gives the list to fill, taken when the first record comes.
#[inline]
pub(super) fn discovery_records(
    submessages: &[Result<Submessage<'_>, SubmessageError<'_>>],
    vendor: VendorId,
    ts_ns: u64,
    (reassembly, decoded): (&mut DiscoveryReassembly, &mut DecodedDiscovery),
    topics: &mut TopicMap,
    list: impl FnOnce() -> Vec<DiscoveryRecord>,
) -> Vec<DiscoveryRecord> {
    let mut list = Some(list);
    let mut discovery = Vec::new();
    for sm in submessages.iter().flatten() {
        // Most submessages are user traffic: told apart here, without a call per
        // submessage.
        let Some(role) = sm.discovery_role() else {
            continue;
        };
        if let Some(rec) = discovery_of(sm, role, vendor, ts_ns, reassembly, decoded) {
            if let DiscoveryRecord::Endpoint(e) = &rec {
                topics.insert(e.guid, &e.topic, &e.type_name, e.kind);
            }
            if let Some(take) = list.take() {
                discovery = take();
            }
            discovery.push(rec);
        }
    }
    discovery
}

/// Decode the discovery content of a DATA/DATA_FRAG from the built-in discovery writer
/// of `role`.
fn discovery_of(
    sm: &Submessage<'_>,
    role: BuiltinWriter,
    vendor: VendorId,
    ts_ns: u64,
    reassembly: &mut DiscoveryReassembly,
    decoded: &mut DecodedDiscovery,
) -> Option<DiscoveryRecord> {
    let vendor = if sm.ctx.src_vendor == VendorId::default() {
        vendor
    } else {
        sm.ctx.src_vendor
    };
    match &sm.body() {
        SubmessageBody::Data {
            writer,
            writer_sn,
            inline_qos,
            payload,
            ..
        } => {
            let status = inline_qos
                .and_then(|q| q.find(PID_STATUS_INFO))
                .and_then(|p| p.status_info().ok())
                .unwrap_or(0);
            let key = inline_qos
                .and_then(|q| q.find(PID_KEY_HASH))
                .and_then(|p| p.guid().ok());
            let input = DecodeInput {
                writer: Guid::new(sm.ctx.src_prefix, *writer),
                sn: *writer_sn,
                vendor,
                status,
                key,
                payload: payload.map(|p| p.bytes),
            };
            decoded.get_or_decode(&input, || {
                let plist = payload.and_then(|p| p.parameter_list());
                decode_discovery(role, vendor, plist, status, key)
            })
        }
        SubmessageBody::DataFrag {
            writer,
            writer_sn,
            fragment_starting_num,
            fragment_size,
            sample_size,
            fragments,
            ..
        } => {
            let whole = reassembly.push(FragmentPiece {
                writer: Guid::new(sm.ctx.src_prefix, *writer),
                sn: *writer_sn,
                fragment_starting_num: *fragment_starting_num,
                fragment_size: *fragment_size,
                sample_size: *sample_size,
                data: fragments,
                ts_ns,
            })?;
            let payload = SerializedPayload::new(&whole);
            decode_discovery(role, vendor, payload.parameter_list(), 0, None)
        }
        SubmessageBody::Pad
        | SubmessageBody::AckNack { .. }
        | SubmessageBody::Heartbeat { .. }
        | SubmessageBody::Gap { .. }
        | SubmessageBody::InfoTs { .. }
        | SubmessageBody::InfoSrc { .. }
        | SubmessageBody::InfoReplyIp4 { .. }
        | SubmessageBody::InfoDst { .. }
        | SubmessageBody::InfoReply { .. }
        | SubmessageBody::NackFrag { .. }
        | SubmessageBody::HeartbeatFrag { .. }
        | SubmessageBody::DataBatch { .. }
        | SubmessageBody::HeartbeatBatch { .. }
        | SubmessageBody::Security { .. }
        | SubmessageBody::VendorSpecific { .. }
        | SubmessageBody::Unknown { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_discovery_is_reused_only_for_the_same_input() {
        let mut cache = DecodedDiscovery::default();
        let gone = |status_info| {
            Some(DiscoveryRecord::Gone {
                role: crate::types::BuiltinWriter::Participant,
                guid: None,
                status_info,
            })
        };
        let input = DecodeInput {
            writer: Guid::default(),
            sn: 7,
            vendor: VendorId::default(),
            status: 1,
            key: None,
            payload: Some(&[0, 3, 0, 0]),
        };
        assert_eq!(cache.get_or_decode(&input, || gone(1)), gone(1));
        // Same input: the cached record, the decoder is not called.
        assert_eq!(cache.get_or_decode(&input, || gone(9)), gone(1));
        // Other bytes under the same writer and SN: decoded again.
        let other = DecodeInput {
            payload: Some(&[0, 3, 0, 1]),
            ..input
        };
        assert_eq!(cache.get_or_decode(&other, || gone(2)), gone(2));
    }
}
