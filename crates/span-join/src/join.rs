//! The join: the hosts' SAMPLE and DATA_FRAG spans of each sample, side by side.
//!
//! [`SpanJoin::add_sample`] / [`SpanJoin::add_frag`] take one span as it arrives,
//! [`SpanJoin::push`] (every period) joins what has waited `settle_pushes` pushes and
//! writes these points:
//!
//! - `dds_latency`: per sample (writer_id, sn) and receiver that completed it:
//!   latency_ns, t_recv_ns, sn;
//! - `dds_lost`: per sample and receiver that never completed it: sn, incomplete
//!   (1 = it saw part of it);
//! - `dds_samples`: per sample on its writer's host: sn, sample_size;
//! - `dds_submessage_latency`: per DATA_FRAG (writer_id, sn, fragment_starting_num) and
//!   receiver: latency_ns, t_recv_ns, sn, fragment_starting_num;
//! - `dds_repairs`: per second and writer on its own host: repairs, submessages (DATA /
//!   DATA_FRAG sent) of the samples first sent in that second;
//! - `dds_latency_1s`: per second, sender, receiver and topic, the latencies of the
//!   samples first sent in that second: samples, latency_sum_ns, latency_min_ns,
//!   latency_max_ns (what a panel over a long range reads, at any sample rate);
//!
//! - `dds_clock_offset`: per push and pair of hosts (tags host_a, host_b) with samples both
//!   ways in the last 5 minutes of capture time: offset_ns (host_b's clock minus host_a's at
//!   _time, NTP's estimate from the minimum one-way delays, latency_core), half_width_ns (the
//!   true offset is within ± that; the path's asymmetry cannot be seen), drift_ppb,
//!   samples_a_to_b, samples_b_to_a, samples_builtin, outliers; _time on host_a's clock;
//!
//! with _time = t_send (dds_repairs, dds_latency_1s: the second) and tags sender, receiver (host.name),
//! topic_name, writer_id, slot (the sender's span's). And one `ddshark_join` point per
//! push with its counters. The definitions are `ddshark latency`'s (and those of the Flux
//! version, flux-queries/tasks/materialise_latency.flux, the ad-hoc queries' source):
//!
//! - t_send: start of the sample's SAMPLE span on its writer's host. The writer's host is,
//!   per participant (GUID prefix), the one the order of events names (latency_core's host
//!   rule over the samples of the last 5 minutes, independent of the hosts' clocks, fed with
//!   each push's samples before they are joined); where that cannot decide, the host that
//!   most often saw its samples first. A receiver's copy pairs with the sender's on the
//!   sender's clock when the offset estimate shows the clocks differ by more than its bound;
//!   latency_ns stays raw (receiver's clock minus sender's).
//! - t_recv: end of its SAMPLE span on another host, when complete there; a host's SAMPLE
//!   span pairs with the sender's that started at most the sample window before it (an SN
//!   re-sent after a quiet window, as SPDP does, is a sample of its own).
//! - lost: latency_core's rule (`ddshark latency`'s): a receiver of the writer (another host
//!   that saw one of its samples within the receiver window of t_send) has no complete SAMPLE
//!   span of it while its capture ran.
//! - DATA_FRAG: earliest start on the writer's host, earliest end on each other host.
//!
//! Capture time decides when a sample is joined, as it decides every value: a sample waits
//! until every other host has sent a SAMPLE span ending at least the
//! sample window plus the lost grace after the sample's first copy started (each host's
//! watermark, on its own clock, moved onto the first copy's host's clock when the offset
//! estimate shows they differ; ddshark sends a host's SAMPLE spans in the order they end).
//! By then that host's copy, if any, has arrived, whatever the queues delayed (an outage of
//! the collector), so the outcome is `ddshark latency`'s. Arrival only bounds the wait: at
//! least `settle_pushes` pushes, at most `max_wait_pushes` (then joined with what is there,
//! counted `forced`; so is a sample joined without a host none of whose spans came in
//! `max_wait_pushes` pushes that brought others'; what the end of the input joins before
//! it was due is counted `decided_at_end`). The same spans in the same order give
//! the same points, whatever the clock. Only the hosts of the first copy's host's group are
//! waited for (hosts tied by writers both saw: those that exchanged traffic with it; another
//! robot's capture says nothing of this sample; a host alone in its group waits for its
//! peers, the backstop at most), and of them not the quiet ones: a host
//! whose spans stopped while the fleet's capture time (the latest span end of any host) ran
//! [`quiet::QUIET_NS`] (5 min) past its last span, or [`quiet::QUIET_GROUP_NS`] (10 s)
//! when its whole group stopped too (counted `hosts_gone_quiet`, `quiet_hosts` now). A
//! sample waiting for a host holds up no other.
//!
//! Bounded: `max_pending` samples and as many DATA_FRAGs wait (beyond, the oldest is
//! joined early, counted); writers and hosts unseen for `forget_pushes` pushes are
//! forgotten, the votes of `max_participants` participants kept. The suite
//! (tests/flux/run.py) holds the points equal to `ddshark latency` on every fixture.
//!
//! Where each part is: a span's arrival in `intake`, the waiting queues and the early join in
//! `pending`, when a sample is due in `due`, whom it waits for in `quiet`, the writer's host in `clocks` (latency_core's
//! rule and the clock offsets) and `votes`, the pairing and its points in `points`, the
//! per-second totals in `seconds`, the bounded maps in `forget`, the restart state in `state`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::as_i64;
use latency_core::hosts::Sighting;
use latency_core::{
    Basis, HostRule, HostRuleConfig, HostRuleEvidence, Hosts, LatencyTotals, LostRule,
    OffsetConfig, OffsetEstimate, Outcome, Participant, Receipt, Seen,
};
use serde::{Deserialize, Serialize};
use span_schema::measurement;

use super::line::LineWriter;

mod clocks;
mod due;
mod forget;
mod intake;
mod joined;
mod pending;
mod points;
mod quiet;
mod seconds;
mod state;
#[cfg(test)]
mod tests;
mod votes;

use clocks::Clocks;
use pending::{Pending, PendingQueue};
use seconds::{LatencySecond, RepairSecond};
pub use state::{JoinState, StateError, STATE_FORMAT};
use votes::{participant_of, HostVotes};

const NS: i64 = 1_000_000_000;
/// Most distinct strings (hosts, writers, topics, slots) shared instead of copied.
const MAX_INTERNED: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinSettings {
    /// Pushes a sample (or DATA_FRAG) waits at least after its first span arrived; then
    /// it waits until every other host has sent spans past it in
    /// capture time ([`JoinSettings::wait_ns`]).
    pub settle_pushes: u64,
    /// Pushes a sample waits at most (arrival time): beyond, it is joined with what is
    /// there, and a host none of whose spans arrived in this many pushes with others'
    /// spans is not waited for any more (its capture ended, or it was replayed under another
    /// name); both counted `forced`.
    pub max_wait_pushes: u64,
    /// Samples (and as many DATA_FRAGs) waiting at most; beyond, the oldest is joined early.
    pub max_pending: usize,
    /// Writers and hosts not seen for this many pushes are forgotten.
    pub forget_pushes: u64,
    /// Participants whose votes are kept (the oldest beyond are forgotten).
    pub max_participants: usize,
    /// A host that cast no vote for a participant in the last this many pushes is not its host
    /// (and a vote counts half as much with every push since it was cast).
    pub vote_pushes: u64,
    /// ddshark's `--otlp-sample-window`: a host's SAMPLE span pairs with the sender's that
    /// started at most this long before it.
    pub sample_window_ns: i64,
    /// Another host is a receiver of a writer if it saw one of its samples this close to t_send.
    pub receiver_window_ns: i64,
    /// `ddshark latency --lost-grace`.
    pub lost_grace_ns: i64,
    /// Spans of joined samples and DATA_FRAGs remembered at most (for `max_wait_pushes`
    /// pushes), so one delivered again is taken once (`joined`); beyond, the oldest are
    /// forgotten (counted).
    pub max_joined: usize,
    /// This join's number among the shards behind the collector's routing tier: tag
    /// [`span_schema::measurement::SHARD_TAG`] of the points other shards write too.
    pub shard: Option<u16>,
}

impl JoinSettings {
    /// Capture time a sample waits for each other host: a copy there starts within the
    /// sample window of t_send, and the lost rule wants that host's capture to have run the
    /// grace beyond t_send.
    pub fn wait_ns(&self) -> i64 {
        self.sample_window_ns.saturating_add(self.lost_grace_ns)
    }
}

impl Default for JoinSettings {
    fn default() -> Self {
        JoinSettings {
            settle_pushes: 3,
            max_wait_pushes: 30,
            max_pending: 500_000,
            forget_pushes: 360,
            max_participants: 10_000,
            vote_pushes: 6,
            sample_window_ns: span_schema::SAMPLE_WINDOW_NS,
            receiver_window_ns: latency_core::lost::RECEIVER_WINDOW_NS,
            lost_grace_ns: latency_core::lost::LOST_GRACE_NS,
            max_joined: 1_000_000,
            shard: None,
        }
    }
}

/// A SAMPLE span: one host's view of one sample (ddshark's per-host half).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleSpan<'a> {
    pub host: &'a str,
    pub writer: &'a str,
    pub topic: Option<&'a str>,
    pub slot: &'a str,
    pub sn: i64,
    /// The span's own start and end (the host's capture ran at least that long).
    pub span_start: i64,
    pub span_end: i64,
    /// First IP fragment of the first datagram carrying any of it.
    pub start_ns: i64,
    pub fragments_missing: i64,
    pub sample_size: i64,
    pub repairs: i64,
    pub submessages: i64,
    /// The host rule's evidence (docs/latency.md, "A writer's host"), as the span says it:
    /// the source IP and Ethernet addresses of the first datagram carrying the sample, and
    /// on an SPDP sample the unicast addresses its participant announced (comma-separated).
    /// Unreadable values count as absent.
    pub src_ip: Option<&'a str>,
    /// The 48-bit address as a number (0x0242ac110002).
    pub src_mac: Option<i64>,
    pub announced_ips: Option<&'a str>,
}

/// A DATA_FRAG span: one DATA_FRAG submessage seen on one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragSpan<'a> {
    pub host: &'a str,
    pub writer: &'a str,
    pub topic: Option<&'a str>,
    pub slot: &'a str,
    pub sn: i64,
    pub start: i64,
    pub end: i64,
    pub fragment_starting_num: i64,
    pub frags_in_submessage: i64,
    pub fragment_size: i64,
    pub sample_size: i64,
}

/// Counters, written with every push as the `ddshark_join` point.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JoinCounters {
    pub spans: u64,
    /// Lines that were not a SAMPLE or DATA_FRAG span the join can use (counted, skipped).
    pub rejected: u64,
    pub samples: u64,
    pub frags: u64,
    /// Joined before their time because `max_pending` were waiting.
    pub early: u64,
    pub points: u64,
    /// Writers, hosts and participants forgotten (not seen for `forget_pushes`, or beyond
    /// `max_participants`).
    pub forgotten: u64,
    /// Points the output could not take (counted by the driver).
    pub points_dropped: u64,
    /// Samples and DATA_FRAGs the writer's host did not see (its capture missed them), so
    /// nothing is known of their sending: no point.
    pub senderless: u64,
    /// Samples and DATA_FRAGs joined after `max_wait_pushes` before every other host's
    /// capture had passed them (a host fell silent while the others did too).
    #[serde(default)]
    pub forced: u64,
    /// Samples and DATA_FRAGs joined at the end of the input (stdin closed) before every
    /// other host's capture had passed them: what was still on its way is not in them.
    #[serde(default)]
    pub decided_at_end: u64,
    /// Hosts that became quiet (see `quiet`): their spans stopped while the fleet's capture
    /// time ran on, so samples no longer wait for them.
    #[serde(default)]
    pub hosts_gone_quiet: u64,
    /// Hosts the clock table forgot (not seen in a sample for the 5 min of capture time
    /// its evidence spans), making room for others: it compares at most 64 at once.
    #[serde(default)]
    pub clock_hosts_forgotten: u64,
    /// Samples' evidence for the hosts and clock offsets left out: the table of
    /// (host pair, 100 ms, participant) cells was full (250,000).
    #[serde(default)]
    pub clock_cells_not_remembered: u64,
    /// Spans that came again (same host, writer, SN, capture times and slot: a resent
    /// OTLP export, a redelivered batch), taken once: while their sample waits, or within
    /// `max_wait_pushes` pushes after it was joined (`joined`).
    #[serde(default)]
    pub duplicates: u64,
    /// Spans of joined samples forgotten `max_wait_pushes` pushes after their join (one
    /// delivered again later than that would count again),
    #[serde(default)]
    pub joined_expired: u64,
    /// and before that, because `max_joined` were remembered.
    #[serde(default)]
    pub joined_evicted: u64,
    /// OTLP export requests refused whole (undecodable, too large, unauthorised, or not
    /// one span the join can use); spans refused one by one count as `rejected`.
    #[serde(default)]
    pub otlp_refused: u64,
    /// With `--influx-url` (the driver counts them): points InfluxDB took,
    #[serde(default)]
    pub influx_points_written: u64,
    /// write requests sent again (after a 5xx, a 429 or no connection),
    #[serde(default)]
    pub influx_retries: u64,
    /// points InfluxDB refused (4xx but 429; its message logged),
    #[serde(default)]
    pub influx_points_rejected: u64,
    /// points given up on when stopping while InfluxDB could not take them (an export's:
    /// answered "retry later", sent again; a push's: kept with the state),
    #[serde(default)]
    pub influx_points_abandoned: u64,
    /// exports answered "retry later" because `--influx-max-queued` points were waiting,
    #[serde(default)]
    pub influx_queue_full: u64,
    /// and the points waiting for InfluxDB now.
    #[serde(default)]
    pub influx_queued_points: u64,
    /// ddshark's OTLP metric points and log records the join's intake had InfluxDB take,
    #[serde(default)]
    pub telemetry_points: u64,
    /// and those it refused (no timestamp, an exponential histogram, nothing storable).
    #[serde(default)]
    pub telemetry_rejected: u64,
}

type Str = Arc<str>;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SampleRow {
    host: Str,
    start: i64,
    end: i64,
    missing: i64,
    size: i64,
    repairs: i64,
    submessages: i64,
    slot: Str,
    /// What ties its writer's participant to a host (None: the span said none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    addresses: Option<Arc<Addresses>>,
}

/// The host rule's evidence as one SAMPLE span said it ([`SampleSpan::src_ip`] and co.),
/// shared by the rows that say the same (a writer's samples on one host do), so a waiting
/// row grows by a pointer, not by the addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Addresses {
    src: Option<IpAddr>,
    src_mac: Option<[u8; 6]>,
    announced: Option<Arc<[IpAddr]>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FragRow {
    host: Str,
    start: i64,
    end: i64,
    slot: Str,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Writer {
    /// Host → first and last start of its SAMPLE spans of this writer.
    hosts: BTreeMap<Str, (i64, i64)>,
    /// The topic as each host names it.
    topics: HashMap<Str, Str>,
    /// Tick of its last SAMPLE span (None: only DATA_FRAGs seen since the last push).
    seen_tick: Option<u64>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Capture {
    first_start: i64,
    last_end: i64,
    seen_tick: u64,
    /// The host's watermark: the latest end of its SAMPLE spans (ddshark sends them in the
    /// order they end, a sample window after), on its own clock.
    #[serde(default = "no_time")]
    sample_end: i64,
    /// [`SpanJoin::flows`] when its last span arrived.
    #[serde(default)]
    flows_seen: u64,
    /// [`SpanJoin::flows`] when its first span arrived (from an older state: long ago).
    #[serde(default)]
    flows_first: u64,
    /// [`SpanJoin::fleet_time`] when its last span arrived (unknown, from an older state:
    /// not quiet until its next span).
    #[serde(default = "unknown_time")]
    fleet_seen: i64,
}

fn no_time() -> i64 {
    i64::MIN
}

fn unknown_time() -> i64 {
    i64::MAX
}

/// The streaming join (see the module docs).
#[derive(Debug, Default)]
pub struct SpanJoin {
    settings: JoinSettings,
    tick: u64,
    /// Pushes whose period brought any span (a host is waited for until others' spans
    /// arrived in more than `settle_pushes` of them without its own).
    flows: u64,
    /// A span arrived since the last push.
    flowing: bool,
    /// The fleet's capture time: the latest end of any host's span (each on its own clock;
    /// only ever grows). How long a host has been silent is measured on it.
    fleet_time: i64,
    /// Host → its group (hosts tied by writers both saw), as of this push.
    groups: HashMap<Str, usize>,
    /// Hosts quiet at this push: not waited for.
    quiet: HashSet<Str>,
    samples: PendingQueue<SampleRow>,
    frags: PendingQueue<FragRow>,
    /// Samples joined with no span of their sender's host yet, by (writer, SN), with the
    /// tick they were parked at: the sender's span may come much later than the receivers'
    /// (its copy stays open while the writer re-sends the sample, to another reader, say),
    /// then the sample is joined again with it; counted `senderless` after
    /// `max_wait_pushes` (at most `max_pending` wait).
    senderless: IndexMap<(Str, i64), Pending<SampleRow>>,
    /// GUID prefix → host → (votes as of the tick of the last vote, that tick); participants
    /// in order of arrival.
    votes: IndexMap<Str, BTreeMap<Str, (u64, u64)>>,
    writers: HashMap<Str, Writer>,
    captures: HashMap<Str, Capture>,
    /// (writer, sender, second of t_send) → what its samples first sent then needed.
    repairs: IndexMap<(Str, Str, i64), RepairSecond>,
    /// (sender, receiver, topic, second of t_send) → its samples' latencies.
    latency_seconds: IndexMap<(Str, Str, Str, i64), LatencySecond>,
    interned: HashSet<Str>,
    /// The rows' addresses, shared (at most [`MAX_INTERNED`]; beyond, copies).
    addresses: HashSet<Arc<Addresses>>,
    /// The evidence for writers' hosts and clock offsets (latency_core), by host index.
    clocks: Clocks,
    /// The spans of what was joined lately (a span delivered again is taken once).
    joined: joined::Joined,
    /// Points of samples joined early (table full), written at the next push.
    early_out: LineWriter,
    early_points: u64,
    pub counters: JoinCounters,
}

impl SpanJoin {
    pub fn new(settings: JoinSettings) -> Self {
        SpanJoin {
            settings,
            ..SpanJoin::default()
        }
    }

    pub fn pending_samples(&self) -> usize {
        self.samples.len()
    }

    pub fn pending_frags(&self) -> usize {
        self.frags.len()
    }

    /// One period: joins what is due, writes its points (and the `ddshark_join` point,
    /// without a time: the receiver stamps it) to `out`; returns how many points.
    pub fn push(&mut self, out: &mut LineWriter) -> u64 {
        let points = self.join_due(out, false);
        self.forget();
        self.expire_joined();
        self.finish_push(out, points)
    }

    /// The end of the input: joins everything still waiting (then a last push).
    pub fn flush(&mut self, out: &mut LineWriter) -> u64 {
        let points = self.join_due(out, true);
        self.give_up_senderless(|_| true);
        self.finish_push(out, points)
    }

    /// A new period: what is due (`all`: everything) joined, the early points and the
    /// changed per-second totals written; returns how many points.
    pub(super) fn join_due(&mut self, out: &mut LineWriter, all: bool) -> u64 {
        self.tick = self.tick.saturating_add(1);
        if std::mem::take(&mut self.flowing) {
            self.flows = self.flows.saturating_add(1);
        }
        self.mark_quiet();
        let mut points = self.take_early(out);
        // samples first: their votes decide the writers' hosts for the DATA_FRAGs; all of
        // them are evidence for the order of events before any is joined
        let (at, counts) = self.due_positions(&self.samples, all);
        self.count_due(counts);
        let ready = self.samples.take(&at);
        for p in &ready {
            self.clocks.observe(&p.writer, &p.rows);
        }
        self.clocks.decide();
        let lost = self.clocks.take_losses();
        let c = &mut self.counters;
        c.clock_hosts_forgotten = c.clock_hosts_forgotten.saturating_add(lost.hosts_forgotten);
        c.clock_cells_not_remembered = c
            .clock_cells_not_remembered
            .saturating_add(lost.cells_not_remembered);
        for p in &ready {
            points = points.saturating_add(self.join_sample(p, out));
        }
        let (at, counts) = self.due_positions(&self.frags, all);
        self.count_due(counts);
        for p in self.frags.take(&at) {
            points = points.saturating_add(self.join_frag(&p, out));
        }
        points = points.saturating_add(self.write_repairs(out));
        points = points.saturating_add(self.clocks.write(out, self.settings.shard));
        points.saturating_add(self.write_latency_seconds(out))
    }
}

/// Tags a point that other shards write too with this join's shard (none: a lone join).
pub(super) fn shard_tag(point: &mut LineWriter, shard: Option<u16>) -> &mut LineWriter {
    match shard {
        Some(n) => point.tag(measurement::SHARD_TAG, &n.to_string()),
        None => point,
    }
}
