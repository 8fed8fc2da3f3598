//! The join's state across a restart (`--state`): what it holds between pushes, written
//! and read back.

use super::clocks::ClocksState;
use super::joined::{Joined, JoinedState, JoinedView};
use super::pending::PendingRow;
use super::*;

/// Version of [`JoinState`]'s layout; a state of another version is refused.
pub const STATE_FORMAT: u32 = 1;

/// Everything the join holds between pushes, to carry it across a restart
/// ([`SpanJoin::into_state`], [`SpanJoin::from_state`]): the waiting samples and DATA_FRAGs,
/// the hosts' votes, writers and captures, the per-second totals, the points of samples
/// joined early, the counters, the spans of what was joined lately (`joined`: a span
/// delivered again after the restart is taken once), and the evidence of latency_core's
/// host rule and clock offsets (bounded by its cells: the last 5 minutes of capture time, at
/// most 250,000 (host pair, 100 ms, participant) cells), so a restarted join decides hosts
/// and corrects clocks as before it. The settings are not in it (they come from the new
/// process's flags).
#[derive(Debug, Serialize, Deserialize)]
pub struct JoinState {
    format: u32,
    tick: u64,
    #[serde(default)]
    flows: u64,
    #[serde(default)]
    flowing: bool,
    samples: Vec<Pending<SampleRow>>,
    frags: Vec<Pending<FragRow>>,
    #[serde(default)]
    senderless: Vec<((Str, i64), Pending<SampleRow>)>,
    votes: Vec<(Str, HostVotes)>,
    writers: Vec<(Str, Writer)>,
    captures: Vec<(Str, Capture)>,
    repairs: Vec<((Str, Str, i64), RepairSecond)>,
    latency_seconds: Vec<((Str, Str, Str, i64), LatencySecond)>,
    early_out: String,
    early_points: u64,
    counters: JoinCounters,
    #[serde(default)]
    clocks: Option<ClocksState>,
    /// (none in a state of an older build: nothing remembered)
    #[serde(default)]
    joined: Option<JoinedState>,
}

/// [`JoinState`] borrowed from a running join (field for field the same serde form).
#[derive(Serialize)]
struct JoinStateView<'a> {
    format: u32,
    tick: u64,
    flows: u64,
    flowing: bool,
    samples: Entries<'a, VecDeque<Pending<SampleRow>>>,
    frags: Entries<'a, VecDeque<Pending<FragRow>>>,
    senderless: Entries<'a, IndexMap<(Str, i64), Pending<SampleRow>>>,
    votes: Entries<'a, IndexMap<Str, HostVotes>>,
    writers: Entries<'a, HashMap<Str, Writer>>,
    captures: Entries<'a, HashMap<Str, Capture>>,
    repairs: Entries<'a, IndexMap<(Str, Str, i64), RepairSecond>>,
    latency_seconds: Entries<'a, IndexMap<(Str, Str, Str, i64), LatencySecond>>,
    early_out: &'a str,
    early_points: u64,
    counters: JoinCounters,
    #[serde(default)]
    clocks: Option<ClocksState>,
    joined: Option<JoinedView<'a>>,
}

/// A collection serialized as the sequence of its items (a map's as (key, value) pairs,
/// as the `Vec`s of [`JoinState`]).
struct Entries<'a, C>(&'a C);

impl<'a, C> Serialize for Entries<'a, C>
where
    &'a C: IntoIterator,
    <&'a C as IntoIterator>::Item: Serialize,
{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0)
    }
}

/// A state this build cannot take.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    #[error("join state format {found}, this ddshark reads format {expected}")]
    Format { found: u32, expected: u32 },
}

impl JoinState {
    /// Samples waiting in it.
    pub fn pending_samples(&self) -> usize {
        self.samples.len()
    }

    pub fn pending_frags(&self) -> usize {
        self.frags.len()
    }
}

impl SpanJoin {
    /// The join's state, for a restart (see [`JoinState`]).
    pub fn into_state(self) -> JoinState {
        JoinState {
            format: STATE_FORMAT,
            tick: self.tick,
            flows: self.flows,
            flowing: self.flowing,
            samples: self.samples.entries.into(),
            frags: self.frags.entries.into(),
            senderless: self.senderless.into_iter().collect(),
            votes: self.votes.into_iter().collect(),
            writers: self.writers.into_iter().collect(),
            captures: self.captures.into_iter().collect(),
            repairs: self.repairs.into_iter().collect(),
            latency_seconds: self.latency_seconds.into_iter().collect(),
            early_out: self.early_out.buf,
            early_points: self.early_points,
            counters: self.counters,
            clocks: Some(self.clocks.state()),
            joined: Some(self.joined.state()),
        }
    }

    /// The join's state as [`SpanJoin::into_state`] gives it, serialized in place (the
    /// same serde form as [`JoinState`], read back by [`SpanJoin::from_state`]): for a
    /// checkpoint of a running join, which must not copy what waits.
    pub fn state_view(&self) -> impl Serialize + '_ {
        JoinStateView {
            format: STATE_FORMAT,
            tick: self.tick,
            flows: self.flows,
            flowing: self.flowing,
            samples: Entries(&self.samples.entries),
            frags: Entries(&self.frags.entries),
            senderless: Entries(&self.senderless),
            votes: Entries(&self.votes),
            writers: Entries(&self.writers),
            captures: Entries(&self.captures),
            repairs: Entries(&self.repairs),
            latency_seconds: Entries(&self.latency_seconds),
            early_out: &self.early_out.buf,
            early_points: self.early_points,
            counters: self.counters,
            clocks: Some(self.clocks.state()),
            joined: Some(self.joined.view()),
        }
    }

    /// The join as it was when `state` was taken, with `settings` (a restart goes on
    /// where the previous process stopped: same pushes to wait, same votes, same totals).
    pub fn from_state(settings: JoinSettings, state: JoinState) -> Result<Self, StateError> {
        if state.format != STATE_FORMAT {
            return Err(StateError::Format {
                found: state.format,
                expected: STATE_FORMAT,
            });
        }
        let mut join = SpanJoin::new(settings);
        join.tick = state.tick;
        join.flows = state.flows;
        join.flowing = state.flowing;
        join.counters = state.counters;
        if let Some(clocks) = state.clocks {
            join.clocks = Clocks::from_state(clocks);
        }
        if let Some(joined) = state.joined {
            let remembered = joined.len();
            match Joined::from_state(joined) {
                Some(joined) => join.joined = joined,
                // (forgotten before their time: counted as if the cap had pushed them out)
                None => {
                    let c = &mut join.counters;
                    c.joined_evicted = c.joined_evicted.saturating_add(remembered);
                }
            }
        }
        join.early_points = state.early_points;
        join.early_out.buf = state.early_out;
        for p in state.samples {
            let p = join.intern_pending(p);
            join.samples.insert(p);
        }
        for p in state.frags {
            let p = join.intern_pending(p);
            join.frags.insert(p);
        }
        for ((_, sn), p) in state.senderless {
            let p = join.intern_pending(p);
            join.senderless.insert((p.writer.clone(), sn), p);
        }
        join.votes = state.votes.into_iter().collect();
        join.writers = state.writers.into_iter().collect();
        join.captures = state.captures.into_iter().collect();
        join.fleet_time = join
            .captures
            .values()
            .map(|c| c.last_end)
            .max()
            .unwrap_or_default();
        join.repairs = state.repairs.into_iter().collect();
        join.latency_seconds = state.latency_seconds.into_iter().collect();
        Ok(join)
    }

    /// A waiting entry read from a state, its strings shared again (as they were before).
    fn intern_pending<R: PendingRow>(&mut self, mut p: Pending<R>) -> Pending<R> {
        p.writer = self.intern(&p.writer);
        for r in &mut p.rows {
            for shared in r.strings() {
                *shared = self.intern(shared);
            }
        }
        p
    }
}
