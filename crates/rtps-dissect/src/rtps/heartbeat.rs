//! HEARTBEAT (RTPS 8.3.7.5): a writer's available SN range.

use crate::bytes::Bytes;
use crate::error::Result;

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    pub const FIRST_SN: usize = 8;
    pub const LAST_SN: usize = 16;
    pub const COUNT: usize = 24;
    /// The fields above, all fixed.
    pub const LEN: usize = 28;
}

pub(super) const FLAG_FINAL: u8 = 0x02;
pub(super) const FLAG_LIVELINESS: u8 = 0x04;

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: None,
    }),
    sns: SnRange::FirstLast {
        first: field::FIRST_SN,
        last: field::LAST_SN,
    },
    heartbeat_count: Some(field::COUNT),
    ..Layout::OPAQUE
};

#[inline(always)]
fn fields<'a>(b: &Bytes<'_>, flags: u8) -> Result<SubmessageBody<'a>> {
    use field as f;
    Ok(SubmessageBody::Heartbeat {
        reader: read_entity(b, f::READER)?,
        writer: read_entity(b, f::WRITER)?,
        first_sn: read_sn(b, f::FIRST_SN)?,
        last_sn: read_sn(b, f::LAST_SN)?,
        count: b.i32(f::COUNT)?,
        final_flag: flags & FLAG_FINAL != 0,
        liveliness_flag: flags & FLAG_LIVELINESS != 0,
    })
}

/// Read once from a fixed-length prefix of the body (whose bounds checks the compiler
/// then removes) and, when the body is shorter, from the body itself (for the same
/// errors as any field).
#[inline(always)]
pub(super) fn decode<'a>(b: &Bytes<'_>, flags: u8) -> Result<SubmessageBody<'a>> {
    match b.data().first_chunk::<{ field::LEN }>() {
        Some(fixed) => fields(&b.with(fixed), flags),
        None => fields(b, flags),
    }
}

/// The walk's cheap check: every field is fixed.
#[inline]
pub(super) fn surely_decodes(len: usize) -> bool {
    len >= field::LEN
}
