//! Sequence number and fragment number sets (ACKNACK, GAP, NACK_FRAG): a base and a
//! bitmap of at most 256 bits in 32-bit words.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::types::SequenceNumber;

use super::*;

/// A set of sequence numbers as sent in ACKNACK and GAP: base + bitmap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceNumberSet<'a> {
    pub base: SequenceNumber,
    pub num_bits: u32,
    bitmap: &'a [u8],
    little_endian: bool,
}

/// Offsets (0-based) of the set bits of an RTPS bitmap: 32-bit words in the
/// submessage's byte order, most significant bit first, at most 256 bits.
pub(super) fn set_bits(
    bitmap: &[u8],
    num_bits: u32,
    little_endian: bool,
) -> impl Iterator<Item = u32> + '_ {
    let b = Bytes::new(bitmap, Layer::Submessage, little_endian);
    (0..num_bits.min(256)).filter(move |i| {
        let word = usize::try_from(i / 32)
            .ok()
            .and_then(|w| w.checked_mul(4))
            .and_then(|off| b.u32(off).ok());
        match (word, 31u32.checked_sub(i % 32)) {
            (Some(word), Some(bit)) => (word >> bit) & 1 == 1,
            _ => false,
        }
    })
}

impl<'a> SequenceNumberSet<'a> {
    /// The sequence numbers whose bit is set, in order.
    pub fn iter(&self) -> impl Iterator<Item = SequenceNumber> + 'a {
        let base = self.base;
        set_bits(self.bitmap, self.num_bits, self.little_endian)
            .filter_map(move |i| base.checked_add(i64::from(i)))
    }
}

/// A set of fragment numbers as sent in NACK_FRAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentNumberSet<'a> {
    pub base: u32,
    pub num_bits: u32,
    bitmap: &'a [u8],
    little_endian: bool,
}

impl<'a> FragmentNumberSet<'a> {
    /// The fragment numbers whose bit is set, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + 'a {
        let base = self.base;
        set_bits(self.bitmap, self.num_bits, self.little_endian)
            .filter_map(move |i| base.checked_add(i))
    }
}

/// Number of 32-bit bitmap words for `num_bits`, rejecting sets larger than the spec's 256.
pub(super) fn bitmap_len(num_bits: u32, offset: usize) -> Result<usize> {
    if num_bits > 256 {
        return Err(DissectError::Invalid {
            layer: Layer::Submessage,
            offset,
            what: "bitmap numBits",
            value: u64::from(num_bits),
        });
    }
    Ok(usize::try_from(num_bits.div_ceil(32))
        .unwrap_or(8)
        .saturating_mul(4))
}

/// A set's numBits and bitmap, read at `num_bits_at` and `bitmap_at`; the offset after it.
fn read_bitmap<'a>(
    b: &Bytes<'a>,
    num_bits_at: usize,
    bitmap_at: usize,
) -> Result<(u32, &'a [u8], usize)> {
    let num_bits = b.u32(num_bits_at)?;
    let words = bitmap_len(num_bits, num_bits_at)?;
    let bitmap = b.slice(bitmap_at, words)?;
    Ok((num_bits, bitmap, bitmap_at.saturating_add(words)))
}

/// A SequenceNumberSet's fields, from the start of the set.
mod sn_set_field {
    pub const BASE: usize = 0;
    pub const NUM_BITS: usize = 8;
    pub const BITMAP: usize = 12;
}

/// A FragmentNumberSet's fields, from the start of the set.
mod frag_set_field {
    pub const BASE: usize = 0;
    pub const NUM_BITS: usize = 4;
    pub const BITMAP: usize = 8;
}

/// The end of a set whose numBits is at `num_bits_at` and bitmap at `bitmap_at`, when
/// numBits is valid and the bitmap and `after` more bytes are in `b`: the walk's cheap
/// check of a set, without reading it.
#[inline]
fn set_end(b: &Bytes<'_>, num_bits_at: usize, bitmap_at: usize, after: usize) -> Option<usize> {
    let words = b
        .u32(num_bits_at)
        .ok()
        .filter(|n| *n <= 256)?
        .div_ceil(32)
        .saturating_mul(4);
    let end = bitmap_at.saturating_add(usize::try_from(words).ok()?);
    (end.saturating_add(after) <= b.data().len()).then_some(end)
}

/// The base of a SequenceNumberSet at `at`, when it is there.
#[inline]
pub(super) fn sn_set_base(b: &Bytes<'_>, at: usize) -> Option<SequenceNumber> {
    read_sn(b, at.saturating_add(sn_set_field::BASE)).ok()
}

/// [`set_end`] of a SequenceNumberSet at `at`.
#[inline]
pub(super) fn sn_set_end(b: &Bytes<'_>, at: usize, after: usize) -> Option<usize> {
    use sn_set_field as f;
    set_end(
        b,
        at.saturating_add(f::NUM_BITS),
        at.saturating_add(f::BITMAP),
        after,
    )
}

/// [`set_end`] of a FragmentNumberSet at `at`.
#[inline]
pub(super) fn frag_set_end(b: &Bytes<'_>, at: usize, after: usize) -> Option<usize> {
    use frag_set_field as f;
    set_end(
        b,
        at.saturating_add(f::NUM_BITS),
        at.saturating_add(f::BITMAP),
        after,
    )
}

/// Parse a SequenceNumberSet at `offset`; returns it and the offset after it.
// Inlined into ACKNACK's and GAP's readers, as it was before sets.rs had its own module
// (out of line it cost a call per ACKNACK: +2.8 M instructions on the small-frame replay).
#[inline]
pub(super) fn read_sn_set<'a>(
    b: &Bytes<'a>,
    offset: usize,
) -> Result<(SequenceNumberSet<'a>, usize)> {
    use sn_set_field as f;
    let base = read_sn(b, offset.saturating_add(f::BASE))?;
    let (num_bits, bitmap, end) = read_bitmap(
        b,
        offset.saturating_add(f::NUM_BITS),
        offset.saturating_add(f::BITMAP),
    )?;
    let set = SequenceNumberSet {
        base,
        num_bits,
        bitmap,
        little_endian: b.little_endian(),
    };
    Ok((set, end))
}

/// Parse a FragmentNumberSet at `offset`; returns it and the offset after it.
pub(super) fn read_frag_set<'a>(
    b: &Bytes<'a>,
    offset: usize,
) -> Result<(FragmentNumberSet<'a>, usize)> {
    use frag_set_field as f;
    let base = b.u32(offset.saturating_add(f::BASE))?;
    let (num_bits, bitmap, end) = read_bitmap(
        b,
        offset.saturating_add(f::NUM_BITS),
        offset.saturating_add(f::BITMAP),
    )?;
    let set = FragmentNumberSet {
        base,
        num_bits,
        bitmap,
        little_endian: b.little_endian(),
    };
    Ok((set, end))
}
