//! Walking a message: each submessage with the INFO_* context carried from the ones
//! before it, and what could not be decoded.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer};
use crate::types::{BuiltinWriter, EntityId, Guid, GuidPrefix, SequenceNumber, Time, VendorId};

use super::*;

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
            // (the rest set no context)
            SubmessageBody::Pad
            | SubmessageBody::AckNack { .. }
            | SubmessageBody::Heartbeat { .. }
            | SubmessageBody::Gap { .. }
            | SubmessageBody::InfoReplyIp4 { .. }
            | SubmessageBody::InfoReply { .. }
            | SubmessageBody::NackFrag { .. }
            | SubmessageBody::HeartbeatFrag { .. }
            | SubmessageBody::Data { .. }
            | SubmessageBody::DataFrag { .. }
            | SubmessageBody::DataBatch { .. }
            | SubmessageBody::HeartbeatBatch { .. }
            | SubmessageBody::Security { .. }
            | SubmessageBody::VendorSpecific { .. }
            | SubmessageBody::Unknown { .. } => {}
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
    pub(crate) fn little_endian(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The body bytes the capture holds (after the 4-byte submessage header).
    pub fn body_bytes(&self) -> &'a [u8] {
        self.body_bytes
    }

    /// The body bytes with the submessage's byte order, for its kind's view.
    #[inline(always)]
    pub(super) fn bytes(&self) -> Bytes<'a> {
        Bytes::new(self.body_bytes, Layer::Submessage, self.little_endian())
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
        let b = self.bytes();
        Some((
            read_entity(&b, reader_at).ok()?,
            read_entity(&b, writer_at).ok()?,
        ))
    }

    /// The discovery stream of a DATA/DATA_FRAG from a built-in discovery writer; `None`
    /// for any other submessage.
    pub(crate) fn discovery_role(&self) -> Option<BuiltinWriter> {
        discovery_role(self.kind, self.body_bytes)
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
        if sent_by_reader(self.kind) {
            // Without INFO_DST the writer's participant is unknown to a sniffer.
            self.ctx.dst_prefix.map(|p| Guid::new(p, writer))
        } else {
            Some(Guid::new(self.ctx.src_prefix, writer))
        }
    }

    /// The reader the submessage is about (the sender's for ACKNACK/NACK_FRAG).
    pub fn reader_guid(&self) -> Option<Guid> {
        let (reader, _) = self.entity_ids()?;
        if sent_by_reader(self.kind) {
            Some(Guid::new(self.ctx.src_prefix, reader))
        } else {
            Some(Guid::new(self.ctx.dst_prefix.unwrap_or_default(), reader))
        }
    }

    pub fn reader_entity(&self) -> Option<EntityId> {
        self.entity_ids().map(|(reader, _)| reader)
    }

    /// Sequence number of DATA, DATA_FRAG, NACK_FRAG, HEARTBEAT_FRAG.
    pub fn writer_sn(&self) -> Option<SequenceNumber> {
        let (_, _, sn_at) = id_fields(self.kind)?;
        read_sn(&self.bytes(), sn_at?).ok()
    }

    /// A HEARTBEAT's (firstSN, lastSN), read without decoding the rest of the body.
    /// (HEARTBEAT_BATCH's firstSN and lastSN, the sample SNs, likewise.)
    pub fn heartbeat_sns(&self) -> Option<(SequenceNumber, SequenceNumber)> {
        let b = self.bytes();
        match self.kind {
            SubmessageKind::Heartbeat => {
                let v = heartbeat::View::new(&b)?;
                Some((v.first_sn(), v.last_sn()))
            }
            SubmessageKind::HeartbeatBatch => {
                let v = heartbeat_batch::View::new(&b)?;
                Some((v.first_sn(), v.last_sn()))
            }
            SubmessageKind::Pad
            | SubmessageKind::AckNack
            | SubmessageKind::Gap
            | SubmessageKind::InfoTs
            | SubmessageKind::InfoSrc
            | SubmessageKind::InfoReplyIp4
            | SubmessageKind::InfoDst
            | SubmessageKind::InfoReply
            | SubmessageKind::NackFrag
            | SubmessageKind::HeartbeatFrag
            | SubmessageKind::Data
            | SubmessageKind::DataFrag
            | SubmessageKind::SecBody
            | SubmessageKind::SecPrefix
            | SubmessageKind::SecPostfix
            | SubmessageKind::SrtpsPrefix
            | SubmessageKind::SrtpsPostfix
            | SubmessageKind::DataSession
            | SubmessageKind::DataBatch
            | SubmessageKind::VendorSpecific(_)
            | SubmessageKind::Unknown(_) => None,
        }
    }

    /// DATA_SESSION's session SN (its `writer_sn` is the writer's own, "virtual" SN).
    pub fn session_sn(&self) -> Option<SequenceNumber> {
        if self.kind != SubmessageKind::DataSession {
            return None;
        }
        let v = data_session::View::new(&self.bytes())?;
        Some(v.session_sn())
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
            SubmessageBody::Pad
            | SubmessageBody::AckNack { .. }
            | SubmessageBody::Heartbeat { .. }
            | SubmessageBody::Gap { .. }
            | SubmessageBody::InfoTs { .. }
            | SubmessageBody::InfoSrc { .. }
            | SubmessageBody::InfoReplyIp4 { .. }
            | SubmessageBody::InfoDst { .. }
            | SubmessageBody::InfoReply { .. }
            | SubmessageBody::NackFrag { .. }
            | SubmessageBody::HeartbeatFrag { .. }
            | SubmessageBody::Data { .. }
            | SubmessageBody::DataFrag { .. }
            | SubmessageBody::HeartbeatBatch { .. }
            | SubmessageBody::Security { .. }
            | SubmessageBody::VendorSpecific { .. }
            | SubmessageBody::Unknown { .. } => None,
        };
        SamplePieces { one: None, batch }
    }

    /// An ACKNACK's readerSNState, read without decoding the rest of the body.
    pub fn acknack_sn_state(&self) -> Option<SequenceNumberSet<'a>> {
        if self.kind != SubmessageKind::AckNack {
            return None;
        }
        acknack::sn_state(&self.bytes()).ok().map(|(set, _)| set)
    }

    /// The part of a sample a DATA or DATA_FRAG carries; `None` for other submessages.
    /// Read from the fixed fields, without decoding the rest of the body.
    pub fn sample_piece(&self) -> Option<SamplePiece> {
        // The commonest pieces, DATA and DATA_FRAG without inline QoS, from their fixed
        // fields checked once (the reads below cannot fail).
        if self.kind == SubmessageKind::Data && self.flags & FLAG_DATA_Q == 0 {
            return self.plain_data_piece();
        }
        if self.kind == SubmessageKind::DataFrag && self.flags & data_frag::FLAG_Q == 0 {
            return self.plain_data_frag_piece();
        }
        let b = self.bytes();
        let payload_size = self.payload_size().map_or(0, |p| p as u64);
        let (writer, sn, fragments, sample_size) = match self.kind {
            SubmessageKind::Data => {
                let v = data::View::new(&b)?;
                (v.writer(), v.writer_sn(), None, payload_size)
            }
            SubmessageKind::DataSession => {
                let v = data_session::View::new(&b)?;
                (v.writer(), v.virtual_sn(), None, payload_size)
            }
            SubmessageKind::DataFrag => {
                let v = data_frag::View::new(&b)?;
                let range = v.range();
                (
                    v.writer(),
                    v.writer_sn(),
                    Some(range),
                    u64::from(range.sample_size),
                )
            }
            SubmessageKind::Pad
            | SubmessageKind::AckNack
            | SubmessageKind::Heartbeat
            | SubmessageKind::Gap
            | SubmessageKind::InfoTs
            | SubmessageKind::InfoSrc
            | SubmessageKind::InfoReplyIp4
            | SubmessageKind::InfoDst
            | SubmessageKind::InfoReply
            | SubmessageKind::NackFrag
            | SubmessageKind::HeartbeatFrag
            | SubmessageKind::SecBody
            | SubmessageKind::SecPrefix
            | SubmessageKind::SecPostfix
            | SubmessageKind::SrtpsPrefix
            | SubmessageKind::SrtpsPostfix
            | SubmessageKind::DataBatch
            | SubmessageKind::HeartbeatBatch
            | SubmessageKind::VendorSpecific(_)
            | SubmessageKind::Unknown(_) => return None,
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
        let b = self.bytes();
        let (has_inline_qos, has_payload) = match self.kind {
            SubmessageKind::Data | SubmessageKind::DataSession => (
                self.flags & FLAG_DATA_Q != 0,
                self.flags & (FLAG_DATA_D | FLAG_DATA_K) != 0,
            ),
            SubmessageKind::DataFrag => (self.flags & data_frag::FLAG_Q != 0, true),
            SubmessageKind::Pad
            | SubmessageKind::AckNack
            | SubmessageKind::Heartbeat
            | SubmessageKind::Gap
            | SubmessageKind::InfoTs
            | SubmessageKind::InfoSrc
            | SubmessageKind::InfoReplyIp4
            | SubmessageKind::InfoDst
            | SubmessageKind::InfoReply
            | SubmessageKind::NackFrag
            | SubmessageKind::HeartbeatFrag
            | SubmessageKind::SecBody
            | SubmessageKind::SecPrefix
            | SubmessageKind::SecPostfix
            | SubmessageKind::SrtpsPrefix
            | SubmessageKind::SrtpsPostfix
            | SubmessageKind::DataBatch
            | SubmessageKind::HeartbeatBatch
            | SubmessageKind::VendorSpecific(_)
            | SubmessageKind::Unknown(_) => return None,
        };
        if !has_inline_qos && !has_payload {
            return Some(0);
        }
        // (DATA_FRAG's and DATA_SESSION's fixed fields start with DATA's)
        let otiq = usize::from(data::View::new(&b)?.octets_to_inline_qos());
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
    /// A submessage handed out was discovery DATA.
    discovery: bool,
}

impl<'a> SubmessageIter<'a> {
    /// Errors handed out so far (the rest were submessages).
    pub fn errors(&self) -> usize {
        self.errors
    }

    /// Whether a submessage handed out so far is DATA/DATA_FRAG of a built-in discovery
    /// writer ([`Submessage::discovery_role`]): most messages carry none, and the
    /// dissector then looks no further for discovery records.
    pub(crate) fn carried_discovery(&self) -> bool {
        self.discovery
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
            discovery: false,
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
                return Some(Err(undecodable(
                    index,
                    start,
                    (hb.u8(start).unwrap_or(0), 0, 0),
                    &[],
                    self.ctx,
                    DissectError::Truncated {
                        layer: Layer::Submessage,
                        offset: start,
                        needed: SUBMESSAGE_HEADER_LEN,
                        actual: self.data.len().saturating_sub(start),
                    },
                )));
            }
        };
        let kind = SubmessageKind::from_id(id);
        let body_start = start.saturating_add(SUBMESSAGE_HEADER_LEN);
        let available = self.data.len().saturating_sub(body_start);
        // 0 means "to the end of the message", except for PAD and INFO_TS where it is
        // a real zero length.
        let to_end = otnh == 0 && !layout(kind).zero_length_is_empty;
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
                info_ts::timestamp(&b, flags).map(|t| self.ctx.timestamp = t)
            }
            // (every datagram of a reliable writer's reader carries one: read directly)
            SubmessageKind::InfoDst => {
                let b = Bytes::new(body, Layer::Submessage, flags & 1 == 1);
                info_dst::prefix(&b)
                    .map(|guid_prefix| self.ctx.apply(&SubmessageBody::InfoDst { guid_prefix }))
            }
            // Context applies to what follows; an INFO_* submessage itself carries the
            // context it establishes.
            SubmessageKind::InfoSrc => parse_body(kind, flags, body, self.ctx.src_vendor)
                .map(|parsed| self.ctx.apply(&parsed)),
            SubmessageKind::Pad
            | SubmessageKind::AckNack
            | SubmessageKind::Heartbeat
            | SubmessageKind::Gap
            | SubmessageKind::InfoReplyIp4
            | SubmessageKind::InfoReply
            | SubmessageKind::NackFrag
            | SubmessageKind::HeartbeatFrag
            | SubmessageKind::Data
            | SubmessageKind::DataFrag
            | SubmessageKind::SecBody
            | SubmessageKind::SecPrefix
            | SubmessageKind::SecPostfix
            | SubmessageKind::SrtpsPrefix
            | SubmessageKind::SrtpsPostfix
            | SubmessageKind::DataSession
            | SubmessageKind::DataBatch
            | SubmessageKind::HeartbeatBatch
            | SubmessageKind::VendorSpecific(_)
            | SubmessageKind::Unknown(_) => {
                if surely_decodes(kind, flags, body) {
                    Ok(())
                } else {
                    parse_body(kind, flags, body, self.ctx.src_vendor).map(|_| ())
                }
            }
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
        // (told here, where kind and body are at hand, rather than in a pass of its own)
        if !self.discovery {
            self.discovery = discovery_role(kind, body).is_some();
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

/// [`Submessage::discovery_role`] from the submessage's kind and body (the body is not
/// decoded: its writer entity id is read where the kind keeps it).
#[inline]
fn discovery_role(kind: SubmessageKind, body: &[u8]) -> Option<BuiltinWriter> {
    if !matches!(kind, SubmessageKind::Data | SubmessageKind::DataFrag) {
        return None;
    }
    let (_, writer_at, _) = id_fields(kind)?;
    // (an entity id is four octets in any byte order)
    let b = Bytes::big(body, Layer::Submessage);
    read_entity(&b, writer_at).ok()?.builtin_writer_role()
}
