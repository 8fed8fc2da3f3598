//! The RTPS message: header, submessages, and the INFO_* context that the
//! interpreter carries from one submessage to the next.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::plist::ParameterList;
use crate::types::{EntityId, Guid, GuidPrefix, SequenceNumber, Time, VendorId};

pub const RTPS_HEADER_LEN: usize = 20;
const SUBMESSAGE_HEADER_LEN: usize = 4;

/// `RTPS`, and `RTPX` (used by some RTI tools).
pub fn is_rtps_magic(b: &[u8]) -> bool {
    matches!(b, b"RTPS" | b"RTPX")
}

/// The 20-byte RTPS message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtpsHeader {
    pub magic: [u8; 4],
    pub version: (u8, u8),
    pub vendor: VendorId,
    pub guid_prefix: GuidPrefix,
}

impl RtpsHeader {
    pub fn parse(data: &[u8]) -> Result<Self> {
        let b = Bytes::big(data, Layer::RtpsHeader);
        let magic = b.array::<4>(0)?;
        if !is_rtps_magic(&magic) {
            return Err(DissectError::Invalid {
                layer: Layer::RtpsHeader,
                offset: 0,
                what: "magic",
                value: u64::from(u32::from_be_bytes(magic)),
            });
        }
        let version = (b.u8(4)?, b.u8(5)?);
        // Receivers ignore messages of a major version they do not know (RTPS 8.3.6.3);
        // only 1.x and 2.x exist.
        if !(1..=2).contains(&version.0) {
            return Err(DissectError::Invalid {
                layer: Layer::RtpsHeader,
                offset: 4,
                what: "protocol major version",
                value: u64::from(version.0),
            });
        }
        Ok(Self {
            magic,
            version,
            vendor: VendorId(b.array::<2>(6)?),
            guid_prefix: GuidPrefix(b.array::<12>(8)?),
        })
    }
}

/// Submessage ids of RTPS 2.5 (and the DDS-Security ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubmessageKind {
    Pad,
    AckNack,
    Heartbeat,
    Gap,
    InfoTs,
    InfoSrc,
    InfoReplyIp4,
    InfoDst,
    InfoReply,
    NackFrag,
    HeartbeatFrag,
    Data,
    DataFrag,
    SecBody,
    SecPrefix,
    SecPostfix,
    SrtpsPrefix,
    SrtpsPostfix,
    Unknown(u8),
}

impl SubmessageKind {
    pub fn from_id(id: u8) -> Self {
        match id {
            0x01 => Self::Pad,
            0x06 => Self::AckNack,
            0x07 => Self::Heartbeat,
            0x08 => Self::Gap,
            0x09 => Self::InfoTs,
            0x0c => Self::InfoSrc,
            0x0d => Self::InfoReplyIp4,
            0x0e => Self::InfoDst,
            0x0f => Self::InfoReply,
            0x12 => Self::NackFrag,
            0x13 => Self::HeartbeatFrag,
            0x15 => Self::Data,
            0x16 => Self::DataFrag,
            0x30 => Self::SecBody,
            0x31 => Self::SecPrefix,
            0x32 => Self::SecPostfix,
            0x33 => Self::SrtpsPrefix,
            0x34 => Self::SrtpsPostfix,
            other => Self::Unknown(other),
        }
    }

    /// The spec's name, as Wireshark shows it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pad => "PAD",
            Self::AckNack => "ACKNACK",
            Self::Heartbeat => "HEARTBEAT",
            Self::Gap => "GAP",
            Self::InfoTs => "INFO_TS",
            Self::InfoSrc => "INFO_SRC",
            Self::InfoReplyIp4 => "INFO_REPLY_IP4",
            Self::InfoDst => "INFO_DST",
            Self::InfoReply => "INFO_REPLY",
            Self::NackFrag => "NACK_FRAG",
            Self::HeartbeatFrag => "HEARTBEAT_FRAG",
            Self::Data => "DATA",
            Self::DataFrag => "DATA_FRAG",
            Self::SecBody => "SEC_BODY",
            Self::SecPrefix => "SEC_PREFIX",
            Self::SecPostfix => "SEC_POSTFIX",
            Self::SrtpsPrefix => "SRTPS_PREFIX",
            Self::SrtpsPostfix => "SRTPS_POSTFIX",
            Self::Unknown(_) => "UNKNOWN",
        }
    }
}

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
fn set_bits(bitmap: &[u8], num_bits: u32, little_endian: bool) -> impl Iterator<Item = u32> + '_ {
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
    /// DDS-Security submessages: typed, content opaque.
    Security {
        bytes: &'a [u8],
    },
    /// Vendor-specific or unknown submessage ids, kept whole.
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

/// Receiver state carried through a message (RTPS 8.3.4 "message receiver").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    pub src_prefix: GuidPrefix,
    pub src_vendor: VendorId,
    pub src_version: (u8, u8),
    /// Set by INFO_DST; `None` means "unknown / every participant".
    pub dst_prefix: Option<GuidPrefix>,
    /// Source timestamp set by INFO_TS.
    pub timestamp: Option<Time>,
}

/// One submessage with the context that applies to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submessage<'a> {
    /// Position in the message (0-based).
    pub index: usize,
    /// Byte offset of the submessage header in the RTPS message.
    pub offset: usize,
    pub kind: SubmessageKind,
    pub id: u8,
    pub flags: u8,
    /// Length of the submessage body (after the 4-byte header), as its header claims.
    pub length: usize,
    /// The header claims more bytes than the message holds; the body was decoded from
    /// what is there.
    pub truncated: bool,
    /// Body bytes actually present (less than `length` when truncated).
    pub captured: usize,
    pub ctx: Context,
    pub body: SubmessageBody<'a>,
}

impl<'a> Submessage<'a> {
    pub fn little_endian(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The writer the submessage is about: the sender's for DATA/DATA_FRAG/HEARTBEAT/GAP/
    /// HEARTBEAT_FRAG, the destination's (from INFO_DST) for ACKNACK/NACK_FRAG.
    pub fn writer_guid(&self) -> Option<Guid> {
        match &self.body {
            SubmessageBody::Data { writer, .. }
            | SubmessageBody::DataFrag { writer, .. }
            | SubmessageBody::Heartbeat { writer, .. }
            | SubmessageBody::Gap { writer, .. }
            | SubmessageBody::HeartbeatFrag { writer, .. } => {
                Some(Guid::new(self.ctx.src_prefix, *writer))
            }
            SubmessageBody::AckNack { writer, .. } | SubmessageBody::NackFrag { writer, .. } => {
                // Without INFO_DST the writer's participant is unknown to a sniffer.
                self.ctx.dst_prefix.map(|p| Guid::new(p, *writer))
            }
            _ => None,
        }
    }

    /// The reader the submessage is about (the sender's for ACKNACK/NACK_FRAG).
    pub fn reader_guid(&self) -> Option<Guid> {
        match &self.body {
            SubmessageBody::AckNack { reader, .. } | SubmessageBody::NackFrag { reader, .. } => {
                Some(Guid::new(self.ctx.src_prefix, *reader))
            }
            SubmessageBody::Data { reader, .. }
            | SubmessageBody::DataFrag { reader, .. }
            | SubmessageBody::Heartbeat { reader, .. }
            | SubmessageBody::Gap { reader, .. }
            | SubmessageBody::HeartbeatFrag { reader, .. } => {
                Some(Guid::new(self.ctx.dst_prefix.unwrap_or_default(), *reader))
            }
            _ => None,
        }
    }

    pub fn reader_entity(&self) -> Option<EntityId> {
        self.reader_guid().map(|g| g.entity)
    }

    /// Sequence number of DATA, DATA_FRAG, NACK_FRAG, HEARTBEAT_FRAG.
    pub fn writer_sn(&self) -> Option<SequenceNumber> {
        match &self.body {
            SubmessageBody::Data { writer_sn, .. }
            | SubmessageBody::DataFrag { writer_sn, .. }
            | SubmessageBody::NackFrag { writer_sn, .. }
            | SubmessageBody::HeartbeatFrag { writer_sn, .. } => Some(*writer_sn),
            _ => None,
        }
    }

    /// The part of a sample a DATA or DATA_FRAG carries; `None` for other submessages.
    pub fn sample_piece(&self) -> Option<SamplePiece> {
        let payload_size = self.payload_size().map_or(0, |p| p as u64);
        let (writer, sn, fragments, sample_size) = match &self.body {
            SubmessageBody::Data {
                writer, writer_sn, ..
            } => (*writer, *writer_sn, None, payload_size),
            SubmessageBody::DataFrag {
                writer,
                writer_sn,
                fragment_starting_num,
                fragments_in_submessage,
                fragment_size,
                sample_size,
                ..
            } => (
                *writer,
                *writer_sn,
                Some(FragmentRange {
                    start: *fragment_starting_num,
                    count: *fragments_in_submessage,
                    fragment_size: *fragment_size,
                    sample_size: *sample_size,
                }),
                u64::from(*sample_size),
            ),
            _ => return None,
        };
        Some(SamplePiece {
            writer: Guid::new(self.ctx.src_prefix, writer),
            sn,
            fragments,
            sample_size,
            payload_size,
        })
    }

    /// Bytes of serialized data this submessage carries on the wire (DATA payload incl.
    /// its encapsulation header, or DATA_FRAG fragment bytes), counting bytes a snaplen
    /// cut off.
    pub fn payload_size(&self) -> Option<usize> {
        let cut = self.length.saturating_sub(self.captured);
        match &self.body {
            SubmessageBody::Data { payload, .. } => {
                Some(payload.map_or(0, |p| p.bytes.len().saturating_add(cut)))
            }
            SubmessageBody::DataFrag { fragments, .. } => Some(fragments.len().saturating_add(cut)),
            _ => None,
        }
    }
}

fn read_sn(b: &Bytes<'_>, offset: usize) -> Result<SequenceNumber> {
    let high = b.i32(offset)?;
    let low = b.u32(offset.saturating_add(4))?;
    Ok(i64::from(high).wrapping_shl(32) | i64::from(low))
}

fn read_entity(b: &Bytes<'_>, offset: usize) -> Result<EntityId> {
    Ok(EntityId(b.array::<4>(offset)?))
}

/// Number of 32-bit bitmap words for `num_bits`, rejecting sets larger than the spec's 256.
fn bitmap_len(num_bits: u32, offset: usize) -> Result<usize> {
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
fn read_sn_set<'a>(b: &Bytes<'a>, offset: usize) -> Result<(SequenceNumberSet<'a>, usize)> {
    let base = read_sn(b, offset)?;
    let num_bits = b.u32(offset.saturating_add(8))?;
    let words = bitmap_len(num_bits, offset.saturating_add(8))?;
    let start = offset.saturating_add(12);
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

fn read_frag_set<'a>(b: &Bytes<'a>, offset: usize) -> Result<(FragmentNumberSet<'a>, usize)> {
    let base = b.u32(offset)?;
    let num_bits = b.u32(offset.saturating_add(4))?;
    let words = bitmap_len(num_bits, offset.saturating_add(4))?;
    let start = offset.saturating_add(8);
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
fn read_inline_qos<'a>(b: &Bytes<'a>, offset: usize) -> Result<(ParameterList<'a>, usize)> {
    let rest = b.rest(offset)?;
    let plist = ParameterList::new(rest, b.little_endian());
    let used = plist.byte_len()?;
    let list = ParameterList::new(rest.get(..used).unwrap_or(rest), b.little_endian());
    Ok((list, offset.saturating_add(used)))
}

const FLAG_DATA_Q: u8 = 0x02;
const FLAG_DATA_D: u8 = 0x04;
const FLAG_DATA_K: u8 = 0x08;
const FLAG_DATAFRAG_Q: u8 = 0x02;
const FLAG_DATAFRAG_K: u8 = 0x04;

/// Decode a submessage body. `body` is exactly the submessage's bytes after its header.
pub fn parse_body(kind: SubmessageKind, flags: u8, body: &[u8]) -> Result<SubmessageBody<'_>> {
    let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
    Ok(match kind {
        SubmessageKind::Pad => SubmessageBody::Pad,
        SubmessageKind::AckNack => {
            let (set, after) = read_sn_set(&b, 8)?;
            SubmessageBody::AckNack {
                reader: read_entity(&b, 0)?,
                writer: read_entity(&b, 4)?,
                reader_sn_state: set,
                count: b.i32(after)?,
                final_flag: flags & 0x02 != 0,
            }
        }
        SubmessageKind::Heartbeat => SubmessageBody::Heartbeat {
            reader: read_entity(&b, 0)?,
            writer: read_entity(&b, 4)?,
            first_sn: read_sn(&b, 8)?,
            last_sn: read_sn(&b, 16)?,
            count: b.i32(24)?,
            final_flag: flags & 0x02 != 0,
            liveliness_flag: flags & 0x04 != 0,
        },
        SubmessageKind::Gap => {
            let (set, _) = read_sn_set(&b, 16)?;
            SubmessageBody::Gap {
                reader: read_entity(&b, 0)?,
                writer: read_entity(&b, 4)?,
                gap_start: read_sn(&b, 8)?,
                gap_list: set,
            }
        }
        SubmessageKind::InfoTs => {
            if flags & 0x02 != 0 {
                SubmessageBody::InfoTs { timestamp: None }
            } else {
                SubmessageBody::InfoTs {
                    timestamp: Some(Time {
                        seconds: b.i32(0)?,
                        fraction: b.u32(4)?,
                    }),
                }
            }
        }
        SubmessageKind::InfoSrc => SubmessageBody::InfoSrc {
            version: (b.u8(4)?, b.u8(5)?),
            vendor: VendorId(b.array::<2>(6)?),
            guid_prefix: GuidPrefix(b.array::<12>(8)?),
        },
        SubmessageKind::InfoReplyIp4 => SubmessageBody::InfoReplyIp4 {
            address: b.array::<4>(0)?,
            port: b.u32(4)?,
        },
        SubmessageKind::InfoDst => SubmessageBody::InfoDst {
            guid_prefix: GuidPrefix(b.array::<12>(0)?),
        },
        SubmessageKind::InfoReply => SubmessageBody::InfoReply {
            unicast_locators: b.u32(0)?,
        },
        SubmessageKind::NackFrag => {
            let (set, after) = read_frag_set(&b, 16)?;
            SubmessageBody::NackFrag {
                reader: read_entity(&b, 0)?,
                writer: read_entity(&b, 4)?,
                writer_sn: read_sn(&b, 8)?,
                fragment_number_state: set,
                count: b.i32(after)?,
            }
        }
        SubmessageKind::HeartbeatFrag => SubmessageBody::HeartbeatFrag {
            reader: read_entity(&b, 0)?,
            writer: read_entity(&b, 4)?,
            writer_sn: read_sn(&b, 8)?,
            last_fragment_num: b.u32(16)?,
            count: b.i32(20)?,
        },
        SubmessageKind::Data => {
            // extraFlags(2) octetsToInlineQos(2) readerId writerId writerSN
            let otiq = usize::from(b.u16(2)?);
            let reader = read_entity(&b, 4)?;
            let writer = read_entity(&b, 8)?;
            let writer_sn = read_sn(&b, 12)?;
            let mut pos = 4usize.saturating_add(otiq);
            let mut inline_qos = None;
            if flags & FLAG_DATA_Q != 0 {
                let (q, after) = read_inline_qos(&b, pos)?;
                inline_qos = Some(q);
                pos = after;
            }
            let payload = if flags & (FLAG_DATA_D | FLAG_DATA_K) != 0 {
                Some(SerializedPayload::new(b.rest(pos)?))
            } else {
                None
            };
            SubmessageBody::Data {
                reader,
                writer,
                writer_sn,
                inline_qos,
                payload,
                key_flag: flags & FLAG_DATA_K != 0,
            }
        }
        SubmessageKind::DataFrag => {
            let otiq = usize::from(b.u16(2)?);
            let reader = read_entity(&b, 4)?;
            let writer = read_entity(&b, 8)?;
            let writer_sn = read_sn(&b, 12)?;
            let fragment_starting_num = b.u32(20)?;
            let fragments_in_submessage = b.u16(24)?;
            let fragment_size = b.u16(26)?;
            let sample_size = b.u32(28)?;
            let mut pos = 4usize.saturating_add(otiq);
            let mut inline_qos = None;
            if flags & FLAG_DATAFRAG_Q != 0 {
                let (q, after) = read_inline_qos(&b, pos)?;
                inline_qos = Some(q);
                pos = after;
            }
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
        SubmessageKind::SecBody
        | SubmessageKind::SecPrefix
        | SubmessageKind::SecPostfix
        | SubmessageKind::SrtpsPrefix
        | SubmessageKind::SrtpsPostfix => SubmessageBody::Security { bytes: body },
        SubmessageKind::Unknown(_) => SubmessageBody::Unknown { bytes: body },
    })
}

/// A submessage that could not be decoded; the others in the message still are.
/// The fields that were readable before the fault are kept (lax parsing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmessageError {
    pub index: usize,
    pub offset: usize,
    pub id: u8,
    pub flags: u8,
    pub error: DissectError,
    pub ctx: Context,
    pub reader: Option<EntityId>,
    pub writer: Option<EntityId>,
    pub writer_sn: Option<SequenceNumber>,
}

impl SubmessageError {
    pub fn kind(&self) -> SubmessageKind {
        SubmessageKind::from_id(self.id)
    }

    /// Writer GUID as far as the readable part of the submessage names it.
    pub fn writer_guid(&self) -> Option<Guid> {
        let writer = self.writer?;
        match self.kind() {
            SubmessageKind::AckNack | SubmessageKind::NackFrag => {
                self.ctx.dst_prefix.map(|p| Guid::new(p, writer))
            }
            _ => Some(Guid::new(self.ctx.src_prefix, writer)),
        }
    }
}

/// Entity ids and sequence number that precede any fault in a submessage body.
fn partial_fields(
    kind: SubmessageKind,
    flags: u8,
    body: &[u8],
) -> (Option<EntityId>, Option<EntityId>, Option<SequenceNumber>) {
    let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
    let (ids_at, sn_at) = match kind {
        SubmessageKind::Data | SubmessageKind::DataFrag => (4, Some(12)),
        SubmessageKind::NackFrag | SubmessageKind::HeartbeatFrag => (0, Some(8)),
        SubmessageKind::AckNack | SubmessageKind::Heartbeat | SubmessageKind::Gap => (0, None),
        _ => return (None, None, None),
    };
    (
        read_entity(&b, ids_at).ok(),
        read_entity(&b, ids_at.saturating_add(4)).ok(),
        sn_at.and_then(|o| read_sn(&b, o).ok()),
    )
}

/// Walks the submessages of one RTPS message, applying INFO_* context.
pub struct SubmessageIter<'a> {
    data: &'a [u8],
    offset: usize,
    index: usize,
    ctx: Context,
    done: bool,
}

impl<'a> SubmessageIter<'a> {
    /// `message` starts at the RTPS header.
    pub fn new(message: &'a [u8], header: &RtpsHeader) -> Self {
        Self {
            data: message,
            offset: RTPS_HEADER_LEN,
            index: 0,
            ctx: Context {
                src_prefix: header.guid_prefix,
                src_vendor: header.vendor,
                src_version: header.version,
                dst_prefix: None,
                timestamp: None,
            },
            done: false,
        }
    }
}

impl<'a> Iterator for SubmessageIter<'a> {
    type Item = std::result::Result<Submessage<'a>, SubmessageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.offset >= self.data.len() {
            return None;
        }
        let start = self.offset;
        let index = self.index;
        self.index = self.index.saturating_add(1);
        let hb = Bytes::big(self.data, Layer::Submessage);
        let header = hb.slice(start, SUBMESSAGE_HEADER_LEN);
        let (id, flags, otnh) = match header {
            Ok(&[id, flags, a, b]) => {
                let otnh = if flags & 1 == 1 {
                    u16::from_le_bytes([a, b])
                } else {
                    u16::from_be_bytes([a, b])
                };
                (id, flags, usize::from(otnh))
            }
            Ok(_) | Err(_) => {
                self.done = true;
                return Some(Err(SubmessageError {
                    index,
                    offset: start,
                    id: hb.u8(start).unwrap_or(0),
                    flags: 0,
                    ctx: self.ctx,
                    reader: None,
                    writer: None,
                    writer_sn: None,
                    error: DissectError::Truncated {
                        layer: Layer::Submessage,
                        offset: start,
                        needed: SUBMESSAGE_HEADER_LEN,
                        actual: self.data.len().saturating_sub(start),
                    },
                }));
            }
        };
        let kind = SubmessageKind::from_id(id);
        let body_start = start.saturating_add(SUBMESSAGE_HEADER_LEN);
        let available = self.data.len().saturating_sub(body_start);
        // 0 means "to the end of the message", except for PAD and INFO_TS where it is
        // a real zero length.
        let to_end = otnh == 0 && !matches!(kind, SubmessageKind::Pad | SubmessageKind::InfoTs);
        let claimed = if to_end { available } else { otnh };
        // A length past the end of the message: decode what is there (as Wireshark
        // does) and mark the submessage truncated; nothing can follow it.
        let truncated = claimed > available;
        let body_len = claimed.min(available);
        let body_end = body_start.saturating_add(body_len);
        self.offset = body_end;
        if to_end || truncated {
            self.done = true;
        }
        let body = self.data.get(body_start..body_end).unwrap_or_default();
        match parse_body(kind, flags, body) {
            Ok(parsed) => {
                // Context applies to what follows; an INFO_* submessage itself carries
                // the context it establishes.
                match &parsed {
                    SubmessageBody::InfoTs { timestamp } => self.ctx.timestamp = *timestamp,
                    SubmessageBody::InfoDst { guid_prefix } => {
                        self.ctx.dst_prefix =
                            (*guid_prefix != GuidPrefix::default()).then_some(*guid_prefix);
                    }
                    SubmessageBody::InfoSrc {
                        version,
                        vendor,
                        guid_prefix,
                    } => {
                        self.ctx.src_prefix = *guid_prefix;
                        self.ctx.src_vendor = *vendor;
                        self.ctx.src_version = *version;
                        self.ctx.dst_prefix = None;
                        self.ctx.timestamp = None;
                    }
                    _ => {}
                }
                let ctx = self.ctx;
                Some(Ok(Submessage {
                    index,
                    offset: start,
                    kind,
                    id,
                    flags,
                    length: claimed,
                    truncated,
                    captured: body_len,
                    ctx,
                    body: parsed,
                }))
            }
            Err(error) => {
                let (reader, writer, writer_sn) = partial_fields(kind, flags, body);
                Some(Err(SubmessageError {
                    index,
                    offset: start,
                    id,
                    flags,
                    ctx: self.ctx,
                    reader,
                    writer,
                    writer_sn,
                    error: if truncated {
                        DissectError::BadLength {
                            layer: Layer::Submessage,
                            offset: start.saturating_add(2),
                            claimed,
                            available,
                        }
                    } else {
                        error
                    },
                }))
            }
        }
    }
}
