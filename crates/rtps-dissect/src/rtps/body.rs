//! Submessage bodies: sequence number and fragment sets, payloads, DATA_BATCH samples,
//! and `parse_body`, which decodes a body by its kind and flags.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::plist::ParameterList;
use crate::types::{EntityId, Guid, GuidPrefix, SequenceNumber, Time, VendorId};

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
    pub fn parameter_list(&self) -> Option<ParameterList<'a>> {
        match self.representation {
            Some(0x0002) | Some(0x000a) => Some(ParameterList::new(self.body(), false)),
            Some(0x0003) | Some(0x000b) => Some(ParameterList::new(self.body(), true)),
            _ => None,
        }
    }
}

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
        use field::data_batch::sample_info as f;
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
            let flags = b.be_u16(at.saturating_add(f::FLAGS))?;
            let size = b.u32(at.saturating_add(f::LENGTH))?;
            let mut pos = at.saturating_add(f::OPTIONAL);
            let timestamp = if flags & SAMPLE_INFO_T != 0 {
                let t = info_ts(&b.with(b.slice(pos, f::TIMESTAMP_LEN)?))?;
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

/// Typed content of a submessage. Payloads are borrowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubmessageBody<'a> {
    Pad,
    AckNack {
        reader: EntityId,
        writer: EntityId,
        reader_sn_state: SequenceNumberSet<'a>,
        count: i32,
        final_flag: bool,
    },
    Heartbeat {
        reader: EntityId,
        writer: EntityId,
        first_sn: SequenceNumber,
        last_sn: SequenceNumber,
        count: i32,
        final_flag: bool,
        liveliness_flag: bool,
    },
    Gap {
        reader: EntityId,
        writer: EntityId,
        gap_start: SequenceNumber,
        gap_list: SequenceNumberSet<'a>,
    },
    InfoTs {
        /// `None` when the invalidate flag is set.
        timestamp: Option<Time>,
    },
    InfoSrc {
        version: (u8, u8),
        vendor: VendorId,
        guid_prefix: GuidPrefix,
    },
    InfoReplyIp4 {
        address: [u8; 4],
        port: u32,
    },
    InfoDst {
        guid_prefix: GuidPrefix,
    },
    InfoReply {
        unicast_locators: u32,
    },
    NackFrag {
        reader: EntityId,
        writer: EntityId,
        writer_sn: SequenceNumber,
        fragment_number_state: FragmentNumberSet<'a>,
        count: i32,
    },
    HeartbeatFrag {
        reader: EntityId,
        writer: EntityId,
        writer_sn: SequenceNumber,
        last_fragment_num: u32,
        count: i32,
    },
    Data {
        reader: EntityId,
        writer: EntityId,
        writer_sn: SequenceNumber,
        inline_qos: Option<ParameterList<'a>>,
        /// Present when the D or K flag is set.
        payload: Option<SerializedPayload<'a>>,
        key_flag: bool,
    },
    DataFrag {
        reader: EntityId,
        writer: EntityId,
        writer_sn: SequenceNumber,
        fragment_starting_num: u32,
        fragments_in_submessage: u16,
        fragment_size: u16,
        sample_size: u32,
        inline_qos: Option<ParameterList<'a>>,
        key_flag: bool,
        /// The fragment bytes this submessage carries.
        fragments: &'a [u8],
    },
    /// RTI's DATA_BATCH: the samples are read from `samples`.
    DataBatch {
        reader: EntityId,
        writer: EntityId,
        batch_sn: SequenceNumber,
        first_sample_sn: SequenceNumber,
        offset_to_last_sample_sn: u32,
        sample_count: u32,
        inline_qos: Option<ParameterList<'a>>,
        samples: BatchSamples<'a>,
    },
    /// RTI's HEARTBEAT_BATCH: `first_sn`..`last_sn` are sample SNs, as DATA_BATCH's.
    HeartbeatBatch {
        reader: EntityId,
        writer: EntityId,
        first_batch_sn: SequenceNumber,
        last_batch_sn: SequenceNumber,
        first_sn: SequenceNumber,
        last_sn: SequenceNumber,
        count: i32,
    },
    /// DDS-Security submessages: typed, content opaque.
    Security {
        bytes: &'a [u8],
    },
    /// A vendor-specific submessage (id 0x80–0xff), decoded when the sender's vendor
    /// defines it, kept whole either way.
    VendorSpecific {
        known: Option<VendorSubmessage>,
        bytes: &'a [u8],
    },
    /// An undefined standard id, kept whole.
    Unknown {
        bytes: &'a [u8],
    },
}

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

#[inline(always)]
pub(super) fn read_sn(b: &Bytes<'_>, offset: usize) -> Result<SequenceNumber> {
    let high = b.i32(offset)?;
    let low = b.u32(offset.saturating_add(4))?;
    Ok(i64::from(high).wrapping_shl(32) | i64::from(low))
}

#[inline(always)]
pub(super) fn read_entity(b: &Bytes<'_>, offset: usize) -> Result<EntityId> {
    Ok(EntityId(b.array::<4>(offset)?))
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

/// Parse a SequenceNumberSet at `offset`; returns it and the offset after it.
pub(super) fn read_sn_set<'a>(
    b: &Bytes<'a>,
    offset: usize,
) -> Result<(SequenceNumberSet<'a>, usize)> {
    use field::sn_set as f;
    let base = read_sn(b, offset.saturating_add(f::BASE))?;
    let num_bits_at = offset.saturating_add(f::NUM_BITS);
    let num_bits = b.u32(num_bits_at)?;
    let words = bitmap_len(num_bits, num_bits_at)?;
    let start = offset.saturating_add(f::BITMAP);
    let bitmap = b.slice(start, words)?;
    Ok((
        SequenceNumberSet {
            base,
            num_bits,
            bitmap,
            little_endian: b.little_endian(),
        },
        start.saturating_add(words),
    ))
}

pub(super) fn read_frag_set<'a>(
    b: &Bytes<'a>,
    offset: usize,
) -> Result<(FragmentNumberSet<'a>, usize)> {
    use field::frag_set as f;
    let base = b.u32(offset.saturating_add(f::BASE))?;
    let num_bits_at = offset.saturating_add(f::NUM_BITS);
    let num_bits = b.u32(num_bits_at)?;
    let words = bitmap_len(num_bits, num_bits_at)?;
    let start = offset.saturating_add(f::BITMAP);
    let bitmap = b.slice(start, words)?;
    Ok((
        FragmentNumberSet {
            base,
            num_bits,
            bitmap,
            little_endian: b.little_endian(),
        },
        start.saturating_add(words),
    ))
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
    let start = field::data::INLINE_QOS_BASE.saturating_add(otiq);
    if !has_inline_qos {
        return Ok((None, start));
    }
    let (q, after) = read_inline_qos(b, start)?;
    Ok((Some(q), after))
}

pub(super) const FLAG_DATA_Q: u8 = 0x02;
pub(super) const FLAG_DATA_D: u8 = 0x04;
pub(super) const FLAG_DATA_K: u8 = 0x08;
pub(super) const FLAG_DATAFRAG_Q: u8 = 0x02;
pub(super) const FLAG_DATAFRAG_K: u8 = 0x04;

/// A writer SN that names a sample: RTPS sequence numbers start at 1.
pub(super) fn read_valid_sn(
    b: &Bytes<'_>,
    offset: usize,
    what: &'static str,
) -> Result<SequenceNumber> {
    let sn = read_sn(b, offset)?;
    if sn < 1 {
        return Err(DissectError::Invalid {
            layer: Layer::Submessage,
            offset,
            what,
            value: sn as u64,
        });
    }
    Ok(sn)
}

// The fixed fields of the commonest submessages are read through these, once from a
// fixed-length prefix of the body (whose bounds checks the compiler then removes) and,
// when the body is shorter, from the body itself (for the same errors as any field).

#[inline(always)]
pub(super) fn heartbeat<'a>(b: &Bytes<'_>, flags: u8) -> Result<SubmessageBody<'a>> {
    use field::heartbeat as f;
    Ok(SubmessageBody::Heartbeat {
        reader: read_entity(b, f::READER)?,
        writer: read_entity(b, f::WRITER)?,
        first_sn: read_sn(b, f::FIRST_SN)?,
        last_sn: read_sn(b, f::LAST_SN)?,
        count: b.i32(f::COUNT)?,
        final_flag: flags & 0x02 != 0,
        liveliness_flag: flags & 0x04 != 0,
    })
}

#[inline(always)]
pub(super) fn info_ts(b: &Bytes<'_>) -> Result<Time> {
    use field::info_ts as f;
    Ok(Time {
        seconds: b.i32(f::SECONDS)?,
        fraction: b.u32(f::FRACTION)?,
    })
}

pub(super) const FLAG_INFO_TS_INVALIDATE: u8 = 0x02;

/// INFO_TS's timestamp; `None` when the invalidate flag is set.
#[inline(always)]
pub(super) fn info_ts_timestamp(b: &Bytes<'_>, flags: u8) -> Result<Option<Time>> {
    if flags & FLAG_INFO_TS_INVALIDATE != 0 {
        return Ok(None);
    }
    Ok(Some(
        match b.data().first_chunk::<{ field::info_ts::LEN }>() {
            Some(fixed) => info_ts(&b.with(fixed))?,
            None => info_ts(b)?,
        },
    ))
}

/// INFO_DST's guidPrefix.
#[inline(always)]
pub(super) fn info_dst_prefix(b: &Bytes<'_>) -> Result<GuidPrefix> {
    Ok(GuidPrefix(b.array::<12>(field::info_dst::GUID_PREFIX)?))
}

/// DATA's octetsToInlineQos, reader, writer and writerSN.
#[inline(always)]
pub(super) fn data_fixed(b: &Bytes<'_>) -> Result<(usize, EntityId, EntityId, SequenceNumber)> {
    use field::data as f;
    Ok((
        usize::from(b.u16(f::OCTETS_TO_INLINE_QOS)?),
        read_entity(b, f::READER)?,
        read_entity(b, f::WRITER)?,
        read_sn(b, f::WRITER_SN)?,
    ))
}

pub(super) const FLAG_DATA_BATCH_Q: u8 = 0x02;

/// DATA after its ids and SN: the inline QoS and, when D or K is set, the serialized payload.
/// RTI's DATA_SESSION carries the same after its session SN.
#[inline]
fn data_rest<'a>(
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

/// DATA_BATCH: fixed fields, batch inline QoS, the SampleInfo list (every entry must
/// decode) and the sample list after its encapsulation header (what the capture holds
/// of it).
pub(super) fn data_batch<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
    use field::data_batch as f;
    let reader = read_entity(b, f::READER)?;
    let writer = read_entity(b, f::WRITER)?;
    let batch_sn = read_sn(b, f::BATCH_SN)?;
    let first_sample_sn = read_sn(b, f::FIRST_SAMPLE_SN)?;
    let offset_to_last_sample_sn = b.u32(f::OFFSET_TO_LAST_SAMPLE_SN)?;
    let sample_count = b.u32(f::SAMPLE_COUNT)?;
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
        first_sn: first_sample_sn,
        little_endian: b.little_endian(),
    };
    samples.check()?;
    Ok(SubmessageBody::DataBatch {
        reader,
        writer,
        batch_sn,
        first_sample_sn,
        offset_to_last_sample_sn,
        sample_count,
        inline_qos,
        samples,
    })
}

/// Decode a submessage body. `body` is exactly the submessage's bytes after its header;
/// `vendor` is the sender's (it gives vendor-specific ids their meaning).
pub fn parse_body(
    kind: SubmessageKind,
    flags: u8,
    body: &[u8],
    vendor: VendorId,
) -> Result<SubmessageBody<'_>> {
    let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
    Ok(match kind {
        SubmessageKind::Pad => SubmessageBody::Pad,
        SubmessageKind::AckNack => {
            use field::acknack as f;
            let (set, after) = read_sn_set(&b, f::SN_STATE)?;
            SubmessageBody::AckNack {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                reader_sn_state: set,
                count: b.i32(after)?,
                final_flag: flags & 0x02 != 0,
            }
        }
        SubmessageKind::Heartbeat => match body.first_chunk::<{ field::heartbeat::LEN }>() {
            Some(fixed) => heartbeat(&b.with(fixed), flags)?,
            None => heartbeat(&b, flags)?,
        },
        SubmessageKind::Gap => {
            use field::gap as f;
            // A GAP that starts at or below SN 0 names no sample (SNs start at 1); taking
            // it would mark every later SN as already dealt with.
            let gap_start = read_valid_sn(&b, f::GAP_START, "GAP gapStart")?;
            let (set, _) = read_sn_set(&b, f::GAP_LIST)?;
            if set.base < 1 {
                return Err(DissectError::Invalid {
                    layer: Layer::Submessage,
                    offset: f::GAP_LIST,
                    what: "GAP gapList base",
                    value: set.base as u64,
                });
            }
            SubmessageBody::Gap {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                gap_start,
                gap_list: set,
            }
        }
        SubmessageKind::InfoTs => SubmessageBody::InfoTs {
            timestamp: info_ts_timestamp(&b, flags)?,
        },
        SubmessageKind::InfoSrc => {
            use field::info_src as f;
            SubmessageBody::InfoSrc {
                version: (b.u8(f::VERSION_MAJOR)?, b.u8(f::VERSION_MINOR)?),
                vendor: VendorId(b.array::<2>(f::VENDOR)?),
                guid_prefix: GuidPrefix(b.array::<12>(f::GUID_PREFIX)?),
            }
        }
        SubmessageKind::InfoReplyIp4 => {
            use field::info_reply_ip4 as f;
            SubmessageBody::InfoReplyIp4 {
                address: b.array::<4>(f::ADDRESS)?,
                port: b.u32(f::PORT)?,
            }
        }
        SubmessageKind::InfoDst => SubmessageBody::InfoDst {
            guid_prefix: info_dst_prefix(&b)?,
        },
        SubmessageKind::InfoReply => SubmessageBody::InfoReply {
            unicast_locators: b.u32(field::info_reply::UNICAST_LOCATOR_COUNT)?,
        },
        SubmessageKind::NackFrag => {
            use field::nack_frag as f;
            let (set, after) = read_frag_set(&b, f::FRAG_STATE)?;
            SubmessageBody::NackFrag {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                writer_sn: read_sn(&b, f::WRITER_SN)?,
                fragment_number_state: set,
                count: b.i32(after)?,
            }
        }
        SubmessageKind::HeartbeatFrag => {
            use field::heartbeat_frag as f;
            SubmessageBody::HeartbeatFrag {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                writer_sn: read_sn(&b, f::WRITER_SN)?,
                last_fragment_num: b.u32(f::LAST_FRAGMENT)?,
                count: b.i32(f::COUNT)?,
            }
        }
        SubmessageKind::Data => {
            use field::data as f;
            let (otiq, reader, writer, writer_sn) = match body.first_chunk::<{ f::FIXED_LEN }>() {
                Some(fixed) => data_fixed(&b.with(fixed))?,
                None => data_fixed(&b)?,
            };
            data_rest(&b, flags, otiq, reader, writer, writer_sn)?
        }
        SubmessageKind::DataFrag => {
            use field::data_frag as f;
            let otiq = usize::from(b.u16(f::OCTETS_TO_INLINE_QOS)?);
            let reader = read_entity(&b, f::READER)?;
            let writer = read_entity(&b, f::WRITER)?;
            let writer_sn = read_sn(&b, f::WRITER_SN)?;
            let fragment_starting_num = b.u32(f::FRAGMENT_STARTING_NUM)?;
            let fragments_in_submessage = b.u16(f::FRAGMENTS_IN_SUBMESSAGE)?;
            let fragment_size = b.u16(f::FRAGMENT_SIZE)?;
            let sample_size = b.u32(f::SAMPLE_SIZE)?;
            let (inline_qos, pos) = inline_qos_and_end(&b, otiq, flags & FLAG_DATAFRAG_Q != 0)?;
            SubmessageBody::DataFrag {
                reader,
                writer,
                writer_sn,
                fragment_starting_num,
                fragments_in_submessage,
                fragment_size,
                sample_size,
                inline_qos,
                key_flag: flags & FLAG_DATAFRAG_K != 0,
                fragments: b.rest(pos)?,
            }
        }
        SubmessageKind::DataSession => {
            use field::data_session as f;
            let otiq = usize::from(b.u16(f::OCTETS_TO_INLINE_QOS)?);
            let reader = read_entity(&b, f::READER)?;
            let writer = read_entity(&b, f::WRITER)?;
            read_sn(&b, f::SESSION_SN)?;
            let writer_sn = read_sn(&b, f::VIRTUAL_SN)?;
            data_rest(&b, flags, otiq, reader, writer, writer_sn)?
        }
        SubmessageKind::DataBatch => data_batch(&b, flags)?,
        SubmessageKind::HeartbeatBatch => {
            use field::heartbeat_batch as f;
            SubmessageBody::HeartbeatBatch {
                reader: read_entity(&b, f::READER)?,
                writer: read_entity(&b, f::WRITER)?,
                first_batch_sn: read_sn(&b, f::FIRST_BATCH_SN)?,
                last_batch_sn: read_sn(&b, f::LAST_BATCH_SN)?,
                first_sn: read_sn(&b, f::FIRST_SN)?,
                last_sn: read_sn(&b, f::LAST_SN)?,
                count: b.i32(f::COUNT)?,
            }
        }
        SubmessageKind::SecBody
        | SubmessageKind::SecPrefix
        | SubmessageKind::SecPostfix
        | SubmessageKind::SrtpsPrefix
        | SubmessageKind::SrtpsPostfix => SubmessageBody::Security { bytes: body },
        SubmessageKind::VendorSpecific(id) => SubmessageBody::VendorSpecific {
            known: VendorSubmessage::parse(vendor, id, &b)?,
            bytes: body,
        },
        SubmessageKind::Unknown(_) => SubmessageBody::Unknown { bytes: body },
    })
}

/// Whether [`parse_body`] surely succeeds, found from lengths and a few fields: the
/// iterator's check for the commonest kinds, so that their bodies are decoded only when
/// a consumer asks. `false` means "not sure" (the body is then decoded to find out), so
/// this only has to be sound: `true` implies `parse_body(..).is_ok()` (a test and the
/// fuzz target check it).
pub(super) fn surely_decodes(kind: SubmessageKind, flags: u8, body: &[u8]) -> bool {
    let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
    let len = body.len();
    // A sequence/fragment number set at `at` (its numBits at `at + num_bits`), and the
    // bytes after it; the end of the set when those are present.
    let set_end = |at: usize, num_bits: usize, bitmap: usize, after: usize| {
        let words = b
            .u32(at.saturating_add(num_bits))
            .ok()
            .filter(|n| *n <= 256)?
            .div_ceil(32)
            .saturating_mul(4);
        let end = at
            .saturating_add(bitmap)
            .saturating_add(usize::try_from(words).ok()?);
        (end.saturating_add(after) <= len).then_some(end)
    };
    let sn_at_least_one = |at: usize| read_sn(&b, at).is_ok_and(|sn| sn >= 1);
    match kind {
        SubmessageKind::Heartbeat => len >= field::heartbeat::LEN,
        SubmessageKind::HeartbeatFrag => len >= field::heartbeat_frag::COUNT.saturating_add(4),
        SubmessageKind::Data if flags & FLAG_DATA_Q == 0 => {
            len >= field::data::FIXED_LEN
                && (flags & (FLAG_DATA_D | FLAG_DATA_K) == 0
                    || b.u16(field::data::OCTETS_TO_INLINE_QOS)
                        .is_ok_and(|otiq| field::data::INLINE_QOS_BASE + usize::from(otiq) <= len))
        }
        SubmessageKind::DataFrag if flags & FLAG_DATAFRAG_Q == 0 => {
            len >= field::data_frag::SAMPLE_SIZE.saturating_add(4)
                && b.u16(field::data_frag::OCTETS_TO_INLINE_QOS)
                    .is_ok_and(|otiq| field::data_frag::INLINE_QOS_BASE + usize::from(otiq) <= len)
        }
        SubmessageKind::AckNack => {
            let f = field::sn_set::NUM_BITS;
            set_end(field::acknack::SN_STATE, f, field::sn_set::BITMAP, 4).is_some()
        }
        SubmessageKind::NackFrag => {
            let f = field::frag_set::NUM_BITS;
            len >= field::nack_frag::FRAG_STATE
                && set_end(field::nack_frag::FRAG_STATE, f, field::frag_set::BITMAP, 4).is_some()
        }
        SubmessageKind::Gap => {
            let f = field::sn_set::NUM_BITS;
            sn_at_least_one(field::gap::GAP_START)
                && sn_at_least_one(field::gap::GAP_LIST)
                && set_end(field::gap::GAP_LIST, f, field::sn_set::BITMAP, 0).is_some()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::VendorId;

    /// `surely_decodes` may say "not sure", never "yes" wrongly: over every flag
    /// combination, body lengths up to 96 bytes and bodies of pseudo-random bytes in
    /// which the length-like fields are often small (so that sets and inline-QoS
    /// offsets fit), a "yes" is always a body that decodes.
    #[test]
    fn surely_decodes_only_what_decodes() {
        let kinds = [
            SubmessageKind::Heartbeat,
            SubmessageKind::HeartbeatFrag,
            SubmessageKind::Data,
            SubmessageKind::DataFrag,
            SubmessageKind::AckNack,
            SubmessageKind::NackFrag,
            SubmessageKind::Gap,
            SubmessageKind::InfoTs,
            SubmessageKind::Pad,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut sure, mut checked) = (0u32, 0u32);
        for kind in kinds {
            for flags in 0..=255u8 {
                for len in 0..96usize {
                    let body: Vec<u8> = (0..len)
                        .map(|_| {
                            let r = next();
                            // Mostly zeros and small values: numBits, octetsToInlineQos
                            // and SN halves then take their interesting values.
                            if r % 3 == 0 {
                                (r >> 8) as u8
                            } else {
                                ((r >> 8) % 3) as u8
                            }
                        })
                        .collect();
                    checked += 1;
                    if surely_decodes(kind, flags, &body) {
                        sure += 1;
                        assert!(
                            parse_body(kind, flags, &body, VendorId::default()).is_ok(),
                            "{kind:?} flags {flags:#04x} body {body:02x?}"
                        );
                    }
                }
            }
        }
        // The check must also say "yes" often, or it saves nothing.
        assert!(sure > checked / 8, "{sure} of {checked}");
    }
}
