//! ACKNACK (RTPS 8.3.7.1): a reader's acknowledgement and request for missing SNs.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    /// The fields above, all fixed.
    pub const FIXED_LEN: usize = 8;
    /// readerSNState (SequenceNumberSet), then count.
    pub const SN_STATE: usize = 8;
}

view::fixed_view! {
    /// An ACKNACK body checked to hold its fixed fields (the decoder reads them after
    /// readerSNState, whose checked reader names a short body).
    View(field::FIXED_LEN) {
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
    }
}

pub(super) const FLAG_FINAL: u8 = 0x02;

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: None,
    }),
    sent_by_reader: true,
    ..Layout::OPAQUE
};

/// readerSNState and the offset of the count after it.
#[inline(always)]
pub(super) fn sn_state<'a>(b: &Bytes<'a>) -> Result<(SequenceNumberSet<'a>, usize)> {
    read_sn_set(b, field::SN_STATE)
}

#[inline]
pub(super) fn decode<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
    let (set, after) = sn_state(b)?;
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::AckNack {
        reader: v.reader(),
        writer: v.writer(),
        reader_sn_state: set,
        count: b.i32(after)?,
        final_flag: flags & FLAG_FINAL != 0,
    })
}

/// The walk's cheap check: the set and the count after it are there.
#[inline]
pub(super) fn surely_decodes(b: &Bytes<'_>) -> bool {
    sn_set_end(b, field::SN_STATE, 4).is_some()
}
