//! `SubmessageBody` and `parse_body`, which hands a body to its kind's module to decode;
//! the readers of the fields every kind shares (entity ids, SNs); `surely_decodes`, the
//! walk's cheap check, likewise by kind.

use crate::bytes::Bytes;
use crate::error::{Layer, Result};
use crate::plist::ParameterList;
use crate::types::{EntityId, GuidPrefix, SequenceNumber, Time, VendorId};

use super::*;

/// Typed content of a submessage. Payloads are borrowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmessageBody<'a> {
    Pad,
    AckNack {
        reader: EntityId,
        writer: EntityId,
        reader_sn_state: SequenceNumberSet<'a>,
        count: i32,
        final_flag: bool,
    },
    Heartbeat {
        reader: EntityId,
        writer: EntityId,
        first_sn: SequenceNumber,
        last_sn: SequenceNumber,
        count: i32,
        final_flag: bool,
        liveliness_flag: bool,
    },
    Gap {
        reader: EntityId,
        writer: EntityId,
        gap_start: SequenceNumber,
        gap_list: SequenceNumberSet<'a>,
    },
    InfoTs {
        /// `None` when the invalidate flag is set.
        timestamp: Option<Time>,
    },
    InfoSrc {
        version: (u8, u8),
        vendor: VendorId,
        guid_prefix: GuidPrefix,
    },
    InfoReplyIp4 {
        address: [u8; 4],
        port: u32,
    },
    InfoDst {
        guid_prefix: GuidPrefix,
    },
    InfoReply {
        unicast_locators: u32,
    },
    NackFrag {
        reader: EntityId,
        writer: EntityId,
        writer_sn: SequenceNumber,
        fragment_number_state: FragmentNumberSet<'a>,
        count: i32,
    },
    HeartbeatFrag {
        reader: EntityId,
        writer: EntityId,
        writer_sn: SequenceNumber,
        last_fragment_num: u32,
        count: i32,
    },
    Data {
        reader: EntityId,
        writer: EntityId,
        writer_sn: SequenceNumber,
        inline_qos: Option<ParameterList<'a>>,
        /// Present when the D or K flag is set.
        payload: Option<SerializedPayload<'a>>,
        key_flag: bool,
    },
    DataFrag {
        reader: EntityId,
        writer: EntityId,
        writer_sn: SequenceNumber,
        fragment_starting_num: u32,
        fragments_in_submessage: u16,
        fragment_size: u16,
        sample_size: u32,
        inline_qos: Option<ParameterList<'a>>,
        key_flag: bool,
        /// The fragment bytes this submessage carries.
        fragments: &'a [u8],
    },
    /// RTI's DATA_BATCH: the samples are read from `samples`.
    DataBatch {
        reader: EntityId,
        writer: EntityId,
        batch_sn: SequenceNumber,
        first_sample_sn: SequenceNumber,
        offset_to_last_sample_sn: u32,
        sample_count: u32,
        inline_qos: Option<ParameterList<'a>>,
        samples: BatchSamples<'a>,
    },
    /// RTI's HEARTBEAT_BATCH: `first_sn`..`last_sn` are sample SNs, as DATA_BATCH's.
    HeartbeatBatch {
        reader: EntityId,
        writer: EntityId,
        first_batch_sn: SequenceNumber,
        last_batch_sn: SequenceNumber,
        first_sn: SequenceNumber,
        last_sn: SequenceNumber,
        count: i32,
    },
    /// DDS-Security submessages: typed, content opaque.
    Security {
        bytes: &'a [u8],
    },
    /// A vendor-specific submessage (id 0x80–0xff), decoded when the sender's vendor
    /// defines it, kept whole either way.
    VendorSpecific {
        known: Option<VendorSubmessage>,
        bytes: &'a [u8],
    },
    /// An undefined standard id, kept whole.
    Unknown {
        bytes: &'a [u8],
    },
}

#[inline(always)]
pub(super) fn read_sn(b: &Bytes<'_>, offset: usize) -> Result<SequenceNumber> {
    let high = b.i32(offset)?;
    let low = b.u32(offset.saturating_add(4))?;
    Ok(i64::from(high).wrapping_shl(32) | i64::from(low))
}

#[inline(always)]
pub(super) fn read_entity(b: &Bytes<'_>, offset: usize) -> Result<EntityId> {
    Ok(EntityId(b.array::<4>(offset)?))
}

/// Decode a submessage body. `body` is exactly the submessage's bytes after its header;
/// `vendor` is the sender's (it gives vendor-specific ids their meaning).
pub fn parse_body(
    kind: SubmessageKind,
    flags: u8,
    body: &[u8],
    vendor: VendorId,
) -> Result<SubmessageBody<'_>> {
    let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
    Ok(match kind {
        SubmessageKind::Pad => SubmessageBody::Pad,
        SubmessageKind::AckNack => acknack::decode(&b, flags)?,
        SubmessageKind::Heartbeat => heartbeat::decode(&b, flags)?,
        SubmessageKind::Gap => gap::decode(&b)?,
        SubmessageKind::InfoTs => info_ts::decode(&b, flags)?,
        SubmessageKind::InfoSrc => info_src::decode(&b)?,
        SubmessageKind::InfoReplyIp4 => info_reply_ip4::decode(&b)?,
        SubmessageKind::InfoDst => info_dst::decode(&b)?,
        SubmessageKind::InfoReply => info_reply::decode(&b)?,
        SubmessageKind::NackFrag => nack_frag::decode(&b)?,
        SubmessageKind::HeartbeatFrag => heartbeat_frag::decode(&b)?,
        SubmessageKind::Data => data::decode(&b, flags)?,
        SubmessageKind::DataFrag => data_frag::decode(&b, flags)?,
        SubmessageKind::DataSession => data_session::decode(&b, flags)?,
        SubmessageKind::DataBatch => data_batch::decode(&b, flags)?,
        SubmessageKind::HeartbeatBatch => heartbeat_batch::decode(&b)?,
        SubmessageKind::SecBody
        | SubmessageKind::SecPrefix
        | SubmessageKind::SecPostfix
        | SubmessageKind::SrtpsPrefix
        | SubmessageKind::SrtpsPostfix => security::decode(body),
        SubmessageKind::VendorSpecific(id) => SubmessageBody::VendorSpecific {
            known: VendorSubmessage::parse(vendor, id, &b)?,
            bytes: body,
        },
        SubmessageKind::Unknown(_) => SubmessageBody::Unknown { bytes: body },
    })
}

/// Whether [`parse_body`] surely succeeds, found from lengths and a few fields: the
/// iterator's check for the commonest kinds, so that their bodies are decoded only when
/// a consumer asks. `false` means "not sure" (the body is then decoded to find out), so
/// this only has to be sound: `true` implies `parse_body(..).is_ok()` (a test and the
/// fuzz target check it).
pub(super) fn surely_decodes(kind: SubmessageKind, flags: u8, body: &[u8]) -> bool {
    let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
    match kind {
        SubmessageKind::Heartbeat => heartbeat::surely_decodes(body.len()),
        SubmessageKind::HeartbeatFrag => heartbeat_frag::surely_decodes(body.len()),
        SubmessageKind::Data => data::surely_decodes(&b, flags),
        SubmessageKind::DataFrag => data_frag::surely_decodes(&b, flags),
        SubmessageKind::AckNack => acknack::surely_decodes(&b),
        SubmessageKind::NackFrag => nack_frag::surely_decodes(&b),
        SubmessageKind::Gap => gap::surely_decodes(&b),
        SubmessageKind::Pad
        | SubmessageKind::InfoTs
        | SubmessageKind::InfoSrc
        | SubmessageKind::InfoReplyIp4
        | SubmessageKind::InfoDst
        | SubmessageKind::InfoReply
        | SubmessageKind::SecBody
        | SubmessageKind::SecPrefix
        | SubmessageKind::SecPostfix
        | SubmessageKind::SrtpsPrefix
        | SubmessageKind::SrtpsPostfix
        | SubmessageKind::DataSession
        | SubmessageKind::DataBatch
        | SubmessageKind::HeartbeatBatch
        | SubmessageKind::VendorSpecific(_)
        | SubmessageKind::Unknown(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::VendorId;

    /// `surely_decodes` may say "not sure", never "yes" wrongly: over every flag
    /// combination, body lengths up to 96 bytes and bodies of pseudo-random bytes in
    /// which the length-like fields are often small (so that sets and inline-QoS
    /// offsets fit), a "yes" is always a body that decodes.
    #[test]
    fn surely_decodes_only_what_decodes() {
        let kinds = [
            SubmessageKind::Heartbeat,
            SubmessageKind::HeartbeatFrag,
            SubmessageKind::Data,
            SubmessageKind::DataFrag,
            SubmessageKind::AckNack,
            SubmessageKind::NackFrag,
            SubmessageKind::Gap,
            SubmessageKind::InfoTs,
            SubmessageKind::Pad,
        ];
        let mut bytes = test_bytes::SmallBytes::new();
        let (mut sure, mut checked) = (0u32, 0u32);
        for kind in kinds {
            for flags in 0..=255u8 {
                for len in 0..96usize {
                    let body = bytes.body(len);
                    checked += 1;
                    if surely_decodes(kind, flags, &body) {
                        sure += 1;
                        assert!(
                            parse_body(kind, flags, &body, VendorId::default()).is_ok(),
                            "{kind:?} flags {flags:#04x} body {body:02x?}"
                        );
                    }
                }
            }
        }
        // The check must also say "yes" often, or it saves nothing.
        assert!(sure > checked / 8, "{sure} of {checked}");
    }
}
