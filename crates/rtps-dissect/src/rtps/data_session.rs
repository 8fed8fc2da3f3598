//! RTI Connext's DATA_SESSION (0x14): a DATA of a multichannel writer, with the SN within
//! the channel's session before the writer's own ("virtual") SN.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header; the first ones are DATA's.
pub(super) mod field {
    pub use crate::rtps::data::field::{OCTETS_TO_INLINE_QOS, READER, WRITER};
    /// The SN within the channel's session.
    pub const SESSION_SN: usize = 12;
    /// The writer's own SN of the sample ("virtual" SN).
    pub const VIRTUAL_SN: usize = 20;
}

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: Some(field::VIRTUAL_SN),
    }),
    ..Layout::OPAQUE
};

/// DATA's fields with the session SN before the writer's SN, then what DATA carries.
pub(super) fn decode<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
    use field as f;
    let otiq = usize::from(b.u16(f::OCTETS_TO_INLINE_QOS)?);
    let reader = read_entity(b, f::READER)?;
    let writer = read_entity(b, f::WRITER)?;
    read_sn(b, f::SESSION_SN)?;
    let writer_sn = read_sn(b, f::VIRTUAL_SN)?;
    data::decode_rest(b, flags, otiq, reader, writer, writer_sn)
}
