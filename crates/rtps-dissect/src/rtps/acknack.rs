//! ACKNACK (RTPS 8.3.7.1): a reader's acknowledgement and request for missing SNs.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    /// readerSNState (SequenceNumberSet), then count.
    pub const SN_STATE: usize = 8;
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

#[inline]
pub(super) fn decode<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
    let (set, after) = read_sn_set(b, field::SN_STATE)?;
    Ok(SubmessageBody::AckNack {
        reader: read_entity(b, field::READER)?,
        writer: read_entity(b, field::WRITER)?,
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
