//! DDS-Security's SEC_BODY, SEC_PREFIX, SEC_POSTFIX, SRTPS_PREFIX and SRTPS_POSTFIX: one
//! shape for all five, typed and kept whole (their content is encrypted or opaque).

use super::*;

pub(super) const LAYOUT: Layout = Layout::OPAQUE;

pub(super) fn decode(body: &[u8]) -> SubmessageBody<'_> {
    SubmessageBody::Security { bytes: body }
}
