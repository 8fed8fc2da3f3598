//! HEARTBEAT_FRAG (RTPS 8.3.7.6): the fragments of one sample a writer has.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    pub const WRITER_SN: usize = 8;
    pub const LAST_FRAGMENT: usize = 16;
    pub const COUNT: usize = 20;
    /// The fields above, all fixed.
    pub const LEN: usize = 24;
}

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: Some(field::WRITER_SN),
    }),
    ..Layout::OPAQUE
};

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    use field as f;
    Ok(SubmessageBody::HeartbeatFrag {
        reader: read_entity(b, f::READER)?,
        writer: read_entity(b, f::WRITER)?,
        writer_sn: read_sn(b, f::WRITER_SN)?,
        last_fragment_num: b.u32(f::LAST_FRAGMENT)?,
        count: b.i32(f::COUNT)?,
    })
}

/// The walk's cheap check: every field is fixed.
#[inline]
pub(super) fn surely_decodes(len: usize) -> bool {
    len >= field::LEN
}
