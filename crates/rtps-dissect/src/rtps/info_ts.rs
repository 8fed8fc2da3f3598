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

view::fixed_view! {
    /// An INFO_TS timestamp checked to be there (also each DATA_BATCH sample's).
    View(field::LEN) {
        seconds: I32 = field::SECONDS,
        fraction: U32 = field::FRACTION,
    }
}

impl View<'_> {
    pub(super) fn time(&self) -> Time {
        Time {
            seconds: self.seconds(),
            fraction: self.fraction(),
        }
    }
}

pub(super) const FLAG_INVALIDATE: u8 = 0x02;

pub(super) const LAYOUT: Layout = Layout {
    zero_length_is_empty: true,
    ..Layout::OPAQUE
};

/// A Time at the start of `b` (also DATA_BATCH's per-sample timestamps).
#[inline(always)]
pub(super) fn read_time(b: &Bytes<'_>) -> Result<Time> {
    Ok(View::new_checked(b)?.time())
}

/// INFO_TS's timestamp; `None` when the invalidate flag is set.
#[inline(always)]
pub(super) fn timestamp(b: &Bytes<'_>, flags: u8) -> Result<Option<Time>> {
    if flags & FLAG_INVALIDATE != 0 {
        return Ok(None);
    }
    Ok(Some(read_time(b)?))
}

pub(super) fn decode<'a>(b: &Bytes<'_>, flags: u8) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoTs {
        timestamp: timestamp(b, flags)?,
    })
}
