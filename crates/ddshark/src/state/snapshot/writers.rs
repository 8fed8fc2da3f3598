//! The writers' view.

use super::super::rate::RateView;
use super::super::ros::{demangle_topic, demangle_type};
use super::super::timing::TimingView;
use super::super::window::Counts;
use super::super::{builtin_topic, deadline_ns, Gone, State, Writer};
use super::shm::{on_shared_memory, peers_of, ShmPairs};
use super::{locators, pcp_list, per_sample, size_view, PcpCount, QosView, SizeView, WindowView};

#[derive(Debug, Clone)]
pub struct WriterView {
    pub guid: String,
    pub(crate) participant: String,
    pub topic: Option<String>,
    pub(crate) type_name: Option<String>,
    pub(crate) ros_topic: Option<String>,
    pub(crate) ros_type: Option<String>,
    pub builtin: bool,
    /// SEDP named it in this capture (`from_cache`: only the discovery cache did).
    pub(crate) discovered: bool,
    pub from_cache: bool,
    pub(crate) discovered_ns: Option<u64>,
    pub(crate) samples_before_discovery: u64,
    /// Its traffic never reaches the wire: every locator it announced is shared memory,
    /// or a matched reader on the same host (same shared-memory host id) takes its
    /// samples by shared memory and none of them was seen on the wire.
    pub shared_memory_only: bool,
    /// The same-host matched endpoints it talks to by shared memory, unseen.
    pub shared_memory_peers: Vec<String>,
    pub(crate) qos: Option<QosView>,
    pub locators: Vec<String>,
    pub(crate) src: Option<String>,
    pub(crate) first_seen_ns: u64,
    pub(crate) last_seen_ns: u64,
    pub(crate) gone: Option<Gone>,
    pub totals: Counts,
    pub(crate) size: SizeView,
    pub(crate) data_frags_per_sample: Option<f64>,
    pub(crate) ip_fragments_per_sample: Option<f64>,
    /// Rate and bandwidth, as every output shows them (`state::rate`).
    pub rate: RateView,
    pub window: WindowView,
    /// Time it was active, inter-arrival period and jitter, deadline misses.
    pub timing: TimingView,
    pub(crate) highest_sn: Option<i64>,
    pub(crate) open_holes: u64,
    pub(crate) sn_jumps: u64,
    pub(crate) pcp: Vec<PcpCount>,
    pub(crate) vlan_id: Option<u16>,
}

/// A writer's topic and type (`None`: not discovered), and whether it is built in.
pub(super) fn writer_topic(w: &Writer) -> (Option<String>, Option<String>, bool) {
    if let Some(name) = builtin_topic(&w.endpoint.guid) {
        return (Some(name.to_string()), None, true);
    }
    match &w.endpoint.info {
        Some(i) => (Some(i.topic.clone()), Some(i.type_name.clone()), false),
        None => (None, None, false),
    }
}

/// Where its sliding window starts: its first sample, not its discovery.
pub(super) fn active_from(w: &Writer) -> u64 {
    w.timing.first_ns().unwrap_or(w.endpoint.first_seen_ns)
}

/// What both the writers' and the topics' views take of a writer.
pub(super) struct WriterFacts {
    pub(super) topic: Option<String>,
    pub(super) type_name: Option<String>,
    pub(super) builtin: bool,
    pub(super) window: Counts,
    pub(super) rate: RateView,
    pub(super) shared_memory: bool,
    pub(super) deadline: Option<u64>,
    pub(super) active_from: u64,
}

impl State {
    /// The writers in GUID order, each with what the views take of it.
    pub(super) fn writers_with_facts<'a>(
        &'a self,
        shm_pairs: &'a ShmPairs,
    ) -> impl Iterator<Item = (&'a Writer, WriterFacts)> + 'a {
        self.writers_by_guid()
            .into_iter()
            .map(move |w| (w, self.writer_facts(w, shm_pairs)))
    }

    fn writer_facts(&self, w: &Writer, shm_pairs: &ShmPairs) -> WriterFacts {
        let (topic, type_name, builtin) = writer_topic(w);
        let window = w.stats.window(self.now_ns);
        WriterFacts {
            topic,
            type_name,
            builtin,
            rate: RateView::of_writer(
                &window,
                &w.timing,
                self.window_start_ns(),
                self.config.window_ns,
            ),
            window,
            shared_memory: on_shared_memory(
                w.endpoint.info.as_deref(),
                &w.endpoint.guid,
                shm_pairs,
            ),
            deadline: w.endpoint.info.as_deref().and_then(deadline_ns),
            active_from: active_from(w),
        }
    }

    /// The writers in GUID order, not the map's (seeded per process): the topics'
    /// floating-point sums (rates) and first-noted types then come out the same on
    /// every run.
    pub(super) fn writers_by_guid(&self) -> Vec<&Writer> {
        let mut by_guid: Vec<&Writer> = self.writers.values().collect();
        by_guid.sort_unstable_by_key(|w| w.endpoint.guid);
        by_guid
    }

    /// Every writer, by topic then GUID.
    pub(super) fn writer_views(&self, shm_pairs: &ShmPairs) -> Vec<WriterView> {
        let mut writers = Vec::with_capacity(self.writers.len());
        for (w, f) in self.writers_with_facts(shm_pairs) {
            let t = &w.stats.total;
            writers.push(WriterView {
                guid: w.endpoint.guid.to_string(),
                participant: w.endpoint.guid.prefix.to_string(),
                ros_topic: f.topic.as_deref().and_then(demangle_topic).map(|(n, _)| n),
                ros_type: f.type_name.as_deref().and_then(demangle_type),
                topic: f.topic,
                type_name: f.type_name,
                builtin: f.builtin,
                discovered: w.endpoint.discovered_ns.is_some(),
                from_cache: w.endpoint.from_cache,
                discovered_ns: w.endpoint.discovered_ns,
                samples_before_discovery: if w.endpoint.discovered_ns.is_some() {
                    w.samples_before_discovery
                } else {
                    t.samples
                },
                shared_memory_only: f.shared_memory,
                shared_memory_peers: peers_of(shm_pairs, &w.endpoint.guid),
                qos: w.endpoint.info.as_ref().map(|i| QosView::of(&i.qos)),
                locators: w.endpoint.info.as_deref().map(locators).unwrap_or_default(),
                src: w.last_src.map(|s| s.to_string()),
                first_seen_ns: w.endpoint.first_seen_ns,
                last_seen_ns: w.endpoint.last_seen_ns,
                gone: w.endpoint.gone,
                totals: *t,
                size: size_view(t, w.size_min, w.size_max),
                data_frags_per_sample: per_sample(t.data_frag_submessages, t.samples),
                ip_fragments_per_sample: per_sample(t.ip_fragments, t.samples),
                rate: f.rate,
                window: WindowView::of(&f.window, self.window_seconds(f.active_from)),
                timing: TimingView::of(&w.timing, f.deadline),
                highest_sn: w.seq.highest_seen,
                open_holes: w.seq.open_holes(),
                sn_jumps: w.sn_jumps,
                pcp: pcp_list(&w.pcp),
                vlan_id: w.vlan_id,
            });
        }
        writers.sort_by(|a, b| (&a.topic, &a.guid).cmp(&(&b.topic, &b.guid)));
        writers
    }
}
