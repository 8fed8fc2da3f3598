//! INFO_DST (RTPS 8.3.7.8): the participant the submessages after it are for.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::GuidPrefix;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const GUID_PREFIX: usize = 0;
    /// The fields above, all fixed.
    pub const LEN: usize = 12;
    /// In the order the decoder reads them (an SN is read as two halves).
    pub const READS: &[(usize, usize)] = &[(GUID_PREFIX, 12)];
}

const _: () = assert!(view::fits(field::READS, field::LEN));

/// An INFO_DST body checked to hold its guidPrefix.
pub(super) struct View<'a>(view::Fixed<'a, { field::LEN }>);

impl<'a> View<'a> {
    #[inline(always)]
    pub(super) fn new_checked(body: &Bytes<'a>) -> Result<Self> {
        view::Fixed::new_checked(body, field::READS).map(Self)
    }
    pub(super) fn guid_prefix(&self) -> GuidPrefix {
        self.0.guid_prefix(field::GUID_PREFIX)
    }
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

/// INFO_DST's guidPrefix.
#[inline(always)]
pub(super) fn prefix(b: &Bytes<'_>) -> Result<GuidPrefix> {
    Ok(View::new_checked(b)?.guid_prefix())
}

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    Ok(SubmessageBody::InfoDst {
        guid_prefix: prefix(b)?,
    })
}
