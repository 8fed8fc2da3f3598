//! The DDS Security view: secured traffic per participant and per participant pair.

use super::super::secured::{Peer, SecuredCounts};
use super::super::State;
use super::WindowSpan;
use rtps_dissect::GuidPrefix;

/// Message rates are over at least a second (or the whole window, if shorter): a burst of
/// a few messages microseconds apart is a few per second, not 100 000/s.
const MIN_RATE_SPAN_NS: u64 = 1_000_000_000;

/// Secured counters over the sliding window, with rates.
#[derive(Debug, Clone, Copy, Default)]
pub struct SecuredWindowView {
    pub(crate) seconds: f64,
    pub(crate) counts: SecuredCounts,
    pub messages_per_s: f64,
    pub(crate) sec_submessages_per_s: f64,
    pub(crate) bandwidth_bps: f64,
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
#[derive(Debug, Clone)]
pub struct SecuredParticipantView {
    pub(crate) guid_prefix: String,
    pub(crate) entity_name: Option<String>,
    pub totals: SecuredCounts,
    pub(crate) window: SecuredWindowView,
    /// Endpoints whose traffic is protected: distinct SEC_PREFIX key ids (their topics,
    /// writers and readers are hidden when discovery is protected too).
    pub protected_endpoints: u64,
    /// Key ids beyond the kept maximum (so `protected_endpoints` is a lower bound).
    pub(crate) protected_endpoints_dropped: u64,
}

/// Secured traffic from one participant to one destination.
#[derive(Debug, Clone)]
pub struct SecuredPairView {
    pub src: String,
    /// A GUID prefix, "multicast", or "host:ADDRESS" (no single participant known there).
    pub dst: String,
    pub(crate) src_name: Option<String>,
    pub(crate) dst_name: Option<String>,
    pub(crate) first_seen_ns: u64,
    pub(crate) last_seen_ns: u64,
    pub totals: SecuredCounts,
    pub(crate) window: SecuredWindowView,
}

#[derive(Debug, Clone, Default)]
pub struct SecuredView {
    pub totals: SecuredCounts,
    pub window: SecuredWindowView,
    /// Participants that sent secured traffic.
    pub participants: Vec<SecuredParticipantView>,
    pub pairs: Vec<SecuredPairView>,
    /// Endpoints behind protected traffic, summed over participants: shown instead of the
    /// topics a protected discovery hides.
    pub(crate) protected_endpoints: u64,
    pub pairs_evicted: u64,
}

impl State {
    pub(super) fn secured_view(&self) -> SecuredView {
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
}
