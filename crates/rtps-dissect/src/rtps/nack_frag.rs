//! NACK_FRAG (RTPS 8.3.7.7): a reader's request for missing fragments of one sample.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    pub const WRITER_SN: usize = 8;
    /// fragmentNumberState (FragmentNumberSet), then count.
    pub const FRAG_STATE: usize = 16;
}

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: Some(field::WRITER_SN),
    }),
    sent_by_reader: true,
    ..Layout::OPAQUE
};

pub(super) fn decode<'a>(b: &Bytes<'a>) -> Result<SubmessageBody<'a>> {
    use field as f;
    let (set, after) = read_frag_set(b, f::FRAG_STATE)?;
    Ok(SubmessageBody::NackFrag {
        reader: read_entity(b, f::READER)?,
        writer: read_entity(b, f::WRITER)?,
        writer_sn: read_sn(b, f::WRITER_SN)?,
        fragment_number_state: set,
        count: b.i32(after)?,
    })
}

/// The walk's cheap check: the fixed fields, the set and the count after it are there.
#[inline]
pub(super) fn surely_decodes(b: &Bytes<'_>) -> bool {
    b.data().len() >= field::FRAG_STATE && frag_set_end(b, field::FRAG_STATE, 4).is_some()
}
