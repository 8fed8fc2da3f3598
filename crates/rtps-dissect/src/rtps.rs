//! The RTPS message: header, submessages, and the INFO_* context that the
//! interpreter carries from one submessage to the next.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::plist::ParameterList;
use crate::types::{EntityId, Guid, GuidPrefix, Locator, SequenceNumber, Time, VendorId};

pub const RTPS_HEADER_LEN: usize = 20;
const SUBMESSAGE_HEADER_LEN: usize = 4;

/// Byte offsets of each submessage's fields, counted from the end of the 4-byte
/// submessage header: the one place the wire layouts are spelled out.
mod field {
    pub type Field = usize;

    pub mod acknack {
        use super::Field;
        pub const READER: Field = 0;
        pub const WRITER: Field = 4;
        /// readerSNState (SequenceNumberSet), then count.
        pub const SN_STATE: Field = 8;
    }
    pub mod heartbeat {
        use super::Field;
        pub const READER: Field = 0;
        pub const WRITER: Field = 4;
        pub const FIRST_SN: Field = 8;
        pub const LAST_SN: Field = 16;
        pub const COUNT: Field = 24;
        /// The fields above, all fixed.
        pub const LEN: usize = 28;
    }
    pub mod gap {
        use super::Field;
        pub const READER: Field = 0;
        pub const WRITER: Field = 4;
        pub const GAP_START: Field = 8;
        /// gapList (SequenceNumberSet).
        pub const GAP_LIST: Field = 16;
    }
    pub mod info_ts {
        use super::Field;
        pub const SECONDS: Field = 0;
        pub const FRACTION: Field = 4;
        pub const LEN: usize = 8;
    }
    pub mod info_src {
        use super::Field;
        /// After 4 unused bytes.
        pub const VERSION_MAJOR: Field = 4;
        pub const VERSION_MINOR: Field = 5;
        pub const VENDOR: Field = 6;
        pub const GUID_PREFIX: Field = 8;
    }
    pub mod info_reply_ip4 {
        use super::Field;
        pub const ADDRESS: Field = 0;
        pub const PORT: Field = 4;
    }
    pub mod info_dst {
        use super::Field;
        pub const GUID_PREFIX: Field = 0;
    }
    pub mod info_reply {
        use super::Field;
        pub const UNICAST_LOCATOR_COUNT: Field = 0;
    }
    pub mod nack_frag {
        use super::Field;
        pub const READER: Field = 0;
        pub const WRITER: Field = 4;
        pub const WRITER_SN: Field = 8;
        /// fragmentNumberState (FragmentNumberSet), then count.
        pub const FRAG_STATE: Field = 16;
    }
    pub mod heartbeat_frag {
        use super::Field;
        pub const READER: Field = 0;
        pub const WRITER: Field = 4;
        pub const WRITER_SN: Field = 8;
        pub const LAST_FRAGMENT: Field = 16;
        pub const COUNT: Field = 20;
    }
    /// DATA (extraFlags at 0); DATA_FRAG shares its first fields.
    pub mod data {
        use super::Field;
        pub const OCTETS_TO_INLINE_QOS: Field = 2;
        pub const READER: Field = 4;
        pub const WRITER: Field = 8;
        pub const WRITER_SN: Field = 12;
        /// octetsToInlineQos counts from here (the end of its own field).
        pub const INLINE_QOS_BASE: Field = 4;
        /// extraFlags to writerSN: the fixed fields.
        pub const FIXED_LEN: usize = 20;
    }
    pub mod data_frag {
        pub use super::data::{INLINE_QOS_BASE, OCTETS_TO_INLINE_QOS, READER, WRITER, WRITER_SN};
        use super::Field;
        pub const FRAGMENT_STARTING_NUM: Field = 20;
        pub const FRAGMENTS_IN_SUBMESSAGE: Field = 24;
        pub const FRAGMENT_SIZE: Field = 26;
        pub const SAMPLE_SIZE: Field = 28;
    }
    /// RTI Connext DATA_SESSION (multichannel): DATA with two SNs.
    pub mod data_session {
        pub use super::data::{OCTETS_TO_INLINE_QOS, READER, WRITER};
        use super::Field;
        /// The SN within the channel's session.
        pub const SESSION_SN: Field = 12;
        /// The writer's own SN of the sample ("virtual" SN).
        pub const VIRTUAL_SN: Field = 20;
    }
    /// RTI Connext DATA_BATCH: many samples of one writer in one submessage.
    pub mod data_batch {
        pub use super::data::{READER, WRITER};
        use super::Field;
        pub const BATCH_SN: Field = 12;
        pub const FIRST_SAMPLE_SN: Field = 20;
        pub const OFFSET_TO_LAST_SAMPLE_SN: Field = 28;
        pub const SAMPLE_COUNT: Field = 32;
        /// batchInlineQos when the Q flag is set, then octetsToSLEncapsulationId.
        pub const INLINE_QOS: Field = 36;
        /// Each SampleInfo: 16 flag bits (big-endian whatever the submessage's order),
        /// octetsToInlineQos, serializedDataLength, then the optional fields.
        pub mod sample_info {
            use super::Field;
            pub const FLAGS: Field = 0;
            pub const LENGTH: Field = 4;
            pub const OPTIONAL: Field = 8;
            pub const TIMESTAMP_LEN: usize = 8;
            pub const OFFSET_SN_LEN: usize = 4;
        }
        /// The sample list's encapsulation header (id, options) before the samples.
        pub const ENCAPSULATION_LEN: usize = 4;
    }
    /// RTI Connext HEARTBEAT_BATCH: batch SNs and sample SNs.
    pub mod heartbeat_batch {
        use super::Field;
        pub const READER: Field = 0;
        pub const WRITER: Field = 4;
        pub const FIRST_BATCH_SN: Field = 8;
        pub const LAST_BATCH_SN: Field = 16;
        pub const FIRST_SN: Field = 24;
        pub const LAST_SN: Field = 32;
        pub const COUNT: Field = 40;
    }
    /// Sequence/fragment number sets, from the start of the set.
    pub mod sn_set {
        use super::Field;
        pub const BASE: Field = 0;
        pub const NUM_BITS: Field = 8;
        pub const BITMAP: Field = 12;
    }
    pub mod frag_set {
        use super::Field;
        pub const BASE: Field = 0;
        pub const NUM_BITS: Field = 4;
        pub const BITMAP: Field = 8;
    }
    /// Fast DDS 0x80 statistics (`StatisticsSubmessageData`).
    pub mod fastdds_statistics {
        use super::Field;
        pub const LOCATOR_KIND: Field = 0;
        pub const LOCATOR_PORT: Field = 4;
        pub const LOCATOR_ADDRESS: Field = 8;
        pub const TS_SECONDS: Field = 24;
        pub const TS_FRACTION: Field = 28;
        pub const SEQUENCE: Field = 32;
        pub const BYTES: Field = 40;
        pub const BYTES_HIGH: Field = 48;
    }
}

/// Where the entity ids and writer SN of a submessage sit, for the kinds that have
/// them: (reader, writer, writer SN).
fn id_fields(kind: SubmessageKind) -> Option<(usize, usize, Option<usize>)> {
    Some(match kind {
        SubmessageKind::Data => (
            field::data::READER,
            field::data::WRITER,
            Some(field::data::WRITER_SN),
        ),
        SubmessageKind::DataFrag => (
            field::data_frag::READER,
            field::data_frag::WRITER,
            Some(field::data_frag::WRITER_SN),
        ),
        SubmessageKind::NackFrag => (
            field::nack_frag::READER,
            field::nack_frag::WRITER,
            Some(field::nack_frag::WRITER_SN),
        ),
        SubmessageKind::HeartbeatFrag => (
            field::heartbeat_frag::READER,
            field::heartbeat_frag::WRITER,
            Some(field::heartbeat_frag::WRITER_SN),
        ),
        SubmessageKind::AckNack => (field::acknack::READER, field::acknack::WRITER, None),
        SubmessageKind::Heartbeat => (field::heartbeat::READER, field::heartbeat::WRITER, None),
        SubmessageKind::Gap => (field::gap::READER, field::gap::WRITER, None),
        SubmessageKind::DataSession => (
            field::data_session::READER,
            field::data_session::WRITER,
            Some(field::data_session::VIRTUAL_SN),
        ),
        SubmessageKind::DataBatch => (
            field::data_batch::READER,
            field::data_batch::WRITER,
            Some(field::data_batch::BATCH_SN),
        ),
        SubmessageKind::HeartbeatBatch => (
            field::heartbeat_batch::READER,
            field::heartbeat_batch::WRITER,
            None,
        ),
        _ => return None,
    })
}

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
    /// RTI Connext 0x14: a DATA of a multichannel writer (session and writer SNs).
    DataSession,
    /// RTI Connext 0x18: a batch of samples of one writer.
    DataBatch,
    /// RTI Connext 0x19: the HEARTBEAT of a batching writer.
    HeartbeatBatch,
    /// 0x80–0xff: reserved by RTPS for vendors; the meaning depends on the sender's
    /// vendor id ([`VendorSubmessage`]).
    VendorSpecific(u8),
    /// A standard-range id that no RTPS version defines.
    Unknown(u8),
}

impl SubmessageKind {
    #[inline]
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
            0x14 => Self::DataSession,
            0x15 => Self::Data,
            0x16 => Self::DataFrag,
            0x18 => Self::DataBatch,
            0x19 => Self::HeartbeatBatch,
            0x30 => Self::SecBody,
            0x31 => Self::SecPrefix,
            0x32 => Self::SecPostfix,
            0x33 => Self::SrtpsPrefix,
            0x34 => Self::SrtpsPostfix,
            0x80..=0xff => Self::VendorSpecific(id),
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
            Self::DataSession => "DATA_SESSION",
            Self::DataBatch => "DATA_BATCH",
            Self::HeartbeatBatch => "HEARTBEAT_BATCH",
            Self::VendorSpecific(_) => "VENDOR_SPECIFIC",
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

const SAMPLE_INFO_T: u16 = 0x0001;
const SAMPLE_INFO_Q: u16 = 0x0002;
const SAMPLE_INFO_O: u16 = 0x0004;
const SAMPLE_INFO_K: u16 = 0x0020;

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

/// Vendor-specific submessages whose meaning we know, by (vendor id, submessage id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VendorSubmessage {
    /// eProsima Fast DDS 0x80 `FASTDDS_STATISTICS_NETWORK` (appended to every message
    /// when Fast DDS is built with statistics, as Debian and ROS 2 build it).
    FastDdsStatistics(FastDdsStatistics),
    /// RTI Connext 0x80: CRC of the message.
    RtiCrc,
    /// RTI Connext 0x81.
    RtiDataFragSession,
    /// RTI Connext 0x82: RTI WAN transport binding ping.
    RtiUdpWanBindingPing,
}

impl VendorSubmessage {
    pub fn name(&self) -> &'static str {
        match self {
            Self::FastDdsStatistics(_) => "FASTDDS_STATISTICS",
            Self::RtiCrc => "RTI_CRC",
            Self::RtiDataFragSession => "RTI_DATA_FRAG_SESSION",
            Self::RtiUdpWanBindingPing => "RTI_UDP_WAN_BINDING_PING",
        }
    }

    fn parse(vendor: VendorId, id: u8, b: &Bytes<'_>) -> Result<Option<Self>> {
        Ok(match (vendor, id) {
            (VendorId::FAST_DDS, 0x80) => {
                use field::fastdds_statistics as f;
                Some(Self::FastDdsStatistics(FastDdsStatistics {
                    destination: Locator {
                        kind: b.i32(f::LOCATOR_KIND)?,
                        port: b.u32(f::LOCATOR_PORT)?,
                        address: b.array::<16>(f::LOCATOR_ADDRESS)?,
                    },
                    timestamp: Time {
                        seconds: b.i32(f::TS_SECONDS)?,
                        fraction: b.u32(f::TS_FRACTION)?,
                    },
                    sequence: b.u64(f::SEQUENCE)?,
                    bytes: b.u64(f::BYTES)?,
                    bytes_high: b.u64(f::BYTES_HIGH)?,
                }))
            }
            (VendorId::RTI_CONNEXT, 0x80) => Some(Self::RtiCrc),
            (VendorId::RTI_CONNEXT, 0x81) => Some(Self::RtiDataFragSession),
            (VendorId::RTI_CONNEXT, 0x82) => Some(Self::RtiUdpWanBindingPing),
            _ => None,
        })
    }
}

/// Fast DDS' network statistics submessage: what the sender had sent to `destination`
/// when it sent this message (its statistics module derives network latency and loss
/// from it on the receiving side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastDdsStatistics {
    pub destination: Locator,
    /// Sender's clock when the message was sent.
    pub timestamp: Time,
    /// Messages sent to `destination` so far.
    pub sequence: u64,
    /// Bytes sent to `destination` so far (`bytes_high` counts wraps of `bytes`).
    pub bytes: u64,
    pub bytes_high: u64,
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
    one: Option<SamplePiece>,
    batch: Option<(Guid, BatchSampleIter<'a>)>,
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

impl Context {
    /// What an INFO_* submessage sets for the submessages after it.
    fn apply(&mut self, body: &SubmessageBody<'_>) {
        match body {
            SubmessageBody::InfoTs { timestamp } => self.timestamp = *timestamp,
            SubmessageBody::InfoDst { guid_prefix } => {
                self.dst_prefix = (*guid_prefix != GuidPrefix::default()).then_some(*guid_prefix);
            }
            SubmessageBody::InfoSrc {
                version,
                vendor,
                guid_prefix,
            } => {
                self.src_prefix = *guid_prefix;
                self.src_vendor = *vendor;
                self.src_version = *version;
                self.dst_prefix = None;
                self.timestamp = None;
            }
            _ => {}
        }
    }
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
    /// Body bytes the message holds on the wire: `captured` plus what a snaplen cut
    /// off, never more than the datagram carried (a length claiming more is a lie).
    pub on_wire: usize,
    pub ctx: Context,
    /// The body bytes present (`captured` of them); the iterator hands out only
    /// submessages whose body decodes, so [`Submessage::body`] decodes it again on demand.
    body_bytes: &'a [u8],
}

impl<'a> Submessage<'a> {
    pub fn little_endian(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The body bytes the capture holds (after the 4-byte submessage header).
    pub fn body_bytes(&self) -> &'a [u8] {
        self.body_bytes
    }

    /// The decoded body. Decoding is done here, when asked for, from the bytes: the
    /// iterator checked that they decode (it yields an error otherwise), so the
    /// `Unknown` fallback is never taken (the fuzz target asserts it).
    pub fn body(&self) -> SubmessageBody<'a> {
        parse_body(self.kind, self.flags, self.body_bytes, self.ctx.src_vendor).unwrap_or(
            SubmessageBody::Unknown {
                bytes: self.body_bytes,
            },
        )
    }

    /// The reader and writer entity ids, read from where the submessage kind keeps
    /// them (no decoding of the rest).
    fn entity_ids(&self) -> Option<(EntityId, EntityId)> {
        let (reader_at, writer_at, _) = id_fields(self.kind)?;
        let b = Bytes::new(self.body_bytes, Layer::Submessage, self.little_endian());
        Some((
            read_entity(&b, reader_at).ok()?,
            read_entity(&b, writer_at).ok()?,
        ))
    }

    /// The writer entity id of DATA, DATA_FRAG, HEARTBEAT, GAP, HEARTBEAT_FRAG,
    /// ACKNACK and NACK_FRAG.
    pub fn writer_entity(&self) -> Option<EntityId> {
        self.entity_ids().map(|(_, writer)| writer)
    }

    /// The writer the submessage is about: the sender's for DATA/DATA_FRAG/HEARTBEAT/GAP/
    /// HEARTBEAT_FRAG, the destination's (from INFO_DST) for ACKNACK/NACK_FRAG.
    pub fn writer_guid(&self) -> Option<Guid> {
        let (_, writer) = self.entity_ids()?;
        match self.kind {
            SubmessageKind::AckNack | SubmessageKind::NackFrag => {
                // Without INFO_DST the writer's participant is unknown to a sniffer.
                self.ctx.dst_prefix.map(|p| Guid::new(p, writer))
            }
            _ => Some(Guid::new(self.ctx.src_prefix, writer)),
        }
    }

    /// The reader the submessage is about (the sender's for ACKNACK/NACK_FRAG).
    pub fn reader_guid(&self) -> Option<Guid> {
        let (reader, _) = self.entity_ids()?;
        match self.kind {
            SubmessageKind::AckNack | SubmessageKind::NackFrag => {
                Some(Guid::new(self.ctx.src_prefix, reader))
            }
            _ => Some(Guid::new(self.ctx.dst_prefix.unwrap_or_default(), reader)),
        }
    }

    pub fn reader_entity(&self) -> Option<EntityId> {
        self.entity_ids().map(|(reader, _)| reader)
    }

    /// Sequence number of DATA, DATA_FRAG, NACK_FRAG, HEARTBEAT_FRAG.
    pub fn writer_sn(&self) -> Option<SequenceNumber> {
        let (_, _, sn_at) = id_fields(self.kind)?;
        let b = Bytes::new(self.body_bytes, Layer::Submessage, self.little_endian());
        read_sn(&b, sn_at?).ok()
    }

    /// A HEARTBEAT's (firstSN, lastSN), read without decoding the rest of the body.
    /// (HEARTBEAT_BATCH's firstSN and lastSN, the sample SNs, likewise.)
    pub fn heartbeat_sns(&self) -> Option<(SequenceNumber, SequenceNumber)> {
        let (first, last) = match self.kind {
            SubmessageKind::Heartbeat => (field::heartbeat::FIRST_SN, field::heartbeat::LAST_SN),
            SubmessageKind::HeartbeatBatch => (
                field::heartbeat_batch::FIRST_SN,
                field::heartbeat_batch::LAST_SN,
            ),
            _ => return None,
        };
        let b = Bytes::new(self.body_bytes, Layer::Submessage, self.little_endian());
        Some((read_sn(&b, first).ok()?, read_sn(&b, last).ok()?))
    }

    /// DATA_SESSION's session SN (its `writer_sn` is the writer's own, "virtual" SN).
    pub fn session_sn(&self) -> Option<SequenceNumber> {
        if self.kind != SubmessageKind::DataSession {
            return None;
        }
        let b = Bytes::new(self.body_bytes, Layer::Submessage, self.little_endian());
        read_sn(&b, field::data_session::SESSION_SN).ok()
    }

    /// Every sample this submessage carries a part of: one for DATA, DATA_FRAG and
    /// DATA_SESSION, each sample of a DATA_BATCH, none for other kinds.
    pub fn sample_pieces(&self) -> SamplePieces<'a> {
        if self.kind != SubmessageKind::DataBatch {
            return SamplePieces {
                one: self.sample_piece(),
                batch: None,
            };
        }
        let batch = match self.body() {
            SubmessageBody::DataBatch {
                writer, samples, ..
            } => Some((Guid::new(self.ctx.src_prefix, writer), samples.iter())),
            _ => None,
        };
        SamplePieces { one: None, batch }
    }

    /// An ACKNACK's readerSNState, read without decoding the rest of the body.
    pub fn acknack_sn_state(&self) -> Option<SequenceNumberSet<'a>> {
        if self.kind != SubmessageKind::AckNack {
            return None;
        }
        let b = Bytes::new(self.body_bytes, Layer::Submessage, self.little_endian());
        read_sn_set(&b, field::acknack::SN_STATE)
            .ok()
            .map(|(set, _)| set)
    }

    /// The part of a sample a DATA or DATA_FRAG carries; `None` for other submessages.
    /// Read from the fixed fields, without decoding the rest of the body.
    pub fn sample_piece(&self) -> Option<SamplePiece> {
        let b = Bytes::new(self.body_bytes, Layer::Submessage, self.little_endian());
        let payload_size = self.payload_size().map_or(0, |p| p as u64);
        let (writer, sn, fragments, sample_size) = match self.kind {
            SubmessageKind::Data => {
                use field::data as f;
                let writer = read_entity(&b, f::WRITER).ok()?;
                (writer, read_sn(&b, f::WRITER_SN).ok()?, None, payload_size)
            }
            SubmessageKind::DataSession => {
                use field::data_session as f;
                let writer = read_entity(&b, f::WRITER).ok()?;
                (writer, read_sn(&b, f::VIRTUAL_SN).ok()?, None, payload_size)
            }
            SubmessageKind::DataFrag => {
                use field::data_frag as f;
                let range = FragmentRange {
                    start: b.u32(f::FRAGMENT_STARTING_NUM).ok()?,
                    count: b.u16(f::FRAGMENTS_IN_SUBMESSAGE).ok()?,
                    fragment_size: b.u16(f::FRAGMENT_SIZE).ok()?,
                    sample_size: b.u32(f::SAMPLE_SIZE).ok()?,
                };
                let writer = read_entity(&b, f::WRITER).ok()?;
                let sn = read_sn(&b, f::WRITER_SN).ok()?;
                (writer, sn, Some(range), u64::from(range.sample_size))
            }
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
    /// cut off but not bytes a too-large length claims beyond the datagram.
    pub fn payload_size(&self) -> Option<usize> {
        let b = Bytes::new(self.body_bytes, Layer::Submessage, self.little_endian());
        let (has_inline_qos, has_payload) = match self.kind {
            SubmessageKind::Data | SubmessageKind::DataSession => (
                self.flags & FLAG_DATA_Q != 0,
                self.flags & (FLAG_DATA_D | FLAG_DATA_K) != 0,
            ),
            SubmessageKind::DataFrag => (self.flags & FLAG_DATAFRAG_Q != 0, true),
            _ => return None,
        };
        if !has_inline_qos && !has_payload {
            return Some(0);
        }
        let otiq = usize::from(b.u16(field::data::OCTETS_TO_INLINE_QOS).ok()?);
        let (_, start) = inline_qos_and_end(&b, otiq, has_inline_qos).ok()?;
        let cut = self.on_wire.saturating_sub(self.captured);
        Some(if has_payload {
            self.body_bytes
                .len()
                .saturating_sub(start)
                .saturating_add(cut)
        } else {
            0
        })
    }
}

#[inline(always)]
fn read_sn(b: &Bytes<'_>, offset: usize) -> Result<SequenceNumber> {
    let high = b.i32(offset)?;
    let low = b.u32(offset.saturating_add(4))?;
    Ok(i64::from(high).wrapping_shl(32) | i64::from(low))
}

#[inline(always)]
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

fn read_frag_set<'a>(b: &Bytes<'a>, offset: usize) -> Result<(FragmentNumberSet<'a>, usize)> {
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
fn read_inline_qos<'a>(b: &Bytes<'a>, offset: usize) -> Result<(ParameterList<'a>, usize)> {
    let rest = b.rest(offset)?;
    let plist = ParameterList::new(rest, b.little_endian());
    let used = plist.byte_len()?;
    let list = ParameterList::new(rest.get(..used).unwrap_or(rest), b.little_endian());
    Ok((list, offset.saturating_add(used)))
}

/// The inline QoS of a DATA/DATA_FRAG (when its Q flag is set) and the offset where
/// what follows it (payload, fragments) starts; `otiq` is octetsToInlineQos.
fn inline_qos_and_end<'a>(
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

const FLAG_DATA_Q: u8 = 0x02;
const FLAG_DATA_D: u8 = 0x04;
const FLAG_DATA_K: u8 = 0x08;
const FLAG_DATAFRAG_Q: u8 = 0x02;
const FLAG_DATAFRAG_K: u8 = 0x04;

/// A writer SN that names a sample: RTPS sequence numbers start at 1.
fn read_valid_sn(b: &Bytes<'_>, offset: usize, what: &'static str) -> Result<SequenceNumber> {
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
fn heartbeat<'a>(b: &Bytes<'_>, flags: u8) -> Result<SubmessageBody<'a>> {
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
fn info_ts(b: &Bytes<'_>) -> Result<Time> {
    use field::info_ts as f;
    Ok(Time {
        seconds: b.i32(f::SECONDS)?,
        fraction: b.u32(f::FRACTION)?,
    })
}

const FLAG_INFO_TS_INVALIDATE: u8 = 0x02;

/// INFO_TS's timestamp; `None` when the invalidate flag is set.
#[inline(always)]
fn info_ts_timestamp(b: &Bytes<'_>, flags: u8) -> Result<Option<Time>> {
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
fn info_dst_prefix(b: &Bytes<'_>) -> Result<GuidPrefix> {
    Ok(GuidPrefix(b.array::<12>(field::info_dst::GUID_PREFIX)?))
}

/// DATA's octetsToInlineQos, reader, writer and writerSN.
#[inline(always)]
fn data_fixed(b: &Bytes<'_>) -> Result<(usize, EntityId, EntityId, SequenceNumber)> {
    use field::data as f;
    Ok((
        usize::from(b.u16(f::OCTETS_TO_INLINE_QOS)?),
        read_entity(b, f::READER)?,
        read_entity(b, f::WRITER)?,
        read_sn(b, f::WRITER_SN)?,
    ))
}

const FLAG_DATA_BATCH_Q: u8 = 0x02;

/// DATA_BATCH: fixed fields, batch inline QoS, the SampleInfo list (every entry must
/// decode) and the sample list after its encapsulation header (what the capture holds
/// of it).
fn data_batch<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
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
            let (inline_qos, pos) = inline_qos_and_end(&b, otiq, flags & FLAG_DATA_Q != 0)?;
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
            let (inline_qos, pos) = inline_qos_and_end(&b, otiq, flags & FLAG_DATA_Q != 0)?;
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
fn surely_decodes(kind: SubmessageKind, flags: u8, body: &[u8]) -> bool {
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

/// A submessage that could not be decoded; the others in the message still are.
/// The fields that are readable before the fault stay readable (lax parsing, as
/// etherparse's): a HEARTBEAT cut short after its lastSN still names both SNs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmessageError<'a> {
    // (u32, not usize like `Submessage`'s: an RTPS message is at most 64 KiB, and the
    // narrower fields keep a walk's `Result` at 128 bytes, which moves into the
    // submessage list without a `memcpy` call)
    pub index: u32,
    pub offset: u32,
    pub id: u8,
    pub flags: u8,
    /// Body length as the submessage header claims it (octetsToNextHeader; the rest of
    /// the message when that is 0); 0 when not even the header was there.
    pub length: u32,
    pub error: DissectError,
    pub ctx: Context,
    /// The body bytes the message holds (fewer than `length` when it was cut short);
    /// the fields below read them where they are present.
    body_bytes: &'a [u8],
}

impl<'a> SubmessageError<'a> {
    pub fn kind(&self) -> SubmessageKind {
        SubmessageKind::from_id(self.id)
    }

    /// The body bytes present (after the 4-byte submessage header).
    pub fn body_bytes(&self) -> &'a [u8] {
        self.body_bytes
    }

    fn bytes(&self) -> Bytes<'a> {
        Bytes::new(self.body_bytes, Layer::Submessage, self.flags & 1 == 1)
    }

    /// A field of the kind's fixed layout, when its bytes are present.
    fn entity_at(
        &self,
        pick: fn((usize, usize, Option<usize>)) -> Option<usize>,
    ) -> Option<EntityId> {
        let at = pick(id_fields(self.kind())?)?;
        read_entity(&self.bytes(), at).ok()
    }

    pub fn reader(&self) -> Option<EntityId> {
        self.entity_at(|(reader, _, _)| Some(reader))
    }

    pub fn writer(&self) -> Option<EntityId> {
        self.entity_at(|(_, writer, _)| Some(writer))
    }

    /// writerSN of DATA, DATA_FRAG, NACK_FRAG and HEARTBEAT_FRAG, when present.
    pub fn writer_sn(&self) -> Option<SequenceNumber> {
        let (_, _, sn_at) = id_fields(self.kind())?;
        read_sn(&self.bytes(), sn_at?).ok()
    }

    /// HEARTBEAT's firstSN and lastSN, GAP's gapStart (as the first), each when present.
    pub fn first_last_sns(&self) -> (Option<SequenceNumber>, Option<SequenceNumber>) {
        let b = self.bytes();
        match self.kind() {
            SubmessageKind::Heartbeat => (
                read_sn(&b, field::heartbeat::FIRST_SN).ok(),
                read_sn(&b, field::heartbeat::LAST_SN).ok(),
            ),
            SubmessageKind::Gap => (read_sn(&b, field::gap::GAP_START).ok(), None),
            SubmessageKind::HeartbeatBatch => (
                read_sn(&b, field::heartbeat_batch::FIRST_SN).ok(),
                read_sn(&b, field::heartbeat_batch::LAST_SN).ok(),
            ),
            SubmessageKind::DataBatch => {
                let first = read_sn(&b, field::data_batch::FIRST_SAMPLE_SN).ok();
                let offset = b.u32(field::data_batch::OFFSET_TO_LAST_SAMPLE_SN).ok();
                let last = first
                    .zip(offset)
                    .and_then(|(f, o)| f.checked_add(i64::from(o)));
                (first, last)
            }
            _ => (None, None),
        }
    }

    /// Its header claims more bytes than the message holds.
    pub fn truncated(&self) -> bool {
        usize::try_from(self.length).is_ok_and(|l| l > self.body_bytes.len())
    }

    /// HEARTBEAT's count, when present.
    pub fn count(&self) -> Option<i32> {
        match self.kind() {
            SubmessageKind::Heartbeat => self.bytes().i32(field::heartbeat::COUNT).ok(),
            SubmessageKind::HeartbeatBatch => self.bytes().i32(field::heartbeat_batch::COUNT).ok(),
            _ => None,
        }
    }

    /// Writer GUID as far as the readable part of the submessage names it.
    pub fn writer_guid(&self) -> Option<Guid> {
        let writer = self.writer()?;
        match self.kind() {
            SubmessageKind::AckNack | SubmessageKind::NackFrag => {
                self.ctx.dst_prefix.map(|p| Guid::new(p, writer))
            }
            _ => Some(Guid::new(self.ctx.src_prefix, writer)),
        }
    }
}

/// Walks the submessages of one RTPS message, applying INFO_* context.
pub struct SubmessageIter<'a> {
    data: &'a [u8],
    /// Length of the message on the wire (≥ `data.len()` when a snaplen cut it).
    wire_len: usize,
    offset: usize,
    index: usize,
    ctx: Context,
    done: bool,
    errors: usize,
}

impl<'a> SubmessageIter<'a> {
    /// Errors handed out so far (the rest were submessages).
    pub fn errors(&self) -> usize {
        self.errors
    }

    /// `message` starts at the RTPS header and is whole.
    pub fn new(message: &'a [u8], header: &RtpsHeader) -> Self {
        Self::with_wire_len(message, header, message.len())
    }

    /// `message` is what the capture holds of a message `wire_len` bytes long on the wire.
    pub fn with_wire_len(message: &'a [u8], header: &RtpsHeader, wire_len: usize) -> Self {
        Self {
            data: message,
            wire_len: wire_len.max(message.len()),
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
            errors: 0,
        }
    }
}

impl<'a> Iterator for SubmessageIter<'a> {
    type Item = std::result::Result<Submessage<'a>, SubmessageError<'a>>;

    #[inline]
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
                self.errors = self.errors.saturating_add(1);
                return Some(Err(SubmessageError {
                    index: narrow(index),
                    offset: narrow(start),
                    id: hb.u8(start).unwrap_or(0),
                    flags: 0,
                    length: 0,
                    ctx: self.ctx,
                    body_bytes: &[],
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
        // INFO_* bodies are decoded for the context they set; the commonest kinds are
        // only checked (decoded when a consumer asks); the rest are decoded to check.
        let checked = match kind {
            // (the commonest: read here rather than through the whole decoder)
            SubmessageKind::InfoTs => {
                let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
                info_ts_timestamp(&b, flags).map(|t| self.ctx.timestamp = t)
            }
            // (every datagram of a reliable writer's reader carries one: read directly)
            SubmessageKind::InfoDst => {
                let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
                info_dst_prefix(&b)
                    .map(|guid_prefix| self.ctx.apply(&SubmessageBody::InfoDst { guid_prefix }))
            }
            // Context applies to what follows; an INFO_* submessage itself carries the
            // context it establishes.
            SubmessageKind::InfoSrc => parse_body(kind, flags, body, self.ctx.src_vendor)
                .map(|parsed| self.ctx.apply(&parsed)),
            _ if surely_decodes(kind, flags, body) => Ok(()),
            _ => parse_body(kind, flags, body, self.ctx.src_vendor).map(|_| ()),
        };
        if let Err(error) = checked {
            let error = if truncated {
                DissectError::BadLength {
                    layer: Layer::Submessage,
                    offset: start.saturating_add(2),
                    claimed,
                    available,
                }
            } else {
                error
            };
            self.errors = self.errors.saturating_add(1);
            return Some(Err(undecodable(
                index,
                start,
                (id, flags, claimed),
                body,
                self.ctx,
                error,
            )));
        }
        Some(Ok(Submessage {
            index,
            offset: start,
            kind,
            id,
            flags,
            length: claimed,
            truncated,
            captured: body_len,
            on_wire: claimed
                .min(self.wire_len.saturating_sub(body_start))
                .max(body_len),
            ctx: self.ctx,
            body_bytes: body,
        }))
    }
}

/// A position or length within one RTPS message (at most 64 KiB) as the u32 of
/// [`SubmessageError`]; saturates rather than wraps should one ever be larger.
fn narrow(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The error of a submessage whose body does not decode, with the fields that precede
/// the fault. (id, flags, length) are from its header.
#[cold]
fn undecodable<'a>(
    index: usize,
    offset: usize,
    (id, flags, length): (u8, u8, usize),
    body_bytes: &'a [u8],
    ctx: Context,
    error: DissectError,
) -> SubmessageError<'a> {
    SubmessageError {
        index: narrow(index),
        offset: narrow(offset),
        id,
        flags,
        length: narrow(length),
        error,
        ctx,
        body_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
