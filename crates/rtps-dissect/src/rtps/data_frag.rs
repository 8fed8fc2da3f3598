//! DATA_FRAG (RTPS 8.3.7.3): DATA's first fields, where its fragments sit in the sample,
//! the inline QoS and the fragment bytes.

use crate::bytes::Bytes;
use crate::error::{Layer, Result};
use crate::types::Guid;

use super::*;

/// Offsets from the end of the submessage header; the first ones are DATA's.
pub(super) mod field {
    pub use crate::rtps::data::field::{
        INLINE_QOS_BASE, OCTETS_TO_INLINE_QOS, READER, WRITER, WRITER_SN,
    };
    pub const FRAGMENT_STARTING_NUM: usize = 20;
    pub const FRAGMENTS_IN_SUBMESSAGE: usize = 24;
    pub const FRAGMENT_SIZE: usize = 26;
    pub const SAMPLE_SIZE: usize = 28;
    /// The fields above, all fixed.
    pub const FIXED_LEN: usize = 32;
}

pub(super) const FLAG_Q: u8 = 0x02;
pub(super) const FLAG_K: u8 = 0x04;

pub(super) const LAYOUT: Layout = Layout {
    ids: Some(Ids {
        reader: field::READER,
        writer: field::WRITER,
        writer_sn: Some(field::WRITER_SN),
    }),
    ..Layout::OPAQUE
};

/// Where a DATA_FRAG's fragments sit in their sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentRange {
    /// fragmentStartingNum (1-based).
    pub start: u32,
    /// fragmentsInSubmessage.
    pub count: u16,
    pub fragment_size: u16,
    pub sample_size: u32,
}

impl FragmentRange {
    /// Fragments the whole sample is cut into; `None` when fragmentSize is 0.
    pub fn total(&self) -> Option<u64> {
        (self.fragment_size > 0)
            .then(|| u64::from(self.sample_size).div_ceil(u64::from(self.fragment_size)))
    }

    /// Numbers that make sense: 1-based start, at least one fragment, and the last one
    /// within the sample.
    pub fn is_consistent(&self) -> bool {
        let last = u64::from(self.start).saturating_add(u64::from(self.count));
        self.start >= 1
            && self.count >= 1
            && self.sample_size > 0
            && self.total().is_some_and(|t| last.saturating_sub(1) <= t)
    }
}

/// The fragments' place in their sample, read from the fixed fields.
pub(super) fn read_range(b: &Bytes<'_>) -> Result<FragmentRange> {
    use field as f;
    Ok(FragmentRange {
        start: b.u32(f::FRAGMENT_STARTING_NUM)?,
        count: b.u16(f::FRAGMENTS_IN_SUBMESSAGE)?,
        fragment_size: b.u16(f::FRAGMENT_SIZE)?,
        sample_size: b.u32(f::SAMPLE_SIZE)?,
    })
}

pub(super) fn decode<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
    use field as f;
    let otiq = usize::from(b.u16(f::OCTETS_TO_INLINE_QOS)?);
    let reader = read_entity(b, f::READER)?;
    let writer = read_entity(b, f::WRITER)?;
    let writer_sn = read_sn(b, f::WRITER_SN)?;
    let fragment_starting_num = b.u32(f::FRAGMENT_STARTING_NUM)?;
    let fragments_in_submessage = b.u16(f::FRAGMENTS_IN_SUBMESSAGE)?;
    let fragment_size = b.u16(f::FRAGMENT_SIZE)?;
    let sample_size = b.u32(f::SAMPLE_SIZE)?;
    let (inline_qos, pos) = inline_qos_and_end(b, otiq, flags & FLAG_Q != 0)?;
    Ok(SubmessageBody::DataFrag {
        reader,
        writer,
        writer_sn,
        fragment_starting_num,
        fragments_in_submessage,
        fragment_size,
        sample_size,
        inline_qos,
        key_flag: flags & FLAG_K != 0,
        fragments: b.rest(pos)?,
    })
}

/// The walk's cheap check (without inline QoS, which is not checked cheaply): the fixed
/// fields and where the fragments start.
#[inline]
pub(super) fn surely_decodes(b: &Bytes<'_>, flags: u8) -> bool {
    let len = b.data().len();
    flags & FLAG_Q == 0
        && len >= field::FIXED_LEN
        && b.u16(field::OCTETS_TO_INLINE_QOS)
            .is_ok_and(|otiq| field::INLINE_QOS_BASE + usize::from(otiq) <= len)
}

impl Submessage<'_> {
    /// [`Submessage::sample_piece`] of a DATA_FRAG without inline QoS.
    #[inline]
    pub(super) fn plain_data_frag_piece(&self) -> Option<SamplePiece> {
        use field as f;
        let fixed = self.body_bytes().first_chunk::<{ f::FIXED_LEN }>()?;
        let b = Bytes::new(fixed, Layer::Submessage, self.little_endian());
        let range = read_range(&b).ok()?;
        Some(SamplePiece {
            writer: Guid::new(self.ctx.src_prefix, read_entity(&b, f::WRITER).ok()?),
            sn: read_sn(&b, f::WRITER_SN).ok()?,
            fragments: Some(range),
            sample_size: u64::from(range.sample_size),
            payload_size: self.payload_after_fixed(&b),
        })
    }
}
