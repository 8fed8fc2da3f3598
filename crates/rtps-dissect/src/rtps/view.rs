//! Checked views of a submessage's fixed fields (smoltcp's `new_checked`): the length is
//! checked once, then every field of the view reads without failing. A kind's view is its
//! field list given to [`fixed_view!`]; what varies in length after the fixed fields (sets,
//! inline QoS) is read by checked readers that fail as reading field by field did.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::types::{EntityId, GuidPrefix, SequenceNumber, VendorId};

/// A field of a fixed layout: where it sits (from the start of the view), its size, and
/// the bytes read at once. A kind lists its fields in the order its decoder reads them,
/// so that a body cut short is named by the first read it cuts, as reading field by field
/// named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FieldSpan {
    pub at: usize,
    pub size: usize,
    /// An SN is read as two 4-byte halves: a body that holds only the first is named by
    /// the second.
    pub piece: usize,
}

/// What a field of a view holds and how it is read.
pub(super) trait Field {
    type Value: Default;
    const SIZE: usize;
    const PIECE: usize = Self::SIZE;
    fn read(b: &Bytes<'_>, at: usize) -> Result<Self::Value>;
}

/// The span of a field of type `F` at `at`.
pub(super) const fn span<F: Field>(at: usize) -> FieldSpan {
    FieldSpan {
        at,
        size: F::SIZE,
        piece: F::PIECE,
    }
}

/// Whether every field lies within `len` bytes: each view asserts it at compile time, so
/// its reads cannot fall outside the checked bytes.
pub(super) const fn fits(fields: &[FieldSpan], len: usize) -> bool {
    match fields {
        [] => true,
        [field, rest @ ..] => match field.at.checked_add(field.size) {
            Some(end) => end <= len && field.piece > 0 && fits(rest, len),
            None => false,
        },
    }
}

/// A field type of the views (uninhabited: only its [`Field`] impl is used).
macro_rules! field_type {
    ($(#[$doc:meta])* $name:ident: $value:ty, $size:expr, $piece:expr, |$b:ident, $at:ident| $read:expr) => {
        $(#[$doc])*
        pub(super) enum $name {}
        impl Field for $name {
            type Value = $value;
            const SIZE: usize = $size;
            const PIECE: usize = $piece;
            #[inline(always)]
            fn read($b: &Bytes<'_>, $at: usize) -> Result<$value> {
                $read
            }
        }
    };
}

field_type!(U8: u8, 1, 1, |b, at| b.u8(at));
field_type!(U16: u16, 2, 2, |b, at| b.u16(at));
field_type!(U32: u32, 4, 4, |b, at| b.u32(at));
field_type!(I32: i32, 4, 4, |b, at| b.i32(at));
field_type!(
    /// Big-endian whatever the submessage's byte order (DATA_BATCH's SampleInfo flags).
    BeU16: u16, 2, 2, |b, at| b.be_u16(at)
);
field_type!(
    /// Read as two halves, high (signed) then low, as RTPS sends it.
    Sn: SequenceNumber, 8, 4, |b, at| super::read_sn(b, at)
);
field_type!(Entity: EntityId, 4, 4, |b, at| super::read_entity(b, at));
field_type!(Prefix: GuidPrefix, 12, 12, |b, at| Ok(GuidPrefix(b.array::<12>(at)?)));
field_type!(Vendor: VendorId, 2, 2, |b, at| Ok(VendorId(b.array::<2>(at)?)));
field_type!(Ipv4: [u8; 4], 4, 4, |b, at| b.array::<4>(at));

/// `LEN` bytes of a body, checked to be there.
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
            None => Err(first_cut(body.data().len(), 0, fields)),
        }
    }

    /// The body's fixed fields when it holds them, for readers that want no error (of a
    /// body the walk has checked).
    #[inline(always)]
    pub(super) fn new(body: &Bytes<'a>) -> Option<Self> {
        let fixed = body.data().first_chunk::<LEN>()?;
        Some(Self {
            bytes: body.with(fixed),
        })
    }

    /// [`Fixed::new_checked`] of the `LEN` bytes at `at` (one of a list of fixed-size
    /// entries); an error names its offset in `body`.
    #[inline(always)]
    pub(super) fn new_checked_at(
        body: &Bytes<'a>,
        at: usize,
        fields: &[FieldSpan],
    ) -> Result<Self> {
        match body
            .data()
            .get(at..)
            .and_then(|rest| rest.first_chunk::<LEN>())
        {
            Some(fixed) => Ok(Self {
                bytes: body.with(fixed),
            }),
            None => Err(first_cut(body.data().len(), at, fields)),
        }
    }

    /// The field of type `F` at `at`. It cannot fail: `LEN` bytes are there and every
    /// view asserts (`fits`) that its fields lie within them; the fallback is never taken.
    #[inline(always)]
    pub(super) fn get<F: Field>(&self, at: usize) -> F::Value {
        F::read(&self.bytes, at).unwrap_or_default()
    }
}

/// The error reading `fields` (from `base`) in order from a body of `len` bytes would give.
#[cold]
fn first_cut(len: usize, base: usize, fields: &[FieldSpan]) -> DissectError {
    let reads = fields.iter().flat_map(|field| {
        let start = base.saturating_add(field.at);
        let pieces = field.size.checked_div(field.piece).unwrap_or(0);
        (0..pieces).map(move |i| {
            (
                start.saturating_add(i.saturating_mul(field.piece)),
                field.piece,
            )
        })
    });
    let (offset, needed) = reads
        .into_iter()
        .find(|&(at, size)| at.saturating_add(size) > len)
        .unwrap_or((len, 1));
    DissectError::Truncated {
        layer: Layer::Submessage,
        offset,
        needed,
        actual: len.saturating_sub(offset),
    }
}

/// A kind's checked view: `View` over the first `LEN` bytes of a body (or, with `at`, over
/// `LEN` bytes at a given offset: one entry of a list), with one accessor per field. The
/// fields are listed in the order the decoder reads them (a short body is named by the
/// first read it cuts); their offsets come from the kind's `field` module. A new kind's
/// view is its field list:
///
/// ```ignore
/// fixed_view! {
///     /// A HEARTBEAT body checked to hold its fields.
///     View(field::LEN) {
///         reader: Entity = field::READER,
///         count: I32 = field::COUNT,
///     }
/// }
/// ```
macro_rules! fixed_view {
    (@constructors $view:ident) => {
        impl<'a> $view<'a> {
            #[inline(always)]
            pub(super) fn new_checked(
                body: &$crate::bytes::Bytes<'a>,
            ) -> $crate::error::Result<Self> {
                $crate::rtps::view::Fixed::new_checked(body, Self::READS).map(Self)
            }

            /// The view when the body holds it, without building an error: for the
            /// readers of a body the walk has checked, and the walk's cheap checks.
            #[allow(dead_code)] // (some kinds are only decoded)
            #[inline(always)]
            pub(super) fn new(body: &$crate::bytes::Bytes<'a>) -> Option<Self> {
                $crate::rtps::view::Fixed::new(body).map(Self)
            }
        }
    };
    (@constructors $view:ident at) => {
        impl<'a> $view<'a> {
            /// The entry at `at` of `body`; an error names its offset in `body`.
            #[inline(always)]
            pub(super) fn new_checked_at(
                body: &$crate::bytes::Bytes<'a>,
                at: usize,
            ) -> $crate::error::Result<Self> {
                $crate::rtps::view::Fixed::new_checked_at(body, at, Self::READS).map(Self)
            }
        }
    };
    (
        $(#[$doc:meta])*
        $view:ident($len:expr) $($at:ident)? {
            $($(#[$field_doc:meta])* $name:ident: $ty:ident = $offset:expr),+ $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub(super) struct $view<'a>($crate::rtps::view::Fixed<'a, { $len }>);

        impl $view<'_> {
            /// The fields in the order the decoder reads them.
            pub(super) const READS: &'static [$crate::rtps::view::FieldSpan] =
                &[$($crate::rtps::view::span::<$crate::rtps::view::$ty>($offset)),+];

            $(
                $(#[$field_doc])*
                #[inline(always)]
                pub(super) fn $name(
                    &self,
                ) -> <$crate::rtps::view::$ty as $crate::rtps::view::Field>::Value {
                    self.0.get::<$crate::rtps::view::$ty>($offset)
                }
            )+
        }

        $crate::rtps::view::fixed_view!(@constructors $view $($at)?);

        const _: () = assert!($crate::rtps::view::fits($view::READS, $len));
    };
}
pub(super) use fixed_view;

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::FieldSpan;
    use crate::bytes::Bytes;
    use crate::error::{DissectError, Layer, Result};
    use crate::types::VendorId;

    /// What reading `fields` (at `base`) piece by piece from `body` gives: the decoders'
    /// errors before the views, which a view's check must give unchanged.
    fn field_by_field(body: &[u8], base: usize, fields: &[FieldSpan]) -> Result<()> {
        let b = Bytes::new(body, Layer::Submessage, false);
        fields.iter().try_for_each(|field| {
            (0..field.size / field.piece).try_for_each(|i| {
                b.slice(base + field.at + i * field.piece, field.piece)
                    .map(|_| ())
            })
        })
    }

    /// Every view's check, against reading its fields one by one: every body shorter
    /// than the view is named by the first read it cuts, and a body of the view's length
    /// passes. SampleInfo's at several offsets into the list.
    #[test]
    fn a_short_body_is_named_by_the_first_field_it_cuts() {
        type Check = fn(&Bytes<'_>) -> Result<()>;
        // (each view, and the kind whose decoder reads it first, when one does)
        macro_rules! views {
            ($($kind:ident::$view:ident($len:expr) $decoded:expr),+ $(,)?) => {
                [$((
                    concat!(stringify!($kind), "::", stringify!($view)),
                    $kind::$view::READS,
                    $len,
                    (|b| $kind::$view::new_checked(b).map(|_| ())) as Check,
                    $decoded,
                )),+]
            };
        }
        use SubmessageKind as K;
        let views = views![
            heartbeat::View(heartbeat::field::LEN) Some(K::Heartbeat),
            heartbeat_frag::View(heartbeat_frag::field::LEN) Some(K::HeartbeatFrag),
            heartbeat_batch::View(heartbeat_batch::field::LEN) Some(K::HeartbeatBatch),
            info_ts::View(info_ts::field::LEN) Some(K::InfoTs),
            info_dst::View(info_dst::field::LEN) Some(K::InfoDst),
            info_src::View(info_src::field::LEN) Some(K::InfoSrc),
            info_reply::View(info_reply::field::LEN) Some(K::InfoReply),
            info_reply_ip4::View(info_reply_ip4::field::LEN) Some(K::InfoReplyIp4),
            data::View(data::field::FIXED_LEN) Some(K::Data),
            data_frag::View(data_frag::field::FIXED_LEN) Some(K::DataFrag),
            data_session::View(data_session::field::FIXED_LEN) Some(K::DataSession),
            data_batch::View(data_batch::field::FIXED_LEN) Some(K::DataBatch),
            gap::View(gap::field::FIXED_LEN) Some(K::Gap),
            // (their decoders read the set after the fixed fields first)
            acknack::View(acknack::field::FIXED_LEN) None,
            nack_frag::View(nack_frag::field::FIXED_LEN) None,
        ];
        for (name, reads, len, check, decoded) in views {
            for short in 0..len {
                let body = vec![0u8; short];
                let expected = field_by_field(&body, 0, reads);
                assert!(expected.is_err(), "{name}: {short} bytes read whole");
                let b = Bytes::new(&body, Layer::Submessage, false);
                assert_eq!(check(&b), expected, "{name}: {short} bytes");
                if let Some(kind) = decoded {
                    let body = parse_body(kind, 0, &body, VendorId::default()).map(|_| ());
                    assert_eq!(body, expected, "{kind:?}: {short} bytes");
                }
            }
            let body = vec![0u8; len];
            assert!(
                check(&Bytes::new(&body, Layer::Submessage, false)).is_ok(),
                "{name}"
            );
        }
        let info_len = data_batch::field::sample_info::OPTIONAL;
        for at in [0, 3, 8, 20] {
            for len in 0..at + info_len {
                let body = vec![0u8; len];
                let b = Bytes::new(&body, Layer::Submessage, false);
                let checked = data_batch::SampleInfo::new_checked_at(&b, at).map(|_| ());
                let expected = field_by_field(&body, at, data_batch::SampleInfo::READS);
                assert_eq!(checked, expected, "SampleInfo at {at}: {len} bytes");
            }
        }
    }

    /// The decoders as they read field by field before their views (copied from them),
    /// the oracle of `decoders_give_what_reading_field_by_field_gave`.
    mod before {
        use super::super::super::*;
        use crate::bytes::Bytes;
        use crate::error::{DissectError, Layer, Result};

        fn read_valid_sn(b: &Bytes<'_>, offset: usize, what: &'static str) -> Result<i64> {
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

        pub fn acknack<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
            let (set, after) = read_sn_set(b, 8)?;
            Ok(SubmessageBody::AckNack {
                reader: read_entity(b, 0)?,
                writer: read_entity(b, 4)?,
                reader_sn_state: set,
                count: b.i32(after)?,
                final_flag: flags & 0x02 != 0,
            })
        }

        pub fn nack_frag<'a>(b: &Bytes<'a>) -> Result<SubmessageBody<'a>> {
            let (set, after) = read_frag_set(b, 16)?;
            Ok(SubmessageBody::NackFrag {
                reader: read_entity(b, 0)?,
                writer: read_entity(b, 4)?,
                writer_sn: read_sn(b, 8)?,
                fragment_number_state: set,
                count: b.i32(after)?,
            })
        }

        pub fn gap<'a>(b: &Bytes<'a>) -> Result<SubmessageBody<'a>> {
            let gap_start = read_valid_sn(b, 8, "GAP gapStart")?;
            let (set, _) = read_sn_set(b, 16)?;
            if set.base < 1 {
                return Err(DissectError::Invalid {
                    layer: Layer::Submessage,
                    offset: 16,
                    what: "GAP gapList base",
                    value: set.base as u64,
                });
            }
            Ok(SubmessageBody::Gap {
                reader: read_entity(b, 0)?,
                writer: read_entity(b, 4)?,
                gap_start,
                gap_list: set,
            })
        }

        pub fn data_frag<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
            let otiq = usize::from(b.u16(2)?);
            let reader = read_entity(b, 4)?;
            let writer = read_entity(b, 8)?;
            let writer_sn = read_sn(b, 12)?;
            let fragment_starting_num = b.u32(20)?;
            let fragments_in_submessage = b.u16(24)?;
            let fragment_size = b.u16(26)?;
            let sample_size = b.u32(28)?;
            let (inline_qos, pos) = inline_qos_and_end(b, otiq, flags & 0x02 != 0)?;
            Ok(SubmessageBody::DataFrag {
                reader,
                writer,
                writer_sn,
                fragment_starting_num,
                fragments_in_submessage,
                fragment_size,
                sample_size,
                inline_qos,
                key_flag: flags & 0x04 != 0,
                fragments: b.rest(pos)?,
            })
        }

        pub fn data_session<'a>(b: &Bytes<'a>, flags: u8) -> Result<SubmessageBody<'a>> {
            let otiq = usize::from(b.u16(2)?);
            let reader = read_entity(b, 4)?;
            let writer = read_entity(b, 8)?;
            read_sn(b, 12)?;
            let writer_sn = read_sn(b, 20)?;
            data::decode_rest(b, flags, otiq, reader, writer, writer_sn)
        }
    }

    /// The decoders of the kinds with a variable part (sets, inline QoS) give what they
    /// gave reading field by field, value or error (layer, offset, lengths), for every
    /// body length up to 64 bytes, zeros and pseudo-random bytes whose length-like
    /// fields are often small (so that sets, inline QoS and SNs take every path).
    #[test]
    fn decoders_give_what_reading_field_by_field_gave() {
        type Decode = for<'a> fn(&Bytes<'a>, u8) -> Result<SubmessageBody<'a>>;
        let kinds: [(&str, Decode, Decode); 5] = [
            ("ACKNACK", acknack::decode, before::acknack),
            (
                "NACK_FRAG",
                |b, _| nack_frag::decode(b),
                |b, _| before::nack_frag(b),
            ),
            ("GAP", |b, _| gap::decode(b), |b, _| before::gap(b)),
            ("DATA_FRAG", data_frag::decode, before::data_frag),
            ("DATA_SESSION", data_session::decode, before::data_session),
        ];
        let mut bytes = test_bytes::SmallBytes::new();
        let (mut decoded, mut failed) = (0u32, 0u32);
        for (name, now, before) in kinds {
            for flags in 0..16u8 {
                for len in 0..64usize {
                    for round in 0..8 {
                        let body = match round {
                            0 => vec![0; len],
                            _ => bytes.body(len),
                        };
                        let b = Bytes::new(&body, Layer::Submessage, flags & 1 == 1);
                        let expected = before(&b, flags);
                        match &expected {
                            Ok(_) => decoded += 1,
                            Err(DissectError::Truncated { .. }) => failed += 1,
                            Err(_) => {}
                        }
                        assert_eq!(
                            now(&b, flags),
                            expected,
                            "{name} flags {flags:#x} {body:02x?}"
                        );
                    }
                }
            }
        }
        // Both paths taken often.
        assert!(
            decoded > 1000 && failed > 1000,
            "{decoded} decoded, {failed} cut short"
        );
    }
}
