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
    /// The fields above, all fixed.
    pub const LEN: usize = 44;
}

view::fixed_view! {
    /// A HEARTBEAT_BATCH body checked to hold its fields.
    View(field::LEN) {
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
        first_batch_sn: Sn = field::FIRST_BATCH_SN,
        last_batch_sn: Sn = field::LAST_BATCH_SN,
        first_sn: Sn = field::FIRST_SN,
        last_sn: Sn = field::LAST_SN,
        count: I32 = field::COUNT,
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
