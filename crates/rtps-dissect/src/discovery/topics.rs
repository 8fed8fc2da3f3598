//! The bounded writer/reader GUID → topic map built from SEDP.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::types::{Guid, KeyHasher};

use super::EndpointKind;

/// Topic and type of an endpoint, shared cheaply between records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub topic: Arc<str>,
    pub type_name: Arc<str>,
    pub kind: EndpointKind,
}

/// Bounded GUID → topic map built from SEDP. Oldest entries are evicted first.
#[derive(Debug, Default)]
pub struct TopicMap {
    map: HashMap<Guid, TopicInfo, KeyHasher>,
    order: VecDeque<Guid>,
    cap: usize,
    evicted: u64,
    /// Interned names: one allocation per distinct topic/type.
    names: HashMap<String, Arc<str>>,
}

impl TopicMap {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.names.get(s) {
            return a.clone();
        }
        if self.names.len() >= self.cap.saturating_mul(2).max(16) {
            self.names.clear();
        }
        let a: Arc<str> = Arc::from(s);
        self.names.insert(s.to_string(), a.clone());
        a
    }

    pub fn insert(&mut self, guid: Guid, topic: &str, type_name: &str, kind: EndpointKind) {
        // Endpoints announce themselves again and again: most inserts change nothing.
        if self.map.get(&guid).is_some_and(|known| {
            known.kind == kind && &*known.topic == topic && &*known.type_name == type_name
        }) {
            return;
        }
        let info = TopicInfo {
            topic: self.intern(topic),
            type_name: self.intern(type_name),
            kind,
        };
        if self.map.insert(guid, info).is_none() {
            self.order.push_back(guid);
            while self.map.len() > self.cap {
                match self.order.pop_front() {
                    Some(old) => {
                        if self.map.remove(&old).is_some() {
                            self.evicted = self.evicted.saturating_add(1);
                        }
                    }
                    None => break,
                }
            }
        }
    }

    pub fn get(&self, guid: &Guid) -> Option<&TopicInfo> {
        self.map.get(guid)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Guid, &TopicInfo)> {
        self.map.iter()
    }
}
