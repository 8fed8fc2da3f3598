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
//! `max_wait_pushes` pushes that brought others'). The same spans in the same order give
//! the same points, whatever the clock. A host whose spans stopped while others' came and
//! whose capture time is [`STALE_NS`] behind theirs (replayed before under other names) is
//! waited for no more; a sample waiting for a host holds up no other.
//!
//! Bounded: `max_pending` samples and as many DATA_FRAGs wait (beyond, the oldest is
//! joined early, counted); writers and hosts unseen for `forget_pushes` pushes are
//! forgotten, the votes of `max_participants` participants kept. The suite
//! (tests/flux/run.py) holds the points equal to `ddshark latency` on every fixture.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use indexmap::IndexMap;
use latency_core::hosts::Sighting;
use latency_core::{
    Basis, HostRule, HostRuleConfig, HostRuleEvidence, Hosts, LostRule, OffsetConfig,
    OffsetEstimate, Participant, Seen,
};
use serde::{Deserialize, Serialize};
use span_schema::measurement;

use super::line::LineWriter;

mod clocks;
mod pending;
mod seconds;
mod state;
#[cfg(test)]
mod tests;

use clocks::Clocks;
use pending::{Pending, PendingQueue};
use seconds::{count_latency, LatencySecond, RepairSecond};
pub use state::{JoinState, StateError, STATE_FORMAT};

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
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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
}

fn no_time() -> i64 {
    i64::MIN
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
    /// The latest host watermark (`Capture::sample_end`) at this push.
    watermark_max: i64,
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
    /// The evidence for writers' hosts and clock offsets (latency_core), by host index.
    clocks: Clocks,
    /// Points of samples joined early (table full), written at the next push.
    early_out: LineWriter,
    early_points: u64,
    pub counters: JoinCounters,
}

/// A host whose capture time is this far behind the latest host's, and whose spans stopped
/// while others' came, is a capture replayed before (under other host names), not one whose
/// spans are held up: it is waited for no more.
const STALE_NS: i64 = 300 * NS;

/// Whether every other host's capture has passed a sample ([`SpanJoin::passed_by_all`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Passed {
    All,
    /// All but hosts silent for `max_wait_pushes` pushes in which others' spans arrived.
    AllButSilent,
    NotYet,
}

/// Host → (votes as of the tick of the last vote, that tick).
type HostVotes = BTreeMap<Str, (u64, u64)>;

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

    fn intern(&mut self, s: &str) -> Str {
        if let Some(shared) = self.interned.get(s) {
            return shared.clone();
        }
        let shared = Str::from(s);
        if self.interned.len() < MAX_INTERNED {
            self.interned.insert(shared.clone());
        }
        shared
    }

    fn note_capture(&mut self, host: &Str, start: i64, end: i64) -> &mut Capture {
        let (tick, flows) = (self.tick, self.flows);
        self.flowing = true;
        let capture = self.captures.entry(host.clone()).or_insert(Capture {
            first_start: start,
            last_end: end,
            seen_tick: tick,
            sample_end: i64::MIN,
            flows_seen: flows,
        });
        capture.first_start = capture.first_start.min(start);
        capture.last_end = capture.last_end.max(end);
        capture.seen_tick = tick;
        capture.flows_seen = flows;
        capture
    }

    fn note_topic(&mut self, writer: &Str, host: &Str, topic: Option<&str>) {
        if let Some(topic) = topic {
            let topic = self.intern(topic);
            self.writers
                .entry(writer.clone())
                .or_default()
                .topics
                .insert(host.clone(), topic);
        }
    }

    /// Counts a line that is not a span the join can use.
    pub fn reject(&mut self) {
        self.counters.spans = self.counters.spans.saturating_add(1);
        self.counters.rejected = self.counters.rejected.saturating_add(1);
    }

    pub fn add_sample(&mut self, span: &SampleSpan<'_>) {
        self.counters.spans = self.counters.spans.saturating_add(1);
        let host = self.intern(span.host);
        let writer = self.intern(span.writer);
        let capture = self.note_capture(&host, span.span_start, span.span_end);
        capture.sample_end = capture.sample_end.max(span.span_end);
        let start = span.start_ns;
        let tick = self.tick;
        let entry = self.writers.entry(writer.clone()).or_default();
        entry
            .hosts
            .entry(host.clone())
            .and_modify(|seen| {
                if start < seen.0 {
                    seen.0 = start;
                } else if start > seen.1 {
                    seen.1 = start;
                }
            })
            .or_insert((start, start));
        entry.seen_tick = Some(tick);
        self.note_topic(&writer, &host, span.topic);
        let row = SampleRow {
            host,
            start,
            end: span.span_end,
            missing: span.fragments_missing,
            size: span.sample_size,
            repairs: span.repairs,
            submessages: span.submessages,
            slot: self.intern(span.slot),
        };
        if let Some(pending) = self.samples.get_mut(&writer, span.sn, 0) {
            pending.rows.push(row);
            return;
        }
        if self.samples.len() >= self.settings.max_pending {
            self.join_oldest_sample();
        }
        let entry = match self.senderless.shift_remove(&(writer.clone(), span.sn)) {
            Some(mut parked) => {
                parked.rows.push(row);
                parked.first_tick = tick;
                parked
            }
            None => Pending {
                first_tick: tick,
                rows: vec![row],
                writer,
                sn: span.sn,
                fragment_starting_num: 0,
            },
        };
        self.samples.insert(entry);
    }

    pub fn add_frag(&mut self, span: &FragSpan<'_>) {
        self.counters.spans = self.counters.spans.saturating_add(1);
        let host = self.intern(span.host);
        self.note_capture(&host, span.start, span.end);
        if !plausible_fragment(span) {
            // impossible numbers are ignored, as by ddshark
            return;
        }
        let writer = self.intern(span.writer);
        self.note_topic(&writer, &host, span.topic);
        let row = FragRow {
            host,
            start: span.start,
            end: span.end,
            slot: self.intern(span.slot),
        };
        let fsn = span.fragment_starting_num;
        if let Some(pending) = self.frags.get_mut(&writer, span.sn, fsn) {
            pending.rows.push(row);
            return;
        }
        if self.frags.len() >= self.settings.max_pending {
            self.join_oldest_frag();
        }
        let tick = self.tick;
        self.frags.insert(Pending {
            first_tick: tick,
            rows: vec![row],
            writer,
            sn: span.sn,
            fragment_starting_num: fsn,
        });
    }

    fn join_oldest_sample(&mut self) {
        if let Some(p) = self.samples.pop_front() {
            self.clocks.queued.push((p.writer.clone(), p.rows.clone()));
            self.join_early(|join, out| join.join_sample(&p, out));
        }
    }

    fn join_oldest_frag(&mut self) {
        if let Some(p) = self.frags.pop_front() {
            self.join_early(|join, out| join.join_frag(&p, out));
        }
    }

    /// Joins one sample or DATA_FRAG before its time (the table is full); its points wait
    /// for the next push.
    fn join_early(&mut self, join: impl FnOnce(&mut Self, &mut LineWriter) -> u64) {
        self.counters.early = self.counters.early.saturating_add(1);
        let mut out = std::mem::take(&mut self.early_out);
        let points = join(self, &mut out);
        self.early_points = self.early_points.saturating_add(points);
        self.early_out = out;
    }

    /// One period: joins what is due, writes its points (and the `ddshark_join` point,
    /// without a time: the receiver stamps it) to `out`; returns how many points.
    pub fn push(&mut self, out: &mut LineWriter) -> u64 {
        let points = self.join_due(out, false);
        self.forget();
        self.finish_push(out, points)
    }

    /// The end of the input: joins everything still waiting (then a last push).
    pub fn flush(&mut self, out: &mut LineWriter) -> u64 {
        let points = self.join_due(out, true);
        self.give_up_senderless(|_| true);
        self.finish_push(out, points)
    }

    /// Samples parked without their sender's span that `give_up` picks: joined as they
    /// are (no point), counted `senderless`.
    fn give_up_senderless(&mut self, give_up: impl Fn(&Pending<SampleRow>) -> bool) {
        let before = self.senderless.len();
        self.senderless.retain(|_, parked| !give_up(parked));
        let given_up = before.saturating_sub(self.senderless.len()) as u64;
        self.counters.senderless = self.counters.senderless.saturating_add(given_up);
        self.counters.samples = self.counters.samples.saturating_add(given_up);
    }

    /// A new period: what is due (`all`: everything) joined, the early points and the
    /// changed per-second totals written; returns how many points.
    fn join_due(&mut self, out: &mut LineWriter, all: bool) -> u64 {
        self.tick = self.tick.saturating_add(1);
        if std::mem::take(&mut self.flowing) {
            self.flows = self.flows.saturating_add(1);
        }
        self.watermark_max = self
            .captures
            .values()
            .map(|c| c.sample_end)
            .max()
            .unwrap_or(i64::MIN);
        let mut points = self.take_early(out);
        // samples first: their votes decide the writers' hosts for the DATA_FRAGs; all of
        // them are evidence for the order of events before any is joined
        // (anywhere in the queue: one waiting for a host must not hold up the others)
        let mut at = Vec::new();
        for i in 0..self.samples.len() {
            let Some(p) = self.samples.entries.get(i) else {
                break;
            };
            let first_tick = p.first_tick;
            if !all && self.tick.saturating_sub(first_tick) < self.settings.settle_pushes {
                // (in order of arrival: the rest came later still)
                break;
            }
            let passed = self.passed_by_all(
                &p.writer,
                first_tick,
                p.rows.iter().map(|r| (&r.host, r.start)),
            );
            if self.due(first_tick, all, passed) {
                at.push(i);
            }
        }
        let ready = self.samples.take(&at);
        for p in &ready {
            self.clocks.observe(&p.writer, &p.rows);
        }
        self.clocks.decide();
        for p in &ready {
            points = points.saturating_add(self.join_sample(p, out));
        }
        at.clear();
        for i in 0..self.frags.len() {
            let Some(p) = self.frags.entries.get(i) else {
                break;
            };
            let first_tick = p.first_tick;
            if !all && self.tick.saturating_sub(first_tick) < self.settings.settle_pushes {
                break;
            }
            let passed = self.passed_by_all(
                &p.writer,
                first_tick,
                p.rows.iter().map(|r| (&r.host, r.start)),
            );
            if self.due(first_tick, all, passed) {
                at.push(i);
            }
        }
        for p in self.frags.take(&at) {
            points = points.saturating_add(self.join_frag(&p, out));
        }
        points = points.saturating_add(self.write_repairs(out));
        points = points.saturating_add(self.clocks.write(out));
        points.saturating_add(self.write_latency_seconds(out))
    }

    /// Whether what first arrived at `first_tick` is joined now: once it waited
    /// `settle_pushes` and every other host passed it in capture time, or after
    /// `max_wait_pushes` anyway; `all`: the end of the input. Joined before every host
    /// passed it (backstop, or a host given up as silent): counted `forced`.
    fn due(&mut self, first_tick: u64, all: bool, passed: Passed) -> bool {
        let waited = self.tick.saturating_sub(first_tick);
        let backstop = waited
            >= self
                .settings
                .max_wait_pushes
                .max(self.settings.settle_pushes);
        let due = match passed {
            _ if all => return true,
            Passed::All => waited >= self.settings.settle_pushes,
            Passed::AllButSilent => waited >= self.settings.settle_pushes,
            Passed::NotYet => backstop,
        };
        if due && passed != Passed::All {
            self.counters.forced = self.counters.forced.saturating_add(1);
        }
        due
    }

    /// Whether every host with no copy among `rows` (host, start) has passed their first
    /// start by [`JoinSettings::wait_ns`] of its capture time (read on the first copy's
    /// host's clock when the traffic shows the clocks differ): nothing of it can still
    /// arrive from there, whatever the delay in arrival, and the outcome (latency, lost, or
    /// nothing) depends on capture time alone, as `ddshark latency`'s. (Every host, not only
    /// those that saw `writer` yet: a host's first sighting of a writer may be held up too.)
    /// Not waited for: a host silent while the others' spans arrived in more than
    /// `max_wait_pushes` pushes (its capture ended), or in more than `settle_pushes` while
    /// its capture time is [`STALE_NS`] behind the others' (a capture replayed before under
    /// other host names); skipping one that saw `writer` is `AllButSilent`.
    fn passed_by_all<'a>(
        &self,
        writer: &Str,
        first_tick: u64,
        rows: impl Iterator<Item = (&'a Str, i64)> + Clone,
    ) -> Passed {
        if self.tick.saturating_sub(first_tick) < self.settings.settle_pushes {
            // (not due anyway: spare the look)
            return Passed::NotYet;
        }
        let Some((first_host, t)) = rows.clone().min_by_key(|&(_, t)| t) else {
            return Passed::All;
        };
        let saw_writer = |host: &Str| {
            self.writers
                .get(writer)
                .is_some_and(|w| w.hosts.contains_key(host))
        };
        let horizon = t.saturating_add(self.settings.wait_ns());
        let mut passed = Passed::All;
        for (host, c) in &self.captures {
            let ahead = self.clocks.receiver_ahead(first_host, host, t);
            if rows.clone().any(|(h, _)| h == host) || c.sample_end.saturating_sub(ahead) >= horizon
            {
                continue;
            }
            let quiet = self.flows.saturating_sub(c.flows_seen);
            let stale = quiet > self.settings.settle_pushes
                && self.watermark_max.saturating_sub(c.sample_end) > STALE_NS;
            if quiet > self.settings.max_wait_pushes || stale {
                if saw_writer(host) {
                    passed = Passed::AllButSilent;
                }
                continue;
            }
            return Passed::NotYet;
        }
        passed
    }

    fn take_early(&mut self, out: &mut LineWriter) -> u64 {
        out.buf.push_str(&self.early_out.buf);
        self.early_out.buf.clear();
        std::mem::take(&mut self.early_points)
    }

    fn finish_push(&mut self, out: &mut LineWriter, points: u64) -> u64 {
        self.counters.points = self.counters.points.saturating_add(points);
        let c = self.counters;
        let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        out.point(measurement::JOIN)
            .int("spans", as_i64(c.spans))
            .int("rejected", as_i64(c.rejected))
            .int("samples", as_i64(c.samples))
            .int("frags", as_i64(c.frags))
            .int("early", as_i64(c.early))
            .int("points", as_i64(c.points))
            .int("points_dropped", as_i64(c.points_dropped))
            .int("forgotten", as_i64(c.forgotten))
            .int("senderless", as_i64(c.senderless))
            .int("forced", as_i64(c.forced))
            .int("pending_samples", as_i64(self.samples.len() as u64))
            .int("pending_frags", as_i64(self.frags.len() as u64))
            .int("pending_senderless", as_i64(self.senderless.len() as u64))
            .int(
                "writers",
                as_i64(
                    self.writers
                        .values()
                        .filter(|w| !w.hosts.is_empty())
                        .count() as u64,
                ),
            )
            .end(None);
        points
    }

    // ------------------------------------------------------------------ the join

    /// The writer's host for a sample seen as `rows`: one vote per sample first seen by
    /// one host (a sample two hosts saw at the same nanosecond casts none); among the hosts
    /// that saw it, the participant's most voted one, else the first. None if nobody saw it.
    fn home_of(&mut self, writer: &str, rows: &[SampleRow]) -> Option<Str> {
        // The order of events (latency_core's host rule), when it decided, among the hosts
        // that saw the sample; else the votes below.
        if let Some(home) = self.clocks.home(writer, rows) {
            if rows.iter().any(|r| r.host == *home) {
                return Some(home.clone());
            }
        }
        let prefix = participant_of(writer);
        let mut earliest: BTreeMap<&Str, i64> = BTreeMap::new();
        for r in rows {
            earliest
                .entry(&r.host)
                .and_modify(|t| *t = (*t).min(r.start))
                .or_insert(r.start);
        }
        if earliest.len() >= 2 {
            let mut first: Option<(&Str, i64)> = None;
            let mut tie = false;
            for (&host, &t) in &earliest {
                match first {
                    Some((_, best)) if t > best => {}
                    Some((_, best)) if t == best => tie = true,
                    _ => {
                        first = Some((host, t));
                        tie = false;
                    }
                }
            }
            let first = first.map(|(h, _)| h.clone());
            if let (Some(host), false) = (&first, tie) {
                let tick = self.tick;
                let prefix = self.intern(prefix);
                let votes = self.votes.entry(prefix).or_default();
                let vote = votes.entry(host.clone()).or_insert((0, tick));
                *vote = (decayed(*vote, tick).saturating_add(ONE_VOTE), tick);
            }
            // (restricted to the hosts that saw it: the same participants replayed under
            // other host names still carry the old names' votes for a few pushes)
            return self
                .best_vote(prefix, |h| earliest.contains_key(h))
                .or(first);
        }
        // Seen by one host: its sender, or a receiver whose sender's capture missed it.
        self.best_vote(prefix, |_| true)
            .or_else(|| earliest.keys().next().map(|h| (*h).clone()))
    }

    /// Whether spans of `host` arrived since the samples joined now did (a host that is
    /// capturing the writer sends its SAMPLE spans within that time).
    fn capturing_now(&self, host: &str) -> bool {
        let since = self
            .tick
            .saturating_sub(self.settings.settle_pushes.saturating_add(1));
        self.captures
            .get(host)
            .is_some_and(|c| c.seen_tick >= since)
    }

    /// The host with most votes for the participant among those that voted within
    /// `vote_pushes` pushes of its latest vote and capture now, each push halving the votes
    /// before it (a participant's host does not change; host names may, when a capture is
    /// replayed under other names: the new name outvotes the old within a push or two),
    /// among the hosts `among` accepts. (Counted from its latest vote, not from now: no
    /// sample may be joined for a while when one waits for a host in capture time.)
    fn best_vote(&self, prefix: &str, among: impl Fn(&Str) -> bool) -> Option<Str> {
        let votes = self.votes.get(prefix)?;
        let latest = votes.values().map(|v| v.1).max()?;
        let recent = latest.checked_sub(self.settings.vote_pushes);
        let mut best: Option<(&Str, u64)> = None;
        for (host, &vote) in votes {
            // (a host whose capture fell silent is not the host of a sample joined now: a
            // replay under other host names, or a capture that ended)
            if recent.is_some_and(|r| vote.1 < r) || !among(host) || !self.capturing_now(host) {
                continue;
            }
            let count = decayed(vote, latest);
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((host, count));
            }
        }
        best.map(|(h, _)| h.clone())
    }

    fn topic_of(&self, writer: &str, home: &str) -> Str {
        self.writers
            .get(writer)
            .and_then(|w| w.topics.get(home))
            .cloned()
            .unwrap_or_else(|| Str::from(""))
    }

    /// latency_core's rule: a receiver of the writer that was capturing at `t_send`.
    fn expected(&self, host: &str, t_send: i64, writer_seen: (i64, i64)) -> bool {
        let rule = LostRule {
            receiver_window_ns: self.settings.receiver_window_ns,
            grace_ns: self.settings.lost_grace_ns,
        };
        let capture = self.captures.get(host).map(|c| (c.first_start, c.last_end));
        rule.expected(t_send, capture, Some(writer_seen))
    }

    fn join_sample(&mut self, p: &Pending<SampleRow>, out: &mut LineWriter) -> u64 {
        self.counters.samples = self.counters.samples.saturating_add(1);
        let Some(home) = self.home_of(&p.writer, &p.rows) else {
            return 0;
        };
        let mut sent: Vec<&SampleRow> = p.rows.iter().filter(|r| r.host == home).collect();
        sent.sort_by(|a, b| (a.start, &a.slot).cmp(&(b.start, &b.slot)));
        if sent.is_empty() {
            let key = (p.writer.clone(), p.sn);
            if self.senderless.len() < self.settings.max_pending
                && !self.senderless.contains_key(&key)
            {
                // (a sample once it is joined with its sender's span, or given up)
                self.counters.samples = self.counters.samples.saturating_sub(1);
                let mut parked = p.clone();
                parked.first_tick = self.tick;
                self.senderless.insert(key, parked);
            } else {
                self.counters.senderless = self.counters.senderless.saturating_add(1);
            }
            return 0;
        }
        let topic = self.topic_of(&p.writer, &home);
        let receivers: Vec<(Str, (i64, i64))> = self
            .writers
            .get(&p.writer)
            .map(|w| {
                w.hosts
                    .iter()
                    .filter(|(h, _)| **h != home)
                    .map(|(h, seen)| (h.clone(), *seen))
                    .collect()
            })
            .unwrap_or_default();
        let window = self.settings.sample_window_ns;
        let mut points = 0u64;
        for s in sent {
            let t_send = s.start;
            out.point(measurement::SAMPLES)
                .tag("sender", &home)
                .tag("slot", &s.slot)
                .tag("topic_name", &topic)
                .tag("writer_id", &p.writer)
                .int("sn", p.sn)
                .int("sample_size", s.size)
                .end(Some(t_send));
            points = points.saturating_add(1);
            self.count_repairs(&p.writer, &home, &topic, t_send, s.repairs, s.submessages);
            for (host, seen) in &receivers {
                // the next of this host's copies that started no earlier than the
                // sender's, within the sample window (on the sender's clock, when the
                // traffic shows the receiver's reads otherwise)
                let ahead = self.clocks.receiver_ahead(&home, host, t_send);
                let mut got: Option<&SampleRow> = None;
                for r in &p.rows {
                    let start = r.start.saturating_sub(ahead);
                    if r.host == *host
                        && start >= t_send
                        && start.saturating_sub(t_send) < window
                        && got.is_none_or(|g| r.start < g.start)
                    {
                        got = Some(r);
                    }
                }
                let point = |out: &mut LineWriter, name: &str| {
                    out.point(name)
                        .tag("receiver", host)
                        .tag("sender", &home)
                        .tag("slot", &s.slot)
                        .tag("topic_name", &topic)
                        .tag("writer_id", &p.writer);
                };
                match got {
                    Some(r) if r.missing == 0 => {
                        let latency = r.end.saturating_sub(t_send);
                        count_latency(
                            &mut self.latency_seconds,
                            self.tick,
                            (&home, host, &topic),
                            t_send,
                            latency,
                        );
                        point(out, measurement::LATENCY);
                        out.int("latency_ns", r.end.saturating_sub(t_send))
                            .int("t_recv_ns", r.end)
                            .int("sn", p.sn)
                            .end(Some(t_send));
                    }
                    Some(_) => {
                        point(out, measurement::LOST);
                        out.int("sn", p.sn).int("incomplete", 1).end(Some(t_send));
                    }
                    None if self.expected(host, t_send, *seen) => {
                        point(out, measurement::LOST);
                        out.int("sn", p.sn).int("incomplete", 0).end(Some(t_send));
                    }
                    None => continue,
                }
                points = points.saturating_add(1);
            }
        }
        points
    }

    fn join_frag(&mut self, p: &Pending<FragRow>, out: &mut LineWriter) -> u64 {
        self.counters.frags = self.counters.frags.saturating_add(1);
        // (DATA_FRAG spans come before their sample's SAMPLE span: the sample's vote may
        // not be cast yet; among the hosts that saw the DATA_FRAG, the voted one, else the
        // first)
        let mut first: Option<&FragRow> = None;
        for r in &p.rows {
            if first.is_none_or(|f| r.start < f.start) {
                first = Some(r);
            }
        }
        let Some(first) = first else {
            return 0;
        };
        let home = self
            .best_vote(participant_of(&p.writer), |h| {
                p.rows.iter().any(|r| &r.host == h)
            })
            .unwrap_or_else(|| first.host.clone());
        let mut sender: Option<&FragRow> = None;
        let mut ends: BTreeMap<&Str, i64> = BTreeMap::new();
        for r in &p.rows {
            if r.host == home {
                if sender.is_none_or(|s| (r.start, &r.slot) < (s.start, &s.slot)) {
                    sender = Some(r);
                }
            } else {
                ends.entry(&r.host)
                    .and_modify(|e| *e = (*e).min(r.end))
                    .or_insert(r.end);
            }
        }
        let Some(sender) = sender else {
            self.counters.senderless = self.counters.senderless.saturating_add(1);
            return 0;
        };
        let topic = self.topic_of(&p.writer, &home);
        let mut points = 0u64;
        for (receiver, t_recv) in ends {
            out.point(measurement::SUBMESSAGE_LATENCY)
                .tag("receiver", receiver)
                .tag("sender", &home)
                .tag("slot", &sender.slot)
                .tag("topic_name", &topic)
                .tag("writer_id", &p.writer)
                .int("latency_ns", t_recv.saturating_sub(sender.start))
                .int("t_recv_ns", t_recv)
                .int("sn", p.sn)
                .int("fragment_starting_num", p.fragment_starting_num)
                .end(Some(sender.start));
            points = points.saturating_add(1);
        }
        points
    }

    /// Drops what was not seen for `forget_pushes` pushes, and the oldest participants'
    /// votes beyond `max_participants` (bounded maps, counted).
    fn forget(&mut self) {
        // (None: nothing is that old yet)
        let old = self.tick.checked_sub(self.settings.forget_pushes);
        let stale = |tick: u64| old.is_some_and(|old| tick < old);
        let mut forgotten = 0u64;
        self.writers.retain(|_, w| match w.seen_tick {
            Some(t) if stale(t) => {
                forgotten = forgotten.saturating_add(1);
                false
            }
            Some(_) => true,
            // seen only through DATA_FRAGs: their topics are not kept beyond a push
            None => false,
        });
        self.captures.retain(|_, c| {
            let keep = !stale(c.seen_tick);
            forgotten = forgotten.saturating_add(u64::from(!keep));
            keep
        });
        self.repairs.retain(|_, acc| !stale(acc.tick));
        let given_up = self.tick.checked_sub(self.settings.max_wait_pushes);
        self.give_up_senderless(|parked| given_up.is_some_and(|t| parked.first_tick <= t));
        self.latency_seconds.retain(|_, acc| !stale(acc.tick));
        let excess = self
            .votes
            .len()
            .saturating_sub(self.settings.max_participants);
        if excess > 0 {
            self.votes.drain(..excess);
            forgotten = forgotten.saturating_add(excess as u64);
        }
        self.counters.forgotten = self.counters.forgotten.saturating_add(forgotten);
    }
}

/// One vote, in the fixed-point units votes decay in (so that a single vote still counts
/// after the `vote_pushes` halvings that keep a host in the running).
const ONE_VOTE: u64 = 1 << 16;

/// A host's votes `(count, tick of its last vote)` as they count at `tick`: halved with
/// every push since.
fn decayed((count, last): (u64, u64), tick: u64) -> u64 {
    count
        .checked_shr(u32::try_from(tick.saturating_sub(last)).unwrap_or(u32::MAX))
        .unwrap_or(0)
}

/// The participant (GUID prefix, the first 24 hex digits) of a writer id.
fn participant_of(writer: &str) -> &str {
    match writer.char_indices().nth(24) {
        Some((at, _)) => writer.get(..at).unwrap_or(writer),
        None => writer,
    }
}

/// Numbers a DATA_FRAG can carry: fragments from 1, within the sample's fragment count.
fn plausible_fragment(span: &FragSpan<'_>) -> bool {
    let (fsn, count, size, sample) = (
        span.fragment_starting_num,
        span.frags_in_submessage,
        span.fragment_size,
        span.sample_size,
    );
    if fsn < 1 || count < 1 || size <= 0 || sample <= 0 {
        return false;
    }
    let last = fsn.checked_add(count).and_then(|v| v.checked_sub(1));
    let fragments = sample
        .checked_add(size)
        .and_then(|v| v.checked_sub(1))
        .map(|v| v / size);
    matches!((last, fragments), (Some(last), Some(fragments)) if last <= fragments)
}
