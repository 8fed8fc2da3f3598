//! DATA (RTPS 8.3.7.2): its fixed fields, inline QoS and serialized payload, which
//! DATA_FRAG and RTI's DATA_SESSION share in part, and the sample pieces the DATA family
//! carries.

use crate::bytes::Bytes;
use crate::error::{Layer, Result};
use crate::plist::ParameterList;
use crate::types::{EntityId, Guid, SequenceNumber};

use super::*;

/// Offsets from the end of the submessage header (extraFlags at 0); DATA_FRAG and
/// DATA_SESSION share the first ones.
pub(super) mod field {
    pub const OCTETS_TO_INLINE_QOS: usize = 2;
    pub const READER: usize = 4;
    pub const WRITER: usize = 8;
    pub const WRITER_SN: usize = 12;
    /// octetsToInlineQos counts from here (the end of its own field).
    pub const INLINE_QOS_BASE: usize = 4;
    /// extraFlags to writerSN: the fixed fields.
    pub const FIXED_LEN: usize = 20;
}

view::fixed_view! {
    /// A DATA body checked to hold its fixed fields (which DATA_FRAG and DATA_SESSION
    /// start with).
    View(field::FIXED_LEN) {
        octets_to_inline_qos: U16 = field::OCTETS_TO_INLINE_QOS,
        reader: Entity = field::READER,
        writer: Entity = field::WRITER,
        writer_sn: Sn = field::WRITER_SN,
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

/// The serialized payload of a DATA: encapsulation header + body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SerializedPayload<'a> {
    /// Representation id (CDR_BE 0x0000, CDR_LE 0x0001, PL_CDR_BE 0x0002, PL_CDR_LE 0x0003,
    /// CDR2_*, ...); `None` when the payload is shorter than the encapsulation header.
    pub representation: Option<u16>,
    pub options: Option<u16>,
    /// Everything after the submessage's inline QoS, encapsulation header included.
    pub bytes: &'a [u8],
}

impl<'a> SerializedPayload<'a> {
    /// A payload from its bytes, encapsulation header first.
    pub fn new(bytes: &'a [u8]) -> Self {
        let b = Bytes::big(bytes, Layer::Submessage);
        Self {
            representation: b.be_u16(0).ok(),
            options: b.be_u16(2).ok(),
            bytes,
        }
    }

    /// The body after the 4-byte encapsulation header.
    pub fn body(&self) -> &'a [u8] {
        self.bytes.get(4..).unwrap_or_default()
    }

    /// Payload of a ParameterList representation (PL_CDR_BE / PL_CDR_LE), if it is one.
    pub(crate) fn parameter_list(&self) -> Option<ParameterList<'a>> {
        match self.representation {
            Some(0x0002) | Some(0x000a) => Some(ParameterList::new(self.body(), false)),
            Some(0x0003) | Some(0x000b) => Some(ParameterList::new(self.body(), true)),
            _ => None,
        }
    }
}

/// What one DATA or DATA_FRAG carries of a writer's sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplePiece {
    pub writer: Guid,
    pub sn: SequenceNumber,
    /// `None` for DATA (the whole sample in one submessage).
    pub fragments: Option<FragmentRange>,
    /// Size of the whole sample: DATA_FRAG's sampleSize, DATA's serialized payload.
    pub sample_size: u64,
    /// Serialized bytes in this submessage, on the wire ([`Submessage::payload_size`]).
    pub payload_size: u64,
}

/// The sample pieces of one submessage ([`Submessage::sample_pieces`]).
#[derive(Debug, Clone)]
pub struct SamplePieces<'a> {
    pub(super) one: Option<SamplePiece>,
    pub(super) batch: Option<(Guid, BatchSampleIter<'a>)>,
}

impl Iterator for SamplePieces<'_> {
    type Item = SamplePiece;

    #[inline]
    fn next(&mut self) -> Option<SamplePiece> {
        if let Some(piece) = self.one.take() {
            return Some(piece);
        }
        let (writer, samples) = self.batch.as_mut()?;
        let sample = samples.next()?;
        Some(SamplePiece {
            writer: *writer,
            sn: sample.sn,
            fragments: None,
            sample_size: u64::from(sample.size),
            payload_size: u64::from(sample.size),
        })
    }
}

/// Inline QoS of DATA/DATA_FRAG: a ParameterList starting at `offset`, ending at its
/// sentinel. Returns it and the offset just after it.
pub(super) fn read_inline_qos<'a>(
    b: &Bytes<'a>,
    offset: usize,
) -> Result<(ParameterList<'a>, usize)> {
    let rest = b.rest(offset)?;
    let plist = ParameterList::new(rest, b.little_endian());
    let used = plist.byte_len()?;
    let list = ParameterList::new(rest.get(..used).unwrap_or(rest), b.little_endian());
    Ok((list, offset.saturating_add(used)))
}

/// The inline QoS of a DATA/DATA_FRAG (when its Q flag is set) and the offset where
/// what follows it (payload, fragments) starts; `otiq` is octetsToInlineQos.
pub(super) fn inline_qos_and_end<'a>(
    b: &Bytes<'a>,
    otiq: usize,
    has_inline_qos: bool,
) -> Result<(Option<ParameterList<'a>>, usize)> {
    let start = field::INLINE_QOS_BASE.saturating_add(otiq);
    if !has_inline_qos {
        return Ok((None, start));
    }
    let (q, after) = read_inline_qos(b, start)?;
    Ok((Some(q), after))
}

pub(super) const FLAG_DATA_Q: u8 = 0x02;
pub(super) const FLAG_DATA_D: u8 = 0x04;
pub(super) const FLAG_DATA_K: u8 = 0x08;

/// DATA after its ids and SN: the inline QoS and, when D or K is set, the serialized payload.
/// RTI's DATA_SESSION carries the same after its session SN.
#[inline]
pub(super) fn decode_rest<'a>(
    b: &Bytes<'a>,
    flags: u8,
    otiq: usize,
    reader: EntityId,
    writer: EntityId,
    writer_sn: SequenceNumber,
) -> Result<SubmessageBody<'a>> {
    let (inline_qos, pos) = inline_qos_and_end(b, otiq, flags & FLAG_DATA_Q != 0)?;
    let payload = if flags & (FLAG_DATA_D | FLAG_DATA_K) != 0 {
        Some(SerializedPayload::new(b.rest(pos)?))
    } else {
        None
    };
    Ok(SubmessageBody::Data {
        reader,
        writer,
        writer_sn,
        inline_qos,
        payload,
        key_flag: flags & FLAG_DATA_K != 0,
    })
}

/// DATA: its fixed fields through its [`View`], then [`decode_rest`].
#[inline]
pub(super) fn decode<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
    let v = View::new_checked(b)?;
    decode_rest(
        b,
        flags,
        usize::from(v.octets_to_inline_qos()),
        v.reader(),
        v.writer(),
        v.writer_sn(),
    )
}

/// The walk's cheap check (without inline QoS, which is not checked cheaply): the fixed
/// fields and, when a payload follows, where it starts.
#[inline]
pub(super) fn surely_decodes(b: &Bytes<'_>, flags: u8) -> bool {
    flags & FLAG_DATA_Q == 0
        && View::new(b).is_some_and(|v| {
            flags & (FLAG_DATA_D | FLAG_DATA_K) == 0
                || payload_starts_within(b, v.octets_to_inline_qos())
        })
}

/// Whether the serialized payload (or the fragments) of a DATA-family body without
/// inline QoS starts within `b`: its octetsToInlineQos points at most to the end.
#[inline(always)]
pub(super) fn payload_starts_within(b: &Bytes<'_>, octets_to_inline_qos: u16) -> bool {
    field::INLINE_QOS_BASE + usize::from(octets_to_inline_qos) <= b.data().len()
}

impl Submessage<'_> {
    /// [`Submessage::sample_piece`] of a DATA without inline QoS.
    #[inline]
    pub(super) fn plain_data_piece(&self) -> Option<SamplePiece> {
        let v = View::new(&self.bytes())?;
        let payload_size = if self.flags & (FLAG_DATA_D | FLAG_DATA_K) == 0 {
            0
        } else {
            self.payload_after(v.octets_to_inline_qos())
        };
        Some(SamplePiece {
            writer: Guid::new(self.ctx.src_prefix, v.writer()),
            sn: v.writer_sn(),
            fragments: None,
            sample_size: payload_size,
            payload_size,
        })
    }

    /// [`Submessage::payload_size`] of a DATA or DATA_FRAG that has no inline QoS and
    /// carries serialized data: from octetsToInlineQos to the end, with what a snaplen
    /// cut off.
    #[inline(always)]
    pub(super) fn payload_after(&self, octets_to_inline_qos: u16) -> u64 {
        let otiq = usize::from(octets_to_inline_qos);
        let start = field::INLINE_QOS_BASE.saturating_add(otiq);
        let cut = self.on_wire.saturating_sub(self.captured);
        self.body_bytes()
            .len()
            .saturating_sub(start)
            .saturating_add(cut) as u64
    }
}
