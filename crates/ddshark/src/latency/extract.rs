//! From RTPS datagrams to owned "this capture saw (part of) this sample" observations.

use std::net::SocketAddr;
use std::sync::Arc;

use rtps_dissect::{Datagram, Guid, SequenceNumber, VendorId};

use super::Level;

/// Most DDS fragments one sample may have to be tracked (8192 × 256 B = 2 MiB RustDDS;
/// larger counts are counted and skipped rather than allocated).
pub(crate) const MAX_UNITS: u32 = 1 << 17;

/// Join key: a sample (fragment start 0) or one DATA_FRAG submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub writer: Guid,
    pub sn: SequenceNumber,
    /// DATA_FRAG fragmentStartingNum at submessage level; 0 for DATA and at sample level.
    pub frag_start: u32,
}

/// One DATA/DATA_FRAG submessage seen in one capture.
#[derive(Debug, Clone)]
pub struct Obs {
    pub(crate) key: Key,
    /// First unit (1-based) and count of units this submessage carries.
    pub(crate) unit_start: u32,
    pub(crate) unit_count: u32,
    /// Units that make the whole (sample: DDS fragments; submessage: 1).
    pub(crate) units_total: u32,
    pub(crate) sample_size: u64,
    /// DATA_FRAG (true) or DATA.
    pub(crate) fragmented: bool,
    /// Capture times of the datagram's first and last IP fragment, on the first capture's clock.
    pub(crate) ts_first: i64,
    pub(crate) ts_last: i64,
    pub(crate) frame_first: u64,
    pub(crate) frame_last: u64,
    pub(crate) src: SocketAddr,
    pub(crate) dst: SocketAddr,
    pub(crate) src_mac: Option<[u8; 6]>,
    pub(crate) pcp: Option<u8>,
    pub(crate) vlan_id: Option<u16>,
    /// The sender's RTPS vendor (its message's header).
    pub(crate) vendor: VendorId,
    pub(crate) topic: Option<Arc<str>>,
    pub(crate) type_name: Option<Arc<str>>,
    /// Index of the submessage in its RTPS message.
    pub(crate) index: u32,
    /// The span's `slot` (see `otel_export::SpanMapper`) when the exporter tracks samples; 0 otherwise.
    pub(crate) slot: u16,
}

/// Why a DATA/DATA_FRAG submessage was not used.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExtractStats {
    pub(crate) data_submessages: u64,
    pub(crate) data_frag_submessages: u64,
    /// DATA_FRAG with impossible numbers (Wireshark's oracle ignores those too).
    pub(crate) unusable_data_frag: u64,
    /// Samples with more than [`MAX_UNITS`] fragments.
    pub(crate) too_many_fragments: u64,
    /// Datagrams cut by the snaplen (their submessages are not trusted for timing).
    pub(crate) truncated_datagrams: u64,
}

/// Observations of one datagram. `shift_ns` maps this capture's clock onto the first one's.
pub fn observations(
    d: &Datagram<'_>,
    level: Level,
    shift_ns: i64,
    stats: &mut ExtractStats,
    out: &mut Vec<Obs>,
) {
    if d.truncated {
        stats.truncated_datagrams = stats.truncated_datagrams.saturating_add(1);
        return;
    }
    let ts_first = clock(d.ts_first_ns, shift_ns);
    let ts_last = clock(d.ts_last_ns, shift_ns);
    for sm in d.submessages.iter().flatten() {
        for piece in sm.sample_pieces() {
            let (unit_start, unit_count, units_total, frag_start) = match piece.fragments {
                None => {
                    stats.data_submessages = stats.data_submessages.saturating_add(1);
                    (1, 1, 1, 0)
                }
                Some(range) => {
                    stats.data_frag_submessages = stats.data_frag_submessages.saturating_add(1);
                    if !range.is_consistent() {
                        stats.unusable_data_frag = stats.unusable_data_frag.saturating_add(1);
                        continue;
                    }
                    match level {
                        Level::Sample => {
                            let total = range.total().unwrap_or(0);
                            if total > u64::from(MAX_UNITS) {
                                stats.too_many_fragments =
                                    stats.too_many_fragments.saturating_add(1);
                                continue;
                            }
                            // total ≤ MAX_UNITS: fits in u32.
                            let total = u32::try_from(total).unwrap_or(1);
                            (range.start, u32::from(range.count), total, 0)
                        }
                        Level::Submessage => (1, 1, 1, range.start),
                    }
                }
            };
            let (writer, sn, sample_size) = (piece.writer, piece.sn, piece.sample_size);
            let endpoint = d.topic_of(&writer);
            out.push(Obs {
                key: Key {
                    writer,
                    sn,
                    frag_start,
                },
                unit_start,
                unit_count,
                units_total,
                sample_size,
                fragmented: piece.fragments.is_some(),
                ts_first,
                ts_last,
                frame_first: d.frame_first,
                frame_last: d.frame_last,
                src: d.src,
                dst: d.dst,
                src_mac: d.src_mac,
                pcp: d.pcp,
                vlan_id: d.vlan_id,
                vendor: sm.ctx.src_vendor,
                topic: endpoint.map(|t| t.topic.clone()),
                type_name: endpoint.map(|t| t.type_name.clone()),
                index: u32::try_from(sm.index).unwrap_or(u32::MAX),
                slot: 0,
            });
        }
    }
}

/// Capture time (ns since the epoch) moved onto the reference clock.
pub(crate) fn clock(ts_ns: u64, shift_ns: i64) -> i64 {
    i64::try_from(ts_ns)
        .unwrap_or(i64::MAX)
        .saturating_sub(shift_ns)
}
