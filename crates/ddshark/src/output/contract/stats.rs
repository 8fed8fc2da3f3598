//! `ddshark stats`' JSON document (also `--final-json`) and a `--no-tui --format jsonl` line:
//! what the snapshot's views hold, field by field, in the order scripts have read them.
//! Schemas: `schemas/stats.schema.json`, `schemas/stats-line.schema.json`.

use serde::Serialize;

use super::counters;
use super::health::Health;
use crate::state::ros::RosKind as RosKindView;
use crate::state::snapshot as view;
use crate::state::window::Counts as CountsView;
use crate::state::{Gone as GoneView, GoneReason};

/// `ddshark stats`' JSON document.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Document {
    pub summary: Summary,
    pub participants: Vec<Participant>,
    pub writers: Vec<Writer>,
    pub readers: Vec<Reader>,
    /// The user's topics and the built-in ones (`builtin`).
    pub topics: Vec<Topic>,
    pub secured: super::health::Secured,
    pub health: Health,
}

impl Document {
    pub fn of(s: &view::Snapshot) -> Self {
        Self {
            summary: Summary::from(&s.summary),
            participants: s.participants.iter().map(Participant::from).collect(),
            writers: s.writers.iter().map(Writer::from).collect(),
            readers: s.readers.iter().map(Reader::from).collect(),
            topics: s.topics.iter().map(Topic::from).collect(),
            secured: (&s.secured).into(),
            health: (&s.health).into(),
        }
    }
}

/// One line of `--no-tui --format jsonl`: the user's topics only.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SummaryLine {
    pub summary: Summary,
    pub topics: Vec<Topic>,
    pub health: Health,
}

impl SummaryLine {
    pub fn of(s: &view::Snapshot) -> Self {
        Self {
            summary: Summary::from(&s.summary),
            topics: s
                .topics
                .iter()
                .filter(|t| !t.builtin)
                .map(Topic::from)
                .collect(),
            health: (&s.health).into(),
        }
    }
}

counters! {
    /// A writer's traffic (summed over a topic's writers, or over all writers).
    Counts from CountsView {
        samples, bytes, data_submessages, data_frag_submessages, ip_fragments, wire_bytes,
        retransmitted, repaired, fanout, repeat_submessages, lost, incomplete, heartbeats,
        acknacks, acknack_requested_sns, nackfrags, gaps, heartbeat_frags,
    }
}

/// Whole-capture totals over every writer (built-in ones too), and the user's samples.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Summary {
    pub first_ts_ns: Option<u64>,
    pub capture_time_ns: u64,
    pub duration_s: f64,
    pub window_s: f64,
    #[serde(flatten)]
    pub totals: Counts,
    pub user_samples: u64,
    pub user_bytes: u64,
}

impl From<&view::Summary> for Summary {
    fn from(s: &view::Summary) -> Self {
        Self {
            first_ts_ns: s.first_ts_ns,
            capture_time_ns: s.capture_time_ns,
            duration_s: s.duration_s,
            window_s: s.window_s,
            totals: (&s.totals).into(),
            user_samples: s.user_samples,
            user_bytes: s.user_bytes,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Disposed,
    Unregistered,
    LeaseExpired,
    ParticipantGone,
}

/// When and why an entity left.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Gone {
    pub at_ns: u64,
    pub reason: Reason,
}

impl From<&GoneView> for Gone {
    fn from(g: &GoneView) -> Self {
        Self {
            at_ns: g.at_ns,
            reason: match g.reason {
                GoneReason::Disposed => Reason::Disposed,
                GoneReason::Unregistered => Reason::Unregistered,
                GoneReason::LeaseExpired => Reason::LeaseExpired,
                GoneReason::ParticipantGone => Reason::ParticipantGone,
            },
        }
    }
}

fn gone(g: &Option<GoneView>) -> Option<Gone> {
    g.as_ref().map(Gone::from)
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Participant {
    pub guid_prefix: String,
    pub vendor: Option<String>,
    pub vendor_name: Option<String>,
    pub version: Option<String>,
    pub entity_name: Option<String>,
    pub domain_id: Option<u32>,
    /// `pid_domain_id`, or `port_mapping` (derived from the metatraffic ports).
    pub domain_id_source: Option<String>,
    /// `null`: not announced, or infinite.
    pub lease_ns: Option<i64>,
    pub addresses: Vec<String>,
    pub locators: Vec<String>,
    pub shared_memory_only: bool,
    pub discovered: bool,
    pub from_cache: bool,
    pub first_seen_ns: u64,
    pub last_seen_ns: u64,
    pub datagrams: u64,
    pub bytes: u64,
    pub gone: Option<Gone>,
}

impl From<&view::ParticipantView> for Participant {
    fn from(p: &view::ParticipantView) -> Self {
        Self {
            guid_prefix: p.guid_prefix.clone(),
            vendor: p.vendor.clone(),
            vendor_name: p.vendor_name.map(String::from),
            version: p.version.clone(),
            entity_name: p.entity_name.clone(),
            domain_id: p.domain_id,
            domain_id_source: p.domain_id_source.map(String::from),
            lease_ns: p.lease_ns.flatten(),
            addresses: p.addresses.clone(),
            locators: p.locators.clone(),
            shared_memory_only: p.shared_memory_only,
            discovered: p.discovered,
            from_cache: p.from_cache,
            first_seen_ns: p.first_seen_ns,
            last_seen_ns: p.last_seen_ns,
            datagrams: p.datagrams,
            bytes: p.bytes,
            gone: gone(&p.gone),
        }
    }
}

/// An endpoint's QoS as SEDP announced it (`null` policies: not announced).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Qos {
    pub reliability: Option<String>,
    pub durability: Option<String>,
    pub history: Option<String>,
    /// `null`: not announced, or infinite.
    pub deadline_ns: Option<i64>,
    pub liveliness: Option<String>,
    /// `null`: not announced, or infinite.
    pub liveliness_lease_ns: Option<i64>,
    pub ownership: Option<String>,
    pub ownership_strength: Option<i32>,
    pub partitions: Vec<String>,
}

impl From<&view::QosView> for Qos {
    fn from(q: &view::QosView) -> Self {
        Self {
            reliability: q.reliability.map(String::from),
            durability: q.durability.map(String::from),
            history: q.history.clone(),
            deadline_ns: q.deadline_ns.flatten(),
            liveliness: q.liveliness.map(String::from),
            liveliness_lease_ns: q.liveliness_lease_ns.flatten(),
            ownership: q.ownership.map(String::from),
            ownership_strength: q.ownership_strength,
            partitions: q.partitions.clone(),
        }
    }
}

/// Whole sample sizes, bytes.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Size {
    pub min: Option<u64>,
    pub mean: Option<f64>,
    pub max: Option<u64>,
}

impl From<&view::SizeView> for Size {
    fn from(s: &view::SizeView) -> Self {
        Self {
            min: s.min,
            mean: s.mean,
            max: s.max,
        }
    }
}

/// The one rate and bandwidth every output shows (docs/cli.md, "Rates and bandwidth").
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Rate {
    pub hz: Option<f64>,
    pub bandwidth_bps: Option<f64>,
    pub span_s: f64,
    pub over_active_span: bool,
}

impl From<&crate::state::rate::RateView> for Rate {
    fn from(r: &crate::state::rate::RateView) -> Self {
        Self {
            hz: r.hz,
            bandwidth_bps: r.bandwidth_bps,
            span_s: r.span_s,
            over_active_span: r.over_active_span,
        }
    }
}

/// Counts over the sliding window.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Window {
    pub seconds: f64,
    pub samples: u64,
    pub bytes: u64,
    pub lost: u64,
    pub retransmitted: u64,
    pub heartbeats: u64,
    pub acknacks: u64,
}

impl From<&view::WindowView> for Window {
    fn from(w: &view::WindowView) -> Self {
        Self {
            seconds: w.seconds,
            samples: w.samples,
            bytes: w.bytes,
            lost: w.lost,
            retransmitted: w.retransmitted,
            heartbeats: w.heartbeats,
            acknacks: w.acknacks,
        }
    }
}

/// Inter-arrival periods over the whole capture, and the DEADLINE misses.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Timing {
    pub samples: u64,
    pub active_s: f64,
    pub period_min_ns: Option<u64>,
    pub period_mean_ns: Option<f64>,
    pub period_max_ns: Option<u64>,
    pub period_stddev_ns: Option<f64>,
    pub deadline_ns: Option<u64>,
    pub deadline_misses: u64,
}

impl From<&crate::state::timing::TimingView> for Timing {
    fn from(t: &crate::state::timing::TimingView) -> Self {
        Self {
            samples: t.samples,
            active_s: t.active_s,
            period_min_ns: t.period_min_ns,
            period_mean_ns: t.period_mean_ns,
            period_max_ns: t.period_max_ns,
            period_stddev_ns: t.period_stddev_ns,
            deadline_ns: t.deadline_ns,
            deadline_misses: t.deadline_misses,
        }
    }
}

/// Datagrams per 802.1Q priority.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PcpCount {
    /// `null`: untagged.
    pub pcp: Option<u8>,
    pub datagrams: u64,
}

fn pcp(p: &[view::PcpCount]) -> Vec<PcpCount> {
    p.iter()
        .map(|c| PcpCount {
            pcp: c.pcp,
            datagrams: c.datagrams,
        })
        .collect()
}

/// A writer, with its traffic over the whole capture and over the window.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Writer {
    pub guid: String,
    pub participant: String,
    pub topic: Option<String>,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub ros_topic: Option<String>,
    pub ros_type: Option<String>,
    pub builtin: bool,
    pub discovered: bool,
    pub from_cache: bool,
    pub discovered_ns: Option<u64>,
    pub samples_before_discovery: u64,
    pub shared_memory_only: bool,
    pub shared_memory_peers: Vec<String>,
    pub qos: Option<Qos>,
    pub locators: Vec<String>,
    pub src: Option<String>,
    pub first_seen_ns: u64,
    pub last_seen_ns: u64,
    pub gone: Option<Gone>,
    #[serde(flatten)]
    pub totals: Counts,
    pub size: Size,
    pub data_frags_per_sample: Option<f64>,
    pub ip_fragments_per_sample: Option<f64>,
    pub rate: Rate,
    pub window: Window,
    pub timing: Timing,
    pub highest_sn: Option<i64>,
    pub open_holes: u64,
    pub sn_jumps: u64,
    pub pcp: Vec<PcpCount>,
    pub vlan_id: Option<u16>,
}

impl From<&view::WriterView> for Writer {
    fn from(w: &view::WriterView) -> Self {
        Self {
            guid: w.guid.clone(),
            participant: w.participant.clone(),
            topic: w.topic.clone(),
            type_name: w.type_name.clone(),
            ros_topic: w.ros_topic.clone(),
            ros_type: w.ros_type.clone(),
            builtin: w.builtin,
            discovered: w.discovered,
            from_cache: w.from_cache,
            discovered_ns: w.discovered_ns,
            samples_before_discovery: w.samples_before_discovery,
            shared_memory_only: w.shared_memory_only,
            shared_memory_peers: w.shared_memory_peers.clone(),
            qos: w.qos.as_ref().map(Qos::from),
            locators: w.locators.clone(),
            src: w.src.clone(),
            first_seen_ns: w.first_seen_ns,
            last_seen_ns: w.last_seen_ns,
            gone: gone(&w.gone),
            totals: (&w.totals).into(),
            size: (&w.size).into(),
            data_frags_per_sample: w.data_frags_per_sample,
            ip_fragments_per_sample: w.ip_fragments_per_sample,
            rate: (&w.rate).into(),
            window: (&w.window).into(),
            timing: (&w.timing).into(),
            highest_sn: w.highest_sn,
            open_holes: w.open_holes,
            sn_jumps: w.sn_jumps,
            pcp: pcp(&w.pcp),
            vlan_id: w.vlan_id,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Reader {
    pub guid: String,
    pub participant: String,
    pub topic: Option<String>,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub ros_topic: Option<String>,
    pub discovered: bool,
    pub from_cache: bool,
    pub shared_memory_only: bool,
    pub shared_memory_peers: Vec<String>,
    pub qos: Option<Qos>,
    pub locators: Vec<String>,
    pub first_seen_ns: u64,
    pub last_seen_ns: u64,
    pub acknacks: u64,
    pub acknack_requested_sns: u64,
    pub nackfrags: u64,
    pub gone: Option<Gone>,
}

impl From<&view::ReaderView> for Reader {
    fn from(r: &view::ReaderView) -> Self {
        Self {
            guid: r.guid.clone(),
            participant: r.participant.clone(),
            topic: r.topic.clone(),
            type_name: r.type_name.clone(),
            ros_topic: r.ros_topic.clone(),
            discovered: r.discovered,
            from_cache: r.from_cache,
            shared_memory_only: r.shared_memory_only,
            shared_memory_peers: r.shared_memory_peers.clone(),
            qos: r.qos.as_ref().map(Qos::from),
            locators: r.locators.clone(),
            first_seen_ns: r.first_seen_ns,
            last_seen_ns: r.last_seen_ns,
            acknacks: r.acknacks,
            acknack_requested_sns: r.acknack_requested_sns,
            nackfrags: r.nackfrags,
            gone: gone(&r.gone),
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RosKind {
    Topic,
    ServiceRequest,
    ServiceReply,
    Action,
}

impl From<RosKindView> for RosKind {
    fn from(k: RosKindView) -> Self {
        match k {
            RosKindView::Topic => Self::Topic,
            RosKindView::ServiceRequest => Self::ServiceRequest,
            RosKindView::ServiceReply => Self::ServiceReply,
            RosKindView::Action => Self::Action,
        }
    }
}

/// A QoS policy a writer offers and a reader requests incompatibly.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct QosMismatch {
    pub writer: String,
    pub reader: String,
    pub policy: String,
    pub offered: String,
    pub requested: String,
}

/// A topic: its writers' traffic summed, its readers, QoS mismatches between them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Topic {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub other_types: Vec<String>,
    pub ros_name: Option<String>,
    pub ros_type: Option<String>,
    pub ros_kind: Option<RosKind>,
    pub builtin: bool,
    pub writers: u64,
    pub readers: u64,
    pub writer_guids: Vec<String>,
    pub reader_guids: Vec<String>,
    #[serde(flatten)]
    pub totals: Counts,
    pub size: Size,
    /// Samples by size: < 64 B, then powers of two.
    pub size_histogram: Vec<u64>,
    pub data_frags_per_sample: Option<f64>,
    pub ip_fragments_per_sample: Option<f64>,
    pub rate: Rate,
    pub window: Window,
    pub timing: Timing,
    pub pcp: Vec<PcpCount>,
    pub shared_memory_only: bool,
    pub shared_memory_only_endpoints: u64,
    pub qos_mismatches: Vec<QosMismatch>,
}

impl From<&view::TopicView> for Topic {
    fn from(t: &view::TopicView) -> Self {
        Self {
            name: t.name.clone(),
            type_name: t.type_name.clone(),
            other_types: t.other_types.clone(),
            ros_name: t.ros_name.clone(),
            ros_type: t.ros_type.clone(),
            ros_kind: t.ros_kind.map(RosKind::from),
            builtin: t.builtin,
            writers: t.writers,
            readers: t.readers,
            writer_guids: t.writer_guids.clone(),
            reader_guids: t.reader_guids.clone(),
            totals: (&t.totals).into(),
            size: (&t.size).into(),
            size_histogram: t.size_histogram.clone(),
            data_frags_per_sample: t.data_frags_per_sample,
            ip_fragments_per_sample: t.ip_fragments_per_sample,
            rate: (&t.rate).into(),
            window: (&t.window).into(),
            timing: (&t.timing).into(),
            pcp: pcp(&t.pcp),
            shared_memory_only: t.shared_memory_only,
            shared_memory_only_endpoints: t.shared_memory_only_endpoints,
            qos_mismatches: t
                .qos_mismatches
                .iter()
                .map(|m| QosMismatch {
                    writer: m.writer.clone(),
                    reader: m.reader.clone(),
                    policy: m.mismatch.policy.to_string(),
                    offered: m.mismatch.offered.clone(),
                    requested: m.mismatch.requested.clone(),
                })
                .collect(),
        }
    }
}
