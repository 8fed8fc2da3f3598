//! HEARTBEAT (RTPS 8.3.7.5): a writer's available SN range.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::{EntityId, SequenceNumber};

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
    /// In the order the decoder reads them (an SN is read as two halves).
    pub const READS: &[(usize, usize)] = &[
        (READER, 4),
        (WRITER, 4),
        (FIRST_SN, 4),
        (FIRST_SN + 4, 4),
        (LAST_SN, 4),
        (LAST_SN + 4, 4),
        (COUNT, 4),
    ];
}

const _: () = assert!(view::fits(field::READS, field::LEN));

/// A HEARTBEAT body checked to hold its fields.
pub(super) struct View<'a>(view::Fixed<'a, { field::LEN }>);

impl<'a> View<'a> {
    #[inline(always)]
    pub(super) fn new_checked(body: &Bytes<'a>) -> Result<Self> {
        view::Fixed::new_checked(body, field::READS).map(Self)
    }
    pub(super) fn reader(&self) -> EntityId {
        self.0.entity(field::READER)
    }
    pub(super) fn writer(&self) -> EntityId {
        self.0.entity(field::WRITER)
    }
    pub(super) fn first_sn(&self) -> SequenceNumber {
        self.0.sn(field::FIRST_SN)
    }
    pub(super) fn last_sn(&self) -> SequenceNumber {
        self.0.sn(field::LAST_SN)
    }
    pub(super) fn count(&self) -> i32 {
        self.0.i32(field::COUNT)
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
