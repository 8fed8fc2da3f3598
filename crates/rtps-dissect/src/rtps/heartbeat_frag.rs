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

view::fixed_view! {
    /// A HEARTBEAT_FRAG body checked to hold its fields.
    View(field::LEN) {
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
        writer_sn: Sn = field::WRITER_SN,
        last_fragment_num: U32 = field::LAST_FRAGMENT,
        count: I32 = field::COUNT,
    }
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
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::HeartbeatFrag {
        reader: v.reader(),
        writer: v.writer(),
        writer_sn: v.writer_sn(),
        last_fragment_num: v.last_fragment_num(),
        count: v.count(),
    })
}

/// The walk's cheap check: every field is fixed.
#[inline]
pub(super) fn surely_decodes(len: usize) -> bool {
    len >= field::LEN
}
