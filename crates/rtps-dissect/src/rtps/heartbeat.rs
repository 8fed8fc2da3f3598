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

view::fixed_view! {
    /// A HEARTBEAT body checked to hold its fields.
    View(field::LEN) {
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
        first_sn: Sn = field::FIRST_SN,
        last_sn: Sn = field::LAST_SN,
        count: I32 = field::COUNT,
    }
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
pub(super) fn decode<'a>(b: &Bytes<'_>, flags: u8) -> Result<SubmessageBody<'a>> {
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::Heartbeat {
        reader: v.reader(),
        writer: v.writer(),
        first_sn: v.first_sn(),
        last_sn: v.last_sn(),
        count: v.count(),
        final_flag: flags & FLAG_FINAL != 0,
        liveliness_flag: flags & FLAG_LIVELINESS != 0,
    })
}

/// The walk's cheap check: every field is fixed.
#[inline]
pub(super) fn surely_decodes(len: usize) -> bool {
    len >= field::LEN
}
