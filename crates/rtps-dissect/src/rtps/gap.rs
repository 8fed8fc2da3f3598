//! GAP (RTPS 8.3.7.4): SNs a writer will never send.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    pub const GAP_START: usize = 8;
    /// gapList (SequenceNumberSet).
    pub const GAP_LIST: usize = 16;
}

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: None,
    }),
    sns: SnRange::Start(field::GAP_START),
    ..Layout::OPAQUE
};

pub(super) fn decode<'a>(b: &Bytes<'a>) -> Result<SubmessageBody<'a>> {
    use field as f;
    // A GAP that starts at or below SN 0 names no sample (SNs start at 1); taking
    // it would mark every later SN as already dealt with.
    let gap_start = read_valid_sn(b, f::GAP_START, "GAP gapStart")?;
    let (set, _) = read_sn_set(b, f::GAP_LIST)?;
    if set.base < 1 {
        return Err(DissectError::Invalid {
            layer: Layer::Submessage,
            offset: f::GAP_LIST,
            what: "GAP gapList base",
            value: set.base as u64,
        });
    }
    Ok(SubmessageBody::Gap {
        reader: read_entity(b, f::READER)?,
        writer: read_entity(b, f::WRITER)?,
        gap_start,
        gap_list: set,
    })
}

/// The walk's cheap check: both SNs name samples and the set is there.
#[inline]
pub(super) fn surely_decodes(b: &Bytes<'_>) -> bool {
    let sn_at_least_one = |at: usize| read_sn(b, at).is_ok_and(|sn| sn >= 1);
    sn_at_least_one(field::GAP_START)
        && sn_at_least_one(field::GAP_LIST)
        && sn_set_end(b, field::GAP_LIST, 0).is_some()
}
