//! The RTPS message: header, submessages, and the INFO_* context that the
//! interpreter carries from one submessage to the next.
//!
//! `header` (the message header, submessage ids), `body` (`SubmessageBody`, `parse_body`),
//! `sets` (sequence/fragment number sets), `data` (DATA, DATA_FRAG, DATA_SESSION, sample
//! pieces), `batch` (RTI's DATA_BATCH),
//! `vendor` (vendor-specific submessages), `roles` (where each kind's entity ids and
//! writer SN sit, and whether a reader sends it), `walk` (the submessages of a message in
//! order, with their context), `undecoded` (`SubmessageError`: a submessage that did not
//! decode, and the fields readable before the fault); `field` below holds every wire offset.

mod batch;
mod body;
mod data;
mod header;
mod roles;
mod sets;
mod undecoded;
mod vendor;
mod walk;

pub use batch::*;
pub use body::*;
pub use data::*;
pub use header::*;
use roles::*;
pub use sets::*;
pub use undecoded::*;
pub use vendor::*;
pub use walk::*;

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
