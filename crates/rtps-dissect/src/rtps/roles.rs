//! What each submessage kind names, read through its [`Layout`]: where its entity ids and
//! writer SN sit, and whether a reader sends it.

use super::*;

/// Where the entity ids and writer SN of a submessage sit, for the kinds that have
/// them: (reader, writer, writer SN).
#[inline]
pub(super) fn id_fields(kind: SubmessageKind) -> Option<(usize, usize, Option<usize>)> {
    layout(kind)
        .ids
        .map(|ids| (ids.reader, ids.writer, ids.writer_sn))
}

/// The kinds a reader sends (ACKNACK, NACK_FRAG): their writer is the destination's
/// (INFO_DST), their reader the sender's; every other kind is the other way round.
#[inline]
pub(super) fn sent_by_reader(kind: SubmessageKind) -> bool {
    layout(kind).sent_by_reader
}
