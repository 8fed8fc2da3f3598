//! The readers' view.

use super::super::ros::demangle_topic;
use super::super::{Gone, State};
use super::shm::{on_shared_memory, peers_of, ShmPairs};
use super::{locators, QosView};

#[derive(Debug, Clone)]
pub struct ReaderView {
    pub(crate) guid: String,
    pub(crate) participant: String,
    pub(crate) topic: Option<String>,
    pub(crate) type_name: Option<String>,
    pub(crate) ros_topic: Option<String>,
    pub(crate) discovered: bool,
    pub(crate) from_cache: bool,
    pub(crate) shared_memory_only: bool,
    pub(crate) shared_memory_peers: Vec<String>,
    pub(crate) qos: Option<QosView>,
    pub(crate) locators: Vec<String>,
    pub(crate) first_seen_ns: u64,
    pub(crate) last_seen_ns: u64,
    pub(crate) acknacks: u64,
    pub(crate) acknack_requested_sns: u64,
    pub(crate) nackfrags: u64,
    pub(crate) gone: Option<Gone>,
}

impl State {
    /// Every reader, by topic then GUID.
    pub(super) fn reader_views(&self, shm_pairs: &ShmPairs) -> Vec<ReaderView> {
        let mut readers = Vec::with_capacity(self.readers.len());
        for r in self.readers.values() {
            let topic = r.endpoint.info.as_ref().map(|i| i.topic.clone());
            let shm = on_shared_memory(r.endpoint.info.as_deref(), &r.endpoint.guid, shm_pairs);
            readers.push(ReaderView {
                guid: r.endpoint.guid.to_string(),
                participant: r.endpoint.guid.prefix.to_string(),
                ros_topic: topic.as_deref().and_then(demangle_topic).map(|(n, _)| n),
                topic,
                type_name: r.endpoint.info.as_ref().map(|i| i.type_name.clone()),
                discovered: r.endpoint.discovered_ns.is_some(),
                from_cache: r.endpoint.from_cache,
                shared_memory_only: shm,
                shared_memory_peers: peers_of(shm_pairs, &r.endpoint.guid),
                qos: r.endpoint.info.as_ref().map(|i| QosView::of(&i.qos)),
                locators: r.endpoint.info.as_deref().map(locators).unwrap_or_default(),
                first_seen_ns: r.endpoint.first_seen_ns,
                last_seen_ns: r.endpoint.last_seen_ns,
                acknacks: r.acknacks,
                acknack_requested_sns: r.acknack_requested_sns,
                nackfrags: r.nackfrags,
                gone: r.endpoint.gone,
            });
        }
        readers.sort_by(|a, b| (&a.topic, &a.guid).cmp(&(&b.topic, &b.guid)));
        readers
    }
}
