//! What SPDP and SEDP records do to the state: participants and endpoints named, leases,
//! disposals.

use std::sync::Arc;

use rtps_dissect::types::BuiltinWriter;
use rtps_dissect::{DiscoveryRecord, EndpointInfo, EndpointKind, GuidPrefix};

use super::entities::{gone_reason, Gone, GoneReason};
use super::State;

impl State {
    pub(super) fn discovery(&mut self, rec: &DiscoveryRecord) {
        let now = self.now_ns;
        self.counters.discovery_records = self.counters.discovery_records.saturating_add(1);
        match rec {
            DiscoveryRecord::Participant(info) => {
                if let Some(p) = self.participant_mut(info.guid_prefix) {
                    p.info = Some(Arc::clone(info));
                    p.from_cache = false;
                    p.last_spdp_ns = Some(now);
                    p.last_seen_ns = now;
                    p.gone = None;
                }
            }
            DiscoveryRecord::Endpoint(info) => self.endpoint(Arc::clone(info), false),
            DiscoveryRecord::Topic { .. } => {}
            DiscoveryRecord::Gone {
                role,
                guid,
                status_info,
            } => {
                let Some(guid) = guid else { return };
                let gone = Some(Gone {
                    at_ns: now,
                    reason: gone_reason(*status_info),
                });
                match role {
                    BuiltinWriter::Participant => self.participant_gone(guid.prefix, gone),
                    BuiltinWriter::Publication => {
                        if let Some(w) = self.writers.get_mut(guid) {
                            w.endpoint.gone = gone;
                        }
                    }
                    BuiltinWriter::Subscription => {
                        if let Some(r) = self.readers.get_mut(guid) {
                            r.endpoint.gone = gone;
                        }
                    }
                    BuiltinWriter::Topic => {}
                }
            }
        }
    }

    pub(super) fn participant_gone(&mut self, prefix: GuidPrefix, gone: Option<Gone>) {
        if let Some(p) = self.participants.get_mut(&prefix) {
            p.gone = gone;
        }
        let ep_gone = gone.map(|g| Gone {
            reason: GoneReason::ParticipantGone,
            ..g
        });
        for w in self.writers.values_mut() {
            if w.endpoint.guid.prefix == prefix && w.endpoint.gone.is_none() {
                w.endpoint.gone = ep_gone;
            }
        }
        for r in self.readers.values_mut() {
            if r.endpoint.guid.prefix == prefix && r.endpoint.gone.is_none() {
                r.endpoint.gone = ep_gone;
            }
        }
    }

    /// An SEDP endpoint (from the wire or from the discovery cache).
    pub(crate) fn endpoint(&mut self, info: Arc<EndpointInfo>, from_cache: bool) {
        let now = self.now_ns;
        let guid = info.guid;
        match info.kind {
            EndpointKind::Writer => {
                if let Some(w) = self.writer_mut(guid) {
                    if w.endpoint.discover(info, from_cache, now) {
                        w.samples_before_discovery = w.stats.total.samples;
                    }
                }
            }
            EndpointKind::Reader => {
                if let Some(r) = self.reader_mut(guid) {
                    r.endpoint.discover(info, from_cache, now);
                }
            }
        }
    }
}
