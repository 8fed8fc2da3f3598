//! DATA_FRAG (RTPS 8.3.7.3): DATA's first fields, where its fragments sit in the sample,
//! the inline QoS and the fragment bytes.

use crate::bytes::Bytes;
use crate::error::Result;
use crate::types::Guid;

use super::*;

/// Offsets from the end of the submessage header; the first ones are DATA's.
pub(super) mod field {
    pub use crate::rtps::data::field::{OCTETS_TO_INLINE_QOS, READER, WRITER, WRITER_SN};
    pub const FRAGMENT_STARTING_NUM: usize = 20;
    pub const FRAGMENTS_IN_SUBMESSAGE: usize = 24;
    pub const FRAGMENT_SIZE: usize = 26;
    pub const SAMPLE_SIZE: usize = 28;
    /// The fields above, all fixed.
    pub const FIXED_LEN: usize = 32;
}

view::fixed_view! {
    /// A DATA_FRAG body checked to hold its fixed fields.
    View(field::FIXED_LEN) {
        octets_to_inline_qos: U16 = field::OCTETS_TO_INLINE_QOS,
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
        writer_sn: Sn = field::WRITER_SN,
        fragment_starting_num: U32 = field::FRAGMENT_STARTING_NUM,
        fragments_in_submessage: U16 = field::FRAGMENTS_IN_SUBMESSAGE,
        fragment_size: U16 = field::FRAGMENT_SIZE,
        sample_size: U32 = field::SAMPLE_SIZE,
    }
}

impl View<'_> {
    /// Where the fragments sit in their sample.
    #[inline(always)]
    pub(super) fn range(&self) -> FragmentRange {
        FragmentRange {
            start: self.fragment_starting_num(),
            count: self.fragments_in_submessage(),
            fragment_size: self.fragment_size(),
            sample_size: self.sample_size(),
        }
    }
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

pub(super) fn decode<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
    let v = View::new_checked(b)?;
    let otiq = usize::from(v.octets_to_inline_qos());
    let (inline_qos, pos) = inline_qos_and_end(b, otiq, flags & FLAG_Q != 0)?;
    Ok(SubmessageBody::DataFrag {
        reader: v.reader(),
        writer: v.writer(),
        writer_sn: v.writer_sn(),
        fragment_starting_num: v.fragment_starting_num(),
        fragments_in_submessage: v.fragments_in_submessage(),
        fragment_size: v.fragment_size(),
        sample_size: v.sample_size(),
        inline_qos,
        key_flag: flags & FLAG_K != 0,
        fragments: b.rest(pos)?,
    })
}

/// The walk's cheap check (without inline QoS, which is not checked cheaply): the fixed
/// fields and where the fragments start.
#[inline]
pub(super) fn surely_decodes(b: &Bytes<'_>, flags: u8) -> bool {
    flags & FLAG_Q == 0
        && View::new(b).is_some_and(|v| data::payload_starts_within(b, v.octets_to_inline_qos()))
}

impl Submessage<'_> {
    /// [`Submessage::sample_piece`] of a DATA_FRAG without inline QoS.
    #[inline]
    pub(super) fn plain_data_frag_piece(&self) -> Option<SamplePiece> {
        let v = View::new(&self.bytes())?;
        let range = v.range();
        Some(SamplePiece {
            writer: Guid::new(self.ctx.src_prefix, v.writer()),
            sn: v.writer_sn(),
            fragments: Some(range),
            sample_size: u64::from(range.sample_size),
            payload_size: self.payload_after(v.octets_to_inline_qos()),
        })
    }
}
