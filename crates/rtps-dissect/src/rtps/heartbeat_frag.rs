//! HEARTBEAT_FRAG (RTPS 8.3.7.6): the fragments of one sample a writer has.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::{EntityId, SequenceNumber};

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    pub const WRITER_SN: usize = 8;
    pub const LAST_FRAGMENT: usize = 16;
    pub const COUNT: usize = 20;
    /// The fields above, all fixed.
    pub const LEN: usize = 24;
    /// In the order the decoder reads them (an SN is read as two halves).
    pub const READS: &[(usize, usize)] = &[
        (READER, 4),
        (WRITER, 4),
        (WRITER_SN, 4),
        (WRITER_SN + 4, 4),
        (LAST_FRAGMENT, 4),
        (COUNT, 4),
    ];
}

const _: () = assert!(view::fits(field::READS, field::LEN));

/// A HEARTBEAT_FRAG body checked to hold its fields.
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
    pub(super) fn writer_sn(&self) -> SequenceNumber {
        self.0.sn(field::WRITER_SN)
    }
    pub(super) fn last_fragment_num(&self) -> u32 {
        self.0.u32(field::LAST_FRAGMENT)
    }
    pub(super) fn count(&self) -> i32 {
        self.0.i32(field::COUNT)
    }
}

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: Some(field::WRITER_SN),
    }),
    ..Layout::OPAQUE
};

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::HeartbeatFrag {
        reader: v.reader(),
        writer: v.writer(),
        writer_sn: v.writer_sn(),
        last_fragment_num: v.last_fragment_num(),
        count: v.count(),
    })
}

/// The walk's cheap check: every field is fixed.
#[inline]
pub(super) fn surely_decodes(len: usize) -> bool {
    len >= field::LEN
}
