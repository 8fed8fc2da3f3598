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
    match fields {
        [] => true,
        [(at, size), rest @ ..] => match at.checked_add(*size) {
            Some(end) => end <= len && fits(rest, len),
            None => false,
        },
    }
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

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::FieldSpan;
    use crate::bytes::Bytes;
    use crate::error::{Layer, Result};

    /// What reading `fields` one by one from `body` gives: the decoders' errors before
    /// the views, which a view's `new_checked` must give unchanged.
    fn field_by_field(body: &[u8], fields: &[FieldSpan]) -> Result<()> {
        let b = Bytes::new(body, Layer::Submessage, false);
        fields
            .iter()
            .try_for_each(|&(at, size)| b.slice(at, size).map(|_| ()))
    }

    #[test]
    fn a_short_body_is_named_by_the_first_field_it_cuts() {
        type Decode = fn(&Bytes<'_>) -> Result<()>;
        type Kind = (&'static str, &'static [FieldSpan], usize, Decode);
        let kinds: [Kind; 8] = [
            (
                "HEARTBEAT",
                heartbeat::field::READS,
                heartbeat::field::LEN,
                |b| heartbeat::decode(b, 0).map(|_| ()),
            ),
            (
                "HEARTBEAT_FRAG",
                heartbeat_frag::field::READS,
                heartbeat_frag::field::LEN,
                |b| heartbeat_frag::decode(b).map(|_| ()),
            ),
            (
                "HEARTBEAT_BATCH",
                heartbeat_batch::field::READS,
                heartbeat_batch::field::LEN,
                |b| heartbeat_batch::decode(b).map(|_| ()),
            ),
            ("INFO_TS", info_ts::field::READS, info_ts::field::LEN, |b| {
                info_ts::decode(b, 0).map(|_| ())
            }),
            (
                "INFO_DST",
                info_dst::field::READS,
                info_dst::field::LEN,
                |b| info_dst::decode(b).map(|_| ()),
            ),
            (
                "INFO_SRC",
                info_src::field::READS,
                info_src::field::LEN,
                |b| info_src::decode(b).map(|_| ()),
            ),
            (
                "INFO_REPLY",
                info_reply::field::READS,
                info_reply::field::LEN,
                |b| info_reply::decode(b).map(|_| ()),
            ),
            (
                "INFO_REPLY_IP4",
                info_reply_ip4::field::READS,
                info_reply_ip4::field::LEN,
                |b| info_reply_ip4::decode(b).map(|_| ()),
            ),
        ];
        for (name, reads, len, decode) in kinds {
            for short in 0..len {
                let body = vec![0u8; short];
                let b = Bytes::new(&body, Layer::Submessage, false);
                let expected = field_by_field(&body, reads);
                assert!(expected.is_err(), "{name}: {short} bytes read whole");
                assert_eq!(decode(&b), expected, "{name}: {short} bytes");
            }
            let body = vec![0u8; len];
            assert!(
                decode(&Bytes::new(&body, Layer::Submessage, false)).is_ok(),
                "{name}"
            );
        }
        // DATA's fixed part (without D/K/Q flags nothing follows it).
        for short in 0..data::field::FIXED_LEN {
            let body = vec![0u8; short];
            let b = Bytes::new(&body, Layer::Submessage, false);
            let decoded = data::decode(&b, 0).map(|_| ());
            assert_eq!(
                decoded,
                field_by_field(&body, data::field::READS),
                "DATA: {short} bytes"
            );
        }
    }
}
