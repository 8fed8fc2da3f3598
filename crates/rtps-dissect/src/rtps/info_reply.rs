//! INFO_REPLY (RTPS 8.3.7.11): where to reply; only the unicast locator count is read.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const UNICAST_LOCATOR_COUNT: usize = 0;
    /// The fields read (the locators after the count are not).
    pub const LEN: usize = 4;
    /// In the order the decoder reads them (an SN is read as two halves).
    pub const READS: &[(usize, usize)] = &[(UNICAST_LOCATOR_COUNT, 4)];
}

const _: () = assert!(view::fits(field::READS, field::LEN));

/// An INFO_REPLY body checked to hold its unicast locator count.
pub(super) struct View<'a>(view::Fixed<'a, { field::LEN }>);

impl<'a> View<'a> {
    #[inline(always)]
    pub(super) fn new_checked(body: &Bytes<'a>) -> Result<Self> {
        view::Fixed::new_checked(body, field::READS).map(Self)
    }
    pub(super) fn unicast_locators(&self) -> u32 {
        self.0.u32(field::UNICAST_LOCATOR_COUNT)
    }
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoReply {
        unicast_locators: View::new_checked(b)?.unicast_locators(),
    })
}
