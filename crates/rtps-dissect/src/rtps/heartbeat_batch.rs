//! RTI Connext's HEARTBEAT_BATCH (0x19): the HEARTBEAT of a batching writer, with batch
//! SNs and sample SNs.

use crate::bytes::Bytes;
use crate::error::Result;

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
    use field as f;
    Ok(SubmessageBody::HeartbeatBatch {
        reader: read_entity(b, f::READER)?,
        writer: read_entity(b, f::WRITER)?,
        first_batch_sn: read_sn(b, f::FIRST_BATCH_SN)?,
        last_batch_sn: read_sn(b, f::LAST_BATCH_SN)?,
        first_sn: read_sn(b, f::FIRST_SN)?,
        last_sn: read_sn(b, f::LAST_SN)?,
        count: b.i32(f::COUNT)?,
    })
}
