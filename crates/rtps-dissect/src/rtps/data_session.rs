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
    /// The fields above, all fixed.
    pub const FIXED_LEN: usize = 28;
}

view::fixed_view! {
    /// A DATA_SESSION body checked to hold its fixed fields.
    View(field::FIXED_LEN) {
        octets_to_inline_qos: U16 = field::OCTETS_TO_INLINE_QOS,
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
        session_sn: Sn = field::SESSION_SN,
        virtual_sn: Sn = field::VIRTUAL_SN,
    }
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
    let v = View::new_checked(b)?;
    data::decode_rest(
        b,
        flags,
        usize::from(v.octets_to_inline_qos()),
        v.reader(),
        v.writer(),
        v.virtual_sn(),
    )
}
