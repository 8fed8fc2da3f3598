//! When a waiting sample or DATA_FRAG is joined: every other host's capture past it (each
//! host's watermark, on the first copy's clock), or the backstop in pushes.

use super::pending::PendingRow;
use super::*;

/// Whether every other host's capture has passed a sample ([`SpanJoin::passed_by_all`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Passed {
    All,
    /// All but hosts quiet or silent for `max_wait_pushes` pushes in which others' spans
    /// arrived.
    AllButSilent,
    NotYet,
}

/// What [`SpanJoin::due`] says of a waiting sample or DATA_FRAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Due {
    Wait,
    Now,
    /// Now, before every other host's capture passed it (counted `forced`).
    Forced,
    /// Now, because the input ended before it was due (counted `decided_at_end`).
    AtEnd,
}

/// Of what [`SpanJoin::due_positions`] picked: how many were forced, how many decided at
/// the end of the input.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct DueCounts {
    forced: u64,
    at_end: u64,
}

impl SpanJoin {
    /// The positions in `queue` of what is joined now (see [`SpanJoin::due`]; `all`: the
    /// end of the input), anywhere in the queue (one waiting for a host must not hold up
    /// the others); those forced or decided at the end are counted.
    pub(super) fn due_positions<R: PendingRow>(
        &self,
        queue: &PendingQueue<R>,
        all: bool,
    ) -> (Vec<usize>, DueCounts) {
        let mut at = Vec::new();
        let mut n = DueCounts::default();
        for (i, p) in queue.entries.iter().enumerate() {
            if !all && self.tick.saturating_sub(p.first_tick) < self.settings.settle_pushes {
                // (in order of arrival: the rest came later still)
                break;
            }
            let passed =
                self.passed_by_all(&p.writer, p.first_tick, all, p.rows.iter().map(R::seen));
            let count = match self.due(p.first_tick, all, passed) {
                Due::Wait => continue,
                Due::Now => None,
                Due::Forced => Some(&mut n.forced),
                Due::AtEnd => Some(&mut n.at_end),
            };
            if let Some(count) = count {
                *count = count.saturating_add(1);
            }
            at.push(i);
        }
        (at, n)
    }

    /// Counts what [`SpanJoin::due_positions`] picked.
    pub(super) fn count_due(&mut self, n: DueCounts) {
        let c = &mut self.counters;
        c.forced = c.forced.saturating_add(n.forced);
        c.decided_at_end = c.decided_at_end.saturating_add(n.at_end);
    }

    /// Whether what first arrived at `first_tick` is joined now: once it waited
    /// `settle_pushes` and every other host passed it in capture time, or after
    /// `max_wait_pushes` anyway. Joined before every host passed it (backstop, or a host
    /// given up as silent): forced. `all`: the end of the input, where everything is joined;
    /// what every host passed as it would have been, what was not due yet decided at the
    /// end (no host was too late: the input ended first).
    fn due(&self, first_tick: u64, all: bool, passed: Passed) -> Due {
        let waited = self.tick.saturating_sub(first_tick);
        let settled = all || waited >= self.settings.settle_pushes;
        let backstop = waited
            >= self
                .settings
                .max_wait_pushes
                .max(self.settings.settle_pushes);
        let due = match passed {
            Passed::All => settled,
            Passed::AllButSilent => waited >= self.settings.settle_pushes,
            Passed::NotYet => backstop,
        };
        match (due, passed) {
            (false, _) if all => Due::AtEnd,
            (false, _) => Due::Wait,
            (true, Passed::All) => Due::Now,
            (true, _) => Due::Forced,
        }
    }

    /// Whether every host of the first copy's host's group (`quiet`) with no copy among
    /// `rows` (host, start) has passed their first start by [`JoinSettings::wait_ns`] of its
    /// capture time (read on the first copy's host's clock when the traffic shows the clocks
    /// differ): nothing of it can still arrive from there, whatever the delay in arrival, and
    /// the outcome (latency, lost, or nothing) depends on capture time alone, as
    /// `ddshark latency`'s. (Every host of the group, not only those that saw `writer` yet: a
    /// host's first sighting of a writer may be held up too.) Hosts of other groups exchanged
    /// no traffic with it: not waited for. Not waited for either: a quiet host
    /// ([`super::quiet::QUIET_NS`]), or one silent while the others' spans arrived in more
    /// than `max_wait_pushes` pushes; skipping one that saw `writer` is `AllButSilent`.
    /// (`all`: the end of the input, where every sample is looked at.)
    pub(super) fn passed_by_all<'a>(
        &self,
        writer: &Str,
        first_tick: u64,
        all: bool,
        rows: impl Iterator<Item = (&'a Str, i64)> + Clone,
    ) -> Passed {
        if !all && self.tick.saturating_sub(first_tick) < self.settings.settle_pushes {
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
        if self.waits_for_peers(first_host) {
            return Passed::NotYet;
        }
        let horizon = t.saturating_add(self.settings.wait_ns());
        let mut passed = Passed::All;
        for (host, c) in &self.captures {
            if !self.same_group(first_host, host) {
                continue;
            }
            let ahead = self.clocks.receiver_ahead(first_host, host, t);
            if rows.clone().any(|(h, _)| h == host) || c.sample_end.saturating_sub(ahead) >= horizon
            {
                continue;
            }
            let silent = self.flows.saturating_sub(c.flows_seen);
            if silent > self.settings.max_wait_pushes || self.quiet.contains(host) {
                if saw_writer(host) {
                    passed = Passed::AllButSilent;
                }
                continue;
            }
            return Passed::NotYet;
        }
        passed
    }

    /// Whether `host` has exchanged traffic with no host the join has heard of yet, while
    /// the join heard of it for at most `max_wait_pushes` pushes that brought spans: its
    /// peers' spans may still be on their way (a routing tier that held them while a shard
    /// was down delivered one host's batches tens of seconds before another's, and hosts'
    /// exports start at different times; docs/fleet.md), so its samples wait for them, for
    /// the backstop at most, rather than be joined as sent by it. A host alone for longer is
    /// alone (a single-host deployment, a robot with one host): its samples are joined as
    /// soon as they settle, so such a deployment waits the backstop once, at its start.
    fn waits_for_peers(&self, host: &Str) -> bool {
        let has_peer = self
            .captures
            .keys()
            .any(|other| other != host && self.same_group(host, other));
        let heard_for = self
            .captures
            .get(host)
            .map_or(0, |c| self.flows.saturating_sub(c.flows_first));
        !has_peer && heard_for <= self.settings.max_wait_pushes
    }
}
