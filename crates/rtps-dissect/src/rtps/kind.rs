//! What the walk, the roles and an undecoded submessage read of each kind without decoding
//! it: one [`Layout`] per kind, defined in the kind's own module and picked here by one
//! match over every kind, so a new kind is named by the compiler here and in `parse_body`.

use super::*;

/// Where a submessage names its reader, its writer and, for the kinds that carry one,
/// the writer SN of a sample (offsets from the end of the submessage header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ids {
    pub reader: usize,
    pub writer: usize,
    pub writer_sn: Option<usize>,
}

/// The sequence numbers an undecoded submessage still names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SnRange {
    /// None at a fixed place.
    Nothing,
    /// firstSN and lastSN (HEARTBEAT, and HEARTBEAT_BATCH's sample SNs): also what
    /// [`Submessage::heartbeat_sns`] reads.
    FirstLast { first: usize, last: usize },
    /// GAP's gapStart.
    Start(usize),
    /// DATA_BATCH's firstSampleSN, and the last as firstSampleSN + offsetToLastSampleSN.
    FirstAndOffset { first: usize, offset_to_last: usize },
}

/// The per-kind facts read from fixed places of a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    pub ids: Option<Ids>,
    /// A reader sends it (ACKNACK, NACK_FRAG): its writer is the destination's
    /// (INFO_DST), its reader the sender's; every other kind is the other way round.
    pub sent_by_reader: bool,
    pub sns: SnRange,
    /// Where a HEARTBEAT (or HEARTBEAT_BATCH) keeps its count.
    pub heartbeat_count: Option<usize>,
    /// An octetsToNextHeader of 0 is a real zero length (PAD, INFO_TS), not "to the end
    /// of the message".
    pub zero_length_is_empty: bool,
}

impl Layout {
    /// A kind with no fields at fixed places that the walk reads.
    pub const OPAQUE: Self = Self {
        ids: None,
        sent_by_reader: false,
        sns: SnRange::Nothing,
        heartbeat_count: None,
        zero_length_is_empty: false,
    };
}

/// The layout of `kind`.
#[inline]
pub(super) fn layout(kind: SubmessageKind) -> Layout {
    match kind {
        SubmessageKind::Pad => Layout {
            zero_length_is_empty: true,
            ..Layout::OPAQUE
        },
        SubmessageKind::AckNack => acknack::LAYOUT,
        SubmessageKind::Heartbeat => heartbeat::LAYOUT,
        SubmessageKind::Gap => gap::LAYOUT,
        SubmessageKind::InfoTs => info_ts::LAYOUT,
        SubmessageKind::InfoSrc => info_src::LAYOUT,
        SubmessageKind::InfoReplyIp4 => info_reply_ip4::LAYOUT,
        SubmessageKind::InfoDst => info_dst::LAYOUT,
        SubmessageKind::InfoReply => info_reply::LAYOUT,
        SubmessageKind::NackFrag => nack_frag::LAYOUT,
        SubmessageKind::HeartbeatFrag => heartbeat_frag::LAYOUT,
        SubmessageKind::Data => data::LAYOUT,
        SubmessageKind::DataFrag => data_frag::LAYOUT,
        SubmessageKind::SecBody
        | SubmessageKind::SecPrefix
        | SubmessageKind::SecPostfix
        | SubmessageKind::SrtpsPrefix
        | SubmessageKind::SrtpsPostfix => security::LAYOUT,
        SubmessageKind::DataSession => data_session::LAYOUT,
        SubmessageKind::DataBatch => data_batch::LAYOUT,
        SubmessageKind::HeartbeatBatch => heartbeat_batch::LAYOUT,
        SubmessageKind::VendorSpecific(_) => vendor::LAYOUT,
        SubmessageKind::Unknown(_) => Layout::OPAQUE,
    }
}
