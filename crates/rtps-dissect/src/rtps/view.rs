//! Checked views of a submessage's fixed fields (smoltcp's `new_checked`): the length is
//! checked once, then every field of the view reads without failing.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::types::{EntityId, GuidPrefix, SequenceNumber};

/// A field of a fixed layout: its offset from the end of the submessage header and its
/// size. A kind lists its fields in the order its decoder reads them, so that a body cut
/// short is named by the first field it lacks, as reading field by field would name it.
pub(super) type FieldSpan = (usize, usize);

/// Whether every field lies within `len` bytes: each view asserts it at compile time, so
/// its reads cannot fall outside the checked bytes.
pub(super) const fn fits(fields: &[FieldSpan], len: usize) -> bool {
    let mut i = 0;
    while i < fields.len() {
        let (at, size) = fields[i];
        if at + size > len {
            return false;
        }
        i += 1;
    }
    true
}

/// The first `LEN` bytes of a body, checked to be there.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fixed<'a, const LEN: usize> {
    bytes: Bytes<'a>,
}

impl<'a, const LEN: usize> Fixed<'a, LEN> {
    /// The body's fixed fields, or the error of the first of `fields` it cuts short
    /// (layer, offset, the bytes needed and those there).
    #[inline(always)]
    pub(super) fn new_checked(body: &Bytes<'a>, fields: &[FieldSpan]) -> Result<Self> {
        match body.data().first_chunk::<LEN>() {
            // (a fixed-length slice: the compiler removes the reads' bounds checks)
            Some(fixed) => Ok(Self {
                bytes: body.with(fixed),
            }),
            None => Err(first_cut(body.data().len(), fields)),
        }
    }

    // The reads below cannot fail: `LEN` bytes are there and every view asserts (`fits`)
    // that its fields lie within them; the fallbacks are never taken.
    #[inline(always)]
    pub(super) fn u8(&self, at: usize) -> u8 {
        self.bytes.u8(at).unwrap_or_default()
    }
    #[inline(always)]
    pub(super) fn u16(&self, at: usize) -> u16 {
        self.bytes.u16(at).unwrap_or_default()
    }
    #[inline(always)]
    pub(super) fn u32(&self, at: usize) -> u32 {
        self.bytes.u32(at).unwrap_or_default()
    }
    #[inline(always)]
    pub(super) fn i32(&self, at: usize) -> i32 {
        self.bytes.i32(at).unwrap_or_default()
    }
    #[inline(always)]
    pub(super) fn array<const N: usize>(&self, at: usize) -> [u8; N] {
        self.bytes.array::<N>(at).unwrap_or([0; N])
    }
    #[inline(always)]
    pub(super) fn sn(&self, at: usize) -> SequenceNumber {
        super::read_sn(&self.bytes, at).unwrap_or_default()
    }
    #[inline(always)]
    pub(super) fn entity(&self, at: usize) -> EntityId {
        EntityId(self.array::<4>(at))
    }
    #[inline(always)]
    pub(super) fn guid_prefix(&self, at: usize) -> GuidPrefix {
        GuidPrefix(self.array::<12>(at))
    }
}

/// The error reading `fields` in order from a body of `len` bytes would give.
#[cold]
fn first_cut(len: usize, fields: &[FieldSpan]) -> DissectError {
    let (offset, needed) = fields
        .iter()
        .copied()
        .find(|&(at, size)| at.saturating_add(size) > len)
        .unwrap_or((len, 1));
    DissectError::Truncated {
        layer: Layer::Submessage,
        offset,
        needed,
        actual: len.saturating_sub(offset),
    }
}
