//! What each submessage kind names, matched over every kind: where its entity ids and
//! writer SN sit, and whether a reader sends it.

use super::*;

/// Where the entity ids and writer SN of a submessage sit, for the kinds that have
/// them: (reader, writer, writer SN).
pub(super) fn id_fields(kind: SubmessageKind) -> Option<(usize, usize, Option<usize>)> {
    Some(match kind {
        SubmessageKind::Data => (
            field::data::READER,
            field::data::WRITER,
            Some(field::data::WRITER_SN),
        ),
        SubmessageKind::DataFrag => (
            field::data_frag::READER,
            field::data_frag::WRITER,
            Some(field::data_frag::WRITER_SN),
        ),
        SubmessageKind::NackFrag => (
            field::nack_frag::READER,
            field::nack_frag::WRITER,
            Some(field::nack_frag::WRITER_SN),
        ),
        SubmessageKind::HeartbeatFrag => (
            field::heartbeat_frag::READER,
            field::heartbeat_frag::WRITER,
            Some(field::heartbeat_frag::WRITER_SN),
        ),
        SubmessageKind::AckNack => (field::acknack::READER, field::acknack::WRITER, None),
        SubmessageKind::Heartbeat => (field::heartbeat::READER, field::heartbeat::WRITER, None),
        SubmessageKind::Gap => (field::gap::READER, field::gap::WRITER, None),
        SubmessageKind::DataSession => (
            field::data_session::READER,
            field::data_session::WRITER,
            Some(field::data_session::VIRTUAL_SN),
        ),
        SubmessageKind::DataBatch => (
            field::data_batch::READER,
            field::data_batch::WRITER,
            Some(field::data_batch::BATCH_SN),
        ),
        SubmessageKind::HeartbeatBatch => (
            field::heartbeat_batch::READER,
            field::heartbeat_batch::WRITER,
            None,
        ),
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
        | SubmessageKind::VendorSpecific(_)
        | SubmessageKind::Unknown(_) => return None,
    })
}

/// The kinds a reader sends (ACKNACK, NACK_FRAG): their writer is the destination's
/// (INFO_DST), their reader the sender's; every other kind is the other way round.
pub(super) fn sent_by_reader(kind: SubmessageKind) -> bool {
    match kind {
        SubmessageKind::AckNack | SubmessageKind::NackFrag => true,
        SubmessageKind::Pad
        | SubmessageKind::Heartbeat
        | SubmessageKind::Gap
        | SubmessageKind::InfoTs
        | SubmessageKind::InfoSrc
        | SubmessageKind::InfoReplyIp4
        | SubmessageKind::InfoDst
        | SubmessageKind::InfoReply
        | SubmessageKind::HeartbeatFrag
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
