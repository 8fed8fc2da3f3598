//! INFO_SRC (RTPS 8.3.7.10): the participant that sent the submessages after it.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::{GuidPrefix, VendorId};

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    /// After 4 unused bytes.
    pub const VERSION_MAJOR: usize = 4;
    pub const VERSION_MINOR: usize = 5;
    pub const VENDOR: usize = 6;
    pub const GUID_PREFIX: usize = 8;
    /// The fields above, all fixed.
    pub const LEN: usize = 20;
    /// In the order the decoder reads them (an SN is read as two halves).
    pub const READS: &[(usize, usize)] = &[
        (VERSION_MAJOR, 1),
        (VERSION_MINOR, 1),
        (VENDOR, 2),
        (GUID_PREFIX, 12),
    ];
}

const _: () = assert!(view::fits(field::READS, field::LEN));

/// An INFO_SRC body checked to hold its fields.
pub(super) struct View<'a>(view::Fixed<'a, { field::LEN }>);

impl<'a> View<'a> {
    #[inline(always)]
    pub(super) fn new_checked(body: &Bytes<'a>) -> Result<Self> {
        view::Fixed::new_checked(body, field::READS).map(Self)
    }
    pub(super) fn version_major(&self) -> u8 {
        self.0.u8(field::VERSION_MAJOR)
    }
    pub(super) fn version_minor(&self) -> u8 {
        self.0.u8(field::VERSION_MINOR)
    }
    pub(super) fn guid_prefix(&self) -> GuidPrefix {
        self.0.guid_prefix(field::GUID_PREFIX)
    }
    pub(super) fn vendor(&self) -> VendorId {
        VendorId(self.0.array::<2>(field::VENDOR))
    }
}

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::InfoSrc {
        version: (v.version_major(), v.version_minor()),
        vendor: v.vendor(),
        guid_prefix: v.guid_prefix(),
    })
}
