//! `--discovery-cache FILE`: what SEDP/SPDP announced, saved as JSON at the end of a
//! run and loaded at the start of the next, so a capture started after discovery
//! still names its topics. Entries from the cache are marked `from_cache` and are
//! replaced by whatever the wire announces.

use std::path::Path;
use std::sync::Arc;

use rtps_dissect::discovery::{
    Durability, EndpointQos, Liveliness, Ownership, Reliability, TopicMap,
};
use rtps_dissect::{EndpointInfo, EndpointKind, Guid};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::State;

pub(crate) const CACHE_VERSION: u32 = 1;
/// Most endpoints a cache file may hold (a hostile or corrupt file stays bounded).
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Error)]
pub(crate) enum CacheError {
    #[error("{path}: cannot read discovery cache: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a ddshark discovery cache: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: discovery cache version {found}, expected {CACHE_VERSION}")]
    Version { path: String, found: u32 },
    #[error("{path}: cannot write discovery cache: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct CachedEndpoint {
    pub(crate) guid: String,
    pub(crate) kind: String,
    pub(crate) topic: String,
    #[serde(rename = "type")]
    pub(crate) type_name: String,
    #[serde(default)]
    pub(crate) reliability: Option<String>,
    #[serde(default)]
    pub(crate) durability: Option<String>,
    #[serde(default)]
    pub(crate) ownership: Option<String>,
    #[serde(default)]
    pub(crate) liveliness: Option<String>,
    #[serde(default)]
    pub(crate) partitions: Vec<String>,
    #[serde(default)]
    pub(crate) last_seen_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct CachedParticipant {
    pub(crate) guid_prefix: String,
    #[serde(default)]
    pub(crate) entity_name: Option<String>,
    #[serde(default)]
    pub(crate) last_seen_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct DiscoveryCache {
    pub(crate) version: u32,
    pub(crate) participants: Vec<CachedParticipant>,
    pub(crate) endpoints: Vec<CachedEndpoint>,
}

pub(crate) fn parse_guid(s: &str) -> Option<Guid> {
    let bytes = hex::decode(s).ok()?;
    let arr: [u8; 16] = bytes.try_into().ok()?;
    Some(Guid::from_bytes(arr))
}

fn reliability(s: &str) -> Option<Reliability> {
    match s {
        "reliable" => Some(Reliability::Reliable),
        "best_effort" => Some(Reliability::BestEffort),
        _ => None,
    }
}
fn durability(s: &str) -> Option<Durability> {
    match s {
        "volatile" => Some(Durability::Volatile),
        "transient_local" => Some(Durability::TransientLocal),
        "transient" => Some(Durability::Transient),
        "persistent" => Some(Durability::Persistent),
        _ => None,
    }
}
fn ownership(s: &str) -> Option<Ownership> {
    match s {
        "shared" => Some(Ownership::Shared),
        "exclusive" => Some(Ownership::Exclusive),
        _ => None,
    }
}
fn liveliness(s: &str) -> Option<Liveliness> {
    match s {
        "automatic" => Some(Liveliness::Automatic),
        "manual_by_participant" => Some(Liveliness::ManualByParticipant),
        "manual_by_topic" => Some(Liveliness::ManualByTopic),
        _ => None,
    }
}

impl CachedEndpoint {
    fn of(info: &EndpointInfo, last_seen_ns: u64) -> Self {
        Self {
            guid: info.guid.to_string(),
            kind: match info.kind {
                EndpointKind::Writer => "writer".into(),
                EndpointKind::Reader => "reader".into(),
            },
            topic: info.topic.clone(),
            type_name: info.type_name.clone(),
            reliability: info.qos.reliability.map(|r| r.name().into()),
            durability: info.qos.durability.map(|d| d.name().into()),
            ownership: info.qos.ownership.map(|o| o.name().into()),
            liveliness: info.qos.liveliness.map(|l| l.name().into()),
            partitions: info.qos.partitions.clone(),
            last_seen_ns,
        }
    }

    fn to_info(&self) -> Option<EndpointInfo> {
        let kind = match self.kind.as_str() {
            "writer" => EndpointKind::Writer,
            "reader" => EndpointKind::Reader,
            _ => return None,
        };
        Some(EndpointInfo {
            kind,
            guid: parse_guid(&self.guid)?,
            participant_guid: None,
            topic: self.topic.clone(),
            type_name: self.type_name.clone(),
            qos: EndpointQos {
                reliability: self.reliability.as_deref().and_then(reliability),
                durability: self.durability.as_deref().and_then(durability),
                ownership: self.ownership.as_deref().and_then(ownership),
                liveliness: self.liveliness.as_deref().and_then(liveliness),
                partitions: self.partitions.clone(),
                ..EndpointQos::default()
            },
            unicast_locators: Vec::new(),
            multicast_locators: Vec::new(),
        })
    }
}

impl Default for DiscoveryCache {
    fn default() -> Self {
        Self {
            version: CACHE_VERSION,
            participants: Vec::new(),
            endpoints: Vec::new(),
        }
    }
}

impl DiscoveryCache {
    pub(crate) fn load(path: &Path) -> Result<Self, CacheError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| CacheError::Read {
            path: p.clone(),
            source,
        })?;
        let mut c: DiscoveryCache =
            serde_json::from_str(&text).map_err(|source| CacheError::Parse {
                path: p.clone(),
                source,
            })?;
        if c.version != CACHE_VERSION {
            return Err(CacheError::Version {
                path: p,
                found: c.version,
            });
        }
        c.endpoints.truncate(MAX_ENTRIES);
        c.participants.truncate(MAX_ENTRIES);
        Ok(c)
    }

    /// Write atomically (the atomic-write crate).
    pub(crate) fn save(&self, path: &Path) -> Result<(), CacheError> {
        let p = path.display().to_string();
        let text = serde_json::to_string_pretty(self).map_err(|e| CacheError::Write {
            path: p.clone(),
            source: std::io::Error::other(e),
        })?;
        atomic_write::write(path, text, atomic_write::READABLE)
            .map_err(|source| CacheError::Write { path: p, source })
    }

    /// Merge a newer cache into this one: entries of `newer` win.
    pub(crate) fn merge(&mut self, newer: DiscoveryCache) {
        for e in newer.endpoints {
            match self.endpoints.iter_mut().find(|o| o.guid == e.guid) {
                Some(o) => *o = e,
                None => self.endpoints.push(e),
            }
        }
        for p in newer.participants {
            match self
                .participants
                .iter_mut()
                .find(|o| o.guid_prefix == p.guid_prefix)
            {
                Some(o) => *o = p,
                None => self.participants.push(p),
            }
        }
        self.endpoints.truncate(MAX_ENTRIES);
        self.participants.truncate(MAX_ENTRIES);
    }
}

impl State {
    /// What this run discovered (endpoints with a topic, participants with SPDP).
    pub(crate) fn export_cache(&self) -> DiscoveryCache {
        let mut endpoints: Vec<CachedEndpoint> = self
            .writers
            .values()
            .filter_map(|w| {
                w.endpoint
                    .info
                    .as_ref()
                    .map(|i| CachedEndpoint::of(i, w.endpoint.last_seen_ns))
            })
            .chain(self.readers.values().filter_map(|r| {
                r.endpoint
                    .info
                    .as_ref()
                    .map(|i| CachedEndpoint::of(i, r.endpoint.last_seen_ns))
            }))
            .collect();
        endpoints.sort_by(|a, b| a.guid.cmp(&b.guid));
        let mut participants: Vec<CachedParticipant> = self
            .participants
            .values()
            .filter(|p| p.info.is_some())
            .map(|p| CachedParticipant {
                guid_prefix: p.prefix.to_string(),
                entity_name: p.info.as_ref().and_then(|i| i.entity_name.clone()),
                last_seen_ns: p.last_seen_ns,
            })
            .collect();
        participants.sort_by(|a, b| a.guid_prefix.cmp(&b.guid_prefix));
        DiscoveryCache {
            version: CACHE_VERSION,
            participants,
            endpoints,
        }
    }

    /// Teach the state (and the dissector's topic map) what a cache knows.
    /// Returns the number of endpoints loaded.
    pub(crate) fn import_cache(&mut self, cache: &DiscoveryCache, topics: &mut TopicMap) -> usize {
        let mut n = 0usize;
        for e in &cache.endpoints {
            let Some(info) = e.to_info() else { continue };
            topics.insert(info.guid, &info.topic, &info.type_name, info.kind);
            self.endpoint_from_cache(Arc::new(info), e.last_seen_ns);
            n = n.saturating_add(1);
        }
        n
    }

    fn endpoint_from_cache(&mut self, info: Arc<EndpointInfo>, _last_seen_ns: u64) {
        // Cached endpoints are known, not seen: they appear once traffic shows them.
        if self.cached.len() < MAX_ENTRIES {
            self.cached.insert(info.guid, info);
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn guid_round_trip() {
        let g = Guid::from_bytes([7; 16]);
        assert_eq!(parse_guid(&g.to_string()), Some(g));
        assert_eq!(parse_guid("zz"), None);
        assert_eq!(parse_guid("0102"), None);
    }
}
