//! The RTPS message: header, submessages, and the INFO_* context that the
//! interpreter carries from one submessage to the next.
//!
//! `header` (the message header, submessage ids); one module per submessage kind
//! (`acknack`, `data`, `data_frag`, `data_session`, `data_batch`, `gap`, `heartbeat`,
//! `heartbeat_frag`, `heartbeat_batch`, `info_dst`, `info_reply`, `info_reply_ip4`,
//! `info_src`, `info_ts`, `nack_frag`, `security`, `vendor`), each with its field offsets
//! (its `field` module), its checked view (a field list given to `view::fixed_view!`), its
//! decoder and its `Layout`; `view` (the checked views); `kind` (the `Layout` of every kind:
//! what is read without decoding), `body` (`SubmessageBody`, `parse_body`), `sets`
//! (sequence/fragment number sets), `roles` (entity ids and writer SN read through a
//! kind's `Layout`), `walk` (the submessages of a message in order, with their context),
//! `undecoded` (`SubmessageError`: a submessage that did not decode, and the fields
//! readable before the fault).

// One module per submessage kind: its field offsets, its view, its decoder, its `Layout`.
mod acknack;
mod data;
mod data_batch;
mod data_frag;
mod data_session;
mod gap;
mod heartbeat;
mod heartbeat_batch;
mod heartbeat_frag;
mod info_dst;
mod info_reply;
mod info_reply_ip4;
mod info_src;
mod info_ts;
mod nack_frag;
mod security;
mod vendor;

mod body;
mod header;
mod kind;
mod roles;
mod sets;
#[cfg(test)]
mod test_bytes;
mod undecoded;
mod view;
mod walk;

pub use body::*;
use data::{inline_qos_and_end, read_inline_qos, FLAG_DATA_D, FLAG_DATA_K, FLAG_DATA_Q};
pub use data::{SamplePiece, SamplePieces, SerializedPayload};
pub use data_batch::{BatchSample, BatchSampleIter, BatchSamples};
pub use data_frag::FragmentRange;
pub use header::*;
use kind::*;
use roles::*;
pub use sets::*;
pub use undecoded::*;
pub use vendor::{FastDdsStatistics, VendorSubmessage};
pub use walk::*;

pub const RTPS_HEADER_LEN: usize = 20;
const SUBMESSAGE_HEADER_LEN: usize = 4;
