//! The `health` and `secured` sections of `stats`' JSON: every stage's counters and whether
//! they reconcile; DDS Security traffic per participant and pair.

use rtps_dissect::discovery::DiscoveryFragStats;
use rtps_dissect::tcp::TcpStats;
use rtps_dissect::DissectorStats;
use serde::Serialize;

use super::counters;
use crate::capture::KernelStats;
use crate::recording::RecordingHealth;
use crate::state::secured::SecuredCounts as SecuredCountsView;
use crate::state::snapshot as view;
use crate::state::StateCounters;

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Health {
    pub dissector: Dissector,
    pub state: State,
    pub pipeline: Pipeline,
    pub participants: u64,
    pub writers: u64,
    pub readers: u64,
    pub writers_unattributed: u64,
    /// Every check below is ok.
    pub reconciles: bool,
    pub checks: Vec<Check>,
}

impl From<&view::Health> for Health {
    fn from(h: &view::Health) -> Self {
        Self {
            dissector: (&h.dissector).into(),
            state: (&h.state).into(),
            pipeline: (&h.pipeline).into(),
            participants: h.participants,
            writers: h.writers,
            readers: h.readers,
            writers_unattributed: h.writers_unattributed,
            reconciles: h.reconciles,
            checks: h
                .checks
                .iter()
                .map(|c| Check {
                    name: c.name.to_string(),
                    ok: c.ok,
                    detail: c.detail.clone(),
                })
                .collect(),
        }
    }
}

/// One reconciliation: its name, whether it holds, the figures it compared.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

/// The dissector's frame-level counters; every frame is counted in exactly one outcome.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Dissector {
    pub frames: u64,
    pub frames_truncated: u64,
    pub skipped_not_ip: u64,
    pub skipped_not_udp: u64,
    pub skipped_not_rtps: u64,
    pub skipped_icmp_quoted_rtps: u64,
    pub rti_pings: u64,
    pub fragments_held: u64,
    pub fragments_dropped: u64,
    pub malformed: u64,
    pub rtps_frames: u64,
    pub rtps_datagrams: u64,
    pub submessages: u64,
    pub submessage_errors: u64,
    pub discovery_records: u64,
    pub ip: IpFragments,
    pub discovery_fragments: DiscoveryFragments,
    pub endpoints_known: u64,
    pub endpoints_evicted: u64,
    /// RTPS over TCP; left out while no TCP stream carried RTPS.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, schemars(with = "Tcp"))]
    pub tcp: Option<Tcp>,
}

impl From<&DissectorStats> for Dissector {
    fn from(d: &DissectorStats) -> Self {
        Self {
            frames: d.frames,
            frames_truncated: d.frames_truncated,
            skipped_not_ip: d.skipped_not_ip,
            skipped_not_udp: d.skipped_not_udp,
            skipped_not_rtps: d.skipped_not_rtps,
            skipped_icmp_quoted_rtps: d.skipped_icmp_quoted_rtps,
            rti_pings: d.rti_pings,
            fragments_held: d.fragments_held,
            fragments_dropped: d.fragments_dropped,
            malformed: d.malformed,
            rtps_frames: d.rtps_frames,
            rtps_datagrams: d.rtps_datagrams,
            submessages: d.submessages,
            submessage_errors: d.submessage_errors,
            discovery_records: d.discovery_records,
            ip: IpFragments {
                fragments: d.ip.fragments,
                duplicate_fragments: d.ip.duplicate_fragments,
                reassembled: d.ip.reassembled,
                evicted_idle: d.ip.evicted_idle,
                evicted_capacity: d.ip.evicted_capacity,
                inconsistent: d.ip.inconsistent,
                in_progress: d.ip.in_progress,
                bytes_held: d.ip.bytes_held,
            },
            discovery_fragments: (&d.discovery_fragments).into(),
            endpoints_known: d.endpoints_known,
            endpoints_evicted: d.endpoints_evicted,
            tcp: (!d.tcp.is_zero()).then(|| (&d.tcp).into()),
        }
    }
}

/// IP fragment reassembly (rtps-dissect's `FragmentStats`, which it does not export by name).
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct IpFragments {
    pub fragments: u64,
    pub duplicate_fragments: u64,
    pub reassembled: u64,
    pub evicted_idle: u64,
    pub evicted_capacity: u64,
    pub inconsistent: u64,
    pub in_progress: u64,
    pub bytes_held: u64,
}

counters! {
    /// Discovery samples (SPDP/SEDP) reassembled from DATA_FRAG.
    DiscoveryFragments from DiscoveryFragStats { reassembled, evicted, rejected, in_progress }
}

counters! {
    /// TCP reassembly and framing.
    Tcp from TcpStats {
        frames_held, segments, bytes, out_of_order, retransmitted, overlapping, gaps,
        gap_bytes, ahead_dropped, resyncs, resync_skipped_bytes, streams_opened,
        streams_closed, streams_evicted_idle, streams_evicted_capacity, evicted_bytes,
        streams_active, bytes_held, rtps_rtcp, rtps_length_prefixed, rtps_bare, rtps_rti_tcp,
        rtcp_unknown_payload, messages_malformed, control_bind, control_open_logical_port,
        control_check_logical_port, control_keep_alive, control_logical_port_closed,
        control_unbind, control_unknown, rti_control_bind, rti_control_logical_port,
        rti_control_session, rti_control_liveliness, rti_control_finalize, rti_control_unknown,
    }
}

counters! {
    /// The state's own counters: every DATA/DATA_FRAG classified once, every eviction.
    State from StateCounters {
        datagrams, submessages, data_submessages, new_samples, more_fragments,
        repeat_submessages, invalid_sn, late_fills, discovery_records, acknacks_unattributed,
        nackfrags_unattributed, participants_evicted_idle, participants_evicted_capacity,
        writers_evicted_idle, writers_evicted_capacity, readers_evicted_idle,
        readers_evicted_capacity, samples_of_evicted_writers, frag_samples_evicted,
        leases_expired, ts_backwards, secured_pairs_evicted_capacity,
        secured_pairs_evicted_idle, hosts_evicted,
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Pipeline {
    pub sources: Vec<Source>,
    pub frames_processed: u64,
    pub queue_dropped: u64,
    /// `-w`; `null` when not recording.
    pub recording: Option<Recording>,
}

impl From<&view::PipelineCounters> for Pipeline {
    fn from(p: &view::PipelineCounters) -> Self {
        Self {
            sources: p
                .sources
                .iter()
                .map(|s| Source {
                    name: s.name.clone(),
                    frames: s.frames,
                    queue_dropped: s.queue_dropped,
                    kernel: s.kernel.as_ref().map(Kernel::from),
                    error: s.error.clone(),
                    finished: s.finished,
                })
                .collect(),
            frames_processed: p.frames_processed,
            queue_dropped: p.queue_dropped,
            recording: p.recording.as_ref().map(Recording::from),
        }
    }
}

/// One packet source (a file or an interface).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Source {
    pub name: String,
    pub frames: u64,
    pub queue_dropped: u64,
    /// libpcap's kernel statistics (live captures).
    pub kernel: Option<Kernel>,
    pub error: Option<String>,
    pub finished: bool,
}

counters! {
    Kernel from KernelStats { received, dropped, if_dropped }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Recording {
    pub path: String,
    pub current_file: Option<String>,
    pub files_closed: u64,
    pub frames_written: u64,
    pub bytes_written: u64,
    pub queue_dropped: u64,
    pub not_written_other: u64,
    pub error: Option<String>,
}

impl From<&RecordingHealth> for Recording {
    fn from(r: &RecordingHealth) -> Self {
        Self {
            path: r.path.clone(),
            current_file: r.current_file.clone(),
            files_closed: r.files_closed,
            frames_written: r.frames_written,
            bytes_written: r.bytes_written,
            queue_dropped: r.queue_dropped,
            not_written_other: r.not_written_other,
            error: r.error.clone(),
        }
    }
}

counters! {
    /// Secured messages (SRTPS_PREFIX or SEC_PREFIX) and protected submessages.
    SecuredCounts from SecuredCountsView {
        messages, srtps_messages, sec_submessages, encrypted_submessages, signed_submessages,
        bytes,
    }
}

/// Secured counters over the window, with rates over at least a second.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SecuredWindow {
    pub seconds: f64,
    #[serde(flatten)]
    pub counts: SecuredCounts,
    pub messages_per_s: f64,
    pub sec_submessages_per_s: f64,
    pub bandwidth_bps: f64,
}

impl From<&view::SecuredWindowView> for SecuredWindow {
    fn from(w: &view::SecuredWindowView) -> Self {
        Self {
            seconds: w.seconds,
            counts: (&w.counts).into(),
            messages_per_s: w.messages_per_s,
            sec_submessages_per_s: w.sec_submessages_per_s,
            bandwidth_bps: w.bandwidth_bps,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SecuredParticipant {
    pub guid_prefix: String,
    pub entity_name: Option<String>,
    pub totals: SecuredCounts,
    pub window: SecuredWindow,
    pub protected_endpoints: u64,
    pub protected_endpoints_dropped: u64,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SecuredPair {
    pub src: String,
    /// A GUID prefix, "multicast", or "host:ADDRESS".
    pub dst: String,
    pub src_name: Option<String>,
    pub dst_name: Option<String>,
    pub first_seen_ns: u64,
    pub last_seen_ns: u64,
    pub totals: SecuredCounts,
    pub window: SecuredWindow,
}

/// DDS Security traffic.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Secured {
    pub totals: SecuredCounts,
    pub window: SecuredWindow,
    pub participants: Vec<SecuredParticipant>,
    pub pairs: Vec<SecuredPair>,
    pub protected_endpoints: u64,
    pub pairs_evicted: u64,
}

impl From<&view::SecuredView> for Secured {
    fn from(s: &view::SecuredView) -> Self {
        Self {
            totals: (&s.totals).into(),
            window: (&s.window).into(),
            participants: s
                .participants
                .iter()
                .map(|p| SecuredParticipant {
                    guid_prefix: p.guid_prefix.clone(),
                    entity_name: p.entity_name.clone(),
                    totals: (&p.totals).into(),
                    window: (&p.window).into(),
                    protected_endpoints: p.protected_endpoints,
                    protected_endpoints_dropped: p.protected_endpoints_dropped,
                })
                .collect(),
            pairs: s
                .pairs
                .iter()
                .map(|p| SecuredPair {
                    src: p.src.clone(),
                    dst: p.dst.clone(),
                    src_name: p.src_name.clone(),
                    dst_name: p.dst_name.clone(),
                    first_seen_ns: p.first_seen_ns,
                    last_seen_ns: p.last_seen_ns,
                    totals: (&p.totals).into(),
                    window: (&p.window).into(),
                })
                .collect(),
            protected_endpoints: s.protected_endpoints,
            pairs_evicted: s.pairs_evicted,
        }
    }
}
