//! Which endpoints talk by shared memory (invisible on the wire).

use std::collections::HashMap;

use rtps_dissect::{EndpointInfo, Guid};

use super::super::qos::mismatches;
use super::super::State;
use super::MAX_QOS_PAIRS;

/// Endpoint → the same-host matched peers it talks to by shared memory.
pub(super) type ShmPairs = HashMap<Guid, Vec<Guid>>;

/// A reader with its topic's QoS and the shared-memory host ids it can be reached at.
type ShmReader<'a> = (Guid, &'a EndpointInfo, Vec<[u8; 16]>);

/// Its traffic never reaches the wire: it announced only shared-memory locators, or a
/// matched same-host peer takes its samples by shared memory.
pub(super) fn on_shared_memory(info: Option<&EndpointInfo>, guid: &Guid, pairs: &ShmPairs) -> bool {
    info.is_some_and(|i| i.shared_memory_only()) || pairs.contains_key(guid)
}

/// The peers of `g` as text.
pub(super) fn peers_of(pairs: &ShmPairs, g: &Guid) -> Vec<String> {
    pairs
        .get(g)
        .map(|v| v.iter().map(|p| p.to_string()).collect())
        .unwrap_or_default()
}

impl State {
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
    pub(super) fn shared_memory_pairs(&self) -> ShmPairs {
        let mut readers: HashMap<&str, Vec<ShmReader<'_>>> = HashMap::new();
        for r in self.readers.values() {
            if let Some(info) = r.endpoint.info.as_deref() {
                let hosts = self.shm_hosts(info);
                if !hosts.is_empty() {
                    readers.entry(info.topic.as_str()).or_default().push((
                        r.endpoint.guid,
                        info,
                        hosts,
                    ));
                }
            }
        }
        let mut pairs: ShmPairs = HashMap::new();
        let mut checked = 0usize;
        for w in self.writers.values() {
            let Some(info) = w.endpoint.info.as_deref() else {
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
                    pairs.entry(w.endpoint.guid).or_default().push(*rg);
                    pairs.entry(*rg).or_default().push(w.endpoint.guid);
                }
            }
        }
        pairs
    }
}
