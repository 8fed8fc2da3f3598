//! Flat, typed records of one RTPS submessage: what `dissect` prints and what
//! tests compare with the tshark oracle.

use rtps_dissect::plist::PID_STATUS_INFO;
use rtps_dissect::rtps::SubmessageError;
use rtps_dissect::{Datagram, Guid, Submessage, SubmessageBody, SubmessageKind, Transport};
use serde::Serialize;

/// Most requested sequence numbers listed for one ACKNACK (the spec allows 256).
const MAX_LISTED_SNS: usize = 256;

/// One RTPS submessage with its datagram's envelope. Absent values are `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SubmessageRecord {
    pub kind: &'static str,
    pub submessage_id: u8,
    /// VENDOR_SPECIFIC: the sender vendor's name for it when we know it
    /// (`FASTDDS_STATISTICS`, `RTI_CRC`, …).
    pub vendor_submessage: Option<&'static str>,
    /// Frame that completed the datagram (its last IP fragment).
    pub frame: u64,
    pub(crate) frame_first: u64,
    pub ts_first_ns: u64,
    pub ts_last_ns: u64,
    pub(crate) ip_fragments: u32,
    pub src: String,
    pub dst: String,
    pub vendor_id: String,
    pub(crate) version: String,
    pub guid_prefix: String,
    pub dst_guid_prefix: Option<String>,
    pub sm_index: usize,
    pub(crate) flags: u8,
    pub(crate) length: usize,
    pub writer_guid: Option<String>,
    pub reader_entity: Option<String>,
    pub sn: Option<i64>,
    pub first_sn: Option<i64>,
    pub last_sn: Option<i64>,
    /// ACKNACK: the sequence numbers the reader asks for (bitmap bits set).
    pub(crate) requested_sns: Option<Vec<i64>>,
    /// ACKNACK/GAP bitmap base.
    pub(crate) bitmap_base: Option<i64>,
    pub count: Option<i32>,
    pub frag_start: Option<u32>,
    pub frags_in_submessage: Option<u16>,
    pub fragment_size: Option<u16>,
    /// Whole sample size: DATA_FRAG's sampleSize, DATA's serialized payload size.
    pub sample_size: Option<u64>,
    pub last_frag_num: Option<u32>,
    /// Serialized bytes in this submessage (DATA payload or DATA_FRAG fragments).
    pub payload_size: Option<usize>,
    pub(crate) representation: Option<String>,
    pub(crate) status_info: Option<u32>,
    /// Source timestamp from INFO_TS, ns since the epoch.
    pub(crate) info_ts_ns: Option<i64>,
    pub pcp: Option<u8>,
    pub(crate) vlan_id: Option<u16>,
    pub topic: Option<String>,
    #[serde(rename = "type")]
    pub(crate) type_name: Option<String>,
    pub truncated: bool,
    pub error: Option<String>,
    /// DATA_SESSION: the SN within the channel's session (`sn` is the writer's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_sn: Option<i64>,
    /// DATA_BATCH: every sample in it (`sn` is the batch's SN, `first_sn`/`last_sn` its
    /// samples' range, `payload_size` their sum).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<Vec<BatchSampleRecord>>,
    /// RTPS over TCP: the stream's framing (`rtcp`, `length_prefixed`, `bare`); absent for
    /// UDP. `ip_fragments`, `ts_first_ns` and `frame_first` are then the TCP segments the
    /// message spanned and the first of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_framing: Option<&'static str>,
    /// Fast DDS' logical port from the RTCP header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_logical_port: Option<u16>,
}

/// One sample of a DATA_BATCH.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BatchSampleRecord {
    pub sn: i64,
    /// serializedDataLength.
    pub size: u32,
    /// Source timestamp of the sample, ns since the epoch.
    pub(crate) info_ts_ns: Option<i64>,
    pub(crate) key: bool,
}

impl SubmessageRecord {
    fn envelope(d: &Datagram<'_>) -> Self {
        Self {
            frame: d.frame_last,
            frame_first: d.frame_first,
            ts_first_ns: d.ts_first_ns,
            ts_last_ns: d.ts_last_ns,
            ip_fragments: d.ip_fragments,
            src: d.src.to_string(),
            dst: d.dst.to_string(),
            vendor_id: d.header.vendor.to_string(),
            version: format!("{}.{}", d.header.version.0, d.header.version.1),
            guid_prefix: d.header.guid_prefix.to_string(),
            pcp: d.pcp,
            vlan_id: d.vlan_id,
            truncated: d.truncated,
            tcp_framing: match d.transport {
                Transport::Tcp { framing, .. } => Some(framing.name()),
                Transport::Udp => None,
            },
            tcp_logical_port: match d.transport {
                Transport::Tcp { logical_port, .. } => logical_port,
                Transport::Udp => None,
            },
            ..Self::default()
        }
    }

    /// A submessage that could not be decoded.
    pub(crate) fn from_error(d: &Datagram<'_>, e: &SubmessageError<'_>) -> Self {
        let writer = e.writer_guid();
        let (first_sn, last_sn) = e.first_last_sns();
        let (topic, type_name) = topic_and_type(d, writer);
        Self {
            kind: e.kind().name(),
            submessage_id: e.id,
            sm_index: e.index as usize,
            flags: e.flags,
            length: e.length as usize,
            guid_prefix: e.ctx.src_prefix.to_string(),
            dst_guid_prefix: e.ctx.dst_prefix.map(|p| p.to_string()),
            writer_guid: writer.map(|g| g.to_string()),
            reader_entity: e.reader().map(|r| r.to_string()),
            sn: e.writer_sn(),
            first_sn,
            last_sn,
            count: e.count(),
            topic,
            type_name,
            error: Some(e.error.to_string()),
            truncated: d.truncated || e.truncated(),
            ..Self::envelope(d)
        }
    }

    pub(crate) fn from_submessage(d: &Datagram<'_>, sm: &Submessage<'_>) -> Self {
        let mut r = Self::envelope(d);
        r.kind = sm.kind.name();
        r.submessage_id = sm.id;
        r.sm_index = sm.index;
        r.flags = sm.flags;
        r.length = sm.length;
        r.truncated |= sm.truncated;
        r.guid_prefix = sm.ctx.src_prefix.to_string();
        r.dst_guid_prefix = sm.ctx.dst_prefix.map(|p| p.to_string());
        let writer = sm.writer_guid();
        r.writer_guid = writer.map(|g| g.to_string());
        r.reader_entity = sm.reader_entity().map(|e| e.to_string());
        r.sn = sm.writer_sn();
        r.payload_size = sm.payload_size();
        (r.topic, r.type_name) = topic_and_type(d, writer);
        if matches!(
            sm.kind,
            SubmessageKind::Data
                | SubmessageKind::DataFrag
                | SubmessageKind::DataSession
                | SubmessageKind::DataBatch
        ) {
            r.info_ts_ns = sm.ctx.timestamp.and_then(|t| t.to_ns());
        }
        r.session_sn = sm.session_sn();
        match &sm.body() {
            SubmessageBody::AckNack {
                reader_sn_state,
                count,
                ..
            } => {
                r.bitmap_base = Some(reader_sn_state.base);
                r.requested_sns = Some(reader_sn_state.iter().take(MAX_LISTED_SNS).collect());
                r.count = Some(*count);
            }
            SubmessageBody::Heartbeat {
                first_sn,
                last_sn,
                count,
                ..
            }
            | SubmessageBody::HeartbeatBatch {
                first_sn,
                last_sn,
                count,
                ..
            } => {
                r.first_sn = Some(*first_sn);
                r.last_sn = Some(*last_sn);
                r.count = Some(*count);
            }
            SubmessageBody::Gap {
                gap_start,
                gap_list,
                ..
            } => {
                r.first_sn = Some(*gap_start);
                r.bitmap_base = Some(gap_list.base);
            }
            SubmessageBody::NackFrag {
                fragment_number_state,
                count,
                ..
            } => {
                r.bitmap_base = Some(i64::from(fragment_number_state.base));
                r.count = Some(*count);
            }
            SubmessageBody::HeartbeatFrag {
                last_fragment_num,
                count,
                ..
            } => {
                r.last_frag_num = Some(*last_fragment_num);
                r.count = Some(*count);
            }
            SubmessageBody::Data {
                inline_qos,
                payload,
                ..
            } => {
                r.sample_size = r.payload_size.map(|s| s as u64);
                r.representation = payload
                    .and_then(|p| p.representation)
                    .map(|v| format!("0x{v:04x}"));
                r.status_info = inline_qos
                    .and_then(|q| q.find(PID_STATUS_INFO))
                    .and_then(|p| p.status_info().ok());
            }
            SubmessageBody::DataFrag {
                fragment_starting_num,
                fragments_in_submessage,
                fragment_size,
                sample_size,
                inline_qos,
                fragments,
                ..
            } => {
                r.frag_start = Some(*fragment_starting_num);
                r.frags_in_submessage = Some(*fragments_in_submessage);
                r.fragment_size = Some(*fragment_size);
                r.sample_size = Some(u64::from(*sample_size));
                r.status_info = inline_qos
                    .and_then(|q| q.find(PID_STATUS_INFO))
                    .and_then(|p| p.status_info().ok());
                if *fragment_starting_num == 1 {
                    r.representation = fragments
                        .get(..2)
                        .and_then(|b| <[u8; 2]>::try_from(b).ok())
                        .map(|b| format!("0x{:04x}", u16::from_be_bytes(b)));
                }
            }
            SubmessageBody::DataBatch {
                first_sample_sn,
                offset_to_last_sample_sn,
                samples,
                ..
            } => {
                r.first_sn = Some(*first_sample_sn);
                r.last_sn = first_sample_sn.checked_add(i64::from(*offset_to_last_sample_sn));
                let batch: Vec<BatchSampleRecord> = samples
                    .iter()
                    .map(|s| BatchSampleRecord {
                        sn: s.sn,
                        size: s.size,
                        info_ts_ns: s.timestamp.and_then(|t| t.to_ns()),
                        key: s.key,
                    })
                    .collect();
                r.payload_size = Some(batch.iter().map(|s| s.size as usize).sum());
                r.batch = Some(batch);
            }
            SubmessageBody::VendorSpecific {
                known: Some(known), ..
            } => r.vendor_submessage = Some(known.name()),
            SubmessageBody::VendorSpecific { known: None, .. }
            | SubmessageBody::Pad
            | SubmessageBody::InfoTs { .. }
            | SubmessageBody::InfoSrc { .. }
            | SubmessageBody::InfoReplyIp4 { .. }
            | SubmessageBody::InfoDst { .. }
            | SubmessageBody::InfoReply { .. }
            | SubmessageBody::Security { .. }
            | SubmessageBody::Unknown { .. } => {}
        }
        r
    }

    /// Every submessage record of a datagram, in order.
    pub fn all(d: &Datagram<'_>) -> Vec<Self> {
        d.submessages
            .iter()
            .map(|sm| match sm {
                Ok(sm) => Self::from_submessage(d, sm),
                Err(e) => Self::from_error(d, e),
            })
            .collect()
    }
}

/// A writer's topic and type: as discovered, or the built-in topic its entity id names
/// (DCPSParticipant, …), as `stats` and `latency` name them.
fn topic_and_type(d: &Datagram<'_>, writer: Option<Guid>) -> (Option<String>, Option<String>) {
    let Some(w) = writer else {
        return (None, None);
    };
    if let Some(i) = d.topic_of(&w) {
        return (Some(i.topic.to_string()), Some(i.type_name.to_string()));
    }
    w.entity
        .builtin_topic()
        .map(|b| (Some(b.name.to_string()), Some(b.type_name.to_string())))
        .unwrap_or_default()
}
