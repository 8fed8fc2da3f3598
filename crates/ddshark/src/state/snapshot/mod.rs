//! An immutable, serialisable view of the state: what `stats` prints, what the
//! daemon reports and what the TUI renders. Built on the state thread, shared as
//! `Arc<Snapshot>`; readers never touch the live state. Each view has its builder
//! in its own file (writers, readers, topics, participants, secured, health); [`State::snapshot`]
//! calls them.

use super::window::{Counts, Windowed};
use super::State;
use rtps_dissect::discovery::EndpointQos;
use rtps_dissect::{DissectorStats, EndpointInfo};

mod health;
mod participants;
mod readers;
mod secured;
mod shm;
mod topics;
mod writers;

pub use health::{Check, Health, PipelineCounters, SourceHealth};
pub use participants::ParticipantView;
pub use readers::ReaderView;
pub use secured::{SecuredPairView, SecuredParticipantView, SecuredView, SecuredWindowView};
pub use topics::{QosMismatchView, TopicView};
pub use writers::WriterView;

#[derive(Debug, Clone, Default)]
pub(crate) struct QosView {
    pub(crate) reliability: Option<&'static str>,
    pub(crate) durability: Option<&'static str>,
    pub(crate) history: Option<String>,
    pub(crate) deadline_ns: Option<Option<i64>>,
    pub(crate) liveliness: Option<&'static str>,
    pub(crate) liveliness_lease_ns: Option<Option<i64>>,
    pub(crate) ownership: Option<&'static str>,
    pub(crate) ownership_strength: Option<i32>,
    pub(crate) partitions: Vec<String>,
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

#[derive(Debug, Clone, Copy, Default)]
pub struct SizeView {
    pub(crate) min: Option<u64>,
    pub mean: Option<f64>,
    pub(crate) max: Option<u64>,
}

/// Counts over the sliding window (its rate and bandwidth: [`super::rate::RateView`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct WindowView {
    /// Capture time the window's counts cover (≤ the configured window): from the window's
    /// oldest bucket, or the first sample if later, to the latest capture time.
    pub(crate) seconds: f64,
    pub(crate) samples: u64,
    pub(crate) bytes: u64,
    pub(crate) lost: u64,
    pub(crate) retransmitted: u64,
    pub(crate) heartbeats: u64,
    pub(crate) acknacks: u64,
}

impl WindowView {
    fn of(c: &Counts, seconds: f64) -> Self {
        Self {
            seconds,
            samples: c.samples,
            bytes: c.bytes,
            lost: c.lost,
            retransmitted: c.retransmitted,
            heartbeats: c.heartbeats,
            acknacks: c.acknacks,
        }
    }
}

/// The capture time a window covers (the secured traffic's message rates).
#[derive(Debug, Clone, Copy)]
struct WindowSpan {
    seconds: f64,
    /// The configured window.
    window_seconds: f64,
}

#[derive(Debug, Clone, Copy)]
pub struct PcpCount {
    /// 802.1Q priority; `null` = untagged.
    pub pcp: Option<u8>,
    pub(crate) datagrams: u64,
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

/// Whole-capture totals.
#[derive(Debug, Clone)]
pub struct Summary {
    pub(crate) first_ts_ns: Option<u64>,
    pub capture_time_ns: u64,
    pub(crate) duration_s: f64,
    pub(crate) window_s: f64,
    pub totals: Counts,
    pub(crate) user_samples: u64,
    pub(crate) user_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub summary: Summary,
    pub participants: Vec<ParticipantView>,
    pub writers: Vec<WriterView>,
    pub(crate) readers: Vec<ReaderView>,
    pub topics: Vec<TopicView>,
    /// DDS Security traffic (see [`super::secured`]).
    pub secured: SecuredView,
    pub health: Health,
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

impl State {
    /// Seconds of capture time the sliding window actually covers for something first
    /// seen at `first_seen_ns`: from the window's oldest bucket (or that first sight, if
    /// later) to now. The oldest bucket starts on a bucket boundary, so a full window is
    /// somewhat shorter than the configured one.
    fn window_seconds(&self, first_seen_ns: u64) -> f64 {
        self.window_span(first_seen_ns).seconds
    }

    /// [`Self::window_seconds`] with the configured window.
    fn window_span(&self, first_seen_ns: u64) -> WindowSpan {
        let window_start = Windowed::window_start_ns(self.config.window_ns, self.now_ns);
        let start = window_start.max(first_seen_ns);
        WindowSpan {
            seconds: self.now_ns.saturating_sub(start).max(1) as f64 / 1e9,
            window_seconds: self.config.window_ns as f64 / 1e9,
        }
    }

    /// Where the window ending now begins: its oldest bucket's start.
    fn window_start_ns(&self) -> u64 {
        Windowed::window_start_ns(self.config.window_ns, self.now_ns)
    }

    /// Build an immutable view. `dissector` and `pipeline` are the counters of the
    /// stages before the state, so the snapshot can say whether everything reconciles.
    pub(crate) fn snapshot(
        &self,
        dissector: &DissectorStats,
        pipeline: &PipelineCounters,
    ) -> Snapshot {
        let now = self.now_ns;
        let shm_pairs = self.shared_memory_pairs();
        let writers = self.writer_views(&shm_pairs);
        let readers = self.reader_views(&shm_pairs);
        let topics = self.topic_views(&shm_pairs);
        let participants = self.participant_views();
        let unattributed = writers.iter().filter(|w| w.topic.is_none()).count() as u64;
        let health = self.health(dissector, pipeline, unattributed);
        let secured = self.secured_view();
        let user = topics.iter().filter(|t| !t.builtin).map(|t| &t.totals);
        let (user_samples, user_bytes) = user.fold((0u64, 0u64), |(samples, bytes), t| {
            (
                samples.saturating_add(t.samples),
                bytes.saturating_add(t.bytes),
            )
        });
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
            topics,
            secured,
            health,
        }
    }
}
