//! The topics' view: each topic aggregates its writers (samples, sizes, rates, timing)
//! and readers (QoS mismatches).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::super::qos::{mismatches, Mismatch};
use super::super::rate::RateView;
use super::super::ros::{demangle_topic, demangle_type, RosKind};
use super::super::timing::{TimingAgg, TimingView};
use super::super::window::Counts;
use super::super::{State, SIZE_BUCKETS};
use super::shm::{on_shared_memory, ShmPairs};
use super::{pcp_list, per_sample, size_view, PcpCount, SizeView, WindowView, MAX_QOS_PAIRS};
use rtps_dissect::{EndpointInfo, Guid};

#[derive(Debug, Clone)]
pub struct QosMismatchView {
    pub(crate) writer: String,
    pub(crate) reader: String,
    pub(crate) mismatch: Mismatch,
}

#[derive(Debug, Clone)]
pub struct TopicView {
    pub name: String,
    pub type_name: String,
    /// Other type names announced for the same topic.
    pub(crate) other_types: Vec<String>,
    pub(crate) ros_name: Option<String>,
    pub(crate) ros_type: Option<String>,
    pub(crate) ros_kind: Option<RosKind>,
    pub builtin: bool,
    pub writers: u64,
    pub readers: u64,
    pub(crate) writer_guids: Vec<String>,
    pub reader_guids: Vec<String>,
    pub totals: Counts,
    pub size: SizeView,
    /// Samples by size bucket (`state::size_bucket`: < 64 B, then powers of two).
    pub(crate) size_histogram: Vec<u64>,
    pub data_frags_per_sample: Option<f64>,
    pub ip_fragments_per_sample: Option<f64>,
    /// Rate and bandwidth: the sum of its writers' (`state::rate`).
    pub rate: RateView,
    pub window: WindowView,
    pub timing: TimingView,
    pub pcp: Vec<PcpCount>,
    /// Writers and readers announced, matched, and not one sample on the wire: the topic's
    /// traffic goes by shared memory and is invisible here.
    pub shared_memory_only: bool,
    pub(crate) shared_memory_only_endpoints: u64,
    pub(crate) qos_mismatches: Vec<QosMismatchView>,
}

struct TopicAgg {
    type_name: String,
    other_types: Vec<String>,
    builtin: bool,
    writers: Vec<(Guid, Option<Arc<EndpointInfo>>)>,
    readers: Vec<(Guid, Option<Arc<EndpointInfo>>)>,
    totals: Counts,
    window: Counts,
    rate: RateView,
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
            rate: RateView::default(),
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
    /// Every topic a writer or reader names, by name.
    pub(super) fn topic_views(&self, shm_pairs: &ShmPairs) -> Vec<TopicView> {
        let mut topics: BTreeMap<String, TopicAgg> = BTreeMap::new();
        for (w, f) in self.writers_with_facts(shm_pairs) {
            let t = &w.stats.total;
            if let Some(name) = &f.topic {
                let agg = topics
                    .entry(name.clone())
                    .or_insert_with(|| TopicAgg::new("", f.builtin));
                agg.note_type(f.type_name.as_deref().unwrap_or(""));
                agg.writers.push((w.endpoint.guid, w.endpoint.info.clone()));
                agg.totals.add(t);
                agg.window.add(&f.window);
                agg.rate.add(&f.rate);
                if let Some(first) = w.timing.first_ns() {
                    // Its first sample: a writer without one (discovered only) does not
                    // stretch the window's span back before the topic's traffic began.
                    agg.first_seen_ns = agg.first_seen_ns.min(first);
                }
                agg.timing.add(&w.timing, f.deadline);
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
                if f.shared_memory {
                    agg.shm = agg.shm.saturating_add(1);
                    agg.shm_writers = agg.shm_writers.saturating_add(1);
                }
            }
        }
        for r in self.readers.values() {
            let topic = r.endpoint.info.as_ref().map(|i| i.topic.clone());
            let shm = on_shared_memory(r.endpoint.info.as_deref(), &r.endpoint.guid, shm_pairs);
            if let (Some(name), Some(info)) = (&topic, &r.endpoint.info) {
                let agg = topics
                    .entry(name.clone())
                    .or_insert_with(|| TopicAgg::new("", false));
                agg.note_type(&info.type_name);
                agg.readers.push((r.endpoint.guid, r.endpoint.info.clone()));
                if shm {
                    agg.shm = agg.shm.saturating_add(1);
                }
            }
        }
        let mut topic_views = Vec::with_capacity(topics.len());
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
            let ros = demangle_topic(&name);
            // No sample yet: the window holds none, over no time.
            let window_seconds = if agg.first_seen_ns == u64::MAX {
                0.0
            } else {
                self.window_seconds(agg.first_seen_ns)
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
                rate: agg.rate,
                window: WindowView::of(&agg.window, window_seconds),
                timing: agg.timing.view(),
                pcp: pcp_list(&agg.pcp),
                shared_memory_only: agg.shm_writers > 0 && agg.totals.samples == 0,
                shared_memory_only_endpoints: agg.shm,
                qos_mismatches,
            });
        }

        topic_views
    }
}
