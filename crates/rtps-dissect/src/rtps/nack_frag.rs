//! NACK_FRAG (RTPS 8.3.7.7): a reader's request for missing fragments of one sample.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    pub const WRITER_SN: usize = 8;
    /// The fields above, all fixed.
    pub const FIXED_LEN: usize = 16;
    /// fragmentNumberState (FragmentNumberSet), then count.
    pub const FRAG_STATE: usize = 16;
}

view::fixed_view! {
    /// A NACK_FRAG body checked to hold its fixed fields (the decoder reads them after
    /// fragmentNumberState, whose checked reader names a short body).
    View(field::FIXED_LEN) {
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
        writer_sn: Sn = field::WRITER_SN,
    }
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
    let (set, after) = read_frag_set(b, field::FRAG_STATE)?;
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::NackFrag {
        reader: v.reader(),
        writer: v.writer(),
        writer_sn: v.writer_sn(),
        fragment_number_state: set,
        count: b.i32(after)?,
    })
}

/// The walk's cheap check: the fixed fields, the set and the count after it are there.
#[inline]
pub(super) fn surely_decodes(b: &Bytes<'_>) -> bool {
    View::new(b).is_some() && frag_set_end(b, field::FRAG_STATE, 4).is_some()
}
