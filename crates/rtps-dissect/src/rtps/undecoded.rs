//! A submessage that did not decode: the fields readable before the fault, and how the
//! walk builds one.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer};
use crate::types::{EntityId, Guid, SequenceNumber};

use super::*;

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
        match layout(self.kind()).sns {
            SnRange::Nothing => (None, None),
            SnRange::FirstLast { first, last } => (read_sn(&b, first).ok(), read_sn(&b, last).ok()),
            SnRange::Start(start) => (read_sn(&b, start).ok(), None),
            SnRange::FirstAndOffset {
                first,
                offset_to_last,
            } => {
                let first = read_sn(&b, first).ok();
                let offset = b.u32(offset_to_last).ok();
                let last = first
                    .zip(offset)
                    .and_then(|(f, o)| f.checked_add(i64::from(o)));
                (first, last)
            }
        }
    }

    /// Its header claims more bytes than the message holds.
    pub fn truncated(&self) -> bool {
        usize::try_from(self.length).is_ok_and(|l| l > self.body_bytes.len())
    }

    /// HEARTBEAT's (and HEARTBEAT_BATCH's) count, when present.
    pub fn count(&self) -> Option<i32> {
        self.bytes().i32(layout(self.kind()).heartbeat_count?).ok()
    }

    /// Writer GUID as far as the readable part of the submessage names it.
    pub fn writer_guid(&self) -> Option<Guid> {
        let writer = self.writer()?;
        if sent_by_reader(self.kind()) {
            self.ctx.dst_prefix.map(|p| Guid::new(p, writer))
        } else {
            Some(Guid::new(self.ctx.src_prefix, writer))
        }
    }
}

/// A position or length within one RTPS message (at most 64 KiB) as the u32 of
/// [`SubmessageError`]; saturates rather than wraps should one ever be larger.
pub(super) fn narrow(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The error of a submessage whose body does not decode, with the fields that precede
/// the fault. (id, flags, length) are from its header.
#[cold]
pub(super) fn undecodable<'a>(
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
