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
    /// In the order the decoder reads them (an SN is read as two halves).
    pub const READS: &[(usize, usize)] = &[(SECONDS, 4), (FRACTION, 4)];
}

const _: () = assert!(view::fits(field::READS, field::LEN));

/// An INFO_TS timestamp checked to be there (also each DATA_BATCH sample's).
pub(super) struct View<'a>(view::Fixed<'a, { field::LEN }>);

impl<'a> View<'a> {
    #[inline(always)]
    pub(super) fn new_checked(body: &Bytes<'a>) -> Result<Self> {
        view::Fixed::new_checked(body, field::READS).map(Self)
    }
    pub(super) fn seconds(&self) -> i32 {
        self.0.i32(field::SECONDS)
    }
    pub(super) fn fraction(&self) -> u32 {
        self.0.u32(field::FRACTION)
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
