//! RTI Connext's DATA_BATCH (0x18): many samples of one writer in one submessage, each with a
//! SampleInfo.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::plist::ParameterList;
use crate::types::{SequenceNumber, Time};

use super::*;

/// Offsets from the end of the submessage header; reader and writer as DATA's.
pub(super) mod field {
    pub use crate::rtps::data::field::{READER, WRITER};
    pub const BATCH_SN: usize = 12;
    pub const FIRST_SAMPLE_SN: usize = 20;
    pub const OFFSET_TO_LAST_SAMPLE_SN: usize = 28;
    pub const SAMPLE_COUNT: usize = 32;
    /// batchInlineQos when the Q flag is set, then octetsToSLEncapsulationId.
    pub const INLINE_QOS: usize = 36;
    /// The fields before batchInlineQos, all fixed.
    pub const FIXED_LEN: usize = 36;
    /// Each SampleInfo: 16 flag bits (big-endian whatever the submessage's order),
    /// octetsToInlineQos, serializedDataLength, then the optional fields.
    pub mod sample_info {
        pub const FLAGS: usize = 0;
        pub const LENGTH: usize = 4;
        pub const OPTIONAL: usize = 8;
        pub const TIMESTAMP_LEN: usize = 8;
        pub const OFFSET_SN_LEN: usize = 4;
    }
    /// The sample list's encapsulation header (id, options) before the samples.
    pub const ENCAPSULATION_LEN: usize = 4;
}

view::fixed_view! {
    /// A DATA_BATCH body checked to hold its fixed fields.
    View(field::FIXED_LEN) {
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
        batch_sn: Sn = field::BATCH_SN,
        first_sample_sn: Sn = field::FIRST_SAMPLE_SN,
        offset_to_last_sample_sn: U32 = field::OFFSET_TO_LAST_SAMPLE_SN,
        sample_count: U32 = field::SAMPLE_COUNT,
    }
}

view::fixed_view! {
    /// A SampleInfo checked to hold its fixed fields (the optional ones follow).
    SampleInfo(field::sample_info::OPTIONAL) at {
        flags: BeU16 = field::sample_info::FLAGS,
        serialized_data_length: U32 = field::sample_info::LENGTH,
    }
}

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: Some(field::BATCH_SN),
    }),
    sns: SnRange::FirstAndOffset {
        first: field::FIRST_SAMPLE_SN,
        offset_to_last: field::OFFSET_TO_LAST_SAMPLE_SN,
    },
    ..Layout::OPAQUE
};

pub(super) const SAMPLE_INFO_T: u16 = 0x0001;
pub(super) const SAMPLE_INFO_Q: u16 = 0x0002;
pub(super) const SAMPLE_INFO_O: u16 = 0x0004;
pub(super) const SAMPLE_INFO_K: u16 = 0x0020;

/// One sample of a DATA_BATCH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSample<'a> {
    pub sn: SequenceNumber,
    /// serializedDataLength: the sample's size as sent.
    pub size: u32,
    /// Source timestamp of this sample (SampleInfo's T flag).
    pub timestamp: Option<Time>,
    pub inline_qos: Option<ParameterList<'a>>,
    /// The sample carries a serialized key (K flag).
    pub key: bool,
    /// The sample's bytes the capture holds (fewer than `size` when cut short).
    pub data: &'a [u8],
}

/// The samples of a DATA_BATCH: its SampleInfo list and sample list, walked together.
/// A sample's SN is firstSampleSN + its offsetSN when it has one, else the SN after
/// the previous sample's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSamples<'a> {
    infos: &'a [u8],
    samples: &'a [u8],
    first_sn: SequenceNumber,
    little_endian: bool,
}

impl<'a> BatchSamples<'a> {
    pub fn iter(&self) -> BatchSampleIter<'a> {
        BatchSampleIter {
            batch: *self,
            info_at: 0,
            data_at: 0,
            next_sn: Some(self.first_sn),
        }
    }

    /// Checks every SampleInfo; the number of samples.
    fn check(&self) -> Result<usize> {
        let mut it = self.iter();
        let mut n = 0usize;
        while let Some(sample) = it.step() {
            sample?;
            n = n.saturating_add(1);
        }
        Ok(n)
    }
}

/// Iterator over a DATA_BATCH's samples; stops at the first SampleInfo that does not
/// decode (the walk rejects such a batch, so this happens only on [`BatchSamples`]
/// built by hand).
#[derive(Debug, Clone)]
pub struct BatchSampleIter<'a> {
    batch: BatchSamples<'a>,
    info_at: usize,
    data_at: usize,
    next_sn: Option<SequenceNumber>,
}

impl<'a> BatchSampleIter<'a> {
    fn step(&mut self) -> Option<Result<BatchSample<'a>>> {
        use field::sample_info as f;
        if self.info_at >= self.batch.infos.len() {
            return None;
        }
        let b = Bytes::new(
            self.batch.infos,
            Layer::Submessage,
            self.batch.little_endian,
        );
        let result = (|| {
            let at = self.info_at;
            let info = SampleInfo::new_checked_at(&b, at)?;
            let flags = info.flags();
            let size = info.serialized_data_length();
            let mut pos = at.saturating_add(f::OPTIONAL);
            let timestamp = if flags & SAMPLE_INFO_T != 0 {
                let t = info_ts::read_time(&b.with(b.slice(pos, f::TIMESTAMP_LEN)?))?;
                pos = pos.saturating_add(f::TIMESTAMP_LEN);
                Some(t)
            } else {
                None
            };
            let sn = if flags & SAMPLE_INFO_O != 0 {
                let offset = b.u32(pos)?;
                pos = pos.saturating_add(f::OFFSET_SN_LEN);
                self.batch.first_sn.checked_add(i64::from(offset))
            } else {
                self.next_sn
            };
            let Some(sn) = sn else {
                return Err(DissectError::Invalid {
                    layer: Layer::Submessage,
                    offset: at,
                    what: "DATA_BATCH sample SN",
                    value: u64::from(size),
                });
            };
            let inline_qos = if flags & SAMPLE_INFO_Q != 0 {
                let (q, after) = read_inline_qos(&b, pos)?;
                pos = after;
                Some(q)
            } else {
                None
            };
            let len = usize::try_from(size).unwrap_or(usize::MAX);
            let data_end = self
                .data_at
                .saturating_add(len)
                .min(self.batch.samples.len());
            let data = self
                .batch
                .samples
                .get(self.data_at.min(data_end)..data_end)
                .unwrap_or_default();
            self.data_at = self.data_at.saturating_add(len);
            self.info_at = pos;
            self.next_sn = sn.checked_add(1);
            Ok(BatchSample {
                sn,
                size,
                timestamp,
                inline_qos,
                key: flags & SAMPLE_INFO_K != 0,
                data,
            })
        })();
        if result.is_err() {
            self.info_at = self.batch.infos.len();
        }
        Some(result)
    }
}

impl<'a> Iterator for BatchSampleIter<'a> {
    type Item = BatchSample<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step()?.ok()
    }
}

pub(super) const FLAG_DATA_BATCH_Q: u8 = 0x02;

/// DATA_BATCH: fixed fields, batch inline QoS, the SampleInfo list (every entry must
/// decode) and the sample list after its encapsulation header (what the capture holds
/// of it).
pub(super) fn decode<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
    use field as f;
    let v = View::new_checked(b)?;
    let (inline_qos, pos) = if flags & FLAG_DATA_BATCH_Q != 0 {
        let (q, after) = read_inline_qos(b, f::INLINE_QOS)?;
        (Some(q), after)
    } else {
        (None, f::INLINE_QOS)
    };
    let infos_len = usize::try_from(b.u32(pos)?).unwrap_or(usize::MAX);
    let infos_at = pos.saturating_add(4);
    let infos = b.slice(infos_at, infos_len)?;
    let samples_at = infos_at
        .saturating_add(infos_len)
        .saturating_add(f::ENCAPSULATION_LEN);
    let samples = BatchSamples {
        infos,
        samples: b.data().get(samples_at..).unwrap_or_default(),
        first_sn: v.first_sample_sn(),
        little_endian: b.little_endian(),
    };
    samples.check()?;
    Ok(SubmessageBody::DataBatch {
        reader: v.reader(),
        writer: v.writer(),
        batch_sn: v.batch_sn(),
        first_sample_sn: v.first_sample_sn(),
        offset_to_last_sample_sn: v.offset_to_last_sample_sn(),
        sample_count: v.sample_count(),
        inline_qos,
        samples,
    })
}
