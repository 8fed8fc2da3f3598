//! An immutable, serialisable view of the state: what `stats` prints, what the
//! daemon reports and what the TUI renders. Built on the state thread, shared as
//! `Arc<Snapshot>`; readers never touch the live state.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rtps_dissect::discovery::EndpointQos;
use rtps_dissect::{DissectorStats, EndpointInfo, Guid, GuidPrefix};
use serde::Serialize;

use super::qos::{mismatches, Mismatch};
use super::ros::{demangle_topic, demangle_type, RosKind};
use super::secured::{Peer, SecuredCounts};
use super::timing::{TimingAgg, TimingView, MIN_RATE_SPAN_NS};
use super::window::{Counts, Windowed};
use super::{builtin_topic, deadline_ns, Gone, State, StateCounters, Writer, SIZE_BUCKETS};
use crate::capture::KernelStats;

#[derive(Debug, Clone, Default, Serialize)]
pub struct QosView {
    pub reliability: Option<&'static str>,
    pub durability: Option<&'static str>,
    pub history: Option<String>,
    pub deadline_ns: Option<Option<i64>>,
    pub liveliness: Option<&'static str>,
    pub liveliness_lease_ns: Option<Option<i64>>,
    pub ownership: Option<&'static str>,
    pub ownership_strength: Option<i32>,
    pub partitions: Vec<String>,
}

impl QosView {
    fn of(q: &EndpointQos) -> Self {
        Self {
            reliability: q.reliability.map(|r| r.name()),
            durability: q.durability.map(|d| d.name()),
            history: q.history.map(|h| h.name()),
            deadline_ns: q.deadline_ns,
            liveliness: q.liveliness.map(|l| l.name()),
            liveliness_lease_ns: q.liveliness_lease_ns,
            ownership: q.ownership.map(|o| o.name()),
            ownership_strength: q.ownership_strength,
            partitions: q.partitions.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ParticipantView {
    pub guid_prefix: String,
    pub vendor: Option<String>,
    pub vendor_name: Option<&'static str>,
    pub version: Option<String>,
    pub entity_name: Option<String>,
    pub domain_id: Option<u32>,
    /// `pid_domain_id`, or `port_mapping` when SPDP leaves it out (Fast DDS) and it was
    /// derived from the well-known ports of its metatraffic locators.
    pub domain_id_source: Option<&'static str>,
    pub lease_ns: Option<Option<i64>>,
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

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SizeView {
    pub min: Option<u64>,
    pub mean: Option<f64>,
    pub max: Option<u64>,
}

/// Recent activity over the sliding window.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct WindowView {
    /// Length of the window actually covered (≤ the configured window).
    pub seconds: f64,
    pub samples: u64,
    pub bytes: u64,
    pub rate_hz: f64,
    pub bandwidth_bps: f64,
    pub lost: u64,
    pub retransmitted: u64,
    pub heartbeats: u64,
    pub acknacks: u64,
}

/// A reader with its topic's QoS and the shared-memory host ids it can be reached at.
type ShmReader<'a> = (Guid, &'a EndpointInfo, Vec<[u8; 16]>);

/// The capture time a window covers.
#[derive(Debug, Clone, Copy)]
struct WindowSpan {
    seconds: f64,
    /// The configured window.
    window_seconds: f64,
    /// The span starts at the first sample (seen less than a window ago), so that sample
    /// opens the span rather than filling a period of it.
    from_first_sample: bool,
}

impl WindowView {
    fn of(c: &Counts, span: WindowSpan) -> Self {
        let seconds = span.seconds;
        // n samples from the first one on span n - 1 periods.
        let counted = if span.from_first_sample {
            c.samples.saturating_sub(1)
        } else {
            c.samples
        };
        let share = if c.samples > 0 {
            counted as f64 / c.samples as f64
        } else {
            0.0
        };
        // Over at least a second (or the whole window, if shorter): a burst of a few
        // samples microseconds apart is a few samples per second, not 100 000/s.
        let min_s = (MIN_RATE_SPAN_NS as f64 / 1e9).min(span.window_seconds);
        let over = seconds.max(min_s);
        let per_s = |v: f64| {
            if over > 0.0 {
                v / over
            } else {
                0.0
            }
        };
        Self {
            seconds,
            samples: c.samples,
            bytes: c.bytes,
            rate_hz: per_s(counted as f64),
            bandwidth_bps: per_s(c.bytes.saturating_mul(8) as f64 * share),
            lost: c.lost,
            retransmitted: c.retransmitted,
            heartbeats: c.heartbeats,
            acknacks: c.acknacks,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct PcpCount {
    /// 802.1Q priority; `null` = untagged.
    pub pcp: Option<u8>,
    pub datagrams: u64,
}

fn pcp_list(p: &[u64; 9]) -> Vec<PcpCount> {
    p.iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| PcpCount {
            pcp: u8::try_from(i).ok().filter(|v| *v < 8),
            datagrams: *n,
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct WriterView {
    pub guid: String,
    pub participant: String,
    pub topic: Option<String>,
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    pub ros_topic: Option<String>,
    pub ros_type: Option<String>,
    pub builtin: bool,
    /// SEDP named it in this capture (`from_cache`: only the discovery cache did).
    pub discovered: bool,
    pub from_cache: bool,
    pub discovered_ns: Option<u64>,
    pub samples_before_discovery: u64,
    /// Its traffic never reaches the wire: every locator it announced is shared memory,
    /// or a matched reader on the same host (same shared-memory host id) takes its
    /// samples by shared memory and none of them was seen on the wire.
    pub shared_memory_only: bool,
    /// The same-host matched endpoints it talks to by shared memory, unseen.
    pub shared_memory_peers: Vec<String>,
    pub qos: Option<QosView>,
    pub locators: Vec<String>,
    pub src: Option<String>,
    pub first_seen_ns: u64,
    pub last_seen_ns: u64,
    pub gone: Option<Gone>,
    #[serde(flatten)]
    pub totals: Counts,
    pub size: SizeView,
    pub data_frags_per_sample: Option<f64>,
    pub ip_fragments_per_sample: Option<f64>,
    pub window: WindowView,
    /// Rate over the time it was active, inter-arrival period and jitter, deadline misses.
    pub timing: TimingView,
    pub highest_sn: Option<i64>,
    pub open_holes: u64,
    pub sn_jumps: u64,
    pub pcp: Vec<PcpCount>,
    pub vlan_id: Option<u16>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReaderView {
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
    pub qos: Option<QosView>,
    pub locators: Vec<String>,
    pub first_seen_ns: u64,
    pub last_seen_ns: u64,
    pub acknacks: u64,
    pub acknack_requested_sns: u64,
    pub nackfrags: u64,
    pub gone: Option<Gone>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QosMismatchView {
    pub writer: String,
    pub reader: String,
    #[serde(flatten)]
    pub mismatch: Mismatch,
}

#[derive(Debug, Clone, Serialize)]
pub struct TopicView {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    /// Other type names announced for the same topic.
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
    pub size: SizeView,
    /// Samples by size bucket (`state::size_bucket`: < 64 B, then powers of two).
    pub size_histogram: Vec<u64>,
    pub data_frags_per_sample: Option<f64>,
    pub ip_fragments_per_sample: Option<f64>,
    pub window: WindowView,
    pub timing: TimingView,
    pub pcp: Vec<PcpCount>,
    /// Writers and readers announced, matched, and not one sample on the wire: the topic's
    /// traffic goes by shared memory and is invisible here.
    pub shared_memory_only: bool,
    pub shared_memory_only_endpoints: u64,
    pub qos_mismatches: Vec<QosMismatchView>,
}

/// One packet source as the pipeline saw it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SourceHealth {
    pub name: String,
    /// Frames the capture thread read.
    pub frames: u64,
    /// Frames dropped because the queue to the state thread was full.
    pub queue_dropped: u64,
    /// libpcap kernel statistics (live captures).
    pub kernel: Option<KernelStats>,
    pub error: Option<String>,
    pub finished: bool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PipelineCounters {
    pub sources: Vec<SourceHealth>,
    /// Frames handed to the dissector.
    pub frames_processed: u64,
    pub queue_dropped: u64,
    /// `-w`: the recording's files and counters.
    pub recording: Option<crate::recording::RecordingHealth>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Health {
    pub dissector: DissectorStats,
    pub state: StateCounters,
    pub pipeline: PipelineCounters,
    pub participants: u64,
    pub writers: u64,
    pub readers: u64,
    pub writers_unattributed: u64,
    pub reconciles: bool,
    pub checks: Vec<Check>,
}

/// Whole-capture totals.
#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    pub summary: Summary,
    pub participants: Vec<ParticipantView>,
    pub writers: Vec<WriterView>,
    pub readers: Vec<ReaderView>,
    pub topics: Vec<TopicView>,
    /// DDS Security traffic (see [`super::secured`]).
    pub secured: SecuredView,
    pub health: Health,
}

/// Secured counters over the sliding window, with rates.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SecuredWindowView {
    pub seconds: f64,
    #[serde(flatten)]
    pub counts: SecuredCounts,
    pub messages_per_s: f64,
    pub sec_submessages_per_s: f64,
    pub bandwidth_bps: f64,
}

impl SecuredWindowView {
    fn of(c: SecuredCounts, span: WindowSpan) -> Self {
        let min_s = (MIN_RATE_SPAN_NS as f64 / 1e9).min(span.window_seconds);
        let over = span.seconds.max(min_s);
        let per_s = |v: f64| if over > 0.0 { v / over } else { 0.0 };
        Self {
            seconds: span.seconds,
            counts: c,
            messages_per_s: per_s(c.messages as f64),
            sec_submessages_per_s: per_s(c.sec_submessages as f64),
            bandwidth_bps: per_s(c.bytes.saturating_mul(8) as f64),
        }
    }
}

/// What one participant sent secured.
#[derive(Debug, Clone, Serialize)]
pub struct SecuredParticipantView {
    pub guid_prefix: String,
    pub entity_name: Option<String>,
    pub totals: SecuredCounts,
    pub window: SecuredWindowView,
    /// Endpoints whose traffic is protected: distinct SEC_PREFIX key ids (their topics,
    /// writers and readers are hidden when discovery is protected too).
    pub protected_endpoints: u64,
    /// Key ids beyond the kept maximum (so `protected_endpoints` is a lower bound).
    pub protected_endpoints_dropped: u64,
}

/// Secured traffic from one participant to one destination.
#[derive(Debug, Clone, Serialize)]
pub struct SecuredPairView {
    pub src: String,
    /// A GUID prefix, "multicast", or "host:ADDRESS" (no single participant known there).
    pub dst: String,
    pub src_name: Option<String>,
    pub dst_name: Option<String>,
    pub first_seen_ns: u64,
    pub last_seen_ns: u64,
    pub totals: SecuredCounts,
    pub window: SecuredWindowView,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SecuredView {
    pub totals: SecuredCounts,
    pub window: SecuredWindowView,
    /// Participants that sent secured traffic.
    pub participants: Vec<SecuredParticipantView>,
    pub pairs: Vec<SecuredPairView>,
    /// Endpoints behind protected traffic, summed over participants: shown instead of the
    /// topics a protected discovery hides.
    pub protected_endpoints: u64,
    pub pairs_evicted: u64,
}

/// Most writer×reader pairs checked for QoS per topic.
const MAX_QOS_PAIRS: usize = 4096;

fn size_view(c: &Counts, min: Option<u64>, max: u64) -> SizeView {
    SizeView {
        min,
        mean: (c.samples > 0).then(|| c.bytes as f64 / c.samples as f64),
        max: min.map(|_| max),
    }
}

fn per_sample(v: u64, samples: u64) -> Option<f64> {
    (samples > 0).then(|| v as f64 / samples as f64)
}

fn locators(info: &EndpointInfo) -> Vec<String> {
    info.unicast_locators
        .iter()
        .chain(&info.multicast_locators)
        .map(|l| l.to_string())
        .collect()
}

struct TopicAgg {
    type_name: String,
    other_types: Vec<String>,
    builtin: bool,
    writers: Vec<(Guid, Option<Arc<EndpointInfo>>)>,
    readers: Vec<(Guid, Option<Arc<EndpointInfo>>)>,
    totals: Counts,
    window: Counts,
    first_seen_ns: u64,
    size_min: Option<u64>,
    size_max: u64,
    size_hist: [u64; SIZE_BUCKETS],
    pcp: [u64; 9],
    shm: u64,
    shm_writers: u64,
    timing: TimingAgg,
}

impl TopicAgg {
    fn new(type_name: &str, builtin: bool) -> Self {
        Self {
            type_name: type_name.to_string(),
            other_types: Vec::new(),
            builtin,
            writers: Vec::new(),
            readers: Vec::new(),
            totals: Counts::default(),
            window: Counts::default(),
            first_seen_ns: u64::MAX,
            size_min: None,
            size_max: 0,
            size_hist: [0; SIZE_BUCKETS],
            pcp: [0; 9],
            shm: 0,
            shm_writers: 0,
            timing: TimingAgg::default(),
        }
    }
    fn note_type(&mut self, t: &str) {
        if self.type_name.is_empty() {
            self.type_name = t.to_string();
        } else if self.type_name != t
            && !t.is_empty()
            && !self.other_types.iter().any(|o| o == t)
            && self.other_types.len() < 8
        {
            self.other_types.push(t.to_string());
        }
    }
}

impl State {
    /// Capture time the sliding window actually covers for something first seen at
    /// `first_seen_ns`: from the window's oldest bucket (or that first sight, if later)
    /// to now. The oldest bucket starts on a bucket boundary, so a full window is
    /// somewhat shorter than the configured one.
    fn window_span(&self, first_seen_ns: u64) -> WindowSpan {
        let window_start = Windowed::window_start_ns(self.config.window_ns, self.now_ns);
        let start = window_start.max(first_seen_ns);
        WindowSpan {
            seconds: self.now_ns.saturating_sub(start).max(1) as f64 / 1e9,
            window_seconds: self.config.window_ns as f64 / 1e9,
            from_first_sample: first_seen_ns > window_start,
        }
    }

    /// Shared-memory host ids an endpoint can be reached at: the addresses of its own
    /// shared-memory locators, else of its participant's default ones.
    fn shm_hosts(&self, info: &EndpointInfo) -> Vec<[u8; 16]> {
        let own: Vec<[u8; 16]> = info
            .unicast_locators
            .iter()
            .chain(&info.multicast_locators)
            .filter(|l| l.is_shared_memory())
            .map(|l| l.address)
            .collect();
        if !own.is_empty() {
            return own;
        }
        self.participants
            .get(&info.guid.prefix)
            .and_then(|p| p.info.as_deref())
            .map(|p| {
                p.default_unicast
                    .iter()
                    .chain(&p.default_multicast)
                    .filter(|l| l.is_shared_memory())
                    .map(|l| l.address)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Writer–reader pairs that share a host (a shared-memory host id in common), match
    /// (same topic, compatible QoS), and whose writer has no sample on the wire: their
    /// traffic goes by shared memory. Endpoint → its peers.
    fn shared_memory_pairs(&self) -> HashMap<Guid, Vec<Guid>> {
        let mut readers: HashMap<&str, Vec<ShmReader<'_>>> = HashMap::new();
        for r in self.readers.values() {
            if let Some(info) = r.info.as_deref() {
                let hosts = self.shm_hosts(info);
                if !hosts.is_empty() {
                    readers
                        .entry(info.topic.as_str())
                        .or_default()
                        .push((r.guid, info, hosts));
                }
            }
        }
        let mut pairs: HashMap<Guid, Vec<Guid>> = HashMap::new();
        let mut checked = 0usize;
        for w in self.writers.values() {
            let Some(info) = w.info.as_deref() else {
                continue;
            };
            if w.stats.total.samples > 0 {
                continue;
            }
            let Some(candidates) = readers.get(info.topic.as_str()) else {
                continue;
            };
            let hosts = self.shm_hosts(info);
            for (rg, ri, rhosts) in candidates {
                checked = checked.saturating_add(1);
                if checked > MAX_QOS_PAIRS {
                    return pairs;
                }
                let same_host = hosts.iter().any(|h| rhosts.contains(h));
                if same_host && mismatches(&info.qos, &ri.qos).is_empty() {
                    pairs.entry(w.guid).or_default().push(*rg);
                    pairs.entry(*rg).or_default().push(w.guid);
                }
            }
        }
        pairs
    }

    fn writer_topic(w: &Writer) -> (Option<String>, Option<String>, bool) {
        if let Some(name) = builtin_topic(&w.guid) {
            return (Some(name.to_string()), None, true);
        }
        match &w.info {
            Some(i) => (Some(i.topic.clone()), Some(i.type_name.clone()), false),
            None => (None, None, false),
        }
    }

    /// Build an immutable view. `dissector` and `pipeline` are the counters of the
    /// stages before the state, so the snapshot can say whether everything reconciles.
    pub fn snapshot(&self, dissector: &DissectorStats, pipeline: &PipelineCounters) -> Snapshot {
        let now = self.now_ns;
        let mut topics: BTreeMap<String, TopicAgg> = BTreeMap::new();
        let mut writers = Vec::with_capacity(self.writers.len());
        let mut unattributed = 0u64;
        let shm_pairs = self.shared_memory_pairs();
        let peers_of = |g: &Guid| -> Vec<String> {
            shm_pairs
                .get(g)
                .map(|v| v.iter().map(|p| p.to_string()).collect())
                .unwrap_or_default()
        };
        // In GUID order, not the map's (seeded per process): the topics' floating-point
        // sums (rates) and first-noted types then come out the same on every run.
        let mut by_guid: Vec<&Writer> = self.writers.values().collect();
        by_guid.sort_unstable_by_key(|w| w.guid);
        for w in by_guid {
            let (topic, type_name, builtin) = Self::writer_topic(w);
            let t = &w.stats.total;
            let win = w.stats.window(now);
            let shm = w.info.as_ref().is_some_and(|i| i.shared_memory_only())
                || shm_pairs.contains_key(&w.guid);
            let deadline = w.info.as_deref().and_then(deadline_ns);
            // The window starts at the writer's first sample, not at its discovery.
            let active_from = w.timing.first_ns().unwrap_or(w.first_seen_ns);
            if topic.is_none() {
                unattributed = unattributed.saturating_add(1);
            }
            if let Some(name) = &topic {
                let agg = topics
                    .entry(name.clone())
                    .or_insert_with(|| TopicAgg::new("", builtin));
                agg.note_type(type_name.as_deref().unwrap_or(""));
                agg.writers.push((w.guid, w.info.clone()));
                agg.totals.add(t);
                agg.window.add(&win);
                agg.first_seen_ns = agg.first_seen_ns.min(active_from);
                agg.timing.add(&w.timing, deadline);
                if let Some(m) = w.size_min {
                    agg.size_min = Some(agg.size_min.map_or(m, |a| a.min(m)));
                }
                agg.size_max = agg.size_max.max(w.size_max);
                for (a, b) in agg.size_hist.iter_mut().zip(w.size_hist.iter()) {
                    *a = a.saturating_add(*b);
                }
                for (a, b) in agg.pcp.iter_mut().zip(w.pcp.iter()) {
                    *a = a.saturating_add(*b);
                }
                if shm {
                    agg.shm = agg.shm.saturating_add(1);
                    agg.shm_writers = agg.shm_writers.saturating_add(1);
                }
            }
            writers.push(WriterView {
                guid: w.guid.to_string(),
                participant: w.guid.prefix.to_string(),
                ros_topic: topic.as_deref().and_then(demangle_topic).map(|(n, _)| n),
                ros_type: type_name.as_deref().and_then(demangle_type),
                topic,
                type_name,
                builtin,
                discovered: w.discovered_ns.is_some(),
                from_cache: w.from_cache,
                discovered_ns: w.discovered_ns,
                samples_before_discovery: if w.discovered_ns.is_some() {
                    w.samples_before_discovery
                } else {
                    t.samples
                },
                shared_memory_only: shm,
                shared_memory_peers: peers_of(&w.guid),
                qos: w.info.as_ref().map(|i| QosView::of(&i.qos)),
                locators: w.info.as_deref().map(locators).unwrap_or_default(),
                src: w.last_src.map(|s| s.to_string()),
                first_seen_ns: w.first_seen_ns,
                last_seen_ns: w.last_seen_ns,
                gone: w.gone,
                totals: *t,
                size: size_view(t, w.size_min, w.size_max),
                data_frags_per_sample: per_sample(t.data_frag_submessages, t.samples),
                ip_fragments_per_sample: per_sample(t.ip_fragments, t.samples),
                window: WindowView::of(&win, self.window_span(active_from)),
                timing: TimingView::of(&w.timing, deadline),
                highest_sn: w.seq.highest_seen,
                open_holes: w.seq.open_holes(),
                sn_jumps: w.sn_jumps,
                pcp: pcp_list(&w.pcp),
                vlan_id: w.vlan_id,
            });
        }
        writers.sort_by(|a, b| (&a.topic, &a.guid).cmp(&(&b.topic, &b.guid)));

        let mut readers = Vec::with_capacity(self.readers.len());
        for r in self.readers.values() {
            let topic = r.info.as_ref().map(|i| i.topic.clone());
            let shm = r.info.as_ref().is_some_and(|i| i.shared_memory_only())
                || shm_pairs.contains_key(&r.guid);
            if let (Some(name), Some(info)) = (&topic, &r.info) {
                let agg = topics
                    .entry(name.clone())
                    .or_insert_with(|| TopicAgg::new("", false));
                agg.note_type(&info.type_name);
                agg.readers.push((r.guid, r.info.clone()));
                if shm {
                    agg.shm = agg.shm.saturating_add(1);
                }
            }
            readers.push(ReaderView {
                guid: r.guid.to_string(),
                participant: r.guid.prefix.to_string(),
                ros_topic: topic.as_deref().and_then(demangle_topic).map(|(n, _)| n),
                topic,
                type_name: r.info.as_ref().map(|i| i.type_name.clone()),
                discovered: r.discovered_ns.is_some(),
                from_cache: r.from_cache,
                shared_memory_only: shm,
                shared_memory_peers: peers_of(&r.guid),
                qos: r.info.as_ref().map(|i| QosView::of(&i.qos)),
                locators: r.info.as_deref().map(locators).unwrap_or_default(),
                first_seen_ns: r.first_seen_ns,
                last_seen_ns: r.last_seen_ns,
                acknacks: r.acknacks,
                acknack_requested_sns: r.acknack_requested_sns,
                nackfrags: r.nackfrags,
                gone: r.gone,
            });
        }
        readers.sort_by(|a, b| (&a.topic, &a.guid).cmp(&(&b.topic, &b.guid)));

        let mut topic_views = Vec::with_capacity(topics.len());
        let mut user_samples = 0u64;
        let mut user_bytes = 0u64;
        for (name, agg) in topics {
            let mut qos_mismatches = Vec::new();
            let mut pairs = 0usize;
            'outer: for (wg, wi) in &agg.writers {
                let Some(wi) = wi else { continue };
                for (rg, ri) in &agg.readers {
                    let Some(ri) = ri else { continue };
                    pairs = pairs.saturating_add(1);
                    if pairs > MAX_QOS_PAIRS {
                        break 'outer;
                    }
                    for m in mismatches(&wi.qos, &ri.qos) {
                        qos_mismatches.push(QosMismatchView {
                            writer: wg.to_string(),
                            reader: rg.to_string(),
                            mismatch: m,
                        });
                    }
                }
            }
            if !agg.builtin {
                user_samples = user_samples.saturating_add(agg.totals.samples);
                user_bytes = user_bytes.saturating_add(agg.totals.bytes);
            }
            let ros = demangle_topic(&name);
            let first = if agg.first_seen_ns == u64::MAX {
                now
            } else {
                agg.first_seen_ns
            };
            let mut writer_guids: Vec<String> =
                agg.writers.iter().map(|(g, _)| g.to_string()).collect();
            writer_guids.sort();
            let mut reader_guids: Vec<String> =
                agg.readers.iter().map(|(g, _)| g.to_string()).collect();
            reader_guids.sort();
            topic_views.push(TopicView {
                ros_type: demangle_type(&agg.type_name),
                ros_name: ros.as_ref().map(|(n, _)| n.clone()),
                ros_kind: ros.map(|(_, k)| k),
                name,
                type_name: agg.type_name,
                other_types: agg.other_types,
                builtin: agg.builtin,
                writers: agg.writers.len() as u64,
                readers: agg.readers.len() as u64,
                writer_guids,
                reader_guids,
                totals: agg.totals,
                size: size_view(&agg.totals, agg.size_min, agg.size_max),
                size_histogram: agg.size_hist.to_vec(),
                data_frags_per_sample: per_sample(
                    agg.totals.data_frag_submessages,
                    agg.totals.samples,
                ),
                ip_fragments_per_sample: per_sample(agg.totals.ip_fragments, agg.totals.samples),
                window: WindowView::of(&agg.window, self.window_span(first)),
                timing: agg.timing.view(),
                pcp: pcp_list(&agg.pcp),
                shared_memory_only: agg.shm_writers > 0 && agg.totals.samples == 0,
                shared_memory_only_endpoints: agg.shm,
                qos_mismatches,
            });
        }

        let mut participants: Vec<ParticipantView> = self
            .participants
            .values()
            .map(|p| {
                let info = p.info.as_deref();
                let vendor = info.and_then(|i| i.vendor).or(p.vendor);
                ParticipantView {
                    guid_prefix: p.prefix.to_string(),
                    vendor: vendor.map(|v| v.to_string()),
                    vendor_name: vendor.map(|v| v.name()),
                    version: p.version.map(|(a, b)| format!("{a}.{b}")),
                    entity_name: info.and_then(|i| i.entity_name.clone()),
                    domain_id: info.and_then(|i| i.domain_id),
                    domain_id_source: info.and_then(|i| i.domain_id_source).map(|d| d.name()),
                    lease_ns: info.and_then(|i| i.lease_ns),
                    addresses: p.addresses.iter().map(|a| a.to_string()).collect(),
                    locators: info
                        .map(|i| {
                            i.default_unicast
                                .iter()
                                .chain(&i.default_multicast)
                                .map(|l| l.to_string())
                                .collect()
                        })
                        .unwrap_or_default(),
                    shared_memory_only: info.is_some_and(|i| i.shared_memory_only()),
                    discovered: p.last_spdp_ns.is_some(),
                    from_cache: p.from_cache,
                    first_seen_ns: p.first_seen_ns,
                    last_seen_ns: p.last_seen_ns,
                    datagrams: p.datagrams,
                    bytes: p.bytes,
                    gone: p.gone,
                }
            })
            .collect();
        participants.sort_by(|a, b| a.guid_prefix.cmp(&b.guid_prefix));

        let health = self.health(dissector, pipeline, unattributed);
        let secured = self.secured_view();
        let totals = self.totals();
        let first = self.first_ts_ns;
        Snapshot {
            summary: Summary {
                first_ts_ns: first,
                capture_time_ns: now,
                duration_s: first.map_or(0.0, |f| now.saturating_sub(f) as f64 / 1e9),
                window_s: self.config.window_ns as f64 / 1e9,
                totals,
                user_samples,
                user_bytes,
            },
            participants,
            writers,
            readers,
            topics: topic_views,
            secured,
            health,
        }
    }

    fn secured_view(&self) -> SecuredView {
        let now = self.now_ns;
        let name = |prefix: &GuidPrefix| {
            self.participants
                .get(prefix)
                .and_then(|p| p.info.as_ref())
                .and_then(|i| i.entity_name.clone())
        };
        let mut participants: Vec<SecuredParticipantView> = self
            .participants
            .values()
            .filter_map(|p| {
                let of = p.secured.as_deref()?;
                Some(SecuredParticipantView {
                    guid_prefix: p.prefix.to_string(),
                    entity_name: name(&p.prefix),
                    totals: of.stats.total,
                    window: SecuredWindowView::of(
                        of.stats.window(now),
                        self.window_span(p.first_seen_ns),
                    ),
                    protected_endpoints: of.key_ids.len() as u64,
                    protected_endpoints_dropped: of.key_ids_dropped,
                })
            })
            .collect();
        participants.sort_by(|a, b| a.guid_prefix.cmp(&b.guid_prefix));
        let mut pairs: Vec<(&GuidPrefix, &Peer, SecuredPairView)> = self
            .secured
            .pairs
            .values()
            .map(|pair| {
                let dst_name = match &pair.dst {
                    Peer::Participant(p) => name(p),
                    _ => None,
                };
                let view = SecuredPairView {
                    src: pair.src.to_string(),
                    dst: pair.dst.to_string(),
                    src_name: name(&pair.src),
                    dst_name,
                    first_seen_ns: pair.first_seen_ns,
                    last_seen_ns: pair.last_seen_ns,
                    totals: pair.stats.total,
                    window: SecuredWindowView::of(
                        pair.stats.window(now),
                        self.window_span(pair.first_seen_ns),
                    ),
                };
                (&pair.src, &pair.dst, view)
            })
            .collect();
        pairs.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let first = self.first_ts_ns.unwrap_or(now);
        SecuredView {
            totals: self.secured.total.total,
            window: SecuredWindowView::of(self.secured.total.window(now), self.window_span(first)),
            protected_endpoints: participants
                .iter()
                .map(|p| p.protected_endpoints)
                .fold(0, u64::saturating_add),
            participants,
            pairs: pairs.into_iter().map(|(_, _, v)| v).collect(),
            pairs_evicted: self
                .counters
                .secured_pairs_evicted_capacity
                .saturating_add(self.counters.secured_pairs_evicted_idle),
        }
    }

    fn health(
        &self,
        dissector: &DissectorStats,
        pipeline: &PipelineCounters,
        unattributed: u64,
    ) -> Health {
        let c = &self.counters;
        let mut checks = Vec::new();
        checks.push(Check {
            name: "frames",
            ok: dissector.reconciles(),
            detail: format!(
                "{} frames = {} RTPS + {} held IP fragments + {} dropped fragments + {} not IP + {} not UDP + {} not RTPS + {} ICMP-quoted RTPS + {} RTI pings + {} malformed",
                dissector.frames,
                dissector.rtps_frames,
                dissector.fragments_held,
                dissector.fragments_dropped,
                dissector.skipped_not_ip,
                dissector.skipped_not_udp,
                dissector.skipped_not_rtps,
                dissector.skipped_icmp_quoted_rtps,
                dissector.rti_pings,
                dissector.malformed
            ) + &if dissector.tcp.frames_held > 0 {
                format!(" + {} TCP segments held", dissector.tcp.frames_held)
            } else {
                String::new()
            },
        });
        checks.push(Check {
            name: "datagrams",
            ok: dissector.rtps_datagrams == c.datagrams,
            detail: format!(
                "dissector {} RTPS datagrams, state {}",
                dissector.rtps_datagrams, c.datagrams
            ),
        });
        checks.push(Check {
            name: "submessages",
            ok: dissector.submessages == c.submessages,
            detail: format!(
                "dissector {} decoded submessages (+{} undecodable), state {}",
                dissector.submessages, dissector.submessage_errors, c.submessages
            ),
        });
        checks.push(Check {
            name: "data_submessages",
            ok: c.reconciles(),
            detail: format!(
                "{} DATA/DATA_FRAG = {} new samples + {} more fragments + {} repeats + {} invalid SN",
                c.data_submessages, c.new_samples, c.more_fragments, c.repeat_submessages, c.invalid_sn
            ),
        });
        let total_samples = self.total_samples();
        checks.push(Check {
            name: "samples",
            ok: total_samples == c.new_samples,
            detail: format!(
                "{} samples over writers (incl. {} of evicted writers) = {} new samples",
                total_samples, c.samples_of_evicted_writers, c.new_samples
            ),
        });
        let in_flight_ok = pipeline.sources.iter().all(|s| s.finished)
            && pipeline
                .sources
                .iter()
                .map(|s| s.frames)
                .fold(0u64, u64::saturating_add)
                == pipeline
                    .frames_processed
                    .saturating_add(pipeline.queue_dropped);
        let finished = !pipeline.sources.is_empty() && pipeline.sources.iter().all(|s| s.finished);
        if finished {
            checks.push(Check {
                name: "pipeline",
                ok: in_flight_ok && pipeline.frames_processed == dissector.frames,
                detail: format!(
                    "{} frames captured = {} processed + {} dropped on a full queue; dissector saw {}",
                    pipeline
                        .sources
                        .iter()
                        .map(|s| s.frames)
                        .fold(0u64, u64::saturating_add),
                    pipeline.frames_processed,
                    pipeline.queue_dropped,
                    dissector.frames
                ),
            });
        }
        if let (true, Some(r)) = (finished, &pipeline.recording) {
            let captured = pipeline
                .sources
                .iter()
                .map(|s| s.frames)
                .fold(0u64, u64::saturating_add);
            checks.push(Check {
                name: "recording",
                ok: captured == r.frames_written.saturating_add(r.not_written()),
                detail: format!(
                    "{} frames captured = {} written to {} + {} dropped on a full queue + {} not written otherwise",
                    captured, r.frames_written, r.path, r.queue_dropped, r.not_written_other
                ),
            });
        }
        Health {
            dissector: *dissector,
            state: *c,
            pipeline: pipeline.clone(),
            participants: self.participants.len() as u64,
            writers: self.writers.len() as u64,
            readers: self.readers.len() as u64,
            writers_unattributed: unattributed,
            reconciles: checks.iter().all(|k| k.ok),
            checks,
        }
    }
}
