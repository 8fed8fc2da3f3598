//! RTI Connext's HEARTBEAT_BATCH (0x19): the HEARTBEAT of a batching writer, with batch
//! SNs and sample SNs.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::{EntityId, SequenceNumber};

use super::*;

/// Offsets from the end of the submessage header.
pub(super) mod field {
    pub const READER: usize = 0;
    pub const WRITER: usize = 4;
    pub const FIRST_BATCH_SN: usize = 8;
    pub const LAST_BATCH_SN: usize = 16;
    pub const FIRST_SN: usize = 24;
    pub const LAST_SN: usize = 32;
    pub const COUNT: usize = 40;
    /// The fields above, all fixed.
    pub const LEN: usize = 44;
    /// In the order the decoder reads them (an SN is read as two halves).
    pub const READS: &[(usize, usize)] = &[
        (READER, 4),
        (WRITER, 4),
        (FIRST_BATCH_SN, 4),
        (FIRST_BATCH_SN + 4, 4),
        (LAST_BATCH_SN, 4),
        (LAST_BATCH_SN + 4, 4),
        (FIRST_SN, 4),
        (FIRST_SN + 4, 4),
        (LAST_SN, 4),
        (LAST_SN + 4, 4),
        (COUNT, 4),
    ];
}

const _: () = assert!(view::fits(field::READS, field::LEN));

/// A HEARTBEAT_BATCH body checked to hold its fields.
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
    pub(super) fn first_batch_sn(&self) -> SequenceNumber {
        self.0.sn(field::FIRST_BATCH_SN)
    }
    pub(super) fn last_batch_sn(&self) -> SequenceNumber {
        self.0.sn(field::LAST_BATCH_SN)
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

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: None,
    }),
    // (the sample SNs, as DATA_BATCH's)
    sns: SnRange::FirstLast {
        first: field::FIRST_SN,
        last: field::LAST_SN,
    },
    heartbeat_count: Some(field::COUNT),
    ..Layout::OPAQUE
};

pub(super) fn decode<'a>(b: &Bytes<'_>) -> Result<SubmessageBody<'a>> {
    let v = View::new_checked(b)?;
    Ok(SubmessageBody::HeartbeatBatch {
        reader: v.reader(),
        writer: v.writer(),
        first_batch_sn: v.first_batch_sn(),
        last_batch_sn: v.last_batch_sn(),
        first_sn: v.first_sn(),
        last_sn: v.last_sn(),
        count: v.count(),
    })
}
