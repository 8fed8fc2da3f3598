//! INFO_TS (RTPS 8.3.7.9): the source timestamp of the submessages after it.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::Time;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const SECONDS: usize = 0;
    pub const FRACTION: usize = 4;
    pub const LEN: usize = 8;
}

pub(super) const FLAG_INVALIDATE: u8 = 0x02;

pub(super) const LAYOUT: Layout = Layout {
    zero_length_is_empty: true,
    ..Layout::OPAQUE
};

/// A Time at the start of `b` (also DATA_BATCH's per-sample timestamps).
#[inline(always)]
pub(super) fn read_time(b: &Bytes<'_>) -> Result<Time> {
    Ok(Time {
        seconds: b.i32(field::SECONDS)?,
        fraction: b.u32(field::FRACTION)?,
    })
}

/// INFO_TS's timestamp; `None` when the invalidate flag is set.
#[inline(always)]
pub(super) fn timestamp(b: &Bytes<'_>, flags: u8) -> Result<Option<Time>> {
    if flags & FLAG_INVALIDATE != 0 {
        return Ok(None);
    }
    Ok(Some(match b.data().first_chunk::<{ field::LEN }>() {
        Some(fixed) => read_time(&b.with(fixed))?,
        None => read_time(b)?,
    }))
}

pub(super) fn decode<'a>(b: &Bytes<'_>, flags: u8) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoTs {
        timestamp: timestamp(b, flags)?,
    })
}
