//! Zero-copy, never-panicking dissector of captured frames into RTPS submessages
//! and DDS discovery records.
//!
//! The crate is pure: no I/O, no clock, no allocation that the input cannot bound.
//! Feed it [`Frame`]s with their capture timestamps through a [`Dissector`]; it
//! walks the link layer, IPv4/IPv6 (reassembling fragments), UDP and RTPS, and
//! hands back each RTPS datagram with its submessages (INFO_* context applied)
//! and any discovery records they carried.
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

mod bytes;
pub mod discovery;
mod dissector;
mod error;
mod frag;
mod link;
mod net;
pub mod plist;
pub mod rtps;
pub mod tcp;
pub mod types;

pub use discovery::{DiscoveryRecord, EndpointInfo, EndpointKind, ParticipantInfo, TopicMap};
pub use dissector::{
    Datagram, Dissector, DissectorConfig, DissectorStats, Frame, FrameOutcome, SkipReason,
    TcpSegmentOutcome, Transport,
};
pub use error::{DissectError, Layer};
pub use link::LinkType;
pub use rtps::{
    BatchSample, FragmentRange, SamplePiece, SamplePieces, Submessage, SubmessageBody,
    SubmessageKind,
};
pub use types::{EntityId, Guid, GuidPrefix, KeyHasher, Locator, SequenceNumber, Time, VendorId};
