//! GAP (RTPS 8.3.7.4): SNs a writer will never send.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::types::SequenceNumber;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    pub const GAP_START: usize = 8;
    /// gapList (SequenceNumberSet).
    pub const GAP_LIST: usize = 16;
    /// The fields before gapList, all fixed.
    pub const FIXED_LEN: usize = 16;
}

view::fixed_view! {
    /// A GAP body checked to hold its fixed fields (gapStart is read first: the decoder
    /// rejects a gapStart below 1 before it reads the set).
    View(field::FIXED_LEN) {
        gap_start: Sn = field::GAP_START,
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
    }
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

/// An SN read at `offset` that must name a sample (RTPS SNs start at 1).
fn at_least_one(sn: SequenceNumber, offset: usize, what: &'static str) -> Result<SequenceNumber> {
    if sn < 1 {
        return Err(DissectError::Invalid {
            layer: Layer::Submessage,
            offset,
            what,
            value: sn as u64,
        });
    }
    Ok(sn)
}

pub(super) fn decode<'a>(b: &Bytes<'a>) -> Result<SubmessageBody<'a>> {
    use field as f;
    let v = View::new_checked(b)?;
    // A GAP that starts at or below SN 0 names no sample (SNs start at 1); taking
    // it would mark every later SN as already dealt with.
    let gap_start = at_least_one(v.gap_start(), f::GAP_START, "GAP gapStart")?;
    let (set, _) = read_sn_set(b, f::GAP_LIST)?;
    at_least_one(set.base, f::GAP_LIST, "GAP gapList base")?;
    Ok(SubmessageBody::Gap {
        reader: v.reader(),
        writer: v.writer(),
        gap_start,
        gap_list: set,
    })
}

/// The walk's cheap check: both SNs name samples and the set is there.
#[inline]
pub(super) fn surely_decodes(b: &Bytes<'_>) -> bool {
    View::new(b).is_some_and(|v| v.gap_start() >= 1)
        && sn_set_base(b, field::GAP_LIST).is_some_and(|base| base >= 1)
        && sn_set_end(b, field::GAP_LIST, 0).is_some()
}
