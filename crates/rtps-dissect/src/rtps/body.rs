//! `SubmessageBody` and `parse_body`, which decodes a body by its kind and flags; the
//! fixed fields of the commonest submessages; `surely_decodes`, the walk's cheap check.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
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

/// A writer SN that names a sample: RTPS sequence numbers start at 1.
pub(super) fn read_valid_sn(
    b: &Bytes<'_>,
    offset: usize,
    what: &'static str,
) -> Result<SequenceNumber> {
    let sn = read_sn(b, offset)?;
    if sn < 1 {
        return Err(DissectError::Invalid {
            layer: Layer::Submessage,
            offset,
            what,
            value: sn as u64,
        });
    }
    Ok(sn)
}

// The fixed fields of the commonest submessages are read through these, once from a
// fixed-length prefix of the body (whose bounds checks the compiler then removes) and,
// when the body is shorter, from the body itself (for the same errors as any field).

#[inline(always)]
pub(super) fn heartbeat<'a>(b: &Bytes<'_>, flags: u8) -> Result<SubmessageBody<'a>> {
    use field::heartbeat as f;
    Ok(SubmessageBody::Heartbeat {
        reader: read_entity(b, f::READER)?,
        writer: read_entity(b, f::WRITER)?,
        first_sn: read_sn(b, f::FIRST_SN)?,
        last_sn: read_sn(b, f::LAST_SN)?,
        count: b.i32(f::COUNT)?,
        final_flag: flags & 0x02 != 0,
        liveliness_flag: flags & 0x04 != 0,
    })
}

#[inline(always)]
pub(super) fn info_ts(b: &Bytes<'_>) -> Result<Time> {
    use field::info_ts as f;
    Ok(Time {
        seconds: b.i32(f::SECONDS)?,
        fraction: b.u32(f::FRACTION)?,
    })
}

pub(super) const FLAG_INFO_TS_INVALIDATE: u8 = 0x02;

/// INFO_TS's timestamp; `None` when the invalidate flag is set.
#[inline(always)]
pub(super) fn info_ts_timestamp(b: &Bytes<'_>, flags: u8) -> Result<Option<Time>> {
    if flags & FLAG_INFO_TS_INVALIDATE != 0 {
        return Ok(None);
    }
    Ok(Some(
        match b.data().first_chunk::<{ field::info_ts::LEN }>() {
            Some(fixed) => info_ts(&b.with(fixed))?,
            None => info_ts(b)?,
        },
    ))
}

/// INFO_DST's guidPrefix.
#[inline(always)]
pub(super) fn info_dst_prefix(b: &Bytes<'_>) -> Result<GuidPrefix> {
    Ok(GuidPrefix(b.array::<12>(field::info_dst::GUID_PREFIX)?))
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
        SubmessageKind::AckNack => {
            use field::acknack as f;
            let (set, after) = read_sn_set(&b, f::SN_STATE)?;
            SubmessageBody::AckNack {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                reader_sn_state: set,
                count: b.i32(after)?,
                final_flag: flags & 0x02 != 0,
            }
        }
        SubmessageKind::Heartbeat => match body.first_chunk::<{ field::heartbeat::LEN }>() {
            Some(fixed) => heartbeat(&b.with(fixed), flags)?,
            None => heartbeat(&b, flags)?,
        },
        SubmessageKind::Gap => {
            use field::gap as f;
            // A GAP that starts at or below SN 0 names no sample (SNs start at 1); taking
            // it would mark every later SN as already dealt with.
            let gap_start = read_valid_sn(&b, f::GAP_START, "GAP gapStart")?;
            let (set, _) = read_sn_set(&b, f::GAP_LIST)?;
            if set.base < 1 {
                return Err(DissectError::Invalid {
                    layer: Layer::Submessage,
                    offset: f::GAP_LIST,
                    what: "GAP gapList base",
                    value: set.base as u64,
                });
            }
            SubmessageBody::Gap {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                gap_start,
                gap_list: set,
            }
        }
        SubmessageKind::InfoTs => SubmessageBody::InfoTs {
            timestamp: info_ts_timestamp(&b, flags)?,
        },
        SubmessageKind::InfoSrc => {
            use field::info_src as f;
            SubmessageBody::InfoSrc {
                version: (b.u8(f::VERSION_MAJOR)?, b.u8(f::VERSION_MINOR)?),
                vendor: VendorId(b.array::<2>(f::VENDOR)?),
                guid_prefix: GuidPrefix(b.array::<12>(f::GUID_PREFIX)?),
            }
        }
        SubmessageKind::InfoReplyIp4 => {
            use field::info_reply_ip4 as f;
            SubmessageBody::InfoReplyIp4 {
                address: b.array::<4>(f::ADDRESS)?,
                port: b.u32(f::PORT)?,
            }
        }
        SubmessageKind::InfoDst => SubmessageBody::InfoDst {
            guid_prefix: info_dst_prefix(&b)?,
        },
        SubmessageKind::InfoReply => SubmessageBody::InfoReply {
            unicast_locators: b.u32(field::info_reply::UNICAST_LOCATOR_COUNT)?,
        },
        SubmessageKind::NackFrag => {
            use field::nack_frag as f;
            let (set, after) = read_frag_set(&b, f::FRAG_STATE)?;
            SubmessageBody::NackFrag {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                writer_sn: read_sn(&b, f::WRITER_SN)?,
                fragment_number_state: set,
                count: b.i32(after)?,
            }
        }
        SubmessageKind::HeartbeatFrag => {
            use field::heartbeat_frag as f;
            SubmessageBody::HeartbeatFrag {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                writer_sn: read_sn(&b, f::WRITER_SN)?,
                last_fragment_num: b.u32(f::LAST_FRAGMENT)?,
                count: b.i32(f::COUNT)?,
            }
        }
        SubmessageKind::Data => data(&b, flags)?,
        SubmessageKind::DataFrag => data_frag(&b, flags)?,
        SubmessageKind::DataSession => data_session(&b, flags)?,
        SubmessageKind::DataBatch => data_batch(&b, flags)?,
        SubmessageKind::HeartbeatBatch => {
            use field::heartbeat_batch as f;
            SubmessageBody::HeartbeatBatch {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                first_batch_sn: read_sn(&b, f::FIRST_BATCH_SN)?,
                last_batch_sn: read_sn(&b, f::LAST_BATCH_SN)?,
                first_sn: read_sn(&b, f::FIRST_SN)?,
                last_sn: read_sn(&b, f::LAST_SN)?,
                count: b.i32(f::COUNT)?,
            }
        }
        SubmessageKind::SecBody
        | SubmessageKind::SecPrefix
        | SubmessageKind::SecPostfix
        | SubmessageKind::SrtpsPrefix
        | SubmessageKind::SrtpsPostfix => SubmessageBody::Security { bytes: body },
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
    let len = body.len();
    // A sequence/fragment number set at `at` (its numBits at `at + num_bits`), and the
    // bytes after it; the end of the set when those are present.
    let set_end = |at: usize, num_bits: usize, bitmap: usize, after: usize| {
        let words = b
            .u32(at.saturating_add(num_bits))
            .ok()
            .filter(|n| *n <= 256)?
            .div_ceil(32)
            .saturating_mul(4);
        let end = at
            .saturating_add(bitmap)
            .saturating_add(usize::try_from(words).ok()?);
        (end.saturating_add(after) <= len).then_some(end)
    };
    let sn_at_least_one = |at: usize| read_sn(&b, at).is_ok_and(|sn| sn >= 1);
    match kind {
        SubmessageKind::Heartbeat => len >= field::heartbeat::LEN,
        SubmessageKind::HeartbeatFrag => len >= field::heartbeat_frag::COUNT.saturating_add(4),
        SubmessageKind::Data if flags & FLAG_DATA_Q == 0 => {
            len >= field::data::FIXED_LEN
                && (flags & (FLAG_DATA_D | FLAG_DATA_K) == 0
                    || b.u16(field::data::OCTETS_TO_INLINE_QOS)
                        .is_ok_and(|otiq| field::data::INLINE_QOS_BASE + usize::from(otiq) <= len))
        }
        SubmessageKind::DataFrag if flags & FLAG_DATAFRAG_Q == 0 => {
            len >= field::data_frag::SAMPLE_SIZE.saturating_add(4)
                && b.u16(field::data_frag::OCTETS_TO_INLINE_QOS)
                    .is_ok_and(|otiq| field::data_frag::INLINE_QOS_BASE + usize::from(otiq) <= len)
        }
        SubmessageKind::AckNack => {
            let f = field::sn_set::NUM_BITS;
            set_end(field::acknack::SN_STATE, f, field::sn_set::BITMAP, 4).is_some()
        }
        SubmessageKind::NackFrag => {
            let f = field::frag_set::NUM_BITS;
            len >= field::nack_frag::FRAG_STATE
                && set_end(field::nack_frag::FRAG_STATE, f, field::frag_set::BITMAP, 4).is_some()
        }
        SubmessageKind::Gap => {
            let f = field::sn_set::NUM_BITS;
            sn_at_least_one(field::gap::GAP_START)
                && sn_at_least_one(field::gap::GAP_LIST)
                && set_end(field::gap::GAP_LIST, f, field::sn_set::BITMAP, 0).is_some()
        }
        SubmessageKind::Pad
        | SubmessageKind::InfoTs
        | SubmessageKind::InfoSrc
        | SubmessageKind::InfoReplyIp4
        | SubmessageKind::InfoDst
        | SubmessageKind::InfoReply
        | SubmessageKind::Data
        | SubmessageKind::DataFrag
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
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut sure, mut checked) = (0u32, 0u32);
        for kind in kinds {
            for flags in 0..=255u8 {
                for len in 0..96usize {
                    let body: Vec<u8> = (0..len)
                        .map(|_| {
                            let r = next();
                            // Mostly zeros and small values: numBits, octetsToInlineQos
                            // and SN halves then take their interesting values.
                            if r % 3 == 0 {
                                (r >> 8) as u8
                            } else {
                                ((r >> 8) % 3) as u8
                            }
                        })
                        .collect();
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
