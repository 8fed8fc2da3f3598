//! When a waiting sample or DATA_FRAG is joined: every other host's capture past it (each
//! host's watermark, on the first copy's clock), or the backstop in pushes.

use super::*;

/// A host whose capture time is this far behind the latest host's, and whose spans stopped
/// while others' came, is a capture replayed before (under other host names), not one whose
/// spans are held up: it is waited for no more.
pub(super) const STALE_NS: i64 = 300 * NS;

/// Whether every other host's capture has passed a sample ([`SpanJoin::passed_by_all`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Passed {
    All,
    /// All but hosts silent for `max_wait_pushes` pushes in which others' spans arrived.
    AllButSilent,
    NotYet,
}

impl SpanJoin {
    /// Whether what first arrived at `first_tick` is joined now: once it waited
    /// `settle_pushes` and every other host passed it in capture time, or after
    /// `max_wait_pushes` anyway; `all`: the end of the input. Joined before every host
    /// passed it (backstop, or a host given up as silent): counted `forced`.
    pub(super) fn due(&mut self, first_tick: u64, all: bool, passed: Passed) -> bool {
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
    pub(super) fn passed_by_all<'a>(
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
}
